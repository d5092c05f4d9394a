//! `sizes`: bandwidth and cycles/byte from 32 B to 64 MiB for hot→hot, cold→cold,
//! hot→cold and cold→hot (seed 001's table, seed 003 Fig. 2; docs/SEEDS.md). "Cold" is `clean`.

use blockmem::kernel::Op;

use super::{distinct, fmt_size, geometric, libc_median, records_of, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Record, Shape};
use crate::lab::state::CacheState::{self, Clean, Hot};

/// Name in JSON and on the command line.
pub const NAME: &str = "sizes";

/// The four state pairs of seed 003 Fig. 2.
pub const PAIRS: [(CacheState, CacheState); 4] =
    [(Hot, Hot), (Clean, Clean), (Hot, Clean), (Clean, Hot)];

/// Methods shown unless `--methods`: seed 003's NPF/PF × T/NT plus the references.
pub const DEFAULT_METHODS: [&str; 7] = [
    "avx2",
    "avx2_nt",
    "avx2_pf",
    "avx2_pf_nt",
    "rep_movsb",
    "libc",
    "auto",
];

/// Runs the sweep.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods = ctx.pick(Op::Copy, Some(&DEFAULT_METHODS));
    let sizes = ctx.sizes_or(&geometric(32, 64 << 20, 2), &geometric(32, 64 << 20, 4));
    let mut shapes = Vec::new();
    for &n in &sizes {
        for (s, d) in PAIRS {
            let reps = ctx.reps_for(n, 21, 21);
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
    ctx.measure_shapes(&methods, &shapes, NAME)
}

/// One table per state pair: cycles/byte per size and method.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    for (s, d) in PAIRS {
        let mut header = vec!["size".to_string()];
        header.extend(methods.iter().cloned());
        let mut t = Table::new(
            format!("sizes, {s}→{d}: cycles/byte (libc time / method time)"),
            "seed 003 Fig. 2's unit; lower is better",
            header,
        );
        for n in distinct(&recs, |r| r.size) {
            let same = |r: &Record| r.size == n && r.src == s.name() && r.dst == d.name();
            let mut row = vec![fmt_size(n)];
            for m in &methods {
                row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                    Some(r) => with_ratio(
                        format!("{:.3}", r.extra_f64("cycles_per_byte").unwrap_or(f64::NAN)),
                        r.summary.median,
                        libc_median(&recs, same),
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
