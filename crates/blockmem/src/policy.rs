//! The policy: a decision table ([`crate::profile::Table`]) compiled for the CPU into a
//! [`Plan`], and the lookup a call makes in it. Pure: no hardware access and no global
//! state, so it is unit-tested over synthetic tables and feature sets.
//!
//! A call of `n` bytes with hint `h` reads the `unknown` row of its family and hint,
//! finds the band holding `n` and either runs the band's kernel or, in a `probe` band,
//! times one load of the destination ([`probe_offset`]) and reads the band holding `n`
//! in the row of the state found (`cached` or `cold`). That is the whole policy: every
//! threshold, window and kernel choice is a band of the table, measured by
//! `blockmem calibrate` or taken from a built-in table ([`crate::builtin`]).
//!
//! One thing a call knows without probing: whether the dispatcher itself wrote its
//! destination lately (`dispatch::written_lately`). So where an `unknown` band runs
//! one kernel and the `cached` row one other for some of its sizes (both keeping what
//! they write cached), the band recalls ([`Step::Recall`]): a destination written
//! lately by such a call takes the `cached` row's kernel. No table says so explicitly; it
//! follows from the two rows, as a probe band's decision does.
//!
//! Compiling does what the CPU requires and nothing else:
//! * a kernel the CPU cannot run (or that lacks one of the family's ops: `clzero`
//!   only zeroes) is replaced by its stand-in ([`stand_in`]): the nearest kernel of
//!   the same store class the CPU can run (`avx512_pw` → `avx2_pw` → `avx2` → `sse2`
//!   → `portable`; `avx512_nt` → `avx2_nt`; …);
//! * a forced kernel (`BLOCKMEM_FORCE`) replaces every band's kernel for the ops it
//!   implements, and probes are dropped where it serves both ops of the family;
//! * neighbouring bands that end up doing the same thing are merged.
//!
//! # The decision
//! [`Plan::choose`] is the one per-call decision: `(op, n, hint, what is known of the
//! destination, load, overlap)` over the compiled plan (`load`: whether enough large
//! calls are in flight that the table's contended rows apply, [`Load`]), returning a
//! kernel and its entry point
//! ([`Choice::Run`]) or what the caller must find out first: [`Choice::Probe`] (time a
//! load of the destination, then ask again with [`Known::Probed`]),
//! [`Choice::Recall`] (ask the memory of written pages; if written lately, ask again
//! with [`Known::WrittenLately`]), [`Choice::Stream`] (a probed call about to stream a
//! block a loop may write again: ask the memory of streamed blocks; if met again, ask
//! again with [`Known::StreamedLately`], which names a temporal kernel). Pure, so it is
//! tested on synthetic tables and hosts; the dispatcher does the probing and keeps the
//! memories. Its hot paths read the forms [`compile`] generates from the same rows (a
//! band's entry point, a recalling band's pair in [`RecallRow`]), which a test checks
//! against [`Plan::choose`]; [`Plan::decide`] is its answer for reporting (no memory).
//!
//! Two rules sit outside the table because they are correctness, not speed: an
//! overlapping move never probes (its destination is read as its source: the `cached`
//! row serves it) and never streams (a streaming kernel's move runs its temporal
//! stand-in).

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::cpu::Features;
use crate::kernel::{KernelId, Op};
use crate::profile::{row_index, Action, Family, Row, State, Table, MAX_BANDS, ROWS};
use crate::Hint;

pub use crate::profile::PROBE_MIN_BYTES;

/// What a probe of a region's line found (the table's destination states).
pub type Probed = State;

/// The band marker for "probe, then read the state's row".
const PROBE: u8 = u8::MAX;

/// One compiled row: up to [`MAX_BANDS`] bands, each with its exclusive upper bound
/// and, per op of the family, the kernel and its entry point. Every field is an atomic
/// so a plan can be recompiled while other threads read it (see [`Plan`]). The bounds
/// and the first op's entry points fill one cache line each.
#[repr(C, align(64))]
pub struct PlanRow {
    /// Band `i` holds sizes below `below[i]` (and at or above `below[i - 1]`); the
    /// last band's bound is `usize::MAX`.
    below: [AtomicUsize; MAX_BANDS],
    /// Per band, the first op's entry point (a `CopyFn` or `SetFn`); null for a probe
    /// band or before the plan was first compiled.
    fn_a: [AtomicPtr<()>; MAX_BANDS],
    /// Per band, the second op's entry point (a `CopyFn` for move, a `SetFn` for zero:
    /// every zero kernel is reached through a set-shaped entry, see `dispatch`).
    fn_b: [AtomicPtr<()>; MAX_BANDS],
    /// Per band, the kernel for the family's first op (copy, set), or [`PROBE`].
    kernel_a: [AtomicU8; MAX_BANDS],
    /// Per band, the kernel for the family's second op (move, zero), or [`PROBE`].
    kernel_b: [AtomicU8; MAX_BANDS],
    /// Per band, [`RECALL_A`] and [`RECALL_B`]: the op recalls (see [`Step::Recall`];
    /// its entry point above is then null, so the dispatcher's hot path leaves it).
    recall: [AtomicU8; MAX_BANDS],
}

/// [`PlanRow::recall`]'s bit for the family's first op.
const RECALL_A: u8 = 1;
/// [`PlanRow::recall`]'s bit for the family's second op.
const RECALL_B: u8 = 2;

/// The entry points of an `unknown` row's recalling bands ([`Step::Recall`]), per band
/// and op (first, second): the band's own kernel's, the `cached` row's other kernel's,
/// and the sizes `lo..hi` where the `cached` row runs that one (elsewhere in the band
/// it runs the band's own, or streams); null entry points for a band that does not
/// recall. What the dispatcher's recall path reads, without decoding kernels or
/// searching the `cached` row.
#[repr(C, align(64))]
pub struct RecallRow {
    own: [[AtomicPtr<()>; 2]; MAX_BANDS],
    hot: [[AtomicPtr<()>; 2]; MAX_BANDS],
    lo: [[AtomicUsize; 2]; MAX_BANDS],
    hi: [[AtomicUsize; 2]; MAX_BANDS],
}

#[allow(clippy::declare_interior_mutable_const)]
const RECALL_INIT: RecallRow = RecallRow {
    own: [const { [const { AtomicPtr::new(core::ptr::null_mut()) }; 2] }; MAX_BANDS],
    hot: [const { [const { AtomicPtr::new(core::ptr::null_mut()) }; 2] }; MAX_BANDS],
    lo: [const { [const { AtomicUsize::new(0) }; 2] }; MAX_BANDS],
    hi: [const { [const { AtomicUsize::new(0) }; 2] }; MAX_BANDS],
};

