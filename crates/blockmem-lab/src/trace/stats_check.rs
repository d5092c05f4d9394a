//! The trace against `BLOCKMEM_STATS` for the same run: per process, calls and bytes
//! per op must be equal.
//!
//! The statistics line of a process counts what its counters saw: its own calls, and
//! for a forked child also its parent's calls before the fork (the counters are
//! copied by `fork`), while an exec'd program starts from zero. The trace's
//! per-process `stats_equivalent` totals are computed the same way (the child's header
//! holds the parent's TSC at the fork). Processes that never reached `exit` print no
//! statistics line and are listed as such.

use serde::Serialize;

use super::analysis::{Analysis, Counts};
use crate::lab::report::Table;

/// One parsed statistics line: pid and (calls, bytes) per op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatsLine {
    /// Process id.
    pub pid: u32,
    /// (calls, bytes) for copy, move, set, zero.
    pub ops: [(u64, u64); 4],
}

/// Parses `blockmem: pid N calls/bytes: copy a/b move c/d set e/f zero g/h; …`.
pub fn parse_line(line: &str) -> Option<StatsLine> {
    let rest = line.trim().strip_prefix("blockmem: pid ")?;
    let (pid, rest) = rest.split_once(" calls/bytes: ")?;
    let ops_part = rest.split(';').next()?;
    let words: Vec<&str> = ops_part.split_whitespace().collect();
    let mut ops = [(0, 0); 4];
    for (i, name) in ["copy", "move", "set", "zero"].iter().enumerate() {
        let at = words.iter().position(|w| w == name)?;
        let (c, b) = words.get(at + 1)?.split_once('/')?;
        ops[i] = (c.parse().ok()?, b.parse().ok()?);
    }
    Some(StatsLine {
        pid: pid.parse().ok()?,
        ops,
    })
}

/// True for a per-thread statistics line (`blockmem: pid N tid T: calls …`, `… threads
/// N: calls …`, `… other threads: calls …`; the shim's `stats` module).
pub fn is_thread_line(line: &str) -> bool {
    line.trim()
        .strip_prefix("blockmem: pid ")
        .and_then(|rest| rest.split_once(": calls "))
        .is_some_and(|(who, counts)| {
            who.split_once(' ')
                .is_some_and(|(pid, _)| pid.parse::<u32>().is_ok())
                && counts.contains("; sizes ")
        })
}

/// One process compared.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Process id.
    pub pid: u32,
    /// Program.
    pub program: String,
    /// The statistics line's totals (None: no line printed).
    pub stats: Option<[(u64, u64); 4]>,
    /// The trace's equivalent totals (None: no trace file that reached exit).
    pub trace: Option<[(u64, u64); 4]>,
}

impl Row {
    /// Both present and equal.
    pub fn matches(&self) -> bool {
        matches!((&self.stats, &self.trace), (Some(a), Some(b)) if a == b)
    }

    /// Both sides present (a process whose statistics line never reached us — its
    /// stderr closed or redirected by the program — cannot be compared).
    pub fn compared(&self) -> bool {
        self.stats.is_some() && self.trace.is_some()
    }
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct StatsCheck {
    /// Per process.
    pub rows: Vec<Row>,
}

fn pairs(c: &[Counts; 4]) -> [(u64, u64); 4] {
    [0, 1, 2, 3].map(|k| (c[k].calls, c[k].bytes))
}

impl StatsCheck {
    /// Compares the lines with the analysis.
    pub fn new(lines: &[StatsLine], a: &Analysis) -> StatsCheck {
        let mut rows = Vec::new();
        for l in lines {
            // An exec'd program keeps its pid: the image that exited is the one with a
            // trailer (the latest such).
            let p = a
                .processes
                .iter()
                .rfind(|p| p.pid == l.pid && p.trailer.is_some());
            rows.push(Row {
                pid: l.pid,
                program: p.map_or(String::new(), |p| p.argv0.clone()),
                stats: Some(l.ops),
                trace: p.map(|p| pairs(&p.stats_equivalent)),
            });
        }
        for p in &a.processes {
            if p.trailer.is_some() && !lines.iter().any(|l| l.pid == p.pid) {
                rows.push(Row {
                    pid: p.pid,
                    program: p.argv0.clone(),
                    stats: None,
                    trace: Some(pairs(&p.stats_equivalent)),
                });
            }
        }
        StatsCheck { rows }
    }

