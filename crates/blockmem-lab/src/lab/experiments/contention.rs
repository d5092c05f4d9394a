//! `contention`: the decision's contention input at work (seed 004: copies share the
//! memory system). Large copies and zeroes into a cached and an evicted destination,
//! measured twice: alone, and beside a load (every other allowed CPU copying blocks of
//! four times the effective LLC through blockmem's own entry points, so that the
//! load's calls count among the large calls in flight as a program's threads' would;
//! [`crate::lab::load`]). In every cell `auto` (the contention input on) runs beside
//! `auto-alone` (off: no call counts and every call, the load's included, reads the
//! rows of a call alone), libc and the kernels that matter at these sizes.
//! `auto-alone / auto` > 1 under load: the contended choice beats the alone choice;
//! alone it is what the input costs (one atomic add and one subtract per large call).

use blockmem::kernel::Op;

use super::{distinct, fmt_size, records_of, Ctx};
use crate::lab::load::Load;
use crate::lab::method::{Method, AUTO_ALONE};
use crate::lab::report::Table;
use crate::lab::runner::{After, Cell, Record, Shape};
use crate::lab::state::CacheState;
use crate::lab::stats::{paired_median_ratio, paired_ratio_ci};

/// Name in JSON and on the command line.
pub const NAME: &str = "contention";

/// Kernels measured beside the policy unless `--methods`.
const KERNELS: [&str; 7] = [
    "avx512",
    "avx512_nt",
    "avx2",
    "avx2_nt",
    "avx512_pw",
    "rep_movsb",
    "rep_stosb",
];

/// Runs it.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    let llc = ctx.runner.states.hier.llc_effective;
    let sizes = ctx.sizes_or(
        &[256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20],
        &[1 << 20, 8 << 20, (4 * llc).clamp(16 << 20, 64 << 20)],
    );
    let libc = Method::libc().map_err(anyhow::Error::msg)?;
    let mut out = Vec::new();
    for loaded in [false, true] {
        let load = if loaded {
            let block = (4 * llc).clamp(16 << 20, 128 << 20);
            match Load::start(&Method::auto(), block, usize::MAX) {
                Some(l) => Some((l, std::time::Instant::now())),
                None => {
                    eprintln!("blockmem lab: {NAME}: one CPU allowed: measured alone only");
                    break;
                }
            }
        } else {
            None
        };
        let others = load.as_ref().map_or(0, |(l, _)| l.cpus.len());
        let recs = measure(ctx, &sizes, &libc);
        let gbps = load.as_ref().map_or(0.0, |(l, t)| {
            l.bytes() as f64 / t.elapsed().as_secs_f64() / 1e9
        });
        out.extend(recs.into_iter().map(|mut r| {
            r.extras.insert(
                "load".into(),
                if loaded { "contended" } else { "alone" }.into(),
            );
            r.extras.insert("load_threads".into(), others.into());
            r.extras.insert("load_gbps".into(), gbps.into());
            r
        }));
    }
    Ok(out)
}

/// One pass over the cells (alone, or beside the load).
fn measure(ctx: &mut Ctx<'_>, sizes: &[usize], libc: &Method) -> Vec<Record> {
    let mut groups: Vec<Vec<Cell>> = Vec::new();
    let per_op: Vec<(Op, Vec<Method>)> = [Op::Copy, Op::Zero]
        .into_iter()
        .map(|op| {
            let mut ms = vec![libc.clone(), Method::auto(), Method::auto_alone()];
            ms.extend(
                ctx.pick(op, Some(&KERNELS))
                    .into_iter()
                    .filter(|m| m.kind() == crate::lab::method::Kind::Kernel),
            );
            (op, ms)
        })
        .collect();
    for (op, methods) in &per_op {
        for &n in sizes {
            for dst in [CacheState::Hot, CacheState::Clean] {
                let shape = Shape {
                    experiment: NAME,
                    op: *op,
                    size: n,
                    src: CacheState::Hot,
                    dst,
                    after: After::Nothing,
                    reps: ctx.reps_for(n, 11, 7),
                };
                groups.push(shape.cells(methods, 0));
            }
        }
    }
    ctx.measure_plan(&groups, NAME)
        .into_iter()
        .flatten()
        .flatten()
        .collect()
}

/// Per op: each cell's libc / auto and auto-alone / auto, alone and under load, with
/// the fastest kernel of the cell.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, _) = records_of(recs, NAME);
    let mut out = Vec::new();
    for op in distinct(&recs, |r| r.op.clone()) {
        let sel: Vec<Record> = recs.iter().filter(|r| r.op == op).cloned().collect();
        let threads = sel
            .iter()
            .filter_map(|r| r.extras.get("load_threads").and_then(|v| v.as_u64()))
            .max()
            .unwrap_or(0);
        let mut t = Table::new(
            format!("contention, {op}: alone and beside {threads} loading thread(s)"),
            "per cell, paired median time ratios [95% interval]: libc / auto (> 1: auto faster), auto-alone / auto (> 1: the contended choice wins; alone: what the input costs), and the fastest kernel with its time / auto's",
            vec![
                "bytes, destination".into(),
                "alone: libc/auto".into(),
                "alone: auto-alone/auto".into(),
                "loaded: libc/auto".into(),
                "loaded: auto-alone/auto".into(),
                "loaded: fastest kernel".into(),
            ],
        );
        for n in distinct(&sel, |r| r.size) {
            for dst in distinct(&sel, |r| r.dst.clone()) {
                let cell = |load: &str, m: &str| {
                    sel.iter().find(|r| {
                        r.size == n
                            && r.dst == dst
                            && r.method == m
                            && r.extras.get("load").and_then(|v| v.as_str()) == Some(load)
                    })
                };
                let ratio = |load: &str, base: &str| match (cell(load, base), cell(load, "auto")) {
                    (Some(b), Some(a)) => fmt_ratio(&b.samples_ns, &a.samples_ns),
                    _ => "-".into(),
                };
                let fastest = sel
                    .iter()
                    .filter(|r| {
                        r.size == n
                            && r.dst == dst
                            && r.extras.get("load").and_then(|v| v.as_str()) == Some("contended")
                            && blockmem::kernel::KernelId::from_name(&r.method).is_some()
                    })
                    .min_by(|a, b| a.summary.median.total_cmp(&b.summary.median));
                let fastest = match (fastest, cell("contended", "auto")) {
                    (Some(k), Some(a)) => {
                        format!("{} {:.2}", k.method, k.summary.median / a.summary.median)
                    }
                    _ => "-".into(),
                };
                t.rows.push(vec![
                    format!("{}, {dst}", fmt_size(n)),
                    ratio("alone", "libc"),
                    ratio("alone", AUTO_ALONE),
                    ratio("contended", "libc"),
                    ratio("contended", AUTO_ALONE),
                    fastest,
                ]);
            }
        }
        out.push(t);
    }
    out
}

fn fmt_ratio(base: &[f64], x: &[f64]) -> String {
    match (
        paired_median_ratio(base, x),
        paired_ratio_ci(base, x, 0.95, 1000, 0xc0),
    ) {
        (Some(r), Some((lo, hi))) => format!("{r:.2} [{lo:.2}–{hi:.2}]"),
        (Some(r), None) => format!("{r:.2}"),
        _ => "-".into(),
    }
}
