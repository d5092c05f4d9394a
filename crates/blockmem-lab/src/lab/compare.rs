//! `blockmem lab --compare A.json B.json`: run-to-run agreement. Cells are matched by
//! their key (experiment, method, op, size, states, reuse, offsets, workload); for each
//! the relative difference of the medians, |a − b| / min(a, b), is reported per
//! experiment (how many cells agree within the tolerance, median, 90th percentile and
//! worst), followed by the worst cells.
//!
//! A cell outside the tolerance is then sorted by whether its two sample sets really
//! differ: if the 95% bootstrap interval of `median(a) / median(b)` excludes 1, the
//! cell's time moved between the runs (the machine changed, or the code did); if it
//! holds 1, the two medians are within their own sampling noise, and more repetitions
//! would bring them together.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::report::Table;
use super::stats::{median_ratio_ci, quantile_sorted, rel_diff};

/// One matched cell.
#[derive(Clone, Debug)]
pub struct Diff {
    /// The cell key.
    pub key: String,
    /// Experiment.
    pub experiment: String,
    /// Median in A (ns).
    pub a: f64,
    /// Median in B (ns).
    pub b: f64,
    /// |a − b| / min(a, b).
    pub rel: f64,
    /// The same for the cell's time relative to libc's in the same configuration
    /// (`None` for libc itself or when libc is missing): ratios cancel a change in the
    /// machine's overall speed between the runs.
    pub ratio_rel: Option<f64>,
    /// The cell's samples in A and in B (ns; empty in files without them).
    pub samples: (Vec<f64>, Vec<f64>),
}

impl Diff {
    /// Whether the two runs' samples differ beyond their sampling noise: the 95%
    /// bootstrap interval of `median(a) / median(b)` excludes 1. `None` without
    /// enough samples.
    pub fn shifted(&self) -> Option<bool> {
        // The key seeds the resampling, so a comparison always reads the same.
        let seed = self.key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let (lo, hi) = median_ratio_ci(&self.samples.0, &self.samples.1, 0.95, 500, seed)?;
        Some(!(lo <= 1.0 && 1.0 <= hi))
    }
}

/// The comparison.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Matched cells.
    pub diffs: Vec<Diff>,
    /// Keys only in one file.
    pub unmatched: usize,
    /// Each file's sentinel readings (memory GB/s, hot copy GB/s, memory latency ns;
    /// NaN where an older file lacks one), first and last.
    pub sentinels: [Sentinels; 2],
}

type Cells = BTreeMap<String, (String, f64, Vec<f64>)>;
type Sentinels = Vec<(String, f64, f64, f64)>;

