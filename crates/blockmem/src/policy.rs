//! The policy: a pure function from what is known about a call to the kernel that runs
//! it. No hardware access and no global state: it is unit-tested over synthetic
//! profiles, probe results and feature sets.
//!
//! The rules, in order:
//!
//! 1. Overlapping moves never stream (DESIGN.md rule): temporal kernels only.
//! 2. Whether to stream (non-temporal stores, or `clzero`) is a size threshold chosen
//!    by the hint and the destination probe:
//!    * destination probed cached (any hint) — never: streaming would first evict
//!      the lines that temporal stores update in place, and lines already cached
//!      pollute nothing (seed 003 Fig. 4 chooses from state *and* reuse);
//!    * `Reuse` — keep the destination cached: stream only from
//!      [`Profile::stream_reuse`] (the block cannot stay cached anyway);
//!    * `NoReuse` — stream from [`Profile::stream_no_reuse`];
//!    * `Auto`, destination probed cold — from [`Profile::stream_auto_cold_dst`]: the
//!      lines must come from memory anyway, so skipping the read-for-ownership wins
//!      (seed 003 Fig. 2: up to 75%);
//!    * `Auto`, not probed — from [`Profile::stream_auto`], where even a just-touched
//!      block no longer fits in the cache with its source.
//! 3. Streaming uses the profile's streaming kernel for the op. Temporal copies from
//!    [`Profile::copy_robust_min`] to [`Profile::copy_robust_max`] (below
//!    `stream_auto`) use the robust kernel unless a probe found the destination cold
//!    or probed the source too (calibration sets that range where one kernel is near
//!    the best in every state, so a probe would only cost). Elsewhere they use the
//!    cold-destination
//!    kernel when the destination probed cold (`rep movsb` here: its fast-string
//!    stores skip the read-for-ownership of whole lines), else the cold-source kernel
//!    (`avx512_pw` here) when the source probed cold, else from
//!    [`Profile::stream_auto`] up the large-block kernel
//!    ([`Profile::copy_temporal_large`], which calibration judges against `rep movsb`
//!    there), else `rep movsb` inside its calibrated window, else the temporal kernel;
//!    sets and zeroes likewise
//!    with the cold-destination set kernel, the `rep stosb` window and the temporal set
//!    kernel.
//! 4. A kernel the CPU cannot run (or that lacks the op) is replaced by the best one it
//!    can: AVX2, then SSE2, then portable.

use crate::cpu::Features;
use crate::kernel::{KernelId, Op};
use crate::profile::Profile;
use crate::Hint;

/// The streaming thresholds of a profile, for callers that only adjust those (see
/// [`crate::dispatch::thresholds`]); the full set of tunables is [`Profile`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Thresholds {
    /// `Auto`, nothing probed: stream at and above this size.
    pub stream_auto: usize,
    /// `NoReuse`: stream at and above this size.
    pub stream_no_reuse: usize,
    /// `Reuse`: stream only at and above this size.
    pub stream_reuse: usize,
}

/// What a probe of a region's line (the middle one; see `dispatch`) found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Probed {
    /// Not probed (small call, hint given, probing disabled or unsupported).
    Unknown,
    /// The line was in cache.
    Cached,
    /// The line came from memory.
    Cold,
}

/// Probe results for a call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Probes {
    /// The source (copy and move only).
    pub src: Probed,
    /// The destination.
    pub dst: Probed,
}

impl Probes {
    /// Nothing probed.
    pub const NONE: Probes = Probes {
        src: Probed::Unknown,
        dst: Probed::Unknown,
    };
}

