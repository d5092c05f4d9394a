//! `policy`: does blockmem's per-call choice beat the system library, and how close
//! does it come to the best kernel for each situation? (seed 003 Fig. 4's selection,
//! measured.)
//!
//! A grid of sizes × source state × destination state (hot, clean, dirty) × reuse
//! (nothing after; the destination read right after) for copy, and sizes ×
//! destination state × reuse for zero. Methods: `libc`; `auto` (`Hint::Auto`);
//! `auto_hinted` (the hint that matches the cell: `Reuse` when the destination is read
//! after, `NoReuse` otherwise); every vector and string kernel, whose per-cell best is
//! the oracle. Cells with reuse are timed as copy + read, so a kernel that leaves the
//! destination out of cache pays for it.
//!
//! `libc` also runs a second time in every cell, as `libc_again`: the same code,
//! measured the same way, so its ratio to `libc` is the noise floor of the grid. A cell
//! where `auto` runs the same instruction as libc (`rep movsb` from 4 KiB here) can
//! only be told apart from libc by more than that.

use std::collections::BTreeMap;

use blockmem::kernel::Op;
use blockmem::Hint;
use serde_json::json;

use super::{fmt_size, Ctx};
use crate::lab::method::{Kind, Method};
use crate::lab::report::Table;
use crate::lab::runner::{After, Cell, Record, Shape};
use crate::lab::state::CacheState;

/// Name in JSON and on the command line.
pub const NAME: &str = "policy";

/// Kernels left out of the oracle: they never win on x86-64 and the byte loop would
/// take seconds per 64 MiB cell.
const NOT_IN_ORACLE: [&str; 2] = ["naive", "portable"];

/// The name of libc's second measurement in every cell (see the module docs).
pub const LIBC_AGAIN: &str = "libc_again";

/// The methods besides `libc` that are not kernels, so never the oracle.
const NOT_KERNELS: [&str; 3] = ["auto", "auto_hinted", LIBC_AGAIN];

/// Runs the grid.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let sizes = ctx.sizes_or(
        &[
            4 << 10,
            16 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
            4 << 20,
            8 << 20,
            16 << 20,
            64 << 20,
        ],
        &[4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20],
    );
    let mut out = Vec::new();
    for op in [Op::Copy, Op::Zero] {
        let kernels: Vec<Method> = ctx
            .pick(op, None)
            .into_iter()
            .filter(|m| m.kind() == Kind::Kernel && !NOT_IN_ORACLE.contains(&m.name()))
            .collect();
        let libc = ctx
            .all_methods
            .iter()
            .find(|m| m.kind() == Kind::Libc)
            .cloned();
        let libc_again = libc.clone().map(|m| m.renamed(LIBC_AGAIN));
        let auto = Method::auto();
        let hinted_reuse = Method::auto_with_hint(Hint::Reuse, "auto_hinted");
        let hinted_noreuse = Method::auto_with_hint(Hint::NoReuse, "auto_hinted");
        let srcs: &[CacheState] = if op == Op::Copy {
            &CacheState::ALL
        } else {
            &[CacheState::Hot]
        };
        let methods: Vec<Vec<&Method>> = [&hinted_noreuse, &hinted_reuse]
            .into_iter()
            .map(|hinted| {
                // All methods of a cell are measured together, interleaved per
                // repetition, so slow drifts of the machine hit them alike.
                libc.iter()
                    .chain([&auto, hinted])
                    .chain(libc_again.iter())
                    .chain(kernels.iter())
                    .collect()
            })
            .collect();
        let mut groups: Vec<Vec<Cell>> = Vec::new();
        let mut afters: Vec<After> = Vec::new();
        for &n in &sizes {
            for &s in srcs {
                for d in CacheState::ALL {
                    for after in [After::Nothing, After::ReadDst] {
                        // The worst-cell figures are a minimum over ~120 ratios, so
                        // every cell needs a steady median. Small cold cells are a few
                        // DRAM misses: with 10 samples the median of a 4 KiB cell moved
                        // by 20-30% between methods running the same kernel. A 64 MiB
                        // "hot" cell depends on how much of the host's shared LLC the
                        // neighbours leave: its samples spread 6-12 ms, and with 3 of
                        // them two methods running the same kernel differed by 10%
                        // (with 5, libc and the rep_movsb kernel, the same instruction,
                        // still differed by 12%): at least 11 samples there.
                        let reps =
                            ctx.reps_for(n, 21, 15)
                                .max(if ctx.reps.is_none() && n >= 32 << 20 {
                                    11
                                } else {
                                    1
                                });
                        let shape = Shape {
                            experiment: NAME,
                            op,
                            size: n,
                            src: s,
                            dst: d,
                            after,
                            reps,
                        };
                        let ms = &methods[usize::from(after == After::ReadDst)];
                        groups.push(shape.cells(ms.iter().copied(), 0));
                        afters.push(after);
                    }
                }
            }
        }
        let results = ctx.measure_plan(&groups, &format!("{NAME} {}", op.name()));
        for (recs, after) in results.into_iter().zip(afters) {
            for mut r in recs.into_iter().flatten() {
                if r.method == "auto_hinted" {
                    let h = if after == After::ReadDst {
                        Hint::Reuse
                    } else {
                        Hint::NoReuse
                    };
                    r.extras.insert("hint".into(), json!(h.name()));
                }
                out.push(r);
            }
        }
    }
    out
}