impl RecallRow {
    /// The entry points (own, cached row's) for a call of `n` bytes in `u`, the row
    /// this one belongs to, for the family's second op if `second`: both null where the
    /// band holding `n` does not recall; the cached row's null where, at `n`, the
    /// cached row runs the band's own kernel (or streams).
    #[inline(always)]
    pub fn entries(&self, u: &PlanRow, n: usize, second: bool) -> (*mut (), *mut ()) {
        self.entries_at(u.band(n), n, second)
    }

    /// [`RecallRow::entries`] in band `i` ([`PlanRow::band`] of `n`).
    #[inline(always)]
    pub fn entries_at(&self, i: usize, n: usize, second: bool) -> (*mut (), *mut ()) {
        let op = second as usize;
        let own = self.own[i][op].load(Ordering::Relaxed);
        let lo = self.lo[i][op].load(Ordering::Relaxed);
        let hi = self.hi[i][op].load(Ordering::Relaxed);
        if n.wrapping_sub(lo) < hi.wrapping_sub(lo) {
            (own, self.hot[i][op].load(Ordering::Relaxed))
        } else {
            (own, core::ptr::null_mut())
        }
    }
}

/// A table compiled for one feature set: what the dispatcher reads on every call above
/// the inline sizes.
///
/// Every field is an atomic: the dispatcher publishes a plan through one pointer and
/// recompiles a spare one when the table, the feature mask or the forced kernel
/// changes. A reader that still holds an older plan while it is rewritten (only
/// possible if several installs race one call) may read a bound and a kernel from two
/// compilations; each is valid on its own (every entry point is a kernel the CPU runs,
/// for the right op), so the worst outcome is a call run by the other table's kernel.
pub struct Plan {
    rows: [PlanRow; ROWS],
    /// The table's contended rows, compiled as `rows`.
    contended: [PlanRow; ROWS],
    /// Per family and hint, the smallest size at which a contended row does something
    /// else than its twin (`usize::MAX`: never): calls from there count the large calls
    /// in flight.
    contend_from: [AtomicUsize; ROWS / 4],
    /// The table's `contended_calls`.
    contended_calls: AtomicUsize,
    llc_effective: AtomicUsize,
    probe_hit_max: AtomicUsize,
    probe_fault_min: AtomicUsize,
    loop_temporal_max: [AtomicUsize; 2],
    features: AtomicUsize,
    /// Whether a kernel was forced when the plan was compiled (see [`keeps_streamed`]).
    forced: AtomicBool,
    /// Per family and hint, the entry points of the `unknown` row's recalling bands.
    recalls: [RecallRow; ROWS / 4],
    /// The same for the contended `unknown` rows.
    contended_recalls: [RecallRow; ROWS / 4],
}

#[allow(clippy::declare_interior_mutable_const)]
const ROW_INIT: PlanRow = PlanRow {
    below: [const { AtomicUsize::new(usize::MAX) }; MAX_BANDS],
    kernel_a: [const { AtomicU8::new(KernelId::Portable as u8) }; MAX_BANDS],
    kernel_b: [const { AtomicU8::new(KernelId::Portable as u8) }; MAX_BANDS],
    recall: [const { AtomicU8::new(0) }; MAX_BANDS],
    fn_a: [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_BANDS],
    fn_b: [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_BANDS],
};

/// A kernel, its entry point for an op, and whether it is the probe marker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// Run this kernel through this entry point (a `CopyFn` or `SetFn`).
    Run(KernelId, *mut ()),
    /// Probe the destination, then read the row of the state found.
    Probe,
    /// Run this kernel, unless the destination was written lately by a call of the
    /// same kind (the dispatcher's memory of written pages): then the `cached` row's.
    /// Only an `unknown` row's band recalls, where its kernel keeps what it writes in
    /// cache and the `cached` row runs another kernel somewhere in the band.
    Recall(KernelId),
}

/// What a call knows of its destination when it asks [`Plan::choose`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Known {
    /// Nothing: not probed, no memory asked.
    Unknown,
    /// A probe found this state (an overlapping move and a block too small to probe
    /// count as `Cached` without one).
    Probed(State),
    /// A call of a recalling band wrote the page the destination starts in lately
    /// (`dispatch::written_lately`).
    WrittenLately,
    /// A probed call streamed this block lately and meets it again
    /// (`dispatch::met_again`).
    StreamedLately,
}

/// Whether a call shares the memory system: other large calls of the process in
/// flight, as many as the table's `contended_calls` with it, make it contended, and it
/// reads the table's contended rows (seed 004).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Load {
    /// Fewer large calls in flight: the rows.
    Alone,
    /// Enough: the contended rows.
    Contended,
}

/// The answer of [`Plan::choose`]: a kernel and its entry point (a `CopyFn`, or a
/// `SetFn` for set and zero), or what the caller must find out before it runs one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Choice {
    /// Run this kernel.
    Run(KernelId, *mut ()),
    /// Probe the destination, then ask again with [`Known::Probed`].
    Probe,
    /// Run this kernel, unless the destination was written lately: then ask again with
    /// [`Known::WrittenLately`].
    Recall(KernelId, *mut ()),
    /// Run this streaming kernel and remember the block as streamed, unless it was
    /// streamed lately and is met again: then ask again with [`Known::StreamedLately`].
    Stream(KernelId, *mut ()),
}

impl PlanRow {
    /// The band index for `n` bytes.
    #[inline(always)]
    pub fn band(&self, n: usize) -> usize {
        let mut i = 0;
        while i < MAX_BANDS - 1 && n >= self.below[i].load(Ordering::Relaxed) {
            i += 1;
        }
        i
    }

    /// The entry point for a call of `n` bytes (the family's second op if `second`):
    /// null where the band probes. The dispatcher's hot path: two cache lines (the
    /// bounds, then the entry points), no kernel id.
    #[inline(always)]
    pub fn entry(&self, n: usize, second: bool) -> *mut () {
        self.entry_at(self.band(n), second)
    }

    /// [`PlanRow::entry`] of band `i` ([`PlanRow::band`]).
    #[inline(always)]
    pub fn entry_at(&self, i: usize, second: bool) -> *mut () {
        self.op_band(i, second).1.load(Ordering::Relaxed)
    }

    /// Band `i`'s kernel and entry point for the family's first op, or its second if
    /// `second`, and that op's bit in [`PlanRow::recall`].
    #[inline(always)]
    fn op_band(&self, i: usize, second: bool) -> (&AtomicU8, &AtomicPtr<()>, u8) {
        if second {
            (&self.kernel_b[i], &self.fn_b[i], RECALL_B)
        } else {
            (&self.kernel_a[i], &self.fn_a[i], RECALL_A)
        }
    }

