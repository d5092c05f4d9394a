//! `avx2`: 32-byte vectors, temporal stores. Ladder up to 32 bytes, overlapping vectors
//! up to 256, then 128 bytes per iteration with cache-line-aligned stores. The best
//! choice whenever the destination is, or should end up, in cache.
//!
//! Also home of the AVX2 ladders the `avx2_*` variants share (`copy_with`,
//! `move_with`, `set_with`): they differ only in the long loop.

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::{self, disjoint, Prefetch, Stores, Vector};
use core::arch::x86_64::__m256i;

type V = __m256i;
/// Largest size handled by overlapping vectors (8 × 32 bytes).
pub const SHORT_MAX: usize = 8 * V::SIZE;

/// The AVX2 copy ladder with a choice of long-loop stores and prefetch.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap (or `dst < src` with
/// temporal stores); the CPU supports AVX2 (callers are `avx2` target-feature functions),
/// and PREFETCHW with [`Prefetch::DstAhead`].
#[inline(always)]
pub(crate) unsafe fn copy_with(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    stores: Stores,
    pf: Prefetch,
) {
    // SAFETY: each size class meets its block's precondition.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<V>(dst, src, n)
        } else {
            generic::copy_forward::<V>(dst, src, n, stores, pf)
        }
    }
}

/// The AVX2 move ladder: disjoint ranges take the variant's copy path; overlapping
/// ones always use temporal stores (non-temporal stores are never used on overlap).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; CPU supports AVX2 (and PREFETCHW
/// with [`Prefetch::DstAhead`]).
#[inline(always)]
pub(crate) unsafe fn move_with(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    stores: Stores,
    pf: Prefetch,
) {
    // SAFETY: disjoint ranges meet copy_with's contract; short blocks load before
    // storing; move_long picks the direction its loops require.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<V>(dst, src, n)
        } else if disjoint(dst, src, n) {
            generic::copy_forward::<V>(dst, src, n, stores, pf)
        } else {
            generic::move_long::<V>(dst, src, n)
        }
    }
}

/// The AVX2 set ladder with a choice of long-loop stores.
///
/// # Safety
/// `dst` valid for `n` writes; CPU supports AVX2.
#[inline(always)]
pub(crate) unsafe fn set_with(dst: *mut u8, byte: u8, n: usize, stores: Stores) {
    // SAFETY: each size class meets its block's precondition.
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

/// Copies `n` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_with(dst, src, n, Stores::Temporal, Prefetch::None) };
    dst
}

/// Moves `n` bytes; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { move_with(dst, src, n, Stores::Temporal, Prefetch::None) };
    dst
}

/// Sets `n` bytes to `byte`.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, byte, n, Stores::Temporal) };
    dst
}

/// Zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, 0, n, Stores::Temporal) };
    dst
}
