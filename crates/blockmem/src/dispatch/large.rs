//! Calls above the inline ladder. The hot path reads the entry point compiled into the
//! band of the plan's `unknown` row (for an Auto call in a recalling band, one of two,
//! by [`written_lately`]: `auto_entry`) and ends in a jump to the kernel. A band without
//! one (it probes or recalls) takes the decision, [`Plan::choose`], step by step
//! ([`decide_call`]): probe the destination, ask the memories, run what it names.
//! So does a call large enough that a contended row may differ from its twin
//! ([`Plan::contend_from`]): it counts itself among the large calls in flight first
//! (`contention`).

use crate::arch::generic::disjoint;
use crate::kernel::{CopyFn, Hint, KernelId, Op, SetFn};
use crate::policy::{self, Choice, Known, Load, Plan};
use crate::profile::{Family, State};

use super::contention;
use super::memory::{met_again, remember_streamed, streamed_window, tsc, written_lately};
use super::publish::{plan, published};

/// What a copy entry may assume about its ranges (the `K` of `ladder::copy_entry`).
pub(super) const DISJOINT: u8 = 0;
/// The ranges may overlap: memmove.
pub(super) const MOVE: u8 = 1;
/// The ranges should not overlap but might: the shim's `memcpy`, which copies
/// overlapping ranges as a move (see the preload crate's docs).
pub(super) const FORGIVE: u8 = 2;

/// The state of a block from one timed load of its middle line, or past the LLC of a
/// line half the LLC from its end ([`policy::probe_offset`]), after an untimed load
/// 2 KiB away in the same page fills the TLB and tells a fresh page by its fault (see
/// `probe::mate_then_load_cycles`).
///
/// # Safety
/// `b` valid for `n` one-byte reads, `n >= 4096`.
#[inline]
unsafe fn probe_block(b: *const u8, n: usize, plan: &Plan) -> State {
    debug_assert!(n >= policy::PROBE_MIN_BYTES);
    let o = policy::probe_offset(n, plan.llc_effective());
    // The page before the probed line's, or after it, whichever lies in the block.
    let neighbour = if o >= 4096 {
        Some(o - 4096)
    } else if o + 4096 < n {
        Some(o + 4096)
    } else {
        None
    };
    // SAFETY: probe_offset(n, _) < n for n >= 4096 and the neighbour is inside the
    // block; the page mate needs no more (see probe::mate_then_load_cycles).
    unsafe {
        crate::probe::probe(
            b.add(o),
            neighbour.map(|x| b.add(x)),
            plan.probe_hit_max(),
            plan.probe_fault_min(),
        )
    }
}

/// The state a call's probe found: `Cached` without a probe for an overlapping move
/// (its destination is read as its source), and for a block too small to probe.
///
/// # Safety
/// `dst` valid for `n` one-byte reads.
#[inline]
unsafe fn probed_state(plan: &Plan, op: Op, dst: *const u8, src: *const u8, n: usize) -> State {
    if n < policy::PROBE_MIN_BYTES || (op == Op::Move && !disjoint(dst as *mut u8, src, n)) {
        return State::Cached;
    }
    // SAFETY: forwarded contract, n >= 4096.
    unsafe { probe_block(dst, n, plan) }
}

/// The kernel and entry point of a call whose `unknown` band has no compiled entry
/// point (it probes or recalls), and of the tracer's calls ([`super::decide_for_call`]):
/// asks [`Plan::choose`] with what is known of `dst`, finds out what it asks for (a
/// probe, the memory of written pages, the memory of streamed blocks, in that order),
/// and asks again, until it names a kernel (at most four asks: each adds knowledge, and
/// one that knows the probe's or a memory's answer never asks for it again). `load`:
/// whether the call shares the memory system (see `contention`).
///
/// # Safety
/// As [`probed_state`].
pub(super) unsafe fn decide_call(
    plan: &Plan,
    op: Op,
    dst: *const u8,
    src: *const u8,
    n: usize,
    hint: Hint,
    load: Load,
) -> (KernelId, *mut ()) {
    let mut known = Known::Unknown;
    loop {
        known = match plan.choose(op, n, hint, known, load, false) {
            Choice::Run(k, f) => return (k, f),
            // SAFETY: forwarded contract.
            Choice::Probe => Known::Probed(unsafe { probed_state(plan, op, dst, src, n) }),
            Choice::Recall(k, f) => {
                if !written_lately(dst as usize, n, tsc) {
                    return (k, f);
                }
                Known::WrittenLately
            }
            Choice::Stream(k, f) => {
                let now = tsc();
                if !met_again(dst as usize, now, streamed_window(plan.llc_effective(), n)) {
                    remember_streamed(dst as usize, now);
                    return (k, f);
                }
                Known::StreamedLately
            }
        };
    }
}