    /// Processes compared.
    pub fn compared(&self) -> usize {
        self.rows.iter().filter(|r| r.compared()).count()
    }

    /// Compared processes that differ.
    pub fn mismatched(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.compared() && !r.matches())
            .count()
    }

    /// At least one process compared, and every compared one matched.
    pub fn all_match(&self) -> bool {
        self.compared() > 0 && self.mismatched() == 0
    }

    /// The table.
    pub fn table(&self) -> Table {
        let matched = self.rows.iter().filter(|r| r.matches()).count();
        let mut t = Table::new(
            "Trace totals against BLOCKMEM_STATS (same run)",
            format!(
                "{matched} of {} processes compared match exactly (calls and bytes per op; a forked child's statistics include its parent's calls before the fork, and so does its trace total here); {} without a statistics line (stderr closed or redirected by the program) or without a trace that reached exit",
                self.compared(),
                self.rows.len() - self.compared()
            ),
            ["pid", "program", "stats calls", "trace calls", "stats bytes", "trace bytes", "match"]
                .map(String::from)
                .to_vec(),
        );
        let sum = |x: &Option<[(u64, u64); 4]>| {
            x.map(|o| {
                (
                    o.iter().map(|p| p.0).sum::<u64>(),
                    o.iter().map(|p| p.1).sum::<u64>(),
                )
            })
        };
        for r in &self.rows {
            let (s, tr) = (sum(&r.stats), sum(&r.trace));
            let show = |v: Option<(u64, u64)>, f: fn((u64, u64)) -> u64, missing: &str| {
                v.map_or(missing.to_string(), |v| f(v).to_string())
            };
            t.rows.push(vec![
                r.pid.to_string(),
                r.program.clone(),
                show(s, |v| v.0, "no line"),
                show(tr, |v| v.0, "no file"),
                show(s, |v| v.1, "-"),
                show(tr, |v| v.1, "-"),
                match (r.compared(), r.matches()) {
                    (false, _) => "-",
                    (true, true) => "yes",
                    (true, false) => "NO",
                }
                .into(),
            ]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_statistics_line() {
        let l = parse_line(
            "blockmem: pid 4242 calls/bytes: copy 1200/35000000 move 3/100 set 40/5000 zero 0/0; kernels: inline 1190/20000; profile cpuid-defaults",
        )
        .unwrap();
        assert_eq!(l.pid, 4242);
        assert_eq!(l.ops, [(1200, 35_000_000), (3, 100), (40, 5000), (0, 0)]);
        assert!(parse_line("blockmem: profile x rejected").is_none());
    }

    #[test]
    fn tells_the_per_thread_lines_apart() {
        let counts = ": calls 3 bytes 30 temporal 30 streamed 0 libc 0; sizes <=128 3 <=2K 0 <=64K 0 <=1M 0 >1M 0";
        for who in [
            "tid 4243",
            "threads 2",
            "threads 256 and others",
            "other threads",
        ] {
            let line = format!("blockmem: pid 4242 {who}{counts}");
            assert!(is_thread_line(&line), "{line}");
            assert!(parse_line(&line).is_none(), "{line}");
        }
        assert!(!is_thread_line(
            "blockmem: pid 4242 calls/bytes: copy 1/1 move 0/0 set 0/0 zero 0/0; kernels: inline 1/1"
        ));
        assert!(!is_thread_line("my program: calls 3; sizes 4"));
    }
}
