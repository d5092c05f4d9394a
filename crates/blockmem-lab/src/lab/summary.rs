//! The answer a lab run leads with: blockmem's `auto` against the system's `libc`, per
//! op, over every cell of the run where both were measured.
//!
//! A cell is one experiment's size, source and destination state, reuse and any
//! offset or workload ([`Record::cell_key`]); its ratio is libc's time over auto's, the
//! median over repetitions of the two taken side by side
//! ([`super::stats::paired_median_ratio`]), or the ratio of the two medians where the
//! samples do not pair. Per op the summary gives the geometric mean over the cells with a 95%
//! bootstrap interval (measurement noise, cells held fixed), the best and the worst
//! cell by name, how many cells fall below [`SLOW`], and where auto's decision table
//! streams (from the table recorded in the run's `host.table`).
//!
//! [`summarize`] is a pure function of the run's host description and records, so the
//! closing lines of `blockmem lab` and the head of its report say the same thing, and
//! `blockmem report` says it again from a saved JSON file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::experiments::fmt_size;
use super::report::esc;
use super::runner::Record;
use super::stats::{pair_ratios, paired_geomean_ci, paired_ratio_ci};

/// A cell whose ratio is below this is counted as slower than libc: a 5% loss is what
/// a reader notices, and beyond the noise of a steady cell.
pub const SLOW: f64 = 0.95;

/// The confidence level of every interval in the summary.
const LEVEL: f64 = 0.95;

/// Bootstrap replicates per interval: 1000 keep the summary of a full run's few
/// hundred cells under a second.
const RESAMPLES: usize = 1000;

/// The methods compared: blockmem's policy and the system library.
const AUTO: &str = "auto";
const LIBC: &str = "libc";

/// Ops in the order the summary lists them.
const OPS: [&str; 4] = ["copy", "move", "set", "zero"];

/// One cell's ratio.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellRatio {
    /// The experiment.
    pub experiment: String,
    /// The cell's name: experiment, size, states, reuse (and offset or workload).
    pub cell: String,
    /// Bytes per call (a fleet workload: its mean), for ordering by size.
    pub size: f64,
    /// libc's time over auto's (> 1: auto is faster).
    pub ratio: f64,
    /// The 95% interval of the ratio, where the samples pair and are at least 3.
    pub ci: Option<(f64, f64)>,
}

/// One experiment's share of an op's cells.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentRatio {
    /// The experiment.
    pub experiment: String,
    /// Its cells with both methods.
    pub cells: usize,
    /// Geometric mean of their ratios.
    pub geomean: f64,
    /// Its worst cell's ratio.
    pub worst: f64,
    /// Its cells below [`SLOW`].
    pub below: usize,
}

/// auto against libc for one op.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpSummary {
    /// `copy`, `move`, `set` or `zero`.
    pub op: String,
    /// Geometric mean of the cells' ratios.
    pub geomean: f64,
    /// Its 95% interval, when every cell's samples pair.
    pub ci: Option<(f64, f64)>,
    /// The cell with the highest ratio.
    pub best: CellRatio,
    /// The cell with the lowest ratio.
    pub worst: CellRatio,
    /// Cells below [`SLOW`].
    pub below: usize,
    /// Of those, cells whose whole interval is below it.
    pub below_surely: usize,
    /// Where auto's table streams for this op, in words (`None`: no table recorded).
    pub streams: Option<String>,
    /// Per experiment, in run order.
    pub experiments: Vec<ExperimentRatio>,
    /// Every cell, by size (then experiment and name).
    pub cells: Vec<CellRatio>,
}

/// The summary of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Headline {
    /// The host: CPU, CPUs, LLC as reported and as measured.
    pub host: String,
    /// The decision table auto ran with.
    pub table: String,
    /// One entry per op with cells measured by both methods.
    pub ops: Vec<OpSummary>,
}

/// The summary of a run from its `host` object and records (see the module docs).
pub fn summarize(host: &Value, records: &[Record]) -> Headline {
    let mut by_cell: BTreeMap<String, (Option<&Record>, Option<&Record>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.method == AUTO || r.method == LIBC)
    {
        let k = r.cell_key();
        let e = by_cell.entry(k.clone()).or_insert_with(|| {
            order.push(k);
            (None, None)
        });
        if r.method == AUTO {
            e.0 = Some(r);
        } else {
            e.1 = Some(r);
        }
    }
    let experiments: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in records {
            if !v.contains(&r.experiment.as_str()) {
                v.push(&r.experiment);
            }
        }
        v
    };
    let mut per_op: BTreeMap<&str, Vec<Measured>> = BTreeMap::new();
    for (i, k) in order.iter().enumerate() {
        let (Some(auto), Some(libc)) = by_cell[k] else {
            continue;
        };
        let Some(op) = OPS.iter().find(|o| **o == auto.op) else {
            continue;
        };
        if let Some(c) = cell_ratio(libc, auto, i as u64) {
            per_op.entry(op).or_default().push(c);
        }
    }
    let ops = OPS
        .iter()
        .filter_map(|op| {
            let cells = per_op.remove(op)?;
            Some(op_summary(op, cells, &experiments, host))
        })
        .collect();
    Headline {
        host: host_line(host),
        table: table_line(host),
        ops,
    }
}