/// A copy or move above the inline sizes: the row of the plan for the hint, then the
/// band's kernel, or a probe where the band probes.
///
/// # Safety
/// As [`copy_entry`].
#[inline(never)]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
pub(super) unsafe extern "C" fn copy_large<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    let op = match K {
        DISJOINT => Op::Copy,
        MOVE => Op::Move,
        _ if disjoint(dst, src, n) => Op::Copy,
        _ => Op::Move,
    };
    if op == Op::Move && core::ptr::eq(dst, src) {
        return dst;
    }
    // SAFETY: forwarded contract; every move kernel is overlap-safe (the streaming ones
    // store temporally when the ranges overlap).
    unsafe {
        let Some(plan) = published() else {
            first_call(op, dst, src, 0, n, hint);
            return dst;
        };
        // Auto: the band and, where it recalls, its recall in one search (as the C
        // entries above their inline sizes).
        let entry = if hint == Hint::Auto {
            auto_entry(Family::Copy, n, op == Op::Move, dst)
        } else {
            hinted_entry(plan, Family::Copy, n, op == Op::Move, hint)
        };
        if entry.is_null() {
            return copy_by_probe(plan, op, dst, src, n, hint);
        }
        // The kernel returns `dst`: a jump (see `kernel::CopyFn`).
        as_copy(entry)(dst, src, n)
    }
}

/// A set or zero above the inline sizes (as [`copy_large`]).
///
/// # Safety
/// As [`set_entry`].
#[inline(never)]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
pub(super) unsafe extern "C" fn set_large(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    let op = if byte == 0 { Op::Zero } else { Op::Set };
    // SAFETY: forwarded contract.
    unsafe {
        let Some(plan) = published() else {
            first_call(op, dst, core::ptr::null(), byte, n, hint);
            return dst;
        };
        let entry = if hint == Hint::Auto {
            auto_entry(Family::Set, n, byte == 0, dst)
        } else {
            hinted_entry(plan, Family::Set, n, byte == 0, hint)
        };
        if entry.is_null() {
            return set_by_probe(plan, op, dst, byte, n, hint);
        }
        // The kernel returns `dst`: a jump (see `kernel::CopyFn`).
        as_set(entry)(dst, byte, n)
    }
}

/// The entry point an Auto call of `n` bytes at `dst` runs under the published plan
/// (`second`: the family's second op, move or zero), without probing: the compiled
/// form of [`Plan::choose`] for it (the band's entry point; in a recalling band the
/// `cached` row's kernel's where [`written_lately`] says so, else the band's own); null
/// where the band probes or before a plan is published (then [`decide_call`]). Every
/// `memcpy`, `memmove` and `memset` through the shim reads these rows; the C entries
/// above their inline sizes and the general path's Auto calls come here first, one band
/// search serving both the band and its recall
/// (`docs/results/epyc-zen5-2vcpu/written-lately`).
#[inline(always)]
pub(super) fn auto_entry(family: Family, n: usize, second: bool, dst: *mut u8) -> *mut () {
    let Some(plan) = published() else {
        return core::ptr::null_mut();
    };
    if n >= plan.contend_from(family, Hint::Auto) {
        return core::ptr::null_mut();
    }
    let row = plan.row(family, Hint::Auto, State::Unknown);
    let i = row.band(n);
    let f = row.entry_at(i, second);
    if !f.is_null() {
        return f;
    }
    let (own, hot) = plan.recalls(family, Hint::Auto).entries_at(i, n, second);
    if own.is_null() || hot.is_null() {
        // A band that probes (null: the general path), or sizes of a recalling band
        // where the cached row runs the band's own kernel.
        return own;
    }
    if written_lately(dst as usize, n, tsc) {
        hot
    } else {
        own
    }
}

/// The entry point a hinted call of `n` bytes runs without probing or counting (see
/// [`auto_entry`]); null where it must (then [`decide_call`]).
#[inline(always)]
fn hinted_entry(plan: &Plan, family: Family, n: usize, second: bool, hint: Hint) -> *mut () {
    if n >= plan.contend_from(family, hint) {
        return core::ptr::null_mut();
    }
    plan.row(family, hint, State::Unknown).entry(n, second)
}

