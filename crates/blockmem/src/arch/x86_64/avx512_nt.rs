//! `avx512_nt`: the `avx512` ladder with one 64-byte non-temporal store per cache line
//! in the long loop, then `sfence`: a whole line per store fills a write-combining
//! buffer at once. Same trade-off as `avx2_nt`: wins to a cold destination that is not
//! reused, loses badly to a cached one. Overlapping moves use temporal stores.

use super::avx512::{copy_with, move_with, set_with};
use crate::arch::generic::{Prefetch, Stores};

/// Copies `n` bytes with streaming stores above 512 bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract (no overlap, as streaming stores require).
    unsafe { copy_with(dst, src, n, Stores::NonTemporal, Prefetch::None) };
    dst
}

/// Moves `n` bytes: streaming stores when the ranges are disjoint, temporal otherwise.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; move_with never streams on overlap.
    unsafe { move_with(dst, src, n, Stores::NonTemporal, Prefetch::None) };
    dst
}

/// Sets `n` bytes with streaming stores above 512 bytes.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, byte, n, Stores::NonTemporal) };
    dst
}

/// Zeroes `n` bytes with streaming stores above 512 bytes.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_with(dst, 0, n, Stores::NonTemporal) };
    dst
}