fn load(path: &Path) -> Result<(Cells, Sentinels)> {
    let text = crate::input::read_to_string(path)?;
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> Result<(Cells, Sentinels)> {
    let v: Value =
        serde_json::from_str(text).with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(results) = v["results"].as_array() else {
        bail!(
            "{} has no \"results\" array: not a blockmem lab JSON file",
            path.display()
        );
    };
    let mut m = BTreeMap::new();
    for r in results {
        let key = r["key"].as_str().map(String::from).unwrap_or_else(|| {
            format!(
                "{}/{}/{}/{}/{}/{}/{}",
                r["experiment"], r["method"], r["op"], r["size"], r["src"], r["dst"], r["reuse"]
            )
        });
        let med = r["median_ns"].as_f64().unwrap_or(f64::NAN);
        let samples = r["samples_ns"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        m.insert(
            key,
            (
                r["experiment"].as_str().unwrap_or("?").to_string(),
                med,
                samples,
            ),
        );
    }
    let sentinels = v["host"]["sentinels"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["at"].as_str().unwrap_or("?").to_string(),
                        s["dram_read_gbps"].as_f64().unwrap_or(f64::NAN),
                        s["hot_copy_gbps"].as_f64().unwrap_or(f64::NAN),
                        s["dram_latency_ns"].as_f64().unwrap_or(f64::NAN),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Ok((m, sentinels))
}

/// Compares two result files.
pub fn compare(a: &Path, b: &Path) -> Result<Comparison> {
    matched(a, load(a)?, b, load(b)?)
}

/// Compares two result files' texts (`a` and `b` name them in messages).
pub fn compare_texts(a: (&Path, &str), b: (&Path, &str)) -> Result<Comparison> {
    matched(a.0, parse(a.0, a.1)?, b.0, parse(b.0, b.1)?)
}

fn matched(
    a: &Path,
    (ma, sa): (Cells, Sentinels),
    b: &Path,
    (mb, sb): (Cells, Sentinels),
) -> Result<Comparison> {
    let mut c = Comparison {
        sentinels: [sa, sb],
        ..Comparison::default()
    };
    let libc_key = |k: &str| -> Option<String> {
        let mut parts: Vec<&str> = k.split('/').collect();
        if parts.len() < 2 || parts[1] == "libc" {
            return None;
        }
        parts[1] = "libc";
        Some(parts.join("/"))
    };
    for (k, (exp, x, xs)) in &ma {
        match mb.get(k) {
            Some((_, y, ys)) => c.diffs.push(Diff {
                key: k.clone(),
                experiment: exp.clone(),
                a: *x,
                b: *y,
                rel: rel_diff(*x, *y),
                ratio_rel: libc_key(k).and_then(|lk| {
                    let (la, lb) = (ma.get(&lk)?.1, mb.get(&lk)?.1);
                    Some(rel_diff(x / la, y / lb))
                }),
                samples: (xs.clone(), ys.clone()),
            }),
            None => c.unmatched += 1,
        }
    }
    c.unmatched += mb.keys().filter(|k| !ma.contains_key(*k)).count();
    if c.diffs.is_empty() {
        bail!("{} and {} have no cell in common", a.display(), b.display());
    }
    Ok(c)
}

impl Comparison {
    /// Summary table per experiment plus "all" rows (every cell; cells under and over
    /// 64 KiB, since sub-microsecond cells are the noisy ones): agreement of the medians
    /// and of the ratios to libc.
    pub fn summary(&self, tol: f64) -> Table {
        let mut t = Table::new(
            format!(
                "run-to-run agreement: medians and ratios to libc (|a−b| / min(a,b)); tolerance {:.0}%",
                tol * 100.0
            ),
            format!(
                "{} cells matched, {} unmatched",
                self.diffs.len(),
                self.unmatched
            ),
            [
                "experiment",
                "cells",
                "medians within tol",
                "median diff",
                "p90 diff",
                "max diff",
                "ratios within tol",
                "median ratio diff",
                "outside tol: shifted / noise",
            ]
            .map(String::from)
            .to_vec(),
        );
        let mut exps: Vec<String> = self.diffs.iter().map(|d| d.experiment.clone()).collect();
        exps.sort();
        exps.dedup();
        exps.extend(["all", "all, < 64 KiB", "all, >= 64 KiB"].map(String::from));
        let size_of = |d: &Diff| {
            d.key
                .split('/')
                .nth(3)
                .and_then(|s| s.parse::<usize>().ok())
                .unwrap_or(0)
        };
        let pct =
            |n: usize, of: usize| format!("{n} ({:.1}%)", 100.0 * n as f64 / of.max(1) as f64);
        for e in exps {
            let sel: Vec<&Diff> = self
                .diffs
                .iter()
                .filter(|d| match e.as_str() {
                    "all" => true,
                    "all, < 64 KiB" => size_of(d) < 64 << 10,
                    "all, >= 64 KiB" => size_of(d) >= 64 << 10,
                    _ => d.experiment == e,
                })
                .collect();
            if sel.is_empty() {
                continue;
            }
            let mut r: Vec<f64> = sel.iter().map(|d| d.rel).collect();
            r.sort_by(f64::total_cmp);
            let mut q: Vec<f64> = sel.iter().filter_map(|d| d.ratio_rel).collect();
            q.sort_by(f64::total_cmp);
            let within = r.iter().filter(|&&x| x <= tol).count();
            let outside: Vec<Option<bool>> = sel
                .iter()
                .filter(|d| d.rel > tol)
                .map(|d| d.shifted())
                .collect();
            let shifted = outside.iter().filter(|s| **s == Some(true)).count();
            let noise = outside.iter().filter(|s| **s == Some(false)).count();
            let qwithin = q.iter().filter(|&&x| x <= tol).count();
            t.rows.push(vec![
                e,
                r.len().to_string(),
                pct(within, r.len()),
                format!("{:.1}%", 100.0 * quantile_sorted(&r, 0.5)),
                format!("{:.1}%", 100.0 * quantile_sorted(&r, 0.9)),
                format!("{:.1}%", 100.0 * r.last().copied().unwrap_or(0.0)),
                pct(qwithin, q.len()),
                format!("{:.1}%", 100.0 * quantile_sorted(&q, 0.5)),
                format!("{shifted} / {noise}"),
            ]);
        }
        t
    }

    /// The machine's speed during each run (sentinels), side by side.
    pub fn sentinel_table(&self) -> Option<Table> {
        // Files from before the latency sentinel have none.
        let latency = |ns: f64| {
            if ns.is_finite() {
                format!("{ns:.0}")
            } else {
                "-".to_string()
            }
        };
        let [a, b] = &self.sentinels;
        if a.is_empty() || b.is_empty() {
            return None;
        }
        let mut t = Table::new(
            "machine speed during each run (sentinels: memory read GB/s / hot copy GB/s / memory latency ns)",
            "if these differ, so will the cells: other load, not the code (small cold cells follow the latency)",
            ["when", "A", "B"].map(String::from).to_vec(),
        );
        for (x, y) in a.iter().zip(b) {
            t.rows.push(vec![
                x.0.clone(),
                format!("{:.1} / {:.1} / {}", x.1, x.2, latency(x.3)),
                format!("{:.1} / {:.1} / {}", y.1, y.2, latency(y.3)),
            ]);
        }
        Some(t)
    }

    /// The `n` cells that differ most.
    pub fn worst(&self, n: usize) -> Table {
        let mut d = self.diffs.clone();
        d.sort_by(|x, y| y.rel.total_cmp(&x.rel));
        let mut t = Table::new(
            "cells that differ most",
            "",
            ["cell", "A ns", "B ns", "diff"].map(String::from).to_vec(),
        );
        for x in d.into_iter().take(n) {
            t.rows.push(vec![
                x.key,
                format!("{:.1}", x.a),
                format!("{:.1}", x.b),
                format!("{:.1}%", 100.0 * x.rel),
            ]);
        }
        t
    }

    /// Fraction of cells within `tol`.
    pub fn within(&self, tol: f64) -> f64 {
        self.diffs.iter().filter(|d| d.rel <= tol).count() as f64 / self.diffs.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_cells_by_key() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json");
        let b = d.path().join("b.json");
        std::fs::write(&a, r#"{"results":[{"key":"x","experiment":"t","median_ns":100.0},{"key":"y","experiment":"t","median_ns":10.0}]}"#).unwrap();
        std::fs::write(&b, r#"{"results":[{"key":"x","experiment":"t","median_ns":105.0},{"key":"z","experiment":"t","median_ns":1.0}]}"#).unwrap();
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.diffs.len(), 1);
        assert_eq!(c.unmatched, 2);
        assert!((c.diffs[0].rel - 0.05).abs() < 1e-12);
        assert_eq!(c.within(0.10), 1.0);
        let s = c.summary(0.10).to_text();
        assert!(s.contains("1 (100.0%)"), "{s}");
        assert_eq!(c.diffs[0].ratio_rel, None, "no libc cell to divide by");
        assert_eq!(c.diffs[0].shifted(), None, "no samples");
    }

    #[test]
    fn tells_a_real_shift_from_sampling_noise() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a.json"), d.path().join("b.json"));
        // Cell "moved": every B sample 1.5x its A counterpart. Cell "noisy": the same
        // wide samples in another order (one distribution: the interval holds 1).
        let spread: Vec<f64> = (0..15).map(|i| 100.0 + 10.0 * i as f64).collect();
        let moved: Vec<f64> = spread.iter().map(|x| x * 1.5).collect();
        let mut rev = spread.clone();
        rev.reverse();
        let cell = |k: &str, s: &[f64]| {
            let mut v = s.to_vec();
            let med = {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            format!(r#"{{"key":"{k}","experiment":"t","median_ns":{med},"samples_ns":{s:?}}}"#)
        };
        let file = |cells: Vec<String>| format!(r#"{{"results":[{}]}}"#, cells.join(","));
        std::fs::write(
            &a,
            file(vec![cell("moved", &spread), cell("noisy", &spread)]),
        )
        .unwrap();
        std::fs::write(&b, file(vec![cell("moved", &moved), cell("noisy", &rev)])).unwrap();
        let c = compare(&a, &b).unwrap();
        let get = |k: &str| c.diffs.iter().find(|d| d.key == k).unwrap();
        assert_eq!(get("moved").shifted(), Some(true));
        assert_eq!(get("noisy").shifted(), Some(false));
        let s = c.summary(0.10).to_text();
        assert!(s.contains("1 / 0"), "{s}");
    }

    #[test]
    fn rejects_non_lab_json() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json");
        std::fs::write(&a, "{}").unwrap();
        let e = compare(&a, &a).unwrap_err().to_string();
        assert!(e.contains("no \"results\""), "{e}");
    }
}
