//! The small-size ladder shared by every kernel: 0..=[`SMALL_MAX`] bytes.
//!
//! Each rung moves a size class with two possibly overlapping accesses of the widest
//! scalar that fits, one anchored at the start and one at the end:
//!
//! ```text
//!   n in 8..=16:   [ head u64 ]
//!                          [ tail u64 ]      head and tail overlap when n < 16
//!                  |<-------- n -------->|
//! ```
//!
//! Every load happens before the first store, so the same code is a correct `memmove`
//! for any overlap. There are no loops and no branches beyond the size comparisons, and
//! nothing here needs a CPU feature: it is the portable path on every target.
//!
//! No `ptr::copy*` or slice helpers are used: `read_unaligned`/`write_unaligned` of a
//! fixed-size integer lower to a single load or store, never to a `memcpy` call.

use core::ptr::{read_unaligned as ld, write_unaligned as st};

/// The largest size the ladder handles.
pub const SMALL_MAX: usize = 32;

/// Copies (or moves: overlap is allowed) `n <= SMALL_MAX` bytes.
///
/// # Safety
/// `src` must be valid for `n` reads and `dst` for `n` writes; `n <= SMALL_MAX`.
#[inline(always)]
pub unsafe fn copy_le32(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= SMALL_MAX);
    // SAFETY (for every block below): each access lies in [src, src+n) or [dst, dst+n),
    // because the rung's lower bound guarantees the access width fits in n; all loads
    // precede all stores, so overlap between the two ranges cannot corrupt the result.
    unsafe {
        if n >= 16 {
            let a = ld(src as *const u64);
            let b = ld(src.add(8) as *const u64);
            let c = ld(src.add(n - 16) as *const u64);
            let d = ld(src.add(n - 8) as *const u64);
            st(dst as *mut u64, a);
            st(dst.add(8) as *mut u64, b);
            st(dst.add(n - 16) as *mut u64, c);
            st(dst.add(n - 8) as *mut u64, d);
        } else if n >= 8 {
            let a = ld(src as *const u64);
            let b = ld(src.add(n - 8) as *const u64);
            st(dst as *mut u64, a);
            st(dst.add(n - 8) as *mut u64, b);
        } else if n >= 4 {
            let a = ld(src as *const u32);
            let b = ld(src.add(n - 4) as *const u32);
            st(dst as *mut u32, a);
            st(dst.add(n - 4) as *mut u32, b);
        } else if n >= 2 {
            let a = ld(src as *const u16);
            let b = ld(src.add(n - 2) as *const u16);
            st(dst as *mut u16, a);
            st(dst.add(n - 2) as *mut u16, b);
        } else if n == 1 {
            *dst = *src;
        }
    }
}

/// Sets `n <= SMALL_MAX` bytes to `byte`.
///
/// # Safety
/// `dst` must be valid for `n` writes; `n <= SMALL_MAX`.
#[inline(always)]
pub unsafe fn set_le32(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= SMALL_MAX);
    let v = (byte as u64).wrapping_mul(0x0101_0101_0101_0101);
    // SAFETY: as in `copy_le32`, every store lies in [dst, dst+n).
    unsafe {
        if n >= 16 {
            st(dst as *mut u64, v);
            st(dst.add(8) as *mut u64, v);
            st(dst.add(n - 16) as *mut u64, v);
            st(dst.add(n - 8) as *mut u64, v);
        } else if n >= 8 {
            st(dst as *mut u64, v);
            st(dst.add(n - 8) as *mut u64, v);
        } else if n >= 4 {
            st(dst as *mut u32, v as u32);
            st(dst.add(n - 4) as *mut u32, v as u32);
        } else if n >= 2 {
            st(dst as *mut u16, v as u16);
            st(dst.add(n - 2) as *mut u16, v as u16);
        } else if n == 1 {
            *dst = byte;
        }
    }
}
