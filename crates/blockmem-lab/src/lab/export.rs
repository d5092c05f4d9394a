//! Exporters: one trait, one implementation per format (JSON with docs/DESIGN.md's fixed
//! fields plus raw samples and host info; CSV with one row per cell; Markdown tables).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::experiments::Experiment;
use super::report::Table;
use super::runner::Record;
use super::summary::{summarize, Headline};
use super::warn::{Group, Kind};

/// Everything a run produced.
pub struct RunData {
    /// Host description (CPU, caches as reported and measured, timer, libc, options,
    /// the decision table in force).
    pub host: Value,
    /// Experiments asked for, in order (run or skipped).
    pub experiments: Vec<String>,
    /// Experiments that could not run, with why.
    pub skipped: Vec<(String, String)>,
    /// Every result.
    pub records: Vec<Record>,
    /// Warning lines, one per kind and subject (the terminal's).
    pub warnings: Vec<String>,
    /// Every warning by kind (the report's).
    pub warning_groups: Vec<Group>,
    /// Tables per experiment (for Markdown).
    pub tables: Vec<Table>,
    /// The answer the run leads with: [`summarize`] of the host and records.
    pub headline: Headline,
}

impl RunData {
    /// The `experiment` field: the experiment's name, or the names joined by `+`.
    pub fn experiment_name(&self) -> String {
        self.experiments.join("+")
    }

    /// Reads back a run [`Json`] wrote; tables are rebuilt from the records. An error
    /// says which part of the file is wrong.
    pub fn from_json(v: &Value) -> Result<RunData> {
        let results = v["results"]
            .as_array()
            .context("no \"results\" array: not a blockmem lab JSON file")?;
        let records: Vec<Record> = results
            .iter()
            .enumerate()
            .map(|(i, r)| Record::from_json(r).map_err(|e| anyhow::anyhow!("results[{i}]: {e}")))
            .collect::<Result<_>>()?;
        let strings = |x: &Value| -> Vec<String> {
            x.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        };
        let experiments = match v["experiments"].as_array() {
            Some(_) => strings(&v["experiments"]),
            None => v["experiment"]
                .as_str()
                .map(|e| e.split('+').map(String::from).collect())
                .unwrap_or_default(),
        };
        let warnings = strings(&v["warnings"]);
        let warning_groups = match v["warning_groups"].as_array() {
            Some(groups) => groups
                .iter()
                .filter_map(|g| {
                    let kind = Kind::from_name(g["kind"].as_str()?)?;
                    Some(Group {
                        kind,
                        heading: kind.heading().to_string(),
                        details: strings(&g["details"]),
                    })
                })
                .collect(),
            None => Group::of_lines(&warnings),
        };
        let skipped = v["skipped"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                Some((
                    s["experiment"].as_str()?.to_string(),
                    s["reason"].as_str()?.to_string(),
                ))
            })
            .collect();
        let tables = experiments
            .iter()
            .filter_map(|e| Experiment::from_name(e))
            .flat_map(|e| e.tables(&records))
            .collect();
        Ok(RunData {
            headline: summarize(&v["host"], &records),
            host: v["host"].clone(),
            experiments,
            skipped,
            records,
            warnings,
            warning_groups,
            tables,
        })
    }
}

/// A serialisation of a run.
pub trait Exporter {
    /// Format name (for messages).
    fn name(&self) -> &'static str;
    /// Writes the run to `out`.
    fn write(&self, run: &RunData, out: &mut dyn Write) -> Result<()>;
    /// Writes the run to a file, naming the file on error.
    fn write_file(&self, run: &RunData, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create {} file {}", self.name(), path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        self.write(run, &mut w)?;
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// JSON: `{"host", "experiment", "experiments", "skipped", "summary", "warnings",
/// "warning_groups", "results": [...]}`; `summary` is [`RunData::headline`], `host.table`
/// the decision table in force.
pub struct Json;

impl Json {
    /// The document as a value.
    pub fn value(run: &RunData) -> Value {
        json!({
            "host": run.host,
            "experiment": run.experiment_name(),
            "experiments": run.experiments,
            "skipped": run.skipped.iter()
                .map(|(e, r)| json!({"experiment": e, "reason": r}))
                .collect::<Vec<_>>(),
            "summary": run.headline,
            "warnings": run.warnings,
            "warning_groups": run.warning_groups,
            "results": run.records.iter().map(Record::to_json).collect::<Vec<_>>(),
        })
    }
}

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "JSON"
    }
    fn write(&self, run: &RunData, out: &mut dyn Write) -> Result<()> {
        serde_json::to_writer_pretty(&mut *out, &Json::value(run))?;
        writeln!(out)?;
        Ok(())
    }
}