    /// What a call of `n` bytes does: op `second` picks the family's second op
    /// (move, zero).
    #[inline(always)]
    pub fn step(&self, n: usize, second: bool) -> Step {
        let i = self.band(n);
        let (k, f, bit) = self.op_band(i, second);
        let f = f.load(Ordering::Relaxed);
        let k = k.load(Ordering::Relaxed);
        if k != PROBE && f.is_null() && self.recall[i].load(Ordering::Relaxed) & bit != 0 {
            Step::Recall(kernel_at(k))
        } else if k == PROBE || f.is_null() {
            Step::Probe
        } else {
            Step::Run(kernel_at(k), f)
        }
    }

    /// The bands as (first size, kernel for the first op, kernel for the second op);
    /// `None` kernels for a probe band.
    pub fn bands(&self) -> impl Iterator<Item = (usize, Option<(KernelId, KernelId)>)> + '_ {
        let mut from = 0;
        (0..MAX_BANDS).map_while(move |i| {
            if from == usize::MAX {
                return None;
            }
            let start = from;
            from = self.below[i].load(Ordering::Relaxed);
            let (a, b) = (
                self.kernel_a[i].load(Ordering::Relaxed),
                self.kernel_b[i].load(Ordering::Relaxed),
            );
            let ks = (a != PROBE).then(|| (kernel_at(a), kernel_at(b)));
            Some((start, ks))
        })
    }
}

/// True if a call of `n` bytes does something else under row `a` than under row `b`
/// (for either op of the family).
fn steps_differ(a: &PlanRow, b: &PlanRow, n: usize) -> bool {
    a.step(n, false) != b.step(n, false) || a.step(n, true) != b.step(n, true)
}

/// The kernel with table index `v` (the portable kernel for an out-of-range value).
pub fn kernel_at(v: u8) -> KernelId {
    if (v as usize) < KernelId::ALL.len() {
        KernelId::ALL[v as usize]
    } else {
        KernelId::Portable
    }
}

