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
//! * [`kernel`]: the kernel table (`naive`, `portable`, `sse2`, `avx2`, `avx2_nt`,
//!   `avx2_pf`, `avx2_pf_nt`, `rep_movsb`, `rep_stosb`, `clzero`) for callers, such as
//!   the lab, that want one kernel in particular.
//! * [`cpu`]: CPUID feature and cache detection.
//! * [`policy`]: the pure decision function; [`profile`]: the calibration profile it
//!   reads (loaded once by [`autoload`]); [`probe`]: the timed-load cache probe;
//!   [`dispatch`]: the entry ladder and the published state.

#![no_std]
#![no_builtins]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod arch;
pub mod autoload;
pub mod cpu;
pub mod dispatch;
pub mod kernel;
pub mod policy;
pub mod probe;
pub mod profile;

pub use kernel::{KernelId, Op};

/// What the caller knows about the destination's future.
///
/// Mirrors madvise-style meta-interfaces (seed 000) and PMDK's per-call flags. Whatever
/// the hint, a destination that probes cached is updated in place (never streamed).
///
/// When to use which, and what it is worth (`blockmem lab policy`, this project's
/// 2-vCPU Xeon VM; ratios are libc's time over blockmem's, geometric means over 90
/// copy cells of 4 KiB–64 MiB × source and destination hot, clean or dirty × with or
/// without reading the destination afterwards): `Auto` 1.10× (worst cell 0.90×), the
/// matching hint 1.16× (0.98× of the per-cell best kernel), the per-cell best kernel
/// 1.19×; zeroing (30 cells) 1.15×, 1.26× and 1.31×. The hint matters most where the
/// destination is cold and below a few MiB: copying 64 KiB to a cold destination,
/// `NoReuse` (streaming) runs at 1.2–1.6× libc's speed and `Auto` at 0.93–1.02×; followed by a read of the
/// destination, `Reuse` and `Auto` run at 0.95–1.02×, where streaming would run at
/// 0.67–0.82×. `Auto` therefore streams a cold destination only from the size where
/// streaming pays even if the destination is read back (4 MiB here).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Hint {
    /// Nothing known: blockmem predicts from the size and, once calibrated, from cache
    /// probes (a destination that probes cached is updated in place; one that probes
    /// cold gets the cold-destination kernel, and is streamed from
    /// [`profile::Profile::stream_auto_cold_dst`]). The default; right for most calls.
    #[default]
    Auto,
    /// The destination will be read soon (a buffer about to be parsed, hashed or
    /// sent): keep it in cache with temporal stores (the cold-destination kernel,
    /// `rep movsb`/`rep stosb` where calibration found them faster) unless calibration
    /// measured that streaming it and reading it back is faster
    /// ([`profile::Profile::stream_reuse`]).
    Reuse,
    /// The destination will not be read soon (page clearing, log or I/O buffers, bulk
    /// moves): stream it past the cache (non-temporal stores) from a modest size on, so
    /// it does not evict the caller's working set (seed 004).
    NoReuse,
}

impl Hint {
    /// Every hint, in a fixed order.
    pub const ALL: [Hint; 3] = [Hint::Auto, Hint::Reuse, Hint::NoReuse];
    /// The stable lowercase name (`auto`, `reuse`, `noreuse`).
    pub const fn name(self) -> &'static str {
        match self {
            Hint::Auto => "auto",
            Hint::Reuse => "reuse",
            Hint::NoReuse => "noreuse",
        }
    }
    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.name() == s)
    }
}

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
    unsafe { dispatch::copy(dst.as_mut_ptr(), src.as_ptr(), dst.len(), hint) }
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
    unsafe { dispatch::move_(base.add(dest), base.add(src.start), n, hint) }
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
    unsafe { dispatch::set(dst.as_mut_ptr(), byte, dst.len(), hint) }
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
    unsafe { dispatch::set(dst.as_mut_ptr(), 0, dst.len(), hint) }
}

/// `memcpy` with C semantics and a hint: copies `n` bytes, returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` valid for `n` writes, the ranges do not overlap
/// (use [`move_raw`] when they may). `n == 0` accepts any pointers.
#[inline]
pub unsafe fn copy_raw(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::copy(dst, src, n, hint) };
    dst
}

/// `memmove` with C semantics and a hint: copies `n` bytes, overlap allowed, returns
/// `dst`.
///
/// # Safety
/// `src` valid for `n` reads and `dst` valid for `n` writes.
#[inline]
pub unsafe fn move_raw(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::move_(dst, src, n, hint) };
    dst
}

/// `memset` with C semantics and a hint: sets `n` bytes to `byte`, returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe fn set_raw(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::set(dst, byte, n, hint) };
    dst
}

/// `bzero` with a hint: zeroes `n` bytes, returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe fn zero_raw(dst: *mut u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { dispatch::set(dst, 0, n, hint) };
    dst
}
