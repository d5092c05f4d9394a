//! C programs under the shim: the differential test of every exported symbol
//! (`tests/c/memops_test.c`), fortify aborts, threads, fork/exec/signals, the
//! environment variables, AT_SECURE.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use common::*;

const EXPORTED: [&str; 9] = [
    "memcpy",
    "memmove",
    "memset",
    "bzero",
    "mempcpy",
    "__memcpy_chk",
    "__memmove_chk",
    "__memset_chk",
    "__mempcpy_chk",
];

fn memops() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build_c_program(&scratch("c"), "memops_test", &[]))
}

#[test]
fn test_program_calls_every_exported_symbol() {
    let out = run_ok(
        std::process::Command::new("nm")
            .args(["-D", "--undefined-only"])
            .arg(memops()),
    );
    let imports = String::from_utf8_lossy(&out.stdout);
    for sym in EXPORTED {
        assert!(
            imports.lines().any(|l| l
                .split_whitespace()
                .last()
                .is_some_and(|s| s.split('@').next() == Some(sym))),
            "memops_test does not import {sym}:\n{imports}"
        );
    }
}

#[test]
fn every_symbol_matches_the_reference_under_the_shim() {
    let out = run_ok(under_shim(memops()).env("BLOCKMEM_STATS", "1").args([
        "--expect-shim",
        "--overlap-copy",
        "grid",
        "large",
        "preinit",
    ]));
    let stats = stats_lines(&out.stderr);
    assert_eq!(stats.len(), 1, "one process, one stats line: {stats:?}");
    let s = &stats[0];
    for op in ["copy", "move", "set", "zero"] {
        assert!(s.op(op).0 > 1000, "few {op} calls: {}", s.line);
    }
    // Above the inline ladder the policy picked real kernels.
    assert!(
        s.kernel("inline").0 > 0 && s.kernels.len() >= 2,
        "{}",
        s.line
    );
    // The tests are hermetic: no profile unless they name one.
    assert!(s.line.ends_with("; profile built-in"), "{}", s.line);
}

/// The same grid with no mode set: the path every preloaded program takes (on a CPU with
/// AVX-512BW, the assembly entries of `blockmem::arch::x86_64::entry`; statistics,
/// tracing and pass-through take the general path instead).
#[test]
fn every_symbol_matches_the_reference_on_the_plain_path() {
    run_ok(under_shim(memops()).args([
        "--expect-shim",
        "--overlap-copy",
        "grid",
        "large",
        "pagedge",
        "preinit",
    ]));
}

/// The grid in a process that has had a second thread, where the entries' 1-15 byte
/// copies keep to the lines their bytes lie in (page edges included).
#[test]
fn every_symbol_matches_the_reference_after_a_thread() {
    run_ok(under_shim(memops()).args([
        "--expect-shim",
        "--overlap-copy",
        "threaded",
        "grid",
        "pagedge",
    ]));
}

/// The grid as a smaller host runs it (`BLOCKMEM_MASK_FEATURES`): with AVX-512 masked
/// the assembly entries take their AVX2 bodies (on a CPU with AVX2), with AVX masked
/// the general path and the SSE2 ladder.
#[test]
fn every_symbol_matches_the_reference_on_smaller_hosts() {
    for mask in ["avx512f", "avx"] {
        run_ok(
            under_shim(memops())
                .env("BLOCKMEM_MASK_FEATURES", mask)
                .args([
                    "--expect-shim",
                    "--overlap-copy",
                    "grid",
                    "pagedge",
                    "preinit",
                ]),
        );
    }
}