/// The load a call of `n` bytes decides under, counting it among the large calls in
/// flight where it is large enough to (then the caller calls `contention::leave`
/// after its kernel).
#[inline(always)]
fn enter(plan: &Plan, family: Family, hint: Hint, n: usize) -> Option<Load> {
    (n >= plan.contend_from(family, hint)).then(|| contention::enter(plan))
}

/// The entry point of a band, as a copy kernel.
///
/// # Safety
/// `f` is a non-null `CopyFn` entry point from a compiled copy-family row.
#[inline(always)]
pub(super) unsafe fn as_copy(f: *mut ()) -> CopyFn {
    // SAFETY: per the contract the pointer came from a `CopyFn`.
    unsafe { core::mem::transmute::<*mut (), CopyFn>(f) }
}

/// The entry point of a band, as a set kernel.
///
/// # Safety
/// `f` is a non-null `SetFn` entry point from a compiled set-family row.
#[inline(always)]
pub(super) unsafe fn as_set(f: *mut ()) -> SetFn {
    // SAFETY: per the contract the pointer came from a `SetFn`.
    unsafe { core::mem::transmute::<*mut (), SetFn>(f) }
}

/// The first large call of the process (nothing published yet): initialise, then run
/// the call again through the plan, or, where the initialisation is already under
/// way further up this thread's stack (a re-entered call publishes nothing), with
/// the portable kernel.
///
/// # Safety
/// As the op's C contract (see [`copy_large`] and [`set_large`]).
#[cold]
#[inline(never)]
unsafe fn first_call(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize, hint: Hint) {
    plan();
    // SAFETY: forwarded contract.
    unsafe {
        if published().is_some() {
            match op {
                Op::Copy => copy_large::<DISJOINT>(dst, src, n, hint),
                Op::Move => copy_large::<MOVE>(dst, src, n, hint),
                Op::Set | Op::Zero => set_large(dst, byte, n, hint),
            };
            return;
        }
        // Re-entered before any plan was published: no table to read.
        let f = policy::entry_of(KernelId::Portable, op);
        match op {
            Op::Copy | Op::Move => as_copy(f)(dst, src, n),
            Op::Set | Op::Zero => as_set(f)(dst, byte, n),
        };
    }
}

/// The probing path (and a recalling band's) of a copy or move: probe, then run the
/// kernel of the state found; returns `dst`, the kernel's own return (a jump: see
/// `kernel::CopyFn`). Out of line: it is taken only by calls large enough that the
/// probe pays, or whose band recalls. Six arguments, all in registers, so that its
/// callers can end in a jump to it.
///
/// # Safety
/// As the op's C contract (see [`copy_large`]); `plan` the published plan.
#[inline(never)]
// `extern "C"`, as `copy_large`: a caller of the same convention can end in a jump to
// it, and it in a jump to the kernel.
#[allow(improper_ctypes_definitions)] // called from Rust only
unsafe extern "C" fn copy_by_probe(
    plan: &Plan,
    op: Op,
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract (one-byte reads inside the ranges).
    unsafe {
        let Some(load) = enter(plan, Family::Copy, hint, n) else {
            let (_, f) = decide_call(plan, op, dst, src, n, hint, Load::Alone);
            return as_copy(f)(dst, src, n);
        };
        let (_, f) = decide_call(plan, op, dst, src, n, hint, load);
        as_copy(f)(dst, src, n);
        contention::leave();
        dst
    }
}

/// [`copy_by_probe`] for a set or zero.
///
/// # Safety
/// As [`copy_by_probe`].
#[inline(never)]
#[allow(improper_ctypes_definitions)] // called from Rust only
unsafe extern "C" fn set_by_probe(
    plan: &Plan,
    op: Op,
    dst: *mut u8,
    byte: u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract (a one-byte read inside the range).
    unsafe {
        let Some(load) = enter(plan, Family::Set, hint, n) else {
            let (_, f) = decide_call(plan, op, dst, core::ptr::null(), n, hint, Load::Alone);
            return as_set(f)(dst, byte, n);
        };
        let (_, f) = decide_call(plan, op, dst, core::ptr::null(), n, hint, load);
        as_set(f)(dst, byte, n);
        contention::leave();
        dst
    }
}
