//! Everything the lab wants the reader to know about the trustworthiness of a run, as
//! one enum whose text says what happened and what to do about it.

use std::fmt;

/// A warning. Collected during the run, deduplicated, printed at the end and recorded
/// in the JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// A cell's samples are widely spread.
    Noisy {
        /// The cell.
        cell: String,
        /// Interquartile range / median.
        rel_iqr: f64,
    },
    /// A cell's destination bytes were wrong after a measured call.
    VerificationFailed {
        /// The cell.
        cell: String,
    },
    /// The probe says a region is not in the state the builder made.
    StateMismatch {
        /// The cell.
        cell: String,
        /// `src` or `dst`.
        region: &'static str,
        /// State asked for.
        wanted: &'static str,
        /// Median probe latency (ns).
        probe_ns: f64,
    },
    /// The lines the eviction sweep left are not resident: the cache may not hold the
    /// clean or dirty lines the state asks for.
    BackgroundNotResident {
        /// The cell.
        cell: String,
        /// Median probe latency (ns).
        probe_ns: f64,
    },
    /// Resident and evicted lines load too alike to tell apart.
    StateUnverifiable {
        /// Probe latency of a resident line (ns).
        hot_ns: f64,
        /// Probe latency of a flushed line (ns).
        dram_ns: f64,
    },
    /// A hot region larger than the effective LLC cannot be entirely hot.
    HotExceedsLlc {
        /// Region size.
        size: usize,
        /// Effective LLC.
        llc: usize,
    },
    /// No hardware counters.
    NoCounters {
        /// Why.
        detail: String,
    },
    /// The effective LLC could not be measured.
    LlcNotMeasured {
        /// The size used instead.
        used: usize,
    },
    /// The TSC frequency estimates disagree.
    UnstableTsc {
        /// max/min of the estimates.
        spread: f64,
    },
    /// A method does not implement an op the experiment needs.
    MethodSkipped {
        /// Method name.
        method: String,
        /// Experiment.
        experiment: &'static str,
    },
    /// The machine's speed changed during the run.
    Interference {
        /// max/min of the sentinel memory bandwidth.
        dram_spread: f64,
        /// max/min of the sentinel hot copy bandwidth.
        hot_spread: f64,
    },
    /// The `libc` method is unavailable.
    NoLibc {
        /// Why.
        detail: String,
    },
}

impl Warning {
    /// Severity: errors invalidate numbers; notes only qualify them.
    pub fn is_error(&self) -> bool {
        matches!(self, Warning::VerificationFailed { .. })
    }

    /// Key used to deduplicate (one line per kind and subject).
    pub fn dedup_key(&self) -> String {
        match self {
            Warning::Noisy { .. } => "noisy".into(),
            Warning::StateMismatch { region, wanted, .. } => format!("state:{region}:{wanted}"),
            Warning::HotExceedsLlc { .. } => "hotllc".into(),
            Warning::BackgroundNotResident { .. } => "background".into(),
            Warning::MethodSkipped { method, experiment } => format!("skip:{method}:{experiment}"),
            w => format!("{w}"),
        }
    }
}

