//! `avx2_pw`: the `avx2` copy with the destination fetched for ownership one loop step
//! (128 bytes) ahead of the stores, as `avx512_pw` does for AVX-512: for CPUs without
//! AVX-512 (the AMD Zen parts among them). Copy and move only.

use super::avx2::{copy_with, move_with};
use crate::arch::generic::{Prefetch, Stores};

/// Copies `n` bytes, prefetching the destination for ownership above
/// `avx2::SHORT_MAX`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports AVX2
/// and PREFETCHW.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_with(dst, src, n, Stores::Temporal, Prefetch::DstAhead) };
    dst
}

/// Moves `n` bytes: the prefetching copy when the ranges are disjoint, the `avx2` move
/// otherwise.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX2 and
/// PREFETCHW.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; move_with prefetches only for disjoint ranges.
    unsafe { move_with(dst, src, n, Stores::Temporal, Prefetch::DstAhead) };
    dst
}
