//! The contention input of the decision: how many large calls of the process are in
//! flight (seed 004: copies share the memory system). A call at least as large as its
//! plan's [`Plan::contend_from`] adds itself to one process-wide count before it
//! decides and takes itself off when its kernel returns; with the table's
//! `contended_calls` in flight, itself included, it reads the contended rows. Smaller
//! calls, and every call under a table whose contended rows equal their twins, never
//! touch the count; nor does any call while the input is switched off
//! ([`super::sense_contention`]). What it costs alone and buys under load:
//! `docs/results/xeon-clx-2vcpu/contention`.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::policy::{Load, Plan};

/// A counter on a 128-byte pair of lines of its own (the adjacent-line prefetcher
/// fetches pairs), so that counting never takes a line other data lives in.
#[repr(align(128))]
struct Padded(AtomicUsize);

static IN_FLIGHT: Padded = Padded(AtomicUsize::new(0));

/// Adds a call to the count and returns its load. The caller calls [`leave`] when its
/// kernel has returned.
#[inline]
pub(super) fn enter(plan: &Plan) -> Load {
    let with_me = IN_FLIGHT.0.fetch_add(1, Ordering::Relaxed) + 1;
    load_of(plan, with_me)
}

/// Takes a call that [`enter`]ed off the count.
#[inline]
pub(super) fn leave() {
    IN_FLIGHT.0.fetch_sub(1, Ordering::Relaxed);
}

/// The load a call would find, without counting it (the tracer's decision, whose
/// kernel runs apart from it).
#[inline]
pub(super) fn peek(plan: &Plan) -> Load {
    load_of(plan, IN_FLIGHT.0.load(Ordering::Relaxed) + 1)
}

fn load_of(plan: &Plan, with_me: usize) -> Load {
    if with_me >= plan.contended_calls() {
        Load::Contended
    } else {
        Load::Alone
    }
}

/// The large calls in flight now.
pub fn in_flight() -> usize {
    IN_FLIGHT.0.load(Ordering::Relaxed)
}
