//! `avx2_pf_nt`: the Fig. 1 copy of seed 003 (docs/SEEDS.md), "prefetch a block, then
//! copy it", with non-temporal stores: neither the copy nor its destination stays in
//! cache. Each [`PF_BLOCK`](crate::arch::generic::PF_BLOCK) (8 KiB) of source is first
//! read one line at a time, so the DRAM sees one long sequential read burst, then
//! copied from cache. It pays when the source is not cached; when it is, the touch pass
//! is pure overhead. Copy and move only (there is nothing to prefetch for a set).

use super::avx2::{copy_with, move_with};
use crate::arch::generic::{Prefetch, Stores};

/// Copies `n` bytes, block-prefetching the source above `avx2::SHORT_MAX`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_with(dst, src, n, Stores::NonTemporal, Prefetch::SrcBlock) };
    dst
}

/// Moves `n` bytes: the block-prefetch copy when the ranges are disjoint, the temporal
/// AVX2 move otherwise.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; the CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; move_with never streams or prefetches on overlap.
    unsafe { move_with(dst, src, n, Stores::NonTemporal, Prefetch::SrcBlock) };
    dst
}
