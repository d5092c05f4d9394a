//! Branch-free small copies and sets with AVX-512BW masked byte loads and stores.
//!
//! For `n <= 64`, `bzhi` builds a mask of the low `n` bits and one masked load and one
//! masked store move exactly `n` bytes: no size ladder, so no branch to mispredict.
//! With sizes that vary call to call (the fleetbench distributions: 70% of memsets are
//! 1–32 bytes, spread over six rungs of a ladder), the ladder mispredicts about once
//! per call (~15 cycles); this path costs the same for every size. Masked-out bytes are
//! neither read nor written and cannot fault, so a buffer flush against an unmapped
//! page is safe (the guard-page tests run this path).
//!
//! Used by the dispatcher's inline path when the CPU has AVX-512BW and BMI2; not a
//! kernel of its own (every kernel keeps the portable ladder).

use core::arch::x86_64::{
    _bzhi_u64, _mm512_mask_storeu_epi8, _mm512_maskz_loadu_epi8, _mm512_set1_epi8,
};

/// Largest size handled.
pub const MAX: usize = 64;

/// Copies (or moves: the load completes before the store) `n <= 64` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= 64`; the CPU supports
/// AVX-512F, AVX-512BW and BMI2 with OS-enabled ZMM state.
#[target_feature(enable = "avx512f,avx512bw,bmi2")]
#[inline]
pub unsafe fn copy_le64(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= MAX);
    let mask = _bzhi_u64(u64::MAX, n as u32);
    // SAFETY: the mask selects exactly bytes [0, n) of each access, which are valid per
    // the contract; masked-out bytes are not accessed (no fault, no write).
    unsafe {
        let v = _mm512_maskz_loadu_epi8(mask, src as *const i8);
        _mm512_mask_storeu_epi8(dst as *mut i8, mask, v);
    }
}

/// Sets `n <= 64` bytes to `byte`.
///
/// # Safety
/// `dst` valid for `n` writes, `n <= 64`; CPU features as for [`copy_le64`].
#[target_feature(enable = "avx512f,avx512bw,bmi2")]
#[inline]
pub unsafe fn set_le64(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= MAX);
    let mask = _bzhi_u64(u64::MAX, n as u32);
    // SAFETY: as in `copy_le64`.
    unsafe { _mm512_mask_storeu_epi8(dst as *mut i8, mask, _mm512_set1_epi8(byte as i8)) }
}
