//! `scripts/install.sh` into a scratch prefix, then C programs built the way the README
//! says: `pkg-config --cflags --libs blockmem` (shared), `blockmem-static` (static), and
//! `LD_PRELOAD=$(pkg-config --variable=preload blockmem)`.

#[path = "../../blockmem-preload/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn pkg_config(pc_path: &Path, args: &[&str]) -> Vec<String> {
    let out = run_ok(
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", pc_path)
            .args(args),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn install(prefix: &Path) {
    // The artifacts install.sh copies, built the same way it would build them.
    shim();
    ffi_libs();
    let _ = std::fs::remove_dir_all(prefix);
    run_ok(
        Command::new("bash")
            .arg(workspace().join("scripts/install.sh"))
            .arg("--no-build")
            .arg("--target-dir")
            .arg(target_dir())
            .arg(prefix),
    );
}

fn build(out: &Path, flags: &[String]) {
    let src = c_dir().join("memops_test.c");
    let reference = ref_object(out.parent().unwrap());
    let mut args: Vec<String> = vec![
        "-O2".into(),
        "-D_FORTIFY_SOURCE=2".into(),
        "-DUSE_BLOCKMEM_API".into(),
        src.display().to_string(),
        reference.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(flags.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cc(&args);
}

#[test]
fn install_then_link_shared_static_and_preload() {
    let root = scratch("install");
    let prefix = root.join("prefix");
    install(&prefix);
    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    for f in [
        "include/blockmem.h".to_string(),
        "lib/libblockmem.a".into(),
        format!("lib/libblockmem.so.{version}"),
        "lib/libblockmem.so.0".into(),
        "lib/libblockmem.so".into(),
        "lib/libblockmem_preload.so".into(),
        "lib/pkgconfig/blockmem.pc".into(),
        "lib/pkgconfig/blockmem-static.pc".into(),
    ] {
        assert!(prefix.join(&f).exists(), "{f} not installed");
    }
    let pc = lib.join("pkgconfig");
    assert_eq!(pkg_config(&pc, &["--modversion", "blockmem"]), [version]);

    // Shared: links against libblockmem.so, records the soname, runs from the prefix.
    let shared: PathBuf = root.join("memops_shared");
    build(
        &shared,
        &pkg_config(&pc, &["--cflags", "--libs", "blockmem"]),
    );
    let dynamic = run_ok(Command::new("readelf").arg("-d").arg(&shared));
    assert!(
        String::from_utf8_lossy(&dynamic.stdout).contains("[libblockmem.so.0]"),
        "not linked against libblockmem.so.0"
    );
    let out = run_ok(
        plain(&shared)
            .env("LD_LIBRARY_PATH", &lib)
            .args(["quick", "api", "preinit", "slots"]),
    );
    // Its entries are IFUNCs the dynamic linker bound to this CPU's bodies, and no
    // code was written or left writable (`slots` checks /proc/self/maps and smaps).
    #[cfg(target_arch = "x86_64")]
    {
        let want = expected_bodies("");
        let got = slots(&out.stdout);
        assert_eq!(got.len(), 6, "{}", String::from_utf8_lossy(&out.stdout));
        for (name, form, _) in got {
            assert_eq!(form, want, "{name} in libblockmem.so");
        }
    }

    // Static: no libblockmem at run time.
    let fixed = root.join("memops_static");
    build(
        &fixed,
        &pkg_config(&pc, &["--cflags", "--libs", "blockmem-static"]),
    );
    let dynamic = run_ok(Command::new("readelf").arg("-d").arg(&fixed));
    assert!(!String::from_utf8_lossy(&dynamic.stdout).contains("libblockmem"));
    run_ok(plain(&fixed).args(["quick", "api"]));

    // The preload variable names the installed shim, and it works.
    let preload = pkg_config(&pc, &["--variable=preload", "blockmem"]);
    assert_eq!(
        preload,
        [lib.join("libblockmem_preload.so").display().to_string()]
    );
    let out = run_ok(
        plain("sort")
            .env("LD_PRELOAD", &preload[0])
            .env("BLOCKMEM_STATS", "1")
            .arg(c_dir().join("ref.c")),
    );
    assert!(
        !stats_lines(&out.stderr).is_empty(),
        "no stats from the installed shim"
    );
}
