//! The policy: a pure function from what is known about a call to the kernel that
//! should run it. No hardware access, no global state: it is unit-tested over synthetic
//! thresholds and feature sets.
//!
//! Until host calibration lands, the thresholds come from CPUID cache sizes
//! ([`Thresholds::from_caches`]). The rules:
//!
//! * Overlapping moves always use temporal stores (DESIGN.md rule).
//! * `Reuse`: the destination will be read soon, so keep it in cache; stream only when
//!   it cannot stay there anyway (larger than the LLC).
//! * `NoReuse`: the caller promises not to read the destination soon; stream from
//!   [`Thresholds::stream_no_reuse`] up, where streaming stops costing more than the
//!   pollution it avoids.
//! * `Auto`: stream from [`Thresholds::stream_auto`] up: a block that large cannot stay
//!   cached together with its source, so temporal stores would only evict useful data
//!   and pay a read-for-ownership per line.
//! * Streaming zero uses `clzero` where the CPU has it, else AVX2 streaming stores.
//! * Temporal work uses the widest available temporal kernel (AVX2, else SSE2, else the
//!   portable words).

use crate::cpu::{Features, UsedCaches};
use crate::kernel::{KernelId, Op};
use crate::Hint;

/// Size thresholds the policy uses, in bytes. Each has a documented default.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Thresholds {
    /// `Auto`: stream (non-temporal stores) at and above this size.
    pub stream_auto: usize,
    /// `NoReuse`: stream at and above this size.
    pub stream_no_reuse: usize,
    /// `Reuse`: stream only at and above this size (the destination cannot stay cached).
    pub stream_reuse: usize,
}

/// `NoReuse` never streams below this: under a few KiB the `sfence` and the partial
/// write-combining buffers cost more than the read-for-ownership they save.
pub const MIN_STREAM_NO_REUSE: usize = 16 << 10;

impl Thresholds {
    /// What a call gets while another call is still deriving the thresholds: the
    /// defaults of a small machine (`cpu::DEFAULT_*`), as a constant so that producing
    /// it cannot itself copy memory.
    pub const FALLBACK: Thresholds = Thresholds {
        stream_auto: crate::cpu::DEFAULT_LLC / 2,
        stream_no_reuse: MIN_STREAM_NO_REUSE * 8,
        stream_reuse: crate::cpu::DEFAULT_LLC * 2,
    };

    /// CPUID-derived defaults: `Auto` streams from half the LLC (source and destination
    /// together no longer fit), `NoReuse` from half the L2 (at least
    /// [`MIN_STREAM_NO_REUSE`]), `Reuse` from twice the LLC.
    pub fn from_caches(c: &UsedCaches) -> Thresholds {
        Thresholds {
            stream_auto: (c.llc.size / 2).max(MIN_STREAM_NO_REUSE),
            stream_no_reuse: (c.l2.size / 2).max(MIN_STREAM_NO_REUSE),
            stream_reuse: c.llc.size.saturating_mul(2),
        }
    }
}

/// Decides the kernel for one call above the inline ladder.
///
/// `overlap` is true only for a move whose ranges share bytes.
pub fn decide(
    op: Op,
    n: usize,
    hint: Hint,
    overlap: bool,
    t: &Thresholds,
    f: Features,
) -> KernelId {
    let stream_from = match hint {
        Hint::Auto => t.stream_auto,
        Hint::NoReuse => t.stream_no_reuse,
        Hint::Reuse => t.stream_reuse,
    };
    let stream = !overlap && n >= stream_from;
    let temporal = if f.contains(Features::AVX2) {
        KernelId::Avx2
    } else if f.contains(Features::SSE2) {
        KernelId::Sse2
    } else {
        KernelId::Portable
    };
    if !stream {
        return temporal;
    }
    match op {
        Op::Zero if f.contains(Features::CLZERO) => KernelId::Clzero,
        _ if f.contains(Features::AVX2) => KernelId::Avx2Nt,
        _ => temporal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds = Thresholds {
        stream_auto: 1 << 20,
        stream_no_reuse: 64 << 10,
        stream_reuse: 64 << 20,
    };
    const AVX2: Features = Features::SSE2.union(Features::AVX).union(Features::AVX2);

    #[test]
    fn temporal_below_each_threshold_streaming_at_it() {
        for (hint, at) in [
            (Hint::Auto, T.stream_auto),
            (Hint::NoReuse, T.stream_no_reuse),
            (Hint::Reuse, T.stream_reuse),
        ] {
            assert_eq!(
                decide(Op::Copy, at - 1, hint, false, &T, AVX2),
                KernelId::Avx2
            );
            assert_eq!(
                decide(Op::Copy, at, hint, false, &T, AVX2),
                KernelId::Avx2Nt
            );
            assert_eq!(decide(Op::Set, at, hint, false, &T, AVX2), KernelId::Avx2Nt);
        }
    }

    #[test]
    fn overlap_never_streams() {
        assert_eq!(
            decide(Op::Move, 1 << 30, Hint::NoReuse, true, &T, AVX2),
            KernelId::Avx2
        );
        assert_eq!(
            decide(Op::Move, 1 << 30, Hint::NoReuse, false, &T, AVX2),
            KernelId::Avx2Nt
        );
    }

    #[test]
    fn zero_prefers_clzero_when_streaming() {
        let f = AVX2.union(Features::CLZERO);
        assert_eq!(
            decide(Op::Zero, 1 << 30, Hint::Auto, false, &T, f),
            KernelId::Clzero
        );
        assert_eq!(
            decide(Op::Zero, 1 << 10, Hint::Auto, false, &T, f),
            KernelId::Avx2
        );
        assert_eq!(
            decide(Op::Set, 1 << 30, Hint::Auto, false, &T, f),
            KernelId::Avx2Nt
        );
    }

    #[test]
    fn falls_back_without_avx2() {
        assert_eq!(
            decide(Op::Copy, 1 << 30, Hint::Auto, false, &T, Features::SSE2),
            KernelId::Sse2
        );
        assert_eq!(
            decide(Op::Copy, 100, Hint::Auto, false, &T, Features::NONE),
            KernelId::Portable
        );
    }

    #[test]
    fn defaults_from_caches_are_ordered() {
        let c = crate::cpu::choose_used(&[None; crate::cpu::MAX_LEVELS], 0, 0);
        let t = Thresholds::from_caches(&c);
        assert!(t.stream_no_reuse <= t.stream_auto && t.stream_auto < t.stream_reuse);
        assert!(t.stream_no_reuse >= MIN_STREAM_NO_REUSE);
    }
}
