//! `portable`: word-at-a-time (`u64`) copies for any target. The small-size ladder up to
//! 32 bytes, overlapping head/tail words up to 64, then a 32-byte-per-iteration loop
//! with the destination aligned. This is what runs where no vector ISA is known, and it
//! is the kernel the suite exercises when AVX2 is masked off.

use super::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::{self, Prefetch, Stores, Vector};

const SHORT_MAX: usize = 8 * <u64 as Vector>::SIZE;

/// Copies `n` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap.
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the size class selects a building block whose precondition it meets.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<u64>(dst, src, n)
        } else {
            generic::copy_forward::<u64>(dst, src, n, Stores::Temporal, Prefetch::None)
        }
    };
    dst
}

/// Moves `n` bytes; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: short blocks load everything before storing; long ones pick a direction.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else if n <= SHORT_MAX {
            generic::copy_short::<u64>(dst, src, n)
        } else {
            generic::move_long::<u64>(dst, src, n)
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
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n)
        } else {
            let v = <u64 as Vector>::splat(byte);
            if n <= SHORT_MAX {
                generic::set_short::<u64>(dst, v, n)
            } else {
                generic::set_forward::<u64>(dst, byte, n, Stores::Temporal)
            }
        }
    };
    dst
}

/// Zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes.
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded.
    unsafe { set(dst, 0, n) };
    dst
}
