//! Cache-aware block memory operations: copy, move, set and zero that pick their
//! kernel per call from the size, the overlap, the CPU and a reuse hint.
//!
//! ```
//! use blockmem::Hint;
//!
//! let src: Vec<u8> = (0..=255).cycle().take(1 << 20).collect();
//! let mut dst = vec![0u8; src.len()];
//! blockmem::copy(&mut dst, &src);
//! assert_eq!(dst, src);
//!
//! // The caller knows the destination will not be read soon: stream it.
//! blockmem::copy_with(&mut dst, &src, Hint::NoReuse);
//! assert_eq!(dst, src);
//!
//! blockmem::move_within(&mut dst, 0..1000, 10);
//! assert_eq!(&dst[10..1010], &src[..1000]);
//!
//! blockmem::zero(&mut dst);
//! assert!(dst.iter().all(|&b| b == 0));
//! ```
//!
//! The crate is `no_std`, allocates nothing, takes no lock, and never calls `memcpy`,
//! `memmove` or `memset` (it is built with `#![no_builtins]`, avoids `ptr::copy*` and
//! slice helpers on its paths, and a test inspects its disassembly), so it can sit
//! underneath a C library. Every operation is async-signal-safe and usable before any
//! initialisation.
//!
//! Where a comment rests on a measured figure it points to the results directory that
//! holds it (`docs/results/<host>/<dir>`); `blockmem lab` measures them on yours.
//!
//! * [`kernel`]: the kernel table (below) for callers, such as the lab, that want one
//!   kernel in particular.
//! * [`cpu`]: CPUID feature and cache detection.
//! * [`policy`]: the pure decision function; [`profile`]: the decision table it reads
//!   (the host's calibration profile, loaded once by [`autoload`], else a built-in
//!   table from [`builtin`]); [`probe`]: the timed-load cache probe; [`dispatch`]: the
//!   entry ladder and the published state.
//!
//! # Kernels
//!
//! Every kernel of [`kernel::table`], by its stable name (used in JSON, on the command
//! line and in `BLOCKMEM_FORCE`). A kernel whose CPU features are missing is never
//! run: the policy uses its stand-in ([`KernelId::narrower`]). Seed citations refer to
//! the source documents summarised in `docs/SEEDS.md`.
//!
//! <!-- kernels:begin -->
//! | kernel | ops | CPU features | what it does |
//! |---|---|---|---|
//! | `naive` | copy, move, set, zero | — | one byte at a time; the reference |
//! | `portable` | copy, move, set, zero | — | u64 words, aligned destination; any target |
//! | `sse2` | copy, move, set, zero | sse2 | 16-byte vectors, temporal stores; x86-64 baseline |
//! | `avx2` | copy, move, set, zero | avx2 | 32-byte vectors, temporal stores; best when dst is or should be cached |
//! | `avx2_nt` | copy, move, set, zero | avx2 | 32-byte vectors, non-temporal stores + sfence; best when dst is cold and not reused |
//! | `avx2_pf` | copy, move | avx2 | seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, temporal stores |
//! | `avx2_pf_nt` | copy, move | avx2 | seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, non-temporal stores |
//! | `avx512` | copy, move, set, zero | avx2, avx512f | 64-byte AVX-512 vectors, temporal stores; half the instructions of avx2 for cached data |
//! | `avx512_nt` | copy, move, set, zero | avx2, avx512f | 64-byte AVX-512 vectors, one non-temporal store per line + sfence |
//! | `rep_movsb` | copy, move | — | rep movsb microcode (fast with ERMS/FSRM); vectors where dst is 1-31 bytes past src mod 4 KiB |
//! | `rep_stosb` | set, zero | — | rep stosb microcode (fast with ERMS) |
//! | `clzero` | zero | clzero | AMD clzero: zero whole lines without reading them |
//! | `avx2_pw` | copy, move | avx2, prefetchw | avx2 with the destination prefetched for ownership a step ahead; cold or L2 destinations |
//! | `avx512_pw` | copy, move | avx2, avx512f, prefetchw | avx512 with the destination prefetched for ownership a step ahead; cold or L2 destinations |
//! <!-- kernels:end -->

