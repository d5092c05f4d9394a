//! `blockmem trace` from the outside, on the real shim: a C program with known calls
//! gives exactly their numbers (sizes, alignments, 4 KiB aliasing, a destination later
//! used as a source, one overwritten, probes on every call); a forked child gets its
//! own file and the statistics it inherits; real programs' totals equal
//! `BLOCKMEM_STATS` of the same run; the exported distribution replays in the lab's
//! fleet experiment; `trace report` reads the files back. Inputs are tiny: these
//! tests check counts, never timings.

#[path = "../../blockmem-preload/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The `blockmem` binary under test, hermetic like the shim tests (no BLOCKMEM_*
/// variables from outside, an empty XDG cache: CPUID-default profile).
fn blockmem() -> Command {
    let mut c = common::plain(env!("CARGO_BIN_EXE_blockmem"));
    // `blockmem trace` preloads the trace I/O library found next to the shim.
    common::traceio();
    c.env("BLOCKMEM_PRELOAD_PATH", common::shim());
    c
}

fn known_calls() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = common::scratch("trace");
        let exe = dir.join("known_calls");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/known_calls.c");
        common::cc(&["-O2", src.to_str().unwrap(), "-o", exe.to_str().unwrap()]);
        exe
    })
}

/// Runs `blockmem trace` with `args` into a fresh directory; returns the output and
/// the JSON report.
fn trace(name: &str, args: &[&str], command: &[&str]) -> (Output, Value, PathBuf) {
    let out = common::scratch("trace").join(name);
    let _ = std::fs::remove_dir_all(&out);
    let o = common::run_ok(
        blockmem()
            .arg("trace")
            .arg("--out")
            .arg(&out)
            .args(args)
            .arg("--")
            .args(command),
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    (o, json, out)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// (calls, bytes) of op index `k` in an `[Counts; 4]` array.
fn op(counts: &Value, k: usize) -> (u64, u64) {
    (u(&counts[k]["calls"]), u(&counts[k]["bytes"]))
}

#[test]
fn known_calls_give_exactly_their_numbers() {
    let exe = known_calls();
    let (o, j, out) = trace(
        "known",
        &[
            "--sample",
            "1",
            "--window",
            "all",
            "--no-estimate",
            "--check-stats",
        ],
        &[exe.to_str().unwrap()],
    );
    let a = &j["analysis"];
    assert_eq!(a["processes"].as_array().unwrap().len(), 1);
    // copy: 4096 + 4096 + 10; move 1000; set 1000; zero 512.
    assert_eq!(op(&a["by_op"], 0), (3, 8202));
    assert_eq!(op(&a["by_op"], 1), (1, 1000));
    assert_eq!(op(&a["by_op"], 2), (1, 1000));
    assert_eq!(op(&a["by_op"], 3), (1, 512));
    // Fate: A (4096 B) was copied on; D + 3 (the memset) was overwritten by the move;
    // the rest was not seen again.
    let f = &a["fates"];
    assert_eq!(u(&f[0]["used_as_source"]), 4096);
    assert_eq!(u(&f[0]["overwritten"]), 0);
    assert_eq!(u(&f[0]["not_seen_again"]), 4096 + 10);
    assert_eq!(u(&f[2]["overwritten"]), 1000);
    assert_eq!(u(&f[2]["not_seen_again"]), 0);
    assert_eq!(u(&f[1]["not_seen_again"]), 1000);
    assert_eq!(u(&f[3]["not_seen_again"]), 512);
    // Alignment histograms, index k = 2^k (6: 64 and more).
    let sum = |key: &str, k: usize| -> u64 { (0..4).map(|o| u(&a[key][o][k])).sum() };
    let dst: Vec<u64> = (0..7).map(|k| sum("dst_align", k)).collect();
    let src: Vec<u64> = (0..7).map(|k| sum("src_align", k)).collect();
    // dst: A and E+64 line-aligned, C+8 8, D+3 twice 1, B+100 4.
    assert_eq!(dst, [2, 0, 1, 1, 0, 0, 2]);
    // src: B and A line-aligned, E+1 1, B+2000 16.
    assert_eq!(src, [1, 0, 0, 0, 1, 0, 2]);
    // 4 KiB aliasing of copies and moves of >= 64 B: A-B 0; C+8-A 8; D+3-(E+1) 2.
    let alias: Vec<u64> = a["alias"].as_array().unwrap().iter().map(u).collect();
    assert_eq!(alias, [1, 2, 0, 0, 0, 0, 0, 0]);
    // Exact sizes per family (Memcpy, Memmove, Memset).
    let sizes = |fam: usize| a["distributions"][fam]["sizes"].clone();
    assert_eq!(sizes(0), serde_json::json!({"10": 1, "4096": 2}));
    assert_eq!(sizes(1), serde_json::json!({"1000": 1}));
    assert_eq!(sizes(2), serde_json::json!({"512": 1, "1000": 1}));
    // Every call probed (--sample 1): the table 2 rows of 128 B, 512 B, 1 KiB, 4 KiB.
    let rows: Vec<u64> = a["probe_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["blocks"]))
        .collect();
    assert_eq!(rows, [1, 0, 1, 2, 0, 2, 0, 0, 0, 0, 0]);
    // The 10-byte copy ran the shim's inline rungs; the others a kernel.
    assert_eq!(u(&a["kernels"]["inline"][0]["calls"]), 1);
    // BLOCKMEM_STATS agrees.
    assert_eq!(j["stats_check"]["rows"].as_array().unwrap().len(), 1);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("totals match BLOCKMEM_STATS for all 1 processes"),
        "{err}"
    );
    // Seed 004 Table 7 (docs/SEEDS.md) in the text: the two 4 KiB copies are full
    // pages. With --out the tables go to a file; stdout is the program's alone.
    let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("Block sizes"));
    assert!(text.contains("Block sizes (seed 004 Table 7)"), "{text}");
    assert!(text.contains("4 KiB ×2"), "{text}");
}

#[test]
fn a_forked_child_writes_its_own_file_and_inherits_the_statistics() {
    let exe = known_calls();
    let (_, j, out) = trace(
        "fork",
        &["--no-estimate", "--check-stats"],
        &[exe.to_str().unwrap(), "fork"],
    );
    let procs = j["analysis"]["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{procs:?}");
    let parent = procs.iter().find(|p| p["fork_parent"].is_null()).unwrap();
    let child = procs.iter().find(|p| !p["fork_parent"].is_null()).unwrap();
    assert_eq!(child["fork_parent"], parent["pid"]);
    assert!(out.join(format!("trace.{}", child["pid"])).is_file());
    // The child made one call; its statistics line counts the parent's six too.
    assert_eq!(op(&child["by_op"], 0), (1, 100));
    let inherited: u64 = (0..4).map(|k| op(&child["stats_equivalent"], k).0).sum();
    assert_eq!(inherited, 7);
    let rows = j["stats_check"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
}

#[test]
fn sort_totals_match_the_statistics_and_its_distribution_replays() {
    common::have("sort")
        .then_some(())
        .expect("sort is not installed: run scripts/deps.sh");
    let dir = common::scratch("trace");
    let input = dir.join("words.txt");
    let mut text = String::new();
    let mut x = 7u64;
    for i in 0..20_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text.push_str(&format!("line {} {}\n", x >> 40, i % 97));
    }
    std::fs::write(&input, text).unwrap();
    let dist = dir.join("sort-dist");
    let _ = std::fs::remove_dir_all(&dist);
    let sorted = dir.join("sorted.txt");
    let (o, j, out) = trace(
        "sort",
        &[
            "--no-estimate",
            "--check-stats",
            "--export-distribution",
            dist.to_str().unwrap(),
        ],
        &[
            "sort",
            "-o",
            sorted.to_str().unwrap(),
            input.to_str().unwrap(),
        ],
    );
    let total: u64 = (0..4).map(|k| op(&j["analysis"]["by_op"], k).0).sum();
    assert!(total > 1000, "sort made only {total} calls");
    assert!(String::from_utf8_lossy(&o.stderr).contains("totals match BLOCKMEM_STATS"));
    for f in ["index.html", "trace-sizes.svg", "trace-alignment.svg"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let files: Vec<PathBuf> = std::fs::read_dir(&dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty());
    // The lab replays the program's own distribution.
    let json = dir.join("fleet.json");
    common::run_ok(
        blockmem()
            .args([
                "lab",
                "fleet",
                "--reps",
                "1",
                "--methods",
                "libc,auto",
                "--llc",
                "4M",
                "--quiet",
            ])
            .arg("--distribution")
            .arg(&dist)
            .arg("--json")
            .arg(&json),
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), files.len() * 2 * 2);
    assert!(results.iter().all(|r| r["verified"] == true));
    assert!(results
        .iter()
        .all(|r| r["workload"].as_str().unwrap().ends_with("_sort")));

    // `trace report` reads the same files back, with the statistics from a file.
    let stats = dir.join("stats.txt");
    let line = format!(
        "blockmem: pid {} calls/bytes: copy {}/{} move {}/{} set {}/{} zero {}/{}; kernels: x 1/1\n",
        j["analysis"]["processes"][0]["pid"],
        op(&j["analysis"]["by_op"], 0).0,
        op(&j["analysis"]["by_op"], 0).1,
        op(&j["analysis"]["by_op"], 1).0,
        op(&j["analysis"]["by_op"], 1).1,
        op(&j["analysis"]["by_op"], 2).0,
        op(&j["analysis"]["by_op"], 2).1,
        op(&j["analysis"]["by_op"], 3).0,
        op(&j["analysis"]["by_op"], 3).1,
    );
    std::fs::write(&stats, line).unwrap();
    let o = common::run_ok(
        blockmem()
            .args(["trace", "report", "--no-estimate", "--stats"])
            .arg(&stats)
            .arg(&out),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("Totals by operation"));
}

/// The traced program's stdout is its own: `blockmem trace -- gzip -c big.txt > out.gz`
/// leaves an `out.gz` that decompresses to `big.txt` byte for byte, with `--out` and
/// the shim's statistics line at exit (`--check-stats`), and without `--out`, where the
/// tables go to stderr.
#[test]
fn tracing_gzip_leaves_its_output_byte_for_byte() {
    if !common::have("gzip") {
        eprintln!("skipped: gzip is not installed (scripts/deps.sh installs it)");
        return;
    }
    let dir = common::scratch("trace-gzip");
    let input = dir.join("big.txt");
    let mut text = Vec::with_capacity(4 << 20);
    let mut x = 11u64;
    while text.len() < 4 << 20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text.extend_from_slice(format!("record {} {:x}\n", x >> 45, x >> 20).as_bytes());
    }
    std::fs::write(&input, &text).unwrap();
    for (name, flags) in [
        ("with-out", &["--out", "t", "--check-stats"][..]),
        ("default", &[][..]),
    ] {
        let run = dir.join(name);
        let _ = std::fs::remove_dir_all(&run);
        std::fs::create_dir_all(&run).unwrap();
        let gz = run.join("out.gz");
        let o = common::run_ok(
            blockmem()
                .current_dir(&run)
                .arg("trace")
                .args(flags)
                .args(["--no-estimate", "--", "gzip", "-c"])
                .arg(&input)
                .stdout(std::fs::File::create(&gz).unwrap()),
        );
        let back = common::run_ok(Command::new("gzip").arg("-dc").arg(&gz));
        assert!(
            back.stdout == text,
            "{name}: out.gz does not decompress to the input ({} bytes back, {} in)",
            back.stdout.len(),
            text.len()
        );
        let err = String::from_utf8_lossy(&o.stderr);
        if flags.is_empty() {
            assert!(err.contains("Totals by operation"), "{name}: {err}");
        } else {
            let report = std::fs::read_to_string(run.join("t/report.txt")).unwrap();
            assert!(report.contains("Totals by operation"), "{report}");
            assert!(err.contains("totals match BLOCKMEM_STATS"), "{err}");
        }
    }
}

