//! `avx2_nt`: the `avx2` ladder with non-temporal (streaming) stores in the long loop,
//! then `sfence`. Streaming stores skip the read-for-ownership of each destination line
//! and do not allocate it in cache: they win when the destination is not cached and
//! will not be read soon (seed 003 Fig. 2 in docs/SEEDS.md: up to 75% faster to an
//! uncached destination), and lose badly when it is cached (the line is evicted first).
//! Overlapping moves fall back to temporal stores.

use super::avx2::{copy_with, move_with, set_with};
use crate::arch::generic::{Prefetch, Stores};

/// Copies `n` bytes with streaming stores above `avx2::SHORT_MAX`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract (no overlap, as non-temporal stores require).
    unsafe { copy_with(dst, src, n, Stores::NonTemporal, Prefetch::None) };
    dst
}

/// Moves `n` bytes: streaming stores when the ranges are disjoint, temporal otherwise.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; move_with never streams on overlap.
    unsafe { move_with(dst, src, n, Stores::NonTemporal, Prefetch::None) };
    dst
}

/// Sets `n` bytes with streaming stores above `avx2::SHORT_MAX`.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, byte, n, Stores::NonTemporal) };
    dst
}

/// Zeroes `n` bytes with streaming stores above `avx2::SHORT_MAX`.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, 0, n, Stores::NonTemporal) };
    dst
}
