//! `pollution`: an application working set (sized to fit the L2, then the effective
//! LLC) is warm; a copy of n bytes between clean buffers runs; the working set is read
//! again. The extra time of that second read, against a paired repetition without the
//! copy, is the cost the copy inflicts on the application (seed 004 in docs/SEEDS.md:
//! misses the OS induces in the application; block operations wipe out the cache).
//! Streaming stores should inflict less.
//!
//! The re-read is a pointer chase through 8192 random lines of the working set, not a
//! sequential sweep: a sweep is bandwidth-bound and, with hardware prefetch, can run
//! about as fast from DRAM as from the LLC, hiding the misses; dependent loads pay each
//! miss in full, as pointer-rich application data
//! does. The extra time per line as a fraction of a DRAM miss says how far the copy
//! pushed the working set out: 100% = every line now comes from DRAM; an L2 working set
//! pushed to the LLC shows ~30%.

use blockmem::kernel::Op;

use super::{distinct, fmt_size, records_of, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Cell, Record, Shape};
use crate::lab::state::CacheState::Clean;

/// Name in JSON and on the command line.
pub const NAME: &str = "pollution";

/// Methods shown unless `--methods`.
pub const DEFAULT_METHODS: [&str; 7] = [
    "avx2",
    "avx2_nt",
    "avx2_pf",
    "avx2_pf_nt",
    "rep_movsb",
    "libc",
    "auto",
];

/// The two working sets: ¾ of the L2 and ½ of the effective LLC (the LLC share of a
/// VM moves with its neighbours; half of it stays resident more reliably).
pub fn working_sets(l2: usize, llc: usize) -> [(&'static str, usize); 2] {
    [
        ("L2", (l2 * 3 / 4) / 4096 * 4096),
        ("LLC", (llc / 2) / 4096 * 4096),
    ]
}

/// Runs it.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods = ctx.pick(Op::Copy, Some(&DEFAULT_METHODS));
    let h = &ctx.runner.states.hier;
    let wss = working_sets(h.l2, h.llc_effective);
    let sizes = ctx.sizes_or(
        &[64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20],
        &[256 << 10, 1 << 20, 4 << 20],
    );
    let mut groups: Vec<Vec<Cell>> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for (label, ws) in wss {
        for &n in &sizes {
            let shape = Shape {
                experiment: NAME,
                op: Op::Copy,
                size: n,
                src: Clean,
                dst: Clean,
                after: After::ReadApp { ws },
                reps: ctx.reps_for(n.max(ws), 21, 21),
            };
            groups.push(shape.cells(&methods, 0));
            labels.push(label);
        }
    }
    let results = ctx.measure_plan(&groups, NAME);
    results
        .into_iter()
        .zip(labels)
        .flat_map(|(recs, label)| {
            recs.into_iter().flatten().map(move |mut r| {
                r.extras.insert("app_ws_level".into(), label.into());
                r
            })
        })
        .collect()
}

/// Per working set: extra re-read time (µs) per copy size and method, and the copy's
/// own time for reference.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    for ws in distinct(&recs, |r| r.extra_f64("app_ws").unwrap_or(0.0) as usize) {
        let sel: Vec<&Record> = recs
            .iter()
            .filter(|r| r.extra_f64("app_ws") == Some(ws as f64))
            .collect();
        let base = sel
            .iter()
            .filter_map(|r| r.extra_f64("app_base_ns"))
            .collect::<Vec<_>>();
        let base = crate::lab::state::median(&base);
        let level = sel[0]
            .extras
            .get("app_ws_level")
            .and_then(|v| v.as_str())
            .unwrap_or("?");
        let mut header = vec!["copy size".to_string()];
        header.extend(methods.iter().cloned());
        let mut t = Table::new(
            format!(
                "pollution, working set {} (~{level}): extra µs to re-read it after a clean→clean copy (extra per line as % of a DRAM miss) [copy µs]",
                fmt_size(ws)
            ),
            format!(
                "re-read = pointer chase through 8192 random lines; baseline without a copy: {:.1} µs; lower = less pollution",
                base / 1000.0
            ),
            header,
        );
        for n in distinct(&sel.iter().map(|r| (*r).clone()).collect::<Vec<_>>(), |r| {
            r.size
        }) {
            let mut row = vec![fmt_size(n)];
            for m in &methods {
                row.push(match sel.iter().find(|r| &r.method == m && r.size == n) {
                    Some(r) => format!(
                        "{:.1} ({:.0}%) [{:.1}]",
                        r.extra_f64("app_extra_ns").unwrap_or(f64::NAN) / 1000.0,
                        100.0 * r.extra_f64("app_dram_miss_fraction").unwrap_or(f64::NAN),
                        r.summary.median / 1000.0
                    ),
                    None => "-".into(),
                });
            }
            t.rows.push(row);
        }
        out.push(t);
    }
    out
}
