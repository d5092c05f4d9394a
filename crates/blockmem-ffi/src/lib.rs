//! The C ABI of blockmem: `libblockmem.so`, `libblockmem.a` and `include/blockmem.h`.
//!
//! ```c
//! #include <blockmem.h>
//!
//! // Copy a frame the program will not read again soon: stream it past the cache.
//! blockmem_copy(dst, src, n, BLOCKMEM_HINT_NO_REUSE);
//! // What would a 64 MiB zero use here? Where the call probes its destination first
//! // (BLOCKMEM_CHOICE_PROBES), ask what it runs for a destination found cold.
//! int k = blockmem_choose(BLOCKMEM_OP_ZERO, 64u << 20, BLOCKMEM_HINT_AUTO, false);
//! if (k == BLOCKMEM_CHOICE_PROBES)
//!     k = blockmem_choose_state(BLOCKMEM_OP_ZERO, 64u << 20, BLOCKMEM_HINT_AUTO, false,
//!                               BLOCKMEM_STATE_COLD);
//! printf("%s\n", blockmem_kernel_name((size_t)k));
//! ```
//!
//! The same calls from Rust (this crate is also an rlib):
//!
//! ```
//! use blockmem_ffi::{
//!     blockmem_choose, blockmem_choose_state, blockmem_copy, blockmem_kernel_name, BlockmemHint,
//!     BlockmemOp, BlockmemState, BLOCKMEM_CHOICE_PROBES,
//! };
//! use std::ffi::CStr;
//!
//! let src = vec![7u8; 1 << 20];
//! let mut dst = vec![0u8; 1 << 20];
//! let hint = BlockmemHint::BLOCKMEM_HINT_NO_REUSE as u32;
//! // SAFETY: both buffers hold 1 MiB and do not overlap.
//! let ret = unsafe { blockmem_copy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), dst.len(), hint) };
//! assert_eq!(ret, dst.as_mut_ptr().cast());
//! assert_eq!(dst, src);
//!
//! let copy = BlockmemOp::BLOCKMEM_OP_COPY as u32;
//! let mut k = blockmem_choose(copy, 64 << 20, hint, false);
//! if k == BLOCKMEM_CHOICE_PROBES {
//!     let cold = BlockmemState::BLOCKMEM_STATE_COLD as u32;
//!     k = blockmem_choose_state(copy, 64 << 20, hint, false, cold);
//! }
//! assert!(k >= 0);
//! // SAFETY: a valid index names a static NUL-terminated string.
//! let name = unsafe { CStr::from_ptr(blockmem_kernel_name(k as usize)) };
//! assert!(!name.to_bytes().is_empty());
//! ```
//!
//! Two groups of functions:
//!
//! * **Operations**: [`blockmem_copy`], [`blockmem_move`], [`blockmem_set`],
//!   [`blockmem_zero`], each with a [`BlockmemHint`], and [`blockmem_memcpy`],
//!   [`blockmem_memmove`], [`blockmem_memset`] in the C functions' own shape (hint
//!   auto, one argument register fewer to set per call). They are the core's entry
//!   points (inline size ladder, then the policy, then a kernel): no allocation, no
//!   lock, async-signal-safe, usable before any initialisation.
//! * **Introspection and control**, what `blockmem info` shows: the version, the kernel
//!   table (count, names, availability, ops), the decision for an `(op, size, hint,
//!   overlap)`, forcing a kernel, the decision table, and the calibration profile (loaded
//!   by the core on first use from `BLOCKMEM_PROFILE` or the default path; reloadable
//!   or replaceable from here).
//!
//! The header is generated from this file by cbindgen (`cbindgen.toml`); a test
//! regenerates it and fails if the committed `include/blockmem.h` is stale
//! (`BLOCKMEM_BLESS=1 cargo test -p blockmem-ffi --test header` rewrites it).
//!
//! This crate links `std` (unlike the core and the shim): a C library is built as a
//! whole program, and `std` gives it the panic runtime rustc needs for a `staticlib`/
//! `cdylib` under the workspace's `panic=unwind` profile. Nothing here panics; were
//! something to, Rust aborts at the `extern "C"` boundary instead of unwinding into C.
//! Consequently the static library wants the system libraries `std` uses at link time
//! (`pkg-config --static --libs blockmem` lists them).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use blockmem::autoload::Source;
// Named by `copy_entry!` and `set_entry!`.
#[cfg(target_arch = "x86_64")]
use blockmem::entry_asm;
use blockmem::kernel::{self, KernelId, Op};
use blockmem::profile::{self, State};
use blockmem::{dispatch, Hint};

