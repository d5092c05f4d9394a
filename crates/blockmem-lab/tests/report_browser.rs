//! The HTML report as a browser sees it: headless Chromium loads `index.html` and
//! dumps its DOM, and the page must lead with the answer (auto against libc, per op,
//! and its chart) and have no empty section. One report comes from a synthetic lab
//! JSON through `blockmem report` (every kind of section, a skipped experiment among
//! them), one from a tiny real run. Skipped with a note where `/usr/bin/chromium` is
//! missing (`scripts/deps.sh` installs it).

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser, or `None` with a note on stderr.
fn chromium() -> Option<PathBuf> {
    let p = PathBuf::from(CHROMIUM);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("note: {CHROMIUM} not found: browser test skipped (scripts/deps.sh installs it)");
        None
    }
}

/// Runs headless Chromium on `page` with `args` (`--dump-dom`, `--screenshot=…`),
/// returning its stdout; fails the test after 90 s.
fn headless(browser: &Path, page: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Process::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish {} in 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {}",
        page.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `<section>` elements of a DOM (not nested in this report): id and inner HTML.
fn sections(dom: &str) -> Vec<(String, String)> {
    dom.split("<section")
        .skip(1)
        .map(|rest| {
            let id = rest
                .split_once("id=\"")
                .and_then(|(_, r)| r.split_once('"'))
                .map_or(String::new(), |(id, _)| id.to_string());
            let body = rest.split("</section>").next().unwrap_or("");
            let inner = body.split_once('>').map_or("", |(_, b)| b).to_string();
            (id, inner)
        })
        .collect()
}

/// Text without tags.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// What every report must show, checked on the DOM a browser built from it.
fn check_page(dom: &str, dir: &Path, ops: &[&str]) {
    let secs = sections(dom);
    let ids: Vec<&str> = secs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids.first(),
        Some(&"headline"),
        "the page leads with the answer: {ids:?}"
    );
    for id in ["warnings", "contents", "data", "host"] {
        assert!(ids.contains(&id), "no section {id}: {ids:?}");
    }
    let (_, headline) = &secs[0];
    assert!(text(headline).contains("The answer: auto against libc"));
    assert!(headline.contains("class=\"headline\""), "no summary table");
    for op in ops {
        assert!(
            headline.contains(&format!("<th>{op}</th>")),
            "no row for {op} in the headline"
        );
    }
    assert!(
        headline.contains("<svg") && headline.contains("class=\"cell\""),
        "no chart"
    );
    assert!(text(headline).contains("geometric mean"));
    for (id, inner) in &secs {
        let heading_only = inner
            .split_once("</h2>")
            .map_or(inner.as_str(), |(_, rest)| rest);
        assert!(
            !text(heading_only).trim().is_empty(),
            "section {id} is empty: {inner}"
        );
        if dom.contains(&format!("class=\"experiment\" id=\"{id}\"")) {
            assert!(
                inner.contains("<img")
                    || inner.contains("<table")
                    || inner.contains("class=\"missing\""),
                "experiment {id} has neither plots, tables nor a reason"
            );
        }
    }
    // Every plot the page shows exists beside it.
    for src in dom.split("<img src=\"").skip(1) {
        let file = src.split('"').next().unwrap();
        assert!(dir.join(file).is_file(), "{file} is missing");
    }
}

/// A record as the lab writes it: every sample `t` ns.
fn record(exp: &str, method: &str, op: &str, size: u64, s: (&str, &str, &str), t: f64) -> Value {
    json!({
        "experiment": exp, "method": method, "op": op, "size": size,
        "src": s.0, "dst": s.1, "reuse": s.2,
        "min_ns": t, "median_ns": t, "max_ns": t, "q1_ns": t, "q3_ns": t,
        "gbps": size as f64 / t, "verified": true, "reps": 5,
        "samples_ns": [t * 0.98, t, t * 1.02, t, t * 0.99],
    })
}

