//! Entry points behind the public API: the inline size ladder, then one lookup in the
//! published [`Plan`](policy::Plan), then a direct call (a jump) to the kernel it names.
//!
//! ```text
//!   x86-64            a call (a jump) to the core's routed assembly entry (`wide`,
//!                     the blocks every door shares), whose route and level byte the
//!                     published plan sets:
//!     AVX-512BW+BMI2    up to 2112 bytes (copy), 512 (move) or 2048 (set) inside it
//!     AVX2              the same, with 256 for move
//!     neither           on to the Rust ladder (`general`)
//!   Rust ladder       n <= 32 scalar head/tail, n <= 128 SSE2 head/tail (other
//!                     targets: every call, n <= 32 scalar)
//!   above that        the plan's `unknown` row for the op's family and the hint:
//!                     the entry point compiled into the band holding n, else the
//!                     decision (`Plan::choose`): probe, recall, streamed lately
//! ```
//!
//! The modules, one concept each:
//! * `publish`: the published plan and the table it is compiled from
//!   (loading, [`install`], [`reload`], [`force`], [`mask_features`], [`status`]);
//! * `memory`: the two address memories, pages written lately
//!   ([`written_lately`]) and blocks streamed lately ([`met_again`]);
//! * `ladder`: the Rust API's entries and the Rust ladder;
//! * `large`: calls above the ladder: the compiled entry point, else the
//!   decision with a probe and the memories;
//! * `contention`: the count of large calls in flight, the decision's contention
//!   input (switched by [`sense_contention`]);
//! * [`wide`]: the core's instances of the assembly entries (which every call of the
//!   Rust API enters on x86-64) and the tails of every C entry's assembly bodies;
//! * `query`: the doors that ask which kernel a call runs
//!   ([`choose`], [`decide_for_call`]) and run it ([`run_kernel`]).
//!
//! The decision is made in one place, [`Plan::choose`](policy::Plan::choose) (`policy`): a pure function of
//! the compiled plan, the op, size, hint and what is known of the destination, which
//! names a kernel and its entry point or says what to find out first (probe the
//! destination, ask the memory of written pages, ask the memory of streamed blocks).
//! The hot paths read its compiled form: the entry point each band stores, and for a
//! recalling band the two entry points [`Plan::recalls`](policy::Plan::recalls) stores, chosen by
//! [`written_lately`]; anything else goes to [`Plan::choose`](policy::Plan::choose), step by step
//! (`large::decide_call`), and so do [`choose`], [`decide_for_call`] and the tracer.
//!
//! The plan is compiled ([`policy::compile`]) from the table in use: the file named by
//! `BLOCKMEM_PROFILE` or found at the default path, else the built-in table of the CPU
//! class ([`crate::builtin`]), or one a program [`install`]s. It is published through
//! one pointer; a change of table, feature mask or forced kernel compiles a spare plan
//! and swaps the pointer. The table is loaded on the first call that needs the plan.
//! Nothing here allocates, locks or calls `memcpy`; every path is async-signal-safe and
//! works before any initialisation has run.

mod contention;
mod ladder;
mod large;
mod memory;
mod publish;
mod query;
#[cfg(target_arch = "x86_64")]
pub mod wide;

use crate::kernel::Hint;
use crate::policy;
use large::{DISJOINT, FORGIVE, MOVE};

pub use contention::in_flight;
pub use ladder::inline_max;
pub use memory::{
    forget_streamed, forget_written, met_again, remember_streamed, streamed_window, written_lately,
    written_window, STREAMED_SLOTS,
};
pub use policy::keeps_streamed;
pub use publish::{
    builtin_class, force, forced, install, mask_features, plan, reload, sense_contention,
    sensing_contention, status, table,
};
pub use query::{choose, choose_probed, decide_for_call, run_kernel};

/// `memcpy` with a hint; returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, ranges disjoint.
#[inline(always)]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<DISJOINT>(dst, src, n, hint) }
}

/// `memcpy` that forgives overlap, as the preload shim's `memcpy` must (glibc's is
/// its `memmove`): small sizes as [`copy`] (every inline path loads before it stores),
/// above them a move when the ranges overlap. Returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
#[inline(always)]
pub unsafe fn copy_forgiving(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<FORGIVE>(dst, src, n, hint) }
}

/// `memmove` with a hint; returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
#[inline(always)]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<MOVE>(dst, src, n, hint) }
}

/// `memset` with a hint (a zero byte takes the zero kernel of the band); returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_entry(dst, byte, n, hint) }
}

/// The Rust API's copy and move: on x86-64 a call to the core's routed assembly entry
/// (`wide::copy_routed_entry`), the blocks every door shares; elsewhere the Rust ladder
/// (`ladder::copy_general`). Returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; disjoint ranges when `K` is
/// `DISJOINT`.
#[inline(always)]
unsafe fn copy_entry<const K: u8>(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        return wide::copy_routed_entry::<K>(dst, src, n, hint);
        #[cfg(not(target_arch = "x86_64"))]
        ladder::copy_general::<K>(dst, src, n, hint)
    }
}

/// The entry of every set and zero (as [`copy_entry`] for copies).
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
unsafe fn set_entry(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        return wide::set_routed_entry(dst, byte, n, hint);
        #[cfg(not(target_arch = "x86_64"))]
        ladder::set_general(dst, byte, n, hint)
    }
}
