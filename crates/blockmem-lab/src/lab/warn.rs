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
    /// An experiment of the default set could not run; the others did.
    ExperimentSkipped {
        /// The experiment.
        experiment: String,
        /// Why, with what to do.
        reason: String,
    },
}

/// What a warning is about: warnings of one kind share a heading in the report, with
/// their count, and their details folded under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A method wrote wrong bytes: its timings are void.
    WrongResult,
    /// An experiment did not run.
    Skipped,
    /// The machine or its clock changed during the run.
    Interference,
    /// Cells whose samples spread widely.
    Noisy,
    /// Cache states not as asked, or not verifiable.
    CacheState,
    /// What the host cannot provide: counters, an LLC step, a stable TSC, libc.
    Host,
    /// Methods left out of an experiment.
    MethodSkipped,
}

impl Kind {
    /// The report's heading for warnings of this kind.
    pub const fn heading(self) -> &'static str {
        match self {
            Kind::WrongResult => "Wrong results: these timings are void",
            Kind::Skipped => "Experiments that did not run",
            Kind::Interference => "The machine's speed changed during the run",
            Kind::Noisy => "Noisy cells: compare their medians only",
            Kind::CacheState => "Cache states not as asked, or not verifiable",
            Kind::Host => "What this host cannot provide",
            Kind::MethodSkipped => "Methods that lack an experiment's op",
        }
    }

    /// Every kind, most serious first.
    pub const ALL: [Kind; 7] = [
        Kind::WrongResult,
        Kind::Skipped,
        Kind::Interference,
        Kind::Noisy,
        Kind::CacheState,
        Kind::Host,
        Kind::MethodSkipped,
    ];

    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The kind of a warning's text, from how [`Warning`]'s texts begin (for files
    /// that recorded only the lines).
    pub fn of_line(line: &str) -> Kind {
        let head = line.split(':').next().unwrap_or("");
        match head {
            "WRONG RESULT" => Kind::WrongResult,
            "interference" | "timer" => Kind::Interference,
            "noisy" => Kind::Noisy,
            "state" => Kind::CacheState,
            "counters" | "llc" | "libc" => Kind::Host,
            _ if line.contains(": skipped: ") => Kind::Skipped,
            _ => Kind::MethodSkipped,
        }
    }

    /// The stable name (JSON).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::WrongResult => "wrong_result",
            Kind::Skipped => "skipped",
            Kind::Interference => "interference",
            Kind::Noisy => "noisy",
            Kind::CacheState => "cache_state",
            Kind::Host => "host",
            Kind::MethodSkipped => "method_skipped",
        }
    }
}

/// The warnings of one kind, for the report: every instance, in the order they came.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Group {
    /// The kind.
    pub kind: Kind,
    /// Its heading ([`Kind::heading`]).
    pub heading: String,
    /// Each warning's text.
    pub details: Vec<String>,
}

impl Group {
    /// Groups warning lines by [`Kind::of_line`], most serious kind first.
    pub fn of_lines(lines: &[String]) -> Vec<Group> {
        Kind::ALL
            .into_iter()
            .filter_map(|kind| {
                let details: Vec<String> = lines
                    .iter()
                    .filter(|l| Kind::of_line(l) == kind)
                    .cloned()
                    .collect();
                (!details.is_empty()).then(|| Group {
                    kind,
                    heading: kind.heading().to_string(),
                    details,
                })
            })
            .collect()
    }
}

impl Warning {
    /// Severity: errors invalidate numbers; notes only qualify them.
    pub fn is_error(&self) -> bool {
        matches!(self, Warning::VerificationFailed { .. })
    }

    /// What it is about.
    pub fn kind(&self) -> Kind {
        match self {
            Warning::VerificationFailed { .. } => Kind::WrongResult,
            Warning::ExperimentSkipped { .. } => Kind::Skipped,
            Warning::Interference { .. } | Warning::UnstableTsc { .. } => Kind::Interference,
            Warning::Noisy { .. } => Kind::Noisy,
            Warning::StateMismatch { .. }
            | Warning::BackgroundNotResident { .. }
            | Warning::StateUnverifiable { .. }
            | Warning::HotExceedsLlc { .. } => Kind::CacheState,
            Warning::NoCounters { .. }
            | Warning::LlcNotMeasured { .. }
            | Warning::NoLibc { .. } => Kind::Host,
            Warning::MethodSkipped { .. } => Kind::MethodSkipped,
        }
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
            Warning::ExperimentSkipped { experiment, reason } => {
                write!(f, "{experiment}: skipped: {reason}")
            }
        }
    }
}

/// Collected warnings, deduplicated by [`Warning::dedup_key`] (the first instance and a
/// count are kept).
#[derive(Default, Debug)]
pub struct Warnings {
    list: Vec<(Warning, usize)>,
    /// Every warning pushed, for the report's details.
    all: Vec<Warning>,
}

impl Warnings {
    /// Records one.
    pub fn push(&mut self, w: Warning) {
        if !self.all.contains(&w) {
            self.all.push(w.clone());
        }
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

    /// Every warning by kind, the most serious kind first ([`Kind`]'s order).
    pub fn groups(&self) -> Vec<Group> {
        let mut kinds: Vec<Kind> = self.all.iter().map(Warning::kind).collect();
        kinds.sort();
        kinds.dedup();
        kinds
            .into_iter()
            .map(|kind| Group {
                kind,
                heading: kind.heading().to_string(),
                details: self
                    .all
                    .iter()
                    .filter(|w| w.kind() == kind)
                    .map(Warning::to_string)
                    .collect(),
            })
            .collect()
    }

    /// Lines for the terminal: one per kind and subject, with how many more like it.
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
    fn groups_keep_every_instance_by_kind_most_serious_first() {
        let mut w = Warnings::default();
        for (cell, rel_iqr) in [("a", 0.3), ("b", 0.9), ("a", 0.3)] {
            w.push(Warning::Noisy {
                cell: cell.into(),
                rel_iqr,
            });
        }
        w.push(Warning::LlcNotMeasured { used: 8 << 20 });
        w.push(Warning::VerificationFailed { cell: "c".into() });
        let g = w.groups();
        let kinds: Vec<Kind> = g.iter().map(|g| g.kind).collect();
        assert_eq!(kinds, [Kind::WrongResult, Kind::Noisy, Kind::Host]);
        // The exact repeat is one detail; both noisy cells are listed.
        assert_eq!(g[1].details.len(), 2);
        assert!(g[1].details[1].contains("b spread 90%"));
        assert_eq!(g[0].heading, Kind::WrongResult.heading());
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
