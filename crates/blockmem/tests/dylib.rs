//! The public API inlines its small paths into the caller's crate, so whatever they
//! refer to must link in every kind of crate a caller builds, a Rust `dylib` included:
//! there a reference to one of this crate's statics by its own address (a `sym`
//! operand in inline assembly) is refused by the linker ("relocation R_X86_64_PC32
//! cannot be used against symbol"), which an executable or a `cdylib` accepts. This
//! builds a `dylib` that calls `copy`, `move_within` and `set` (offline: the crate has no
//! dependencies).

use std::process::Command;

#[test]
fn a_rust_dylib_that_inlines_the_api_links() {
    let dir = tempfile_dir();
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let manifest = format!(
        "[package]\nname = \"inlines_blockmem\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         [lib]\ncrate-type = [\"dylib\"]\n\
         [dependencies]\nblockmem = {{ path = {:?} }}\n[workspace]\n",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "pub fn copy_it(d: &mut [u8], s: &[u8]) { blockmem::copy(d, s); }\n\
         pub fn move_it(d: &mut [u8]) { let n = d.len(); blockmem::move_within(d, 1..n, 0); }\n\
         pub fn set_it(d: &mut [u8]) { blockmem::set(d, 7); }\n",
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "building a dylib that inlines blockmem failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fresh directory under the system's temporary one.
fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("blockmem-dylib-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