/// A cell's ratio and its pair ratios (`None` where the samples do not pair).
type Measured = (CellRatio, Option<Vec<f64>>);

/// One cell's ratio and its pair ratios.
fn cell_ratio(libc: &Record, auto: &Record, seed: u64) -> Option<Measured> {
    let pairs = pair_ratios(&libc.samples_ns, &auto.samples_ns).filter(|p| !p.is_empty());
    let ratio = match &pairs {
        Some(p) => super::stats::median_of(&mut p.clone()),
        None if libc.summary.median > 0.0 && auto.summary.median > 0.0 => {
            libc.summary.median / auto.summary.median
        }
        None => return None,
    };
    let ci = paired_ratio_ci(&libc.samples_ns, &auto.samples_ns, LEVEL, RESAMPLES, seed);
    let size = auto.extra_f64("mean_size").unwrap_or(auto.size as f64);
    Some((
        CellRatio {
            experiment: auto.experiment.clone(),
            cell: cell_name(auto),
            size,
            ratio,
            ci,
        },
        pairs,
    ))
}

fn op_summary(op: &str, cells: Vec<Measured>, experiments: &[&str], host: &Value) -> OpSummary {
    let geo = |v: &mut dyn Iterator<Item = f64>| {
        let (s, n) = v.fold((0.0, 0usize), |(s, n), r| (s + r.ln(), n + 1));
        (s / n.max(1) as f64).exp()
    };
    let pairs: Option<Vec<Vec<f64>>> = cells.iter().map(|c| c.1.clone()).collect();
    let ci = pairs.and_then(|p| paired_geomean_ci(&p, LEVEL, RESAMPLES, 0));
    let mut cells: Vec<CellRatio> = cells.into_iter().map(|c| c.0).collect();
    let slow = |c: &CellRatio| c.ratio < SLOW;
    let per_experiment = experiments
        .iter()
        .filter_map(|e| {
            let mine: Vec<&CellRatio> = cells.iter().filter(|c| c.experiment == *e).collect();
            (!mine.is_empty()).then(|| ExperimentRatio {
                experiment: e.to_string(),
                cells: mine.len(),
                geomean: geo(&mut mine.iter().map(|c| c.ratio)),
                worst: mine.iter().map(|c| c.ratio).fold(f64::MAX, f64::min),
                below: mine.iter().filter(|c| slow(c)).count(),
            })
        })
        .collect();
    let by = |f: fn(f64, f64) -> bool| {
        cells
            .iter()
            .fold(None::<&CellRatio>, |acc, c| match acc {
                Some(a) if !f(c.ratio, a.ratio) => Some(a),
                _ => Some(c),
            })
            .cloned()
            .expect("an op has cells")
    };
    let (best, worst) = (by(|a, b| a > b), by(|a, b| a < b));
    let summary = OpSummary {
        op: op.to_string(),
        geomean: geo(&mut cells.iter().map(|c| c.ratio)),
        ci,
        below: cells.iter().filter(|c| slow(c)).count(),
        below_surely: cells
            .iter()
            .filter(|c| slow(c) && c.ci.is_some_and(|(_, hi)| hi < SLOW))
            .count(),
        best,
        worst,
        streams: streams(
            &host["table"],
            op,
            host["profile"]["inline_max"][family(op)]
                .as_u64()
                .unwrap_or(0),
        ),
        experiments: per_experiment,
        cells: Vec::new(),
    };
    cells.sort_by(|a, b| {
        a.size
            .total_cmp(&b.size)
            .then_with(|| a.experiment.cmp(&b.experiment))
            .then_with(|| a.cell.cmp(&b.cell))
    });
    OpSummary { cells, ..summary }
}

