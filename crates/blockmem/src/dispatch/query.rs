//! The doors that ask which kernel a call runs, all answered by
//! [`crate::policy::Plan::choose`]: [`choose`] and [`choose_probed`] (the C ABI's
//! `blockmem_choose`, `blockmem info`) for a destination neither written nor streamed
//! lately, [`decide_for_call`] (the tracer) for a real call, memories and probe
//! included; and [`run_kernel`], which runs the kernel named.

use crate::kernel::{Hint, KernelId, Op};
use crate::policy;
use crate::profile::State;

use super::ladder::runs_inline;
use super::large::{as_copy, as_set, decide_call};
use super::publish::plan;

/// The kernel a call above the inline ladder runs, given what a probe of its
/// destination found (`State::Unknown`: not probed); `None` where the band probes and
/// no state is given. What `blockmem info` prints.
pub fn choose_probed(op: Op, n: usize, hint: Hint, overlap: bool, dst: State) -> Option<KernelId> {
    plan().decide(op, n, hint, overlap, dst)
}

/// The kernel a call above the inline ladder runs without probing, `None` where its
/// band probes.
pub fn choose(op: Op, n: usize, hint: Hint, overlap: bool) -> Option<KernelId> {
    choose_probed(op, n, hint, overlap, State::Unknown)
}

/// The kernel a real call would run, decided exactly as [`super::copy`], [`super::move_`] and [`super::set`]
/// decide (inline ladder, plan, probe where its band probes), for callers that must
/// know what ran: the preload shim's tracer calls this and then [`run_kernel`] with the
/// answer, so that the kernel it records is the one the call used, probes included.
/// `None`: no kernel runs, because the inline ladder handles the size (`n` up to
/// [`super::inline_max`] for the op) or, above it, the call is a move onto itself (which
/// [`super::move_`] skips).
///
/// `op` is the op the kernel runs: `Zero` for a fill with byte 0 (what [`super::set`] does).
/// Like a real call it may probe a line of `dst` (a timed load that leaves the line
/// cached), so decide once per operation. Allocation-free and `memcpy`-free like every
/// path here. A call large enough to count the calls in flight reads the count
/// without joining it: its kernel runs apart, in [`run_kernel`].
///
/// # Safety
/// `dst` valid for `n` reads; `src` null (set and zero) or valid for `n` reads.
pub unsafe fn decide_for_call(
    op: Op,
    dst: *const u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> Option<KernelId> {
    if runs_inline(op, dst, src, n) || (op == Op::Move && core::ptr::eq(dst, src)) {
        return None;
    }
    let plan = plan();
    let load = if n >= plan.contend_from(crate::profile::Family::of(op), hint) {
        super::contention::peek(plan)
    } else {
        policy::Load::Alone
    };
    // SAFETY: forwarded contract.
    Some(unsafe { decide_call(plan, op, dst, src, n, hint, load) }.0)
}

/// Runs kernel `k` for `op` (the second half of a call whose kernel came from
/// [`decide_for_call`]) and returns `dst`. A kernel that lacks the op falls back to the
/// portable one.
///
/// # Safety
/// As the op's C contract: `dst` valid for `n` writes, `src` (copy and move) valid for
/// `n` reads, ranges disjoint for `Copy`; `k`'s CPU features present (any kernel
/// [`decide_for_call`] returns qualifies).
pub unsafe fn run_kernel(
    k: KernelId,
    op: Op,
    dst: *mut u8,
    src: *const u8,
    byte: u8,
    n: usize,
) -> *mut u8 {
    let f = policy::entry_of(k, op);
    // SAFETY: forwarded contract; `f` is `k`'s entry point for `op` (the portable
    // kernel's where `k` lacks the op): a `CopyFn` for copy and move, a `SetFn` for set
    // and zero.
    unsafe {
        match op {
            Op::Copy | Op::Move => as_copy(f)(dst, src, n),
            Op::Set | Op::Zero => as_set(f)(dst, byte, n),
        }
    }
}
