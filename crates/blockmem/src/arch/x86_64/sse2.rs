//! `sse2`: 16-byte vectors, the x86-64 baseline. Ladder up to 32 bytes, overlapping
//! vectors up to 128, then a 64-byte-per-iteration loop with cache-line-aligned stores.
//! Every x86-64 CPU has it, so it is the fallback when AVX2 is absent or masked.

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::{self, Prefetch, Stores, Vector};
use core::arch::x86_64::__m128i;

type V = __m128i;
const SHORT_MAX: usize = 8 * V::SIZE;

/// Copies `n` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap.
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: each size class meets its block's precondition; SSE2 is architectural.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<V>(dst, src, n)
        } else {
            generic::copy_forward::<V>(dst, src, n, Stores::Temporal, Prefetch::None)
        }
    };
    dst
}

/// Moves `n` bytes; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: short blocks load before storing; long ones choose the safe direction.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<V>(dst, src, n)
        } else {
            generic::move_long::<V>(dst, src, n)
        }
    };
    dst
}

/// Sets `n` bytes to `byte`.
///
/// # Safety
/// `dst` valid for `n` writes.
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    // SAFETY: as in `copy`.
    unsafe { set_with(dst, byte, n, Stores::Temporal) };
    dst
}

/// Zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes.
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded.
    unsafe { set_with(dst, 0, n, Stores::Temporal) };
    dst
}

/// The SSE2 set ladder with a choice of stores for the long loop (used by `clzero` for
/// its unaligned edges, too).
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub(crate) unsafe fn set_with(dst: *mut u8, byte: u8, n: usize, stores: Stores) {
    // SAFETY: as in `copy`.
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n)
        } else if n <= SHORT_MAX {
            generic::set_short::<V>(dst, V::splat(byte), n)
        } else {
            generic::set_forward::<V>(dst, byte, n, stores)
        }
    }
}