/// A cell's name: `policy: 64 MiB hot→clean, dst read after`,
/// `alignment: 4 KiB hot→hot, dst offset 33, no reuse`,
/// `fleet: Memcpy_Fleet, cold working set (mean 1.2 KiB per call)`.
pub fn cell_name(r: &Record) -> String {
    let text = |k: &str| r.extras.get(k).and_then(Value::as_str).unwrap_or("");
    // `doors`: the door is part of the cell (`doors shim: ...`).
    let experiment = match r.extras.get("door").and_then(Value::as_str) {
        Some(door) => format!("{} {door}", r.experiment),
        None => r.experiment.clone(),
    };
    if let Some(w) = r.extras.get("workload").and_then(Value::as_str) {
        let mean = r.extra_f64("mean_size").unwrap_or(0.0);
        return format!(
            "{experiment}: {w}, {} working set (mean {} per call)",
            text("working_set"),
            fmt_size(mean.round() as usize)
        );
    }
    if let Some(name) = threads_cell_name(r) {
        return name;
    }
    let mut s = format!("{experiment}: {}", fmt_size(r.size));
    if r.src == "none" {
        let _ = write!(s, " dst {}", r.dst);
    } else {
        let _ = write!(s, " {}→{}", r.src, r.dst);
    }
    let offset = r.extras.get("dst_offset").and_then(Value::as_u64);
    match (text("sweep"), offset) {
        ("distance_mod_4k", Some(d)) => {
            let _ = write!(s, ", dst−src ≡ {d} mod 4 KiB");
        }
        (_, Some(o)) => {
            let _ = write!(s, ", dst offset {o}");
        }
        _ => {}
    }
    {
        use super::experiments::doors::{LOOP_CHAIN, LOOP_COLD, LOOP_HOT};
        let layout = match r.extra_str("loop") {
            LOOP_HOT => Some(", one size in a tight loop"),
            LOOP_CHAIN => Some(", one size in a tight loop, each call's bytes read back"),
            LOOP_COLD => Some(", one size at scattered addresses"),
            _ => None,
        };
        if let Some(layout) = layout {
            s.push_str(layout);
            return s;
        }
    }
    if let Some(ws) = r.extra_f64("app_ws") {
        let _ = write!(s, ", then a {} working set re-read", fmt_size(ws as usize));
    } else if r.reuse == "read" {
        s.push_str(", dst read after");
    } else if r.reuse == "again" {
        let calls = r.extra_f64("again_calls").unwrap_or(1.0) as usize + 1;
        let _ = write!(
            s,
            ", the same {} on the same dst, call {calls} of a loop",
            r.op
        );
    } else {
        s.push_str(", no reuse");
    }
    s
}

/// The `threads` experiment's cells: which part, how many threads, what is timed.
fn threads_cell_name(r: &Record) -> Option<String> {
    use super::experiments::threads::{HANDOFF, NAME, SCALING, VICTIM};
    if r.experiment != NAME {
        return None;
    }
    let threads = r.extra_f64("threads").unwrap_or(0.0);
    Some(match r.extra_str("part") {
        SCALING => format!(
            "threads scaling: {} {} on each of {threads} pinned threads, in a loop (aggregate time)",
            r.op,
            fmt_size(r.size)
        ),
        VICTIM => format!(
            "threads victim: a {} working set re-read beside {} copier(s) of {} (the victim's time)",
            fmt_size(r.size),
            r.extra_f64("copiers").unwrap_or(0.0),
            fmt_size(r.extra_f64("copy_size").unwrap_or(0.0) as usize)
        ),
        HANDOFF => format!(
            "threads hand-off: {} copied into a flushed dst, then read on another CPU (copy + read)",
            fmt_size(r.size)
        ),
        p => format!("threads {p}: {}", fmt_size(r.size)),
    })
}

/// `Intel(R) Xeon(R) … (2 CPUs, LLC 480 MiB reported, 24 MiB effective)`.
fn host_line(host: &Value) -> String {
    let size = |v: &Value| v.as_u64().map(|n| fmt_size(n as usize));
    let mut parts = Vec::new();
    if let Some(n) = host["cpus"].as_u64() {
        parts.push(format!("{n} CPUs"));
    }
    let h = &host["hierarchy"];
    match (size(&h["llc_reported"]), size(&h["llc_effective"])) {
        (Some(r), Some(e)) => parts.push(format!("LLC {r} reported, {e} effective")),
        (None, Some(e)) => parts.push(format!("LLC {e} effective")),
        (Some(r), None) => parts.push(format!("LLC {r} reported")),
        (None, None) => {}
    }
    let brand = host["cpu"]["brand"].as_str().unwrap_or("an unnamed CPU");
    if parts.is_empty() {
        brand.to_string()
    } else {
        format!("{brand} ({})", parts.join(", "))
    }
}