/// Decides the kernel for one call above the inline ladder.
///
/// `overlap` is true only for a move whose ranges share bytes.
pub fn decide(
    op: Op,
    n: usize,
    hint: Hint,
    overlap: bool,
    probes: Probes,
    p: &Profile,
    f: Features,
) -> KernelId {
    let stream_from = match hint {
        // The destination is in cache: streaming stores would first evict the lines
        // that temporal stores update in place, and lines already cached pollute
        // nothing. Measured here: zeroing a 64 MiB block that the (shared, 300 MiB)
        // LLC still held took 2.6 ms with `rep stosb` and 5.5 ms streamed.
        _ if probes.dst == Probed::Cached => usize::MAX,
        Hint::Reuse => p.stream_reuse,
        Hint::NoReuse => p.stream_no_reuse,
        Hint::Auto if probes.dst == Probed::Cold => p.stream_auto_cold_dst,
        Hint::Auto => p.stream_auto,
    };
    if !overlap && n >= stream_from {
        let k = match op {
            Op::Copy | Op::Move => p.copy_stream,
            Op::Set => p.set_stream,
            Op::Zero => p.zero_stream,
        };
        if usable(k, op, f) {
            return k;
        }
        if usable(KernelId::Avx2Nt, op, f) {
            return KernelId::Avx2Nt;
        }
    }
    let k = match op {
        // The robust kernel stands in for probes that were not taken. Where the call
        // probed anyway (to decide streaming: NoReuse from its streaming size, Auto
        // from the cold-destination one), the states found pick the kernel: a cold
        // destination its own; a cached one the robust kernel still, unless the
        // source was probed too (below `probe_src_min` it is not, and the robust
        // kernel covers both its states: `NoReuse` copies of 64 KiB to a cached
        // destination ran 0.95-0.99x glibc with `rep movsb` there, `avx512_pw`
        // 1.02-1.17x, in the lab's policy grid of sessions 14 and 15).
        Op::Copy | Op::Move
            if in_robust_range(op, n, p)
                && probes.dst != Probed::Cold
                && probes.src == Probed::Unknown =>
        {
            p.copy_robust
        }
        Op::Copy | Op::Move if probes.dst == Probed::Cold => p.copy_cold_dst,
        Op::Copy | Op::Move if probes.src == Probed::Cold => p.copy_cold_src,
        // Past the cache the large-block kernel, the rep movsb window included
        // (calibration judged rep movsb there as one of its candidates).
        Op::Copy | Op::Move if n >= p.stream_auto => p.copy_temporal_large,
        Op::Copy | Op::Move if n >= p.rep_movsb_min && n < p.rep_movsb_max => KernelId::RepMovsb,
        Op::Copy | Op::Move => p.copy_temporal,
        Op::Set | Op::Zero if probes.dst == Probed::Cold => p.set_cold_dst,
        Op::Set | Op::Zero if n >= p.rep_stosb_min && n < p.rep_stosb_max => KernelId::RepStosb,
        Op::Set | Op::Zero => p.set_temporal,
    };
    if usable(k, op, f) && !k.streams() {
        return k;
    }
    best_temporal(f)
}

/// Whether a copy or move of `n` bytes lies in the profile's robust range, where
/// [`decide`] runs `copy_robust` unless probes were taken.
fn in_robust_range(op: Op, n: usize, p: &Profile) -> bool {
    matches!(op, Op::Copy | Op::Move)
        && n >= p.copy_robust_min
        && n < p.copy_robust_max.min(p.stream_auto)
}

/// The smallest size at which a call with `hint` probes: the first size from the
/// profile's probe size (for `NoReuse`, from its streaming size if that is lower) at
/// which some probe result would make [`decide`] pick another kernel than it picks
/// with nothing probed. `usize::MAX` when probing is off or never changes the choice.
///
/// A probe costs a timed load: ~50 ns on a cached line, 250 ns on a cold one here
/// (a DRAM access plus a page walk). Where every outcome leads to the same kernel it
/// is pure cost: with a calibrated `rep movsb` window that also serves cold
/// destinations, an `Auto` copy from 64 KiB to 4 MiB ran `rep movsb` whatever the probe
/// said, 4-10% slower than the C library's identical `rep movsb` on cold 64 KiB blocks.
///
/// In the robust range a copy's probe counts only where it can make the call stream:
/// the robust kernel is there to save the probes that would only pick a temporal
/// kernel.
///
/// [`decide`] depends on the size only through the profile's thresholds, so checking
/// each threshold at or above the start is exact. Overlapping moves never probe.
pub fn probe_from(p: &Profile, hint: Hint, f: Features) -> usize {
    if p.probe_min == 0 {
        return usize::MAX;
    }
    let start = match hint {
        Hint::NoReuse => p.probe_min.min(p.stream_no_reuse),
        _ => p.probe_min,
    }
    .max(PROBE_MIN_BYTES);
    let mut at = [
        start,
        p.stream_auto,
        p.stream_auto_cold_dst,
        p.stream_no_reuse,
        p.stream_reuse,
        p.rep_movsb_min,
        p.rep_movsb_max,
        p.rep_stosb_min,
        p.rep_stosb_max,
        p.copy_robust_min,
        p.copy_robust_max,
        p.probe_src_min,
    ];
    at.sort_unstable();
    let outcomes = [Probed::Cached, Probed::Cold];
    let changes = |n: usize| {
        Op::ALL.iter().any(|&op| {
            let base = decide(op, n, hint, false, Probes::NONE, p, f);
            outcomes.iter().any(|&dst| {
                let srcs: &[Probed] =
                    if matches!(op, Op::Copy | Op::Move) && probes_source(p, n, dst) {
                        &outcomes
                    } else {
                        &[Probed::Unknown]
                    };
                srcs.iter().any(|&src| {
                    let k = decide(op, n, hint, false, Probes { src, dst }, p, f);
                    k != base && (k.streams() || !in_robust_range(op, n, p))
                })
            })
        })
    };
    at.into_iter()
        .filter(|&n| n >= start && n != usize::MAX)
        .find(|&n| changes(n))
        .unwrap_or(usize::MAX)
}