impl Plan {
    /// An uncompiled plan (every band probes, which a caller must not act on before
    /// [`compile`] ran: the dispatcher publishes a plan only after compiling it). A
    /// constant, not a function: building 4 KiB of atomics at run time would be a
    /// `memcpy` call in unoptimised builds.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const UNCOMPILED: Plan = Plan {
        rows: [ROW_INIT; ROWS],
        contended: [ROW_INIT; ROWS],
        contend_from: [const { AtomicUsize::new(usize::MAX) }; ROWS / 4],
        contended_calls: AtomicUsize::new(usize::MAX),
        llc_effective: AtomicUsize::new(0),
        probe_hit_max: AtomicUsize::new(0),
        probe_fault_min: AtomicUsize::new(0),
        loop_temporal_max: [const { AtomicUsize::new(0) }; 2],
        features: AtomicUsize::new(0),
        forced: AtomicBool::new(false),
        recalls: [RECALL_INIT; ROWS / 4],
        contended_recalls: [RECALL_INIT; ROWS / 4],
    };

    /// The compiled row of a family, hint and state.
    #[inline(always)]
    pub fn row(&self, family: Family, hint: Hint, state: State) -> &PlanRow {
        &self.rows[row_index(family, hint, state)]
    }

    /// The compiled row of a family, hint and state for a call alone or contended.
    #[inline(always)]
    pub fn row_under(&self, load: Load, family: Family, hint: Hint, state: State) -> &PlanRow {
        match load {
            Load::Alone => self.row(family, hint, state),
            Load::Contended => &self.contended[row_index(family, hint, state)],
        }
    }

    /// The entry points of the recalling bands of a family's and hint's `unknown` row.
    #[inline(always)]
    pub fn recalls(&self, family: Family, hint: Hint) -> &RecallRow {
        &self.recalls[row_index(family, hint, State::Unknown) / State::ALL.len()]
    }

    /// The smallest size at which a call of this family and hint may do something else
    /// when contended than alone (`usize::MAX`: never). A call of at least this size
    /// counts the large calls in flight and asks [`Plan::choose`] with what it found;
    /// smaller calls read the compiled rows and never count.
    #[inline(always)]
    pub fn contend_from(&self, family: Family, hint: Hint) -> usize {
        self.contend_from[row_index(family, hint, State::Unknown) / State::ALL.len()]
            .load(Ordering::Relaxed)
    }

    /// Makes every call read the rows of a call alone: no size counts the calls in
    /// flight (the contention input switched off).
    pub fn alone_only(&self) {
        let mut i = 0;
        while i < self.contend_from.len() {
            self.contend_from[i].store(usize::MAX, Ordering::Relaxed);
            i += 1;
        }
    }

    /// How many large calls in flight, the call itself included, make it contended
    /// (the table's `contended_calls`).
    #[inline]
    pub fn contended_calls(&self) -> usize {
        self.contended_calls.load(Ordering::Relaxed)
    }

    /// The effective LLC the table was measured with (for [`probe_offset`]); for a
    /// plan compiled without one (a built-in table, see [`compile`]), the CPUID
    /// estimate, worked out on first use: its cache enumeration takes 18 CPUID
    /// instructions, each an exit to the hypervisor in a virtual machine, which every
    /// process started under the shim would pay for a figure only large probed calls
    /// use (`docs/results/epyc-zen5-2vcpu/written-lately/dispatch-notes.md`).
    #[inline]
    pub fn llc_effective(&self) -> usize {
        match self.llc_effective.load(Ordering::Relaxed) {
            0 => {
                let llc = crate::cpu::llc_default().max(1);
                self.llc_effective.store(llc, Ordering::Relaxed);
                llc
            }
            llc => llc,
        }
    }

    /// The probe's hit threshold in TSC cycles.
    #[inline]
    pub fn probe_hit_max(&self) -> u32 {
        self.probe_hit_max.load(Ordering::Relaxed) as u32
    }

    /// The probe's page-fault threshold in TSC cycles (see `probe::classify`).
    #[inline]
    pub fn probe_fault_min(&self) -> u32 {
        self.probe_fault_min.load(Ordering::Relaxed) as u32
    }

    /// The largest block a probed `op` writes with temporal stores when it streamed
    /// the block lately (the table's `OP.loop_temporal_max`: a move's the copy's,
    /// zeroing's the set's; [`crate::profile::LOOP_HALF_LLC`] worked out from
    /// [`Plan::llc_effective`]; see [`crate::dispatch::keeps_streamed`]).
    #[inline]
    pub fn loop_temporal_max(&self, op: Op) -> usize {
        match self.loop_temporal_max[crate::profile::loop_index(op)].load(Ordering::Relaxed) {
            crate::profile::LOOP_HALF_LLC => self.llc_effective() / 2,
            max => max,
        }
    }

    /// The features the plan was compiled for.
    pub fn features(&self) -> Features {
        Features::from_bits(self.features.load(Ordering::Relaxed) as u32)
    }

    /// Whether a kernel was forced when the plan was compiled.
    pub fn forced(&self) -> bool {
        self.forced.load(Ordering::Relaxed)
    }

    /// The decision of a call: which kernel `op` on `n` bytes with `hint` runs, given
    /// what is `known` of its destination and whether it shares the memory system
    /// (`load`: the contended rows), or what the caller must find out first (see the
    /// module docs, "The decision"). `overlap`: the ranges of a move share bytes and
    /// the caller has not probed (the destination is read as the source: cached); the
    /// answer then never names a streaming kernel, but its temporal stand-in.
    pub fn choose(
        &self,
        op: Op,
        n: usize,
        hint: Hint,
        known: Known,
        load: Load,
        overlap: bool,
    ) -> Choice {
        let second = matches!(op, Op::Move | Op::Zero);
        let band = self
            .row_under(load, Family::of(op), hint, State::Unknown)
            .step(n, second);
        let choice = match (known, band) {
            (Known::Probed(state), _) => self.probed(op, n, hint, state, load),
            (Known::WrittenLately, Step::Recall(own)) => {
                let (k, f) = self.run_or_portable(op, n, hint, State::Cached, load);
                if k.streams() {
                    Choice::Run(own, entry_of(own, op))
                } else {
                    Choice::Run(k, f)
                }
            }
            (Known::StreamedLately, _) => {
                let (k, f) = self.run_or_portable(op, n, hint, State::Cached, load);
                if k.streams() {
                    let k = best_temporal(self.features(), op);
                    Choice::Run(k, entry_of(k, op))
                } else {
                    Choice::Run(k, f)
                }
            }
            (_, Step::Run(k, f)) => Choice::Run(k, f),
            (_, Step::Recall(k)) => Choice::Recall(k, entry_of(k, op)),
            (_, Step::Probe) if overlap => self.probed(op, n, hint, State::Cached, load),
            (_, Step::Probe) => Choice::Probe,
        };
        match choice {
            Choice::Run(k, _) | Choice::Stream(k, _) if overlap && k.streams() => {
                let k = best_temporal(self.features(), op);
                Choice::Run(k, entry_of(k, op))
            }
            c => c,
        }
    }

    /// [`Plan::choose`] after a probe found `state`: the band of the state's row, which
    /// asks the memory of streamed blocks where [`keeps_streamed`] says so.
    fn probed(&self, op: Op, n: usize, hint: Hint, state: State, load: Load) -> Choice {
        let (k, f) = self.run_or_portable(op, n, hint, state, load);
        // The bound is read for a streaming kernel only: it may ask the CPU for the LLC.
        if k.streams() && keeps_streamed(k, hint, n, self.loop_temporal_max(op), self.forced()) {
            Choice::Stream(k, f)
        } else {
            Choice::Run(k, f)
        }
    }

    /// The kernel and entry point of the band holding `n` in the row of `state`: a
    /// recalling band's own kernel, and the portable kernel where the band probes (an
    /// uncompiled plan, or one torn by racing installs: never a known-state row of a
    /// compiled plan).
    fn run_or_portable(
        &self,
        op: Op,
        n: usize,
        hint: Hint,
        state: State,
        load: Load,
    ) -> (KernelId, *mut ()) {
        let second = matches!(op, Op::Move | Op::Zero);
        match self
            .row_under(load, Family::of(op), hint, state)
            .step(n, second)
        {
            Step::Run(k, f) => (k, f),
            Step::Recall(k) => (k, entry_of(k, op)),
            Step::Probe => (KernelId::Portable, entry_of(KernelId::Portable, op)),
        }
    }

    /// The kernel [`Plan::choose`] names for a call alone whose destination a probe
    /// found in `dst` (`Unknown`: not probed; `None` where the band probes), for a
    /// destination neither written nor streamed lately. What `blockmem_choose`,
    /// `blockmem info` and the tracer's statistics report.
    pub fn decide(
        &self,
        op: Op,
        n: usize,
        hint: Hint,
        overlap: bool,
        dst: State,
    ) -> Option<KernelId> {
        self.decide_under(Load::Alone, op, n, hint, overlap, dst)
    }

    /// [`Plan::decide`] for a call alone or contended.
    pub fn decide_under(
        &self,
        load: Load,
        op: Op,
        n: usize,
        hint: Hint,
        overlap: bool,
        dst: State,
    ) -> Option<KernelId> {
        let known = match dst {
            State::Unknown => Known::Unknown,
            probed => Known::Probed(probed),
        };
        match self.choose(op, n, hint, known, load, overlap) {
            Choice::Run(k, _) | Choice::Recall(k, _) | Choice::Stream(k, _) => Some(k),
            Choice::Probe => None,
        }
    }

    /// The smallest size at which a `Reuse` or `NoReuse` hint can make a call of this
    /// family run something else than `Auto` would (`usize::MAX`: never): the first
    /// band start, in any state's row, where a hinted row's step differs from the
    /// `Auto` row's. Below it a hint is moot, so a caller holding per-call hints (the
    /// shim's hint map) need not look them up.
    pub fn hint_matters_from(&self, family: Family) -> usize {
        // Index loops only: iterator adapters over rows would be `memcpy` calls in an
        // unoptimised build (this runs inside the shim's constructor).
        let auto = row_index(family, Hint::Auto, State::Unknown);
        let states = State::ALL.len();
        let hinted = [
            row_index(family, Hint::Reuse, State::Unknown),
            row_index(family, Hint::NoReuse, State::Unknown),
        ];
        let mut first = usize::MAX;
        let mut h = 0;
        while h < hinted.len() {
            let alone = first_difference(&self.rows[auto..auto + states], &self.rows[hinted[h]..]);
            let contended = first_difference(
                &self.contended[auto..auto + states],
                &self.contended[hinted[h]..],
            );
            first = first.min(alone).min(contended);
            h += 1;
        }
        first
    }

    /// The smallest size at which a call of this family and hint probes (`usize::MAX`:
    /// never).
    pub fn probe_from(&self, family: Family, hint: Hint) -> usize {
        self.row(family, hint, State::Unknown)
            .bands()
            .find(|(_, ks)| ks.is_none())
            .map_or(usize::MAX, |(from, _)| from)
    }
}