/// Which decision table auto ran with.
fn table_line(host: &Value) -> String {
    let class = host["table"]["builtin_class"].as_str().unwrap_or("?");
    let path = host["profile"]["path"].as_str().unwrap_or("?");
    let mut s = match (
        host["profile"]["source"].as_str(),
        host["profile"]["error"].as_str(),
    ) {
        (_, Some(e)) => {
            format!("the built-in table for {class} CPUs (the profile {path} was rejected: {e})")
        }
        (Some("BLOCKMEM_PROFILE" | "default-path"), None) => format!("the profile {path}"),
        (Some("installed"), None) => "a table the program installed".to_string(),
        (Some(_), None) => format!("the built-in table for {class} CPUs (no profile at {path})"),
        (None, None) => "an unrecorded table".to_string(),
    };
    if let Some(k) = host["table"]["forced"].as_str() {
        let _ = write!(s, ", every call forced to {k}");
    }
    s
}

/// What a band of a compiled row does for one op.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Band {
    Probe,
    Run { streams: bool },
}

/// A compiled row (`host.table.rows[].compiled`) as (first size, band) for `op`.
fn row_bands(row: &Value, op: &str) -> Vec<(u64, Band)> {
    row["compiled"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            let action = b[op].as_str().or(b["action"].as_str()).unwrap_or("");
            let band = if action == "probe" {
                Band::Probe
            } else {
                Band::Run {
                    streams: blockmem::kernel::KernelId::from_name(action)
                        .is_some_and(|k| k.streams()),
                }
            };
            (b["from"].as_u64().unwrap_or(0), band)
        })
        .collect()
}

/// The size ranges `[from, to)` of `bands` for which `keep` holds, merged.
fn spans(bands: &[(u64, Band)], keep: impl Fn(Band) -> bool) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (i, &(from, b)) in bands.iter().enumerate() {
        let to = bands.get(i + 1).map_or(u64::MAX, |n| n.0);
        if !keep(b) || to <= from {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == from => last.1 = to,
            _ => out.push((from, to)),
        }
    }
    out
}

fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(a0, a1) in a {
        for &(b0, b1) in b {
            let (lo, hi) = (a0.max(b0), a1.min(b1));
            if lo < hi {
                out.push((lo, hi));
            }
        }
    }
    out
}

