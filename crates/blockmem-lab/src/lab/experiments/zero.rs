//! `zero`: zeroing (and setting) blocks from one 4 KiB page to 256 MiB with a hot and a
//! clean destination, every zeroing kernel against libc's `memset` (seed 004's block
//! clear: clears wipe the cache and their data is often not reused soon; docs/SEEDS.md).

use blockmem::kernel::Op;

use super::{distinct, fmt_size, libc_median, records_of, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Record, Shape};
use crate::lab::state::CacheState::{self, Clean, Hot};

/// Name in JSON and on the command line.
pub const NAME: &str = "zero";

/// Destination states.
pub const STATES: [CacheState; 2] = [Hot, Clean];

/// Runs it.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods: Vec<_> = ctx
        .pick(Op::Zero, None)
        .into_iter()
        .filter(|m| {
            m.supports(Op::Zero) && !(ctx.quick && ctx.methods.is_none() && m.name() == "naive")
        })
        .collect();
    let sizes = ctx.sizes_or(
        &[4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20],
        &[4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20],
    );
    let ops: &[Op] = if ctx.quick {
        &[Op::Zero]
    } else {
        &[Op::Zero, Op::Set]
    };
    let mut shapes = Vec::new();
    for &op in ops {
        for &n in &sizes {
            for d in STATES {
                let reps = ctx.reps_for(n, 21, 21);
                let shape = Shape {
                    experiment: NAME,
                    op,
                    size: n,
                    src: Hot,
                    dst: d,
                    after: After::Nothing,
                    reps,
                };
                shapes.push(shape);
            }
        }
    }
    let out = ctx.measure_shapes(&methods, &shapes, NAME);
    ctx.runner.release();
    out
}

/// Per op and destination state: GB/s per size and method.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    for op in distinct(&recs, |r| r.op.clone()) {
        for d in STATES {
            let mut header = vec!["size".to_string()];
            header.extend(methods.iter().cloned());
            let mut t = Table::new(
                format!("zero, {op} with {d} destination: GB/s (libc time / method time)"),
                "libc = memset from the C library",
                header,
            );
            for n in distinct(&recs, |r| r.size) {
                let same = |r: &Record| r.size == n && r.op == op && r.dst == d.name();
                let mut row = vec![fmt_size(n)];
                for m in &methods {
                    row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                        Some(r) => with_ratio(
                            format!("{:.1}", r.gbps),
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
    }
    out
}
