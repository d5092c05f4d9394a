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
    __m512i, _bzhi_u64, _mm512_loadu_epi8, _mm512_mask_storeu_epi8, _mm512_maskz_loadu_epi8,
    _mm512_set1_epi8, _mm512_storeu_epi8,
};

/// Largest size the single masked access handles.
pub const MAX: usize = 64;

/// Largest size [`copy_le512`] handles.
pub const WIDE_MAX: usize = 512;

/// Largest size [`set_le2k`] handles.
pub const SET_WIDE_MAX: usize = 2048;

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

#[inline(always)]
unsafe fn ld(p: *const u8) -> __m512i {
    // SAFETY: the caller guarantees 64 readable bytes at `p`.
    unsafe { _mm512_loadu_epi8(p as *const i8) }
}

#[inline(always)]
unsafe fn st(p: *mut u8, v: __m512i) {
    // SAFETY: the caller guarantees 64 writable bytes at `p`.
    unsafe { _mm512_storeu_epi8(p as *mut i8, v) }
}

/// Copies (or moves) `n <= 512` bytes: one masked access up to 64 bytes, else two,
/// four or eight 64-byte accesses from both ends (overlapping in the middle). Every
/// load is issued before the first store, so overlapping ranges are handled like a
/// move. One call, three size classes: glibc's evex memmove has the same shape, and
/// it replaces the dispatcher's SSE2 ladder (65–128 bytes) and the indirect call into
/// a kernel (129–512), which cost twice glibc's time at 200–512 bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= 512`; CPU features as for
/// [`copy_le64`].
#[target_feature(enable = "avx512f,avx512bw,bmi2")]
#[inline]
pub unsafe fn copy_le512(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= WIDE_MAX);
    // SAFETY: every access lies in [0, n) of its range (n > 64 for the unmasked ones:
    // offsets 0..=n-64); all loads precede all stores.
    unsafe {
        if n <= 64 {
            return copy_le64(dst, src, n);
        }
        // 65..=512: eight 64-byte blocks at min(64 i, n - 64), no size branch (see
        // `set_le2k`: a two-level ladder mispredicts on sizes that vary call to call).
        let e = n - 64;
        let o = [
            0,
            e.min(64),
            e.min(128),
            e.min(192),
            e.min(256),
            e.min(320),
            e.min(384),
            e,
        ];
        let (a, b, c, d) = (
            ld(src),
            ld(src.add(o[1])),
            ld(src.add(o[2])),
            ld(src.add(o[3])),
        );
        let (w, x, y, z) = (
            ld(src.add(o[4])),
            ld(src.add(o[5])),
            ld(src.add(o[6])),
            ld(src.add(o[7])),
        );
        st(dst, a);
        st(dst.add(o[1]), b);
        st(dst.add(o[2]), c);
        st(dst.add(o[3]), d);
        st(dst.add(o[4]), w);
        st(dst.add(o[5]), x);
        st(dst.add(o[6]), y);
        st(dst.add(o[7]), z);
    }
}

/// Sets `n <= 2048` bytes to `byte`: up to 512 in the shape of [`copy_le512`], above
/// it 256 bytes at each end and 64-byte-aligned blocks of 256 between them. A set has
/// no overlap to respect, so it keeps the inline path longer than a copy: glibc
/// switches to `rep stosb` at 2 KiB here, and below that an indirect call into the
/// `avx2` kernel cost 1.4–1.6× glibc's time (1–2 KiB, hot).
///
/// # Safety
/// `dst` valid for `n` writes, `n <= 2048`; CPU features as for [`copy_le64`].
#[target_feature(enable = "avx512f,avx512bw,bmi2")]
#[inline]
pub unsafe fn set_le2k(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= SET_WIDE_MAX);
    let v = _mm512_set1_epi8(byte as i8);
    // SAFETY: as in `copy_le512`.
    unsafe {
        if n <= 64 {
            return _mm512_mask_storeu_epi8(dst as *mut i8, _bzhi_u64(u64::MAX, n as u32), v);
        }
        if n > WIDE_MAX {
            // [0, 256) and [n-256, n) unaligned; aligned blocks from the first line
            // boundary after dst+192 while they start before n-256 (so they end
            // before n). n > 512 keeps every offset in range.
            let last = dst.add(n - 256);
            st(dst, v);
            st(dst.add(64), v);
            st(dst.add(128), v);
            st(dst.add(192), v);
            let mut p = dst.add(256 - (dst as usize & 63));
            while p < last {
                st(p, v);
                st(p.add(64), v);
                st(p.add(128), v);
                st(p.add(192), v);
                p = p.add(256);
            }
            st(last, v);
            st(last.add(64), v);
            st(last.add(128), v);
            st(last.add(192), v);
            return;
        }
        // 65..=512: eight stores at min(64 i, n - 64), no size branch. With sizes that
        // vary call to call (fleetbench memset: 16% of calls are 65-512 bytes, spread
        // evenly) the two-level ladder mispredicted often enough to run at 0.87x
        // glibc's speed on those calls; surplus stores to the same line are cheap.
        let e = n - 64;
        st(dst, v);
        st(dst.add(e.min(64)), v);
        st(dst.add(e.min(128)), v);
        st(dst.add(e.min(192)), v);
        st(dst.add(e.min(256)), v);
        st(dst.add(e.min(320)), v);
        st(dst.add(e.min(384)), v);
        st(dst.add(e), v);
    }
}
