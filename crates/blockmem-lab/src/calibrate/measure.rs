//! Measuring for calibration: every available kernel of each op family over a ladder
//! of sizes and cache states, through the lab's runner (bytes verified, kernels of a
//! cell interleaved per repetition), and the cache probe's latency and cost.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use blockmem::kernel::{self, KernelId, Op};
use blockmem::profile::{kernel_fits, Family, Size};

use super::derive::{measured_op, Baseline, Dst, LoopTimes, Measurements, ProbeCost, Then};
use crate::lab::experiments::probe::probe_call_samples;
use crate::lab::method::Method;
use crate::lab::runner::{After, Cell, Record, Runner};
use crate::lab::state::{read_lines, read_pages, CacheState};
use crate::lab::timer::Timer;

/// What calibration measured.
pub struct Measured {
    /// Kernel medians.
    pub medians: Measurements,
    /// The system C library's medians in the same cells (empty if it could not be
    /// loaded).
    pub libc: Baseline,
    /// Effective LLC bytes.
    pub llc_effective: usize,
    /// Probe latencies, TSC cycles: (LLC hit, p80; flushed, p20).
    pub probe_cycles: (f64, f64),
    /// The probe's hit threshold.
    pub probe_hit_max: u32,
    /// The probe's confirming touch, TSC cycles: (cold block, p99; fresh block, p5).
    pub fault_cycles: (f64, f64),
    /// The probe's page-fault threshold.
    pub probe_fault_min: u32,
    /// What a probe costs a call.
    pub probe_cost: ProbeCost,
    /// Whether fresh destinations were measured.
    pub fresh: bool,
    /// Calls into one block again and again: each kernel's median time of the last
    /// call, per op and size (`measure_loops`).
    pub loops: LoopTimes,
    /// The cells from [`CONTENDED_FROM`] up measured again beside a load on every
    /// other CPU (`None`: one CPU allowed).
    pub contended: Option<Contended>,
}

/// Cells measured while the other CPUs copy.
pub struct Contended {
    /// Kernel medians.
    pub medians: Measurements,
    /// The C library's medians.
    pub libc: Baseline,
    /// Large copies in flight while measuring, the measured call included.
    pub calls: u32,
    /// The load's bytes per second over the measurement.
    pub load_gbps: f64,
    /// What the load ran: its method and block size.
    pub load: String,
}

/// The smallest size measured again under load: below it a call's bytes fit in the
/// core's own L2, which other cores' copies do not share.
pub const CONTENDED_FROM: usize = 256 << 10;

/// The kernels calibration may put in the table: every available kernel that serves a
/// family, but the reference ones (`naive`, `portable`: never faster than `sse2`).
/// `quick` keeps only the widest kernel of each store class: none whose wider relative
/// of the same class ([`KernelId::narrower`]) the CPU also runs (`avx2` goes where
/// `avx512` runs), which roughly halves the work on AVX-512 hosts.
fn kernels(fam: Family, quick: bool) -> Vec<KernelId> {
    let all: Vec<KernelId> = kernel::available()
        .map(|a| a.kernel().id)
        .filter(|&k| !matches!(k, KernelId::Naive | KernelId::Portable))
        .filter(|&k| {
            kernel_fits(fam, k) && k.kernel().is_some_and(|e| e.supports(measured_op(fam)))
        })
        .collect();
    if quick {
        widest_of_each_class(&all)
    } else {
        all
    }
}