/// One grid cell's identity.
type CellKey = (String, usize, String, String, String);

fn key(r: &Record) -> CellKey {
    (
        r.op.clone(),
        r.size,
        r.src.clone(),
        r.dst.clone(),
        r.reuse.clone(),
    )
}

/// Per cell: libc's time, the oracle (best kernel, its time), and every method's time.
struct Grid {
    cells: BTreeMap<CellKey, CellTimes>,
}

#[derive(Default)]
struct CellTimes {
    libc: Option<f64>,
    oracle: Option<(String, f64)>,
    methods: BTreeMap<String, f64>,
}

impl Grid {
    fn of(recs: &[Record], op: &str) -> Grid {
        let mut cells: BTreeMap<CellKey, CellTimes> = BTreeMap::new();
        for r in recs.iter().filter(|r| r.experiment == NAME && r.op == op) {
            let c = cells.entry(key(r)).or_default();
            let t = r.summary.median;
            c.methods.insert(r.method.clone(), t);
            if r.method == "libc" {
                c.libc = Some(t);
            } else if !NOT_KERNELS.contains(&r.method.as_str())
                && c.oracle.as_ref().is_none_or(|o| t < o.1)
            {
                c.oracle = Some((r.method.clone(), t));
            }
        }
        Grid { cells }
    }

    /// (geometric mean of `base / time` over the cells that have both, worst cell
    /// ratio and its label).
    fn ratio(
        &self,
        base: impl Fn(&CellTimes) -> Option<f64>,
        time: impl Fn(&CellTimes) -> Option<f64>,
    ) -> Option<(f64, f64, String)> {
        let (mut sum, mut n, mut worst) = (0.0, 0, (f64::MAX, String::new()));
        for (k, c) in &self.cells {
            let (Some(b), Some(t)) = (base(c), time(c)) else {
                continue;
            };
            let r = b / t;
            sum += r.ln();
            n += 1;
            if r < worst.0 {
                worst = (r, label(k));
            }
        }
        (n > 0).then(|| ((sum / n as f64).exp(), worst.0, worst.1))
    }
}

fn label(k: &CellKey) -> String {
    let reuse = if k.4 == "read" {
        ", dst read after"
    } else {
        ""
    };
    if k.0 == "copy" {
        format!("{} {}→{}{reuse}", fmt_size(k.1), k.2, k.3)
    } else {
        format!("{} dst {}{reuse}", fmt_size(k.1), k.3)
    }
}

/// A ratio summary: (geometric mean, worst cell's ratio, worst cell's label).
pub type Ratio = Option<(f64, f64, String)>;

/// Summary numbers for one op: (method, vs libc, vs oracle). Used by the tables and by
/// the closing checks.
pub fn summary(recs: &[Record], op: &str) -> Vec<(String, Ratio, Ratio)> {
    let g = Grid::of(recs, op);
    let libc = |c: &CellTimes| c.libc;
    let oracle = |c: &CellTimes| c.oracle.as_ref().map(|o| o.1);
    ["auto", "auto_hinted", LIBC_AGAIN, "oracle"]
        .iter()
        .map(|&m| {
            if m == "oracle" {
                let itself = Some((1.0, 1.0, String::new()));
                (m.to_string(), g.ratio(libc, oracle), itself)
            } else {
                let time = |c: &CellTimes| c.methods.get(m).copied();
                (m.to_string(), g.ratio(libc, time), g.ratio(oracle, time))
            }
        })
        .collect()
}

