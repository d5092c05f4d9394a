//! `avx512_pw`: the `avx512` copy with the destination fetched for ownership one loop
//! step ahead of the stores (`prefetchw`, see [`Prefetch::DstAhead`]). A store to a
//! line outside L1 waits for that line; the store buffer asks for it only as the store
//! reaches it, while the prefetch asks 256 bytes early. The price is one prefetch per
//! line: a few percent on a copy whose blocks both sit in L1. The gain is wherever the
//! destination does not (`docs/results/xeon-avx512-2vcpu/lab-quick`). Copy and move
//! only (a set has no loads for the fetches to overlap with, and `rep stosb` skips the
//! fetch altogether).

use super::avx512::{copy_with, move_with};
use crate::arch::generic::{Prefetch, Stores};

/// Copies `n` bytes, prefetching the destination for ownership above
/// `avx512::SHORT_MAX`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports
/// AVX-512F and PREFETCHW.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_with(dst, src, n, Stores::Temporal, Prefetch::DstAhead) };
    dst
}

/// Moves `n` bytes: the prefetching copy when the ranges are disjoint, the `avx512`
/// move otherwise.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX-512F and
/// PREFETCHW.
#[target_feature(enable = "avx512f,avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; move_with prefetches only for disjoint ranges.
    unsafe { move_with(dst, src, n, Stores::Temporal, Prefetch::DstAhead) };
    dst
}