/// Extra fields that become CSV columns when present (`door` and `loop` tell the
/// `doors` experiment's rows apart: the same cell through each door, and one size
/// in a tight loop or scattered cold).
pub const CSV_EXTRAS: [&str; 16] = [
    "median_cycles",
    "cycles_per_byte",
    "batch",
    "src_state_check",
    "dst_state_check",
    "background_check",
    "dst_offset",
    "copy_median_ns",
    "read_median_ns",
    "app_ws",
    "app_extra_ns",
    "workload",
    "working_set",
    "ns_per_call",
    "door",
    "loop",
];

/// CSV: one row per result, fixed fields then [`CSV_EXTRAS`] (empty when absent).
pub struct Csv;

/// The CSV header.
pub fn csv_header() -> Vec<&'static str> {
    let mut h = vec![
        "experiment",
        "method",
        "op",
        "size",
        "src",
        "dst",
        "reuse",
        "min_ns",
        "median_ns",
        "max_ns",
        "gbps",
        "verified",
        "reps",
    ];
    h.extend(CSV_EXTRAS);
    h
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "CSV"
    }
    fn write(&self, run: &RunData, out: &mut dyn Write) -> Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(csv_header())?;
        for r in &run.records {
            let mut row = vec![
                r.experiment.clone(),
                r.method.clone(),
                r.op.clone(),
                r.size.to_string(),
                r.src.clone(),
                r.dst.clone(),
                r.reuse.clone(),
                format!("{:.2}", r.summary.min),
                format!("{:.2}", r.summary.median),
                format!("{:.2}", r.summary.max),
                format!("{:.4}", r.gbps),
                r.verified.to_string(),
                r.summary.n.to_string(),
            ];
            for k in CSV_EXTRAS {
                row.push(match r.extras.get(k) {
                    None => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) if n.is_f64() => {
                        format!("{:.4}", n.as_f64().unwrap_or(f64::NAN))
                    }
                    Some(v) => v.to_string(),
                });
            }
            w.write_record(&row)?;
        }
        w.flush()?;
        Ok(())
    }
}

/// Markdown: the tables, as GitHub-flavoured tables.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "Markdown"
    }
    fn write(&self, run: &RunData, out: &mut dyn Write) -> Result<()> {
        writeln!(out, "# blockmem lab: {}\n", run.experiment_name())?;
        write_host(run, out)?;
        let headline = run.headline.to_text();
        if !headline.trim().is_empty() {
            writeln!(out, "## Summary\n\n```text\n{}```\n", headline)?;
        }
        if let Some(text) = run.host["table"]["text"].as_str() {
            writeln!(
                out,
                "## Decision table in force\n\nSource: {}. The table `auto` ran with, as `blockmem calibrate` writes it (bands of sizes per op family, hint and destination state).\n\n```text\n{}```\n",
                run.host["profile"]["source"].as_str().unwrap_or("?"),
                text
            )?;
        }
        if run.host["timer"]["drain_stores"].as_bool() == Some(false) {
            writeln!(
                out,
                "Samples end at the call's last instruction, its stores possibly still buffered (`--no-drain-stores`).\n"
            )?;
        }
        for t in &run.tables {
            writeln!(out, "## {}\n\n{}\n", t.title, t.note)?;
            writeln!(out, "| {} |", t.header.join(" | "))?;
            writeln!(out, "|{}", "---|".repeat(t.header.len()))?;
            for r in &t.rows {
                writeln!(out, "| {} |", r.join(" | "))?;
            }
            writeln!(out)?;
        }
        if !run.warnings.is_empty() {
            writeln!(out, "## Warnings\n")?;
            for w in &run.warnings {
                writeln!(out, "- {w}")?;
            }
        }
        Ok(())
    }
}

