//! The core's instances of the assembly entries (`arch::x86_64::entry`), which every
//! call of the Rust API enters, and the way on of every C entry above its bodies'
//! sizes. A C entry point that checks once, at load, which entry bodies may run
//! ([`level`]) and keeps the answer in a flag of its own calls [`copy`] and friends
//! directly, without reading `SMALL` (which a shared object reaches through its GOT:
//! two dependent loads per call).

use core::ffi::{c_int, c_void};

use crate::arch::generic::disjoint;
use crate::kernel::Hint;
use crate::profile::Family;

use super::ladder::{copy_general, set_general};
use super::large::{as_copy, as_set, auto_entry, copy_large, set_large, DISJOINT, FORGIVE, MOVE};
use super::publish::{LEVEL, ROUTE};
use crate::arch::x86_64::entry::{level_of, SET_WIDE_MAX};

pub use crate::arch::x86_64::entry::{LEVEL_AVX2, LEVEL_AVX512};

/// Which assembly entry bodies this process may run: [`LEVEL_AVX512`] (AVX-512BW,
/// VL and BMI2 with ZMM state enabled by the OS), [`LEVEL_AVX2`] (AVX2 with YMM
/// state), or 0 (neither: the general path). Respects a feature mask. Reads CPUID
/// only, no profile: a library's constructor may call it without file I/O.
pub fn level() -> u8 {
    level_of(crate::cpu::features())
}

/// A copy of more than 512 bytes, for the C entries of
/// [`copy_entry!`](crate::copy_entry): the 256-byte loop, then the plan.
///
/// # Safety
/// As [`super::copy`] and [`copy`]; `hint` a C ABI hint value.
pub unsafe extern "C" fn copy_above(dst: *mut u8, src: *const u8, n: usize, hint: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_above_c::<DISJOINT>(dst, src, n, hint) }
}

/// [`copy_above`] for a copy that forgives overlap (the shim's `memcpy`).
///
/// # Safety
/// As [`super::copy_forgiving`] and [`copy`].
pub unsafe extern "C" fn copy_forgiving_above(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: u32,
) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_above_c::<FORGIVE>(dst, src, n, hint) }
}

/// [`copy_above`] for a move.
///
/// # Safety
/// As [`super::move_`] and [`copy`].
pub unsafe extern "C" fn move_above(dst: *mut u8, src: *const u8, n: usize, hint: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_above_c::<MOVE>(dst, src, n, hint) }
}

/// A set the C entries of [`set_entry!`](crate::set_entry) do not handle inline
/// (more than 2048 bytes).
///
/// # Safety
/// As [`super::set`] and [`copy`].
pub unsafe extern "C" fn set_above(
    dst: *mut u8,
    c: core::ffi::c_int,
    n: usize,
    hint: u32,
) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_above_c(dst, c as u8, n, hint) }
}

/// [`super::copy`] (the core's routed entry), for a C entry whose own flag says the
/// AVX-512 bodies run.
///
/// # Safety
/// As [`super::copy`].
#[inline(always)]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_routed_entry::<DISJOINT>(dst, src, n, hint) }
}

/// [`super::copy_forgiving`] (see [`copy`]).
///
/// # Safety
/// As [`super::copy_forgiving`].
#[inline(always)]
pub unsafe fn copy_forgiving(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: as in `copy`.
    unsafe { copy_routed_entry::<FORGIVE>(dst, src, n, hint) }
}

/// [`super::move_`] (see [`copy`]).
///
/// # Safety
/// As [`super::move_`].
#[inline(always)]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: as in `copy`.
    unsafe { copy_routed_entry::<MOVE>(dst, src, n, hint) }
}

/// [`super::set`] (see [`copy`]).
///
/// # Safety
/// As [`super::set`].
#[inline(always)]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: as in `copy`.
    unsafe { set_routed_entry(dst, byte, n, hint) }
}