/// The kernels of `all` whose wider relative of the same store class
/// ([`KernelId::narrower`]) is not in `all` too: `avx2` goes where `avx512` is,
/// `avx2_nt` where `avx512_nt` is. What quick runs measure.
///
/// ```
/// use blockmem::KernelId::*;
/// let all = [Sse2, Avx2, Avx2Nt, Avx512, Avx512Nt, RepStosb];
/// let quick = blockmem_lab::calibrate::measure::widest_of_each_class(&all);
/// assert_eq!(quick, [Avx512, Avx512Nt, RepStosb]);
/// // avx2_pw is another kind than avx2: without AVX-512 both stay.
/// let avx2_host = [Sse2, Avx2, Avx2Pw, RepMovsb];
/// let quick = blockmem_lab::calibrate::measure::widest_of_each_class(&avx2_host);
/// assert_eq!(quick, [Avx2, Avx2Pw, RepMovsb]);
/// ```
pub fn widest_of_each_class(all: &[KernelId]) -> Vec<KernelId> {
    // A kernel's kind is its name without the vector width (`avx512_pw` and `avx2_pw`
    // are both `_pw`): only a kernel of the same kind widens another. `avx2_pw` stands
    // in for nothing wider than `avx2`, and `rep_stosb`, which falls back to `avx512`,
    // widens nothing.
    let kind = |k: KernelId| {
        let n = k.name();
        ["avx512", "avx2", "sse2"]
            .iter()
            .find_map(|w| n.strip_prefix(w))
            .unwrap_or(n)
    };
    let widens = |w: KernelId, k: KernelId| w.narrower() == Some(k) && kind(w) == kind(k);
    let widened = |k: KernelId| all.iter().any(|&w| widens(w, k));
    all.iter().copied().filter(|&k| !widened(k)).collect()
}

/// Every kernel measured, for the profile's header.
pub fn kernel_names(quick: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Family::ALL
        .iter()
        .flat_map(|&f| kernels(f, quick))
        .map(KernelId::name)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The kernel of rows nothing was measured for: the widest temporal kernel per family.
pub fn fallbacks() -> [KernelId; 2] {
    let f = blockmem::cpu::features();
    [
        blockmem::policy::best_temporal(f, Op::Copy),
        blockmem::policy::best_temporal(f, Op::Set),
    ]
}

/// The sizes measured. Small sizes matter as much as large ones: a `rep` kernel costs
/// ~15 ns to start, so kernels chosen on 4 KiB and up alone would slow every 200-byte
/// call several times.
fn ladder(quick: bool) -> Vec<usize> {
    let k = 1usize << 10;
    let full = [
        256,
        k,
        2 * k,
        4 * k,
        8 * k,
        16 * k,
        64 * k,
        256 * k,
        k * k,
        4 * k * k,
        16 * k * k,
        64 * k * k,
    ];
    // Quick leaves out the in-between size 8 KiB. It keeps 2 KiB: on CPUs with
    // AVX-512BW every call up to 2 KiB runs inline, so the table's first band serves
    // 2-4 KiB, and without a cell there its kernel would come from the 1 KiB cells, which
    // no call of such a host runs (`docs/results/epyc-zen4-2vcpu/lab-quick`).
    full.into_iter().filter(|&n| !quick || n != 8 * k).collect()
}

/// The (source hot, destination) states measured per family at size `n`: for copies
/// the source evicted as well where the destination is hot or evicted, up to half the
/// effective LLC `llc` (past it a "hot" source cannot stay in cache beside its
/// destination either, and the evicted-source cells would repeat the hot-source ones at
/// the price of the largest cells).
fn states(fam: Family, fresh: bool, n: usize, llc: usize) -> Vec<(bool, Dst)> {
    let both_sources = n <= llc / 2;
    let mut v = match fam {
        Family::Copy if both_sources => vec![
            (true, Dst::Hot),
            (false, Dst::Hot),
            (true, Dst::Clean),
            (false, Dst::Clean),
        ],
        Family::Copy => vec![(true, Dst::Hot), (true, Dst::Clean)],
        Family::Set => vec![(true, Dst::Hot), (true, Dst::Clean)],
    };
    if fresh {
        v.push((true, Dst::Fresh));
    }
    v
}

/// The lab's state for a destination (`None`: this lab build cannot create it).
fn lab_state(d: Dst) -> Option<CacheState> {
    match d {
        Dst::Hot => Some(CacheState::Hot),
        Dst::Clean => Some(CacheState::Clean),
        Dst::Fresh => CacheState::from_name("fresh"),
    }
}

/// A method calibration measures: a kernel, or the C library (`None`).
type MeasuredMethod = (Option<KernelId>, Method);

/// One group of interleaved cells (every kernel of one family, size, state and
/// follow-up) and its measurement key without the kernel.
type Group<'a> = (Vec<Cell<'a>>, Family, usize, bool, Dst, Then);