/// A lab JSON with temperature and policy results, a skipped fleet, warnings of two
/// kinds and the decision table in force.
fn synthetic_run() -> Value {
    let mut results = Vec::new();
    let states = ["hot", "clean", "dirty"];
    for (i, s) in states.iter().enumerate() {
        for (j, d) in states.iter().enumerate() {
            let auto = 100.0 * (0.8 + 0.1 * (i + j) as f64);
            for (m, t) in [("libc", 100.0), ("auto", auto), ("avx2", 120.0)] {
                results.push(record("temperature", m, "copy", 4096, (s, d, "none"), t));
            }
        }
    }
    for (size, auto) in [(64u64 << 10, 90.0), (8 << 20, 130.0)] {
        for reuse in ["none", "read"] {
            for (m, t) in [
                ("libc", 100.0),
                ("auto", auto),
                ("auto_hinted", 95.0),
                ("libc_again", 101.0),
                ("avx2_nt", 80.0),
            ] {
                results.push(record(
                    "policy",
                    m,
                    "copy",
                    size,
                    ("hot", "clean", reuse),
                    t,
                ));
            }
        }
        for (m, t) in [("libc", 100.0), ("auto", auto * 0.9), ("avx2", 110.0)] {
            results.push(record(
                "policy",
                m,
                "zero",
                size,
                ("none", "clean", "none"),
                t,
            ));
        }
    }
    let row = |family: &str, state: &str, bands: Value| json!({"family": family, "hint": "auto", "state": state, "compiled": bands});
    json!({
        "host": {
            "cpu": {"brand": "Synthetic CPU 1"},
            "cpus": 4,
            "hierarchy": {"l1d": 49152, "l2": 2097152, "llc_reported": 503316480u64,
                          "llc_effective": 25165824u64, "llc_source": "measured"},
            "timer": {"ticks_per_ns": 2.6, "drain_stores": true},
            "libc": "/lib/x86_64-linux-gnu/libc.so.6",
            "perf": {"detail": "no counters"},
            "profile": {"source": "built-in", "path": "/root/.cache/blockmem/profile", "error": null},
            "table": {"builtin_class": "intel-avx512", "forced": null, "rows": [
                row("copy", "unknown", json!([{"from": 0, "action": "avx512"}, {"from": 1 << 20, "action": "probe"}])),
                row("copy", "cold", json!([{"from": 0, "action": "avx512"}, {"from": 8 << 20, "action": "avx512_nt"}])),
                row("copy", "cached", json!([{"from": 0, "action": "avx512"}])),
                row("set", "unknown", json!([{"from": 0, "action": "rep_stosb"}])),
            ]},
        },
        "experiment": "temperature+policy+fleet",
        "experiments": ["temperature", "policy", "fleet"],
        "skipped": [{"experiment": "fleet", "reason": "fleet: distributions not found; pass --fleet-dir DIR"}],
        "warnings": ["noisy: temperature auto copy 4096 B hot→hot spread 40% (IQR/median)"],
        "warning_groups": [
            {"kind": "skipped", "details": ["fleet: skipped: distributions not found"]},
            {"kind": "noisy", "details": ["noisy: temperature auto copy 4096 B hot→hot spread 40%",
                                           "noisy: policy auto copy 8 MiB hot→clean spread 30%"]},
        ],
        "results": results,
    })
}

#[test]
fn a_synthetic_report_leads_with_the_answer_and_has_no_empty_section() {
    let Some(browser) = chromium() else { return };
    let d = tempfile::tempdir().unwrap();
    let json_path = d.path().join("lab.json");
    std::fs::write(&json_path, synthetic_run().to_string()).unwrap();
    let out = d.path().join("report");
    let run = Command::cargo_bin("blockmem")
        .unwrap()
        .arg("report")
        .arg(&json_path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("auto against libc on Synthetic CPU 1 (4 CPUs"),
        "{stderr}"
    );
    let page = out.join("index.html");
    let dom = headless(&browser, &page, &["--dump-dom"]);
    check_page(&dom, &out, &["copy", "zero"]);
    // The skipped experiment says why; the warnings are grouped with counts, folded.
    let secs = sections(&dom);
    let fleet = &secs.iter().find(|(id, _)| id == "fleet").unwrap().1;
    assert!(
        text(fleet).contains("No results: skipped: fleet: distributions not found"),
        "{fleet}"
    );
    let warnings = &secs.iter().find(|(id, _)| id == "warnings").unwrap().1;
    assert!(warnings.contains("<details"));
    assert!(
        text(warnings).contains("Noisy cells: compare their medians only (2)"),
        "{warnings}"
    );
    // Heat maps and the headline chart are ratios to libc.
    let svg = std::fs::read_to_string(out.join("temperature-4KiB.svg")).unwrap();
    assert!(svg.contains("libc time / method time") && svg.contains("faster than libc"));
    // The worst copy cell is named in the headline.
    assert!(
        text(&secs[0].1).contains("policy: 8 MiB hot→clean"),
        "{}",
        secs[0].1
    );
}

#[test]
fn a_tiny_real_run_renders_in_a_browser() {
    let Some(browser) = chromium() else { return };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("report");
    let run = Command::cargo_bin("blockmem")
        .unwrap()
        .args([
            "lab",
            "temperature",
            "zero",
            "--sizes",
            "4K",
            "--reps",
            "3",
            "--methods",
            "libc,auto,avx2",
            "--llc",
            "4M",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    // The closing summary is the last thing the run prints: its heading, then only
    // its indented lines, one per op at least.
    let lines: Vec<&str> = stderr.lines().collect();
    let head = lines
        .iter()
        .rposition(|l| l.starts_with("blockmem lab: auto against libc on "))
        .unwrap_or_else(|| panic!("no summary: {stderr}"));
    let summary = &lines[head + 1..];
    assert!(summary.iter().all(|l| l.starts_with("  ")), "{stderr}");
    for op in ["copy", "set", "zero"] {
        assert!(
            summary.iter().any(|l| l.starts_with(&format!("  {op} "))),
            "no {op} line: {stderr}"
        );
    }
    let page = out.join("index.html");
    let dom = headless(&browser, &page, &["--dump-dom"]);
    check_page(&dom, &out, &["copy", "set", "zero"]);
    let shot = d.path().join("top.png");
    headless(
        &browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1000",
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}
