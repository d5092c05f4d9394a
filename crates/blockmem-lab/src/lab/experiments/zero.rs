//! `zero`: zeroing (and setting) blocks from one 4 KiB page to 256 MiB with a hot and a
//! clean destination, every zeroing kernel against libc's `memset` (seed 004's block
//! clear: clears wipe the cache and their data is often not reused soon; docs/SEEDS.md).
//!
//! Loop tables set and zero one block again and again ([`After::Again`], the fourth call
//! timed), as a program clearing or filling one buffer in a loop does: each call finds
//! the block where the last one left it, so a kernel that streams (or `clzero`) pays a
//! cold block on every call while temporal stores keep it cached as long as it fits.
//! `auto` streams the first call where its probe finds the block cold and writes it
//! temporally after, up to the table's `set.loop_temporal_max` (zeroing takes the
//! sets').

use blockmem::kernel::Op;

use super::reuse::AGAIN_CALLS;
use super::{distinct, fmt_size, libc_median, records_of, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Record, Shape};
use crate::lab::state::CacheState::{self, Clean, Hot};

/// Name in JSON and on the command line.
pub const NAME: &str = "zero";

/// Destination states.
pub const STATES: [CacheState; 2] = [Hot, Clean];

/// Sizes of the loop cells (`--sizes` keeps those from 64 KiB): where a set's loop
/// turns from temporal to streaming on the hosts measured, from about half to twice
/// the effective LLC, and one each side.
pub const LOOP_SIZES: [usize; 4] = [1 << 20, 4 << 20, 16 << 20, 64 << 20];

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
    let loop_sizes: Vec<usize> = match ctx.sizes {
        Some(s) => s
            .iter()
            .copied()
            .filter(|&n| n >= super::reuse::AGAIN_MIN)
            .collect(),
        None if ctx.quick => LOOP_SIZES[..3].to_vec(),
        None => LOOP_SIZES.to_vec(),
    };
    // Both ops in quick runs too: a set of a byte is what calibration measures the
    // sets' bound with, zeroing what `clzero` serves.
    for op in [Op::Zero, Op::Set] {
        for &n in &loop_sizes {
            shapes.push(Shape {
                experiment: NAME,
                op,
                size: n,
                src: Hot,
                dst: Clean,
                after: After::Again { calls: AGAIN_CALLS },
                reps: ctx.reps_for(n, 21, 21),
            });
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
        let single: Vec<Record> = recs
            .iter()
            .filter(|r| r.op == op && r.reuse != "again")
            .cloned()
            .collect();
        if single.is_empty() {
            continue;
        }
        for d in STATES {
            let mut header = vec!["size".to_string()];
            header.extend(methods.iter().cloned());
            let mut t = Table::new(
                format!("zero, {op} with {d} destination: GB/s (libc time / method time)"),
                "libc = memset from the C library",
                header,
            );
            for n in distinct(&single, |r| r.size) {
                let same = |r: &Record| {
                    r.size == n && r.op == op && r.dst == d.name() && r.reuse != "again"
                };
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
    for op in distinct(&recs, |r| r.op.clone()) {
        let mut again: Vec<Record> = recs
            .iter()
            .filter(|r| r.op == op && r.reuse == "again")
            .cloned()
            .collect();
        if again.is_empty() {
            continue;
        }
        again.sort_by_key(|r| r.size);
        out.push(super::reuse::loop_table(
            &again,
            &methods,
            format!(
                "zero, the same {op} on one clean block, then {AGAIN_CALLS} more times: first call / last call, ns per KiB (libc last / method last)"
            ),
            "a buffer cleared or filled in a loop: each call finds the block where the last one left it",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::summary::tests::rec;
    use serde_json::json;

    /// A loop record: the last call as the median, the first as an extra.
    fn again(method: &str, op: &str, n: usize, first: f64, last: f64) -> Record {
        let mut r = rec(NAME, method, op, n, ("hot", "clean", "again"), &[last]);
        r.extras.insert("first_median_ns".into(), json!(first));
        r
    }

    #[test]
    fn loop_cells_get_a_table_per_op_in_size_order_and_stay_out_of_the_others() {
        let (m, k) = (1usize << 20, 1024.0);
        let recs = vec![
            rec(
                NAME,
                "libc",
                "zero",
                m,
                ("hot", "clean", "none"),
                &[20.0 * k],
            ),
            rec(
                NAME,
                "avx512_nt",
                "zero",
                m,
                ("hot", "clean", "none"),
                &[10.0 * k],
            ),
            again("libc", "zero", 16 * m, 30.0 * k * 16.0, 16.0 * k * 16.0),
            again(
                "avx512_nt",
                "zero",
                16 * m,
                15.0 * k * 16.0,
                12.0 * k * 16.0,
            ),
            again("libc", "zero", 4 * m, 30.0 * k * 4.0, 10.0 * k * 4.0),
            again("avx512_nt", "zero", 4 * m, 17.0 * k * 4.0, 12.0 * k * 4.0),
            again("libc", "set", 4 * m, 30.0 * k * 4.0, 10.0 * k * 4.0),
            again("avx512_nt", "set", 4 * m, 37.0 * k * 4.0, 36.0 * k * 4.0),
        ];
        let t = tables(&recs);
        let titles: Vec<&str> = t.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(t.len(), 4, "{titles:?}");
        // The single-call tables hold the single calls only (one size); no set table,
        // since sets ran only in loops.
        assert!(titles[1].contains("clean destination"), "{titles:?}");
        assert_eq!(t[1].rows, [["1 MiB", "51.2 (1.00×)", "102.4 (2.00×)"]]);
        // A loop table per op, sizes in order: first / last per KiB, libc's last over
        // the method's.
        assert!(titles[2].contains("the same zero on one clean block"));
        assert_eq!(
            t[2].rows,
            [
                ["4 MiB", "30 / 10 (1.00×)", "17 / 12 (0.83×)"],
                ["16 MiB", "30 / 16 (1.00×)", "15 / 12 (1.33×)"],
            ]
        );
        assert!(titles[3].contains("the same set on one clean block"));
        assert_eq!(t[3].rows, [["4 MiB", "30 / 10 (1.00×)", "37 / 36 (0.28×)"]]);
    }
}