/// The shim's `memcpy`, `memmove` and `memset` are routed entries whose route the
/// constructor opens where the CPU runs their AVX-512 bodies and no mode is set; the
/// grid passes whichever way they run, and no code is written or left writable.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_constructor_routes_the_entries_for_the_cpu() {
    use blockmem::arch::x86_64::entry::{Bodies, LEVEL_AVX512};
    let cases: [(&[(&str, &str)], bool); 4] = [
        (&[], expected_level("") == LEVEL_AVX512),
        (&[("BLOCKMEM_STATS", "1")], false),
        (&[("BLOCKMEM_MASK_FEATURES", "avx512f")], false),
        (&[("BLOCKMEM_MASK_FEATURES", "avx")], false),
    ];
    for (env, open) in cases {
        let mut cmd = under_shim(memops());
        cmd.envs(env.iter().copied());
        let out = run_ok(cmd.args(["--expect-shim", "slots", "quick", "pagedge"]));
        let got = slots(&out.stdout);
        assert_eq!(
            got.len(),
            3,
            "{env:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        for (name, form, route) in got {
            assert_eq!(form, Some(Bodies::Routed), "{name} with {env:?}");
            assert_eq!(route, Some(open), "{name}'s route with {env:?}");
        }
    }
}

#[test]
fn the_test_program_agrees_with_glibc() {
    // The same program without the shim: proves the test itself is right.
    run_ok(plain(memops()).args(["--overlap-copy", "quick", "pagedge", "preinit"]));
}

#[test]
fn every_forced_kernel_matches_the_reference() {
    for k in blockmem_kernel_names() {
        let out = run_ok(
            under_shim(memops())
                .env("BLOCKMEM_FORCE", k)
                .env("BLOCKMEM_STATS", "1")
                .args(["--expect-shim", "--overlap-copy", "quick", "preinit"]),
        );
        let stats = stats_lines(&out.stderr);
        let line = &stats[0].line;
        let available = !String::from_utf8_lossy(&out.stderr).contains("cannot run that kernel");
        if available {
            assert!(line.contains(&format!("; forced {k}")), "{k}: {line}");
        }
    }
}

/// Every kernel name `BLOCKMEM_FORCE` accepts.
fn blockmem_kernel_names() -> impl Iterator<Item = &'static str> {
    blockmem::KernelId::ALL.into_iter().map(|k| k.name())
}

#[test]
fn disable_passes_through_to_libc() {
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_DISABLE", "1")
            .env("BLOCKMEM_STATS", "1")
            .args(["--expect-shim", "--overlap-copy", "quick", "preinit"]),
    );
    let s = &stats_lines(&out.stderr)[0];
    assert!(s.line.contains("; disabled (libc)"), "{}", s.line);
    assert_eq!(s.kernels.len(), 1, "only libc ran: {}", s.line);
    assert!(s.kernel("libc").0 > 1000, "{}", s.line);
}