#[test]
fn python_totals_match_the_statistics() {
    common::have("python3")
        .then_some(())
        .expect("python3 is not installed: run scripts/deps.sh");
    let script = "b = bytes(range(256)) * 4096\nparts = [bytearray(b[i:i + 5000]) for i in range(0, len(b), 3000)]\nprint(sum(len(p) for p in parts))";
    let (o, j, _) = trace(
        "python",
        &["--check-stats"],
        &["python3", "-I", "-c", script],
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("totals match BLOCKMEM_STATS"));
    assert!(u(&j["analysis"]["by_op"][0]["calls"]) > 100);
    // The estimate ran (replaying samples against libc) and covers the classes.
    assert!(j["estimate"]["rows"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
}

/// No record lost: every process's trailer counts zero calls left out.
fn assert_nothing_missing(j: &Value) {
    for p in j["analysis"]["processes"].as_array().unwrap() {
        let t = &p["trailer"];
        for k in ["no_buffer", "while_starting", "lost", "busy_at_exit"] {
            assert_eq!(u(&t[k]), 0, "{k} in {p}");
        }
    }
}

#[test]
fn signal_handlers_copying_during_copies_fork_and_exec() {
    // The shim's own test program: a 200 µs timer whose handler copies while the main
    // loop copies (a nested call on the same thread finds its buffer busy and uses
    // another), then a forked child, then an exec'd one.
    let exe = common::build_c_program(&common::scratch("trace-signals"), "forkexec_test", &[]);
    let (o, j, _) = trace(
        "signals",
        &["--no-estimate", "--check-stats", "--sample", "7"],
        &[exe.to_str().unwrap(), "--expect-shim"],
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 failures"));
    let procs = j["analysis"]["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 3, "parent, forked child, exec'd child");
    assert_nothing_missing(&j);
    assert!(String::from_utf8_lossy(&o.stderr).contains("totals match BLOCKMEM_STATS for all 3"));
}

#[test]
fn eight_threads_trace_into_separate_buffers() {
    let exe = common::build_c_program(
        &common::scratch("trace-threads"),
        "threads_test",
        &["-pthread"],
    );
    let (o, j, out) = trace(
        "threads",
        &["--no-estimate", "--check-stats", "--sample", "0"],
        &[exe.to_str().unwrap()],
    );
    assert_nothing_missing(&j);
    assert!(u(&j["analysis"]["processes"][0]["records"]) >= 8 * 6000);
    assert!(String::from_utf8_lossy(&o.stderr).contains("totals match BLOCKMEM_STATS for all 1"));
    // The threads' records came from more than one buffer.
    let data = std::fs::read(out.join("trace")).unwrap();
    let mut buffers = std::collections::BTreeSet::new();
    let mut at = 0;
    while at + 12 <= data.len() {
        let kind = u16::from_le_bytes([data[at + 4], data[at + 5]]);
        let len = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        if kind == 2 {
            buffers.insert(u32::from_le_bytes(
                data[at + 12..at + 16].try_into().unwrap(),
            ));
        }
        at += 12 + len;
    }
    assert!(buffers.len() > 1, "all records in one buffer: {buffers:?}");
}

#[test]
fn each_thread_gets_a_row_with_its_own_calls_and_bytes() {
    let exe = common::build_c_program(
        &common::scratch("trace-thread-sums"),
        "thread_sums_test",
        &["-pthread"],
    );
    let (o, j, out) = trace(
        "thread-sums",
        &["--no-estimate", "--check-stats", "--sample", "0"],
        &[exe.to_str().unwrap()],
    );
    assert_nothing_missing(&j);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("totals match BLOCKMEM_STATS for all 1"),
        "{stderr}"
    );
    // --check-stats takes the per-thread statistics lines too.
    assert!(common::thread_stats_lines(&o.stderr).is_empty(), "{stderr}");
    let reported = common::thread_sums_reported(&o.stderr);
    assert_eq!(reported.len(), 10, "{stderr}");
    let rows = j["analysis"]["threads"].as_array().unwrap();
    let mut tids: Vec<u64> = rows.iter().map(|r| u(&r["tid"])).collect();
    tids.dedup();
    assert_eq!(tids.len(), rows.len(), "one row per thread: {rows:#?}");
    for (tid, calls, bytes) in &reported {
        let r = rows
            .iter()
            .find(|r| u(&r["tid"]) == *tid)
            .unwrap_or_else(|| panic!("no row for tid {tid}: {rows:#?}"));
        assert_eq!((u(&r["calls"]), u(&r["bytes"])), (*calls, *bytes), "{r}");
        let (streamed, temporal) = (u(&r["streamed"]), u(&r["temporal"]));
        assert_eq!(streamed + temporal, *bytes, "{r}");
        assert_eq!(u(&r["libc"]), 0);
        // Every temporal byte has exactly one fate.
        let f = &r["temporal_fates"];
        let fates = u(&f["used_as_source"]) + u(&f["overwritten"]) + u(&f["not_seen_again"]);
        assert_eq!(fates, temporal, "{r}");
    }
    // The rows add up to the process.
    let total: u64 = rows.iter().map(|r| u(&r["bytes"])).sum();
    let p = &j["analysis"]["processes"][0]["by_op"];
    assert_eq!(total, (0..4).map(|k| op(p, k).1).sum::<u64>());
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    let table = report.split("== Threads").nth(1).expect("a threads table");
    for (tid, _, _) in &reported {
        assert!(table.contains(&format!(" {tid} ")), "tid {tid} in {table}");
    }
}

#[test]
fn usage_errors_say_what_to_do() {
    let o = blockmem().arg("trace").output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("CMD"));
    let o = blockmem()
        .args(["trace", "report", "/nonexistent/trace"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read /nonexistent/trace"));
    let o = blockmem()
        .args(["trace", "report", env!("CARGO_MANIFEST_DIR")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no trace files"));
}

fn callsites() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = common::scratch("trace");
        let exe = dir.join("callsites");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/callsites.c");
        let (s, e) = (src.to_str().unwrap(), exe.to_str().unwrap());
        common::cc(&["-g", "-O1", "-fno-builtin", s, "-o", e]);
        exe
    })
}

/// The line of `tests/c/callsites.c` marked `/* site: TAG */`.
fn marked_line(tag: &str) -> u64 {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/callsites.c");
    let text = std::fs::read_to_string(src).unwrap();
    let marker = format!("/* site: {tag} */");
    text.lines().position(|l| l.contains(&marker)).unwrap() as u64 + 1
}

#[test]
fn call_sites_are_named_by_function_and_line_and_advised() {
    let exe = callsites();
    let (_, j, out) = trace(
        "sites",
        &[
            "--sample",
            "1",
            "--window",
            "all",
            "--no-estimate",
            "--advise",
        ],
        &[exe.to_str().unwrap()],
    );
    let sites = &j["analysis"]["sites"];
    assert_eq!(sites["recorded"], true);
    let list = sites["list"].as_array().unwrap();
    let site = |tag: &str| -> &Value {
        let line = marked_line(tag);
        list.iter()
            .find(|s| s["file"] == "callsites.c" && u(&s["line"]) == line)
            .unwrap_or_else(|| panic!("no site at callsites.c:{line} ({tag}) in {list:#?}"))
    };
    let (reused, small, discard) = (site("reused"), site("small"), site("discard"));
    assert_eq!(reused["function"], "copy_then_read");
    assert_eq!(small["function"], "copy_then_read");
    assert_eq!(discard["function"], "copy_and_discard");
    assert_eq!(op(&reused["by_op"], 0), (4, 4 * (256 << 10)));
    assert_eq!(op(&small["by_op"], 0), (16384, 16384 * 64));
    assert_eq!(op(&discard["by_op"], 0), (4, 4 * (4 << 20)));
    assert_eq!(u(&small["kernels"]["inline"]), 16384);
    // Fates: `work` is read by the small copies; the discarded buffer never is.
    assert_eq!(u(&reused["fates"]["used_as_source"]), 4 * (256 << 10));
    assert_eq!(u(&discard["fates"]["used_as_source"]), 0);
    assert_eq!(u(&small["fates"]["used_as_source"]), 0);
    // Every call was probed (--sample 1).
    assert_eq!(u(&discard["dst_state"]["sampled"]), 4);
    for s in [reused, small, discard] {
        assert_eq!(s["object"].as_str().unwrap(), exe.to_str().unwrap());
    }

    // The advice: reuse for the reread buffer and for the one written out, nothing for
    // the small copies.
    let advice = j["advice"].as_array().unwrap();
    let advised = |tag: &str| -> &Value {
        let label = format!("(callsites.c:{})", marked_line(tag));
        advice
            .iter()
            .find(|a| a["site"].as_str().unwrap().ends_with(&label))
            .unwrap_or_else(|| panic!("no advice for {label}: {advice:#?}"))
    };
    assert_eq!(advised("reused")["hint"], "reuse");
    // The discarded buffer is handed to write(): read again, by the kernel.
    assert_eq!(advised("discard")["hint"], "reuse");
    assert_eq!(advised("discard")["kernel_read_percent"], 100.0);
    assert!(advised("small")["hint"].is_null());
    // The hint map names exactly the advised sites whose hint changes a kernel.
    let map = std::fs::read_to_string(out.join("hints")).unwrap();
    assert!(map.starts_with("blockmem-hints 1\n"), "{map}");
    let entries: Vec<(String, u64, String)> = map
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("blockmem-hints"))
        .map(|l| {
            let mut w = l.split_whitespace();
            let hint = w.next().unwrap().to_string();
            let off = u64::from_str_radix(w.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            (hint, off, w.collect::<Vec<_>>().join(" "))
        })
        .collect();
    for tag in ["reused", "small", "discard"] {
        let a = advised(tag);
        let listed = entries.iter().any(|(h, off, obj)| {
            a["hint"] == h.as_str() && *off == u(&a["offset"]) && obj == exe.to_str().unwrap()
        });
        assert_eq!(listed, a["in_map"] == true, "{tag}: {a} / {map}");
        assert_eq!(a["in_map"], a["changes_kernel"], "{tag}: {a}");
    }
    let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
    let line = format!("copy_and_discard (callsites.c:{})", marked_line("discard"));
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("Advice: hints per call site"), "{text}");
}

#[test]
fn hint_maps_are_checked_and_applied_without_changing_results() {
    let exe = callsites();
    let dir = common::scratch("trace").join("hintmaps");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |map: &Path| {
        let o = common::under_shim(exe)
            .env("BLOCKMEM_HINTS", map)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // A directory is rejected before it is opened for reading.
    let err = run(&dir);
    assert!(err.contains("not a regular file"), "{err}");
    // A bad line is named.
    let bad = dir.join("bad");
    std::fs::write(
        &bad,
        "blockmem-hints 1\n# comment\nsometimes 0x10 /bin/true\n",
    )
    .unwrap();
    let err = run(&bad);
    assert!(err.contains("line 3: expected a hint"), "{err}");
    let wrong = dir.join("wrong");
    std::fs::write(&wrong, "hints 2\n").unwrap();
    assert!(run(&wrong).contains("line 1: expected the first line"));
    // A good map (every site of the program, both hints) runs silently and correctly
    // (the program checks its own sums).
    let (_, j, _) = trace(
        "sites-map",
        &["--no-estimate", "--advise"],
        &[exe.to_str().unwrap()],
    );
    let mut text = String::from("blockmem-hints 1\n");
    for (k, s) in j["analysis"]["sites"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let hint = if k % 2 == 0 { "noreuse" } else { "reuse" };
        text.push_str(&format!(
            "{hint} {:#x} {}\n",
            u(&s["offset"]),
            s["object"].as_str().unwrap()
        ));
    }
    let good = dir.join("good");
    std::fs::write(&good, text).unwrap();
    assert_eq!(run(&good), "");
}

/// A decision table on which a hint changes the kernel of a 64 KiB copy in every
/// destination state, with kernels every x86-64 CPU has: `Auto` runs `sse2`, `Reuse`
/// `portable`, `NoReuse` `rep_movsb`. No band probes.
fn table_where_hints_differ(dir: &Path) -> PathBuf {
    let mut text = String::from("version = 2\n");
    for (hint, kernel) in [
        ("auto", "sse2"),
        ("reuse", "portable"),
        ("noreuse", "rep_movsb"),
    ] {
        for state in ["unknown", "cached", "cold", "fresh"] {
            text.push_str(&format!("copy.{hint}.{state} = from 0: {kernel}\n"));
        }
    }
    let path = dir.join("profile");
    std::fs::write(&path, text).unwrap();
    path
}

/// The kernels each site of `tests/c/hinted.c` ran, by function name, from a trace of
/// it (with `env` set for the traced program).
fn kernels_by_site(name: &str, exe: &Path, env: &[(&str, &Path)]) -> Vec<(String, u64, Value)> {
    let out = common::scratch("trace").join(name);
    let _ = std::fs::remove_dir_all(&out);
    let mut c = blockmem();
    for (k, v) in env {
        c.env(k, v);
    }
    common::run_ok(
        c.args(["trace", "--no-estimate", "--out"])
            .arg(&out)
            .arg("--")
            .arg(exe),
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    j["analysis"]["sites"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let f = s["function"].as_str().unwrap_or_default().to_string();
            assert_eq!(s["object"].as_str().unwrap(), exe.to_str().unwrap());
            (f, u(&s["offset"]), s["kernels"].clone())
        })
        .collect()
}

#[test]
fn a_hint_map_changes_the_kernel_of_the_sites_it_names_only() {
    let dir = common::scratch("trace").join("hinted");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("hinted");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hinted.c");
    let (s, e) = (src.to_str().unwrap(), exe.to_str().unwrap());
    common::cc(&["-g", "-O1", "-fno-builtin", s, "-o", e]);
    let profile = table_where_hints_differ(&dir);
    const ROUNDS: u64 = 8;
    const SIZE: u64 = 64 << 10;

    // The sites' offsets in the executable, from a trace without a map: all Auto.
    let sites = kernels_by_site("hinted-auto", &exe, &[("BLOCKMEM_PROFILE", &profile)]);
    let offset = |f: &str| {
        sites
            .iter()
            .find(|s| s.0 == f)
            .unwrap_or_else(|| panic!("{f}: {sites:?}"))
            .1
    };
    for (f, _, kernels) in &sites {
        assert_eq!(kernels["sse2"], ROUNDS, "{f}: {kernels}");
    }
    let map = dir.join("map");
    let text = format!(
        "blockmem-hints 1\nnoreuse {:#x} {e}\nreuse {:#x} {e}\n",
        offset("copy_noreuse"),
        offset("copy_reuse"),
    );
    std::fs::write(&map, text).unwrap();

    // Statistics count the kernel each call ran: with the map, one site each.
    let stats = |hints: Option<&Path>| {
        let mut c = common::under_shim(&exe);
        c.env("BLOCKMEM_PROFILE", &profile)
            .env("BLOCKMEM_STATS", "1");
        if let Some(m) = hints {
            c.env("BLOCKMEM_HINTS", m);
        }
        common::stats_lines(&common::run_ok(&mut c).stderr).remove(0)
    };
    let without = stats(None);
    assert_eq!(
        without.kernel("sse2"),
        (3 * ROUNDS, 3 * ROUNDS * SIZE),
        "{}",
        without.line
    );
    assert_eq!(
        without.kernel("rep_movsb").0 + without.kernel("portable").0,
        0
    );
    let with = stats(Some(&map));
    for k in ["sse2", "portable", "rep_movsb"] {
        assert_eq!(
            with.kernel(k),
            (ROUNDS, ROUNDS * SIZE),
            "{k}: {}",
            with.line
        );
    }
    assert!(
        with.line.contains("; hints 2 sites from 0 B"),
        "{}",
        with.line
    );

    // A trace of the run with the map names the kernel per site.
    let env = [
        ("BLOCKMEM_PROFILE", profile.as_path()),
        ("BLOCKMEM_HINTS", &map),
    ];
    let hinted = kernels_by_site("hinted-map", &exe, &env);
    for (f, kernel) in [
        ("copy_noreuse", "rep_movsb"),
        ("copy_reuse", "portable"),
        ("copy_plain", "sse2"),
    ] {
        let (_, _, kernels) = hinted.iter().find(|s| s.0 == f).unwrap();
        assert_eq!(kernels, &serde_json::json!({ kernel: ROUNDS }), "{f}");
    }
}

/// `tests/c/NAME.c` of the shim's tests, without debug information (sites are named
/// by the symbol table: the function that called `memcpy`, not the inlined wrapper).
fn fate_program(name: &str) -> PathBuf {
    let dir = common::scratch("trace-fate");
    common::build_c_program(&dir, name, &[])
}

/// The site of `function` in a report's JSON.
fn site_of<'a>(j: &'a Value, function: &str) -> &'a Value {
    let list = j["analysis"]["sites"]["list"].as_array().unwrap();
    list.iter()
        .find(|s| s["function"] == function && u(&s["observed"]["calls"]) > 0)
        .or_else(|| list.iter().find(|s| s["function"] == function))
        .unwrap_or_else(|| panic!("no site in {function}: {list:#?}"))
}

#[test]
fn a_destination_read_by_loads_is_reuse_and_one_never_read_is_noreuse() {
    let exe = fate_program("two_sites");
    // 8 rounds, 2 ms before each call: every call may be watched whatever the host's
    // speed (at most one watch is armed a millisecond).
    let (_, j, _) = trace(
        "two-sites",
        &["--no-estimate", "--advise"],
        &[exe.to_str().unwrap(), "8", "2000"],
    );
    let advice = j["advice"].as_array().unwrap();
    let advised = |function: &str| -> &Value {
        advice
            .iter()
            .find(|a| {
                a["site"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{function} ("))
            })
            .unwrap_or_else(|| panic!("no advice for {function}: {advice:#?}"))
    };
    let (read, unread) = (advised("copy_then_read"), advised("copy_never_read"));
    assert_eq!(read["hint"], "reuse", "{read}");
    assert_eq!(unread["hint"], "noreuse", "{unread}");
    // Every call was 8 MiB, one a round: observed, within the one-a-millisecond bound.
    for a in [read, unread] {
        assert!(u(&a["observed_calls"]) >= 1, "{a}");
        assert!(u(&a["observed_calls"]) <= 8, "{a}");
    }
    assert_eq!(read["load_read_percent"], 100.0, "{read}");
    assert_eq!(unread["reused_percent"], 0.0, "{unread}");
    // The observed table's pages: all read by loads, all untouched.
    let pages = |s: &Value, k: usize| u(&s["observed"]["pages"][k]);
    let (r, n) = (
        site_of(&j, "copy_then_read"),
        site_of(&j, "copy_never_read"),
    );
    assert_eq!(pages(r, 0), 16 * u(&r["observed"]["calls"]));
    assert_eq!(pages(n, 7), 16 * u(&n["observed"]["calls"]));
}

/// Runs `exe` with the shim and the trace I/O library preloaded and tracing on, and
/// plain; both outputs.
fn traced_and_plain(exe: &Path, env: &[(&str, &str)], name: &str) -> (Output, Output) {
    let dir = common::scratch("trace-fate").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let preload = format!(
        "{}:{}",
        common::shim().display(),
        common::traceio().display()
    );
    let mut t = common::plain(exe);
    t.env("LD_PRELOAD", preload)
        .env("BLOCKMEM_TRACE", dir.join("trace"))
        .envs(env.iter().copied());
    let mut p = common::plain(exe);
    p.envs(env.iter().copied());
    (t.output().unwrap(), p.output().unwrap())
}

/// [`traced_and_plain`], asserting that both runs end alike and print the same; the
/// plain run's exit code and output.
fn same_traced_and_plain(exe: &Path, env: &[(&str, &str)], name: &str) -> (Option<i32>, String) {
    let (t, p) = traced_and_plain(exe, env, name);
    assert_eq!(
        t.status.code(),
        p.status.code(),
        "{}",
        String::from_utf8_lossy(&t.stderr)
    );
    let out = String::from_utf8_lossy(&p.stdout).into_owned();
    assert_eq!(String::from_utf8_lossy(&t.stdout), out);
    (p.status.code(), out)
}

/// Traced destinations handed to the kernel through the calls beside `read` and
/// `write` (vector I/O at an offset, message vectors, `vmsplice`, cross-process vector
/// copies on itself): every call succeeds and moves the same bytes as untraced.
#[test]
fn destinations_handed_to_the_kernel_by_vector_calls_never_fault() {
    let exe = fate_program("vector_io");
    let (code, out) = same_traced_and_plain(&exe, &[], "vector-io");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !out.contains("errno") && !out.contains("DIFFERENT"),
        "{out}"
    );
    assert_eq!(
        out.matches("1048576 of 1048576 bytes, equal").count(),
        3 * 7,
        "{out}"
    );
    assert_eq!(
        out.matches("sendmmsg 4, recvmmsg 4, equal").count(),
        3,
        "{out}"
    );
    // The vector calls at an offset are counted, their v2 forms under the same op.
    let (_, j, _) = trace("vector-io", &["--no-estimate"], &[exe.to_str().unwrap()]);
    let io = &j["analysis"]["io"];
    for op in ["preadv", "pwritev"] {
        assert_eq!(u(&io[op]["calls"]), 6, "{op}: {io}");
        assert_eq!(u(&io[op]["bytes"]), 6 << 20, "{op}: {io}");
        assert_eq!(u(&io[op]["errors"]), 0, "{op}: {io}");
    }
}

#[test]
fn a_program_with_its_own_sigsegv_handler_runs_unchanged() {
    let exe = fate_program("own_segv");
    let (code, out) = same_traced_and_plain(&exe, &[], "own-segv");
    assert_eq!(code, Some(7));
    assert!(out.contains("reported back: yes"), "{out}");
    assert!(
        out.contains("hits 6, address is the guard page: yes"),
        "{out}"
    );
    assert!(out.contains("previous handler: yes"), "{out}");
    assert!(out.contains("hits 600"), "{out}");
    // A fault with the default action restored still kills it with SIGSEGV.
    let (t, p) = traced_and_plain(&exe, &[("OWN_SEGV_DIE", "1")], "own-segv-die");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(p.status.signal(), Some(libc::SIGSEGV));
    assert_eq!(t.status.signal(), p.status.signal());
    assert_eq!(t.stdout, p.stdout);
    // And `blockmem trace` saw its copies' destinations read by loads.
    let o = blockmem()
        .args(["trace", "--no-estimate", "--out"])
        .arg(common::scratch("trace-fate").join("own-segv-report"))
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&p.stdout)
    );
    let j: Value = serde_json::from_str(
        &std::fs::read_to_string(common::scratch("trace-fate").join("own-segv-report/report.json"))
            .unwrap(),
    )
    .unwrap();
    let copy = &j["analysis"]["observed"][0];
    assert!(u(&copy["calls"]) > 0, "{copy}");
    assert_eq!(u(&copy["pages"][0]), 16 * u(&copy["calls"]), "{copy}");
}