#![no_std]
#![no_builtins]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[macro_use]
pub mod arch;
pub mod autoload;
pub mod builtin;
pub mod cpu;
pub mod dispatch;
pub mod kernel;
pub mod policy;
pub mod probe;
pub mod profile;
mod sys;

pub use kernel::{Hint, KernelId, Op};

/// The README's Rust examples, run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// Copies `src` into `dst`.
///
/// # Panics
/// If the lengths differ (like `<[u8]>::copy_from_slice`).
#[inline]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    copy_with(dst, src, Hint::Auto)
}

/// Copies `src` into `dst` with a reuse hint.
///
/// # Panics
/// If the lengths differ.
#[inline]
pub fn copy_with(dst: &mut [u8], src: &[u8], hint: Hint) {
    assert!(
        dst.len() == src.len(),
        "blockmem::copy: destination and source lengths differ"
    );
    // SAFETY: both slices are valid for len bytes, and a `&mut` and a `&` cannot alias.
    unsafe { dispatch::copy(dst.as_mut_ptr(), src.as_ptr(), dst.len(), hint) };
}

/// Copies `buf[src]` to `buf[dest..]`, like `<[u8]>::copy_within`; the ranges may
/// overlap.
///
/// # Panics
/// If `src` is out of bounds, or `dest + src.len()` exceeds `buf.len()`.
#[inline]
pub fn move_within(buf: &mut [u8], src: core::ops::Range<usize>, dest: usize) {
    move_within_with(buf, src, dest, Hint::Auto)
}

/// [`move_within`] with a reuse hint.
///
/// # Panics
/// As [`move_within`].
#[inline]
pub fn move_within_with(buf: &mut [u8], src: core::ops::Range<usize>, dest: usize, hint: Hint) {
    assert!(
        src.start <= src.end && src.end <= buf.len(),
        "blockmem::move_within: source range out of bounds"
    );
    let n = src.end - src.start;
    assert!(
        dest <= buf.len() - n,
        "blockmem::move_within: destination out of bounds"
    );
    let base = buf.as_mut_ptr();
    // SAFETY: both ranges were checked to lie inside `buf`; move allows overlap.
    unsafe { dispatch::move_(base.add(dest), base.add(src.start), n, hint) };
}

/// Sets every byte of `dst` to `byte`.
#[inline]
pub fn set(dst: &mut [u8], byte: u8) {
    set_with(dst, byte, Hint::Auto)
}

/// Sets every byte of `dst` to `byte`, with a reuse hint.
#[inline]
pub fn set_with(dst: &mut [u8], byte: u8, hint: Hint) {
    // SAFETY: the slice is valid for len writes.
    unsafe { dispatch::set(dst.as_mut_ptr(), byte, dst.len(), hint) };
}

/// Zeroes `dst`.
#[inline]
pub fn zero(dst: &mut [u8]) {
    zero_with(dst, Hint::Auto)
}

/// Zeroes `dst` with a reuse hint.
#[inline]
pub fn zero_with(dst: &mut [u8], hint: Hint) {
    // SAFETY: the slice is valid for len writes.
    unsafe { dispatch::set(dst.as_mut_ptr(), 0, dst.len(), hint) };
}

/// `memcpy` with C semantics and a hint: copies `n` bytes, returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` valid for `n` writes, the ranges do not overlap
/// (use [`move_raw`] when they may). `n == 0` accepts any pointers.
#[inline(always)]
pub unsafe fn copy_raw(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::copy(dst, src, n, hint) }
}

/// `memmove` with C semantics and a hint: copies `n` bytes, overlap allowed, returns
/// `dst`.
///
/// # Safety
/// `src` valid for `n` reads and `dst` valid for `n` writes.
#[inline(always)]
pub unsafe fn move_raw(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::move_(dst, src, n, hint) }
}

/// `memset` with C semantics and a hint: sets `n` bytes to `byte`, returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub unsafe fn set_raw(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::set(dst, byte, n, hint) }
}

/// `bzero` with a hint: zeroes `n` bytes, returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub unsafe fn zero_raw(dst: *mut u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::set(dst, 0, n, hint) }
}