/// What the caller knows about the destination's future. A value outside the
/// enumeration means `BLOCKMEM_HINT_AUTO`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum BlockmemHint {
    /// Predict from the size (and, once calibrated, the host's profile).
    BLOCKMEM_HINT_AUTO = 0,
    /// The destination will be read soon: keep it in cache unless it cannot fit.
    BLOCKMEM_HINT_REUSE = 1,
    /// The destination will not be read soon: stream it past the cache from a modest
    /// size on.
    BLOCKMEM_HINT_NO_REUSE = 2,
}

/// A block memory operation, for the introspection functions. A value outside the
/// enumeration is rejected.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum BlockmemOp {
    /// `memcpy`: non-overlapping copy.
    BLOCKMEM_OP_COPY = 0,
    /// `memmove`: copy that allows overlap.
    BLOCKMEM_OP_MOVE = 1,
    /// `memset`: fill with a byte.
    BLOCKMEM_OP_SET = 2,
    /// `bzero`: fill with zero.
    BLOCKMEM_OP_ZERO = 3,
}

/// Success.
pub const BLOCKMEM_OK: c_int = 0;
/// No kernel has that name.
pub const BLOCKMEM_ERR_UNKNOWN_KERNEL: c_int = -1;
/// The kernel exists but this CPU cannot run it.
pub const BLOCKMEM_ERR_UNAVAILABLE: c_int = -2;
/// The profile was rejected or could not be read (`blockmem_profile_error` says why).
pub const BLOCKMEM_ERR_PROFILE: c_int = -3;
/// An argument is invalid (a null pointer).
pub const BLOCKMEM_ERR_INVALID: c_int = -4;

/// [`blockmem_choose`]: the call probes its destination first, and the kernel depends
/// on what the probe finds ([`blockmem_choose_state`] says which for each state).
pub const BLOCKMEM_CHOICE_PROBES: c_int = -5;

/// What a probe found of the destination ([`blockmem_choose_state`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum BlockmemState {
    /// Not probed.
    BLOCKMEM_STATE_UNKNOWN = 0,
    /// The destination's probed line was in cache.
    BLOCKMEM_STATE_CACHED = 1,
    /// The destination's probed line came from memory.
    BLOCKMEM_STATE_COLD = 2,
    /// The destination's probed page was mapped but never touched: the probe's first
    /// touch took a page fault.
    BLOCKMEM_STATE_FRESH = 3,
}

/// How the functions receive a [`BlockmemHint`]: as its `uint32_t` value, so that any
/// value a C caller passes is defined behaviour (unknown ones mean auto). The header
/// spells it `BlockmemHint`.
pub type BlockmemHintArg = u32;
/// How the functions receive a [`BlockmemOp`] (the header spells it `BlockmemOp`).
pub type BlockmemOpArg = u32;

fn to_hint(h: BlockmemHintArg) -> Hint {
    Hint::from_c(h)
}

fn to_op(o: BlockmemOpArg) -> Option<Op> {
    Op::ALL.get(o as usize).copied()
}

/// The NUL-terminated stable names of the kernel table, in table order (built once, on
/// the first introspection call that needs a name).
fn kernel_c_names() -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        kernel::table()
            .iter()
            .map(|k| CString::new(k.name()).expect("kernel names contain no NUL"))
            .collect()
    })
}

