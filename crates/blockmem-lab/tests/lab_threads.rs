//! `blockmem lab threads` from the outside, with tiny sizes and few repetitions: the
//! three parts are present, every record verified, the scaling part covers every
//! thread count from 1 to the CPUs allowed; pinned to one CPU it is skipped with a
//! message. Plumbing only, never timings.

mod common;

use common::{allowed_cpus, blockmem_on_one_cpu, run_lab_json};
use serde_json::Value;

#[test]
fn threads_quick_has_three_verified_parts_over_every_thread_count() {
    let cpus = allowed_cpus();
    if cpus < 2 {
        return; // the one-CPU case is the test below
    }
    let d = tempfile::tempdir().unwrap();
    let (stdout, json) = run_lab_json(
        &[
            "lab", "threads", "--quick", "--sizes", "64K,256K", "--reps", "2", "--llc", "4M",
            "--quiet",
        ],
        d.path(),
    );
    for title in ["threads scaling", "threads victim", "threads hand-off"] {
        assert!(stdout.contains(title), "{title} missing:\n{stdout}");
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
        for f in [
            "method",
            "op",
            "size",
            "src",
            "dst",
            "reuse",
            "median_ns",
            "gbps",
        ] {
            assert!(!r[f].is_null(), "{f} missing in {r}");
        }
    }
    let part = |p: &str| -> Vec<&Value> { results.iter().filter(|r| r["part"] == p).collect() };
    let scaling = part("scaling");
    let mut counts: Vec<u64> = scaling
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    counts.sort_unstable();
    counts.dedup();
    assert_eq!(counts, (1..=cpus as u64).collect::<Vec<_>>());
    for r in &scaling {
        let per = r["per_thread_gbps"].as_array().unwrap();
        assert_eq!(per.len() as u64, r["threads"].as_u64().unwrap(), "{r}");
        assert!(r["gbps"].as_f64().unwrap() > 0.0, "{r}");
    }
    for op in ["copy", "zero"] {
        assert!(scaling.iter().any(|r| r["op"] == op), "{op}");
    }
    let victim = part("victim");
    assert!(victim.iter().any(|r| r["method"] == "auto-noreuse"));
    assert!(victim.iter().any(|r| r["method"] == "auto-reuse"));
    assert!(victim
        .iter()
        .all(|r| r["alone_ns_per_line"].as_f64().unwrap() > 0.0));
    let handoff = part("handoff");
    assert!(handoff
        .iter()
        .all(|r| r["consumer_ns"].as_f64().unwrap() > 0.0));
    assert!(d.path().join("report/threads-scaling.svg").exists());
}

#[test]
fn threads_on_one_cpu_is_skipped_with_a_message() {
    let mut c = blockmem_on_one_cpu();
    let out = c
        .args(["lab", "threads", "--reps", "1", "--llc", "4M", "--quiet"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("threads skipped: threads needs two CPUs"),
        "{err}"
    );
}
