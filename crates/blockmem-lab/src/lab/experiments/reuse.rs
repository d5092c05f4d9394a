//! `reuse`: copy into an uncached destination, then read the whole destination (seed
//! 003 Fig. 3, docs/SEEDS.md). Non-temporal stores win the copy but leave the data in
//! memory, so the read pays DRAM latency; temporal stores leave it cached. The table
//! gives the copy, the read, and their sum per byte.
//!
//! A second table reuses the destination another way: the same copy into the same
//! block again, as a program writing one buffer in a loop does ([`After::Again`]).
//! Each call finds the block where the one before left it: cached after temporal
//! stores (while it fits), in memory after non-temporal ones, so a kernel that streams
//! pays a cold destination on every call of the loop. `auto` probes there and would
//! find the block cold because its own last call streamed it; the dispatcher
//! remembers the blocks it streamed and writes one met again soon with temporal
//! stores.

use blockmem::kernel::Op;

use super::{distinct, fmt_size, geometric, libc_median, records_of, with_ratio, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::{After, Record, Shape};
use crate::lab::state::CacheState::{self, Clean, Hot};

/// Name in JSON and on the command line.
pub const NAME: &str = "reuse";

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

/// Source states (the destination is always clean).
pub const SRC_STATES: [CacheState; 2] = [Hot, Clean];

/// Calls after the first in the loop table: the fourth call is timed, by which `auto`
/// has streamed the block, met it again and written it temporally, and found it cached.
pub const AGAIN_CALLS: usize = 3;

/// The loop table's smallest size: below it no table streams.
pub const AGAIN_MIN: usize = 64 << 10;

/// Runs the sweep.
pub fn run(ctx: &mut Ctx<'_>) -> Vec<Record> {
    let methods = ctx.pick(Op::Copy, Some(&DEFAULT_METHODS));
    let sizes = ctx.sizes_or(
        &geometric(4 << 10, 32 << 20, 2),
        &geometric(4 << 10, 16 << 20, 4),
    );
    let mut shapes = Vec::new();
    for &n in &sizes {
        for s in SRC_STATES {
            let reps = ctx.reps_for(n, 21, 21);
            let shape = Shape {
                experiment: NAME,
                op: Op::Copy,
                size: n,
                src: s,
                dst: Clean,
                after: After::ReadDst,
                reps,
            };
            shapes.push(shape);
        }
        if n >= AGAIN_MIN {
            shapes.push(Shape {
                experiment: NAME,
                op: Op::Copy,
                size: n,
                src: Hot,
                dst: Clean,
                after: After::Again { calls: AGAIN_CALLS },
                reps: ctx.reps_for(n, 21, 21),
            });
        }
    }
    ctx.measure_shapes(&methods, &shapes, NAME)
}

/// Per source state: for each size, each method's copy + read = total (ns/KiB); then
/// the loop cells: each method's first and last call (ns/KiB).
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    for s in SRC_STATES {
        let read: Vec<Record> = recs
            .iter()
            .filter(|r| r.src == s.name() && r.reuse == "read")
            .cloned()
            .collect();
        out.push(per_size(
            &read,
            &methods,
            format!("reuse, {s}→clean then read dst: copy + read = total, ns per KiB (libc total / method total)"),
            "seed 003 Fig. 3: the copy that wins alone can lose once the destination is read",
            |r, kib| {
                format!(
                    "{:.0}+{:.0}={:.0}",
                    r.extra_f64("copy_median_ns").unwrap_or(f64::NAN) / kib,
                    r.extra_f64("read_median_ns").unwrap_or(f64::NAN) / kib,
                    r.summary.median / kib
                )
            },
        ));
    }
    let again: Vec<Record> = recs
        .iter()
        .filter(|r| r.reuse == "again")
        .cloned()
        .collect();
    if !again.is_empty() {
        out.push(loop_table(
            &again,
            &methods,
            format!(
                "reuse, hot→clean, then the same copy into the same destination {AGAIN_CALLS} more times: first call / last call, ns per KiB (libc last / method last)"
            ),
            "a buffer written in a loop: each call finds the destination where the last one left it",
        ));
    }
    out
}

/// A table of loop records (`After::Again`, one op), one row per size in the order
/// the records come: each method's first and last call per KiB, with libc's last call
/// over the method's. The `zero` experiment's loop tables too.
pub(crate) fn loop_table(recs: &[Record], methods: &[String], title: String, note: &str) -> Table {
    per_size(recs, methods, title, note, |r, kib| {
        format!(
            "{:.0} / {:.0}",
            r.extra_f64("first_median_ns").unwrap_or(f64::NAN) / kib,
            r.summary.median / kib
        )
    })
}

/// A table of `recs`, one cell per size and method: `value` of each record (given its
/// size in KiB) with libc's time over the method's.
fn per_size(
    recs: &[Record],
    methods: &[String],
    title: String,
    note: &str,
    value: impl Fn(&Record, f64) -> String,
) -> Table {
    let mut header = vec!["size".to_string()];
    header.extend(methods.iter().cloned());
    let mut t = Table::new(title, note, header);
    for n in distinct(recs, |r| r.size) {
        let same = |r: &Record| r.size == n;
        let kib = n as f64 / 1024.0;
        let mut row = vec![fmt_size(n)];
        for m in methods {
            row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                Some(r) => with_ratio(value(r, kib), r.summary.median, libc_median(recs, same)),
                None => "-".into(),
            });
        }
        t.rows.push(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::summary::tests::rec;
    use serde_json::json;

    /// A read-back record: copy and read times as extras, their sum as the median.
    fn read(method: &str, src: &str, n: usize, copy: f64, read: f64) -> Record {
        let mut r = rec(
            NAME,
            method,
            "copy",
            n,
            (src, "clean", "read"),
            &[copy + read],
        );
        r.extras.insert("copy_median_ns".into(), json!(copy));
        r.extras.insert("read_median_ns".into(), json!(read));
        r
    }

    /// A loop record: the last call as the median, the first as an extra.
    fn again(method: &str, n: usize, first: f64, last: f64) -> Record {
        let mut r = rec(NAME, method, "copy", n, ("hot", "clean", "again"), &[last]);
        r.extras.insert("first_median_ns".into(), json!(first));
        r
    }

    #[test]
    fn the_loop_cells_get_their_own_table_and_stay_out_of_the_read_back_ones() {
        let n = 1 << 20;
        let recs = vec![
            read("libc", "hot", n, 60_000.0, 20_000.0),
            read("avx512_nt", "hot", n, 40_000.0, 30_000.0),
            read("libc", "clean", n, 70_000.0, 20_000.0),
            read("avx512_nt", "clean", n, 50_000.0, 30_000.0),
            again("libc", n, 60_000.0, 21_504.0),
            again("avx512_nt", n, 38_912.0, 37_888.0),
        ];
        let t = tables(&recs);
        assert_eq!(t.len(), 3, "hot and clean read-back, then the loop");
        // Read-back: copy + read = total per KiB, libc's total over the method's.
        assert_eq!(
            t[0].rows,
            [["1 MiB", "59+20=78 (1.00×)", "39+29=68 (1.14×)"]]
        );
        assert_eq!(
            t[1].rows.len(),
            1,
            "the loop records are not read-back rows"
        );
        // The loop: first / last per KiB, libc's last over the method's.
        assert!(t[2].title.contains("3 more times"), "{}", t[2].title);
        assert_eq!(t[2].rows, [["1 MiB", "59 / 21 (1.00×)", "38 / 37 (0.57×)"]]);
        // No loop records, no loop table.
        assert_eq!(tables(&recs[..4]).len(), 2);
    }
}