fn groups<'a>(
    methods: &'a [(Family, Vec<MeasuredMethod>)],
    quick: bool,
    fresh: bool,
    llc: usize,
) -> Vec<Group<'a>> {
    let reps = |n: usize| match (quick, n) {
        (true, n) if n >= 16 << 20 => 3,
        (true, _) => 5,
        (false, n) if n >= 16 << 20 => 5,
        (false, _) => 11,
    };
    let mut out = Vec::new();
    for (fam, ms) in methods {
        for n in ladder(quick) {
            for (src_hot, dst) in states(*fam, fresh, n, llc) {
                let (Some(d), src) = (
                    lab_state(dst),
                    if src_hot {
                        CacheState::Hot
                    } else {
                        CacheState::Clean
                    },
                ) else {
                    continue;
                };
                // Read back at every size: a streaming kernel leaves even a 256-byte
                // destination out of the cache, and without the read-back cells a
                // small set measured alone chose non-temporal stores (a fleet memset
                // distribution then ran at a quarter of libc's speed).
                for then in [Then::Nothing, Then::ReadDst] {
                    let after = match then {
                        Then::Nothing => After::Nothing,
                        Then::ReadDst => After::ReadDst,
                    };
                    let cells = ms
                        .iter()
                        .map(|(_, m)| Cell {
                            experiment: "calibrate",
                            method: m,
                            op: measured_op(*fam),
                            size: n,
                            src,
                            dst: d,
                            src_off: 0,
                            dst_off: 0,
                            after,
                            reps: reps(n),
                        })
                        .collect();
                    out.push((cells, *fam, n, src_hot, dst, then));
                }
            }
        }
    }
    out
}

/// Measures everything calibration derives the table from.
pub fn measure(quick: bool, llc: Option<usize>, drain_stores: bool) -> Result<Measured> {
    eprintln!("calibrate: measuring the clock and the cache hierarchy…");
    let timer = Timer::calibrate(Duration::from_millis(if quick { 100 } else { 300 }));
    let hier = crate::lab::state::Hierarchy::measure(&timer, llc);
    eprintln!(
        "calibrate: effective LLC {} ({})",
        Size(hier.llc_effective),
        hier.llc_source
    );
    let llc_eff = hier.llc_effective;
    let mut runner = crate::lab::timed_runner(hier, timer, drain_stores);
    // Hot cells time a mix of sizes around each size, as a program's calls come: the
    // table must price the loop-exit mispredictions a repeated size never has.
    runner.size_mix = true;
    let fresh = lab_state(Dst::Fresh).is_some();
    let libc = Method::libc()
        .map_err(|e| {
            eprintln!(
                "calibrate: the C library's functions cannot be loaded ({e}); the table is derived without its floor"
            )
        })
        .ok();
    let methods = measured_methods(quick, libc.as_ref());
    let groups = groups(&methods, quick, fresh, llc_eff);
    let cells: Vec<Vec<Cell<'_>>> = groups.iter().map(|g| g.0.clone()).collect();
    let rounds = crate::lab::experiments::ROUNDS;
    let total = cells.iter().map(Vec::len).sum::<usize>() * rounds;
    let bar = crate::lab::progress::bar(total as u64, "calibrate", "cell passes", false);
    let results = runner.measure_rounds(&cells, rounds, |k| bar.inc(k as u64));
    bar.finish_and_clear();
    let (medians, libc_medians) = sort_medians(results, &groups)?;
    let (hot, cold) = measure_probe(
        if quick { 512 } else { 4096 },
        runner.states.hier.l2,
        llc_eff,
    );
    let probe_cost = measure_probe_cost(&mut runner, &timer, quick);
    let (cold_touch, fault) = measure_first_touch(if quick { 200 } else { 1000 });
    let loops = measure_loops(&mut runner, &methods, quick, llc_eff);
    let contended = measure_contended(&mut runner, &methods, quick, fresh, llc_eff)?;
    Ok(Measured {
        loops,
        contended,
        medians,
        libc: libc_medians,
        llc_effective: llc_eff,
        probe_cycles: (hot.1, cold.1),
        // Halfway between the slowest LLC hits (p80) and the fastest flushed lines (p20).
        probe_hit_max: ((hot.1 + cold.1) / 2.0).round().clamp(1.0, u32::MAX as f64) as u32,
        probe_cost,
        fresh,
        fault_cycles: (cold_touch, fault),
        probe_fault_min: fault_threshold(cold_touch, fault),
    })
}

