//! The SSE2 (`__m128i`) and AVX2 (`__m256i`) vectors behind [`Vector`].
//!
//! The methods are `#[inline(always)]` and only ever inlined into functions compiled
//! with the matching `#[target_feature]`; that is what makes calling the intrinsics
//! sound (see each kernel module's `# Safety`).

use crate::arch::generic::Vector;
use core::arch::x86_64::*;

impl Vector for __m128i {
    const SIZE: usize = 16;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: caller guarantees 16 readable bytes; SSE2 is architectural on x86_64.
        unsafe { _mm_loadu_si128(p as *const __m128i) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: caller guarantees 16 writable bytes.
        unsafe { _mm_storeu_si128(p as *mut __m128i, self) }
    }
    #[inline(always)]
    unsafe fn store_aligned(self, p: *mut u8) {
        // SAFETY: caller guarantees 16 writable, 16-aligned bytes.
        unsafe { _mm_store_si128(p as *mut __m128i, self) }
    }
    #[inline(always)]
    unsafe fn store_nt(self, p: *mut u8) {
        // SAFETY: caller guarantees 16 writable, 16-aligned bytes and a later fence.
        unsafe { _mm_stream_si128(p as *mut __m128i, self) }
    }
    #[inline(always)]
    fn fence() {
        // SAFETY: SFENCE is architectural on x86_64 and only orders stores.
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    unsafe fn splat(b: u8) -> Self {
        // SAFETY: SSE2 is architectural on x86_64.
        unsafe { _mm_set1_epi8(b as i8) }
    }
}

impl Vector for __m256i {
    const SIZE: usize = 32;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: caller guarantees 32 readable bytes and AVX (inlined into an
        // `avx2` target-feature function).
        unsafe { _mm256_loadu_si256(p as *const __m256i) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: caller guarantees 32 writable bytes and AVX.
        unsafe { _mm256_storeu_si256(p as *mut __m256i, self) }
    }
    #[inline(always)]
    unsafe fn store_aligned(self, p: *mut u8) {
        // SAFETY: caller guarantees 32 writable, 32-aligned bytes and AVX.
        unsafe { _mm256_store_si256(p as *mut __m256i, self) }
    }
    #[inline(always)]
    unsafe fn store_nt(self, p: *mut u8) {
        // SAFETY: caller guarantees 32 writable, 32-aligned bytes, AVX, a later fence.
        unsafe { _mm256_stream_si256(p as *mut __m256i, self) }
    }
    #[inline(always)]
    fn fence() {
        // SAFETY: SFENCE is architectural on x86_64 and only orders stores.
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    unsafe fn splat(b: u8) -> Self {
        // SAFETY: caller guarantees AVX.
        unsafe { _mm256_set1_epi8(b as i8) }
    }
}

impl Vector for __m512i {
    const SIZE: usize = 64;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: caller guarantees 64 readable bytes and AVX-512F (inlined into an
        // `avx512f` target-feature function).
        unsafe { _mm512_loadu_si512(p as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: caller guarantees 64 writable bytes and AVX-512F.
        unsafe { _mm512_storeu_si512(p as *mut __m512i, self) }
    }
    #[inline(always)]
    unsafe fn store_aligned(self, p: *mut u8) {
        // SAFETY: caller guarantees 64 writable, 64-aligned bytes and AVX-512F.
        unsafe { _mm512_store_si512(p as *mut __m512i, self) }
    }
    #[inline(always)]
    unsafe fn store_nt(self, p: *mut u8) {
        // SAFETY: caller guarantees 64 writable, 64-aligned bytes, AVX-512F and a fence.
        unsafe { _mm512_stream_si512(p as *mut __m512i, self) }
    }
    #[inline(always)]
    fn fence() {
        // SAFETY: SFENCE is architectural on x86_64 and only orders stores.
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    unsafe fn splat(b: u8) -> Self {
        // SAFETY: caller guarantees AVX-512F.
        unsafe { _mm512_set1_epi8(b as i8) }
    }
}
