//! `temperature`: the 3×3 matrix of source × destination cache states per method (seed
//! 000 Tables 5–6, docs/SEEDS.md), plus a `fresh` destination (never-touched pages: the
//! call takes the page faults) per source state, at the paper's 4 KiB and at 64 KiB, 1
//! MiB and 16 MiB.

use blockmem::kernel::Op;

use super::{distinct, fmt_size, libc_median, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Record, Shape};
use crate::lab::state::CacheState;

/// Name in JSON and on the command line.
pub const NAME: &str = "temperature";

/// Runs the matrix.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods = ctx.pick(Op::Copy, None);
    let sizes = ctx.sizes_or(
        &[4 << 10, 64 << 10, 1 << 20, 16 << 20],
        // Quick: the seed's 4 KiB and two larger sizes inside the LLC; `sizes`,
        // `zero` and `policy` cover the sizes past it.
        &[4 << 10, 64 << 10, 1 << 20],
    );
    let mut shapes = Vec::new();
    for &n in &sizes {
        for s in CacheState::ALL {
            // Quick: a fresh destination with the hot source only (the page faults,
            // not the source, set its cost).
            let dsts = CacheState::DST_ALL
                .into_iter()
                .filter(|&d| !(ctx.quick && d == CacheState::Fresh && s != CacheState::Hot));
            for d in dsts {
                // Quick: 21 repetitions (the main job's budget; see `Ctx::reps_for`).
                let reps = ctx.reps_for(n, 31, 21);
                let shape = Shape {
                    experiment: NAME,
                    op: Op::Copy,
                    size: n,
                    src: s,
                    dst: d,
                    after: After::Nothing,
                    reps,
                };
                shapes.push(shape);
            }
        }
    }
    ctx.measure_shapes(&methods, &shapes, NAME)
}

/// One table per size: GB/s per method and state pair, with libc's time / this time.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let recs: Vec<Record> = recs
        .iter()
        .filter(|r| r.experiment == NAME)
        .cloned()
        .collect();
    let mut out = Vec::new();
    for n in distinct(&recs, |r| r.size) {
        let mut header = vec!["method".to_string()];
        let pairs: Vec<(String, String)> = CacheState::ALL
            .iter()
            .flat_map(|s| {
                CacheState::DST_ALL
                    .iter()
                    .map(move |d| (s.name().to_string(), d.name().to_string()))
            })
            .collect();
        header.extend(pairs.iter().map(|(s, d)| format!("{s}→{d}")));
        let mut t = Table::new(
            format!(
                "temperature, {} copy: GB/s (libc time / method time)",
                fmt_size(n)
            ),
            "rows: method; columns: src→dst state; median of the repetitions",
            header,
        );
        let mut tc = Table::new(
            format!("temperature, {} copy: median cycles (TSC)", fmt_size(n)),
            "the seed's Table 5 unit",
            t.header.clone(),
        );
        for m in distinct(&recs, |r| r.method.clone()) {
            let mut row = vec![m.clone()];
            let mut rowc = vec![m.clone()];
            for (s, d) in &pairs {
                let same = |r: &Record| r.size == n && &r.src == s && &r.dst == d;
                match recs.iter().find(|r| r.method == m && same(r)) {
                    Some(r) => {
                        row.push(with_ratio(
                            format!("{:.1}", r.gbps),
                            r.summary.median,
                            libc_median(&recs, same),
                        ));
                        rowc.push(format!(
                            "{:.0}",
                            r.extra_f64("median_cycles").unwrap_or(f64::NAN)
                        ));
                    }
                    None => {
                        row.push("-".into());
                        rowc.push("-".into());
                    }
                }
            }
            t.rows.push(row);
            tc.rows.push(rowc);
        }
        out.push(t);
        out.push(tc);
    }
    out
}
