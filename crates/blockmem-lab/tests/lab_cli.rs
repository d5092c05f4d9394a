//! `blockmem lab` from the outside: bad flags fail clearly with a non-zero exit; a tiny
//! real run writes JSON with docs/DESIGN.md's fields (every result verified), CSV, SVG plots
//! and index.html; `--compare` reads them back. Sizes and repetitions are tiny: these
//! tests check plumbing, never timings.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn lab() -> Command {
    let mut c = Command::cargo_bin("blockmem").expect("binary built");
    c.arg("lab");
    c
}

#[test]
fn unknown_experiment_is_rejected_with_the_list() {
    lab().arg("nonsense").assert().failure().code(2).stderr(
        predicate::str::contains("invalid value 'nonsense'")
            .and(predicate::str::contains("temperature")),
    );
}

#[test]
fn unknown_flag_is_rejected() {
    lab()
        .arg("--no-such-flag")
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("--no-such-flag"));
}

#[test]
fn zero_reps_is_rejected() {
    lab()
        .args(["temperature", "--reps", "0"])
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("--reps"));
}

#[test]
fn unknown_method_names_the_known_ones() {
    lab()
        .args(["temperature", "--methods", "libc,bogus"])
        .assert()
        .failure()
        .code(2)
        .stderr(
            predicate::str::contains("unknown method 'bogus'")
                .and(predicate::str::contains("avx2_nt")),
        );
}

#[test]
fn bad_size_says_how_to_write_one() {
    lab()
        .args(["sizes", "--sizes", "4K,12Q"])
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains("--sizes").and(predicate::str::contains("not a size")));
}

#[test]
fn unwritable_output_fails_before_measuring() {
    lab()
        .args(["temperature", "--json", "/etc/hostname/r.json"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .failure()
        .code(2)
        .stderr(
            predicate::str::contains("--json /etc/hostname/r.json")
                .and(predicate::str::contains("measuring").not()),
        );
}

/// `calibrate` checks where it will write before it measures (a quick calibration takes
/// about half a minute): a path it cannot create, a directory and a FIFO each fail
/// within seconds, naming the path.
#[test]
fn calibrate_rejects_an_unwritable_out_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, says) in [
        (
            "/proc/x/profile".to_string(),
            "cannot create the directory /proc/x",
        ),
        (d.path().display().to_string(), "is a directory"),
        (fifo.display().to_string(), "is not a regular file"),
    ] {
        let start = std::time::Instant::now();
        let out = Command::cargo_bin("blockmem")
            .unwrap()
            .args(["calibrate", "--quick", "--out", &path])
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        let secs = start.elapsed().as_secs_f64();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(err.contains(&path) && err.contains(says), "{path}: {err}");
        assert!(err.contains("choose another --out"), "{err}");
        assert!(secs < 5.0, "{path}: failed after {secs:.1} s");
    }
}