/// Whether a probing copy of `n` bytes whose destination probed `dst` also probes its
/// source: only where a cold source gets a kernel of its own, from
/// [`Profile::probe_src_min`], and not after a cold destination (which picks the
/// cold-destination or streaming kernel whatever the source). The dispatcher,
/// [`probe_from`] and `blockmem info` share this.
pub fn probes_source(p: &Profile, n: usize, dst: Probed) -> bool {
    p.copy_cold_src != p.copy_temporal && n >= p.probe_src_min && dst != Probed::Cold
}

/// No block smaller than this is probed: the probe reads a line near the middle after
/// its page mate 2 KiB away (see [`probe_offset`]).
pub const PROBE_MIN_BYTES: usize = 4096;

/// The byte of an `n`-byte block (`n >= PROBE_MIN_BYTES`) whose line the dispatcher
/// probes: the middle, or for a block larger than the effective LLC `llc`, the byte
/// `llc / 2` before its end.
///
/// A block touched front to back keeps its *last* lines longest (LRU). Up to the LLC
/// the middle line is cached only if at least the back half is, and cold only if at
/// least the front half is. Past the LLC the middle is never cached: after a pass over
/// a 64 MiB block here (LLC ~15-20 MiB in effect) only its last 15-20 MiB were, and
/// the middle line read cold, as for a block never touched. The two want different
/// kernels: streaming won 1.4-1.7x to a cold 64 MiB destination and lost 5-30% to one
/// just written (the lab's `policy` grid, stores drained). The line `llc / 2` from the
/// end is cached when the back half of what the cache can hold is.
///
/// Kept 2 KiB inside both ends, so the page mate (2 KiB away in the same page) lies in
/// the block; a block of exactly 4 KiB leaves no room for that, and its mate may be the
/// byte just past it, in the probed line's own page (see `probe::page_mate`).
pub fn probe_offset(n: usize, llc: usize) -> usize {
    let o = (n / 2).max(n.saturating_sub(llc / 2));
    o.min(n.saturating_sub(2049)).max(2048)
}

/// The widest temporal kernel the CPU can run.
pub fn best_temporal(f: Features) -> KernelId {
    if cfg!(target_arch = "x86_64") && f.contains(Features::AVX2) {
        KernelId::Avx2
    } else if cfg!(target_arch = "x86_64") && f.contains(Features::SSE2) {
        KernelId::Sse2
    } else {
        KernelId::Portable
    }
}

