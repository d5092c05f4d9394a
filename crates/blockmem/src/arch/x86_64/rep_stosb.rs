//! `rep_stosb`: the string-store microcode for set and zero. Ladder up to 32 bytes,
//! `rep stosb` above. Always available on x86-64; fast with ERMS.

use crate::arch::all::small::{set_le32, SMALL_MAX};

/// Sets `n` bytes to `byte`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe extern "C" fn set(dst: *mut u8, byte: u8, n: usize) -> *mut u8 {
    // SAFETY: the ladder handles n <= SMALL_MAX; rep stosb writes exactly [dst, dst+n)
    // ascending (DF = 0 per the SysV ABI); consumed registers are declared clobbered.
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n)
        } else {
            core::arch::asm!(
                "rep stosb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                in("al") byte,
                options(nostack, preserves_flags)
            );
        }
    };
    dst
}

/// Zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded.
    unsafe { set(dst, 0, n) };
    dst
}
