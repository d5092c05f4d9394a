//! The Rust ladder, and which sizes each level of bodies holds without a kernel
//! ([`inline_max`]). On x86-64 every call enters the core's routed assembly entry
//! (`wide`), whose AVX-512 or AVX2 bodies hold the small sizes where the CPU has them;
//! the Rust ladder (SSE2 head and tail, or scalar) holds them where it has neither, on
//! other targets, and before the first plan is published. Larger sizes go on to
//! `large` (the plan).

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::kernel::{Hint, Op};

use super::large::{copy_large, set_large};
use super::publish::{plan, small_path};
#[cfg(target_arch = "x86_64")]
use super::publish::{SMALL_AVX2, SMALL_WIDE};

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
pub(super) const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
pub(super) const INLINE_MAX: usize = SMALL_MAX;

/// Largest sizes the assembly bodies handle: any copy or move up to `WIDE_MAX`
/// (AVX-512) or `AVX2_WIDE_MAX` (every load before the first store), a copy of
/// disjoint ranges up to `COPY_WIDE_MAX` (a loop), a set or zero up to `SET_WIDE_MAX`.
#[cfg(target_arch = "x86_64")]
use crate::arch::x86_64::entry::{AVX2_WIDE_MAX, COPY_WIDE_MAX, SET_WIDE_MAX, WIDE_MAX};

/// Largest size [`super::copy`], [`super::move_`] and [`super::set`] handle for `op`
/// inline, without a kernel: where AVX-512BW and BMI2 are in force 2112 bytes for
/// copy, 2048 for set and zero and 512 for move, where AVX2 is the same with 256 for
/// move (a move of disjoint ranges stays inline up to 2112 too: see `runs_inline`),
/// else 128 (64 on targets other than x86-64).
pub fn inline_max(op: Op) -> usize {
    if small_path() == 0 {
        plan();
    }
    #[cfg(target_arch = "x86_64")]
    {
        let path = small_path();
        if path == SMALL_WIDE || path == SMALL_AVX2 {
            return match op {
                Op::Copy => COPY_WIDE_MAX,
                Op::Move if path == SMALL_WIDE => WIDE_MAX,
                Op::Move => AVX2_WIDE_MAX,
                Op::Set | Op::Zero => SET_WIDE_MAX,
            };
        }
    }
    INLINE_MAX
}

/// True if a call of `op` on these ranges runs inline, without a kernel.
pub(super) fn runs_inline(op: Op, dst: *const u8, src: *const u8, n: usize) -> bool {
    n <= inline_max(op)
        || (op == Op::Move && n <= inline_max(Op::Copy) && disjoint(dst as *mut u8, src, n))
}

/// A copy or move the assembly bodies do not hold (or every one, where the CPU has
/// neither level, on other targets, and before the first plan): the SSE2 or scalar
/// ladder up to [`INLINE_MAX`] bytes, above it [`copy_large`], the plan.
///
/// # Safety
/// As [`super::copy`]; disjoint ranges when `K` is `DISJOINT`.
#[inline(always)]
pub(super) unsafe fn copy_general<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract; the ladder's rungs are overlap-safe and need only SSE2.
    unsafe {
        if n <= INLINE_MAX {
            if small_path() == 0 {
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
/// `extern "C"`: it cannot unwind, so a caller that cannot either (a C entry, an
/// `extern "C"` wrapper of the Rust API) reaches it by a jump, without a frame or an
/// abort guard on its fast paths.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
unsafe extern "C" fn first_small(
    op: Op,
    dst: *mut u8,
    src: *const u8,
    byte: u8,
    n: usize,
) -> *mut u8 {
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

/// A set the assembly bodies do not hold (as [`copy_general`]).
///
/// # Safety
/// As [`super::set`].
#[inline(always)]
pub(super) unsafe fn set_general(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: as in `copy_general`.
    unsafe {
        if n <= INLINE_MAX {
            if small_path() == 0 {
                return first_small(Op::Set, dst, core::ptr::null(), byte, n);
            }
            set_narrow(dst, byte, n);
            return dst;
        }
        set_large(dst, byte, n, hint)
    }
}
