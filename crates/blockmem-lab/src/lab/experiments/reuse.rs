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
        out.push(per_size(
            &again,
            &methods,
            format!(
                "reuse, hot→clean, then the same copy into the same destination {AGAIN_CALLS} more times: first call / last call, ns per KiB (libc last / method last)"
            ),
            "a buffer written in a loop: each call finds the destination where the last one left it",
            |r, kib| {
                format!(
                    "{:.0} / {:.0}",
                    r.extra_f64("first_median_ns").unwrap_or(f64::NAN) / kib,
                    r.summary.median / kib
                )
            },
        ));
    }
    out
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
