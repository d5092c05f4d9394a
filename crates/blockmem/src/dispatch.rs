//! Entry points behind the public API: the inline size ladder, then the policy, then a
//! direct call to the chosen kernel.
//!
//! ```text
//!   n <= 32            small ladder, inline (portable scalar head/tail)
//!   n <= 128 (x86-64)  SSE2 head/tail vectors, inline
//!   otherwise          policy::decide(op, n, hint, overlap) -> kernel, direct call
//! ```
//!
//! Global state is a handful of atomics, published once: the thresholds (derived from
//! CPUID on first use, replaceable with [`set_thresholds`]) and an optional forced
//! kernel. Nothing here allocates, locks or calls `memcpy`; every path is
//! async-signal-safe and works before any initialisation has run.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::cpu::{self, features};
use crate::kernel::{KernelId, Op};
use crate::policy::{self, Thresholds};
use crate::Hint;

// Thresholds: 0 in STREAM_AUTO means "not yet derived".
static STREAM_AUTO: AtomicUsize = AtomicUsize::new(0);
static STREAM_NO_REUSE: AtomicUsize = AtomicUsize::new(0);
static STREAM_REUSE: AtomicUsize = AtomicUsize::new(0);
// 0 = no forced kernel, else KernelId as u8 + 1.
static FORCED: AtomicU8 = AtomicU8::new(0);

// Set while the first caller derives the thresholds from CPUID.
static DERIVING: AtomicBool = AtomicBool::new(false);

/// The thresholds in use (derived from CPUID on first call).
///
/// Derivation is re-entrancy-safe: a call that arrives while another is deriving (a
/// signal handler, another thread, or, if a compiler ever inserted a `memcpy` into the
/// derivation, the shim recursing into itself) gets the built-in defaults instead of
/// deriving again.
pub fn thresholds() -> Thresholds {
    let auto = STREAM_AUTO.load(Ordering::Acquire);
    if auto == 0 {
        if DERIVING.swap(true, Ordering::Acquire) {
            return Thresholds::FALLBACK;
        }
        let t = Thresholds::from_caches(&cpu::used_caches());
        set_thresholds(t);
        DERIVING.store(false, Ordering::Release);
        return t;
    }
    Thresholds {
        stream_auto: auto,
        stream_no_reuse: STREAM_NO_REUSE.load(Ordering::Relaxed),
        stream_reuse: STREAM_REUSE.load(Ordering::Relaxed),
    }
}

/// Replaces the thresholds (the calibration profile does this). Zero values are bumped
/// to 1 so that "zero" keeps meaning "not yet derived".
pub fn set_thresholds(t: Thresholds) {
    STREAM_NO_REUSE.store(t.stream_no_reuse, Ordering::Relaxed);
    STREAM_REUSE.store(t.stream_reuse, Ordering::Relaxed);
    STREAM_AUTO.store(t.stream_auto.max(1), Ordering::Release);
}

/// Forces one kernel for every op it implements, above the inline ladder (`None`
/// restores the policy). Ops the kernel lacks, or a kernel this CPU cannot run, keep
/// using the policy. This is what `BLOCKMEM_FORCE` sets.
pub fn force(kernel: Option<KernelId>) {
    FORCED.store(kernel.map_or(0, |k| k as u8 + 1), Ordering::Relaxed);
}

/// The forced kernel, if any.
pub fn forced() -> Option<KernelId> {
    match FORCED.load(Ordering::Relaxed) {
        0 => None,
        v => KernelId::ALL.get(v as usize - 1).copied(),
    }
}

/// The kernel a call above the inline ladder would use (what `blockmem info` prints).
pub fn choose(op: Op, n: usize, hint: Hint, overlap: bool) -> KernelId {
    if let Some(k) = forced() {
        if k.kernel()
            .is_some_and(|e| e.supports(op) && e.is_available())
        {
            return k;
        }
    }
    policy::decide(op, n, hint, overlap, &thresholds(), features())
}