/// Compiles `t` for a CPU with features `f` into `out` (see the module docs), with
/// `forced` replacing every kernel for the ops it implements, and `llc_default` as the
/// effective LLC where the table gives none (0: a built-in table); where neither gives
/// one (both 0), [`Plan::llc_effective`] asks the CPU on first use. `out` may be read
/// by other threads meanwhile (see [`Plan`]).
pub fn compile(t: &Table, f: Features, forced: Option<KernelId>, llc_default: usize, out: &Plan) {
    let llc = if t.llc_effective != 0 {
        t.llc_effective
    } else {
        llc_default
    };
    out.llc_effective.store(llc, Ordering::Relaxed);
    out.probe_hit_max
        .store(t.probe_hit_max as usize, Ordering::Relaxed);
    out.probe_fault_min
        .store(t.probe_fault_min as usize, Ordering::Relaxed);
    // Index loops here: the unoptimised core copies iterator adapters with `memcpy`.
    let mut i = 0;
    while i < t.loop_temporal_max.len() {
        out.loop_temporal_max[i].store(t.loop_temporal_max[i], Ordering::Relaxed);
        i += 1;
    }
    out.features.store(f.bits() as usize, Ordering::Relaxed);
    out.forced.store(forced.is_some(), Ordering::Relaxed);
    let mut r = 0;
    while r < ROWS {
        compile_row(&t.rows[r], r, f, forced, &out.rows[r]);
        compile_row(t.contended_at(r), r, f, forced, &out.contended[r]);
        r += 1;
    }
    let mut r = 0;
    while r < ROWS {
        let cached = r + State::Cached as usize;
        let rr = &out.recalls[r / State::ALL.len()];
        mark_recalls(&out.rows[r], &out.rows[cached], rr);
        let rr = &out.contended_recalls[r / State::ALL.len()];
        mark_recalls(&out.contended[r], &out.contended[cached], rr);
        out.contend_from[r / State::ALL.len()].store(
            first_difference(&out.rows[r..r + State::ALL.len()], &out.contended[r..]),
            Ordering::Relaxed,
        );
        r += State::ALL.len();
    }
    out.contended_calls
        .store(t.contended_calls as usize, Ordering::Relaxed);
}

/// The smallest band start, in any of the rows `a` (one family's and hint's, one per
/// state) and their twins `b`, at which a call does something else under `b` than under
/// `a` (`usize::MAX`: nowhere).
fn first_difference(a: &[PlanRow], b: &[PlanRow]) -> usize {
    let mut first = usize::MAX;
    let mut s = 0;
    while s < a.len() {
        let mut i = 0;
        while i <= MAX_BANDS {
            let starts = if i == 0 {
                [0, 0]
            } else {
                [
                    a[s].below[i - 1].load(Ordering::Relaxed),
                    b[s].below[i - 1].load(Ordering::Relaxed),
                ]
            };
            let mut k = 0;
            while k < 2 {
                let n = starts[k];
                if n < first && n != usize::MAX && steps_differ(&a[s], &b[s], n) {
                    first = n;
                }
                k += 1;
            }
            i += 1;
        }
        s += 1;
    }
    first
}

/// Marks the bands of the compiled `unknown` row `u` that recall ([`Step::Recall`]),
/// per op, and fills `rr` with their entry points ([`recalls`]): the band runs a
/// kernel that does not stream (what it writes stays cached) and the compiled `cached`
/// row `c` runs one other such kernel over some of the band's sizes. Such a band's entry point in `u` is
/// cleared, so the dispatcher's hot path, which reads entry points only, leaves it.
fn mark_recalls(u: &PlanRow, c: &PlanRow, rr: &RecallRow) {
    // Scalars only, no arrays of tuples: the unoptimised core would copy those with
    // `memcpy` (`tests/no_libc_calls.rs`).
    let mut start = 0;
    let mut i = 0;
    while i < MAX_BANDS {
        let end = u.below[i].load(Ordering::Relaxed);
        let mut bits = 0;
        let mut op = 0;
        while op < 2 {
            let second = op == 1;
            let (kernel, entry, bit) = u.op_band(i, second);
            // Bands past the last repeat it (see `compile_row`), and so do their marks.
            let (hot, lo, hi) = if start == usize::MAX {
                (
                    rr.hot[i - 1][op].load(Ordering::Relaxed),
                    rr.lo[i - 1][op].load(Ordering::Relaxed),
                    rr.hi[i - 1][op].load(Ordering::Relaxed),
                )
            } else {
                match recalls(kernel.load(Ordering::Relaxed), c, start, end, second) {
                    Some(found) => found,
                    None => (core::ptr::null_mut(), 0, 0),
                }
            };
            let own = if hot.is_null() {
                core::ptr::null_mut()
            } else {
                bits |= bit;
                entry.swap(core::ptr::null_mut(), Ordering::Relaxed)
            };
            rr.own[i][op].store(own, Ordering::Relaxed);
            rr.hot[i][op].store(hot, Ordering::Relaxed);
            rr.lo[i][op].store(lo, Ordering::Relaxed);
            rr.hi[i][op].store(hi, Ordering::Relaxed);
            op += 1;
        }
        u.recall[i].store(bits, Ordering::Relaxed);
        start = end;
        i += 1;
    }
}

/// Where a band of sizes `start..end` running kernel `k` (a table index, or [`PROBE`])
/// for an op recalls: the entry point of the other kernel the compiled `cached` row
/// `c` runs for that op in those sizes, and the sizes `lo..hi` where it does, if `k`
/// and it keep the bytes they write cached and it is the only other one, over
/// contiguous sizes (elsewhere in the band the cached row runs `k` itself, or streams,
/// which a recalled call does not do either); `None` where the band does not recall.
/// So a calibrated table whose `cached` row changes kernel inside an `unknown` band
/// (`avx512` to 1 MiB, then `rep_stosb` as the band does) still recalls below 1 MiB.
fn recalls(
    k: u8,
    c: &PlanRow,
    start: usize,
    end: usize,
    second: bool,
) -> Option<(*mut (), usize, usize)> {
    if k == PROBE || kernel_at(k).streams() {
        return None;
    }
    let mut found: Option<(*mut (), usize, usize)> = None;
    // Whether a piece that is not the other kernel came after it (no second run).
    let mut closed = false;
    let mut from = 0;
    let mut j = 0;
    while j < MAX_BANDS && from != usize::MAX {
        let below = c.below[j].load(Ordering::Relaxed);
        if from < end && below > start {
            let (ck, f, _) = c.op_band(j, second);
            let (ck, f) = (ck.load(Ordering::Relaxed), f.load(Ordering::Relaxed));
            let other = ck != PROBE && ck != k && !kernel_at(ck).streams() && !f.is_null();
            let (lo, hi) = (from.max(start), below.min(end));
            match found {
                _ if !other => closed = found.is_some(),
                None => found = Some((f, lo, hi)),
                Some((g, glo, _)) if g == f && !closed => found = Some((g, glo, hi)),
                Some(_) => return None,
            }
        }
        from = below;
        j += 1;
    }
    found
}

/// A band as compiled: (kernel or [`PROBE`], the same for the second op).
type Compiled = (u8, u8);

fn compile_band(action: Action, fam: Family, f: Features, forced: Option<KernelId>) -> Compiled {
    let [op_a, op_b] = fam.ops();
    let pick = |k: KernelId, op: Op| match forced {
        Some(fk) if usable(fk, op, f) => fk,
        _ => stand_in(k, op, f),
    };
    match action {
        Action::Run(k) => (pick(k, op_a) as u8, pick(k, op_b) as u8),
        // A forced kernel that serves both ops makes the probe pointless.
        Action::Probe => match forced {
            Some(fk) if usable(fk, op_a, f) && usable(fk, op_b, f) => (fk as u8, fk as u8),
            _ => (PROBE, PROBE),
        },
    }
}