#[test]
fn unknown_force_warns_and_keeps_the_policy() {
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_FORCE", "warp_drive")
            .env("BLOCKMEM_STATS", "1")
            .args(["--expect-shim", "preinit"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("blockmem: BLOCKMEM_FORCE=warp_drive: no such kernel"),
        "{err}"
    );
    // The message lists the kernel table of the build, not a list written by hand.
    let listed = err
        .lines()
        .find(|l| l.contains("no such kernel"))
        .and_then(|l| l.split_once('(')?.1.split_once(')'))
        .map(|(names, _)| names.split(", ").collect::<Vec<_>>())
        .unwrap_or_default();
    let table: Vec<&str> = blockmem::kernel::table().iter().map(|k| k.name()).collect();
    assert_eq!(listed, [&table[..], &["or auto"]].concat(), "{err}");
    let s = &stats_lines(&out.stderr)[0];
    assert!(!s.line.contains("forced"), "{}", s.line);
}

#[test]
fn profile_is_loaded_and_a_bad_one_is_reported_not_fatal() {
    let dir = scratch("profiles");
    // A profile that streams Auto copies from 64 KiB: the statistics show avx2_nt.
    let good = dir.join("good");
    std::fs::write(
        &good,
        "version = 2\ncopy.auto.unknown = from 0: avx2; from 64KiB: avx2_nt\n",
    )
    .unwrap();
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_PROFILE", &good)
            .env("BLOCKMEM_STATS", "1")
            .args(["--expect-shim", "quick", "medium"]),
    );
    let s = &stats_lines(&out.stderr)[0];
    assert!(
        s.line.contains(&format!("; profile {}", good.display())),
        "{}",
        s.line
    );
    assert!(s.kernel("avx2_nt").0 > 0 || !have_avx2(), "{}", s.line);

    // A malformed one: one message naming the line, defaults, the program runs on.
    let bad = dir.join("bad");
    std::fs::write(
        &bad,
        "version = 2\ncopy.auto.cold = from 0: avx2\nno_such_key = 3\n",
    )
    .unwrap();
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_PROFILE", &bad)
            .env("BLOCKMEM_STATS", "1")
            .args(["--expect-shim", "quick", "preinit"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let reason = blockmem::profile::ErrorKind::UnknownKey.reason();
    let msg = format!(
        "blockmem: profile {} rejected: line 3: {reason}; using the built-in table",
        bad.display()
    );
    assert_eq!(err.matches(&msg).count(), 1, "{err}");
    let s = &stats_lines(&out.stderr)[0];
    assert!(
        s.line.contains(&format!("(rejected: line 3: {reason})")),
        "{}",
        s.line
    );

    // A profile of the keyed format of earlier releases: rejected by its version.
    std::fs::write(&bad, "version = 1\nstream_auto = 64KiB\n").unwrap();
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_PROFILE", &bad)
            .env("BLOCKMEM_STATS", "1")
            .args(["--expect-shim", "quick", "preinit"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rejected: line 1: unsupported profile version")
            && err.contains("(found version 1); using the built-in table"),
        "{err}"
    );

    // A missing one: reported, not fatal.
    let out = run_ok(
        under_shim(memops())
            .env("BLOCKMEM_PROFILE", dir.join("missing"))
            .arg("preinit"),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("rejected: cannot open or read"));
}

/// A program copying into the same heap block again and again, under a table that
/// probes from 64 KiB and streams blocks it finds cold, every probe forced to find the
/// block cold: the block is streamed once, then (met again at once, every time)
/// written with temporal stores; not streamed on every call (see the dispatcher's
/// memory of streamed blocks). The bytes are checked after every copy.
#[test]
fn a_reused_block_is_not_streamed_on_every_call() {
    if !have_avx2() {
        eprintln!("no avx2_nt on this CPU: nothing streams");
        return;
    }
    let dir = scratch("reuse");
    let exe = build_c_program(&dir, "reuse_test", &[]);
    let profile = dir.join("streams-cold");
    std::fs::write(
        &profile,
        "version = 2
llc_effective = 1GiB
probe_hit_max = 0
probe_fault_min = 4294967295
copy.loop_temporal_max = 4MiB
copy.auto.unknown = from 0: avx2; from 64KiB: probe
copy.auto.cached = from 0: avx2
copy.auto.cold = from 0: avx2; from 64KiB: avx2_nt
",
    )
    .unwrap();
    let iterations = 40;
    let out = run_ok(
        under_shim(&exe)
            .env("BLOCKMEM_PROFILE", &profile)
            .env("BLOCKMEM_STATS", "1")
            .args(["1048576", &iterations.to_string()]),
    );
    let s = &stats_lines(&out.stderr)[0];
    let (streamed, temporal) = (s.kernel("avx2_nt").0, s.kernel("avx2").0);
    assert!(streamed >= 1, "{}", s.line);
    // Once, and again only where an iteration was preempted past the memory's window
    // (about 34 M ticks with the table's 1 GiB effective LLC, 10 ms or more).
    assert!(streamed <= iterations / 4, "{}", s.line);
    assert!(temporal >= iterations * 3 / 4, "{}", s.line);
}

fn have_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

#[test]
fn stats_off_by_default_and_for_zero() {
    for value in [None, Some("0"), Some("")] {
        let mut c = under_shim(memops());
        c.arg("preinit");
        if let Some(v) = value {
            c.env("BLOCKMEM_STATS", v);
        }
        let out = run_ok(&mut c);
        assert!(stats_lines(&out.stderr).is_empty(), "{value:?}");
    }
}

#[test]
fn fortify_checks_abort_like_glibc() {
    for sym in [
        "__memcpy_chk",
        "__memmove_chk",
        "__memset_chk",
        "__mempcpy_chk",
    ] {
        for shimmed in [true, false] {
            let mut c = if shimmed {
                under_shim(memops())
            } else {
                plain(memops())
            };
            let out = c.arg(format!("chkfail={sym}")).output().unwrap();
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{sym} (shim: {shimmed}) ended with {}",
                out.status
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("*** buffer overflow detected ***: terminated"),
                "{sym} (shim: {shimmed}): {err}"
            );
        }
    }
}

#[test]
fn eight_threads_of_mixed_operations() {
    let exe = build_c_program(&scratch("c"), "threads_test", &["-pthread"]);
    let out = run_ok(under_shim(&exe).env("BLOCKMEM_STATS", "1"));
    let s = &stats_lines(&out.stderr)[0];
    assert!(s.calls() >= 8 * 6000, "{}", s.line);
    // And the program is right on its own.
    run_ok(&mut plain(&exe));
}

#[test]
fn fork_exec_and_signal_handlers() {
    let exe = build_c_program(&scratch("c"), "forkexec_test", &[]);
    let out = run_ok(
        under_shim(&exe)
            .env("BLOCKMEM_STATS", "1")
            .arg("--expect-shim"),
    );
    let stats = stats_lines(&out.stderr);
    // The parent, the forked child and the exec'd program each print their own line.
    assert!(stats.len() >= 3, "{stats:#?}");
    let mut pids: Vec<u64> = stats.iter().map(|s| s.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), stats.len(), "distinct processes: {stats:#?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("signal handler copies:"), "{stdout}");
    run_ok(&mut plain(&exe));
}

/// A program that links the shim as an ordinary dependency (so it is loaded even when
/// the dynamic linker ignores `LD_PRELOAD`), made set-user-ID to `nobody`: the kernel
/// marks it `AT_SECURE`, and the shim must ignore `BLOCKMEM_STATS` and the rest.
#[test]
fn at_secure_ignores_the_environment() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "at_secure_ignores_the_environment: needs root to make a set-user-ID binary; skipped"
        );
        return;
    }
    // A world-readable directory outside the (possibly private) target tree: the
    // set-user-ID program runs as nobody and must be able to load the shim.
    let dir = std::env::temp_dir().join(format!("blockmem-secure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libblockmem_preload.so");
    std::fs::copy(shim(), &lib).unwrap();
    for p in [&dir, &lib] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let exe = dir.join("secure_test");
    let reference = ref_object(&scratch("c"));
    cc(&[
        "-O2",
        c_dir().join("secure_test.c").to_str().unwrap(),
        reference.to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        &format!("-L{}", dir.display()),
        &format!("-Wl,-rpath,{}", dir.display()),
        "-lblockmem_preload",
    ]);
    // Control: not set-user-ID, the variable works.
    if let Err(e) = plain(&exe).output() {
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!(
            "at_secure_ignores_the_environment: cannot run from {} ({e}); skipped",
            dir.display()
        );
        return;
    }
    // A world-writable directory for traces: the set-user-ID run could create one.
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::set_permissions(&traces, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = run_ok(
        plain(&exe)
            .env("BLOCKMEM_STATS", "1")
            .env("BLOCKMEM_TRACE", traces.join("control")),
    );
    assert_eq!(
        stats_lines(&out.stderr).len(),
        1,
        "control run printed no stats"
    );
    assert!(
        traces.join("control").is_file(),
        "control run wrote no trace"
    );
    // Set-user-ID nobody: ignored.
    let status = std::process::Command::new("chown")
        .args(["nobody", exe.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = std::process::Command::new("chmod")
        .args(["u+s", exe.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = run_ok(
        plain(&exe)
            .env("BLOCKMEM_STATS", "1")
            .env("BLOCKMEM_FORCE", "warp_drive")
            .env("BLOCKMEM_TRACE", traces.join("secure"))
            .arg("secure"),
    );
    let traced = traces.join("secure").exists();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.contains("at_secure=0") {
        eprintln!(
            "at_secure_ignores_the_environment: set-user-ID had no effect (nosuid mount?); skipped"
        );
        return;
    }
    assert!(stdout.contains("at_secure=1"), "{stdout}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        stats_lines(&out.stderr).is_empty() && !err.contains("blockmem:"),
        "AT_SECURE process reacted to BLOCKMEM_*: {err}"
    );
    assert!(!traced, "AT_SECURE process wrote a BLOCKMEM_TRACE file");
}