/// Position of `id` in this build's kernel table, or -1.
fn index_of(id: KernelId) -> c_int {
    kernel::table()
        .iter()
        .position(|k| k.id == id)
        .map_or(-1, |i| i as c_int)
}

/// Reads a C string argument as UTF-8, if it is one.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
unsafe fn str_arg<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// The level of entry bodies the CPU runs (`blockmem::dispatch::wide::level`, after
/// `BLOCKMEM_MASK_FEATURES`), set by the constructor, for [`blockmem_zero`]'s inline
/// AVX-512 path; 0 before it and on other CPUs (the general path, which checks the
/// features itself).
static FAST: AtomicU8 = AtomicU8::new(0);

/// True in a set-user-ID (or otherwise `AT_SECURE`) process, where the environment
/// must not steer the library.
fn secure() -> bool {
    // Declared here, not at the top level, so that cbindgen leaves it out of the header.
    extern "C" {
        fn getauxval(kind: std::ffi::c_ulong) -> std::ffi::c_ulong;
    }
    /// `AT_SECURE` of `<sys/auxv.h>`.
    const AT_SECURE: std::ffi::c_ulong = 23;
    // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
    unsafe { getauxval(AT_SECURE) != 0 }
}

/// `BLOCKMEM_MASK_FEATURES=avx512f,...` (as the preload shim reads it): masks CPU
/// features off for the process, to run as a smaller host would. Ignored in set-user-ID
/// programs, and for names it does not know.
fn apply_mask_from_env() {
    if secure() {
        return;
    }
    let Some(list) = std::env::var_os("BLOCKMEM_MASK_FEATURES") else {
        return;
    };
    let mask = list
        .to_string_lossy()
        .split(',')
        .filter_map(|n| blockmem::cpu::Features::from_name(n.trim()))
        .fold(blockmem::cpu::Features::NONE, |m, f| m.union(f));
    if mask != blockmem::cpu::Features::NONE {
        dispatch::mask_features(mask);
    }
}

/// The constructor: applies `BLOCKMEM_MASK_FEATURES` and sets [`FAST`]. The exported
/// entries need neither: their IFUNC resolvers chose their bodies at load
/// (`blockmem::arch::x86_64::entry::resolve`).
extern "C" fn init_fast() {
    apply_mask_from_env();
    #[cfg(target_arch = "x86_64")]
    FAST.store(dispatch::wide::level(), Ordering::Release);
}

#[used]
#[link_section = ".init_array"]
static INIT_FAST: extern "C" fn() = init_fast;

/// True if [`FAST`] is set.
#[inline(always)]
fn fast() -> bool {
    cfg!(target_arch = "x86_64") && FAST.load(Ordering::Relaxed) == dispatch::wide::LEVEL_AVX512
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_copy`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_copy_avx512(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    bodies = avx512, above = dispatch::wide::copy_above, hint = "", overlap = disjoint
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_copy`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_copy_avx2(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    bodies = avx2, general = copy_general, overlap = disjoint
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// `memcpy` with a hint: copies `n` bytes from `src` to `dst`, returns `dst`. Where
    /// the CPU has AVX-512BW, up to 512 bytes in the assembly of
    /// `blockmem::arch::x86_64::entry`, the code the preload shim's `memcpy` runs.
    ///
    /// # Safety
    /// As C `memcpy`: `src` valid for `n` reads, `dst` for `n` writes, no overlap.
    #[no_mangle]
    pub fn blockmem_copy(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    avx512 = blockmem_copy_avx512, avx2 = blockmem_copy_avx2, general = copy_general
}

/// `memcpy` with a hint: copies `n` bytes from `src` to `dst`, returns `dst`.
///
/// # Safety
/// As C `memcpy`: `src` valid for `n` reads, `dst` for `n` writes, no overlap.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_copy(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { copy_general(dst, src, n, hint) }
}

/// `blockmem_copy` without [`FAST`]: out of line, so that the exported function ends in
/// a jump either way (no stack frame; `extern "C"` because a function that cannot
/// unwind may be the target of a C entry's tail jump).
///
/// # Safety
/// As `blockmem_copy`.
#[inline(never)]
unsafe extern "C" fn copy_general(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::copy_raw(dst.cast(), src.cast(), n, to_hint(hint)) }.cast()
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_move`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_move_avx512(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    bodies = avx512, above = dispatch::wide::move_above, hint = "", overlap = possible
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_move`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_move_avx2(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    bodies = avx2, general = move_general, overlap = possible
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// `memmove` with a hint: copies `n` bytes, the ranges may overlap; returns `dst`
    /// (small sizes as [`blockmem_copy`]).
    ///
    /// # Safety
    /// As C `memmove`.
    #[no_mangle]
    pub fn blockmem_move(dst: *mut c_void, src: *const c_void, n: usize, hint: BlockmemHintArg);
    avx512 = blockmem_move_avx512, avx2 = blockmem_move_avx2, general = move_general
}

/// `memmove` with a hint: copies `n` bytes, the ranges may overlap; returns `dst`.
///
/// # Safety
/// As C `memmove`.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_move(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { move_general(dst, src, n, hint) }
}

