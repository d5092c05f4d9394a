//! `reuse`: copy into an uncached destination, then read the whole destination (seed
//! 003 Fig. 3, docs/SEEDS.md). Non-temporal stores win the copy but leave the data in
//! memory, so the read pays DRAM latency; temporal stores leave it cached. The table
//! gives the copy, the read, and their sum per byte.

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
    }
    ctx.measure_shapes(&methods, &shapes, NAME)
}

/// Per source state: for each size, each method's copy + read = total (ns/KiB).
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let mut out = Vec::new();
    for s in SRC_STATES {
        let mut header = vec!["size".to_string()];
        header.extend(methods.iter().cloned());
        let mut t = Table::new(
            format!("reuse, {s}→clean then read dst: copy + read = total, ns per KiB (libc total / method total)"),
            "seed 003 Fig. 3: the copy that wins alone can lose once the destination is read",
            header,
        );
        for n in distinct(&recs, |r| r.size) {
            let same = |r: &Record| r.size == n && r.src == s.name();
            let kib = n as f64 / 1024.0;
            let mut row = vec![fmt_size(n)];
            for m in &methods {
                row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                    Some(r) => with_ratio(
                        format!(
                            "{:.0}+{:.0}={:.0}",
                            r.extra_f64("copy_median_ns").unwrap_or(f64::NAN) / kib,
                            r.extra_f64("read_median_ns").unwrap_or(f64::NAN) / kib,
                            r.summary.median / kib
                        ),
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