fn spans_text(s: &[(u64, u64)]) -> String {
    s.iter()
        .map(|&(a, b)| {
            if b == u64::MAX {
                format!("from {}", fmt_size(a as usize))
            } else {
                format!("{} to {}", fmt_size(a as usize), fmt_size(b as usize))
            }
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The table family of an op (`copy` for copy and move, `set` for set and zero).
fn family(op: &str) -> &'static str {
    match op {
        "set" | "zero" => "set",
        _ => "copy",
    }
}

/// Where auto's table (`host.table`, [`crate::info::table_json`]) streams for `op` with
/// the `auto` hint: the sizes from which a band's kernel uses non-temporal stores,
/// without a probe or after the probe finds the destination cold or cached. Calls of
/// up to `inline_max` bytes run inline before the table is read, so the sizes start
/// there. `None` when the table has no row for the op.
pub fn streams(table: &Value, op: &str, inline_max: u64) -> Option<String> {
    if !OPS.contains(&op) {
        return None;
    }
    let family = family(op);
    let row = |state: &str| {
        table["rows"]
            .as_array()?
            .iter()
            .find(|r| r["family"] == family && r["hint"] == "auto" && r["state"] == state)
    };
    let unknown = row_bands(row("unknown")?, op);
    let streaming = |b: Band| b == Band::Run { streams: true };
    let table_sizes = [(inline_max, u64::MAX)];
    let direct = intersect(&spans(&unknown, streaming), &table_sizes);
    let probed = intersect(&spans(&unknown, |b| b == Band::Probe), &table_sizes);
    let after = |state: &str| {
        row(state).map_or_else(Vec::new, |r| {
            intersect(&spans(&row_bands(r, op), streaming), &probed)
        })
    };
    let (cold, cached) = (after("cold"), after("cached"));
    let mut parts = Vec::new();
    if !direct.is_empty() {
        parts.push(format!("{} without probing", spans_text(&direct)));
    }
    // Where the probe starts, unless the streaming starts there too.
    let first = cold.first().or(cached.first()).map(|s| s.0);
    let probe = match probed.first() {
        Some(p) if Some(p.0) != first => format!(" (from {})", fmt_size(p.0 as usize)),
        _ => String::new(),
    };
    if !cold.is_empty() {
        parts.push(format!(
            "{} when its probe{probe} finds the destination cold",
            spans_text(&cold)
        ));
    }
    if !cached.is_empty() {
        parts.push(format!(
            "{} when its probe{probe} finds it cached",
            spans_text(&cached)
        ));
    } else if !cold.is_empty() {
        parts.push("never when it finds it cached".to_string());
    }
    Some(if parts.is_empty() {
        "never streams".to_string()
    } else {
        format!("streams {}", parts.join("; "))
    })
}

fn fmt_ci(ci: Option<(f64, f64)>) -> String {
    ci.map_or(String::new(), |(lo, hi)| format!(" ({lo:.2}–{hi:.2})"))
}

/// How a cell's ratio is computed, in one line.
pub const RATIO_NOTE: &str = "per cell: libc's time / auto's, the median over repetitions \
    run side by side (> 1: auto is faster); 95% bootstrap intervals";

impl Headline {
    /// The closing lines of `blockmem lab` (stderr).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "blockmem lab: auto against libc on {}, with {}",
            self.host, self.table
        );
        if self.ops.is_empty() {
            let _ = writeln!(
                s,
                "  no cell measured both auto and libc (the default set and `policy` measure \
                 both; a --methods list must name both)"
            );
            return s;
        }
        let _ = writeln!(s, "  {RATIO_NOTE}");
        for o in &self.ops {
            let _ = writeln!(
                s,
                "  {:<5} {:.2}× geometric mean over {}{}; {} below {SLOW:.2}×{}",
                o.op,
                o.geomean,
                plural(o.cells.len(), "cell"),
                fmt_ci(o.ci),
                o.below,
                if o.below > 0 {
                    format!(" ({} with the whole interval below)", o.below_surely)
                } else {
                    String::new()
                }
            );
            for (what, c) in [("best ", &o.best), ("worst", &o.worst)] {
                let _ = writeln!(
                    s,
                    "        {what} {:.2}×{}  {}",
                    c.ratio,
                    fmt_ci(c.ci),
                    c.cell
                );
            }
            if let Some(t) = &o.streams {
                let _ = writeln!(s, "        auto {t}");
            }
        }
        s
    }

    /// The report's headline: the same as [`Headline::to_text`], as an HTML table.
    pub fn to_html(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<p class=host>auto against libc on <b>{}</b>, with {}.</p>",
            esc(&self.host),
            esc(&self.table)
        );
        if self.ops.is_empty() {
            s.push_str(
                "<p class=warn>No cell measured both auto and libc: there is no comparison. \
                 The default set and <code>policy</code> measure both; a <code>--methods</code> \
                 list must name both.</p>",
            );
            return s;
        }
        s.push_str(
            "<table class=headline><thead><tr><th>op</th><th>auto vs libc<br>(geometric mean)</th>\
             <th>95% interval</th><th>cells</th><th>below 0.95×</th><th>best cell</th>\
             <th>worst cell</th><th>where auto streams</th></tr></thead><tbody>",
        );
        let cell = |c: &CellRatio| {
            format!(
                "<td class=cell><b class={}>{:.2}×</b>{} <span>{}</span></td>",
                class(c.ratio),
                c.ratio,
                esc(&fmt_ci(c.ci)),
                esc(&c.cell)
            )
        };
        for o in &self.ops {
            let _ = write!(
                s,
                "<tr><th>{}</th><td class=\"big {}\">{:.2}×</td><td>{}</td><td>{}</td><td class={}>{}{}</td>{}{}<td class=streams>{}</td></tr>",
                esc(&o.op),
                class(o.geomean),
                o.geomean,
                o.ci.map_or("-".into(), |(lo, hi)| format!("{lo:.2}–{hi:.2}")),
                o.cells.len(),
                if o.below > 0 { "slow" } else { "fast" },
                o.below,
                if o.below > 0 {
                    format!(" ({} surely)", o.below_surely)
                } else {
                    String::new()
                },
                cell(&o.best),
                cell(&o.worst),
                esc(o.streams.as_deref().unwrap_or("-")),
            );
        }
        let _ = write!(s, "</tbody></table><p class=note>{}</p>", esc(RATIO_NOTE));
        s
    }

    /// Per op, per experiment: cells, geometric mean, worst cell, cells below
    /// [`SLOW`] (HTML).
    pub fn experiments_html(&self) -> String {
        let mut s = String::from(
            "<table><thead><tr><th>op</th><th>experiment</th><th>cells</th>\
             <th>auto vs libc (geometric mean)</th><th>worst cell</th><th>below 0.95×</th>\
             </tr></thead><tbody>",
        );
        for o in &self.ops {
            for e in &o.experiments {
                let _ = write!(
                    s,
                    "<tr><th>{}</th><td>{}</td><td>{}</td><td class={}>{:.2}×</td><td class={}>{:.2}×</td><td>{}</td></tr>",
                    esc(&o.op),
                    esc(&e.experiment),
                    e.cells,
                    class(e.geomean),
                    e.geomean,
                    class(e.worst),
                    e.worst,
                    e.below
                );
            }
        }
        s.push_str("</tbody></table>");
        s
    }
}