/// The cells from [`CONTENDED_FROM`] up, measured again with every other allowed CPU
/// copying blocks of four times the effective LLC with the C library (the load glibc's
/// own threshold choices were argued from), as many calls in flight as CPUs.
fn measure_contended(
    runner: &mut Runner,
    methods: &[(Family, Vec<MeasuredMethod>)],
    quick: bool,
    fresh: bool,
    llc: usize,
) -> Result<Option<Contended>> {
    let load_method = match Method::libc() {
        Ok(m) => m,
        Err(_) => Method::kernel("sse2").context("the sse2 kernel")?,
    };
    let block = (4 * llc).clamp(16 << 20, 128 << 20);
    let t0 = std::time::Instant::now();
    let Some(load) = crate::lab::load::Load::start(&load_method, block, usize::MAX) else {
        eprintln!("calibrate: one CPU allowed: the contended rows are the rows");
        return Ok(None);
    };
    let groups: Vec<Group<'_>> = groups(methods, quick, fresh, llc)
        .into_iter()
        .filter(|g| g.2 >= CONTENDED_FROM)
        .collect();
    let cells: Vec<Vec<Cell<'_>>> = groups.iter().map(|g| g.0.clone()).collect();
    let rounds = crate::lab::experiments::ROUNDS;
    let total = cells.iter().map(Vec::len).sum::<usize>() * rounds;
    let bar =
        crate::lab::progress::bar(total as u64, "calibrate (contended)", "cell passes", false);
    let results = runner.measure_rounds(&cells, rounds, |k| bar.inc(k as u64));
    bar.finish_and_clear();
    let load_gbps = load.bytes() as f64 / t0.elapsed().as_secs_f64() / 1e9;
    let calls = load.cpus.len() as u32 + 1;
    let what = format!(
        "{} thread(s) on CPUs {:?} copying {} blocks with {}",
        load.cpus.len(),
        load.cpus,
        Size(block),
        load_method.name()
    );
    drop(load);
    let (medians, libc) = sort_medians(results, &groups)?;
    Ok(Some(Contended {
        medians,
        libc,
        calls,
        load_gbps,
        load: what,
    }))
}

/// The methods measured per family: its kernels ([`kernels`]), then the C library's
/// function where it could be loaded.
fn measured_methods(quick: bool, libc: Option<&Method>) -> Vec<(Family, Vec<MeasuredMethod>)> {
    Family::ALL
        .iter()
        .map(|&fam| {
            let ms = kernels(fam, quick)
                .into_iter()
                .filter_map(|k| Method::kernel(k.name()).map(|m| (Some(k), m)))
                .chain(libc.iter().map(|&m| (None, m.clone())))
                .collect();
            (fam, ms)
        })
        .collect()
}

