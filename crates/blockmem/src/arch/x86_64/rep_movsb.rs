//! `rep_movsb`: the string-copy microcode. Ladder up to 32 bytes, `rep movsb` above.
//! With ERMS/FSRM it is the vendor's own tuned copy (it may internally use
//! non-allocating stores for large sizes); without them it can be slow to start. The lab
//! measures where, if anywhere, it wins on the host. The kernel needs no CPU feature to
//! be correct, only to be fast, so it is always available on x86-64.
//!
//! Moves: `rep movsb` copies in ascending order, which is correct whenever `dst` is
//! below `src` or the ranges are disjoint. Descending `rep movsb` (with `std`) is
//! architecturally correct but runs without fast-string microcode on every CPU we know,
//! so the overlapping `dst > src` case uses the SSE2 backward loop instead.

use crate::arch::all::small::{copy_le32, SMALL_MAX};

/// Runs `rep movsb` over `n` bytes, ascending.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; `dst <= src` or disjoint.
#[inline(always)]
pub(crate) unsafe fn rep_movsb(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller guarantees the ranges; the SysV ABI guarantees DF = 0
    // (ascending) on function entry; the registers the instruction consumes are
    // declared clobbered.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
}

/// Copies `n` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: forwarded contract; the ladder handles n <= SMALL_MAX.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else {
            rep_movsb(dst, src, n)
        }
    }
}

/// Moves `n` bytes; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
#[inline]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: ascending rep movsb only when dst is below src or the ranges are
    // disjoint; otherwise the SSE2 move, which handles dst > src.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if (dst as usize).wrapping_sub(src as usize) >= n {
            rep_movsb(dst, src, n)
        } else {
            super::sse2::move_(dst, src, n)
        }
    }
}
