//! `include/blockmem.h` is generated from `src/lib.rs` by cbindgen and committed; this
//! test regenerates it and fails if the committed copy is stale.
//! `BLOCKMEM_BLESS=1 cargo test -p blockmem-ffi --test header` rewrites it.

use std::path::Path;

fn generate() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not parse src/lib.rs")
        .write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

#[test]
fn committed_header_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/blockmem.h");
    let fresh = generate();
    if std::env::var_os("BLOCKMEM_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/blockmem.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is stale: the C API in src/lib.rs changed. Regenerate it with\n  \
         BLOCKMEM_BLESS=1 cargo test -p blockmem-ffi --test header\nand commit it.",
        path.display()
    );
}

#[test]
fn header_declares_every_exported_function() {
    let src = include_str!("../src/lib.rs");
    let header = generate();
    // Every function marked `#[no_mangle]`: plain `extern "C"` definitions, and the
    // `fn NAME(...)` lines of the assembly entries (`blockmem::copy_entry!`).
    let lines: Vec<&str> = src.lines().map(str::trim).collect();
    let exported = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == "#[no_mangle]")
        .filter_map(|(i, _)| lines[i + 1..].iter().find(|l| !l.starts_with("#[")))
        .filter_map(|l| l.split("fn ").nth(1))
        .map(|rest| rest.split('(').next().unwrap().trim().to_string());
    let mut n = 0;
    for name in exported {
        assert!(
            header.contains(&format!("{name}(")),
            "{name} missing from the header"
        );
        n += 1;
    }
    assert!(n >= 16, "only {n} exported functions found");
}
