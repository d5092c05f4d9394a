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

/// The header's macros: a call of `blockmem_copy`/`_move`/`_set` with the constant hint
/// `BLOCKMEM_HINT_AUTO` compiles to `blockmem_memcpy`/`_memmove`/`_memset` (one argument
/// register fewer per call), any other hint, a hint known only at run time and a
/// parenthesised name to the function itself; `BLOCKMEM_NO_AUTO_MACROS` turns them
/// off. Read from the assembly GCC (and G++) writes, at -O0 and -O2; then the program
/// runs against the static library, each argument evaluated once.
#[test]
fn auto_hint_calls_the_memcpy_shaped_entries() {
    let dir = scratch("ffi");
    let src = dir.join("auto_macros.c");
    std::fs::write(
        &src,
        r#"#include <blockmem.h>
#include <stdio.h>
#include <string.h>
#ifdef __cplusplus
extern "C" {
#endif
void *copy_auto(void *d, const void *s, size_t n) { return blockmem_copy(d, s, n, BLOCKMEM_HINT_AUTO); }
void *move_auto(void *d, const void *s, size_t n) { return blockmem_move(d, s, n, BLOCKMEM_HINT_AUTO); }
void *set_auto(void *d, int c, size_t n) { return blockmem_set(d, c, n, BLOCKMEM_HINT_AUTO); }
void *copy_reuse(void *d, const void *s, size_t n) { return blockmem_copy(d, s, n, BLOCKMEM_HINT_REUSE); }
void *set_runtime(void *d, int c, size_t n, BlockmemHint h) { return blockmem_set(d, c, n, h); }
void *copy_parenthesised(void *d, const void *s, size_t n) { return (blockmem_copy)(d, s, n, BLOCKMEM_HINT_AUTO); }
#ifdef __cplusplus
}
#endif
#ifdef RUN
int main(void) {
    unsigned char a[64], b[64];
    size_t n = 10;
    int c = 7;
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    if (blockmem_set(a, c++, n++, BLOCKMEM_HINT_AUTO) != a || n != 11 || c != 8 || a[9] != 7 || a[10] != 1) return 1;
    if (blockmem_copy(b, a, n--, BLOCKMEM_HINT_AUTO) != b || n != 10 || b[10] != 1 || b[11] != 2) return 2;
    if (blockmem_move(b + 1, b, n + 1, BLOCKMEM_HINT_AUTO) != b + 1 || b[1] != 7 || b[11] != 1) return 3;
    puts("ok");
    return 0;
}
#endif
"#,
    )
    .unwrap();
    let include = format!("-I{}", include_dir().display());
    // Which `blockmem_*` functions each of the probe's functions calls or jumps to.
    let calls = |compiler: &str, args: &[&str]| -> Vec<(String, Vec<String>)> {
        let asm = dir.join("auto_macros.s");
        let out = std::process::Command::new(compiler)
            .args(["-Wall", "-Wextra", "-Werror", "-S", &include])
            .args(args)
            .arg(&src)
            .arg("-o")
            .arg(&asm)
            .output()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        assert!(
            out.status.success(),
            "{compiler} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&asm).unwrap();
        let mut found: Vec<(String, Vec<String>)> = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(label) = line.strip_suffix(':') {
                if !label.starts_with('.') {
                    found.push((label.to_string(), Vec::new()));
                }
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(op), Some(target)) = (words.next(), words.next()) else {
                continue;
            };
            if op.starts_with("call") || op.starts_with("jmp") {
                let target = target.trim_end_matches("@PLT");
                if let (Some(f), true) = (found.last_mut(), target.starts_with("blockmem_")) {
                    f.1.push(target.to_string());
                }
            }
        }
        found
    };
    let expect = |found: &[(String, Vec<String>)], want: &[(&str, &str)], what: &str| {
        for (function, callee) in want {
            let got = found
                .iter()
                .find(|f| f.0 == *function)
                .unwrap_or_else(|| panic!("{what}: no {function} in the assembly"));
            assert_eq!(got.1, vec![callee.to_string()], "{what}: {function}");
        }
    };
    let with_macros = [
        ("copy_auto", "blockmem_memcpy"),
        ("move_auto", "blockmem_memmove"),
        ("set_auto", "blockmem_memset"),
        ("copy_reuse", "blockmem_copy"),
        ("set_runtime", "blockmem_set"),
        ("copy_parenthesised", "blockmem_copy"),
    ];
    for opt in ["-O0", "-O2"] {
        expect(&calls("cc", &[opt]), &with_macros, &format!("cc {opt}"));
    }
    expect(
        &calls("cc", &["-O2", "-DBLOCKMEM_NO_AUTO_MACROS"]),
        &[("copy_auto", "blockmem_copy"), ("set_auto", "blockmem_set")],
        "cc -DBLOCKMEM_NO_AUTO_MACROS",
    );
    if std::process::Command::new("g++")
        .arg("--version")
        .output()
        .is_ok()
    {
        expect(
            &calls("g++", &["-O2", "-x", "c++"]),
            &with_macros,
            "g++ -O2",
        );
    }
    let exe = dir.join("auto_macros");
    let lib = ffi_libs().join("libblockmem_ffi.a");
    let mut args = vec![
        "-O2",
        "-DRUN",
        &include,
        src.to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        lib.to_str().unwrap(),
    ];
    args.extend(NATIVE_STATIC_LIBS);
    cc(&args);
    let out = run_ok(&mut plain(&exe));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}

#[test]
fn static_library_matches_the_reference() {
    run_ok(plain(static_memops()).args(["grid", "large", "pagedge", "preinit", "api"]));
}

/// In a static program too `blockmem_copy`, `_move`, `_set` and the memcpy-shaped
/// `blockmem_memcpy`, `_memmove`, `_memset` are IFUNCs bound at start-up to this CPU's
/// bodies (AVX-512, AVX2, or the general path), `BLOCKMEM_MASK_FEATURES` included, and
/// no code is written or left writable.
#[cfg(target_arch = "x86_64")]
#[test]
fn static_library_binds_its_entries_to_the_cpu() {
    for mask in ["", "avx512f", "avx"] {
        let out = run_ok(
            plain(static_memops())
                .env("BLOCKMEM_MASK_FEATURES", mask)
                .args(["slots", "quick", "pagedge"]),
        );
        let want = expected_bodies(mask);
        let got = slots(&out.stdout);
        assert_eq!(got.len(), 6, "{}", String::from_utf8_lossy(&out.stdout));
        for (name, form, _) in got {
            assert_eq!(form, want, "{name} with BLOCKMEM_MASK_FEATURES={mask:?}");
        }
    }
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
