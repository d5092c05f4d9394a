//! The C library from C: the header compiles as C and C++, and the differential test
//! program (`crates/blockmem-preload/tests/c/memops_test.c`, API flavour) linked
//! against the static library passes, under every kernel, together with the
//! introspection and profile functions.

#[path = "../../blockmem-preload/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::*;

/// What a program linking `libblockmem.a` also needs (`rustc --print
/// native-static-libs`; the same list goes into `blockmem-static.pc`).
pub const NATIVE_STATIC_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

fn include_dir() -> PathBuf {
    workspace().join("crates/blockmem-ffi/include")
}

fn static_memops() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let lib = ffi_libs().join("libblockmem_ffi.a");
        let include = format!("-I{}", include_dir().display());
        let mut extra = vec![lib.to_str().unwrap().to_string()];
        extra.extend(NATIVE_STATIC_LIBS.iter().map(|s| s.to_string()));
        let dir = scratch("ffi");
        let exe = dir.join("memops_test_static");
        let reference = ref_object(&dir);
        let mut args = vec!["-O2", "-D_FORTIFY_SOURCE=2", "-DUSE_BLOCKMEM_API", &include];
        let src = c_dir().join("memops_test.c");
        args.push(src.to_str().unwrap());
        args.push(reference.to_str().unwrap());
        args.push("-o");
        args.push(exe.to_str().unwrap());
        args.extend(extra.iter().map(String::as_str));
        cc(&args);
        exe
    })
}

#[test]
fn header_compiles_as_c_and_cpp() {
    let dir = scratch("ffi");
    let probe = dir.join("header_probe.c");
    std::fs::write(
        &probe,
        "#include <blockmem.h>\nint main(void) { BlockmemHint h = BLOCKMEM_HINT_NO_REUSE; \
         return (int)h - 2 + (int)BLOCKMEM_OP_ZERO - 3; }\n",
    )
    .unwrap();
    let include = format!("-I{}", include_dir().display());
    for std in ["-std=c99", "-std=c11", "-std=c2x"] {
        cc(&[
            std,
            "-pedantic",
            &include,
            "-c",
            probe.to_str().unwrap(),
            "-o",
            "/dev/null",
        ]);
    }
    let out = std::process::Command::new("g++")
        .args([
            "-std=c++11",
            "-Wall",
            "-Werror",
            "-x",
            "c++",
            &include,
            "-c",
        ])
        .arg(&probe)
        .args(["-o", "/dev/null"])
        .output();
    match out {
        Ok(o) => assert!(
            o.status.success(),
            "g++: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => eprintln!("header_compiles_as_c_and_cpp: no g++, C++ check skipped"),
    }
}

#[test]
fn static_library_matches_the_reference() {
    run_ok(plain(static_memops()).args(["grid", "large", "pagedge", "preinit", "api"]));
}

/// In a static program too the constructor binds `blockmem_copy`, `_move`, `_set` and
/// the memcpy-shaped `blockmem_memcpy`, `_memmove`, `_memset` to this CPU's bodies (the code it rewrites is the program's own), unless
/// `BLOCKMEM_BIND=0`, under which the grid still passes.
#[cfg(target_arch = "x86_64")]
#[test]
fn static_library_binds_its_entries() {
    use blockmem::arch::x86_64::entry::Binding;
    for (bind, want) in [("1", expected_binding("")), ("0", Binding::Flag)] {
        let out = run_ok(
            plain(static_memops())
                .env("BLOCKMEM_BIND", bind)
                .args(["slots"]),
        );
        let got = slots(&out.stdout);
        assert_eq!(got.len(), 6, "{}", String::from_utf8_lossy(&out.stdout));
        for (name, binding) in got {
            assert_eq!(binding, Some(want), "{name} with BLOCKMEM_BIND={bind}");
        }
    }
    let masked = run_ok(
        plain(static_memops())
            .env("BLOCKMEM_MASK_FEATURES", "avx512f")
            .args(["slots", "quick", "pagedge"]),
    );
    for (name, binding) in slots(&masked.stdout) {
        assert_eq!(
            binding,
            Some(expected_binding("avx512f")),
            "{name} with AVX-512 masked"
        );
    }
    run_ok(
        plain(static_memops())
            .env("BLOCKMEM_BIND", "0")
            .args(["grid", "pagedge", "preinit"]),
    );
}

#[test]
fn static_library_under_every_kernel() {
    let out = run_ok(plain(static_memops()).args(["--force-each", "quick"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("forced naive: 0 failures"), "{stdout}");
}

#[test]
fn static_library_loads_profiles() {
    let dir = scratch("ffi-profiles");
    run_ok(plain(static_memops()).arg(format!("profile={}", dir.display())));
}