fn mib(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1 << 20) as f64)
    } else {
        format!("{} KiB", n >> 10)
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Noisy { cell, rel_iqr } => write!(
                f,
                "noisy: {cell} spread {:.0}% (IQR/median); other load on the machine? \
                 Re-run with more --reps, or when the machine is idle, and compare medians only",
                rel_iqr * 100.0
            ),
            Warning::VerificationFailed { cell } => write!(
                f,
                "WRONG RESULT: {cell} left incorrect destination bytes; its timings are void \
                 (report this as a bug in the method)"
            ),
            Warning::StateMismatch { cell, region, wanted, probe_ns } => write!(
                f,
                "state: {cell}: {region} asked {wanted} but sampled lines load in {probe_ns:.0} ns; \
                 the cell's figure may mix states (hardware prefetch, or another tenant \
                 evicting the cache); treat it with care"
            ),
            Warning::BackgroundNotResident { cell, probe_ns } => write!(
                f,
                "state: {cell}: the eviction sweep's lines load in {probe_ns:.0} ns, so the \
                 cache may not be full of the clean/dirty lines asked for (another tenant \
                 using the LLC?); pass a smaller --llc if this repeats"
            ),
            Warning::StateUnverifiable { hot_ns, dram_ns } => write!(
                f,
                "state: resident lines load in {hot_ns:.0} ns and flushed ones in {dram_ns:.0} ns, \
                 too close to tell apart; cache states are made but not verified"
            ),
            Warning::HotExceedsLlc { size, llc } => write!(
                f,
                "state: 'hot' {} exceeds the effective LLC ({}); only its tail is cached, so \
                 the figure is closer to clean than hot",
                mib(*size),
                mib(*llc)
            ),
            Warning::NoCounters { detail } => write!(f, "counters: {detail}"),
            Warning::LlcNotMeasured { used } => write!(
                f,
                "llc: the latency curve showed no LLC-to-DRAM step; using {} for the eviction \
                 buffer; pass --llc SIZE if you know better",
                mib(*used)
            ),
            Warning::UnstableTsc { spread } => write!(
                f,
                "timer: TSC frequency estimates differ by {:.1}%; nanosecond figures may be off \
                 (cycles are still exact)",
                (spread - 1.0) * 100.0
            ),
            Warning::MethodSkipped { method, experiment } => write!(
                f,
                "{experiment}: method {method} lacks the op, skipped"
            ),
            Warning::Interference { dram_spread, hot_spread } => write!(
                f,
                "interference: the machine's memory bandwidth varied by {:.0}% and its in-cache \
                 copy speed by {:.0}% between experiments (other load on a shared host); \
                 compare ratios within one experiment, not absolute figures across runs, \
                 or re-run when the machine is idle",
                (dram_spread - 1.0) * 100.0,
                (hot_spread - 1.0) * 100.0
            ),
            Warning::NoLibc { detail } => write!(
                f,
                "libc: {detail}; ratios to libc are not available"
            ),
        }
    }
}

/// Collected warnings, deduplicated by [`Warning::dedup_key`] (the first instance and a
/// count are kept).
#[derive(Default, Debug)]
pub struct Warnings {
    list: Vec<(Warning, usize)>,
}

impl Warnings {
    /// Records one.
    pub fn push(&mut self, w: Warning) {
        let k = w.dedup_key();
        if let Some(e) = self.list.iter_mut().find(|(x, _)| x.dedup_key() == k) {
            e.1 += 1;
            // Keep the worst noisy cell as the representative.
            if let (Warning::Noisy { rel_iqr: a, .. }, Warning::Noisy { rel_iqr: b, .. }) =
                (&e.0, &w)
            {
                if b > a {
                    e.0 = w;
                }
            }
        } else {
            self.list.push((w, 1));
        }
    }

    /// Each warning with how often it occurred.
    pub fn iter(&self) -> impl Iterator<Item = &(Warning, usize)> {
        self.list.iter()
    }

    /// True if any is an error.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|(w, _)| w.is_error())
    }

    /// Lines for the terminal / report.
    pub fn lines(&self) -> Vec<String> {
        self.list
            .iter()
            .map(|(w, n)| {
                if *n > 1 {
                    format!("{w} (and {} more like it)", n - 1)
                } else {
                    w.to_string()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_keeps_worst_noisy_and_counts() {
        let mut w = Warnings::default();
        w.push(Warning::Noisy {
            cell: "a".into(),
            rel_iqr: 0.3,
        });
        w.push(Warning::Noisy {
            cell: "b".into(),
            rel_iqr: 0.9,
        });
        w.push(Warning::VerificationFailed { cell: "c".into() });
        let l = w.lines();
        assert_eq!(l.len(), 2);
        assert!(
            l[0].contains("b spread 90%") && l[0].contains("1 more"),
            "{l:?}"
        );
        assert!(w.has_errors());
    }

    #[test]
    fn every_warning_gives_advice() {
        let s = Warning::Noisy {
            cell: "x".into(),
            rel_iqr: 0.5,
        }
        .to_string();
        assert!(s.contains("--reps"));
        let s = Warning::LlcNotMeasured { used: 8 << 20 }.to_string();
        assert!(s.contains("--llc"));
    }
}
