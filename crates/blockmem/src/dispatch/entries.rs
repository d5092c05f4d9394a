//! The core's own instances of the AVX-512 assembly entries (`arch::x86_64::entry`),
//! which the Rust API calls where AVX-512BW and BMI2 are in force: every door runs the
//! same small-size blocks, placed by the assembly's layout rules rather than wherever
//! the caller's compiled code lands (`docs/results/xeon-clx-2vcpu/neighbour`). Above
//! their sizes they jump to the tails in [`super::wide`].

use core::ffi::{c_int, c_void};

crate::copy_entry! {
    /// A copy of disjoint ranges: `(dst, src, n, C hint) -> dst`.
    pub(super) fn copy_avx512(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = avx512, above = super::wide::copy_above, hint = "", overlap = disjoint
}

crate::copy_entry! {
    /// A copy whose ranges may overlap, copied as a move (the shim's `memcpy`).
    pub(super) fn copy_forgiving_avx512(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = avx512, above = super::wide::copy_forgiving_above, hint = "", overlap = possible
}

crate::copy_entry! {
    /// A move.
    pub(super) fn move_avx512(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = avx512, above = super::wide::move_above, hint = "", overlap = possible
}

crate::set_entry! {
    /// A set: `(dst, byte, n, C hint) -> dst`.
    pub(super) fn set_avx512(dst: *mut u8, c: c_int, n: usize, hint: u32);
    bodies = avx512, above = super::wide::set_above, hint = ""
}

/// The entry's return value as the Rust API's pointer.
#[inline(always)]
pub(super) fn ret(p: *mut c_void) -> *mut u8 {
    p.cast()
}