/// Files each measured cell's median under its key: kernels in [`Measurements`], the C
/// library in [`Baseline`]. Fails naming every cell whose bytes were wrong.
fn sort_medians(
    results: Vec<Vec<Option<Record>>>,
    groups: &[Group<'_>],
) -> Result<(Measurements, Baseline)> {
    let mut medians = Measurements::new();
    let mut libc_medians = Baseline::new();
    let mut wrong = Vec::new();
    for (recs, (g, fam, n, src_hot, dst, then)) in results.into_iter().zip(groups) {
        for (r, cell) in recs.into_iter().zip(g) {
            let Some(r) = r else { continue };
            if !r.verified {
                wrong.push(format!(
                    "{} {} {} {}",
                    cell.method.name(),
                    fam.name(),
                    Size(*n),
                    dst.name()
                ));
            }
            let median = r.summary.median;
            match KernelId::from_name(cell.method.name()) {
                Some(k) => medians.insert((*fam, k, *n, *src_hot, *dst, *then), median),
                None => libc_medians.insert((*fam, *n, *src_hot, *dst, *then), median),
            };
        }
    }
    anyhow::ensure!(
        wrong.is_empty(),
        "kernels produced wrong bytes during calibration: {wrong:?}"
    );
    Ok((medians, libc_medians))
}

/// What a probe costs a call on a cached, a flushed and a fresh 1 MiB block (medians).
fn measure_probe_cost(runner: &mut Runner, timer: &Timer, quick: bool) -> ProbeCost {
    let samples = if quick { 15 } else { 41 };
    let mut call_ns = |state| {
        crate::lab::state::median(&probe_call_samples(
            &mut runner.states,
            timer,
            state,
            samples,
        ))
    };
    ProbeCost {
        cached: call_ns(CacheState::Hot),
        cold: call_ns(CacheState::Clean),
        fresh: call_ns(CacheState::Fresh),
    }
}

/// Calls after the first in a loop cell: the fourth call on the block is timed, as in
/// the lab's `reuse` loop cells.
const LOOP_CALLS: usize = 3;

/// The block sizes of the loop cells: from 64 KiB (below, a probe never runs) doubling
/// to twice the effective LLC `llc` (where both kinds of store meet memory), at least 8
/// MiB and at most 32 MiB (`quick`) or 64 MiB.
///
/// ```
/// use blockmem_lab::calibrate::measure::loop_ladder;
/// const MIB: usize = 1 << 20;
/// let l = loop_ladder(true, 9 * MIB);
/// assert_eq!((l[0], l[1], *l.last().unwrap(), l.len()), (64 << 10, 128 << 10, 16 * MIB, 9));
/// assert_eq!(*loop_ladder(true, 100 * MIB).last().unwrap(), 32 * MIB);
/// assert_eq!(*loop_ladder(false, 100 * MIB).last().unwrap(), 64 * MIB);
/// assert_eq!(*loop_ladder(false, MIB).last().unwrap(), 8 * MIB);
/// ```
pub fn loop_ladder(quick: bool, llc: usize) -> Vec<usize> {
    let cap = if quick { 32 << 20 } else { 64 << 20 };
    let top = (2 * llc).clamp(8 << 20, cap);
    std::iter::successors(Some(64usize << 10), |&n| Some(2 * n))
        .take_while(|&n| n <= top)
        .collect()
}

/// Measures calls into one block in a loop (`After::Again`: for copies the source hot,
/// the destination evicted before the first call, the fourth call timed) for each op of
/// [`blockmem::profile::LOOP_OPS`] with every kernel of its family in `methods` that
/// runs it (the C library's entry left out), size by size up the [`loop_ladder`], and
/// stops at the first size where streaming beats every temporal kernel by
/// [`super::derive::LOOP_MARGIN`] (the bound lies below it whatever larger blocks do). What the
/// table's `OP.loop_temporal_max` is derived from ([`super::derive::loop_temporal_max`]).
fn measure_loops(
    runner: &mut crate::lab::runner::Runner,
    methods: &[(Family, Vec<MeasuredMethod>)],
    quick: bool,
    llc: usize,
) -> LoopTimes {
    let mut out = LoopTimes::new();
    let sizes = loop_ladder(quick, llc);
    let bar = crate::lab::progress::bar(
        (sizes.len() * blockmem::profile::LOOP_OPS.len()) as u64,
        "calibrate: loops",
        "sizes",
        false,
    );
    for op in blockmem::profile::LOOP_OPS {
        let kernels: Vec<(KernelId, &Method)> = methods
            .iter()
            .filter(|(fam, _)| *fam == Family::of(op))
            .flat_map(|(_, ms)| ms)
            .filter_map(|(k, m)| k.map(|k| (k, m)))
            .filter(|(k, _)| k.kernel().is_some_and(|e| e.supports(op)))
            .collect();
        if !kernels.iter().any(|(k, _)| k.streams()) || !kernels.iter().any(|(k, _)| !k.streams()) {
            continue;
        }
        for &n in &sizes {
            let cells: Vec<Cell<'_>> = kernels
                .iter()
                .map(|&(_, m)| Cell {
                    experiment: "calibrate",
                    method: m,
                    op,
                    size: n,
                    src: CacheState::Hot,
                    dst: CacheState::Clean,
                    src_off: 0,
                    dst_off: 0,
                    after: After::Again { calls: LOOP_CALLS },
                    reps: if quick { 5 } else { 9 },
                })
                .collect();
            let recs = runner.measure_rounds(&[cells], crate::lab::experiments::ROUNDS, |_| {});
            for (rec, &(k, _)) in recs.into_iter().flatten().zip(&kernels) {
                if let Some(r) = rec.filter(|r| r.verified) {
                    out.insert((op, k, n), r.summary.median);
                }
            }
            bar.inc(1);
            if super::derive::loop_temporal_max(&out, op).1.is_some() {
                break;
            }
        }
    }
    bar.finish_and_clear();
    out
}

/// The medians as text (the `.measurements` file beside the profile).
pub fn raw_text(m: &Measurements, libc: &Baseline) -> String {
    let mut raw = String::from(
        "# blockmem calibrate: measured medians (ns): family method size src dst then\n",
    );
    let rows = m
        .iter()
        .map(|(&(fam, k, n, src_hot, dst, then), &ns)| (fam, k.name(), n, src_hot, dst, then, ns))
        .chain(
            libc.iter().map(|(&(fam, n, src_hot, dst, then), &ns)| {
                (fam, "libc", n, src_hot, dst, then, ns)
            }),
        );
    for (fam, method, n, src_hot, dst, then, ns) in rows {
        let _ = writeln!(
            raw,
            "{:<4} {:<11} {:>8} {:<5} {:<5} {:<7} {:>12.0}",
            fam.name(),
            method,
            Size(n).to_string(),
            if src_hot { "hot" } else { "clean" },
            dst.name(),
            match then {
                Then::Nothing => "alone",
                Then::ReadDst => "+read",
            },
            ns
        );
    }
    raw
}

/// The probe's page-fault threshold from the slowest confirming touches of cold
/// blocks (`cold`, p99: a memory access after the neighbouring page's walk) and the
/// fastest of fresh ones (`fault`, p5: a second page fault): their geometric mean.
/// Where the two overlap, the default (`blockmem::profile::DEFAULT_PROBE_FAULT_MIN`).
pub fn fault_threshold(cold: f64, fault: f64) -> u32 {
    if !(cold > 0.0 && fault > cold * 1.2) {
        return blockmem::profile::DEFAULT_PROBE_FAULT_MIN;
    }
    (cold * fault).sqrt().round() as u32
}

/// The probe's confirming touch (TSC cycles), as the dispatcher makes it: a load of a
/// line of the page before the probed one, right after the probed page's first touch.
/// On a block last touched long ago (its lines flushed, its translations evicted by
/// reading one line of each page of a 64 MiB region), p99; on a fresh block (released
/// with `MADV_DONTNEED`), where both touches fault, p5.
fn measure_first_touch(samples: usize) -> (f64, f64) {
    let pages = 4096;
    let mut buf = crate::lab::mem::Buffer::new(pages * 4096);
    let p = buf.as_mut_ptr();
    let tlb_len = 64 << 20;
    let tlb = crate::lab::mem::Buffer::new(tlb_len);
    let mut rng = fastrand::Rng::with_seed(0xf4e5);
    let (mut cold, mut fault) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    for _ in 0..samples {
        // A line of page k, its page mate, and the line at the same offset in page k-1.
        let k = 1 + rng.usize(..pages - 1);
        let line = p.wrapping_add(k * 4096 + 64);
        let before = line.wrapping_sub(4096);
        // SAFETY: every address lies inside `buf`, a private anonymous mapping of ours
        // whose contents nothing needs; `tlb` is ours too.
        unsafe {
            for q in [blockmem::probe::page_mate(line), line, before] {
                std::arch::x86_64::_mm_clflush(q);
            }
            read_pages(tlb.as_ptr(), tlb_len);
            std::arch::x86_64::_mm_mfence();
            blockmem::probe::mate_then_load_cycles(line);
            cold.push(blockmem::probe::load_cycles(before) as f64);
            crate::lab::state::release_pages(before.wrapping_sub(64), 2 * 4096);
            blockmem::probe::mate_then_load_cycles(line);
            fault.push(blockmem::probe::load_cycles(before) as f64);
        }
    }
    let q = |v: &mut Vec<f64>, x: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * x) as usize]
    };
    (q(&mut cold, 0.99), q(&mut fault, 0.05))
}