/// True if `k` exists on this target, implements `op` and needs only features in `f`.
pub fn usable(k: KernelId, op: Op, f: Features) -> bool {
    k.kernel()
        .is_some_and(|e| e.supports(op) && f.contains(e.requires))
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVX2: Features = Features::SSE2.union(Features::AVX).union(Features::AVX2);
    const COLD_DST: Probes = Probes {
        src: Probed::Unknown,
        dst: Probed::Cold,
    };
    const COLD_SRC: Probes = Probes {
        src: Probed::Cold,
        dst: Probed::Cached,
    };

    fn profile() -> Profile {
        let mut p = Profile::FALLBACK;
        p.stream_auto = 1 << 20;
        p.stream_auto_cold_dst = 64 << 10;
        p.stream_no_reuse = 32 << 10;
        p.stream_reuse = 64 << 20;
        p.copy_cold_src = KernelId::Avx2Pf;
        p.copy_stream = KernelId::Avx2PfNt;
        p
    }

    #[test]
    fn each_hint_streams_from_its_threshold() {
        let p = profile();
        for (hint, probes, at) in [
            (Hint::Auto, Probes::NONE, p.stream_auto),
            (Hint::Auto, COLD_DST, p.stream_auto_cold_dst),
            (Hint::NoReuse, Probes::NONE, p.stream_no_reuse),
            (Hint::Reuse, COLD_DST, p.stream_reuse),
        ] {
            assert_eq!(
                decide(Op::Copy, at - 1, hint, false, probes, &p, AVX2),
                KernelId::Avx2,
                "{hint:?} {probes:?}"
            );
            assert_eq!(
                decide(Op::Copy, at, hint, false, probes, &p, AVX2),
                KernelId::Avx2PfNt,
                "{hint:?} {probes:?}"
            );
            assert_eq!(
                decide(Op::Set, at, hint, false, probes, &p, AVX2),
                KernelId::Avx2Nt
            );
            assert_eq!(
                decide(Op::Zero, at, hint, false, probes, &p, AVX2),
                KernelId::Avx2Nt
            );
        }
    }

    #[test]
    fn a_cached_destination_is_never_streamed() {
        let p = profile();
        let hot = Probes {
            src: Probed::Cached,
            dst: Probed::Cached,
        };
        for hint in Hint::ALL {
            for op in Op::ALL {
                for n in [512 << 10, 2 << 20, 1 << 30] {
                    let k = decide(op, n, hint, false, hot, &p, AVX2);
                    assert!(!k.streams(), "{op:?} {n} {hint:?} -> {k:?}");
                }
            }
        }
        // Not probed, the size rule applies.
        assert_eq!(
            decide(Op::Copy, 2 << 20, Hint::Auto, false, Probes::NONE, &p, AVX2),
            KernelId::Avx2PfNt
        );
    }

    #[test]
    fn cold_destination_kernels_when_not_streaming() {
        let mut p = profile();
        p.copy_cold_dst = KernelId::RepMovsb;
        p.set_cold_dst = KernelId::RepStosb;
        let both = Probes {
            src: Probed::Cold,
            dst: Probed::Cold,
        };
        for probes in [COLD_DST, both] {
            // Below the cold-destination streaming size, and with Reuse at any size
            // below stream_reuse.
            for (hint, n) in [(Hint::Auto, 16 << 10), (Hint::Reuse, 8 << 20)] {
                assert_eq!(
                    decide(Op::Copy, n, hint, false, probes, &p, AVX2),
                    KernelId::RepMovsb
                );
                assert_eq!(
                    decide(Op::Zero, n, hint, false, probes, &p, AVX2),
                    KernelId::RepStosb
                );
                assert_eq!(
                    decide(Op::Set, n, hint, false, probes, &p, AVX2),
                    KernelId::RepStosb
                );
            }
        }
        // An overlapping move to a cold destination: temporal, the cold-dst kernel.
        assert_eq!(
            decide(Op::Move, 1 << 30, Hint::Auto, true, COLD_DST, &p, AVX2),
            KernelId::RepMovsb
        );
        // Streaming still wins where it applies.
        assert_eq!(
            decide(Op::Copy, 1 << 20, Hint::Auto, false, COLD_DST, &p, AVX2),
            KernelId::Avx2PfNt
        );
    }

    #[test]
    fn the_robust_kernel_serves_every_state_in_its_range_and_probes_only_for_streaming() {
        let mut p = profile();
        p.copy_cold_dst = KernelId::RepMovsb;
        p.copy_robust = KernelId::Avx512Pw;
        p.copy_robust_min = 64 << 10;
        p.probe_min = 16 << 10;
        let f = AVX2.union(Features::AVX512F).union(Features::PREFETCHW);
        let every = [Probes::NONE, COLD_DST, COLD_SRC];
        for probes in every {
            // Below its start: the probes decide as before.
            let below = decide(Op::Copy, (64 << 10) - 1, Hint::Reuse, false, probes, &p, f);
            assert_ne!(below, KernelId::Avx512Pw, "{probes:?}");
            // In its range: for copies and (overlapping, never probed) moves without
            // probes; where the call probed anyway, the states found decide.
            for n in [64 << 10, (1 << 20) - 1] {
                let want = match probes {
                    Probes::NONE => KernelId::Avx512Pw,
                    COLD_DST => p.copy_cold_dst,
                    _ => p.copy_cold_src,
                };
                assert_eq!(
                    decide(Op::Copy, n, Hint::Reuse, false, probes, &p, f),
                    want,
                    "{probes:?}"
                );
                assert_eq!(
                    decide(Op::Move, n, Hint::Auto, true, Probes::NONE, &p, f),
                    KernelId::Avx512Pw
                );
            }
            // A cached destination, probed for NoReuse's streaming: the robust kernel
            // still, as the source was not probed; with the source probed too, the
            // states found decide.
            let hot_dst = Probes {
                src: Probed::Unknown,
                dst: Probed::Cached,
            };
            assert_eq!(
                decide(Op::Copy, 64 << 10, Hint::NoReuse, false, hot_dst, &p, f),
                KernelId::Avx512Pw
            );
            let hot = Probes {
                src: Probed::Cached,
                dst: Probed::Cached,
            };
            assert_eq!(
                decide(Op::Copy, 64 << 10, Hint::NoReuse, false, hot, &p, f),
                p.copy_temporal
            );
            // From stream_auto the old rules again (a cached destination: not streamed).
            let cached = Probes {
                src: probes.src,
                dst: Probed::Cached,
            };
            assert_eq!(
                decide(Op::Copy, 1 << 20, Hint::Auto, false, cached, &p, f),
                if probes.src == Probed::Cold {
                    p.copy_cold_src
                } else {
                    p.copy_temporal_large
                }
            );
        }
        // The range may end below stream_auto: from copy_robust_max the probes decide
        // again.
        let mut q = p;
        q.copy_robust_max = 512 << 10;
        let at = |n: usize, probes| decide(Op::Copy, n, Hint::Reuse, false, probes, &q, f);
        assert_eq!(at((512 << 10) - 1, Probes::NONE), KernelId::Avx512Pw);
        assert_eq!(at(512 << 10, Probes::NONE), q.copy_temporal);
        assert_eq!(at(512 << 10, COLD_DST), q.copy_cold_dst);
        // Streaming still comes first.
        assert_eq!(
            decide(Op::Copy, 64 << 10, Hint::Auto, false, COLD_DST, &p, f),
            KernelId::Avx2PfNt
        );
        // Sets are untouched.
        assert_eq!(
            decide(Op::Set, 128 << 10, Hint::Reuse, false, COLD_DST, &p, f),
            p.set_cold_dst
        );
        // Where the probe can no longer change a copy's kernel, Reuse probes only for
        // what sets need; with set kernels equal everywhere, never below stream_reuse.
        p.set_cold_dst = p.set_temporal;
        p.copy_cold_src = p.copy_temporal;
        assert_eq!(
            probe_from(&p, Hint::Reuse, f),
            16 << 10,
            "the cold-dst copy kernel below 64 KiB"
        );
        p.copy_robust_min = 16 << 10;
        assert_eq!(
            probe_from(&p, Hint::Reuse, f),
            p.stream_auto,
            "the robust range ends at stream_auto"
        );
        p.copy_robust_max = 256 << 10;
        assert_eq!(
            probe_from(&p, Hint::Reuse, f),
            256 << 10,
            "the robust range ends at copy_robust_max"
        );
        p.copy_robust_max = usize::MAX;
        // Inside it, calls probe only where they may stream: NoReuse from its
        // streaming size, Auto from the cold-destination one.
        assert_eq!(probe_from(&p, Hint::NoReuse, f), p.stream_no_reuse);
        assert_eq!(probe_from(&p, Hint::Auto, f), p.stream_auto_cold_dst);
        // Without AVX-512 the robust kernel is replaced, never run.
        assert_eq!(
            decide(Op::Copy, 64 << 10, Hint::Reuse, false, COLD_SRC, &p, AVX2),
            KernelId::Avx2
        );
    }

    #[test]
    fn large_blocks_use_the_large_temporal_kernel() {
        let mut p = profile();
        p.copy_temporal_large = KernelId::Sse2;
        let hot = Probes {
            src: Probed::Cached,
            dst: Probed::Cached,
        };
        for (n, want) in [
            (p.stream_auto - 1, KernelId::Avx2),
            (p.stream_auto, KernelId::Sse2),
            (1 << 30, KernelId::Sse2),
        ] {
            assert_eq!(decide(Op::Copy, n, Hint::Auto, false, hot, &p, AVX2), want);
            assert_eq!(decide(Op::Move, n, Hint::Auto, true, hot, &p, AVX2), want);
        }
        // Reuse below its streaming size, not probed.
        assert_eq!(
            decide(
                Op::Copy,
                p.stream_auto,
                Hint::Reuse,
                false,
                Probes::NONE,
                &p,
                AVX2
            ),
            KernelId::Sse2
        );
        // Cold destinations keep their own kernel (Reuse, below its streaming size).
        p.copy_cold_dst = KernelId::RepMovsb;
        assert_eq!(
            decide(
                Op::Copy,
                p.stream_reuse - 1,
                Hint::Reuse,
                false,
                COLD_DST,
                &p,
                AVX2
            ),
            KernelId::RepMovsb
        );
        // A rep movsb window with no upper end stops at stream_auto, where the
        // large-block kernel takes over (calibration judged rep movsb there too); a
        // cold source keeps its own kernel.
        p.copy_temporal_large = KernelId::Avx2PfNt;
        (p.rep_movsb_min, p.rep_movsb_max) = (4 << 10, usize::MAX);
        let at =
            |n: usize, probes: Probes| decide(Op::Copy, n, Hint::Auto, false, probes, &p, AVX2);
        assert_eq!(at(p.stream_auto - 1, hot), KernelId::RepMovsb);
        assert_eq!(
            at(p.stream_auto, hot),
            KernelId::Avx2,
            "a streaming kernel is never run as temporal"
        );
        p.copy_temporal_large = KernelId::Sse2;
        let at =
            |n: usize, probes: Probes| decide(Op::Copy, n, Hint::Auto, false, probes, &p, AVX2);
        assert_eq!(at(p.stream_auto, hot), KernelId::Sse2);
        assert_eq!(at(1 << 30, hot), KernelId::Sse2);
        assert_eq!(at(1 << 30, COLD_SRC), p.copy_cold_src);
    }

    #[test]
    fn the_probed_line_is_the_middle_up_to_the_llc_then_half_the_llc_from_the_end() {
        let llc = 16 << 20;
        for n in [4097, 64 << 10, 1 << 20, llc] {
            assert_eq!(probe_offset(n, llc), n / 2, "{n}");
        }
        for n in [llc + 4096, 64 << 20, 1 << 30] {
            assert_eq!(probe_offset(n, llc), n - llc / 2, "{n}");
        }
        // Continuous at the LLC, and never past the half of the block that a
        // front-to-back pass leaves cached.
        assert_eq!(probe_offset(llc + 2, llc), llc / 2 + 2);
        // The page mate (2 KiB away, either side) stays inside the block from 4 KiB + 1
        // up, whatever the LLC (0 in a profile written by hand included).
        for llc in [0, 4096, 1 << 20, usize::MAX] {
            for n in (4097..20_000).chain([1 << 20, 1 << 30, usize::MAX]) {
                let o = probe_offset(n, llc);
                assert!(o >= 2048 && o + 2048 < n, "n {n} llc {llc}: {o}");
            }
        }
        // A 4 KiB block has no line with its mate inside on every alignment: the middle.
        assert_eq!(probe_offset(4096, llc), 2048);
    }

    #[test]
    fn rep_stosb_window() {
        let mut p = profile();
        p.rep_stosb_min = 2048;
        p.rep_stosb_max = 1 << 20;
        for op in [Op::Set, Op::Zero] {
            assert_eq!(
                decide(op, 2047, Hint::Reuse, false, Probes::NONE, &p, AVX2),
                KernelId::Avx2
            );
            assert_eq!(
                decide(op, 2048, Hint::Auto, false, Probes::NONE, &p, AVX2),
                KernelId::RepStosb
            );
            assert_eq!(
                decide(
                    op,
                    (1 << 20) - 1,
                    Hint::Reuse,
                    false,
                    Probes::NONE,
                    &p,
                    AVX2
                ),
                KernelId::RepStosb
            );
            assert_eq!(
                decide(op, 1 << 20, Hint::Reuse, false, Probes::NONE, &p, AVX2),
                KernelId::Avx2
            );
        }
        // The copy window is separate.
        assert_eq!(
            decide(Op::Copy, 4096, Hint::Reuse, false, Probes::NONE, &p, AVX2),
            KernelId::Avx2
        );
    }

    #[test]
    fn cold_source_prefetches_when_not_streaming() {
        let p = profile();
        assert_eq!(
            decide(Op::Copy, 16 << 10, Hint::Auto, false, COLD_SRC, &p, AVX2),
            KernelId::Avx2Pf
        );
        assert_eq!(
            decide(Op::Move, 16 << 10, Hint::Auto, true, COLD_SRC, &p, AVX2),
            KernelId::Avx2Pf
        );
    }

    #[test]
    fn overlap_never_streams() {
        let p = profile();
        for hint in Hint::ALL {
            let k = decide(Op::Move, 1 << 30, hint, true, COLD_DST, &p, AVX2);
            assert!(!k.streams(), "{hint:?} -> {k:?}");
        }
        assert_eq!(
            decide(
                Op::Move,
                1 << 30,
                Hint::NoReuse,
                false,
                Probes::NONE,
                &p,
                AVX2
            ),
            KernelId::Avx2PfNt
        );
    }

    #[test]
    fn rep_movsb_window() {
        let mut p = profile();
        p.rep_movsb_min = 4096;
        p.rep_movsb_max = 8192;
        assert_eq!(
            decide(Op::Copy, 4095, Hint::Reuse, false, Probes::NONE, &p, AVX2),
            KernelId::Avx2
        );
        assert_eq!(
            decide(Op::Copy, 4096, Hint::Reuse, false, Probes::NONE, &p, AVX2),
            KernelId::RepMovsb
        );
        assert_eq!(
            decide(Op::Copy, 8192, Hint::Reuse, false, Probes::NONE, &p, AVX2),
            KernelId::Avx2
        );
    }

    #[test]
    fn zero_uses_the_profile_zero_kernel_and_falls_back_without_clzero() {
        let mut p = profile();
        p.zero_stream = KernelId::Clzero;
        let with = AVX2.union(Features::CLZERO);
        assert_eq!(
            decide(Op::Zero, 1 << 30, Hint::Auto, false, Probes::NONE, &p, with),
            KernelId::Clzero
        );
        assert_eq!(
            decide(Op::Zero, 1 << 30, Hint::Auto, false, Probes::NONE, &p, AVX2),
            KernelId::Avx2Nt
        );
        assert_eq!(
            decide(Op::Set, 1 << 30, Hint::Auto, false, Probes::NONE, &p, with),
            KernelId::Avx2Nt
        );
    }

    #[test]
    fn unavailable_kernels_fall_back() {
        let p = profile();
        let sse2 = Features::SSE2;
        assert_eq!(
            decide(Op::Copy, 1 << 30, Hint::Auto, false, Probes::NONE, &p, sse2),
            best_temporal(sse2)
        );
        assert_eq!(
            decide(Op::Copy, 16 << 10, Hint::Auto, false, COLD_SRC, &p, sse2),
            best_temporal(sse2)
        );
        assert_eq!(
            decide(
                Op::Set,
                100,
                Hint::Auto,
                false,
                Probes::NONE,
                &p,
                Features::NONE
            ),
            KernelId::Portable
        );
    }

    #[test]
    fn probes_only_where_the_answer_can_change_the_kernel() {
        let mut p = profile();
        p.probe_min = 16 << 10;
        // A cold destination gets its own kernel (Avx2 is the temporal one): probing
        // pays from the probe size.
        p.copy_cold_dst = KernelId::RepMovsb;
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), 16 << 10);
        // Every outcome below the cold-destination streaming size picks the same
        // kernel: probe from there.
        p.copy_cold_dst = p.copy_temporal;
        p.copy_cold_src = p.copy_temporal;
        assert_eq!(p.set_cold_dst, p.set_temporal);
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), p.stream_auto_cold_dst);
        // The same when the cold-destination kernel is the rep window's.
        p.copy_cold_dst = KernelId::RepMovsb;
        p.rep_movsb_min = 4 << 10;
        p.rep_movsb_max = usize::MAX;
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), p.stream_auto_cold_dst);
        // A window ending below the streaming size: past its end a cold destination
        // gets rep movsb and a cached one the temporal kernel.
        p.rep_movsb_max = 32 << 10;
        assert!(p.rep_movsb_max < p.stream_auto_cold_dst);
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), 32 << 10);
        // The cold-source kernel makes the source's state matter from the probe size,
        // or from the size its probe starts at.
        p.copy_cold_src = KernelId::Avx2Pf;
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), 16 << 10);
        p.probe_src_min = 24 << 10;
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), 24 << 10);
        // Not below its size, and never after a cold destination.
        assert!(!probes_source(&p, 16 << 10, Probed::Cached));
        assert!(probes_source(&p, 24 << 10, Probed::Cached));
        assert!(probes_source(&p, 24 << 10, Probed::Unknown));
        assert!(!probes_source(&p, 24 << 10, Probed::Cold));
        p.probe_src_min = usize::MAX;
        assert_eq!(probe_from(&p, Hint::Auto, AVX2), 32 << 10);
        p.probe_src_min = 0;
        // NoReuse starts at its streaming size when that is lower.
        p.stream_no_reuse = 8 << 10;
        assert_eq!(probe_from(&p, Hint::NoReuse, AVX2), 8 << 10);
        // Never below 4 KiB, and never with probing off.
        p.probe_min = 1024;
        p.stream_no_reuse = 1024;
        assert!(probe_from(&p, Hint::NoReuse, AVX2) >= PROBE_MIN_BYTES);
        p.probe_min = 0;
        for hint in Hint::ALL {
            assert_eq!(probe_from(&p, hint, AVX2), usize::MAX);
        }
    }

    #[test]
    fn skipping_the_probe_below_probe_from_never_changes_the_kernel() {
        // Over a grid of profiles and sizes: below probe_from, every probe outcome
        // gives the kernel that nothing probed gives.
        let kernels = [KernelId::Avx2, KernelId::RepMovsb, KernelId::Avx2Pf];
        let sets = [KernelId::Avx2, KernelId::RepStosb];
        let sizes = [
            4 << 10,
            16 << 10,
            64 << 10,
            1 << 20,
            4 << 20,
            16 << 20,
            1 << 30,
        ];
        let mut checked = 0;
        for &cold_dst in &kernels {
            for &cold_src in &kernels {
                for &set_cold in &sets {
                    for &(rmin, rmax, src_min) in &[
                        (4 << 10, usize::MAX, 0),
                        (4 << 10, 1 << 20, 64 << 10),
                        (0, 0, 0),
                        (0, 0, usize::MAX),
                    ] {
                        let mut p = profile();
                        p.probe_src_min = src_min;
                        p.probe_min = 16 << 10;
                        p.copy_cold_dst = cold_dst;
                        p.copy_cold_src = cold_src;
                        p.set_cold_dst = set_cold;
                        p.rep_movsb_min = rmin;
                        p.rep_movsb_max = rmax;
                        p.rep_stosb_min = rmin;
                        p.rep_stosb_max = rmax;
                        for hint in Hint::ALL {
                            let from = probe_from(&p, hint, AVX2);
                            // Smaller calls are not probed whatever probe_from says.
                            let start = match hint {
                                Hint::NoReuse => p.probe_min.min(p.stream_no_reuse),
                                _ => p.probe_min,
                            };
                            for &n in sizes.iter().filter(|&&n| n >= start && n < from) {
                                for op in Op::ALL {
                                    let base = decide(op, n, hint, false, Probes::NONE, &p, AVX2);
                                    for dst in [Probed::Cached, Probed::Cold] {
                                        // As the dispatcher: the source is probed only
                                        // where its own kernel differs.
                                        let srcs: &[Probed] = if probes_source(&p, n, dst) {
                                            &[Probed::Cached, Probed::Cold]
                                        } else {
                                            &[Probed::Unknown]
                                        };
                                        for &src in srcs {
                                            let probes = Probes { src, dst };
                                            assert_eq!(
                                                decide(op, n, hint, false, probes, &p, AVX2),
                                                base,
                                                "{op:?} {n} {hint:?} {probes:?} from {from}"
                                            );
                                            checked += 1;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Cases where the probe is skipped (some profiles probe from the start).
        assert!(checked > 200, "{checked}");
    }

    #[test]
    fn defaults_are_ordered() {
        let c = crate::cpu::choose_used(&[None; crate::cpu::MAX_LEVELS], 0, 0);
        let p = Profile::from_caches(&c);
        assert!(p.stream_no_reuse <= p.stream_auto && p.stream_auto < p.stream_reuse);
        assert!(p.stream_auto_cold_dst <= p.stream_auto);
        assert!(p.stream_no_reuse >= crate::profile::MIN_STREAM_NO_REUSE);
        assert_eq!(
            p.probe_min, 0,
            "probing is off until calibration shows it pays"
        );
    }
}