/// A C entry's copy or move above its inline sizes. An Auto call (the C ABI's
/// `BLOCKMEM_HINT_AUTO`, every call through the shim) whose band runs a kernel goes
/// straight to it: one load of the plan, the band search, one indirect jump, without
/// decoding the hint, testing the inline classes again or computing the row as
/// `copy_wide` and `copy_large` would (`docs/results/epyc-zen5-2vcpu/written-lately/dispatch-notes.md`). A move runs the band's move kernel, a
/// copy its copy kernel, and the shim's forgiving `memcpy` the one its ranges call for
/// (as `large::copy_large` chooses, so that the kernel a trace reports is the one that ran).
/// Anything else (another hint, a probing band, no plan yet) takes the general path.
///
/// # Safety
/// As `ladder::copy_wide`; disjoint ranges when `K` is [`DISJOINT`].
#[inline(always)]
unsafe fn copy_above_c<const K: u8>(dst: *mut u8, src: *const u8, n: usize, hint: u32) -> *mut u8 {
    if hint == Hint::C_AUTO {
        let second = match K {
            DISJOINT => false,
            MOVE => true,
            _ => !disjoint(dst, src, n),
        };
        let f = auto_entry(Family::Copy, n, second, dst);
        if !f.is_null() {
            // SAFETY: forwarded contract; `f` is a copy-family entry point of the
            // published plan, for the op the ranges allow. It returns `dst`: the call
            // is the function's last act, a jump (see `kernel::CopyFn`).
            return unsafe { as_copy(f)(dst, src, n) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { copy_wide::<K>(dst, src, n, Hint::from_c(hint)) }
}

/// A C entry's set above its inline sizes (as [`copy_above_c`]).
///
/// # Safety
/// As `ladder::set_wide`.
#[inline(always)]
unsafe fn set_above_c(dst: *mut u8, byte: u8, n: usize, hint: u32) -> *mut u8 {
    if hint == Hint::C_AUTO && n > SET_WIDE_MAX {
        let f = auto_entry(Family::Set, n, byte == 0, dst);
        if !f.is_null() {
            // SAFETY: forwarded contract; `f` is a set-family entry point of the
            // published plan (a zero kernel's set-shaped entry for a zero byte). It
            // returns `dst`: the call is the function's last act, a jump.
            return unsafe { as_set(f)(dst, byte, n) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { set_wide(dst, byte, n, Hint::from_c(hint)) }
}

// ---- the core's instances of the assembly entries, which every call of the Rust API
// enters: every door runs the same small-size blocks, placed by the assembly's layout
// rules rather than wherever the caller's compiled code lands
// (`docs/results/xeon-clx-2vcpu/shared-blocks`). They are `routed`, as the shim's: the
// route opens where the AVX-512 bodies may run, and the level byte sends the other
// calls to the AVX2 bodies or to the Rust ladder and the plan (`general`), so that the
// Rust API reads no flag of its own before the first size compare.

crate::copy_entry! {
    /// A copy of disjoint ranges: `(dst, src, n, C hint) -> dst`.
    pub(super) fn copy_routed(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = routed, route = ROUTE, flag = LEVEL, general = copy_general_c::<DISJOINT>,
    above = copy_above, hint = "", overlap = disjoint
}

crate::copy_entry! {
    /// A copy whose ranges may overlap, copied as a move (the shim's `memcpy`).
    pub(super) fn copy_forgiving_routed(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = routed, route = ROUTE, flag = LEVEL, general = copy_general_c::<FORGIVE>,
    above = copy_forgiving_above, hint = "", overlap = possible
}

crate::copy_entry! {
    /// A move.
    pub(super) fn move_routed(dst: *mut u8, src: *const u8, n: usize, hint: u32);
    bodies = routed, route = ROUTE, flag = LEVEL, general = copy_general_c::<MOVE>,
    above = move_above, hint = "", overlap = possible
}

crate::set_entry! {
    /// A set: `(dst, byte, n, C hint) -> dst`.
    pub(super) fn set_routed(dst: *mut u8, c: c_int, n: usize, hint: u32);
    bodies = routed, route = ROUTE, flag = LEVEL, general = set_general_c, above = set_above,
    hint = ""
}

/// `general` of the routed copy and move entries: the Rust ladder and the plan, for
/// the ranges `K` allows.
///
/// # Safety
/// As [`super::copy`] (`K` = `DISJOINT`), [`super::copy_forgiving`] or
/// [`super::move_`]; `hint` a C ABI hint value.
unsafe extern "C" fn copy_general_c<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: u32,
) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_general::<K>(dst, src, n, Hint::from_c(hint)) }
}

/// `general` of [`set_routed`].
///
/// # Safety
/// As [`super::set`]; `hint` a C ABI hint value.
unsafe extern "C" fn set_general_c(dst: *mut u8, c: c_int, n: usize, hint: u32) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_general(dst, c as u8, n, Hint::from_c(hint)) }
}

/// The entry's return value as the Rust API's pointer.
#[inline(always)]
fn ret(p: *mut c_void) -> *mut u8 {
    p.cast()
}

/// The Rust API's copy or move on x86-64: a call to the core's routed entry for `K`.
///
/// # Safety
/// As [`super::copy`]; disjoint ranges when `K` is [`DISJOINT`].
#[inline(always)]
pub(super) unsafe fn copy_routed_entry<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    let h = hint.to_c();
    // SAFETY: forwarded contract; the entry for `K` takes exactly the ranges `K` allows.
    let r = unsafe {
        match K {
            DISJOINT => copy_routed(dst, src, n, h),
            MOVE => move_routed(dst, src, n, h),
            _ => copy_forgiving_routed(dst, src, n, h),
        }
    };
    ret(r)
}

/// The Rust API's set on x86-64 (see [`copy_routed_entry`]).
///
/// # Safety
/// As [`super::set`].
#[inline(always)]
pub(super) unsafe fn set_routed_entry(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    ret(unsafe { set_routed(dst, byte as core::ffi::c_int, n, hint.to_c()) })
}

/// A copy the AVX-512 entry bodies do not finish themselves (more than 2112 bytes, or
/// overlapping ranges of more than 512), by a hint other than `auto` or a band the
/// compiled entries do not take: the plan.
///
/// # Safety
/// As [`copy_entry`]; AVX-512F/BW/VL and BMI2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
pub(super) unsafe extern "C" fn copy_wide<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_large::<K>(dst, src, n, hint) }
}

/// A set the AVX-512 entry bodies do not finish themselves (more than 2048 bytes):
/// the plan.
///
/// # Safety
/// As [`set_entry`]; AVX-512F/BW/VL and BMI2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
#[inline]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
pub(super) unsafe extern "C" fn set_wide(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_large(dst, byte, n, hint) }
}
