//! The shim under threads, with `tests/c/thread_sums_test.c`: ten threads copying,
//! moving (overlapping) and setting every size class from 1 B to 12 MiB print the same
//! checksums without the shim, under it, with statistics and traced; `BLOCKMEM_STATS`
//! gives one line per thread with exactly the calls, bytes and size bands that thread
//! made, and totals that add up; threads past the table's slots share one line.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::*;

fn program() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build_c_program(&scratch("threads"), "thread_sums_test", &["-pthread"]))
}

/// The statistics' size bands: calls up to each bound, then above the last.
const BAND_MAX: [u64; 4] = [128, 2 << 10, 64 << 10, 1 << 20];

/// Calls per band one thread of the program makes with `log2` (four calls a size).
fn expected_bands(log2: u32) -> Vec<u64> {
    let mut bands = vec![0; BAND_MAX.len() + 1];
    for n in thread_sums_sizes(log2) {
        bands[BAND_MAX.iter().filter(|&&m| n > m).count()] += 4;
    }
    bands
}

fn check_line_adds_up(l: &ThreadStats) {
    assert_eq!(l.temporal + l.streamed + l.libc, l.bytes, "{}", l.line);
    assert_eq!(
        l.sizes.iter().map(|s| s.1).sum::<u64>(),
        l.calls,
        "{}",
        l.line
    );
}

/// The `threads N` line equals the sum of the others, and the process line's totals.
fn check_totals(stderr: &[u8]) -> (ThreadStats, Vec<ThreadStats>) {
    let process = stats_lines(stderr);
    assert_eq!(process.len(), 1, "{process:#?}");
    let lines = thread_stats_lines(stderr);
    let all: Vec<&ThreadStats> = lines
        .iter()
        .filter(|l| l.who.starts_with("threads "))
        .collect();
    assert_eq!(all.len(), 1, "{lines:#?}");
    let all = all[0].clone();
    let parts: Vec<ThreadStats> = lines
        .into_iter()
        .filter(|l| !l.who.starts_with("threads "))
        .collect();
    for l in parts.iter().chain([&all]) {
        check_line_adds_up(l);
    }
    let sum = |f: fn(&ThreadStats) -> u64| parts.iter().map(f).sum::<u64>();
    assert_eq!(sum(|l| l.calls), all.calls);
    assert_eq!(sum(|l| l.bytes), all.bytes);
    assert_eq!(sum(|l| l.temporal), all.temporal);
    assert_eq!(sum(|l| l.streamed), all.streamed);
    for (k, band) in all.sizes.iter().enumerate() {
        assert_eq!(parts.iter().map(|l| l.sizes[k].1).sum::<u64>(), band.1);
    }
    let p = &process[0];
    assert_eq!(all.calls, p.calls(), "{}", p.line);
    assert_eq!(
        all.bytes,
        p.ops.iter().map(|o| o.2).sum::<u64>(),
        "{}",
        p.line
    );
    assert_eq!(all.libc, 0);
    (all, parts)
}

#[test]
fn the_same_checksums_without_the_shim_under_it_counted_and_traced() {
    let exe = program();
    let want = run_ok(&mut plain(exe));
    let text = String::from_utf8_lossy(&want.stdout);
    assert_eq!(text.lines().count(), 10, "{text}");
    let trace = scratch("threads").join("trace");
    let _ = std::fs::remove_file(&trace);
    let runs: [(&str, &[(&str, &str)]); 4] = [
        ("the shim", &[]),
        ("BLOCKMEM_STATS=1", &[("BLOCKMEM_STATS", "1")]),
        (
            "BLOCKMEM_TRACE",
            &[
                ("BLOCKMEM_TRACE", trace.to_str().unwrap()),
                ("BLOCKMEM_TRACE_SAMPLE", "1"),
            ],
        ),
        ("BLOCKMEM_DISABLE=1", &[("BLOCKMEM_DISABLE", "1")]),
    ];
    for (name, env) in runs {
        let out = run_ok(under_shim(exe).envs(env.iter().copied()));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            text,
            "stdout under {name}"
        );
    }
    assert!(trace.is_file());
}

#[test]
fn statistics_give_each_thread_its_own_calls_and_bytes() {
    let out = run_ok(under_shim(program()).env("BLOCKMEM_STATS", "1"));
    let reported = thread_sums_reported(&out.stderr);
    assert_eq!(reported.len(), 10);
    let (all, parts) = check_totals(&out.stderr);
    let tids: Vec<u64> = parts.iter().filter_map(ThreadStats::tid).collect();
    let mut distinct = tids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), tids.len(), "one line per tid: {parts:#?}");
    assert!(parts.iter().all(|l| l.tid().is_some()), "no other threads");
    assert_eq!(all.who, format!("threads {}", tids.len()));
    let bands = expected_bands(23);
    for (tid, calls, bytes) in reported {
        let l = parts
            .iter()
            .find(|l| l.tid() == Some(tid))
            .unwrap_or_else(|| panic!("no line for tid {tid}: {parts:#?}"));
        assert_eq!((l.calls, l.bytes), (calls, bytes), "{}", l.line);
        let got: Vec<u64> = l.sizes.iter().map(|s| s.1).collect();
        assert_eq!(got, bands, "{}", l.line);
    }
}

#[test]
fn threads_past_the_table_share_one_line() {
    // 300 threads with sizes up to 1 KiB: more threads than the 256 slots.
    let out = run_ok(
        under_shim(program())
            .env("BLOCKMEM_STATS", "1")
            .args(["300", "10"]),
    );
    let reported = thread_sums_reported(&out.stderr);
    assert_eq!(reported.len(), 300);
    let (all, parts) = check_totals(&out.stderr);
    let own: Vec<&ThreadStats> = parts.iter().filter(|l| l.tid().is_some()).collect();
    assert_eq!(own.len(), 256, "one line per slot");
    assert_eq!(all.who, "threads 256 and others");
    let other: Vec<&ThreadStats> = parts.iter().filter(|l| l.who == "other threads").collect();
    assert_eq!(other.len(), 1, "{parts:#?}");
    let mut unslotted = 0;
    for (tid, calls, bytes) in reported {
        match own.iter().find(|l| l.tid() == Some(tid)) {
            Some(l) => assert_eq!((l.calls, l.bytes), (calls, bytes), "{}", l.line),
            None => unslotted += calls,
        }
    }
    assert!(unslotted > 0);
    assert!(other[0].calls >= unslotted, "{}", other[0].line);
}