/// Probe latencies (TSC cycles) of `samples` cached and `samples` flushed lines:
/// ((median, p80) cached, (median, p20) flushed).
///
/// "Cached" means in the last-level cache only, the slowest hit the policy must still
/// call cached: a region of the L2 plus 2 MiB is read twice and lines of its first
/// 2 MiB, which the L2 has since dropped, are probed (with an 8 MiB region instead,
/// 2 MiB, which the L2 has since dropped, are probed (a larger region would reach past
/// this core's share of the shared LLC, which the pointer chase overstates).
/// would call LLC hits cold and stream blocks that are in cache.
fn measure_probe(samples: usize, l2: usize, llc: usize) -> ((f64, f64), (f64, f64)) {
    let len = (l2 + (2 << 20)).min((llc * 3 / 4).max(l2 + (512 << 10)));
    let mut buf = crate::lab::mem::Buffer::new(len);
    let p = buf.as_mut_ptr();
    let lines = (len - l2) / 64;
    let mut rng = fastrand::Rng::with_seed(0x9b0be);
    let (mut hot, mut cold) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    // One line in each page of a 64 MiB region: reading them evicts the probed pages'
    // translations from the TLB (a real probe of a large block misses the TLB: its
    // pages were last touched long ago) while adding only 1 MiB of lines to the cache.
    // Without it the probe threshold sat below the latency of an LLC hit plus a page
    // walk, and hot 64 MiB blocks were streamed.
    let tlb_len = 64 << 20;
    let tlb = crate::lab::mem::Buffer::new(tlb_len);
    let per_round = 64;
    while hot.len() < samples {
        let pick: Vec<usize> = (0..per_round).map(|_| rng.usize(..lines) * 64).collect();
        // SAFETY: every address is inside `buf` or `tlb`; the reads, probes and
        // flushes only read them.
        unsafe {
            read_lines(p, len);
            read_lines(p, len);
            read_pages(tlb.as_ptr(), tlb_len);
            for &off in &pick {
                hot.push(blockmem::probe::load_cycles_tlb_warm(p.add(off)) as f64);
            }
            // Each line flushed right before its probe: flushing the 64 lines first
            // and probing them afterwards left most of them reading as LLC hits, not
            // as cold lines (the same in C). The page mate's load warms
            // the TLB either way.
            for &off in &pick {
                std::arch::x86_64::_mm_clflush(p.add(off));
                std::arch::x86_64::_mm_mfence();
                cold.push(blockmem::probe::load_cycles_tlb_warm(p.add(off)) as f64);
            }
        }
    }
    let q = |v: &mut Vec<f64>, x: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * x) as usize]
    };
    (
        (q(&mut hot, 0.5), q(&mut hot, 0.8)),
        (q(&mut cold, 0.5), q(&mut cold, 0.2)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(method: &str, median_ns: f64, verified: bool) -> Record {
        Record::from_json(&serde_json::json!({
            "experiment": "calibrate", "method": method, "op": "copy", "size": 4096,
            "src": "hot", "dst": "hot", "reuse": "no", "min_ns": median_ns,
            "median_ns": median_ns, "max_ns": median_ns, "gbps": 1.0, "verified": verified,
        }))
        .unwrap()
    }

    fn group(methods: &[Method]) -> Group<'_> {
        let cells = methods
            .iter()
            .map(|m| Cell {
                experiment: "calibrate",
                method: m,
                op: measured_op(Family::Copy),
                size: 4096,
                src: CacheState::Hot,
                dst: CacheState::Hot,
                src_off: 0,
                dst_off: 0,
                after: After::Nothing,
                reps: 1,
            })
            .collect();
        (cells, Family::Copy, 4096, true, Dst::Hot, Then::Nothing)
    }

    #[test]
    fn sort_medians_files_kernels_and_libc_apart_and_names_wrong_bytes() {
        let Some(sse2) = Method::kernel("sse2") else {
            return;
        };
        let Ok(libc) = Method::libc() else { return };
        let methods = [sse2, libc];
        let groups = [group(&methods)];
        let results = vec![vec![
            Some(record("sse2", 10.0, true)),
            Some(record("libc", 12.0, true)),
        ]];
        let (k, l) = sort_medians(results, &groups).unwrap();
        let key = (
            Family::Copy,
            KernelId::Sse2,
            4096,
            true,
            Dst::Hot,
            Then::Nothing,
        );
        assert_eq!(k.get(&key), Some(&10.0));
        assert_eq!(
            l.get(&(Family::Copy, 4096, true, Dst::Hot, Then::Nothing)),
            Some(&12.0)
        );
        let wrong = vec![vec![Some(record("sse2", 10.0, false)), None]];
        let e = sort_medians(wrong, &groups).unwrap_err().to_string();
        assert!(e.contains("sse2 copy"), "{e}");
    }
}