/// The host a Markdown report's figures come from: CPU, CPUs, caches, libc, kernel.
fn write_host(run: &RunData, out: &mut dyn Write) -> Result<()> {
    let h = &run.host;
    let mib = |v: &Value| {
        v.as_f64()
            .map_or("?".to_string(), |b| format!("{:.1} MiB", b / 1048576.0))
    };
    writeln!(out, "## Host\n")?;
    writeln!(
        out,
        "- CPU: {} ({}{})",
        h["cpu"]["brand"].as_str().unwrap_or("?"),
        h["cpus"]
            .as_u64()
            .map_or(String::new(), |n| format!("{n} CPUs available")),
        if h["cpu"]["hypervisor"].as_bool() == Some(true) {
            ", under a hypervisor"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "- features in use: {}",
        h["cpu"]["features_enabled"]
            .as_array()
            .map(|a| a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "- LLC: {} reported, {} effective (measured)",
        mib(&h["caches"]["used"]["llc"]["size"]),
        mib(&h["hierarchy"]["llc_effective"])
    )?;
    writeln!(
        out,
        "- C library: glibc {} ({}); Linux {}; blockmem {}\n",
        h["libc_version"].as_str().unwrap_or("?"),
        h["libc"].as_str().unwrap_or("?"),
        h["kernel"].as_str().unwrap_or("?"),
        h["blockmem_version"].as_str().unwrap_or("?")
    )?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lab::stats::Summary;

    pub(crate) fn sample_run() -> RunData {
        let mut extras = serde_json::Map::new();
        extras.insert("cycles_per_byte".into(), json!(0.5));
        extras.insert("workload".into(), json!("Memcpy_Fleet"));
        extras.insert("door".into(), json!("shim"));
        let rec = Record {
            experiment: "temperature".into(),
            method: "libc".into(),
            op: "copy".into(),
            size: 4096,
            src: "hot".into(),
            dst: "clean".into(),
            reuse: "none".into(),
            summary: Summary::of(&[100.0, 120.0, 110.0]),
            gbps: 4096.0 / 110.0,
            verified: true,
            samples_ns: vec![100.0, 120.0, 110.0],
            extras,
        };
        let host = json!({"cpu": {"brand": "test"}});
        RunData {
            headline: summarize(&host, std::slice::from_ref(&rec)),
            host,
            experiments: vec!["temperature".into()],
            skipped: vec![],
            records: vec![rec],
            warnings: vec!["noisy: x".into()],
            warning_groups: Group::of_lines(&["noisy: x".to_string()]),
            tables: vec![],
        }
    }

    #[test]
    fn json_reads_back_into_the_same_run() {
        let mut run = sample_run();
        run.skipped = vec![("fleet".into(), "no data".into())];
        let v = Json::value(&run);
        assert_eq!(v["summary"]["host"], "test");
        let back = RunData::from_json(&v).unwrap();
        assert_eq!(back.experiments, run.experiments);
        assert_eq!(back.skipped, run.skipped);
        assert_eq!(back.warnings, run.warnings);
        assert_eq!(back.warning_groups, run.warning_groups);
        assert_eq!(back.records.len(), 1);
        let (a, b) = (&back.records[0], &run.records[0]);
        assert_eq!(a.key(), b.key());
        assert_eq!(
            (a.summary, &a.samples_ns, &a.extras),
            (b.summary, &b.samples_ns, &b.extras)
        );
        assert_eq!(
            back.tables.len(),
            Experiment::Temperature.tables(&run.records).len()
        );
        let e = RunData::from_json(&json!({"results": [{"method": "x"}]}))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("results[0]: no string \"experiment\""),
            "{e}"
        );
        assert!(RunData::from_json(&json!({})).is_err());
    }

    #[test]
    fn json_has_the_fixed_fields() {
        let v = Json::value(&sample_run());
        assert_eq!(v["experiment"], "temperature");
        assert!(v["host"].is_object());
        let r = &v["results"][0];
        for f in [
            "method",
            "op",
            "size",
            "src",
            "dst",
            "reuse",
            "min_ns",
            "median_ns",
            "max_ns",
            "gbps",
            "verified",
        ] {
            assert!(!r[f].is_null(), "missing {f}");
        }
        assert_eq!(r["median_ns"], 110.0);
        assert_eq!(r["min_ns"], 100.0);
        assert_eq!(r["max_ns"], 120.0);
        assert_eq!(r["verified"], true);
        assert_eq!(r["samples_ns"].as_array().unwrap().len(), 3);
        assert_eq!(r["cycles_per_byte"], 0.5);
    }

    #[test]
    fn csv_has_header_and_one_row_per_result() {
        let mut buf = Vec::new();
        Csv.write(&sample_run(), &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let h: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(h, csv_header());
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(&rows[0][1], "libc");
        assert_eq!(&rows[0][8], "110.00");
        assert_eq!(&rows[0][11], "true");
        let wl = h.iter().position(|x| x == "workload").unwrap();
        assert_eq!(&rows[0][wl], "Memcpy_Fleet");
        let door = h.iter().position(|x| x == "door").unwrap();
        assert_eq!(&rows[0][door], "shim");
    }

    #[test]
    fn markdown_lists_warnings() {
        let mut buf = Vec::new();
        Markdown.write(&sample_run(), &mut buf).unwrap();
        assert!(String::from_utf8(buf).unwrap().contains("- noisy: x"));
    }

    #[test]
    fn markdown_says_when_stores_were_not_drained() {
        let mut run = sample_run();
        let text = |run: &RunData| {
            let mut buf = Vec::new();
            Markdown.write(run, &mut buf).unwrap();
            String::from_utf8(buf).unwrap()
        };
        run.host = serde_json::json!({"timer": {"drain_stores": true}});
        assert!(!text(&run).contains("--no-drain-stores"));
        run.host = serde_json::json!({"timer": {"drain_stores": false}});
        assert!(text(&run).contains("stores possibly still buffered (`--no-drain-stores`)"));
    }
}