/// `blockmem_move` without [`FAST`]: out of line, so that the exported function ends in
/// a jump either way (no stack frame; `extern "C"` because a function that cannot
/// unwind may be the target of a C entry's tail jump).
///
/// # Safety
/// As `blockmem_move`.
#[inline(never)]
unsafe extern "C" fn move_general(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::move_raw(dst.cast(), src.cast(), n, to_hint(hint)) }.cast()
}

#[cfg(target_arch = "x86_64")]
blockmem::set_entry! {
    /// `blockmem_set`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_set_avx512(dst: *mut c_void, c: c_int, n: usize, hint: BlockmemHintArg);
    bodies = avx512, above = dispatch::wide::set_above, hint = ""
}

#[cfg(target_arch = "x86_64")]
blockmem::set_entry! {
    /// `blockmem_set`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_set_avx2(dst: *mut c_void, c: c_int, n: usize, hint: BlockmemHintArg);
    bodies = avx2, general = set_general
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// `memset` with a hint: sets `n` bytes to `c` converted to `unsigned char`;
    /// returns `dst` (small sizes in the assembly of `blockmem::arch::x86_64::entry`
    /// where the CPU has AVX-512BW, as the preload shim's `memset`).
    ///
    /// # Safety
    /// As C `memset`.
    #[no_mangle]
    pub fn blockmem_set(dst: *mut c_void, c: c_int, n: usize, hint: BlockmemHintArg);
    avx512 = blockmem_set_avx512, avx2 = blockmem_set_avx2, general = set_general
}

/// `memset` with a hint: sets `n` bytes to `c` converted to `unsigned char`; returns
/// `dst`.
///
/// # Safety
/// As C `memset`.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_set(
    dst: *mut c_void,
    c: c_int,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { set_general(dst, c, n, hint) }
}

/// `blockmem_set` without [`FAST`]: out of line, so that the exported function ends in
/// a jump either way (no stack frame; `extern "C"` because a function that cannot
/// unwind may be the target of a C entry's tail jump).
///
/// # Safety
/// As `blockmem_set`.
#[inline(never)]
unsafe extern "C" fn set_general(
    dst: *mut c_void,
    c: c_int,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::set_raw(dst.cast(), c as u8, n, to_hint(hint)) }.cast()
}

/// `bzero` with a hint: zeroes `n` bytes; returns `dst`.
///
/// # Safety
/// As C `bzero`.
#[no_mangle]
pub unsafe extern "C" fn blockmem_zero(
    dst: *mut c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    #[cfg(target_arch = "x86_64")]
    if fast() {
        // SAFETY: as in `blockmem_copy`.
        return unsafe { dispatch::wide::set(dst.cast(), 0, n, to_hint(hint)) }.cast();
    }
    // SAFETY: forwarded contract.
    unsafe { zero_general(dst, n, hint) }
}

