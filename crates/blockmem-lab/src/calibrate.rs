//! `blockmem calibrate`: measure the kernels on this host and write the profile the
//! library loads (seed 000: HP-UX timed its copy loops at boot and patched in the
//! fastest; we time them once per host and keep the answer in a file).
//!
//! 1. Measure the effective LLC (pointer chase) and the clock, as the lab does.
//! 2. Time every candidate kernel per op at a ladder of sizes, with source and
//!    destination hot or cold (clean), through the lab's runner (bytes verified).
//! 3. Time the cache probe on cached and flushed lines.
//! 4. [`derive`](fn@derive) the profile from those medians — a pure function, unit-tested on
//!    synthetic measurements — and write it, with the evidence as comments.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use blockmem::kernel::{KernelId, Op};
use blockmem::profile::{self, Profile, Size};

use crate::info::profile_path;
use crate::lab::experiments::probe::probe_call_samples;
use crate::lab::method::Method;
use crate::lab::runner::{After, Cell};
use crate::lab::state::{read_lines, read_pages, CacheState, Hierarchy};
use crate::lab::timer::Timer;

/// Flags of `blockmem calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Fewer sizes and repetitions: under a minute.
    #[arg(long)]
    pub quick: bool,
    /// Where to write the profile (default: $BLOCKMEM_PROFILE, else
    /// $XDG_CACHE_HOME/blockmem/profile, else ~/.cache/blockmem/profile).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Print the profile instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// Effective LLC size to assume instead of measuring it (e.g. 32M).
    #[arg(long, value_name = "SIZE")]
    pub llc: Option<String>,
    /// Stop each call's clock at its last instruction, its stores possibly still
    /// buffered (as `blockmem lab --no-drain-stores`): a profile for programs that go
    /// on with work that does not store after their copies. By default every call is
    /// timed until its stores have drained, the cost a program that copies or stores
    /// again pays.
    #[arg(long = "no-drain-stores", action = clap::ArgAction::SetFalse)]
    pub drain_stores: bool,
    /// Time every call until its stores have drained: the default (the flag is kept
    /// for scripts written when it was not; the last of the two flags wins).
    #[arg(long = "drain-stores", overrides_with = "drain_stores")]
    pub drain_stores_default: bool,
}

/// Median time (ns) of one call, keyed by (kernel, op, size, src state, dst state).
pub type Measurements = BTreeMap<(KernelId, Op, usize, CacheState, CacheState), f64>;

/// The (src, dst) states calibration measures; for set/zero the source is ignored.
const COPY_STATES: [(CacheState, CacheState); 4] = [
    (CacheState::Hot, CacheState::Hot),
    (CacheState::Clean, CacheState::Clean),
    (CacheState::Hot, CacheState::Clean),
    (CacheState::Clean, CacheState::Hot),
];
const SET_STATES: [(CacheState, CacheState); 2] = [
    (CacheState::Hot, CacheState::Hot),
    (CacheState::Hot, CacheState::Clean),
];

/// One measurement pass: an op, its candidate kernels and the states to measure.
type Pass = (Op, Vec<KernelId>, &'static [(CacheState, CacheState)]);

/// Candidate kernels per role (those this CPU lacks are skipped).
const COPY_TEMPORAL: [KernelId; 4] = [
    KernelId::Avx2,
    KernelId::Avx512,
    KernelId::RepMovsb,
    KernelId::Sse2,
];
const COPY_STREAM: [KernelId; 3] = [KernelId::Avx2Nt, KernelId::Avx512Nt, KernelId::Avx2PfNt];
/// Kernels that only the cold roles (`copy_cold_src`, `copy_cold_dst`) consider: the
/// seed's block prefetch, and the copies that prefetch the destination for ownership
/// (measured here from 64 KiB to 4 MiB: 3-15% faster than glibc from a cold source,
/// where `avx512` is 7-11% slower; far slower on a small copy to a destination just
/// flushed, whose stores the store buffer would otherwise absorb).
const COPY_COLD_SRC: [KernelId; 3] = [KernelId::Avx2Pf, KernelId::Avx2Pw, KernelId::Avx512Pw];
const SET_TEMPORAL: [KernelId; 4] = [
    KernelId::Avx2,
    KernelId::Avx512,
    KernelId::RepStosb,
    KernelId::Sse2,
];
const SET_STREAM: [KernelId; 3] = [KernelId::Avx2Nt, KernelId::Avx512Nt, KernelId::Clzero];

/// A kernel must beat the incumbent by this factor to displace it (noise margin).
const MARGIN: f64 = 1.05;
/// The smallest size at which one kernel may serve every cache state (see
/// `copy_robust`) when calls are timed without draining their stores
/// (`--no-drain-stores`): the probes' size. Below it the store buffer absorbs a copy's
/// stores, and kernels that fetch the destination early lose 20-75% on a cold one, a
/// loss the caller does not see until it stores again.
const ROBUST_MIN: usize = 64 << 10;
/// The same when the stores are drained (`HostFacts::drain_stores`, the default): the
/// probes' own minimum. Timed that way `avx512_pw` is the best 4 KiB copy to a cold destination
/// (1.18-1.21x glibc, where `avx512` ran 0.91-1.10x), and the dispatcher runs a robust
/// range through one pointer like its fast path (before that segment existed, a range
/// from 4 KiB sent hot 4 KiB copies through the policy's path, at 0.69x glibc).
const ROBUST_MIN_DRAINED: usize = blockmem::policy::PROBE_MIN_BYTES;
/// Probing must promise at least this many times its own cost. The cost is counted as
/// two DRAM round trips, which overstates it: a cold probe fetches a line the copy needs
/// anyway, so what it really adds is the serialisation.
const PROBE_PAYBACK: f64 = 4.0;
/// The most a probe that finds its lines cached may add to a cached copy's time.
const PROBE_HOT_SHARE: f64 = 0.05;
/// Where no probe can tell (small calls), the share of calls assumed to find their
/// destination cold when weighing a `rep` kernel's loss on cached data against its
/// gain on cold data. A small share suffices: a cold call costs 20-40x a cached one at
/// a few KiB. Measured here at 4 KiB: `rep stosb` 2 ns slower than avx2 on a cached
/// destination (25 ns against 23), 430 ns faster on a cold one (458 against 889).
const REP_COLD_SHARE: f64 = 0.05;
/// The most a `rep` kernel may lose on cached data for its cold-data gain to open a
/// window (a program zeroing one hot buffer in a loop pays this).
const REP_HOT_LOSS_MAX: f64 = 1.15;

fn available(ids: &[KernelId], op: Op) -> Vec<KernelId> {
    ids.iter()
        .copied()
        .filter(|k| {
            k.kernel()
                .is_some_and(|e| e.is_available() && e.supports(op))
        })
        .collect()
}

fn geomean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for x in v {
        if x > 0.0 && x.is_finite() {
            s += x.ln();
            n += 1;
        }
    }
    (n > 0).then(|| (s / n as f64).exp())
}

/// What calibration measured besides kernel times.
#[derive(Clone, Debug)]
pub struct HostFacts {
    /// Effective LLC bytes.
    pub llc_effective: usize,
    /// Probe latency on lines in the LLC (not L1/L2), TSC cycles (median, 80th
    /// percentile).
    pub probe_hot_cycles: (f64, f64),
    /// Probe latency on flushed lines, TSC cycles (median, 20th percentile).
    pub probe_cold_cycles: (f64, f64),
    /// What a whole probe costs a call, ns (median): (block cached, block cold; see
    /// [`probe_call_samples`]).
    pub probe_call_ns: (f64, f64),
    /// TSC cycles per nanosecond.
    pub tsc_ghz: f64,
    /// The calls were timed until their stores drained (the default; false with
    /// `--no-drain-stores`).
    pub drain_stores: bool,
}

/// Why each key got its value (written as comments into the profile).
pub type Evidence = Vec<String>;