#[test]
fn a_destination_written_to_a_pipe_runs_unchanged_and_is_read_by_the_kernel() {
    let exe = fate_program("pipe_io");
    let (code, out) = same_traced_and_plain(&exe, &[], "pipe-io");
    assert_eq!(code, Some(0), "{out}");
    for want in [
        "read empty non-blocking pipe: -1 errno EAGAIN",
        "partial yes",
        "write to a full pipe: -1 errno EAGAIN",
        "drained all",
        "write to a closed fd: -1 errno EBADF",
        "send on a non-socket: -1 errno ENOTSOCK",
        "pwrite to a closed fd: -1 errno EBADF",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert_eq!(out.matches("equal yes, writer exit 0").count(), 4, "{out}");
    let (_, j, _) = trace("pipe-io", &["--no-estimate"], &[exe.to_str().unwrap()]);
    // The destination handed to write() in this process: read by the kernel.
    let s = site_of(&j, "copy_for_output");
    assert!(u(&s["observed"]["pages"][2]) > 0, "{s}");
    // The I/O table: this process's write, read and readv calls with their results.
    let io = &j["analysis"]["io"];
    assert_eq!(u(&io["readv"]["bytes"]), 4 << 20, "{io}");
    assert_eq!(u(&io["write"]["errors"]), 2, "{io}");
    // The empty pipe, and the drain loop's last read.
    assert_eq!(u(&io["read"]["errors"]), 2, "{io}");
    assert_eq!(u(&io["send"]["errors"]), 1, "{io}");
    assert_eq!(u(&io["pwrite"]["errors"]), 1, "{io}");
}