/// `blockmem_zero` without [`FAST`]: out of line, so that the exported function ends in
/// a jump either way (no stack frame; `extern "C"` because a function that cannot
/// unwind may be the target of a C entry's tail jump).
///
/// # Safety
/// As `blockmem_zero`.
#[inline(never)]
unsafe extern "C" fn zero_general(
    dst: *mut c_void,
    n: usize,
    hint: BlockmemHintArg,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::zero_raw(dst.cast(), n, to_hint(hint)) }.cast()
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_memcpy`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memcpy_avx512(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = avx512, above = dispatch::wide::copy_above, hint = "xor ecx, ecx", overlap = disjoint
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_memcpy`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memcpy_avx2(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = avx2, general = memcpy_general, overlap = disjoint
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// C `memcpy` with blockmem's policy (hint auto): [`blockmem_copy`] in `memcpy`'s
    /// shape, a drop-in for it (`#define memcpy blockmem_memcpy`). A call sets one
    /// argument register fewer than `blockmem_copy`'s, which shows on calls of a few
    /// bytes.
    ///
    /// # Safety
    /// As C `memcpy`: `src` valid for `n` reads, `dst` for `n` writes, no overlap.
    #[no_mangle]
    pub fn blockmem_memcpy(dst: *mut c_void, src: *const c_void, n: usize);
    avx512 = blockmem_memcpy_avx512, avx2 = blockmem_memcpy_avx2, general = memcpy_general
}

/// C `memcpy` with blockmem's policy (hint auto): [`blockmem_copy`] in `memcpy`'s
/// shape, a drop-in for it (`#define memcpy blockmem_memcpy`). A call sets one
/// argument register fewer than `blockmem_copy`'s, which shows on calls of a few
/// bytes.
///
/// # Safety
/// As C `memcpy`: `src` valid for `n` reads, `dst` for `n` writes, no overlap.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { memcpy_general(dst, src, n) }
}