/// Compiles row `r` of `t` into `out`: bands substituted, equal neighbours merged.
fn compile_row(row: &Row, r: usize, f: Features, forced: Option<KernelId>, out: &PlanRow) {
    let fam = if r < ROWS / 2 {
        Family::Copy
    } else {
        Family::Set
    };
    let bands = row.bands();
    let mut written = 0;
    let mut last: Option<Compiled> = None;
    let mut i = 0;
    while i < bands.len() {
        let c = compile_band(bands[i].action, fam, f, forced);
        if last != Some(c) {
            if written > 0 {
                out.below[written - 1].store(bands[i].from, Ordering::Relaxed);
            }
            store_band(out, written, fam, c);
            written += 1;
            last = Some(c);
        }
        i += 1;
    }
    out.below[written - 1].store(usize::MAX, Ordering::Relaxed);
    // Bands past the last repeat it, so a torn read never lands on stale kernels.
    let mut j = written;
    while j < MAX_BANDS {
        out.below[j].store(usize::MAX, Ordering::Relaxed);
        store_band(out, j, fam, last.unwrap_or((PROBE, PROBE)));
        j += 1;
    }
}

fn store_band(out: &PlanRow, i: usize, fam: Family, (a, b): Compiled) {
    let [op_a, op_b] = fam.ops();
    out.fn_a[i].store(entry_point(a, op_a), Ordering::Relaxed);
    out.fn_b[i].store(entry_point(b, op_b), Ordering::Relaxed);
    out.kernel_a[i].store(a, Ordering::Relaxed);
    out.kernel_b[i].store(b, Ordering::Relaxed);
    out.recall[i].store(0, Ordering::Relaxed);
}

/// The entry point of kernel `k` (a table index, or [`PROBE`]) for `op`: a `CopyFn`
/// for copy and move, a `SetFn` for set and zero; null for a probe.
fn entry_point(k: u8, op: Op) -> *mut () {
    if k == PROBE {
        return core::ptr::null_mut();
    }
    crate::kernel::entry_for(kernel_at(k), op).map_or(core::ptr::null_mut(), |p| p)
}

/// The kernel that runs `op` for `k` on a CPU with features `f`: `k` itself where it
/// can, else the first of its narrower relatives ([`KernelId::narrower`]) that can.
pub fn stand_in(k: KernelId, op: Op, f: Features) -> KernelId {
    let mut k = k;
    loop {
        if usable(k, op, f) {
            return k;
        }
        match k.narrower() {
            Some(next) => k = next,
            None => return KernelId::Portable,
        }
    }
}

/// The entry point of kernel `k` for `op` (see [`crate::kernel::entry_for`]); the
/// portable kernel's where `k` lacks the op, which a compiled plan never names.
pub fn entry_of(k: KernelId, op: Op) -> *mut () {
    match crate::kernel::entry_for(k, op) {
        Some(f) => f,
        None => crate::kernel::entry_for(KernelId::Portable, op).unwrap_or(core::ptr::null_mut()),
    }
}

/// Whether a probed call that is to run `k` asks the memory of streamed blocks
/// (`dispatch::met_again`): `k` streams, the caller did not say the destination will
/// not be reused, no kernel is forced, and the block is at most `max` bytes, the
/// table's `copy.` or `set.loop_temporal_max` for the op: the largest block that a
/// loop writing it again and again wrote faster with temporal stores than streamed, as
/// calibration measures it (the lab's `reuse` loop cells). Where that bound lies is
/// the host's: `docs/results/epyc-zen5-2vcpu/written-lately/dispatch-notes.md` has the figures.
pub fn keeps_streamed(k: KernelId, hint: Hint, n: usize, max: usize, forced: bool) -> bool {
    k.streams() && hint != Hint::NoReuse && !forced && n <= max
}

/// The widest temporal kernel the CPU runs for `op`.
pub fn best_temporal(f: Features, op: Op) -> KernelId {
    stand_in(KernelId::Avx512, op, f)
}

/// True if `k` exists on this target, implements `op` and needs only features in `f`.
pub fn usable(k: KernelId, op: Op, f: Features) -> bool {
    k.kernel()
        .is_some_and(|e| e.supports(op) && f.contains(e.requires))
}