/// Derives the profile from the measurements (`m`: the call alone; `m_read`: the call
/// followed by a full read of the destination, for sizes past the LLC). Pure: no clock,
/// no hardware.
pub fn derive(
    m: &Measurements,
    m_read: &Measurements,
    facts: &HostFacts,
    base: Profile,
) -> (Profile, Evidence) {
    let mut p = base;
    let mut why = Vec::new();
    why.push(
        if facts.drain_stores {
            "timing: every call timed until its stores drained: the cost to a caller that stores, copies or fences next"
        } else {
            "timing: every call timed to its last instruction, its stores possibly still buffered (--no-drain-stores): the cost to a caller that goes on without storing"
        }
        .to_string(),
    );
    let sizes: Vec<usize> = {
        let mut s: Vec<usize> = m.keys().map(|k| k.2).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let t = |k: KernelId, op: Op, n: usize, s: CacheState, d: CacheState| {
        m.get(&(k, op, n, s, d)).copied()
    };
    let measured = |ids: &[KernelId], op: Op| -> Vec<KernelId> {
        ids.iter()
            .copied()
            .filter(|&k| m.keys().any(|key| key.0 == k && key.1 == op))
            .collect()
    };
    // Geometric mean of time relative to the best candidate, over the given cells.
    let pick = |cands: &[KernelId],
                op: Op,
                cells: &[(usize, CacheState, CacheState)]|
     -> Option<(KernelId, f64)> {
        cands
            .iter()
            .filter_map(|&k| {
                let rel = cells.iter().filter_map(|&(n, s, d)| {
                    let best = cands
                        .iter()
                        .filter_map(|&c| t(c, op, n, s, d))
                        .fold(f64::MAX, f64::min);
                    t(k, op, n, s, d).map(|x| x / best)
                });
                geomean(rel).map(|g| (k, g))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let in_cache = |n: usize| n <= facts.llc_effective / 2;
    p.llc_effective = facts.llc_effective;

    // Temporal copy, chosen on hot→hot cells. Below `probe_min` the policy cannot see
    // the state, so it needs a prior, and small copies in real programs are cache
    // resident (the fleetbench distributions are L1 working sets). Weighting the three
    // cold states equally instead picks `rep movsb` here, whose ~15 ns start-up makes a
    // cached 256 B copy 3-4x slower; cold copies are served by the cold-source kernel
    // and streaming above the probe size.
    let temporal = measured(&COPY_TEMPORAL, Op::Copy);
    let hot_cells: Vec<_> = sizes
        .iter()
        .filter(|&&n| in_cache(n))
        .map(|&n| (n, CacheState::Hot, CacheState::Hot))
        .collect();
    if let Some((k, g)) = pick(&temporal, Op::Copy, &hot_cells) {
        p.copy_temporal = k;
        why.push(format!(
            "copy_temporal: {} is within {:.0}% of the best temporal kernel on cached copies (hot→hot, sizes <= LLC/2)",
            k.name(),
            (g - 1.0) * 100.0
        ));
    }
    // rep movsb window: the measured sizes where it beats the temporal kernel on cached
    // copies.
    p.rep_movsb_min = 0;
    p.rep_movsb_max = 0;
    if p.copy_temporal != KernelId::RepMovsb && temporal.contains(&KernelId::RepMovsb) {
        // Below the probe size the state is unknown, so the window also starts where
        // rep movsb ties on cached copies and wins to cold destinations (glibc uses it
        // from 2 KiB on FSRM CPUs; a cold 4 KiB copy ran at 0.85x glibc's speed with
        // avx512).
        let cold = [
            (CacheState::Hot, CacheState::Clean),
            (CacheState::Clean, CacheState::Clean),
        ];
        let (wins, loses) = rep_wins_loses(m, Op::Copy, p.copy_temporal, KernelId::RepMovsb, &cold);
        if let Some((min, max)) = window(&sizes, wins, loses) {
            p.rep_movsb_min = min;
            p.rep_movsb_max = max;
            why.push(format!(
                "rep_movsb window: beats {} by >5% (on cached copies, to cold destinations while not >5% slower on cached ones, or in expected time with 1 call in 20 cold while at most 15% slower on cached ones), or is the safer choice for an unknown state (its worst state, cached or cold, loses less), from {}{}",
                p.copy_temporal.name(),
                Size(p.rep_movsb_min),
                window_end(p.rep_movsb_max)
            ));
        }
    }
    let temporal_time = |n: usize, s: CacheState, d: CacheState| {
        let k = if n >= p.rep_movsb_min && n < p.rep_movsb_max {
            KernelId::RepMovsb
        } else {
            p.copy_temporal
        };
        t(k, Op::Copy, n, s, d)
    };

    // Streaming copy: cold destinations from 64 KiB.
    let stream = measured(&COPY_STREAM, Op::Copy);
    let cold_cells: Vec<_> = sizes
        .iter()
        .filter(|&&n| n >= 64 << 10)
        .flat_map(|&n| {
            [
                (n, CacheState::Hot, CacheState::Clean),
                (n, CacheState::Clean, CacheState::Clean),
            ]
        })
        .collect();
    if let Some((k, _)) = pick(&stream, Op::Copy, &cold_cells) {
        p.copy_stream = k;
        why.push(format!("copy_stream: {} is the fastest streaming kernel to a cold destination (sizes >= 64 KiB)", k.name()));
    }
    // The smallest size from which streaming is faster than temporal stores at every
    // larger measured size, judged by the geometric mean over the given states (one
    // noisy cell should not move the threshold by a factor of 16).
    let crossover = |states: &[(CacheState, CacheState)]| -> Option<usize> {
        let beats = |n: usize| {
            let r = geomean(states.iter().filter_map(|&(s, d)| {
                Some(temporal_time(n, s, d)? / t(p.copy_stream, Op::Copy, n, s, d)?)
            }));
            r.is_some_and(|r| r > 1.0)
        };
        let mut from = None;
        for &n in sizes.iter().rev() {
            if beats(n) {
                from = Some(n);
            } else {
                break;
            }
        }
        from
    };
    match crossover(&[
        (CacheState::Hot, CacheState::Clean),
        (CacheState::Clean, CacheState::Clean),
    ]) {
        Some(n) => {
            p.stream_auto_cold_dst = n;
            why.push(format!(
                "stream_auto_cold_dst: {} beats {} to a cold destination from {} up",
                p.copy_stream.name(),
                p.copy_temporal.name(),
                Size(n)
            ));
        }
        None => {
            p.stream_auto_cold_dst = usize::MAX;
            why.push("stream_auto_cold_dst: streaming never beat temporal stores to a cold destination here".into());
        }
    }
    match crossover(&[(CacheState::Hot, CacheState::Hot)]) {
        Some(n) => {
            p.stream_auto = n;
            why.push(format!("stream_auto: even a just-touched block streams faster from {} (it no longer fits in cache)", Size(n)));
        }
        None => {
            p.stream_auto = facts.llc_effective;
            why.push(format!(
                "stream_auto: no hot crossover measured; the effective LLC, {}",
                Size(facts.llc_effective)
            ));
        }
    }
    p.stream_auto_cold_dst = p.stream_auto_cold_dst.min(p.stream_auto);
    // Temporal copies of blocks past the cache (from stream_auto up, when they are not
    // streamed: in the policy, a destination that probed cached). Judged on hot→hot
    // cells at those sizes, the copy alone and read back after, over every temporal
    // kernel including those that fetch ahead (here `avx512_pw` was 8% faster than
    // `rep movsb` hot→hot at 64 MiB, and the lab's 64 MiB hot→hot cells ran 0.96-1.06x
    // glibc with it, 0.84-0.96x with `rep movsb`). The incumbent is what the sizes
    // would run without this role: the rep movsb window if it reaches them, else the
    // temporal choice (avx512 here, which wins in cache and runs 10-40% behind avx2
    // at 64 MiB).
    let large_from = p.stream_auto.min(facts.llc_effective);
    p.copy_temporal_large = if large_from >= p.rep_movsb_min && large_from < p.rep_movsb_max {
        KernelId::RepMovsb
    } else {
        p.copy_temporal
    };
    let large_cands = measured(
        &[COPY_TEMPORAL.as_slice(), &COPY_COLD_SRC].concat(),
        Op::Copy,
    );
    let large_cells: Vec<(&Measurements, usize)> = [m, m_read]
        .into_iter()
        .flat_map(|table| {
            sizes
                .iter()
                .filter(|&&n| n >= large_from)
                .filter(|&&n| {
                    large_cands.iter().any(|&k| {
                        table.contains_key(&(k, Op::Copy, n, CacheState::Hot, CacheState::Hot))
                    })
                })
                .map(move |&n| (table, n))
        })
        .collect();
    // A kernel's time relative to the best candidate, geometric mean over the cells;
    // None if it misses one.
    let large_rel = |k: KernelId| -> Option<f64> {
        let hh = |table: &Measurements, k: KernelId, n: usize| {
            table
                .get(&(k, Op::Copy, n, CacheState::Hot, CacheState::Hot))
                .copied()
        };
        let rel: Option<Vec<f64>> = large_cells
            .iter()
            .map(|&(table, n)| {
                let best = large_cands
                    .iter()
                    .filter_map(|&c| hh(table, c, n))
                    .fold(f64::MAX, f64::min);
                Some(hh(table, k, n)? / best)
            })
            .collect();
        geomean(rel?.into_iter())
    };
    let best_large = large_cands
        .iter()
        .filter_map(|&k| Some((k, large_rel(k)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((k, g)) = best_large {
        let incumbent_k = p.copy_temporal_large;
        let incumbent = large_rel(incumbent_k);
        if incumbent.is_some_and(|i| g * MARGIN < i) {
            p.copy_temporal_large = k;
        }
        let read_too = if large_cells
            .iter()
            .any(|&(table, _)| std::ptr::eq(table, m_read))
        {
            ", alone and read after"
        } else {
            ""
        };
        why.push(format!(
            "copy_temporal_large: {} (on hot→hot copies from {}{read_too}: {} is within {:.0}% of the best, {} within {:.0}%)",
            p.copy_temporal_large.name(),
            Size(large_from),
            k.name(),
            (g - 1.0) * 100.0,
            incumbent_k.name(),
            (incumbent.unwrap_or(f64::NAN) - 1.0) * 100.0
        ));
    }
    p.stream_no_reuse = p.stream_auto_cold_dst.max(profile::MIN_STREAM_NO_REUSE);
    why.push(format!(
        "stream_no_reuse: as stream_auto_cold_dst (at least {})",
        Size(profile::MIN_STREAM_NO_REUSE)
    ));

    // Cold source: the kernel (block prefetch, rep movsb, …) that beats the temporal
    // choice when the source probes cold and the copy does not stream.
    p.copy_cold_src = p.copy_temporal;
    let cold_src: Vec<_> = sizes
        .iter()
        .filter(|&&n| n >= 16 << 10 && in_cache(n))
        .map(|&n| (n, CacheState::Clean, CacheState::Hot))
        .collect();
    let mut best_cold = (1.0, p.copy_temporal);
    for k in measured(
        &[COPY_COLD_SRC.as_slice(), &COPY_TEMPORAL].concat(),
        Op::Copy,
    ) {
        let g = geomean(
            cold_src
                .iter()
                .filter_map(|&(n, s, d)| Some(t(k, Op::Copy, n, s, d)? / temporal_time(n, s, d)?)),
        );
        if let Some(g) = g {
            why.push(format!(
                "copy_cold_src candidate {}: {:.0}% of {}'s time from a cold source",
                k.name(),
                g * 100.0,
                p.copy_temporal.name()
            ));
            if g * MARGIN < best_cold.0 {
                best_cold = (g, k);
            }
        }
    }
    p.copy_cold_src = best_cold.1;
    why.push(format!("copy_cold_src: {}", p.copy_cold_src.name()));
    // The source's probe: from the first size where the cold-source kernel gains,
    // on a cold source to a cached destination (a cold destination is not followed by
    // a source probe), PROBE_PAYBACK times what a probe of a cold block costs, and
    // where a probe of a cached block costs at most PROBE_HOT_SHARE of a cached copy.
    // In the lab a 64 KiB copy's source probe cost 500-900 ns for the 370 ns
    // `avx512_pw` gained over `rep movsb`; at 1 MiB it gained ~6 us.
    let (probe_hot_call, probe_cold_call) = facts.probe_call_ns;
    p.probe_src_min = usize::MAX;
    if p.copy_cold_src != p.copy_temporal {
        let (c, h) = (CacheState::Clean, CacheState::Hot);
        let pays = |n: usize| {
            let gain = temporal_time(n, c, h)
                .zip(t(p.copy_cold_src, Op::Copy, n, c, h))
                .map(|(te, k)| te - k);
            gain.is_some_and(|g| g >= PROBE_PAYBACK * probe_cold_call)
                && temporal_time(n, h, h).is_some_and(|te| probe_hot_call <= PROBE_HOT_SHARE * te)
        };
        let from = sizes
            .iter()
            .copied()
            .filter(|&n| n >= blockmem::policy::PROBE_MIN_BYTES)
            .find(|&n| pays(n));
        p.probe_src_min = from.unwrap_or(usize::MAX);
        why.push(format!(
            "probe_src_min: {}: a probe costs {probe_cold_call:.0} ns on a cold block (page walk, page mate and line from memory, fenced) and {probe_hot_call:.0} ns on a cached one; from here {} gains {PROBE_PAYBACK}x that on a cold source",
            from.map_or("never".to_string(), |n| Size(n).to_string()),
            p.copy_cold_src.name()
        ));
    }
    // Cold destination: judged over both source states, against what the policy would
    // run otherwise (the cold-source kernel for a cold source).
    let otherwise = |n: usize, s: CacheState, d: CacheState| match s {
        CacheState::Hot => temporal_time(n, s, d),
        _ => t(p.copy_cold_src, Op::Copy, n, s, d),
    };
    let rel = |k: KernelId| {
        geomean(
            sizes
                .iter()
                .filter(|&&n| n >= 16 << 10 && in_cache(n))
                .flat_map(|&n| {
                    [
                        (n, CacheState::Hot, CacheState::Clean),
                        (n, CacheState::Clean, CacheState::Clean),
                    ]
                })
                .filter_map(|(n, s, d)| Some(t(k, Op::Copy, n, s, d)? / otherwise(n, s, d)?)),
        )
    };
    // The incumbent is the better of the two kernels the policy would otherwise run;
    // another kernel must beat it by the margin.
    let movsb_window = p.rep_movsb_min < p.rep_movsb_max;
    let mut best_dst = [
        Some(p.copy_temporal),
        Some(p.copy_cold_src),
        movsb_window.then_some(KernelId::RepMovsb),
    ]
    .into_iter()
    .flatten()
    .filter_map(|k| Some((rel(k)?, k)))
    .min_by(|a, b| a.0.total_cmp(&b.0))
    .unwrap_or((1.0, p.copy_temporal));
    for k in measured(
        &[COPY_TEMPORAL.as_slice(), &COPY_COLD_SRC].concat(),
        Op::Copy,
    ) {
        if let Some(g) = rel(k).filter(|&g| g * MARGIN < best_dst.0) {
            best_dst = (g, k);
        }
    }
    p.copy_cold_dst = best_dst.1;
    why.push(format!(
        "copy_cold_dst: {} ({:.0}% of the otherwise chosen kernels' time to a cold destination, sizes 16 KiB..LLC/2)",
        p.copy_cold_dst.name(),
        best_dst.0 * 100.0
    ));
    // One kernel for every state over a range of sizes: where a kernel without probes
    // is as fast as the probing path (two timed loads, then the kernel each state gets)
    // on average over the measured states, and at most the margin slower in any of
    // them, at every measured size of the range. Measured here: `avx512_pw`
    // from 64 KiB, where `auto` probing (and choosing `rep movsb` for a cold
    // destination) ran at 0.955x glibc over the grid's 64 KiB cells and `avx512_pw`
    // alone at 1.05x.
    p.copy_robust_min = usize::MAX;
    p.copy_robust_max = usize::MAX;
    let robust_min = if facts.drain_stores {
        ROBUST_MIN_DRAINED
    } else {
        ROBUST_MIN
    };
    let robust = measured(
        &[COPY_TEMPORAL.as_slice(), &COPY_COLD_SRC].concat(),
        Op::Copy,
    );
    let probe_ns = |s: CacheState| match s {
        CacheState::Hot => probe_hot_call,
        _ => probe_cold_call,
    };
    let probing = |n: usize, s: CacheState, d: CacheState| -> Option<f64> {
        let dst_found = match d {
            CacheState::Hot => blockmem::policy::Probed::Cached,
            _ => blockmem::policy::Probed::Cold,
        };
        let src_probed = blockmem::policy::probes_source(&p, n, dst_found);
        let kernel = match (s, d) {
            (_, CacheState::Clean | CacheState::Dirty) => t(p.copy_cold_dst, Op::Copy, n, s, d),
            (CacheState::Clean | CacheState::Dirty, _) if src_probed => {
                t(p.copy_cold_src, Op::Copy, n, s, d)
            }
            _ => temporal_time(n, s, d),
        }?;
        Some(kernel + probe_ns(d) + if src_probed { probe_ns(s) } else { 0.0 })
    };
    // (geometric mean, worst) of the kernel's time over the probing path's.
    let against = |k: KernelId, n: usize| -> Option<(f64, f64)> {
        let r: Vec<f64> = COPY_STATES
            .iter()
            .map(|&(s, d)| Some(t(k, Op::Copy, n, s, d)? / probing(n, s, d)?))
            .collect::<Option<_>>()?;
        Some((
            geomean(r.iter().copied())?,
            r.iter().copied().fold(0.0, f64::max),
        ))
    };
    let worst = |k: KernelId, n: usize| -> Option<f64> {
        against(k, n).filter(|&(g, _)| g <= 1.0).map(|(_, w)| w)
    };
    let below_stream: Vec<usize> = sizes
        .iter()
        .copied()
        .filter(|&n| n >= robust_min && n < p.stream_auto)
        .collect();
    // Per kernel, its runs: the longest stretches of consecutive measured sizes where
    // it qualifies, each scored by its gain over the probing path (the sum over the
    // sizes of the log of its mean time ratio; negative = faster). The range is the
    // run that gains most, from its first size to the first measured size after it
    // (exclusive; none: to stream_auto). A run may end below stream_auto: here
    // `avx512_pw` matched the probes at 64 KiB and 1 MiB in every calibration but ran
    // 6-9% behind `rep movsb` on hot 8 MiB copies in some, and a range that had to reach
    // stream_auto then fell to `rep movsb`, which gained nothing (auto at 0.99x glibc
    // over the grid's 64 KiB and 1 MiB cells, against 1.04-1.06x with `avx512_pw`).
    let qualifies = |k: KernelId, n: usize| worst(k, n).is_some_and(|w| w <= MARGIN);
    // (gain, first size, end, kernel, geometric mean of the worst states, mean ratio)
    let mut runs: Vec<(f64, usize, usize, KernelId, f64, f64)> = Vec::new();
    for &k in &robust {
        let mut end_at = 0;
        for run in below_stream.chunk_by(|&a, &b| qualifies(k, a) == qualifies(k, b)) {
            end_at += run.len();
            if !qualifies(k, run[0]) {
                continue;
            }
            // Every size of the run qualifies, so `against` is defined at each.
            let r: Vec<(f64, f64)> = run.iter().filter_map(|&n| against(k, n)).collect();
            let gain: f64 = r.iter().map(|&(g, _)| g.ln()).sum();
            let worsts = geomean(r.iter().map(|&(_, w)| w)).unwrap_or(1.0);
            let end = below_stream.get(end_at).copied().unwrap_or(usize::MAX);
            let mean = (gain / run.len() as f64).exp();
            runs.push((gain, run[0], end, k, worsts, mean));
        }
    }
    let chosen = runs
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    match chosen {
        Some((_, n0, end, k, g, mean)) => {
            p.copy_robust_min = n0;
            p.copy_robust_max = end;
            why.push(format!(
                "copy_robust: {} from {} to {} wherever no probe is taken: without probing it is as fast as probing and then running each state's kernel, on average over the measured states, and at most {:.0}% slower in any, at every measured size in that range (its worst state at {:.0}% of the probing path's time, geometric mean over the sizes; on average over the states {:.0}% of it)",
                k.name(),
                Size(n0),
                if end == usize::MAX {
                    "stream_auto".to_string()
                } else {
                    Size(end).to_string()
                },
                (MARGIN - 1.0) * 100.0,
                g * 100.0,
                mean * 100.0
            ));
            p.copy_robust = k;
        }
        None => why.push(format!(
            "copy_robust_min: never; no kernel without probes matched the probing path in every state (within {:.0}%) at any measured size from {} to stream_auto",
            (MARGIN - 1.0) * 100.0,
            Size(robust_min)
        )),
    }
    // Reuse: seed 003 Fig. 3 has streaming pay again once the block exceeds the cache,
    // even when it is read right after. Test it: copy + read, past the LLC.
    let reuse_sizes: Vec<usize> = {
        let mut v: Vec<usize> = m_read.keys().map(|k| k.2).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    // With probing on, a destination that probes cached never streams, so only cold
    // destinations decide; without it, every state does.
    let will_probe = facts.probe_cold_cycles.1 > facts.probe_hot_cycles.1
        && p.stream_auto_cold_dst < p.stream_auto;
    let reuse_states: &[(CacheState, CacheState)] = if will_probe {
        &[
            (CacheState::Hot, CacheState::Clean),
            (CacheState::Clean, CacheState::Clean),
        ]
    } else {
        &COPY_STATES
    };
    let stream_pays_with_read = |n: usize| {
        let r = geomean(reuse_states.iter().filter_map(|&(s, d)| {
            Some(
                m_read.get(&(
                    if d == CacheState::Hot {
                        p.copy_temporal
                    } else {
                        p.copy_cold_dst
                    },
                    Op::Copy,
                    n,
                    s,
                    d,
                ))? / m_read.get(&(p.copy_stream, Op::Copy, n, s, d))?,
            )
        }));
        r.map(|r| (r > MARGIN, r))
    };
    p.stream_reuse = usize::MAX;
    let mut reuse_note =
        "stream_reuse: never (no copy-then-read measurement past the LLC of the kernels chosen)"
            .to_string();
    for &n in &reuse_sizes {
        if let Some((pays, r)) = stream_pays_with_read(n) {
            if pays && p.stream_reuse == usize::MAX {
                p.stream_reuse = n;
            }
            if !pays {
                p.stream_reuse = usize::MAX;
            }
            reuse_note = if p.stream_reuse == usize::MAX {
                format!("stream_reuse: never; copy + read of {} is {r:.2}x as fast with temporal stores as with {} (seed 003 Fig. 3's reversal past the cache did not hold here)", Size(n), p.copy_stream.name())
            } else {
                format!("stream_reuse: from {}; streaming + read is {r:.2}x as fast past the LLC (seed 003 Fig. 3)", Size(p.stream_reuse))
            };
        }
    }
    why.push(reuse_note);

    // Set and zero: the temporal kernel on cached destinations, for the same reason as
    // copies (rep stosb's start-up cost dominates the common small memset).
    let set_hot: Vec<_> = sizes
        .iter()
        .filter(|&&n| in_cache(n))
        .map(|&n| (n, CacheState::Hot, CacheState::Hot))
        .collect();
    if let Some((k, g)) = pick(&measured(&SET_TEMPORAL, Op::Set), Op::Set, &set_hot) {
        p.set_temporal = k;
        why.push(format!(
            "set_temporal: {} is within {:.0}% of the best on cached destinations",
            k.name(),
            (g - 1.0) * 100.0
        ));
    }
    // rep stosb window: the measured sizes where it beats the temporal set kernel on
    // cached destinations by the margin (glibc switches to it at 2 KiB on Intel).
    p.rep_stosb_min = 0;
    p.rep_stosb_max = 0;
    if p.set_temporal != KernelId::RepStosb
        && measured(&SET_TEMPORAL, Op::Set).contains(&KernelId::RepStosb)
    {
        // Below the probe size the destination's state is unknown: rep stosb also
        // starts where it ties on cached destinations and wins on cold ones (it writes
        // whole lines without reading them; glibc uses it from 2 KiB).
        let cold = [(CacheState::Hot, CacheState::Clean)];
        let (wins, loses) = rep_wins_loses(m, Op::Set, p.set_temporal, KernelId::RepStosb, &cold);
        if let Some((min, max)) = window(&sizes, wins, loses) {
            p.rep_stosb_min = min;
            p.rep_stosb_max = max;
            why.push(format!(
                "rep_stosb window: beats {} by >5% (on cached destinations, on cold ones while not >5% slower on cached ones, or in expected time with 1 call in 20 cold while at most 15% slower on cached ones), or is the safer choice for an unknown state (its worst state, cached or cold, loses less), from {}{}",
                p.set_temporal.name(),
                Size(p.rep_stosb_min),
                window_end(p.rep_stosb_max)
            ));
        }
    }
    let set_time = |n: usize, d: CacheState| {
        let k = if n >= p.rep_stosb_min && n < p.rep_stosb_max {
            KernelId::RepStosb
        } else {
            p.set_temporal
        };
        t(k, Op::Set, n, CacheState::Hot, d)
    };
    // Cold destination, temporal stores (Reuse, or Auto below the streaming size): the
    // kernel that beats the temporal choice by the margin on cold destinations at the
    // sizes the probe sees (16 KiB up) that fit in cache. `rep stosb` / `rep movsb`
    // can write whole lines without reading them first.
    let probed = |n: usize| n >= 16 << 10 && in_cache(n);
    p.set_cold_dst = p.set_temporal;
    // Judged on the set alone and, where measured, on the set followed by a read of
    // the destination (what `Reuse` promises): here `rep stosb` tied `avx512` on the
    // first and was 1.2-1.4x faster on the second.
    let set_read_time = |k: KernelId, n: usize| {
        m_read
            .get(&(k, Op::Set, n, CacheState::Hot, CacheState::Clean))
            .copied()
    };
    let set_read_base = |n: usize| {
        let k = if n >= p.rep_stosb_min && n < p.rep_stosb_max {
            KernelId::RepStosb
        } else {
            p.set_temporal
        };
        set_read_time(k, n)
    };
    let rel = |k: KernelId| {
        geomean(sizes.iter().filter(|&&n| probed(n)).flat_map(|&n| {
            [
                t(k, Op::Set, n, CacheState::Hot, CacheState::Clean)
                    .zip(set_time(n, CacheState::Clean))
                    .map(|(a, b)| a / b),
                set_read_time(k, n)
                    .zip(set_read_base(n))
                    .map(|(a, b)| a / b),
            ]
            .into_iter()
            .flatten()
        }))
    };
    // The incumbent is the better of the kernels the policy would otherwise run (the
    // temporal kernel, `rep stosb` inside its window); another must beat it by the
    // margin.
    let stosb_window = p.rep_stosb_min < p.rep_stosb_max;
    let mut best = [
        Some(p.set_temporal),
        stosb_window.then_some(KernelId::RepStosb),
    ]
    .into_iter()
    .flatten()
    .filter_map(|k| Some((rel(k)?, k)))
    .min_by(|a, b| a.0.total_cmp(&b.0))
    .unwrap_or((1.0, p.set_temporal));
    for k in measured(&SET_TEMPORAL, Op::Set) {
        if let Some(g) = rel(k).filter(|&g| g * MARGIN < best.0) {
            best = (g, k);
        }
    }
    p.set_cold_dst = best.1;
    why.push(format!(
        "set_cold_dst: {} ({:.0}% of the temporal choice's time to a cold destination, sizes 16 KiB..LLC/2)",
        p.set_cold_dst.name(),
        best.0 * 100.0
    ));
    let cold_dst: Vec<_> = sizes
        .iter()
        .filter(|&&n| n >= 64 << 10)
        .map(|&n| (n, CacheState::Hot, CacheState::Clean))
        .collect();
    for (op, field) in [(Op::Set, &mut p.set_stream), (Op::Zero, &mut p.zero_stream)] {
        if let Some((k, _)) = pick(&measured(&SET_STREAM, op), op, &cold_dst) {
            *field = k;
            why.push(format!("{}_stream: {}", op.name(), k.name()));
        }
    }

    // Probe: the threshold between the two latency populations, and the smallest size
    // where a correct choice gains several times the probe's cost.
    // The threshold must separate the LLC hits' 80th percentile from the flushed
    // lines' 20th (measured with the dispatcher's probe, TLB cold as for a block
    // touched long ago: see `measure_probe`).
    let (hot_med, hot_p80) = facts.probe_hot_cycles;
    let (cold_med, cold_p20) = facts.probe_cold_cycles;
    if cold_p20 > hot_p80 && p.stream_auto_cold_dst < p.stream_auto {
        p.probe_hit_max = ((hot_p80 + cold_p20) / 2.0) as u32;
        // A cold destination's probe decides alone (the source is not probed after it).
        let gain = |n: usize| {
            let cold = [
                (CacheState::Hot, CacheState::Clean),
                (CacheState::Clean, CacheState::Clean),
            ]
            .iter()
            .filter_map(|&(s, d)| {
                Some((temporal_time(n, s, d)? - t(p.copy_stream, Op::Copy, n, s, d)?).abs())
            })
            .fold(0.0, f64::max);
            let hot = t(p.copy_stream, Op::Copy, n, CacheState::Hot, CacheState::Hot)
                .zip(temporal_time(n, CacheState::Hot, CacheState::Hot))
                .map_or(0.0, |(st, te)| (st - te).abs());
            cold.max(hot)
        };
        // On a cached block the probe is pure cost (a page-mate load that hits and a
        // fenced timed load): at most PROBE_HOT_SHARE of the cached copy's time, the
        // source's probe included where it follows. A 16 KiB hot set takes ~300 ns
        // here, and probing it cost 15-20%.
        let cheap_when_hot = |n: usize| {
            let src = blockmem::policy::probes_source(&p, n, blockmem::policy::Probed::Cached);
            let probes = if src { 2.0 } else { 1.0 };
            temporal_time(n, CacheState::Hot, CacheState::Hot)
                .is_some_and(|t| probes * probe_hot_call <= PROBE_HOT_SHARE * t)
        };
        let from = sizes
            .iter()
            .copied()
            .filter(|&n| n >= p.stream_auto_cold_dst)
            .find(|&n| gain(n) >= PROBE_PAYBACK * probe_cold_call && cheap_when_hot(n));
        p.probe_min = from.unwrap_or(0);
        why.push(format!(
            "probe: lines in the LLC {hot_med:.0} cycles (p80 {hot_p80:.0}), flushed {cold_med:.0} (p20 {cold_p20:.0}): hit at <= {} cycles; a probe costs ~{probe_cold_call:.0} ns when the lines are cold, paid back {PROBE_PAYBACK}x, and ~{probe_hot_call:.0} ns when cached, under {:.0}% of a cached copy, from {}",
            p.probe_hit_max,
            PROBE_HOT_SHARE * 100.0,
            from.map_or("never".to_string(), |n| Size(n).to_string())
        ));
    } else {
        p.probe_min = 0;
        why.push(format!("probe: off (lines in the LLC: median {hot_med:.0}, p80 {hot_p80:.0} cycles; flushed: median {cold_med:.0}, p20 {cold_p20:.0}: they do not separate, or there is no state-dependent decision to make)"));
    }
    // Auto does not know whether the destination will be read soon. Where streaming a
    // cold destination wins alone but loses once it is read back (seed 003 Fig. 3:
    // here 0.67-0.82x libc at 64 KiB with the read, 1.3-1.7x without), Auto keeps
    // temporal stores (the cold-destination kernel, ~1x libc either way) and leaves
    // the gain to NoReuse: Auto streams a cold destination only from where streaming
    // pays even with the read.
    let reads_measured = m_read.keys().any(|k| k.1 == Op::Copy);
    if reads_measured && p.probe_min != 0 && p.stream_reuse > p.stream_auto_cold_dst {
        p.stream_auto_cold_dst = p.stream_reuse.min(p.stream_auto);
        why.push(format!(
            "stream_auto_cold_dst raised to {}: below it streaming a cold destination loses once the destination is read back (NoReuse keeps streaming from {})",
            Size(p.stream_auto_cold_dst),
            Size(p.stream_no_reuse)
        ));
    }
    (p, why)
}

/// Probe latencies (TSC cycles) of `samples` cached and `samples` flushed lines:
/// ((median, p80) cached, (median, p20) flushed).
///
/// "Cached" means in the last-level cache only, the slowest hit the policy must still
/// call cached: a region of the L2 plus 2 MiB is read twice and lines of its first
/// 2 MiB, which the L2 has since dropped, are probed. (Measured here with an 8 MiB
/// region instead, 15% of its lines were no longer in the LLC: in this VM the share of
/// the shared LLC that stays ours is smaller than the pointer chase suggests.)
/// A probe right after touching the line measures an L1 hit (~50 cycles here), and a
/// threshold set between that and DRAM called LLC hits (~150 cycles in this VM)
/// "cold": a hot 8 MiB block was then streamed, 2.7x slower than `rep stosb`.
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
            // and probing them afterwards left most of them reading at ~80 cycles
            // here (the same in C), not as cold lines. The page mate's load warms
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

/// The two tests a `rep` window is drawn with ([`window`]), for `rep` kernel `rep`
/// against the temporal kernel `temporal`: it *wins* at a size where it is faster than
/// the margin on cached data; or, not slower than the margin there, on the `cold`
/// states (geometric mean); or where its expected time is lower by the margin with
/// [`REP_COLD_SHARE`] of the calls cold (mean over `cold`) while it is at most
/// [`REP_HOT_LOSS_MAX`] slower on cached data; or where it is the *safer* choice: its
/// worst state (cached or `cold`) loses less to `temporal` than `temporal`'s worst
/// state loses to it, and that worst loss is beyond the margin. It *loses* where it was not measured, or is slower than
/// the margin on cached data without winning on expected time or safety.
///
/// The safety test is for the sizes below the probe size, where the policy cannot see
/// the state and one kernel serves every call. Here the expected-time test alone drew
/// the copy window from 8, 16 or 64 KiB in three calibrations of one machine, as the
/// noise in a few cold cells moved it; with `avx512` kept at 16 KiB the lab measured
/// 0.77-0.88x glibc's speed to cold destinations, against `rep movsb`'s 0.97-1.04x,
/// for at most 2% on cached ones.
fn rep_wins_loses<'a>(
    m: &'a Measurements,
    op: Op,
    temporal: KernelId,
    rep: KernelId,
    cold: &'a [(CacheState, CacheState)],
) -> (impl Fn(usize) -> bool + 'a, impl Fn(usize) -> bool + 'a) {
    let ratio = move |n: usize, s: CacheState, d: CacheState| {
        Some(m.get(&(temporal, op, n, s, d))? / m.get(&(rep, op, n, s, d))?)
    };
    let (h, c) = (CacheState::Hot, CacheState::Hot);
    // Expected time: cached with weight 1 - REP_COLD_SHARE, the cold states' mean with
    // REP_COLD_SHARE.
    let expected = move |k: KernelId, n: usize| {
        let hot = m.get(&(k, op, n, h, c))?;
        let colds: Vec<f64> = cold
            .iter()
            .map(|&(s, d)| m.get(&(k, op, n, s, d)).copied())
            .collect::<Option<_>>()?;
        let cold_mean = colds.iter().sum::<f64>() / colds.len().max(1) as f64;
        Some((1.0 - REP_COLD_SHARE) * hot + REP_COLD_SHARE * cold_mean)
    };
    let cheaper_expected = move |n: usize| {
        ratio(n, h, c).is_some_and(|r| r * REP_HOT_LOSS_MAX >= 1.0)
            && !cold.is_empty()
            && expected(temporal, n)
                .zip(expected(rep, n))
                .is_some_and(|(t, r)| t > r * MARGIN)
    };
    // Over the cached and the `cold` states: the largest and smallest `ratio` (None if
    // a state lacks either kernel). The largest is `temporal`'s worst loss to `rep`, the
    // inverse of the smallest `rep`'s worst loss to `temporal`.
    let extremes = move |n: usize| {
        std::iter::once((h, c))
            .chain(cold.iter().copied())
            .try_fold((0.0f64, f64::MAX), |(hi, lo), (s, d)| {
                let r = ratio(n, s, d)?;
                Some((hi.max(r), lo.min(r)))
            })
    };
    // No cap on the cached loss here: the test already asks that it be smaller than the
    // temporal kernel's worst loss. With the cap, one calibration measured `rep stosb`
    // 24% slower than `avx2` on a cached 4 KiB set (36 ns against 29; the lab: 5-7%)
    // and 2.7x faster on a cold one, kept `avx2` at 4 KiB, and the lab's `auto` zeroed
    // cold 4 KiB blocks at 0.40-0.50x glibc's speed.
    let safer = move |n: usize| {
        !cold.is_empty() && extremes(n).is_some_and(|(t, lo)| t > MARGIN && 1.0 / lo < t)
    };
    let loses = move |n: usize| {
        ratio(n, h, c).is_none_or(|r| r * MARGIN < 1.0) && !cheaper_expected(n) && !safer(n)
    };
    let wins = move |n: usize| {
        ratio(n, h, c).is_some_and(|r| r > MARGIN)
            || (!loses(n)
                && geomean(cold.iter().filter_map(|&(s, d)| ratio(n, s, d)))
                    .is_some_and(|r| r > MARGIN))
            || cheaper_expected(n)
            || safer(n)
    };
    (wins, loses)
}

/// A `rep` window over the ascending measured `sizes`: from a size where the `rep`
/// kernel wins by the margin to the first larger one where it loses by the margin
/// (exclusive; `usize::MAX` if it never does). Sizes within the margin either way keep
/// the window open: a 3% difference is noise here, and closing the window on it made
/// `rep stosb` flip on and off between neighbouring sizes.
///
/// The dispatcher has one window per op; where the measurements show several, the
/// last (largest sizes) is kept: a call's time grows with its size, so a win at 64 KiB
/// and up is worth far more than one at 2 KiB. A calibration that kept the first
/// once gave `rep stosb` 2–4 KiB, where it won by 8%, and left 64 KiB and up to a
/// loop it beat by 14% cached and 30% cold.
fn window(
    sizes: &[usize],
    wins: impl Fn(usize) -> bool,
    loses: impl Fn(usize) -> bool,
) -> Option<(usize, usize)> {
    let mut found = None;
    let mut i = 0;
    while let Some(k) = sizes[i..].iter().position(|&n| wins(n)) {
        let start = i + k;
        let end = sizes[start..]
            .iter()
            .position(|&n| loses(n))
            .map(|e| start + e);
        found = Some((sizes[start], end.map_or(usize::MAX, |e| sizes[e])));
        match end {
            Some(e) => i = e + 1,
            None => break,
        }
    }
    found
}

/// How a `rep` window's end reads in the evidence: `, to below 64MiB`, or that it has
/// none.
fn window_end(max: usize) -> String {
    if max == usize::MAX {
        ", with no upper end".into()
    } else {
        format!(", to below {}", Size(max))
    }
}

/// Runs `blockmem calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<()> {
    let start = Instant::now();
    let llc = args
        .llc
        .as_deref()
        .map(crate::lab::parse_size)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--llc")?;
    eprintln!("calibrate: measuring the clock and the cache hierarchy…");
    let timer = Timer::calibrate(Duration::from_millis(if args.quick { 100 } else { 300 }));
    let hier = Hierarchy::measure(&timer, llc);
    eprintln!(
        "calibrate: effective LLC {} ({})",
        Size(hier.llc_effective),
        hier.llc_source
    );
    let llc_eff = hier.llc_effective;
    let mut runner = crate::lab::timed_runner(hier, timer, args.drain_stores);
    // Hot cells time a mix of sizes around each size, as a program's calls come: the
    // thresholds must price the loop-exit mispredictions a repeated size never has.
    runner.size_mix = true;
    // Small sizes matter as much as large ones: `rep movsb`/`rep stosb` cost ~15 ns to
    // start, so kernels chosen on 4 KiB and up alone would make every 200-byte call
    // several times slower. 8 and 16 KiB because the rep window can only start at a
    // measured size: with 4 KiB then 64 KiB, `rep movsb` (which starts to win at 8 KiB
    // to cold destinations here) began at 64 KiB, and `auto` copied 8-32 KiB to a clean
    // destination at 0.71-0.84x glibc's speed (the same run: 0.96-1.03x from 8 KiB).
    let sizes: Vec<usize> = if args.quick {
        vec![
            256,
            1 << 10,
            2 << 10,
            4 << 10,
            8 << 10,
            16 << 10,
            64 << 10,
            1 << 20,
            8 << 20,
            64 << 20,
        ]
    } else {
        vec![
            256,
            512,
            1 << 10,
            2 << 10,
            4 << 10,
            8 << 10,
            16 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
            4 << 20,
            16 << 20,
            64 << 20,
        ]
    };
    let reps = |n: usize| match (args.quick, n) {
        (true, n) if n >= 8 << 20 => 3,
        (true, _) => 7,
        (false, n) if n >= 16 << 20 => 5,
        (false, _) => 15,
    };
    let plan: Vec<Pass> = vec![
        (
            Op::Copy,
            [
                available(&COPY_TEMPORAL, Op::Copy),
                available(&COPY_STREAM, Op::Copy),
                available(&COPY_COLD_SRC, Op::Copy),
            ]
            .concat(),
            &COPY_STATES,
        ),
        (
            Op::Set,
            [
                available(&SET_TEMPORAL, Op::Set),
                available(&SET_STREAM, Op::Set),
            ]
            .concat(),
            &SET_STATES,
        ),
        (Op::Zero, available(&SET_STREAM, Op::Zero), &SET_STATES[1..]),
    ];
    // Every kernel of one (op, size, states) is a group, measured interleaved per
    // repetition, and the whole calibration runs in passes over all groups: the
    // thresholds come from comparing kernels, so each comparison must see the same
    // machine (a neighbour's burst of load, seconds long, otherwise lands on one
    // kernel's samples and moves a threshold).
    let mut groups: Vec<Vec<Cell<'_>>> = Vec::new();
    // Per group: its kernels, and which measurement table its medians go to.
    let mut keys: Vec<(Vec<KernelId>, bool)> = Vec::new();
    let pairs = |ks: &[KernelId]| -> Vec<(KernelId, Method)> {
        ks.iter()
            .filter_map(|k| Method::kernel(k.name()).map(|m| (*k, m)))
            .collect()
    };
    let plan_methods: Vec<Vec<(KernelId, Method)>> =
        plan.iter().map(|(_, ks, _)| pairs(ks)).collect();
    // Every kernel that can take a copy role, the cold ones included: the Reuse test
    // compares the cold-destination kernel with the streaming one. Without its reads
    // (`avx512_pw` as `copy_cold_dst`) one calibration found no comparison, never
    // streamed for Reuse, and so kept Auto from streaming cold destinations below
    // 64 MiB (8 MiB copies at 1.0x glibc instead of 1.4x).
    let copy_pairs = pairs(
        &[
            available(&COPY_TEMPORAL, Op::Copy),
            available(&COPY_STREAM, Op::Copy),
            available(&COPY_COLD_SRC, Op::Copy),
        ]
        .concat(),
    );
    let set_pairs = pairs(&available(&SET_TEMPORAL, Op::Set));
    let cell = |method, op, n, s, d, after| Cell {
        experiment: "calibrate",
        method,
        op,
        size: n,
        src: s,
        dst: d,
        src_off: 0,
        dst_off: 0,
        after,
        reps: reps(n),
    };
    for ((op, _, states), kms) in plan.iter().zip(&plan_methods) {
        for &n in &sizes {
            for &(s, d) in *states {
                groups.push(
                    kms.iter()
                        .map(|(_, m)| cell(m, *op, n, s, d, After::Nothing))
                        .collect(),
                );
                keys.push((kms.iter().map(|(k, _)| *k).collect(), false));
            }
        }
    }
    // Copy then read the destination, past the LLC (for the Reuse threshold). From
    // 1 MiB: with probing, a cold destination below the LLC can already be worth
    // streaming when it is read right after (measured here: zeroing 8 MiB and reading
    // it back was 1.3x faster streamed).
    for &n in sizes.iter().filter(|&&n| n >= (1 << 20).min(llc_eff)) {
        for &(s, d) in &COPY_STATES {
            groups.push(
                copy_pairs
                    .iter()
                    .map(|(_, m)| cell(m, Op::Copy, n, s, d, After::ReadDst))
                    .collect(),
            );
            keys.push((copy_pairs.iter().map(|(k, _)| *k).collect(), true));
        }
    }
    // Set then read, to a cold destination, at the sizes the probe sees (for the
    // cold-destination set kernel).
    for &n in sizes.iter().filter(|&&n| n >= 16 << 10 && n <= llc_eff / 2) {
        groups.push(
            set_pairs
                .iter()
                .map(|(_, m)| {
                    cell(
                        m,
                        Op::Set,
                        n,
                        CacheState::Hot,
                        CacheState::Clean,
                        After::ReadDst,
                    )
                })
                .collect(),
        );
        keys.push((set_pairs.iter().map(|(k, _)| *k).collect(), true));
    }
    let total: usize = groups.iter().map(Vec::len).sum::<usize>() * crate::lab::experiments::ROUNDS;
    // A bar on a terminal; nothing in a log (the duration is printed at the end).
    let bar = crate::lab::progress::bar(total as u64, "calibrate", false);
    let results = runner.measure_rounds(&groups, crate::lab::experiments::ROUNDS, |k| {
        bar.inc(k as u64);
    });
    bar.finish_and_clear();
    let mut m = Measurements::new();
    let mut m_read = Measurements::new();
    let mut unverified = Vec::new();
    for ((recs, (kernels, read)), g) in results.into_iter().zip(&keys).zip(&groups) {
        for ((r, k), c) in recs.into_iter().zip(kernels).zip(g) {
            let Some(r) = r else { continue };
            if !r.verified {
                let then = if *read { " (then read)" } else { "" };
                unverified.push(format!("{} {} {}{then}", k.name(), c.op.name(), c.size));
            }
            let table = if *read { &mut m_read } else { &mut m };
            table.insert((*k, c.op, c.size, c.src, c.dst), r.summary.median);
        }
    }
    anyhow::ensure!(
        unverified.is_empty(),
        "kernels produced wrong bytes during calibration: {unverified:?}"
    );
    let (probe_hot, probe_cold) = measure_probe(
        if args.quick { 512 } else { 4096 },
        runner.states.hier.l2,
        llc_eff,
    );
    let samples = if args.quick { 15 } else { 41 };
    let mut call_ns = |state| {
        crate::lab::state::median(&probe_call_samples(
            &mut runner.states,
            &timer,
            state,
            samples,
        ))
    };
    let probe_call = (call_ns(CacheState::Hot), call_ns(CacheState::Clean));
    let facts = HostFacts {
        llc_effective: llc_eff,
        probe_hot_cycles: probe_hot,
        probe_cold_cycles: probe_cold,
        probe_call_ns: probe_call,
        tsc_ghz: timer.ticks_per_ns,
        drain_stores: args.drain_stores,
    };
    let base = Profile::from_caches(&blockmem::cpu::used_caches());
    let (profile, evidence) = derive(&m, &m_read, &facts, base);
    let elapsed = start.elapsed();

    let cpu = blockmem::cpu::detect();
    let mut header = vec![
        format!(
            "host: {} ({} cores online)",
            cpu.brand_str(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        format!(
            "written by `blockmem calibrate{}` {} in {:.1} s",
            [
                (args.quick, " --quick"),
                (!args.drain_stores, " --no-drain-stores")
            ]
            .iter()
            .filter(|f| f.0)
            .map(|f| f.1)
            .collect::<String>(),
            humantime_now(),
            elapsed.as_secs_f64()
        ),
        format!(
            "effective LLC {} (CPUID per-level leaf says {})",
            Size(llc_eff),
            Size(cpu.caches.used.llc.size)
        ),
    ];
    header.extend(evidence.iter().cloned());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut text = String::new();
    profile::render(&mut text, &profile, &header_refs).expect("render to a String");
    // The raw medians go to a sibling file: the profile itself stays small (the library
    // reads it into a fixed 16 KiB buffer).
    let mut raw = String::new();
    let _ = writeln!(
        raw,
        "# blockmem calibrate: measured medians (ns); kernel op size src dst [then read]"
    );
    for (read, map) in [("", &m), (" +read", &m_read)] {
        for ((k, op, n, s, d), ns) in map {
            let _ = writeln!(
                raw,
                "{:<11} {:<4} {:>8} {:<5} {:<5}{read:<6} {:>12.0}",
                k.name(),
                op.name(),
                Size(*n).to_string(),
                s.name(),
                d.name(),
                ns
            );
        }
    }
    if args.print {
        print!("{text}");
        print!("{raw}");
    } else {
        let path = args.out.clone().or_else(profile_path).context(
            "no --out given and neither BLOCKMEM_PROFILE, XDG_CACHE_HOME nor HOME is set",
        )?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        let raw_path = path.with_extension("measurements");
        std::fs::write(&raw_path, &raw)
            .with_context(|| format!("writing {}", raw_path.display()))?;
        for line in &evidence {
            println!("  {line}");
        }
        println!(
            "calibrate: wrote {} ({} bytes; raw medians in {}) in {:.1} s",
            path.display(),
            text.len(),
            raw_path.display(),
            elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn humantime_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("at unix time {secs}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use CacheState::{Clean, Hot};

    /// A synthetic host: temporal copies run at 30 B/ns hot and 5 B/ns to a cold
    /// destination, streaming at 8 B/ns from 64 KiB (1 B/ns below), so streaming wins
    /// from 64 KiB to a cold destination and from 8 MiB (past the 32 MiB LLC's half)
    /// even when "hot"; rep movsb wins only at 4 KiB.
    fn synthetic() -> (Measurements, HostFacts) {
        synthetic_with_reads().0
    }

    /// Plus copy-then-read times at 64 MiB where temporal stores win by 20%.
    fn synthetic_with_reads() -> ((Measurements, HostFacts), Measurements) {
        let (m, f) = synthetic_base();
        let mut r = Measurements::new();
        for (s, d) in COPY_STATES {
            r.insert((KernelId::Avx2, Op::Copy, 64 << 20, s, d), 100.0);
            r.insert((KernelId::Avx2Nt, Op::Copy, 64 << 20, s, d), 120.0);
        }
        ((m, f), r)
    }

    fn synthetic_base() -> (Measurements, HostFacts) {
        let mut m = Measurements::new();
        let sizes = [4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20];
        for &n in &sizes {
            let x = n as f64;
            for (s, d) in COPY_STATES {
                let cold_dst = d == Clean || n >= 8 << 20;
                let temporal = if cold_dst { x / 5.0 } else { x / 30.0 };
                let stream = if n < 64 << 10 { x } else { x / 8.0 };
                m.insert((KernelId::Avx2, Op::Copy, n, s, d), temporal);
                m.insert(
                    (KernelId::RepMovsb, Op::Copy, n, s, d),
                    if n == 4 << 10 {
                        temporal * 0.8
                    } else {
                        temporal * 1.2
                    },
                );
                m.insert((KernelId::Avx2Nt, Op::Copy, n, s, d), stream);
                m.insert(
                    (KernelId::Avx2Pf, Op::Copy, n, s, d),
                    temporal * if s == Clean { 0.8 } else { 1.3 },
                );
            }
            for (s, d) in SET_STATES {
                m.insert((KernelId::Avx2, Op::Set, n, s, d), x / 40.0);
                m.insert((KernelId::RepStosb, Op::Set, n, s, d), x / 50.0);
                m.insert(
                    (KernelId::Avx2Nt, Op::Set, n, s, d),
                    if d == Hot { x } else { x / 20.0 },
                );
            }
            m.insert((KernelId::Avx2Nt, Op::Zero, n, Hot, Clean), x / 20.0);
        }
        let facts = HostFacts {
            llc_effective: 32 << 20,
            probe_hot_cycles: (40.0, 60.0),
            probe_cold_cycles: (400.0, 300.0),
            probe_call_ns: (20.0, 200.0),
            tsc_ghz: 2.0,
            drain_stores: false,
        };
        (m, facts)
    }

    #[test]
    fn derives_every_key_from_synthetic_measurements() {
        let (m, mut facts) = synthetic();
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.copy_temporal, KernelId::Avx2);
        assert!(why[0].contains("--no-drain-stores"), "{why:#?}");
        // The timing mode is stated in the evidence and changes one rule: drained, the
        // robust range may start at 4 KiB (here `rep movsb`, the fastest 4 KiB copy in
        // every state, takes 4..64 KiB); undrained it starts at 64 KiB at the earliest.
        assert_eq!(
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max),
            (KernelId::Avx2, 64 << 10, 1 << 20),
            "{why:#?}"
        );
        facts.drain_stores = true;
        let (drained, why_drained) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(
            (
                drained.copy_robust,
                drained.copy_robust_min,
                drained.copy_robust_max
            ),
            (KernelId::RepMovsb, 4 << 10, 64 << 10),
            "{why_drained:#?}"
        );
        let mut same = drained;
        (same.copy_robust, same.copy_robust_min, same.copy_robust_max) =
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max);
        assert_eq!(same, p);
        assert!(
            why_drained[0].starts_with("timing: every call timed until its stores drained"),
            "{why_drained:#?}"
        );
        assert_eq!(
            (p.rep_movsb_min, p.rep_movsb_max),
            (4 << 10, 64 << 10),
            "{why:#?}"
        );
        assert_eq!(p.copy_stream, KernelId::Avx2Nt);
        assert_eq!(p.stream_auto_cold_dst, 64 << 10, "{why:#?}");
        assert_eq!(p.stream_auto, 8 << 20, "{why:#?}");
        assert_eq!(p.stream_no_reuse, 64 << 10);
        assert_eq!(
            p.stream_reuse,
            usize::MAX,
            "no read-after measurement: never stream for Reuse"
        );
        assert_eq!(p.copy_cold_src, KernelId::Avx2Pf);
        assert_eq!(p.copy_temporal_large, KernelId::Avx2, "{why:#?}");
        assert_eq!(p.set_temporal, KernelId::RepStosb);
        assert_eq!(
            (p.rep_stosb_min, p.rep_stosb_max),
            (0, 0),
            "set_temporal is rep stosb"
        );
        assert_eq!(p.set_cold_dst, KernelId::RepStosb);
        // To a cold destination: rep movsb is 1.2x avx2 (hot source) and 1.5x avx2_pf
        // (cold source); avx2_pf is 0.8x avx2 from a cold source and 1.3x from a hot
        // one: the geometric mean of avx2 (1, 1.25) beats avx2_pf's (1.3, 1).
        assert_eq!(p.copy_cold_dst, KernelId::Avx2, "{why:#?}");
        assert_eq!(p.zero_stream, KernelId::Avx2Nt);
        assert_eq!(p.probe_hit_max, 180);
        assert!(
            p.probe_min >= p.stream_auto_cold_dst && p.probe_min != 0,
            "{why:#?}"
        );
        assert_eq!(p.llc_effective, 32 << 20);
    }

    #[test]
    fn large_copies_get_their_own_temporal_kernel() {
        let (mut m, facts) = synthetic();
        // avx512 wins in cache by 20% and loses past 8 MiB by 30%.
        let mut extra = Vec::new();
        for (&(k, op, n, s, d), &v) in m.iter() {
            if (k, op) == (KernelId::Avx2, Op::Copy) {
                let f = if n >= 8 << 20 { 1.3 } else { 0.8 };
                extra.push(((KernelId::Avx512, op, n, s, d), v * f));
            }
        }
        m.extend(extra);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.copy_temporal, KernelId::Avx512, "{why:#?}");
        assert_eq!(p.copy_temporal_large, KernelId::Avx2, "{why:#?}");
    }

    #[test]
    fn a_kernel_that_fetches_ahead_may_take_the_large_temporal_copies() {
        // avx2_pw: 10% slower than avx2 in cache, 10% faster hot→hot past 8 MiB alone
        // and 5% faster read back after; the cold roles keep their own rules.
        let ((mut m, facts), mut r) = synthetic_with_reads();
        let mut extra = Vec::new();
        for (&(k, op, n, s, d), &v) in m.iter() {
            if (k, op) == (KernelId::Avx2, Op::Copy) {
                let f = if n >= 8 << 20 && (s, d) == (Hot, Hot) {
                    0.9
                } else {
                    1.1
                };
                extra.push(((KernelId::Avx2Pw, op, n, s, d), v * f));
            }
        }
        m.extend(extra);
        for (s, d) in COPY_STATES {
            let f = if (s, d) == (Hot, Hot) { 0.95 } else { 1.1 };
            r.insert((KernelId::Avx2Pw, Op::Copy, 64 << 20, s, d), 100.0 * f);
        }
        let (p, why) = derive(&m, &r, &facts, Profile::FALLBACK);
        assert_eq!(p.copy_temporal, KernelId::Avx2, "{why:#?}");
        assert_eq!(p.copy_temporal_large, KernelId::Avx2Pw, "{why:#?}");
        assert!(
            why.iter()
                .any(|w| w.starts_with("copy_temporal_large: avx2_pw")
                    && w.contains("alone and read after")),
            "{why:#?}"
        );
        // Read back after, it loses by 20%: the 10% it gains alone is not enough.
        for (s, d) in COPY_STATES {
            r.insert((KernelId::Avx2Pw, Op::Copy, 64 << 20, s, d), 120.0);
        }
        let (p, why) = derive(&m, &r, &facts, Profile::FALLBACK);
        assert_eq!(p.copy_temporal_large, KernelId::Avx2, "{why:#?}");
    }

    #[test]
    fn a_robust_kernel_replaces_the_probes_where_it_matches_them_in_every_state() {
        let (mut m, mut facts) = synthetic();
        // No kernel of the synthetic host is near the best in every state (avx2_pf
        // loses 30% from a hot source, avx2 20% from a cold one) where the source's
        // probe pays from 64 KiB (a cold probe at 100 ns: avx2_pf gains 437 ns there).
        facts.probe_call_ns = (20.0, 100.0);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.probe_src_min, 64 << 10, "{why:#?}");
        assert_eq!(p.copy_robust_min, usize::MAX, "{why:#?}");
        // At 200 ns the source's probe pays only from 1 MiB; below it the probing path
        // runs avx2 for a cached destination, which is then the robust kernel.
        facts.probe_call_ns = (20.0, 200.0);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.probe_src_min, 1 << 20, "{why:#?}");
        assert_eq!(
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max),
            (KernelId::Avx2, 64 << 10, 1 << 20),
            "{why:#?}"
        );
        // A kernel 2% slower than avx2 from a hot source and as fast as avx2_pf from a
        // cold one. With the synthetic host's cheap probes (20 ns cached, 200 ns cold)
        // the probing path, which runs each state's fastest kernel, is ahead of it on
        // average from 1 MiB; at 64 KiB the probes cost more than its 2%: a range from
        // 64 KiB to 1 MiB.
        let mut extra = Vec::new();
        for (&(k, op, n, s, d), &v) in m.iter() {
            if (k, op) == (KernelId::Avx2, Op::Copy) {
                let f = if s == Clean { 0.8 } else { 1.02 };
                extra.push(((KernelId::Avx512Pw, op, n, s, d), v * f));
            }
        }
        m.extend(extra);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max),
            (KernelId::Avx512Pw, 64 << 10, 1 << 20),
            "{why:#?}"
        );
        // With probes this costly (2 µs cached, 20 µs cold) no probing pays below
        // stream_auto: every kernel without probes beats the probing path from 64 KiB
        // (the smallest size one kernel may serve every state), and avx512_pw, as fast
        // as avx2_pf from a cold source, by the most.
        facts.probe_call_ns = (2000.0, 20000.0);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max),
            (KernelId::Avx512Pw, 64 << 10, usize::MAX),
            "{why:#?}"
        );
        // A kernel at most 5% behind in every state is still required: avx512_pw 30%
        // slower on cached data at 1 MiB (more than the probes cost there) may serve
        // 64 KiB only. Where the source's probe (20 us) is not taken (below 8 MiB), the
        // probing path runs avx2 for a cold source, and avx512_pw's 64 KiB alone (42% of
        // the path's time there) gains more than avx2 over both sizes.
        let k = (KernelId::Avx512Pw, Op::Copy, 1 << 20, Hot, Hot);
        m.insert(k, m[&k] * 1.3);
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.probe_src_min, 8 << 20, "{why:#?}");
        assert_eq!(
            (p.copy_robust, p.copy_robust_min, p.copy_robust_max),
            (KernelId::Avx512Pw, 64 << 10, 1 << 20),
            "{why:#?}"
        );
    }

    #[test]
    fn a_rep_window_stays_open_through_ties() {
        let sizes = [1, 2, 4, 8, 16, 32];
        // wins at 2, ties at 4 and 8, wins at 16, loses at 32.
        let w = |n: usize| n == 2 || n == 16;
        let l = |n: usize| n == 32;
        assert_eq!(window(&sizes, w, l), Some((2, 32)));
        assert_eq!(window(&sizes, w, |_| false), Some((2, usize::MAX)));
        assert_eq!(window(&sizes, |_| false, l), None);
        // A loss before the first win does not matter.
        assert_eq!(
            window(&sizes, |n| n == 8, |n| n == 4),
            Some((8, usize::MAX))
        );
        // Two windows: the one at the larger sizes is kept.
        let w2 = |n: usize| n == 2 || n == 16;
        assert_eq!(window(&sizes, w2, |n| n == 4), Some((16, usize::MAX)));
        assert_eq!(window(&sizes, w2, |n| n == 4 || n == 32), Some((16, 32)));
        // A win on the very last size after a loss opens a window there.
        assert_eq!(
            window(&sizes, |n| n == 2 || n == 32, |n| n == 8),
            Some((32, usize::MAX))
        );
        // A later loss with no later win leaves the earlier window alone.
        assert_eq!(
            window(&sizes, |n| n == 2, |n| n == 8 || n == 32),
            Some((2, 8))
        );
    }

    #[test]
    fn a_rep_window_opens_on_expected_time_when_cold_calls_gain_far_more() {
        // Per size: (avx2 hot, rep hot, avx2 cold, rep cold), ns.
        let cells = [
            (1024, 7.0, 16.0, 450.0, 315.0),     // rep 2.3x slower cached: loses
            (2048, 12.0, 13.5, 490.0, 370.0),    // 12% slower cached, 25% faster cold: wins
            (4096, 23.0, 25.0, 889.0, 458.0),    // this host's 4 KiB set: wins
            (8192, 40.0, 49.0, 1500.0, 700.0),   // 22% slower cached, 2.1x faster cold: safer
            (16384, 95.0, 95.0, 2356.0, 1637.0), // tie cached, faster cold: wins
            (32768, 180.0, 190.0, 4000.0, 3990.0), // 5.5% slower cached, no cold gain
        ];
        let mut m = Measurements::new();
        for &(n, th, rh, tc, rc) in &cells {
            m.insert((KernelId::Avx2, Op::Set, n, Hot, Hot), th);
            m.insert((KernelId::RepStosb, Op::Set, n, Hot, Hot), rh);
            m.insert((KernelId::Avx2, Op::Set, n, Hot, Clean), tc);
            m.insert((KernelId::RepStosb, Op::Set, n, Hot, Clean), rc);
        }
        let cold = [(Hot, Clean)];
        let (wins, loses) = rep_wins_loses(&m, Op::Set, KernelId::Avx2, KernelId::RepStosb, &cold);
        let got: Vec<(usize, bool, bool)> =
            cells.iter().map(|c| (c.0, wins(c.0), loses(c.0))).collect();
        assert_eq!(
            got,
            [
                (1024, false, true),
                (2048, true, false),
                (4096, true, false),
                (8192, true, false),
                (16384, true, false),
                (32768, false, true),
            ]
        );
        // Without cold states to weigh, only the cached comparison counts.
        let (wins, loses) = rep_wins_loses(&m, Op::Set, KernelId::Avx2, KernelId::RepStosb, &[]);
        assert!(!wins(4096) && loses(4096) && !loses(16384));
    }

    #[test]
    fn a_rep_window_opens_where_rep_is_the_safer_choice() {
        // This host's quick calibrations, copy: per size (avx512, rep movsb) times for
        // hot→hot, hot→clean, clean→clean, ns.
        let cells = [
            // rep 11% slower cached, 26% slower hot→clean, 7% faster cold: avx512's
            // worst (7%) is the smaller loss.
            (4096, [(28.0, 31.0), (117.0, 148.0), (643.0, 602.0)]),
            // rep 16% slower cached (size-mixed), 40% faster clean→clean: past the
            // expected-time test's cap, but the safer choice (16% against 40%).
            (6144, [(25.0, 29.0), (109.0, 103.0), (559.0, 400.0)]),
            // rep 11% slower cached, 16-19% faster cold; expected time is a tie.
            (8192, [(54.0, 60.0), (407.0, 342.0), (1169.0, 1003.0)]),
            // rep 8.5% slower cached, 24% faster hot→clean: one of the noisy cells
            // that once started the window at 64 KiB.
            (16384, [(117.0, 127.0), (1711.0, 1379.0), (2851.0, 2655.0)]),
            // rep 5.5% slower cached, no cold gain beyond the margin: avx512.
            (32768, [(180.0, 190.0), (4000.0, 3900.0), (8000.0, 7900.0)]),
        ];
        let states = [(Hot, Hot), (Hot, Clean), (Clean, Clean)];
        let mut m = Measurements::new();
        for &(n, times) in &cells {
            for (&(s, d), &(t, r)) in states.iter().zip(&times) {
                m.insert((KernelId::Avx512, Op::Copy, n, s, d), t);
                m.insert((KernelId::RepMovsb, Op::Copy, n, s, d), r);
            }
        }
        let cold = [(Hot, Clean), (Clean, Clean)];
        let (wins, loses) =
            rep_wins_loses(&m, Op::Copy, KernelId::Avx512, KernelId::RepMovsb, &cold);
        let got: Vec<(usize, bool, bool)> =
            cells.iter().map(|c| (c.0, wins(c.0), loses(c.0))).collect();
        assert_eq!(
            got,
            [
                (4096, false, true),
                (6144, true, false),
                (8192, true, false),
                (16384, true, false),
                (32768, false, true),
            ]
        );
        let sizes: Vec<usize> = cells.iter().map(|c| c.0).collect();
        assert_eq!(window(&sizes, &wins, &loses), Some((6144, 32768)));
        // Without cold states the safety test has nothing to weigh.
        let (wins, _) = rep_wins_loses(&m, Op::Copy, KernelId::Avx512, KernelId::RepMovsb, &[]);
        assert!(!wins(8192) && !wins(16384));
    }

    #[test]
    fn cold_destination_kernels_and_the_rep_stosb_window() {
        let (mut m, facts) = synthetic();
        // rep movsb writes cold destinations at 0.7x avx2's time from either source;
        // rep stosb loses on cached destinations (by 33%) except 64 KiB..1 MiB, and
        // wins on cold ones by less than that (25%): not the safer choice.
        for ((k, op, n, s, d), v) in m.iter_mut() {
            let x = *n as f64;
            match (k, op) {
                (KernelId::RepMovsb, Op::Copy) if *d == Clean => {
                    *v = if *s == Clean {
                        x / 5.0 * 0.8 * 0.7
                    } else {
                        x / 5.0 * 0.7
                    };
                }
                (KernelId::RepStosb, Op::Set) if *d == Hot => {
                    let win = (64 << 10..1 << 20).contains(n);
                    *v = if win { x / 50.0 } else { x / 30.0 };
                }
                (KernelId::RepStosb, Op::Set) => *v = x / 50.0,
                _ => {}
            }
        }
        let (p, why) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.set_temporal, KernelId::Avx2, "{why:#?}");
        assert_eq!(
            (p.rep_stosb_min, p.rep_stosb_max),
            (64 << 10, 1 << 20),
            "{why:#?}"
        );
        assert_eq!(p.set_cold_dst, KernelId::RepStosb, "{why:#?}");
        assert_eq!(p.copy_cold_dst, KernelId::RepMovsb, "{why:#?}");
        // A kernel within the margin does not displace the incumbent.
        for ((k, op, _, _, d), v) in m.iter_mut() {
            if (*k, *op, *d) == (KernelId::RepStosb, Op::Set, Clean) {
                *v *= 100.0;
            }
        }
        let (p, _) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.set_cold_dst, KernelId::Avx2);
    }

    #[test]
    fn reuse_streams_only_where_copy_plus_read_is_faster() {
        let ((m, facts), mut reads) = synthetic_with_reads();
        let (p, _) = derive(&m, &reads, &facts, Profile::FALLBACK);
        assert_eq!(p.stream_reuse, usize::MAX, "temporal + read won");
        // Then Auto streams a cold destination only where even a hot block would.
        assert_eq!(p.stream_auto_cold_dst, p.stream_auto);
        assert_eq!(p.stream_no_reuse, 64 << 10, "NoReuse keeps streaming early");
        for v in reads
            .iter_mut()
            .filter(|(k, _)| k.0 == KernelId::Avx2Nt)
            .map(|(_, v)| v)
        {
            *v = 80.0;
        }
        let (p, _) = derive(&m, &reads, &facts, Profile::FALLBACK);
        assert_eq!(p.stream_reuse, 64 << 20, "streaming + read won");
        assert_eq!(p.stream_auto_cold_dst, p.stream_auto.min(64 << 20));
    }

    #[test]
    fn probing_turns_off_when_latencies_overlap() {
        let (m, mut facts) = synthetic();
        facts.probe_cold_cycles = (70.0, 50.0);
        let (p, _) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.probe_min, 0);
    }

    #[test]
    fn no_streaming_win_means_never_stream_on_cold_dst() {
        let (mut m, facts) = synthetic();
        for ((k, op, n, _, _), v) in m.iter_mut() {
            if *k == KernelId::Avx2Nt && *op == Op::Copy {
                *v = *n as f64; // streaming always slow
            }
        }
        let (p, _) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        assert_eq!(p.stream_auto_cold_dst, p.stream_auto);
        assert_eq!(p.stream_auto, 32 << 20, "falls back to the effective LLC");
    }

    #[test]
    fn derived_profile_round_trips_through_the_file_format() {
        let (m, facts) = synthetic();
        let (p, _) = derive(&m, &Measurements::new(), &facts, Profile::FALLBACK);
        let mut text = String::new();
        profile::render(&mut text, &p, &["test"]).unwrap();
        let (q, _) = profile::parse(text.as_bytes(), Profile::FALLBACK).unwrap();
        assert_eq!(p, q);
    }
}