#[test]
fn compare_needs_two_files() {
    lab()
        .args(["--compare", "a.json"])
        .assert()
        .failure()
        .code(2);
    lab()
        .args(["--compare", "/nonexistent/a.json", "/nonexistent/b.json"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot read /nonexistent/a.json"));
}

#[test]
fn tiny_run_writes_every_output_and_verifies_every_result() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let csv = d.path().join("r.csv");
    let out = d.path().join("report");
    lab()
        .args([
            "temperature",
            "zero",
            "--sizes",
            "4K",
            "--reps",
            "2",
            "--methods",
            "libc,avx2,auto",
            "--llc",
            "4M",
            "--quiet",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("temperature, 4 KiB copy")
                .and(predicate::str::contains("hot→dirty")),
        );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "temperature+zero");
    assert!(v["host"]["hierarchy"]["llc_effective"].as_u64() == Some(4 << 20));
    assert!(v["host"]["timer"]["ticks_per_ns"].as_f64().unwrap() > 0.0);
    let results = v["results"].as_array().unwrap();
    // 3 source × 4 destination states (fresh among them) × 3 methods for temperature;
    // zero: {zero, set} × {hot, clean} × 3.
    assert_eq!(results.len(), 36 + 12);
    for r in results {
        for f in common::RESULT_FIELDS {
            assert!(!r[f].is_null(), "missing {f} in {r}");
        }
        assert_eq!(r["verified"], true, "{r}");
        // Two repetitions; a small cold cell times several slots in each.
        let per = r["calls_per_sweep"].as_u64().unwrap_or(1);
        assert_eq!(r["samples_ns"].as_array().unwrap().len() as u64, 2 * per);
        assert_eq!(r["reps"].as_u64().unwrap(), 2 * per);
        assert!(r["min_ns"].as_f64() <= r["median_ns"].as_f64());
        assert!(r["median_ns"].as_f64() <= r["max_ns"].as_f64());
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with(
        "experiment,method,op,size,src,dst,reuse,min_ns,median_ns,max_ns,gbps,verified"
    ));
    assert_eq!(text.lines().count(), 1 + results.len());
    for f in [
        "index.html",
        "results.json",
        "results.csv",
        "results.md",
        "temperature-4KiB.svg",
        "zero.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("temperature-4KiB.svg") && html.contains("<table>"));
    lab()
        .arg("--compare")
        .arg(&json)
        .arg(out.join("results.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains("cells matched"));
}

/// Stores are drained by default; `--no-drain-stores` stops the clock at the last
/// instruction (`--drain-stores`, the default stated, wins when it comes last).
/// Either way the mode is recorded and every result verifies.
#[test]
fn the_store_drain_mode_is_recorded_and_results_still_verify() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let undrained = "stop stamps do not wait for stores: --no-drain-stores";
    for (flags, drained, said) in [
        (&[][..], true, "stop stamps wait for stores to drain"),
        (&["--no-drain-stores"][..], false, undrained),
        (
            &["--no-drain-stores", "--drain-stores"][..],
            true,
            "stop stamps wait for stores to drain",
        ),
        (
            &["--drain-stores", "--no-drain-stores"][..],
            false,
            undrained,
        ),
    ] {
        lab()
            .args([
                "temperature",
                "--sizes",
                "4K",
                "--reps",
                "2",
                "--methods",
                "avx2,rep_movsb",
                "--llc",
                "4M",
                "--quiet",
            ])
            .args(flags)
            .arg("--json")
            .arg(&json)
            .assert()
            .success()
            .stderr(predicate::str::contains(said));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["host"]["timer"]["drain_stores"], drained);
        assert_eq!(v["host"]["options"]["drain_stores"], drained);
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 12 * 2);
        for r in results {
            assert_eq!(r["verified"], true, "{r}");
            assert!(r["median_ns"].as_f64().unwrap() >= 0.0);
        }
    }
}

#[test]
fn fleet_runs_on_a_given_distribution_directory() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("Memmove_Tiny.csv"),
        "0:0.1,16:0.4,300:0.5\n0:0.5,1:0.5\n1:0.5,64:0.5\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("Memset_Tiny.csv"),
        "8:0.5,100:0.5\n0:1\n8:1\n",
    )
    .unwrap();
    let json = d.path().join("f.json");
    lab()
        .args([
            "fleet",
            "--reps",
            "1",
            "--methods",
            "libc,auto,avx2",
            "--llc",
            "4M",
            "--quiet",
        ])
        .arg("--fleet-dir")
        .arg(d.path())
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("Memmove_Tiny"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * 2 * 3);
    assert!(results.iter().all(|r| r["verified"] == true));
    assert!(results
        .iter()
        .any(|r| r["op"] == "move" && r["overlapping_calls"].as_u64().unwrap() > 0));
}