/// Tables: the summary per op, then every cell.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let mut out = Vec::new();
    for op in ["copy", "zero"] {
        let g = Grid::of(recs, op);
        if g.cells.is_empty() {
            continue;
        }
        let mut t = Table::new(
            format!("policy, {op}: speed-up over libc and fraction of the per-cell best kernel"),
            "ratios are time ratios (libc or oracle time / method time; >1 = faster); geometric mean over the grid, and the worst cell; libc_again is libc measured a second time in every cell: its worst cell is the grid's noise floor",
            ["method", "vs libc (geomean)", "worst vs libc", "worst cell", "vs oracle (geomean)", "worst vs oracle", "worst cell"].map(String::from).to_vec(),
        );
        for (m, l, o) in summary(recs, op) {
            let f = |x: &Ratio| match x {
                Some((g, w, c)) => [format!("{g:.2}×"), format!("{w:.2}×"), c.clone()],
                None => ["-".into(), "-".into(), "-".into()],
            };
            let mut row = vec![m];
            row.extend(f(&l));
            row.extend(f(&o));
            t.rows.push(row);
        }
        out.push(t);
        let mut cells = Table::new(
            format!("policy, {op}: every cell"),
            "times are medians; auto, auto_hinted and libc_again (libc's second measurement) as libc time / their time; the oracle is the fastest kernel in the cell",
            ["cell", "libc", "auto", "auto_hinted", "libc_again", "oracle kernel", "oracle vs libc"].map(String::from).to_vec(),
        );
        for (k, c) in &g.cells {
            let ratio = |m: &str| match (c.libc, c.methods.get(m)) {
                (Some(l), Some(t)) => format!("{:.2}×", l / t),
                _ => "-".into(),
            };
            cells.rows.push(vec![
                label(k),
                c.libc.map_or("-".into(), |l| format!("{:.0} ns", l)),
                ratio("auto"),
                ratio("auto_hinted"),
                ratio(LIBC_AGAIN),
                c.oracle.as_ref().map_or("-".into(), |o| o.0.clone()),
                match (c.libc, &c.oracle) {
                    (Some(l), Some((_, o))) => format!("{:.2}×", l / o),
                    _ => "-".into(),
                },
            ]);
        }
        out.push(cells);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::stats::Summary;

    fn rec(method: &str, size: usize, dst: &str, t: f64) -> Record {
        Record {
            experiment: NAME.into(),
            method: method.into(),
            op: "copy".into(),
            size,
            src: "hot".into(),
            dst: dst.into(),
            reuse: "none".into(),
            summary: Summary::of(&[t, t, t]),
            gbps: size as f64 / t,
            verified: true,
            samples_ns: vec![t; 3],
            extras: serde_json::Map::new(),
        }
    }

    #[test]
    fn summary_ratios_oracle_and_the_noise_floor() {
        // Two cells. Cell A: libc 100, auto 50 (2x), hinted 100, libc_again 110,
        // kernels 80 and 40 (oracle 40). Cell B: libc 100, auto 125 (0.8x), hinted 50,
        // libc_again 90 (faster than every kernel: it must not become the oracle),
        // kernel 100.
        let recs = vec![
            rec("libc", 4096, "hot", 100.0),
            rec("auto", 4096, "hot", 50.0),
            rec("auto_hinted", 4096, "hot", 100.0),
            rec(LIBC_AGAIN, 4096, "hot", 110.0),
            rec("avx2", 4096, "hot", 80.0),
            rec("avx512", 4096, "hot", 40.0),
            rec("libc", 4096, "clean", 100.0),
            rec("auto", 4096, "clean", 125.0),
            rec("auto_hinted", 4096, "clean", 50.0),
            rec(LIBC_AGAIN, 4096, "clean", 90.0),
            rec("avx2", 4096, "clean", 100.0),
        ];
        let s = summary(&recs, "copy");
        let row = |m: &str| s.iter().find(|r| r.0 == m).unwrap().clone();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;

        let (_, l, o) = row("auto");
        let (g, w, cell) = l.unwrap();
        assert!(close(g, (2.0f64 * 0.8).sqrt()) && close(w, 0.8), "{g} {w}");
        assert_eq!(cell, "4 KiB hot→clean");
        // Against the oracle: 40/50 and 100/125.
        let (g, w, _) = o.unwrap();
        assert!(close(g, 0.8) && close(w, 0.8));

        let (_, l, _) = row(LIBC_AGAIN);
        let (g, w, cell) = l.unwrap();
        assert!(close(g, (100.0f64 / 110.0 * 100.0 / 90.0).sqrt()));
        assert!(close(w, 100.0 / 110.0));
        assert_eq!(cell, "4 KiB hot→hot");

        // The oracle is the best kernel, never libc's second run: 100/40 and 100/100.
        let (_, l, o) = row("oracle");
        let (g, w, _) = l.unwrap();
        assert!(close(g, (2.5f64).sqrt()) && close(w, 1.0));
        assert_eq!(o.unwrap().0, 1.0);

        // The per-cell table carries the libc_again column.
        let t = tables(&recs);
        assert_eq!(t.len(), 2);
        assert!(t[1].header.iter().any(|h| h == LIBC_AGAIN));
        assert!(t[1].rows.iter().all(|r| r.len() == t[1].header.len()));
    }
}
