//! `blockmem lab kernel` from the outside, with two sizes and few repetitions: the read
//! path, the IPC channels, the forwarded file and the classic loops are all present and
//! verified, with the fields the tables and the results rely on; pinned to one CPU the
//! pair shares it and says so. Plumbing only, never timings.

mod common;

use common::{allowed_cpus, blockmem_on_one_cpu, run_lab_json, RESULT_FIELDS};
use serde_json::Value;

const ARGS: [&str; 10] = [
    "lab", "kernel", "--quick", "--sizes", "4K,64K", "--reps", "2", "--llc", "4M", "--quiet",
];

fn results(json: &std::path::Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "kernel", "{}", v["experiment"]);
    v["results"].as_array().unwrap().clone()
}

fn methods_of(rs: &[Value], part: &str) -> Vec<String> {
    let mut m: Vec<String> = rs
        .iter()
        .filter(|r| r["part"] == part)
        .map(|r| r["method"].as_str().unwrap().to_string())
        .collect();
    m.sort();
    m.dedup();
    m
}

#[test]
fn kernel_quick_has_verified_read_ipc_forward_and_classic_parts() {
    let d = tempfile::tempdir().unwrap();
    let (stdout, json) = run_lab_json(&ARGS, d.path());
    for title in [
        "kernel read fast path",
        "run-to-run spread",
        "kernel IPC: two processes",
        "what the consumer pays",
        "kernel forward",
        "the classic loops",
        "where the copy is the cost of I/O",
        "FSRM",
    ] {
        assert!(stdout.contains(title), "{title} missing:\n{stdout}");
    }
    let rs = results(&json);
    for r in &rs {
        assert_eq!(r["verified"], true, "{r}");
        for f in RESULT_FIELDS {
            assert!(!r[f].is_null(), "{f} missing in {r}");
        }
        assert!(r["median_ns"].as_f64().unwrap() > 0.0, "{r}");
        assert!(!r["kernel_release"].as_str().unwrap().is_empty(), "{r}");
        assert!(r["fsrm"].is_boolean() && r["fsrs"].is_boolean(), "{r}");
    }
    assert_eq!(
        methods_of(&rs, "read"),
        ["mmap+auto", "mmap+libc", "pread", "read"]
    );
    // The file forwarded by every route at both sizes, each route's bytes checked.
    assert_eq!(
        methods_of(&rs, "forward"),
        [
            "copy_file_range",
            "mmap+pwrite",
            "pread+pwrite",
            "sendfile",
            "splice"
        ]
    );
    let forward = rs.iter().filter(|r| r["part"] == "forward");
    assert_eq!(forward.clone().count(), 5 * 2);
    assert!(forward.clone().all(|r| r["filesystem"].is_string()));
    let read: Vec<&Value> = rs.iter().filter(|r| r["part"] == "read").collect();
    // 2 sizes × 2 page-cache states × 3 buffer states × 4 methods.
    assert_eq!(read.len(), 48);
    for r in &read {
        assert!(r["spread_max_over_min"].as_f64().unwrap() >= 1.0, "{r}");
        assert!(r["spread_rounds"].as_f64().unwrap() >= 1.0, "{r}");
        assert!(
            ["hot", "evicted"].contains(&r["src"].as_str().unwrap()),
            "{r}"
        );
    }
    assert_eq!(
        methods_of(&rs, "ipc"),
        [
            "pipe",
            "shm-inplace",
            "shm-ring",
            "unix",
            "user-copy×2",
            "vmsplice"
        ]
    );
    for r in rs
        .iter()
        .filter(|r| r["part"] == "ipc" && r["reuse"] == "read")
    {
        assert!(r["read_ns_per_msg"].as_f64().unwrap() >= 0.0, "{r}");
    }
    assert_eq!(
        methods_of(&rs, "classic"),
        ["bw_file_rd", "bw_pipe", "bw_unix"]
    );
    let two = allowed_cpus() >= 2;
    let one_cpu = rs
        .iter()
        .any(|r| r["part"] == "ipc" && r["placement"] == "one CPU");
    assert_eq!(one_cpu, two, "the one-CPU placement runs beside two CPUs");
    let report = std::fs::read_to_string(d.path().join("report/index.html")).unwrap();
    assert!(report.contains("kernel-ipc.svg") && report.contains("kernel-read.svg"));
}

#[test]
fn kernel_on_one_cpu_runs_the_pair_on_it_and_marks_it() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("k.json");
    let out = blockmem_on_one_cpu()
        .args(["lab", "kernel", "--quick", "--sizes", "4K", "--reps", "1"])
        .args(["--llc", "4M", "--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("one CPU allowed"));
    let rs = results(&json);
    let ipc: Vec<&Value> = rs.iter().filter(|r| r["part"] == "ipc").collect();
    assert!(!ipc.is_empty());
    for r in ipc {
        assert_eq!(r["placement"], "one CPU", "{r}");
        assert_eq!(r["verified"], true, "{r}");
    }
}