/// Calls kernel `k` for `op`. Falls back to the portable kernel if `k` lacks the op
/// or cannot run here (which `choose` already excludes).
///
/// # Safety
/// As the op's C contract: pointers valid for `n` bytes; for `Copy`, no overlap.
#[inline(never)]
unsafe fn run(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    use crate::arch::all::portable;
    #[cfg(target_arch = "x86_64")]
    use crate::arch::x86_64 as x;
    // SAFETY: `choose` only returns kernels whose features are present and that
    // implement `op`; pointer validity is the caller's contract.
    unsafe {
        match (k, op) {
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Copy) => x::avx2::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Move) => x::avx2::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Set | Op::Zero) => x::avx2::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Copy) => x::avx2_nt::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Move) => x::avx2_nt::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Set | Op::Zero) => x::avx2_nt::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Clzero, Op::Zero) => x::clzero::zero(dst, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Copy) => x::sse2::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Move) => x::sse2::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Set | Op::Zero) => x::sse2::set(dst, byte, n),
            (KernelId::Portable, Op::Copy) => portable::copy(dst, src, n),
            (KernelId::Portable, Op::Set | Op::Zero) => portable::set(dst, byte, n),
            (KernelId::Portable, Op::Move) => portable::move_(dst, src, n),
            // A forced kernel outside the policy's usual set: through the table.
            (other, op) => run_from_table(other, op, dst, src, byte, n),
        }
    }
}

/// # Safety
/// As [`run`].
unsafe fn run_from_table(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    let avail = k.kernel().and_then(|e| e.available());
    // SAFETY: `Available` certifies the CPU features; pointers are the caller's contract.
    unsafe {
        match (op, avail) {
            (Op::Copy, Some(a)) if a.copy_fn().is_some() => (a.copy_fn().unwrap())(dst, src, n),
            (Op::Move, Some(a)) if a.move_fn().is_some() => (a.move_fn().unwrap())(dst, src, n),
            (Op::Set, Some(a)) if a.set_fn().is_some() => (a.set_fn().unwrap())(dst, byte, n),
            (Op::Zero, Some(a)) if a.zero_fn().is_some() => (a.zero_fn().unwrap())(dst, n),
            (Op::Copy, _) => crate::arch::all::portable::copy(dst, src, n),
            (Op::Move, _) => crate::arch::all::portable::move_(dst, src, n),
            (Op::Set | Op::Zero, _) => crate::arch::all::portable::set(dst, byte, n),
        }
    }
}

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
const INLINE_MAX: usize = SMALL_MAX;

/// The inline rungs shared by copy and move (both are overlap-safe).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn copy_inline(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: each rung's size precondition holds; SSE2 is architectural on x86-64.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else {
            #[cfg(target_arch = "x86_64")]
            crate::arch::generic::copy_short::<core::arch::x86_64::__m128i>(dst, src, n)
        }
    }
}

/// `memcpy` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, ranges disjoint.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= INLINE_MAX {
            copy_inline(dst, src, n)
        } else {
            run(choose(Op::Copy, n, hint, false), Op::Copy, dst, src, 0, n)
        }
    }
}

/// `memmove` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
#[inline]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract; inline rungs are overlap-safe, and an overlapping
    // move is flagged so the policy never picks streaming stores for it.
    unsafe {
        if n <= INLINE_MAX {
            copy_inline(dst, src, n)
        } else if !core::ptr::eq(dst, src) {
            let overlap = !disjoint(dst, src, n);
            run(choose(Op::Move, n, hint, overlap), Op::Move, dst, src, 0, n)
        }
    }
}

/// `memset` with a hint.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n)
        } else {
            #[cfg(target_arch = "x86_64")]
            if n <= INLINE_MAX {
                use crate::arch::generic::{set_short, Vector};
                use core::arch::x86_64::__m128i;
                return set_short::<__m128i>(dst, __m128i::splat(byte), n);
            }
            let op = if byte == 0 { Op::Zero } else { Op::Set };
            run(
                choose(op, n, hint, false),
                op,
                dst,
                core::ptr::null(),
                byte,
                n,
            )
        }
    }
}
