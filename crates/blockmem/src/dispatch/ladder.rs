//! The inline size ladders every entry starts with: small sizes are copied or set in
//! the caller's own code, without a probe, a table or an indirect call; larger ones go
//! to `large` (the plan). Which ladder runs (AVX-512 masked accesses, or SSE2 head and
//! tail) is one byte read per call (`publish::small_path`).

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::kernel::{Hint, Op};

use super::large::{copy_large, set_large};
use super::publish::{plan, small_path, SMALL_WIDE};
#[cfg(target_arch = "x86_64")]
use super::wide::{copy_wide_entry, set_wide_entry};

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
pub(super) const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
pub(super) const INLINE_MAX: usize = SMALL_MAX;

/// Largest sizes the inline path handles with AVX-512: any copy or move up to
/// `WIDE_MAX` (every load before the first store), a copy of disjoint ranges up to
/// `COPY_WIDE_MAX` (a 256-byte loop), a set or zero up to `SET_WIDE_MAX`.
#[cfg(target_arch = "x86_64")]
pub(super) const WIDE_MAX: usize = crate::arch::x86_64::entry::WIDE_MAX;
#[cfg(target_arch = "x86_64")]
pub(super) const COPY_WIDE_MAX: usize = crate::arch::x86_64::entry::COPY_WIDE_MAX;
#[cfg(target_arch = "x86_64")]
pub(super) const SET_WIDE_MAX: usize = crate::arch::x86_64::entry::SET_WIDE_MAX;
#[cfg(not(target_arch = "x86_64"))]
pub(super) const WIDE_MAX: usize = INLINE_MAX;
#[cfg(not(target_arch = "x86_64"))]
pub(super) const COPY_WIDE_MAX: usize = INLINE_MAX;
#[cfg(not(target_arch = "x86_64"))]
pub(super) const SET_WIDE_MAX: usize = INLINE_MAX;

/// Largest size [`copy`], [`move_`] and [`set`] handle for `op` inline, without a
/// kernel: where AVX-512BW and BMI2 are in force 2112 bytes for copy, 2048 for set and
/// zero and 512 for move (a move of disjoint ranges stays inline up to 2112 too: see
/// `runs_inline`), else 128 (64 on targets other than x86-64).
pub fn inline_max(op: Op) -> usize {
    if small_path() == 0 {
        plan();
    }
    match (small_path() == SMALL_WIDE, op) {
        (false, _) => INLINE_MAX,
        (true, Op::Copy) => COPY_WIDE_MAX,
        (true, Op::Move) => WIDE_MAX,
        (true, Op::Set | Op::Zero) => SET_WIDE_MAX,
    }
}

/// True if a call of `op` on these ranges runs inline, without a kernel.
pub(super) fn runs_inline(op: Op, dst: *const u8, src: *const u8, n: usize) -> bool {
    n <= inline_max(op)
        || (op == Op::Move && n <= inline_max(Op::Copy) && disjoint(dst as *mut u8, src, n))
}

/// The Rust API's copy and move: one relaxed load of `publish::SMALL`, then, with
/// AVX-512BW, a call to the core's assembly entry (`wide::copy_wide_entry`), the
/// blocks every door shares; without, the SSE2 ladder up to [`INLINE_MAX`]. Above the inline sizes, [`copy_large`]: the
/// plan. Returns `dst`, so that a C entry ends in a tail jump.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; disjoint ranges when `K` is
/// [`DISJOINT`].
#[inline(always)]
pub(super) unsafe fn copy_entry<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    let path = small_path();
    // SAFETY: forwarded contract; the wide path runs only where the published mask has
    // its features; the ladder's rungs are overlap-safe and need only SSE2.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if path == SMALL_WIDE {
            return copy_wide_entry::<K>(dst, src, n, hint);
        }
        if n <= INLINE_MAX {
            if path == 0 {
                return first_small(Op::Copy, dst, src, 0, n);
            }
            copy_narrow(dst, src, n);
            return dst;
        }
        copy_large::<K>(dst, src, n, hint)
    }
}

/// The SSE2 ladder (x86-64) or the scalar one: `n <= INLINE_MAX`, overlap-safe.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn copy_narrow(dst: *mut u8, src: *const u8, n: usize) {
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

/// The narrow ladder for a set (`n <= INLINE_MAX`).
///
/// # Safety
/// `dst` valid for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn set_narrow(dst: *mut u8, byte: u8, n: usize) {
    // SAFETY: as `copy_narrow`.
    unsafe {
        if n <= SMALL_MAX {
            return set_le32(dst, byte, n);
        }
        #[cfg(target_arch = "x86_64")]
        {
            use crate::arch::generic::{set_short, Vector};
            use core::arch::x86_64::__m128i;
            set_short::<__m128i>(dst, __m128i::splat(byte), n);
        }
    }
}

/// The first small call of a process (`publish::SMALL` still 0): publish a plan, so that
/// later calls take the path of the CPU, and run this one on the narrow ladder (which
/// every x86-64 CPU runs, and which cannot recurse into an initialisation).
#[cold]
#[inline(never)]
unsafe fn first_small(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) -> *mut u8 {
    plan();
    // SAFETY: forwarded contract, n <= INLINE_MAX.
    unsafe {
        match op {
            Op::Copy | Op::Move => copy_narrow(dst, src, n),
            Op::Set | Op::Zero => set_narrow(dst, byte, n),
        }
    }
    dst
}

/// The entry of every set and zero (as [`copy_entry`] for copies).
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub(super) unsafe fn set_entry(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    let path = small_path();
    // SAFETY: as in `copy_entry`.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if path == SMALL_WIDE {
            return set_wide_entry(dst, byte, n, hint);
        }
        if n <= INLINE_MAX {
            if path == 0 {
                return first_small(Op::Set, dst, core::ptr::null(), byte, n);
            }
            set_narrow(dst, byte, n);
            return dst;
        }
        set_large(dst, byte, n, hint)
    }
}