/// `1 cell`, `3 cells`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The CSS class of a ratio: `fast` at or above 1, `near` down to [`SLOW`], `slow`.
fn class(r: f64) -> &'static str {
    if r >= 1.0 {
        "fast"
    } else if r >= SLOW {
        "near"
    } else {
        "slow"
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lab::stats::Summary;
    use serde_json::json;

    /// A record with `samples` (ns), one per repetition.
    pub(crate) fn rec(
        experiment: &str,
        method: &str,
        op: &str,
        size: usize,
        (src, dst, reuse): (&str, &str, &str),
        samples: &[f64],
    ) -> Record {
        let summary = Summary::of(samples);
        Record {
            experiment: experiment.into(),
            method: method.into(),
            op: op.into(),
            size,
            src: src.into(),
            dst: dst.into(),
            reuse: reuse.into(),
            gbps: size as f64 / summary.median,
            summary,
            verified: true,
            samples_ns: samples.to_vec(),
            extras: serde_json::Map::new(),
        }
    }

    /// A table like the built-in one for AVX-512 hosts: copy probes from 1 MiB and
    /// streams from 8 MiB when cold; set streams from 16 MiB without probing.
    pub(crate) fn table() -> Value {
        let row = |family: &str, state: &str, bands: Value| json!({"family": family, "hint": "auto", "state": state, "compiled": bands});
        json!({
            "builtin_class": "intel-avx512",
            "forced": null,
            "rows": [
                row("copy", "unknown", json!([{"from": 0, "action": "avx512"},
                    {"from": 4096, "action": "avx512_pw"}, {"from": 1 << 20, "action": "probe"}])),
                row("copy", "cached", json!([{"from": 0, "action": "avx512"}])),
                row("copy", "cold", json!([{"from": 0, "action": "avx512"},
                    {"from": 8 << 20, "action": "avx512_nt"}])),
                row("set", "unknown", json!([{"from": 0, "action": "avx512"},
                    {"from": 2048, "action": "rep_stosb"}, {"from": 16 << 20, "action": "avx512_nt"}])),
                row("set", "cached", json!([{"from": 0, "action": "avx512"}])),
                row("set", "cold", json!([{"from": 0, "action": "avx512"}])),
            ],
        })
    }

    pub(crate) fn host() -> Value {
        json!({
            "cpu": {"brand": "Test CPU 9000"},
            "cpus": 2,
            "hierarchy": {"llc_reported": 480u64 << 20, "llc_effective": 24u64 << 20},
            "profile": {"source": "built-in", "path": "/home/u/.cache/blockmem/profile", "error": null},
            "table": table(),
        })
    }

    /// `n` samples of `t` ns, ±`spread` (deterministic per seed).
    fn around(t: f64, n: usize, spread: f64, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| t * (1.0 - spread + 2.0 * spread * rng.f64()))
            .collect()
    }

    #[test]
    fn geomean_best_worst_and_slow_cells_per_op() {
        let hot = ("hot", "hot", "none");
        let recs = vec![
            // copy, sizes: auto 2x faster at 1 MiB, 0.8x at 4 KiB (exact).
            rec("sizes", "libc", "copy", 1 << 20, hot, &[200.0; 5]),
            rec("sizes", "auto", "copy", 1 << 20, hot, &[100.0; 5]),
            rec("sizes", "avx2", "copy", 1 << 20, hot, &[90.0; 5]),
            rec("sizes", "libc", "copy", 4096, hot, &[80.0; 5]),
            rec("sizes", "auto", "copy", 4096, hot, &[100.0; 5]),
            // policy, read after: 1.25x.
            rec(
                "policy",
                "libc",
                "copy",
                64 << 20,
                ("hot", "clean", "read"),
                &[125.0; 5],
            ),
            rec(
                "policy",
                "auto",
                "copy",
                64 << 20,
                ("hot", "clean", "read"),
                &[100.0; 5],
            ),
            // A cell with libc alone does not count.
            rec("policy", "libc", "copy", 16 << 20, hot, &[100.0; 5]),
            // zero: one cell, 0.97x.
            rec(
                "zero",
                "libc",
                "zero",
                1 << 20,
                ("none", "clean", "none"),
                &[97.0; 4],
            ),
            rec(
                "zero",
                "auto",
                "zero",
                1 << 20,
                ("none", "clean", "none"),
                &[100.0; 4],
            ),
        ];
        let h = summarize(&host(), &recs);
        assert_eq!(
            h.host,
            "Test CPU 9000 (2 CPUs, LLC 480 MiB reported, 24 MiB effective)"
        );
        assert!(
            h.table.contains("built-in table for intel-avx512"),
            "{}",
            h.table
        );
        let ops: Vec<&str> = h.ops.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(ops, ["copy", "zero"]);
        let copy = &h.ops[0];
        assert_eq!(copy.cells.len(), 3);
        assert!((copy.geomean - (2.0f64 * 0.8 * 1.25).cbrt()).abs() < 1e-9);
        // Exact ratios: zero-width intervals.
        let (lo, hi) = copy.ci.unwrap();
        assert!((lo - copy.geomean).abs() < 1e-9 && (hi - copy.geomean).abs() < 1e-9);
        assert_eq!(copy.best.cell, "sizes: 1 MiB hot→hot, no reuse");
        assert_eq!(copy.best.ratio, 2.0);
        assert_eq!(copy.worst.cell, "sizes: 4 KiB hot→hot, no reuse");
        assert_eq!(copy.worst.ci, Some((0.8, 0.8)));
        assert_eq!((copy.below, copy.below_surely), (1, 1));
        // Cells by size; experiments in run order.
        let sizes: Vec<f64> = copy.cells.iter().map(|c| c.size).collect();
        assert_eq!(sizes, [4096.0, (1 << 20) as f64, (64 << 20) as f64]);
        let ex: Vec<(&str, usize)> = copy
            .experiments
            .iter()
            .map(|e| (e.experiment.as_str(), e.cells))
            .collect();
        assert_eq!(ex, [("sizes", 2), ("policy", 1)]);
        assert_eq!(
            copy.streams.as_deref(),
            Some("streams from 8 MiB when its probe (from 1 MiB) finds the destination cold; never when it finds it cached")
        );
        let zero = &h.ops[1];
        assert_eq!(zero.worst.cell, "zero: 1 MiB dst clean, no reuse");
        assert_eq!((zero.below, zero.below_surely), (0, 0));
        assert_eq!(
            zero.streams.as_deref(),
            Some("streams from 16 MiB without probing")
        );

        let text = h.to_text();
        assert!(text.starts_with("blockmem lab: auto against libc on Test CPU 9000 (2 CPUs"));
        assert!(text.contains("  copy  1.26× geometric mean over 3 cells (1.26–1.26); 1 below 0.95× (1 with the whole interval below)"), "{text}");
        assert!(
            text.contains("worst 0.80× (0.80–0.80)  sizes: 4 KiB hot→hot, no reuse"),
            "{text}"
        );
        assert!(
            text.contains("  zero  0.97× geometric mean over 1 cell (0.97–0.97); 0 below 0.95×\n"),
            "{text}"
        );
        let html = h.to_html();
        assert!(html.contains("Test CPU 9000") && html.contains("sizes: 4 KiB hot→hot"));
    }

    #[test]
    fn noisy_pairs_give_intervals_and_unpaired_cells_none() {
        let st = ("clean", "clean", "none");
        let recs = vec![
            rec(
                "temperature",
                "libc",
                "copy",
                4096,
                st,
                &around(150.0, 40, 0.2, 1),
            ),
            rec(
                "temperature",
                "auto",
                "copy",
                4096,
                st,
                &around(100.0, 40, 0.2, 2),
            ),
        ];
        let h = summarize(&host(), &recs);
        let c = &h.ops[0];
        let (lo, hi) = c.ci.unwrap();
        assert!(
            lo < c.geomean && c.geomean < hi && lo > 1.2 && hi < 1.8,
            "{lo} {hi}"
        );
        assert_eq!(c.best.ci, c.worst.ci);
        // Samples that do not pair (different counts): the ratio of the medians, no
        // interval for the cell or the mean.
        let recs = vec![
            rec(
                "temperature",
                "libc",
                "copy",
                4096,
                st,
                &[150.0, 150.0, 150.0],
            ),
            rec("temperature", "auto", "copy", 4096, st, &[100.0, 100.0]),
        ];
        let c = &summarize(&host(), &recs).ops[0];
        assert_eq!((c.geomean, c.ci, c.worst.ci), (1.5, None, None));
    }

    #[test]
    fn cells_are_named_by_experiment_size_states_and_reuse() {
        let mut r = rec(
            "alignment",
            "auto",
            "copy",
            4096,
            ("hot", "hot", "none"),
            &[1.0],
        );
        r.extras.insert("sweep".into(), json!("dst_offset"));
        r.extras.insert("dst_offset".into(), json!(33));
        assert_eq!(
            cell_name(&r),
            "alignment: 4 KiB hot→hot, dst offset 33, no reuse"
        );
        r.extras.insert("sweep".into(), json!("distance_mod_4k"));
        assert_eq!(
            cell_name(&r),
            "alignment: 4 KiB hot→hot, dst−src ≡ 33 mod 4 KiB, no reuse"
        );
        let mut r = rec(
            "pollution",
            "auto",
            "copy",
            1 << 20,
            ("clean", "clean", "none"),
            &[1.0],
        );
        r.extras.insert("app_ws".into(), json!(12 << 20));
        assert_eq!(
            cell_name(&r),
            "pollution: 1 MiB clean→clean, then a 12 MiB working set re-read"
        );
        let mut r = rec(
            "fleet",
            "auto",
            "copy",
            123456,
            ("hot", "hot", "none"),
            &[1.0],
        );
        r.extras.insert("workload".into(), json!("Memcpy_Fleet"));
        r.extras.insert("working_set".into(), json!("cold"));
        r.extras.insert("mean_size".into(), json!(1228.8));
        assert_eq!(
            cell_name(&r),
            "fleet: Memcpy_Fleet, cold working set (mean 1.2 KiB per call)"
        );
        let r = rec(
            "policy",
            "auto",
            "copy",
            64 << 20,
            ("dirty", "hot", "read"),
            &[1.0],
        );
        assert_eq!(cell_name(&r), "policy: 64 MiB dirty→hot, dst read after");
    }

    #[test]
    fn streaming_sizes_come_from_the_table_in_force() {
        let t = table();
        assert_eq!(streams(&t, "move", 0), streams(&t, "copy", 0));
        assert_eq!(streams(&t, "set", 0), streams(&t, "zero", 0));
        assert_eq!(streams(&json!({}), "copy", 0), None);
        // Streaming from where the probe starts: the probe's start is not repeated.
        let t = json!({"rows": [
            {"family": "copy", "hint": "auto", "state": "unknown", "compiled": [
                {"from": 0, "action": "avx2"}, {"from": 1 << 20, "action": "probe"}]},
            {"family": "copy", "hint": "auto", "state": "cold", "compiled": [
                {"from": 0, "action": "avx2"}, {"from": 512 << 10, "action": "avx2_nt"}]},
        ]});
        assert_eq!(
            streams(&t, "copy", 0).as_deref(),
            Some("streams from 1 MiB when its probe finds the destination cold; never when it finds it cached")
        );
        // A row that never streams; a per-op band (zero streams where set does not).
        let t = json!({"rows": [
            {"family": "copy", "hint": "auto", "state": "unknown", "compiled": [{"from": 0, "action": "avx2"}]},
            {"family": "set", "hint": "auto", "state": "unknown", "compiled": [
                {"from": 0, "action": "avx2"},
                {"from": 4 << 20, "action": "rep_stosb", "set": "rep_stosb", "zero": "clzero"},
                {"from": 64 << 20, "action": "avx2"}]},
        ]});
        assert_eq!(streams(&t, "copy", 0).as_deref(), Some("never streams"));
        assert_eq!(streams(&t, "set", 0).as_deref(), Some("never streams"));
        assert_eq!(
            streams(&t, "zero", 0).as_deref(),
            Some("streams 4 MiB to 64 MiB without probing")
        );
        // Sizes that run inline never reach the table.
        let t = json!({"rows": [
            {"family": "set", "hint": "auto", "state": "unknown", "compiled": [
                {"from": 0, "action": "avx2_nt"}, {"from": 4096, "action": "rep_stosb"}]},
        ]});
        assert_eq!(
            streams(&t, "set", 2048).as_deref(),
            Some("streams 2 KiB to 4 KiB without probing")
        );
        assert_eq!(streams(&t, "set", 4096).as_deref(), Some("never streams"));
    }

    #[test]
    fn a_run_without_both_methods_says_so() {
        let recs = vec![rec(
            "sizes",
            "avx2",
            "copy",
            4096,
            ("hot", "hot", "none"),
            &[1.0],
        )];
        let h = summarize(&json!({}), &recs);
        assert!(h.ops.is_empty());
        assert!(h.to_text().contains("no cell measured both auto and libc"));
        assert!(h.to_html().contains("No cell measured both"));
        assert_eq!(h.host, "an unnamed CPU");
    }
}