/// The fleetbench distributions are built into the binary: a copy of it in an empty
/// directory, run from another one with no BLOCKMEM_* variable, replays the three
/// fleet-wide ones in quick mode without being told where they are.
#[test]
fn fleet_finds_its_distributions_without_configuration() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("blockmem");
    std::fs::copy(assert_cmd::cargo::cargo_bin("blockmem"), &exe).unwrap();
    let cwd = home.path().join("elsewhere");
    std::fs::create_dir(&cwd).unwrap();
    let mut c = std::process::Command::new(&exe);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("BLOCKMEM_") {
            c.env_remove(k);
        }
    }
    let out = c
        .current_dir(&cwd)
        .args([
            "lab",
            "fleet",
            "--quick",
            "--reps",
            "1",
            "--methods",
            "libc",
            "--llc",
            "1M",
            "--quiet",
            "--json",
            "f.json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("f.json")).unwrap()).unwrap();
    let mut workloads: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    workloads.sort();
    workloads.dedup();
    assert_eq!(workloads, ["Memcpy_Fleet", "Memmove_Fleet", "Memset_Fleet"]);
}

/// `blockmem info` (`--json` if `json`) with `BLOCKMEM_PROFILE` naming a file of `text`
/// in `dir`; its standard output, the run checked to succeed.
fn info_with_profile(dir: &std::path::Path, text: &str, json: bool) -> String {
    let path = dir.join("profile");
    std::fs::write(&path, text).unwrap();
    let mut args = vec!["info"];
    if json {
        args.push("--json");
    }
    let out = Command::cargo_bin("blockmem")
        .unwrap()
        .args(&args)
        .env("BLOCKMEM_PROFILE", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `blockmem info --builtin` prints the built-in table of the CPU's class, the file
/// compiled in, which parses to that table.
#[test]
fn info_builtin_prints_the_class_file() {
    let out = Command::cargo_bin("blockmem")
        .unwrap()
        .args(["info", "--builtin"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let class = blockmem::dispatch::builtin_class();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), class.text());
    let (t, _) = blockmem::profile::parse(class.text().as_bytes(), class.table()).unwrap();
    assert_eq!(&t, class.table());
}

/// `blockmem info --json` reports the decision table in force: every row as the file
/// wrote it (rows the file lacks from the built-in table of the CPU class) and as
/// compiled for this CPU, bands contiguous from 0, and the table's text, which parses
/// back to the same table.
#[test]
fn info_reports_the_decision_table_in_force() {
    use blockmem::profile::{self, Family, State};
    use blockmem::Hint;
    let dir = tempfile::tempdir().unwrap();
    let out = info_with_profile(
        dir.path(),
        "version = 2\nllc_effective = 24MiB\nprobe_hit_max = 180\n\
         copy.auto.unknown = from 0: sse2; from 8KiB: rep_movsb; from 64KiB: portable; from 8MiB: probe\n\
         copy.auto.cached = from 0: sse2\n\
         set.noreuse.cold = from 0: sse2; from 16KiB: rep_stosb\n",
        true,
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["profile"]["error"], Value::Null, "{}", v["profile"]);
    assert_eq!(v["profile"]["source"], "BLOCKMEM_PROFILE");
    let t = &v["table"];
    assert_eq!(
        (&t["llc_effective"], &t["probe_hit_max"]),
        (&Value::from(24 << 20), &Value::from(180))
    );
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), profile::ROWS);
    for row in rows {
        for key in ["bands", "compiled"] {
            let bands = row[key].as_array().unwrap();
            assert_eq!(bands[0]["from"], 0, "{row}");
            for w in bands.windows(2) {
                assert!(w[0]["from"].as_u64() < w[1]["from"].as_u64(), "{row}");
            }
        }
    }
    let row = |fam: &str, hint: &str, st: &str| {
        rows.iter()
            .find(|r| r["family"] == fam && r["hint"] == hint && r["state"] == st)
            .unwrap()
    };
    let bands = |r: &Value, key: &str| -> Vec<(u64, String)> {
        r[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["from"].as_u64().unwrap(),
                    b["action"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let want: Vec<(u64, String)> = [
        (0, "sse2"),
        (8 << 10, "rep_movsb"),
        (64 << 10, "portable"),
        (8 << 20, "probe"),
    ]
    .into_iter()
    .map(|(f, a)| (f, a.to_string()))
    .collect();
    let copy = row("copy", "auto", "unknown");
    assert_eq!(bands(copy, "bands"), want);
    if cfg!(target_arch = "x86_64") {
        // Kernels every x86-64 CPU runs compile to themselves.
        assert_eq!(bands(copy, "compiled"), want);
        // The bands whose kernel differs from the cached row's (sse2) recall it, for
        // both ops; the first runs it already, the probe band probes.
        let recalls: Vec<&Value> = copy["compiled"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| &b["recalls"])
            .collect();
        let both = serde_json::json!(["copy", "move"]);
        assert_eq!(
            recalls,
            [&Value::Null, &both, &both, &Value::Null],
            "{copy}"
        );
    }
    // The text is the table in force: it parses back to the rows reported.
    let text = t["text"].as_str().unwrap();
    let (parsed, prov) = profile::parse(
        text.as_bytes(),
        &profile::Table::uniform(blockmem::KernelId::Naive, 0),
    )
    .unwrap();
    assert_eq!(prov.rows_from_file(), profile::ROWS as u32);
    assert_eq!(
        parsed
            .row(Family::Set, Hint::NoReuse, State::Cold)
            .to_string(),
        "from 0: sse2; from 16KiB: rep_stosb"
    );
    // A row the file lacks is the built-in table's.
    let class = blockmem::builtin::Class::ALL
        .into_iter()
        .find(|c| t["builtin_class"] == c.name())
        .unwrap();
    assert_eq!(
        parsed.row(Family::Copy, Hint::Reuse, State::Cold),
        class.table().row(Family::Copy, Hint::Reuse, State::Cold)
    );
    for (fam, hint, st, r) in parsed.keyed_rows() {
        let reported = row(fam.name(), hint.name(), st.name());
        let written: Vec<(u64, String)> = r
            .bands()
            .iter()
            .map(|b| (b.from as u64, b.action.name().to_string()))
            .collect();
        assert_eq!(bands(reported, "bands"), written);
    }
}

/// `doors` builds its C driver, replays every call through the shim, the C ABI and
/// function pointers for libc and blockmem, checks each call against a byte loop, and
/// reports per door. Needs the shared objects `cargo test --workspace` builds beside
/// the binary.
#[test]
fn doors_replays_every_door_and_verifies_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("doors.json");
    lab()
        .args(["doors", "--quick", "--reps", "1", "--json"])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("doors: fleet distributions"))
        .stdout(predicate::str::contains("doors: one size repeated"))
        .stdout(predicate::str::contains(
            "doors: one size at scattered addresses",
        ))
        .stdout(predicate::str::contains("each call's bytes read back"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let mut doors = std::collections::BTreeSet::new();
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["median_ns"].as_f64().unwrap() > 0.0, "{r}");
        doors.insert((
            r["door"].as_str().unwrap().to_string(),
            r["method"].as_str().unwrap().to_string(),
        ));
    }
    for door in ["shim", "shim-mt", "cabi", "cmem", "fnptr"] {
        for m in ["libc", "auto"] {
            assert!(
                doors.contains(&(door.to_string(), m.to_string())),
                "{door} {m} missing"
            );
        }
    }
    // Every fleet distribution of the repository, hot and cold, per door and method.
    let fleet = results.iter().filter(|r| r["workload"].is_string()).count();
    assert_eq!(fleet, 30 * 2 * 5 * 2);
}

/// `neighbour`: with two CPUs, one record per method, op and size (and per op a cell
/// whose size changes every call), each verified (the bytes the calls left, the rest
/// of both lines, the neighbour's count) and carrying the neighbour's times; pinned to
/// one CPU, a clear refusal when named and a skip with a warning in the default set's
/// place.
#[test]
fn neighbour_measures_beside_another_cpu_or_says_why_not() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("n.json");
    let two = common::allowed_cpus() >= 2;
    if two {
        lab()
            .args([
                "neighbour",
                "--reps",
                "3",
                "--methods",
                "libc,auto",
                "--quiet",
            ])
            .arg("--json")
            .arg(&json)
            .assert()
            .success()
            .stdout(predicate::str::contains("neighbour: another core"));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 2 * 3 * 5);
        let mixed: Vec<&Value> = results
            .iter()
            .filter(|r| r["mixed_sizes"].is_array())
            .collect();
        assert_eq!(mixed.len(), 2 * 3, "one mixed cell per method and op");
        assert!(mixed
            .iter()
            .all(|r| r["mixed_sizes"] == serde_json::json!([1, 15])));
        for r in results {
            assert_eq!(r["verified"], true, "{r}");
            assert!(r["neighbour_ns"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["alone_ns"].as_f64().unwrap() > 0.0, "{r}");
            assert_eq!(r["samples_ns"].as_array().unwrap().len(), 3);
        }
        assert!(results
            .iter()
            .any(|r| r["method"] == "auto" && r["ratio_neighbour_libc_over_auto"].is_number()));
    }
    // One CPU: pin the child before it starts.
    let out = common::blockmem_on_one_cpu()
        .args(["lab", "neighbour", "--reps", "1", "--quiet"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("neighbour needs two CPUs"), "{err}");
}

/// `blockmem info` says when the profile in force names no loop bound of its own (a
/// profile from an earlier blockmem): the built-in bound is used, and a new calibration
/// measures the host's. Not said where the file names them.
#[test]
fn info_says_when_the_profile_names_no_loop_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let info = |text: &str, json: bool| info_with_profile(dir.path(), text, json);
    let old = "version = 2\ncopy.auto.unknown = from 0: sse2\n";
    let text = info(old, false);
    assert!(
        text.contains("it names no copy or set loop bound (OP.loop_temporal_max)"),
        "{text}"
    );
    assert!(text.contains("re-run `blockmem calibrate`"), "{text}");
    let v: Value = serde_json::from_str(&info(old, true)).unwrap();
    assert_eq!(
        v["profile"]["loop_bounds_from_file"],
        serde_json::json!({"copy": false, "set": false})
    );
    let set_only = "version = 2\nset.loop_temporal_max = 4MiB\n";
    assert!(info(set_only, false).contains("it names no copy loop bound"));
    let both = "version = 2\ncopy.loop_temporal_max = 2MiB\nset.loop_temporal_max = half-llc\n";
    let text = info(both, false);
    assert!(!text.contains("loop bound"), "{text}");
    let v: Value = serde_json::from_str(&info(both, true)).unwrap();
    assert_eq!(v["table"]["loop_temporal_max"]["copy"], 2 << 20);
}

/// `contention`: with a table that has contended rows, every cell measured alone and
/// (with two CPUs) beside the load, `auto` beside `auto-alone`, every record verified;
/// the table names both ratios.
#[test]
fn contention_measures_auto_with_and_without_its_input_alone_and_loaded() {
    let d = tempfile::tempdir().unwrap();
    let (json, prof) = (d.path().join("c.json"), d.path().join("profile"));
    std::fs::write(
        &prof,
        "version = 2\ncopy.auto.unknown.contended = from 0: avx2; from 256KiB: avx2_nt\n",
    )
    .unwrap();
    lab()
        .env("BLOCKMEM_PROFILE", &prof)
        .args(["contention", "--sizes", "256K", "--reps", "3", "--quiet"])
        .args(["--methods", "libc,auto,auto-alone,sse2"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("auto-alone/auto"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let loads: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r["load"].as_str().unwrap())
        .collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(loads.len(), if cpus >= 2 { 2 } else { 1 }, "{loads:?}");
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
    }
    for m in ["libc", "auto", "auto-alone"] {
        assert!(results.iter().any(|r| r["method"] == m), "{m}");
    }
}