/// `blockmem_memcpy`'s general path (see [`copy_general`]).
///
/// # Safety
/// As `blockmem_memcpy`.
#[inline(never)]
unsafe extern "C" fn memcpy_general(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::copy_raw(dst.cast(), src.cast(), n, Hint::Auto) }.cast()
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_memmove`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memmove_avx512(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = avx512, above = dispatch::wide::move_above, hint = "xor ecx, ecx", overlap = possible
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// `blockmem_memmove`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memmove_avx2(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = avx2, general = memmove_general, overlap = possible
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// C `memmove` with blockmem's policy (hint auto): [`blockmem_move`] in `memmove`'s
    /// shape (see [`blockmem_memcpy`]).
    ///
    /// # Safety
    /// As C `memmove`: `src` valid for `n` reads, `dst` for `n` writes.
    #[no_mangle]
    pub fn blockmem_memmove(dst: *mut c_void, src: *const c_void, n: usize);
    avx512 = blockmem_memmove_avx512, avx2 = blockmem_memmove_avx2, general = memmove_general
}

/// C `memmove` with blockmem's policy (hint auto): [`blockmem_move`] in `memmove`'s
/// shape (see [`blockmem_memcpy`]).
///
/// # Safety
/// As C `memmove`: `src` valid for `n` reads, `dst` for `n` writes.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_memmove(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { memmove_general(dst, src, n) }
}

/// `blockmem_memmove`'s general path (see [`copy_general`]).
///
/// # Safety
/// As `blockmem_memmove`.
#[inline(never)]
unsafe extern "C" fn memmove_general(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::move_raw(dst.cast(), src.cast(), n, Hint::Auto) }.cast()
}

#[cfg(target_arch = "x86_64")]
blockmem::set_entry! {
    /// `blockmem_memset`'s AVX-512 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memset_avx512(dst: *mut c_void, c: c_int, n: usize);
    bodies = avx512, above = dispatch::wide::set_above, hint = "xor ecx, ecx"
}

#[cfg(target_arch = "x86_64")]
blockmem::set_entry! {
    /// `blockmem_memset`'s AVX2 bodies (`blockmem::arch::x86_64::entry`).
    fn blockmem_memset_avx2(dst: *mut c_void, c: c_int, n: usize);
    bodies = avx2, general = memset_general
}

#[cfg(target_arch = "x86_64")]
blockmem::ifunc! {
    /// C `memset` with blockmem's policy (hint auto): [`blockmem_set`] in `memset`'s
    /// shape (see [`blockmem_memcpy`]).
    ///
    /// # Safety
    /// As C `memset`: `dst` valid for `n` writes.
    #[no_mangle]
    pub fn blockmem_memset(dst: *mut c_void, c: c_int, n: usize);
    avx512 = blockmem_memset_avx512, avx2 = blockmem_memset_avx2, general = memset_general
}

/// C `memset` with blockmem's policy (hint auto): [`blockmem_set`] in `memset`'s
/// shape (see [`blockmem_memcpy`]).
///
/// # Safety
/// As C `memset`: `dst` valid for `n` writes.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn blockmem_memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { memset_general(dst, c, n) }
}

/// `blockmem_memset`'s general path (see [`copy_general`]).
///
/// # Safety
/// As `blockmem_memset`.
#[inline(never)]
unsafe extern "C" fn memset_general(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { blockmem::set_raw(dst.cast(), c as u8, n, Hint::Auto) }.cast()
}

/// The library version, e.g. `"0.1.0"` (static storage).
#[no_mangle]
pub extern "C" fn blockmem_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("version contains a NUL"),
        };
    VERSION.as_ptr()
}

/// Number of kernels in this build's table; valid indices are `0..count`.
#[no_mangle]
pub extern "C" fn blockmem_kernel_count() -> usize {
    kernel::table().len()
}

/// The stable name of kernel `index` (valid for the life of the process), or NULL if
/// out of range.
#[no_mangle]
pub extern "C" fn blockmem_kernel_name(index: usize) -> *const c_char {
    kernel_c_names()
        .get(index)
        .map_or(std::ptr::null(), |n| n.as_ptr())
}

/// The index of the kernel named `name`, or -1 (also for NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn blockmem_kernel_index(name: *const c_char) -> c_int {
    // SAFETY: forwarded contract.
    match unsafe { str_arg(name) }.and_then(KernelId::from_name) {
        Some(id) => index_of(id),
        None => -1,
    }
}

/// True if this CPU can run kernel `index` (false if out of range).
#[no_mangle]
pub extern "C" fn blockmem_kernel_available(index: usize) -> bool {
    kernel::table().get(index).is_some_and(|k| k.is_available())
}

/// True if kernel `index` implements `op` (a `BlockmemOp`); false if either is out of
/// range.
#[no_mangle]
pub extern "C" fn blockmem_kernel_supports(index: usize, op: BlockmemOpArg) -> bool {
    match (kernel::table().get(index), to_op(op)) {
        (Some(k), Some(o)) => k.supports(o),
        _ => false,
    }
}

/// The kernel index a call of `op` on `n` bytes with `hint` would use above the inline
/// size ladder (what `blockmem info` prints), honouring a forced kernel. `overlap` says
/// whether a move's ranges overlap. [`BLOCKMEM_CHOICE_PROBES`] where the call probes
/// its destination first; -1 if `op` is out of range.
#[no_mangle]
pub extern "C" fn blockmem_choose(
    op: BlockmemOpArg,
    n: usize,
    hint: BlockmemHintArg,
    overlap: bool,
) -> c_int {
    blockmem_choose_state(op, n, hint, overlap, 0)
}

/// As [`blockmem_choose`], for a call whose probe found the destination in `state`
/// (a `BlockmemState` value; 0, unknown, is [`blockmem_choose`]). -1 if `op` or
/// `state` is out of range.
#[no_mangle]
pub extern "C" fn blockmem_choose_state(
    op: BlockmemOpArg,
    n: usize,
    hint: BlockmemHintArg,
    overlap: bool,
    state: u32,
) -> c_int {
    let (Some(o), Some(&st)) = (to_op(op), State::ALL.get(state as usize)) else {
        return -1;
    };
    match dispatch::choose_probed(o, n, to_hint(hint), overlap, st) {
        Some(k) => index_of(k),
        None => BLOCKMEM_CHOICE_PROBES,
    }
}

/// Forces the kernel named `name` for every op it implements (ops it lacks keep the
/// policy), or restores the policy when `name` is NULL or `"auto"`. This is what
/// `BLOCKMEM_FORCE` does in the shim. Returns `BLOCKMEM_OK`,
/// `BLOCKMEM_ERR_UNKNOWN_KERNEL` or `BLOCKMEM_ERR_UNAVAILABLE` (and then changes
/// nothing). Process-wide; safe to call from any thread.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn blockmem_force(name: *const c_char) -> c_int {
    if name.is_null() {
        dispatch::force(None);
        return BLOCKMEM_OK;
    }
    // SAFETY: forwarded contract.
    let Some(name) = (unsafe { str_arg(name) }) else {
        return BLOCKMEM_ERR_UNKNOWN_KERNEL;
    };
    if name == "auto" {
        dispatch::force(None);
        return BLOCKMEM_OK;
    }
    let Some(id) = KernelId::from_name(name) else {
        return BLOCKMEM_ERR_UNKNOWN_KERNEL;
    };
    if !id.kernel().is_some_and(|k| k.is_available()) {
        return BLOCKMEM_ERR_UNAVAILABLE;
    }
    dispatch::force(Some(id));
    BLOCKMEM_OK
}

/// The index of the forced kernel, or -1 when the policy decides.
#[no_mangle]
pub extern "C" fn blockmem_forced() -> c_int {
    dispatch::forced().map_or(-1, index_of)
}

/// Writes the decision table in use, in the profile format (`blockmem info` prints the
/// same), NUL-terminated into `buf` (truncated to `cap - 1` bytes). Returns the text's
/// full length. `buf` may be NULL when `cap` is 0, to ask for the length. Not
/// async-signal-safe (it allocates).
///
/// # Safety
/// `buf` is valid for `cap` writes (or `cap` is 0).
#[no_mangle]
pub unsafe extern "C" fn blockmem_table(buf: *mut c_char, cap: usize) -> usize {
    let mut text = String::new();
    let source = format!("source: {}", dispatch::status().0.name());
    let _ = profile::render(&mut text, dispatch::table(), &[&source], &|_, _, _| None);
    // SAFETY: forwarded contract.
    unsafe { write_c_string(&text, buf, cap) }
}

/// Writes `msg` NUL-terminated into `buf` (truncated to `cap - 1` bytes); returns its
/// full length.
///
/// # Safety
/// `buf` is valid for `cap` writes (or `cap` is 0).
unsafe fn write_c_string(msg: &str, buf: *mut c_char, cap: usize) -> usize {
    if cap > 0 && !buf.is_null() {
        let n = msg.len().min(cap - 1);
        // SAFETY: `buf` is valid for `cap > n` writes; the message does not overlap it.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    msg.len()
}

/// The message of the last rejected profile load through [`blockmem_profile_load`]
/// with a path (the core keeps the automatic load's error itself).
static LAST_LOAD_ERROR: Mutex<Option<String>> = Mutex::new(None);

fn set_load_error(e: Option<String>) {
    *LAST_LOAD_ERROR.lock().unwrap_or_else(|p| p.into_inner()) = e;
}

/// Loads a calibration profile and installs it for the whole process.
///
/// With a path, reads and parses that file (rows it does not give keep the
/// built-in table's); with NULL, loads again from `BLOCKMEM_PROFILE` or the default path
/// (`$XDG_CACHE_HOME/blockmem/profile`, else `~/.cache/blockmem/profile`), as the
/// library does by itself on first use. Returns `BLOCKMEM_OK`, or
/// `BLOCKMEM_ERR_PROFILE` when the file is unreadable or malformed: the profile in use
/// is then left unchanged (path given) or falls back to the built-in table (NULL), and
/// [`blockmem_profile_error`] says why. Not async-signal-safe (it reads a file and
/// allocates); call it at start-up.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn blockmem_profile_load(path: *const c_char) -> c_int {
    if path.is_null() {
        set_load_error(None);
        return match dispatch::reload() {
            (_, None) => BLOCKMEM_OK,
            (_, Some(_)) => BLOCKMEM_ERR_PROFILE,
        };
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let path = unsafe { CStr::from_ptr(path) };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) => {
            set_load_error(Some(format!("{}: {e}", path.display())));
            return BLOCKMEM_ERR_PROFILE;
        }
    };
    match profile::parse(&text, dispatch::builtin_class().table()) {
        Ok((t, _)) => {
            set_load_error(None);
            dispatch::install(&t);
            BLOCKMEM_OK
        }
        Err(e) => {
            set_load_error(Some(format!("{}: {e}", path.display())));
            BLOCKMEM_ERR_PROFILE
        }
    }
}

/// Where the decision table in use came from (static storage): `built-in` (the CPU
/// class's table), `BLOCKMEM_PROFILE`, `default-path`, `installed` (loaded with a
/// path), or `built-in (AT_SECURE: environment ignored)`.
#[no_mangle]
pub extern "C" fn blockmem_profile_source() -> *const c_char {
    match dispatch::status().0 {
        Source::NotLoaded => c"not-loaded",
        Source::Defaults => c"built-in",
        Source::Env => c"BLOCKMEM_PROFILE",
        Source::DefaultPath => c"default-path",
        Source::Installed => c"installed",
        Source::Secure => c"built-in (AT_SECURE: environment ignored)",
    }
    .as_ptr()
}

/// Why the last profile load was rejected (`"line 3: unknown key"`, with the file name
/// for loads with a path), written NUL-terminated into `buf` (truncated to `cap - 1`
/// bytes). Returns the message's full length, 0 if the profile in use was not
/// rejected. `buf` may be NULL when `cap` is 0, to ask for the length.
///
/// # Safety
/// `buf` is valid for `cap` writes (or `cap` is 0).
#[no_mangle]
pub unsafe extern "C" fn blockmem_profile_error(buf: *mut c_char, cap: usize) -> usize {
    let explicit = LAST_LOAD_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let Some(msg) = explicit.or_else(|| dispatch::status().1.map(|e| e.to_string())) else {
        return 0;
    };
    // SAFETY: forwarded contract.
    unsafe { write_c_string(&msg, buf, cap) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_its_c_name() {
        assert_eq!(blockmem_kernel_count(), kernel::table().len());
        for (i, k) in kernel::table().iter().enumerate() {
            // SAFETY: in-range indices give static NUL-terminated names.
            let name = unsafe { CStr::from_ptr(blockmem_kernel_name(i)) };
            assert_eq!(name.to_str().unwrap(), k.name());
        }
        assert!(blockmem_kernel_name(kernel::table().len()).is_null());
    }

    #[test]
    fn op_and_hint_values_match_the_core() {
        for (i, o) in Op::ALL.into_iter().enumerate() {
            assert_eq!(to_op(i as u32), Some(o));
        }
        assert_eq!(to_op(4), None);
        assert_eq!(to_hint(BlockmemHint::BLOCKMEM_HINT_AUTO as u32), Hint::Auto);
        assert_eq!(
            to_hint(BlockmemHint::BLOCKMEM_HINT_REUSE as u32),
            Hint::Reuse
        );
        assert_eq!(
            to_hint(BlockmemHint::BLOCKMEM_HINT_NO_REUSE as u32),
            Hint::NoReuse
        );
        assert_eq!(to_hint(77), Hint::Auto);
        assert_eq!(BlockmemOp::BLOCKMEM_OP_ZERO as u32, 3);
    }

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: blockmem_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(blockmem_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