/// The byte of an `n`-byte block (`n >= PROBE_MIN_BYTES`) whose line the dispatcher
/// probes: the middle, or for a block larger than the effective LLC `llc`, the byte
/// `llc / 2` before its end.
///
/// A block touched front to back keeps its *last* lines longest (LRU). Up to the LLC
/// the middle line is cached only if at least the back half is, and cold only if at
/// least the front half is. Past the LLC the middle is never cached, even right after
/// the block was written, while its last lines may be: the line `llc / 2` from the end
/// is cached when the back half of what the cache can hold is.
///
/// Kept 2 KiB inside both ends, so the page mate (2 KiB away in the same page) lies in
/// the block; a block of exactly 4 KiB leaves no room for that, and its mate may be the
/// byte just past it, in the probed line's own page (see `probe::page_mate`).
pub fn probe_offset(n: usize, llc: usize) -> usize {
    let o = (n / 2).max(n.saturating_sub(llc / 2));
    o.min(n.saturating_sub(2049)).max(2048)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Band, Row};

    const ALL_X86: Features = Features::SSE2
        .union(Features::AVX)
        .union(Features::AVX2)
        .union(Features::AVX512F)
        .union(Features::AVX512BW)
        .union(Features::PREFETCHW)
        .union(Features::CLZERO)
        .union(Features::ERMS);

    fn table() -> Table {
        let mut t = Table::uniform(KernelId::Avx512, 32 << 20);
        let bands = [
            Band {
                from: 0,
                action: Action::Run(KernelId::Avx512),
            },
            Band {
                from: 4096,
                action: Action::Run(KernelId::RepMovsb),
            },
            Band {
                from: 64 << 10,
                action: Action::Probe,
            },
        ];
        t.row_mut(Family::Copy, Hint::Auto, State::Unknown)
            .copy_from(&Row::new(&bands).unwrap());
        let cold = t.row_mut(Family::Copy, Hint::Auto, State::Cold);
        cold.push(1 << 20, Action::Run(KernelId::Avx512Nt)).unwrap();
        let zero = t.row_mut(Family::Set, Hint::NoReuse, State::Unknown);
        zero.push(16 << 10, Action::Run(KernelId::Clzero)).unwrap();
        t
    }

    #[test]
    fn lookup_follows_the_bands_and_the_probe() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let plan = Plan::UNCOMPILED;
        compile(&table(), ALL_X86, None, 0, &plan);
        let d = |op, n, hint, dst| plan.decide(op, n, hint, false, dst);
        assert_eq!(
            d(Op::Copy, 4095, Hint::Auto, State::Unknown),
            Some(KernelId::Avx512)
        );
        assert_eq!(
            d(Op::Move, 4096, Hint::Auto, State::Unknown),
            Some(KernelId::RepMovsb)
        );
        assert_eq!(
            d(Op::Copy, 65535, Hint::Auto, State::Unknown),
            Some(KernelId::RepMovsb)
        );
        assert_eq!(d(Op::Copy, 65536, Hint::Auto, State::Unknown), None);
        assert_eq!(
            d(Op::Copy, 2 << 20, Hint::Auto, State::Cold),
            Some(KernelId::Avx512Nt)
        );
        assert_eq!(
            d(Op::Copy, 2 << 20, Hint::Auto, State::Cached),
            Some(KernelId::Avx512)
        );
        assert_eq!(plan.probe_from(Family::Copy, Hint::Auto), 64 << 10);
        assert_eq!(plan.probe_from(Family::Set, Hint::Auto), usize::MAX);
        // clzero only zeroes: a set in its band runs its streaming stand-in.
        assert_eq!(
            d(Op::Zero, 1 << 20, Hint::NoReuse, State::Unknown),
            Some(KernelId::Clzero)
        );
        assert_eq!(
            d(Op::Set, 1 << 20, Hint::NoReuse, State::Unknown),
            Some(KernelId::Avx512Nt)
        );
        // An overlapping move never probes and never streams.
        assert_eq!(
            plan.decide(Op::Move, 2 << 20, Hint::Auto, true, State::Unknown),
            Some(KernelId::Avx512)
        );
        let mut t = table();
        t.row_mut(Family::Copy, Hint::Auto, State::Cached)
            .reset(Action::Run(KernelId::Avx2Nt));
        compile(&t, ALL_X86, None, 0, &plan);
        assert_eq!(
            plan.decide(Op::Move, 2 << 20, Hint::Auto, true, State::Unknown),
            Some(KernelId::Avx512)
        );
    }

    #[test]
    fn kernels_the_cpu_lacks_get_stand_ins_of_their_class_and_bands_merge() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let avx2 = Features::SSE2.union(Features::AVX).union(Features::AVX2);
        let plan = Plan::UNCOMPILED;
        compile(&table(), avx2, None, 0, &plan);
        let d = |op, n, dst| plan.decide(op, n, Hint::Auto, false, dst).unwrap();
        assert_eq!(d(Op::Copy, 100, State::Unknown), KernelId::Avx2);
        assert_eq!(d(Op::Copy, 2 << 20, State::Cold), KernelId::Avx2Nt);
        let sse2 = Plan::UNCOMPILED;
        compile(&table(), Features::SSE2, None, 0, &sse2);
        assert_eq!(
            sse2.decide(Op::Copy, 100, Hint::Auto, false, State::Unknown),
            Some(KernelId::Sse2)
        );
        // avx512_nt -> avx2_nt -> sse2 (temporal) without AVX2: the cold row's two
        // bands become one.
        let mut cold = sse2.row(Family::Copy, Hint::Auto, State::Cold).bands();
        assert_eq!(
            cold.next(),
            Some((0, Some((KernelId::Sse2, KernelId::Sse2))))
        );
        assert_eq!(cold.next(), None);
        assert_eq!(
            stand_in(
                KernelId::Avx512Pw,
                Op::Copy,
                avx2.union(Features::PREFETCHW)
            ),
            KernelId::Avx2Pw
        );
        assert_eq!(stand_in(KernelId::Clzero, Op::Zero, avx2), KernelId::Avx2Nt);
        assert_eq!(
            stand_in(KernelId::Avx2, Op::Set, Features::NONE),
            KernelId::Portable
        );
    }

    #[test]
    fn a_forced_kernel_replaces_every_band_it_can_serve() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let plan = Plan::UNCOMPILED;
        compile(&table(), ALL_X86, Some(KernelId::RepMovsb), 0, &plan);
        for n in [200, 1 << 20, 1 << 30] {
            assert_eq!(
                plan.decide(Op::Copy, n, Hint::Auto, false, State::Unknown),
                Some(KernelId::RepMovsb)
            );
            // rep_movsb cannot set: the table decides.
            assert_ne!(
                plan.decide(Op::Set, n, Hint::Auto, false, State::Unknown),
                Some(KernelId::RepMovsb)
            );
        }
        assert_eq!(plan.probe_from(Family::Copy, Hint::Auto), usize::MAX);
    }

    /// `table()` with a set row that recalls: `rep_stosb` for a destination nobody
    /// knows, `avx2` below 1 MiB and `avx512_nt` from 8 MiB for a cached one.
    fn recalling() -> Table {
        let mut t = table();
        t.loop_temporal_max = [4 << 20, 4 << 20];
        t.row_mut(Family::Set, Hint::Auto, State::Unknown)
            .reset(Action::Run(KernelId::RepStosb));
        let cached = t.row_mut(Family::Set, Hint::Auto, State::Cached);
        cached.reset(Action::Run(KernelId::Avx2));
        cached
            .push(1 << 20, Action::Run(KernelId::RepStosb))
            .unwrap();
        cached
            .push(8 << 20, Action::Run(KernelId::Avx512Nt))
            .unwrap();
        t
    }

    fn kernel(c: Choice) -> Option<KernelId> {
        match c {
            Choice::Run(k, _) | Choice::Recall(k, _) | Choice::Stream(k, _) => Some(k),
            Choice::Probe => None,
        }
    }

    #[test]
    fn choose_asks_for_the_probe_and_the_memories_then_names_a_kernel() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let plan = Plan::UNCOMPILED;
        compile(&recalling(), ALL_X86, None, 0, &plan);
        let c = |op, n, hint, known| plan.choose(op, n, hint, known, Load::Alone, false);
        let mb = 1 << 20;
        // A probing band asks for the probe; a cold block streams, and within the loop
        // bound asks the memory of streamed blocks, which turns it temporal.
        assert_eq!(
            c(Op::Copy, 2 * mb, Hint::Auto, Known::Unknown),
            Choice::Probe
        );
        let cold = c(Op::Copy, 2 * mb, Hint::Auto, Known::Probed(State::Cold));
        assert!(
            matches!(cold, Choice::Stream(KernelId::Avx512Nt, _)),
            "{cold:?}"
        );
        let past = c(Op::Copy, 8 * mb, Hint::Auto, Known::Probed(State::Cold));
        assert!(
            matches!(past, Choice::Run(KernelId::Avx512Nt, _)),
            "{past:?}"
        );
        let again = c(Op::Copy, 2 * mb, Hint::Auto, Known::StreamedLately);
        assert_eq!(kernel(again), Some(KernelId::Avx512));
        let cached = c(Op::Copy, 2 * mb, Hint::Auto, Known::Probed(State::Cached));
        assert!(
            matches!(cached, Choice::Run(KernelId::Avx512, _)),
            "{cached:?}"
        );
        // An overlapping move reads the cached row without a probe and never streams.
        let overlap = plan.choose(
            Op::Move,
            2 * mb,
            Hint::Auto,
            Known::Unknown,
            Load::Alone,
            true,
        );
        assert_eq!(kernel(overlap), Some(KernelId::Avx512));
        // A recalling band: its own kernel, the cached row's where written lately, its
        // own again where the cached row streams.
        let own = c(Op::Set, 4096, Hint::Auto, Known::Unknown);
        assert!(
            matches!(own, Choice::Recall(KernelId::RepStosb, _)),
            "{own:?}"
        );
        let hot = c(Op::Set, 4096, Hint::Auto, Known::WrittenLately);
        assert!(matches!(hot, Choice::Run(KernelId::Avx2, _)), "{hot:?}");
        let hot = c(Op::Set, 16 * mb, Hint::Auto, Known::WrittenLately);
        assert!(matches!(hot, Choice::Run(KernelId::RepStosb, _)), "{hot:?}");
        // No memory where a kernel is forced.
        compile(&recalling(), ALL_X86, Some(KernelId::Avx512Nt), 0, &plan);
        let forced = plan.choose(
            Op::Copy,
            2 * mb,
            Hint::Auto,
            Known::Unknown,
            Load::Alone,
            false,
        );
        assert!(
            matches!(forced, Choice::Run(KernelId::Avx512Nt, _)),
            "{forced:?}"
        );
        let forced = plan.choose(
            Op::Copy,
            2 * mb,
            Hint::Auto,
            Known::Probed(State::Cold),
            Load::Alone,
            false,
        );
        assert!(
            matches!(forced, Choice::Run(KernelId::Avx512Nt, _)),
            "{forced:?}"
        );
    }

    /// A contended row serves contended calls only; calls from the first size where a
    /// contended row differs count, smaller ones never; switched off, none does.
    #[test]
    fn contended_rows_serve_contended_calls_from_where_they_differ() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let mut t = table();
        let plan = Plan::UNCOMPILED;
        compile(&t, ALL_X86, None, 0, &plan);
        for fam in Family::ALL {
            for hint in Hint::ALL {
                assert_eq!(plan.contend_from(fam, hint), usize::MAX, "{fam:?} {hint:?}");
            }
        }
        t.contended_row_mut(Family::Copy, Hint::Auto, State::Cold)
            .copy_from(
                &Row::new(&[
                    Band {
                        from: 0,
                        action: Action::Run(KernelId::Avx512),
                    },
                    Band {
                        from: 256 << 10,
                        action: Action::Run(KernelId::Avx512Nt),
                    },
                ])
                .unwrap(),
            );
        compile(&t, ALL_X86, None, 0, &plan);
        assert_eq!(plan.contend_from(Family::Copy, Hint::Auto), 256 << 10);
        assert_eq!(plan.contend_from(Family::Copy, Hint::Reuse), usize::MAX);
        assert_eq!(plan.contend_from(Family::Set, Hint::Auto), usize::MAX);
        assert_eq!(plan.contended_calls(), 2);
        let cold = Known::Probed(State::Cold);
        let run = |n, load| match plan.choose(Op::Copy, n, Hint::Auto, cold, load, false) {
            Choice::Run(k, _) | Choice::Stream(k, _) | Choice::Recall(k, _) => Some(k),
            Choice::Probe => None,
        };
        assert_eq!(run(512 << 10, Load::Alone), Some(KernelId::Avx512));
        assert_eq!(run(512 << 10, Load::Contended), Some(KernelId::Avx512Nt));
        assert_eq!(run(2 << 20, Load::Contended), Some(KernelId::Avx512Nt));
        assert_eq!(run(128 << 10, Load::Contended), Some(KernelId::Avx512));
        // An overlapping move never streams, contended or not.
        let mv = plan.choose(Op::Move, 512 << 10, Hint::Auto, cold, Load::Contended, true);
        assert!(matches!(mv, Choice::Run(KernelId::Avx512, _)), "{mv:?}");
        plan.alone_only();
        assert_eq!(plan.contend_from(Family::Copy, Hint::Auto), usize::MAX);
    }

    /// The hot paths read compiled forms of [`Plan::choose`]: a band's entry point, and
    /// a recalling band's two in [`RecallRow`]. They agree with it at every band edge.
    #[test]
    fn the_compiled_entry_points_are_what_choose_names() {
        let plan = Plan::UNCOMPILED;
        for f in [ALL_X86, Features::SSE2, Features::NONE] {
            compile(&recalling(), f, None, 0, &plan);
            for fam in [Family::Copy, Family::Set] {
                for hint in [Hint::Auto, Hint::Reuse, Hint::NoReuse] {
                    let u = plan.row(fam, hint, State::Unknown);
                    let c = plan.row(fam, hint, State::Cached);
                    let edges = u.bands().chain(c.bands()).map(|(from, _)| from);
                    let sizes = edges.flat_map(|e| [e.saturating_sub(1), e, e.saturating_add(1)]);
                    for n in sizes {
                        for (second, op) in [(false, fam.ops()[0]), (true, fam.ops()[1])] {
                            let (own, hot) = plan.recalls(fam, hint).entries(u, n, second);
                            let entry = u.entry(n, second);
                            match plan.choose(op, n, hint, Known::Unknown, Load::Alone, false) {
                                Choice::Run(_, e) => assert_eq!(entry, e, "{op:?} {n}"),
                                Choice::Probe => assert!(entry.is_null() && own.is_null()),
                                Choice::Recall(_, e) => {
                                    assert!(entry.is_null(), "{op:?} {n}");
                                    assert_eq!(own, e, "{op:?} {n}");
                                    let lately = Known::WrittenLately;
                                    let Choice::Run(_, w) =
                                        plan.choose(op, n, hint, lately, Load::Alone, false)
                                    else {
                                        panic!("{op:?} {n}: written lately names no kernel");
                                    };
                                    let compiled = if hot.is_null() { own } else { hot };
                                    assert_eq!(compiled, w, "{op:?} {n} {hint:?}");
                                }
                                Choice::Stream(..) => panic!("only a probed call streams"),
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn probe_offset_stays_inside_and_reads_the_back_past_the_llc() {
        for n in [4096, 4097, 10_000, 1 << 20, 64 << 20] {
            let o = probe_offset(n, 16 << 20);
            assert!((2048..n).contains(&o) && o + 2048 < n + 1, "{n} {o}");
        }
        assert_eq!(probe_offset(1 << 20, 16 << 20), 1 << 19);
        assert_eq!(probe_offset(64 << 20, 16 << 20), (64 << 20) - (8 << 20));
    }
}
