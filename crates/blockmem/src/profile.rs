//! The profile: a host's decision table, as a versioned plain-text file that
//! `blockmem calibrate` writes, the built-in tables ([`crate::builtin`]) stand in for,
//! and the library loads once.
//!
//! # The table
//!
//! For each op family ([`Family`]: copy and move; set and zero), each [`Hint`] and each
//! state the call can know of its destination ([`State`]: unknown, or what a probe of
//! one of its lines found: cached, cold, or fresh — mapped but never touched, so the
//! call takes its page faults), a row of size bands. A band names what a
//! call of at least its size (and less than the next band's) does: run a kernel, or
//! (only in an `unknown` row) `probe`: time one load of the destination and use the
//! row of the state found.
//!
//! ```text
//! # blockmem profile
//! version = 2
//! llc_effective = 24MiB    # probes past the LLC read the line half this from the end
//! probe_hit_max = 150      # a probe load of at most this many TSC cycles hit the cache
//! probe_fault_min = 900    # a first touch of the page slower than this took a page fault
//! copy.loop_temporal_max = 8MiB # a block streamed lately and met again soon: temporal stores up to this size
//! set.loop_temporal_max = 32MiB
//! copy.auto.unknown = from 0: avx2; from 4KiB: rep_movsb; from 64KiB: probe
//! copy.auto.cached  = from 0: avx2; from 4KiB: rep_movsb
//! copy.auto.cold    = from 0: avx2; from 4KiB: rep_movsb; from 8MiB: avx2_nt
//! set.noreuse.unknown = from 0: avx2; from 16KiB: avx2_nt
//! ```
//!
//! Row keys are `FAMILY.HINT.STATE` with families `copy` and `set`, hints `auto`,
//! `reuse`, `noreuse` and states `unknown`, `cached`, `cold`, `fresh`. A row's first band starts
//! at 0; later bands start strictly higher; the last band has no end. Sizes take the
//! suffixes `KiB`, `MiB`, `GiB` (or `K`, `M`, `G`). A row absent from the file keeps
//! the row of the defaults the file is parsed over (the built-in table of the CPU), so
//! a hand-written file may name only the rows it changes. `#` starts a comment;
//! calibration writes each row's evidence (the measured times that chose it) as
//! comments.
//!
//! Every row has a contended twin, `FAMILY.HINT.STATE.contended`, which a call reads
//! instead while at least `contended_calls` large calls of the process are in flight,
//! itself included (seed 004: copies share the memory system). A file that gives a row
//! but not its twin has the twin equal to it; calibration measures the twins with the
//! other CPUs copying (`blockmem calibrate`).
//!
//! Parsing needs no allocation and never panics: [`parse`] walks the bytes and reports
//! the first problem as a [`ProfileError`] with its 1-based line and a reason. A
//! version-1 profile (the keyed format of earlier releases) is rejected with a message
//! that asks for a new calibration.

use crate::kernel::{KernelId, Op};
use crate::Hint;
use core::fmt;
use core::fmt::Write as _;

/// The profile format version this build reads and writes.
pub const VERSION: u32 = 2;

/// Most bands a row may hold.
pub const MAX_BANDS: usize = 8;

/// No block smaller than this is probed: the probe reads a line near the middle after
/// its page mate 2 KiB away (see [`crate::policy::probe_offset`]).
pub const PROBE_MIN_BYTES: usize = 4096;

/// Default probe threshold in TSC cycles: an LLC hit on current x86 is 40–80 cycles, a
/// DRAM access 200+ (more under a hypervisor). Calibration replaces it.
pub const DEFAULT_PROBE_HIT_MAX: u32 = 150;

/// Default page-fault threshold in TSC cycles: a probe's first touch of the page and
/// its confirming touch of the neighbouring page both slower than this took page
/// faults, so the destination is fresh (see `probe::classify`); it lies between a
/// second fault in a fresh block and a confirming touch in a cold one
/// (`docs/results/xeon-avx512-2vcpu/fresh`). Calibration replaces it with the
/// geometric mean of the two it measures.
pub const DEFAULT_PROBE_FAULT_MIN: u32 = 900;

/// Default of [`Table::contended_calls`]: a call that finds one other large call of the
/// process in flight reads the contended rows.
pub const DEFAULT_CONTENDED_CALLS: u32 = 2;

/// Default largest block the dispatcher writes with temporal stores when a probed call
/// meets again soon a block it streamed (see `dispatch::keeps_streamed`), for copies
/// and for sets ([`LOOP_OPS`]): where a program writes the same block again and again,
/// temporal stores keep it cached for the next call while it fits in the caches a core
/// reaches fast, and streaming wins beyond. Copies: 1 MiB, where temporal stores beat
/// streaming in the lab's `reuse` loop cells on both hosts measured
/// (`docs/results/epyc-zen4-2vcpu/reuse-loop`, `docs/results/xeon-avx512-16vcpu/reuse-loop`).
/// Sets: half the effective LLC ([`LOOP_HALF_LLC`]), having no source beside the block.
/// Calibration replaces both with the sizes it measures.
pub const DEFAULT_LOOP_TEMPORAL_MAX: [usize; LOOP_OPS.len()] = [1 << 20, LOOP_HALF_LLC];

/// A `loop_temporal_max` of half the effective LLC, worked out when the table is used
/// (written `half-llc` in a profile): the built-in tables' for sets, whose LLC is
/// known only from the CPU.
pub const LOOP_HALF_LLC: usize = usize::MAX;

/// The ops whose loops have their own `loop_temporal_max`, one per family, each keyed
/// by its name (`copy.loop_temporal_max`, `set.loop_temporal_max`) and measured with
/// that op: moves take the copies' bound, zeroing the sets'. A set's loop has no source
/// to keep cached beside its block, so temporal stores keep winning to larger blocks
/// than a copy's (`docs/results/epyc-zen4-2vcpu/reuse-loop`). Zeroing takes the sets'
/// bound: its loops turn earlier, but where is too close to measure in a calibration's
/// time (`docs/results/epyc-zen4-2vcpu/zero-loop`).
pub const LOOP_OPS: [Op; 2] = [Op::Copy, Op::Set];

/// The index of `op`'s `loop_temporal_max` in [`LOOP_OPS`]' order: a move's is the
/// copy's, zeroing's the set's.
pub const fn loop_index(op: Op) -> usize {
    match op {
        Op::Copy | Op::Move => 0,
        Op::Set | Op::Zero => 1,
    }
}

/// The key of an op's `loop_temporal_max` after `OP.`.
const LOOP_KEY: &str = "loop_temporal_max";

/// An op family: the ops that share a row of the table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Family {
    /// `copy` and `move`.
    Copy,
    /// `set` and `zero`.
    Set,
}

impl Family {
    /// Both families, in table order.
    pub const ALL: [Family; 2] = [Family::Copy, Family::Set];
    /// The stable name (`copy`, `set`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::Copy => "copy",
            Family::Set => "set",
        }
    }
    /// The family of an op.
    pub const fn of(op: Op) -> Family {
        match op {
            Op::Copy | Op::Move => Family::Copy,
            Op::Set | Op::Zero => Family::Set,
        }
    }
    /// The ops of the family (the first is the one its kernels must implement).
    pub const fn ops(self) -> [Op; 2] {
        match self {
            Family::Copy => [Op::Copy, Op::Move],
            Family::Set => [Op::Set, Op::Zero],
        }
    }
    fn from_name(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// What a call knows of its destination's cache state.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum State {
    /// Not probed (small call, overlapping move, or a band that does not probe).
    Unknown,
    /// A probe found the line in cache.
    Cached,
    /// A probe found the line in memory (the page present, the line in no cache).
    Cold,
    /// A probe's first touch of the page took a page fault: the page was mapped but
    /// never touched (a new `mmap`, a large `malloc`), so the call itself takes one
    /// fault per page and the kernel clears each page (through the cache) before the
    /// call's stores reach it.
    Fresh,
}

impl State {
    /// Every state, in table order.
    pub const ALL: [State; 4] = [State::Unknown, State::Cached, State::Cold, State::Fresh];
    /// The states a probe can find (every state but `Unknown`).
    pub const PROBED: [State; 3] = [State::Cached, State::Cold, State::Fresh];
    /// The stable name (`unknown`, `cached`, `cold`, `fresh`).
    pub const fn name(self) -> &'static str {
        match self {
            State::Unknown => "unknown",
            State::Cached => "cached",
            State::Cold => "cold",
            State::Fresh => "fresh",
        }
    }
    fn from_name(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// What a band does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Action {
    /// Run this kernel.
    Run(KernelId),
    /// Probe the destination, then use the row of the state found (unknown rows only).
    Probe,
}

impl Action {
    /// The kernel's name, or `probe`.
    pub const fn name(self) -> &'static str {
        match self {
            Action::Run(k) => k.name(),
            Action::Probe => "probe",
        }
    }
}

const fn action_eq(a: Action, b: Action) -> bool {
    match (a, b) {
        (Action::Run(x), Action::Run(y)) => x as u8 == y as u8,
        (Action::Probe, Action::Probe) => true,
        _ => false,
    }
}

/// One band of a row: calls of at least `from` bytes (up to the next band) do `action`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Band {
    /// The smallest size of the band.
    pub from: usize,
    /// What calls in the band do.
    pub action: Action,
}

/// A row: up to [`MAX_BANDS`] bands, the first from 0, sorted by their start.
#[derive(Clone, Copy, Eq)]
pub struct Row {
    bands: [Band; MAX_BANDS],
    len: u8,
}

impl Row {
    /// A row with one band: `action` at every size.
    #[inline]
    pub const fn always(action: Action) -> Row {
        Row {
            bands: [Band { from: 0, action }; MAX_BANDS],
            len: 1,
        }
    }

    /// A row from its bands (`from` strictly increasing, the first 0, at most
    /// [`MAX_BANDS`]); `None` otherwise.
    #[inline]
    pub const fn new(bands: &[Band]) -> Option<Row> {
        if bands.is_empty() || bands.len() > MAX_BANDS || bands[0].from != 0 {
            return None;
        }
        let mut row = Row::always(bands[0].action);
        let mut i = 1;
        while i < bands.len() {
            if bands[i].from <= bands[i - 1].from {
                return None;
            }
            row.bands[i] = bands[i];
            i += 1;
        }
        row.len = bands.len() as u8;
        Some(row)
    }

    /// This row with one more band (const, for built-in tables); `None` when `from`
    /// is not above the last band or the row is full. Equal neighbours merge.
    #[inline]
    pub const fn with(self, from: usize, action: Action) -> Option<Row> {
        let mut r = self;
        let last = r.bands[r.len as usize - 1];
        if from <= last.from {
            return None;
        }
        if action_eq(action, last.action) {
            return Some(r);
        }
        if r.len as usize == MAX_BANDS {
            return None;
        }
        r.bands[r.len as usize] = Band { from, action };
        r.len += 1;
        Some(r)
    }

    /// Makes the row one band: `action` at every size.
    pub fn reset(&mut self, action: Action) {
        self.bands[0] = Band { from: 0, action };
        self.len = 1;
    }

    /// Makes `self` equal to `other`, band by band (no `memcpy`).
    pub fn copy_from(&mut self, other: &Row) {
        let mut i = 0;
        while i < MAX_BANDS {
            self.bands[i] = other.bands[i];
            i += 1;
        }
        self.len = other.len;
    }

    /// Appends a band starting above the last one. A band whose action equals the
    /// last band's is merged into it. Errors when the start is not above the last or
    /// the row is full.
    pub fn push(&mut self, from: usize, action: Action) -> Result<(), ErrorKind> {
        let last = self.bands[self.len as usize - 1];
        if from <= last.from {
            return Err(ErrorKind::BandsNotIncreasing);
        }
        if action == last.action {
            return Ok(());
        }
        if self.len as usize == MAX_BANDS {
            return Err(ErrorKind::TooManyBands);
        }
        self.bands[self.len as usize] = Band { from, action };
        self.len += 1;
        Ok(())
    }

    /// The bands, in order (usable in `const` code).
    #[inline]
    pub const fn bands_const(&self) -> &[Band] {
        self.bands.split_at(self.len as usize).0
    }

    /// The bands, in order.
    pub fn bands(&self) -> &[Band] {
        &self.bands[..self.len as usize]
    }

    /// What a call of `n` bytes does.
    pub fn at(&self, n: usize) -> Action {
        let mut i = self.len as usize - 1;
        while i > 0 && self.bands[i].from > n {
            i -= 1;
        }
        self.bands[i].action
    }

    /// The first size at which the row probes (`None`: never).
    pub fn probe_from(&self) -> Option<usize> {
        self.bands()
            .iter()
            .find(|b| b.action == Action::Probe)
            .map(|b| b.from)
    }
}

impl PartialEq for Row {
    /// Rows are equal when their bands are (slots past the last band do not count).
    fn eq(&self, other: &Row) -> bool {
        self.bands() == other.bands()
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Row {
    /// `from 0: avx2; from 4KiB: rep_movsb`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.bands().iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "from {}: {}", Size(b.from), b.action.name())?;
        }
        Ok(())
    }
}

/// Number of rows in a table: one per family, hint and state.
pub const ROWS: usize = Family::ALL.len() * Hint::ALL.len() * State::ALL.len();

// [`Provenance`] keeps one bit per row.
const _: () = assert!(ROWS <= u32::BITS as usize);

/// The index of a row: family, hint, state.
pub const fn row_index(family: Family, hint: Hint, state: State) -> usize {
    (family as usize * Hint::ALL.len() + hint as usize) * State::ALL.len() + state as usize
}

/// A host's decision table (see the module docs).
///
/// Not `Copy`: at 2.4 KiB a copy is a `memcpy` call, which the core may never make
/// (the shim exports `memcpy`). The core only fills tables in place
/// ([`Table::copy_from`], [`parse_into`]).
#[derive(Clone, Eq, Debug)]
pub struct Table {
    /// The rows, indexed by [`row_index`].
    pub rows: [Row; ROWS],
    /// Largest size that still fits in the LLC as measured: a probe of a block larger
    /// than this reads the line half of it from the end ([`crate::policy::probe_offset`]).
    pub llc_effective: usize,
    /// A probe load taking at most this many TSC cycles found its line in cache.
    pub probe_hit_max: u32,
    /// A probe's first touch of the page taking more than this many TSC cycles took a
    /// page fault: the destination is fresh.
    pub probe_fault_min: u32,
    /// Per op of [`LOOP_OPS`] ([`loop_index`]), the largest block a probed call
    /// writes with temporal stores instead of streaming it when it met the block lately
    /// (a block written again and again; see `dispatch::keeps_streamed`). 0: never.
    pub loop_temporal_max: [usize; LOOP_OPS.len()],
    /// The rows a call reads while the memory system is shared: while at least
    /// [`Table::contended_calls`] large calls of the process are in flight, itself
    /// included. Indexed as `rows`; only those marked in `contended_given` count, the
    /// others are their twins in `rows` ([`Table::contended_row`]).
    pub contended: [Row; ROWS],
    /// One bit per row ([`row_index`]): its contended row was given.
    pub contended_given: u32,
    /// How many large calls in flight at once (the call itself included) make a call
    /// read the contended rows.
    pub contended_calls: u32,
}

impl PartialEq for Table {
    /// Tables are equal when every call decides alike: equal scalars, rows and
    /// contended rows (a contended row given equal to its twin equals one not given).
    fn eq(&self, o: &Table) -> bool {
        self.rows == o.rows
            && (0..ROWS).all(|r| self.contended_at(r) == o.contended_at(r))
            && self.contended_calls == o.contended_calls
            && self.llc_effective == o.llc_effective
            && self.probe_hit_max == o.probe_hit_max
            && self.probe_fault_min == o.probe_fault_min
            && self.loop_temporal_max == o.loop_temporal_max
    }
}

impl Table {
    /// A table whose every row runs `k` at every size (e.g. the portable kernel).
    #[inline]
    pub const fn uniform(k: KernelId, llc_effective: usize) -> Table {
        Table {
            rows: [Row::always(Action::Run(k)); ROWS],
            llc_effective,
            probe_hit_max: DEFAULT_PROBE_HIT_MAX,
            probe_fault_min: DEFAULT_PROBE_FAULT_MIN,
            loop_temporal_max: DEFAULT_LOOP_TEMPORAL_MAX,
            contended: [Row::always(Action::Run(k)); ROWS],
            contended_given: 0,
            contended_calls: DEFAULT_CONTENDED_CALLS,
        }
    }

    /// Makes `self` equal to `other`, band by band (no `memcpy`).
    pub fn copy_from(&mut self, other: &Table) {
        let mut r = 0;
        while r < ROWS {
            self.rows[r].copy_from(&other.rows[r]);
            self.contended[r].copy_from(&other.contended[r]);
            r += 1;
        }
        self.contended_calls = other.contended_calls;
        self.contended_given = other.contended_given;
        self.llc_effective = other.llc_effective;
        self.probe_hit_max = other.probe_hit_max;
        self.probe_fault_min = other.probe_fault_min;
        self.loop_temporal_max = other.loop_temporal_max;
    }

    /// The row for a family, hint and destination state.
    pub fn row(&self, family: Family, hint: Hint, state: State) -> &Row {
        &self.rows[row_index(family, hint, state)]
    }

    /// The row, for changing it.
    pub fn row_mut(&mut self, family: Family, hint: Hint, state: State) -> &mut Row {
        &mut self.rows[row_index(family, hint, state)]
    }

    /// The contended row for a family, hint and destination state (see
    /// [`Table::contended`]).
    pub fn contended_row(&self, family: Family, hint: Hint, state: State) -> &Row {
        self.contended_at(row_index(family, hint, state))
    }

    /// The contended row of index `r`: the given one, else its twin.
    #[inline]
    pub fn contended_at(&self, r: usize) -> &Row {
        if self.contended_given & (1 << r) != 0 {
            &self.contended[r]
        } else {
            &self.rows[r]
        }
    }

    /// The contended row, for changing it: given from now on, starting as its twin if
    /// it was not.
    pub fn contended_row_mut(&mut self, family: Family, hint: Hint, state: State) -> &mut Row {
        let r = row_index(family, hint, state);
        if self.contended_given & (1 << r) == 0 {
            let (rows, contended) = (&self.rows, &mut self.contended);
            contended[r].copy_from(&rows[r]);
            self.contended_given |= 1 << r;
        }
        &mut self.contended[r]
    }

    /// Every row with its key, in table order.
    pub fn keyed_rows(&self) -> impl Iterator<Item = (Family, Hint, State, &Row)> {
        self.keyed(false)
    }

    /// Every contended row with its key, in table order (twins where not given).
    pub fn keyed_contended_rows(&self) -> impl Iterator<Item = (Family, Hint, State, &Row)> {
        self.keyed(true)
    }

    fn keyed(&self, contended: bool) -> impl Iterator<Item = (Family, Hint, State, &Row)> {
        Family::ALL.into_iter().flat_map(move |fam| {
            Hint::ALL.into_iter().flat_map(move |hint| {
                State::ALL.into_iter().map(move |st| {
                    let row = if contended {
                        self.contended_row(fam, hint, st)
                    } else {
                        self.row(fam, hint, st)
                    };
                    (fam, hint, st, row)
                })
            })
        })
    }

    /// True if some contended row differs from its twin: the table makes calls count
    /// the large calls in flight.
    pub fn has_contended_rows(&self) -> bool {
        let mut r = 0;
        while r < ROWS {
            if *self.contended_at(r) != self.rows[r] {
                return true;
            }
            r += 1;
        }
        false
    }

    /// Checks the rules no file may break: kernels fit their family, `probe` only in
    /// unknown rows and never below [`PROBE_MIN_BYTES`]. Returns the first offending
    /// row and why.
    pub fn check(&self) -> Result<(), (Family, Hint, State, ErrorKind)> {
        for (fam, hint, st, row) in self.keyed_rows().chain(self.keyed_contended_rows()) {
            check_row(fam, st, row).map_err(|kind| (fam, hint, st, kind))?;
        }
        Ok(())
    }
}

/// The rules one row of family `fam` and state `st` must keep (see [`Table::check`]).
fn check_row(fam: Family, st: State, row: &Row) -> Result<(), ErrorKind> {
    for b in row.bands() {
        match b.action {
            Action::Probe if st != State::Unknown => return Err(ErrorKind::ProbeInKnownRow),
            Action::Probe if b.from < PROBE_MIN_BYTES => return Err(ErrorKind::ProbeTooSmall),
            Action::Run(k) if !kernel_fits(fam, k) => return Err(ErrorKind::WrongKernelForFamily),
            _ => {}
        }
    }
    Ok(())
}

/// True if kernel `k` can serve family `fam`: it implements the family's first op, or
/// (set family) zeroes.
pub fn kernel_fits(fam: Family, k: KernelId) -> bool {
    let Some(e) = k.kernel() else {
        return false;
    };
    match fam {
        Family::Copy => e.supports(Op::Copy) && e.supports(Op::Move),
        Family::Set => e.supports(Op::Set) || e.supports(Op::Zero),
    }
}

/// Why a profile was rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ErrorKind {
    /// The file has no `version = N` line before its first key.
    MissingVersion,
    /// The version is not [`VERSION`].
    UnsupportedVersion(u32),
    /// A line is neither blank, a comment, nor `key = value`.
    NotKeyValue,
    /// The key is not one this version knows.
    UnknownKey,
    /// The key appears twice.
    DuplicateKey,
    /// A size is not a number with an optional `KiB`/`MiB`/`GiB` suffix.
    BadSize,
    /// A number does not fit.
    Overflow,
    /// A kernel name is not in the kernel table.
    UnknownKernel,
    /// A band is not `from SIZE: KERNEL` (or `from SIZE: probe`).
    BadBand,
    /// The first band does not start at 0, or a band does not start above the one before.
    BandsNotIncreasing,
    /// A row has more than [`MAX_BANDS`] bands.
    TooManyBands,
    /// A kernel cannot serve the row's family (e.g. `rep_stosb` in a copy row).
    WrongKernelForFamily,
    /// `probe` in a row whose state is already known.
    ProbeInKnownRow,
    /// `probe` below [`PROBE_MIN_BYTES`].
    ProbeTooSmall,
    /// The file is larger than the loader's buffer.
    TooLarge,
    /// The file is not UTF-8.
    NotUtf8,
    /// The file named by `BLOCKMEM_PROFILE` cannot be opened or read (or its path is
    /// too long).
    Unreadable,
    /// The path names something other than a regular file (a directory, FIFO or
    /// device), which is never opened in a way that could block.
    NotRegularFile,
    /// `contended_calls` below 2 (a call is never contended by itself alone).
    ContendedCallsBelowTwo,
}

impl ErrorKind {
    /// Every kind, in a fixed order (the versioned one with version 0).
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::MissingVersion,
        ErrorKind::UnsupportedVersion(0),
        ErrorKind::NotKeyValue,
        ErrorKind::UnknownKey,
        ErrorKind::DuplicateKey,
        ErrorKind::BadSize,
        ErrorKind::Overflow,
        ErrorKind::UnknownKernel,
        ErrorKind::BadBand,
        ErrorKind::BandsNotIncreasing,
        ErrorKind::TooManyBands,
        ErrorKind::WrongKernelForFamily,
        ErrorKind::ProbeInKnownRow,
        ErrorKind::ProbeTooSmall,
        ErrorKind::TooLarge,
        ErrorKind::NotUtf8,
        ErrorKind::Unreadable,
        ErrorKind::NotRegularFile,
        ErrorKind::ContendedCallsBelowTwo,
    ];

    /// The reason, in words.
    pub const fn reason(self) -> &'static str {
        match self {
            ErrorKind::MissingVersion => "missing `version = 2` before the first key",
            ErrorKind::UnsupportedVersion(_) => "unsupported profile version: this build reads version 2 decision tables; re-run `blockmem calibrate`",
            ErrorKind::NotKeyValue => "expected `key = value`, a comment (#) or a blank line",
            ErrorKind::UnknownKey => "unknown key (rows are FAMILY.HINT.STATE: copy|set . auto|reuse|noreuse . unknown|cached|cold|fresh; FAMILY.HINT.STATE.contended: the contended rows; other keys: llc_effective, probe_hit_max, probe_fault_min, copy.loop_temporal_max, set.loop_temporal_max, contended_calls)",
            ErrorKind::DuplicateKey => "key given twice",
            ErrorKind::BadSize => "expected a byte count such as 65536, 64KiB, 8MiB or 1GiB",
            ErrorKind::Overflow => "number too large",
            ErrorKind::UnknownKernel => "unknown kernel name (`blockmem info` lists them)",
            ErrorKind::BadBand => "expected bands `from SIZE: KERNEL` separated by `;` (the action may also be `probe`)",
            ErrorKind::BandsNotIncreasing => "the first band must start `from 0` and each band above the one before",
            ErrorKind::TooManyBands => "a row holds at most 8 bands",
            ErrorKind::WrongKernelForFamily => "this kernel cannot serve the row's op family (copy rows need a copy kernel, set rows a set or zero kernel)",
            ErrorKind::ProbeInKnownRow => "`probe` may only appear in an `unknown` row",
            ErrorKind::ProbeTooSmall => "`probe` may not start below 4KiB",
            ErrorKind::TooLarge => "file too large for a profile (over 16 KiB)",
            ErrorKind::NotUtf8 => "file is not UTF-8 text",
            ErrorKind::Unreadable => "cannot open or read the file named by BLOCKMEM_PROFILE",
            ErrorKind::NotRegularFile => "not a regular file (a directory, FIFO or device is never read)",
            ErrorKind::ContendedCallsBelowTwo => "contended_calls counts the call itself: at least 2",
        }
    }
}

/// A rejected profile: the 1-based line (0 for whole-file problems) and the reason.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ProfileError {
    /// 1-based line number; 0 when the problem is the whole file.
    pub line: usize,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.kind.reason())?;
        } else {
            f.write_str(self.kind.reason())?;
        }
        if let ErrorKind::UnsupportedVersion(v) = self.kind {
            write!(f, " (found version {v})")?;
        }
        Ok(())
    }
}

/// Which rows and scalars of a parsed profile came from the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Provenance {
    rows: u32,
    contended_rows: u32,
    contended_calls: bool,
    llc_effective: bool,
    probe_hit_max: bool,
    probe_fault_min: bool,
    loop_temporal_max: [bool; LOOP_OPS.len()],
}

impl Provenance {
    /// True if the row was in the file (false: from the defaults).
    pub fn row_from_file(self, family: Family, hint: Hint, state: State) -> bool {
        self.rows & (1 << row_index(family, hint, state)) != 0
    }
    /// Number of rows the file gave.
    pub fn rows_from_file(self) -> u32 {
        self.rows.count_ones()
    }
    /// True if the contended row was in the file (false: its twin, or the defaults').
    pub fn contended_row_from_file(self, family: Family, hint: Hint, state: State) -> bool {
        self.contended_rows & (1 << row_index(family, hint, state)) != 0
    }
    /// True if the file gave `op`'s `loop_temporal_max` (a move's is the copy's,
    /// zeroing's the set's).
    pub fn loop_bound_from_file(self, op: Op) -> bool {
        self.loop_temporal_max[loop_index(op)]
    }
}

/// Parses a byte count: digits with an optional `B`, `KiB`/`K`, `MiB`/`M`, `GiB`/`G`.
pub fn parse_size(s: &str) -> Result<usize, ErrorKind> {
    let s = s.trim();
    let digits_end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    if digits_end == 0 {
        return Err(ErrorKind::BadSize);
    }
    let mut n: usize = 0;
    for b in s[..digits_end].bytes() {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add((b - b'0') as usize))
            .ok_or(ErrorKind::Overflow)?;
    }
    let shift = match s[digits_end..].trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return Err(ErrorKind::BadSize),
    };
    n.checked_mul(1 << shift).ok_or(ErrorKind::Overflow)
}

/// The suffix of a contended row's key (`copy.auto.cold.contended`).
const CONTENDED: &str = "contended";

/// Parses a row key `FAMILY.HINT.STATE`, or `FAMILY.HINT.STATE.contended` (true).
fn parse_row_key(key: &str) -> Option<(Family, Hint, State, bool)> {
    let mut parts = key.split('.');
    let fam = Family::from_name(parts.next()?)?;
    let hint = Hint::from_name(parts.next()?)?;
    let st = State::from_name(parts.next()?)?;
    let contended = match parts.next() {
        None => false,
        Some(CONTENDED) => true,
        Some(_) => return None,
    };
    parts.next().is_none().then_some((fam, hint, st, contended))
}

/// Parses a row value, `from SIZE: ACTION; from SIZE: ACTION; …`, into `out`.
pub fn parse_row(value: &str, fam: Family, out: &mut Row) -> Result<(), ErrorKind> {
    let mut first = true;
    for band in value.split(';') {
        let band = band.trim();
        let rest = band.strip_prefix("from").ok_or(ErrorKind::BadBand)?;
        let (size, action) = rest.split_once(':').ok_or(ErrorKind::BadBand)?;
        let from = parse_size(size)?;
        let action = match action.trim() {
            "probe" => Action::Probe,
            name => {
                let k = KernelId::from_name(name).ok_or(ErrorKind::UnknownKernel)?;
                if !kernel_fits(fam, k) {
                    return Err(ErrorKind::WrongKernelForFamily);
                }
                Action::Run(k)
            }
        };
        if first {
            if from != 0 {
                return Err(ErrorKind::BandsNotIncreasing);
            }
            out.reset(action);
            first = false;
        } else {
            out.push(from, action)?;
        }
    }
    Ok(())
}

/// One `key = value` line of a profile.
fn parse_line(
    key: &str,
    value: &str,
    t: &mut Table,
    seen: &mut Provenance,
) -> Result<(), ErrorKind> {
    match key {
        "llc_effective" => {
            if core::mem::replace(&mut seen.llc_effective, true) {
                return Err(ErrorKind::DuplicateKey);
            }
            t.llc_effective = parse_size(value)?;
        }
        "probe_hit_max" => {
            if core::mem::replace(&mut seen.probe_hit_max, true) {
                return Err(ErrorKind::DuplicateKey);
            }
            t.probe_hit_max = u32::try_from(parse_size(value)?).map_err(|_| ErrorKind::Overflow)?;
        }
        "probe_fault_min" => {
            if core::mem::replace(&mut seen.probe_fault_min, true) {
                return Err(ErrorKind::DuplicateKey);
            }
            t.probe_fault_min =
                u32::try_from(parse_size(value)?).map_err(|_| ErrorKind::Overflow)?;
        }
        "contended_calls" => {
            if core::mem::replace(&mut seen.contended_calls, true) {
                return Err(ErrorKind::DuplicateKey);
            }
            let n = parse_size(value)?;
            t.contended_calls = u32::try_from(n).map_err(|_| ErrorKind::Overflow)?;
            if n < 2 {
                return Err(ErrorKind::ContendedCallsBelowTwo);
            }
        }
        _ if key.ends_with(LOOP_KEY) => {
            let name = key
                .strip_suffix(LOOP_KEY)
                .and_then(|f| f.strip_suffix('.'))
                .ok_or(ErrorKind::UnknownKey)?;
            let op = LOOP_OPS
                .into_iter()
                .find(|op| op.name() == name)
                .ok_or(ErrorKind::UnknownKey)?;
            let i = loop_index(op);
            if core::mem::replace(&mut seen.loop_temporal_max[i], true) {
                return Err(ErrorKind::DuplicateKey);
            }
            t.loop_temporal_max[i] = match value.trim() {
                "half-llc" => LOOP_HALF_LLC,
                v => parse_size(v)?,
            };
        }
        _ => {
            let (fam, hint, st, contended) = parse_row_key(key).ok_or(ErrorKind::UnknownKey)?;
            let bit = 1 << row_index(fam, hint, st);
            let seen_rows = if contended {
                &mut seen.contended_rows
            } else {
                &mut seen.rows
            };
            if *seen_rows & bit != 0 {
                return Err(ErrorKind::DuplicateKey);
            }
            *seen_rows |= bit;
            let row = if contended {
                t.contended_given |= bit;
                &mut t.contended[row_index(fam, hint, st)]
            } else {
                t.row_mut(fam, hint, st)
            };
            parse_row(value, fam, row)?;
            check_row(fam, st, row)?;
        }
    }
    Ok(())
}

/// Parses a profile into `t`, which holds the defaults: rows and scalars not in the
/// file keep them. On error `t` may hold part of the file.
pub fn parse_into(text: &[u8], t: &mut Table) -> Result<Provenance, ProfileError> {
    let text = core::str::from_utf8(text).map_err(|_| ProfileError {
        line: 0,
        kind: ErrorKind::NotUtf8,
    })?;
    let mut seen = Provenance::default();
    let mut version_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |kind| ProfileError { line, kind };
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let (key, value) = content.split_once('=').ok_or(err(ErrorKind::NotKeyValue))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(err(ErrorKind::NotKeyValue));
        }
        if key == "version" {
            let v = parse_size(value).map_err(|_| err(ErrorKind::UnsupportedVersion(0)))?;
            if v != VERSION as usize {
                return Err(err(ErrorKind::UnsupportedVersion(
                    v.min(u32::MAX as usize) as u32
                )));
            }
            version_seen = true;
            continue;
        }
        if !version_seen {
            return Err(err(ErrorKind::MissingVersion));
        }
        parse_line(key, value, t, &mut seen).map_err(err)?;
    }
    if !version_seen {
        return Err(ProfileError {
            line: 0,
            kind: ErrorKind::MissingVersion,
        });
    }
    // A row the file gives without its contended twin serves contended calls too.
    t.contended_given &= !(seen.rows & !seen.contended_rows);
    Ok(seen)
}

/// [`parse_into`] a copy of `defaults`, returned (for callers with an allocator or a
/// large stack; the core itself only parses in place).
#[inline]
pub fn parse(text: &[u8], defaults: &Table) -> Result<(Table, Provenance), ProfileError> {
    let mut t = defaults.clone();
    let seen = parse_into(text, &mut t)?;
    Ok((t, seen))
}

/// Evidence for one row, written as comment lines under it.
pub type RowNotes<'a> = &'a dyn Fn(Family, Hint, State) -> Option<&'a str>;

/// Writes `t` as a profile file: a header of comment lines from `header`, the version,
/// the scalars, then every row, each followed by the comment lines `notes` gives it.
pub fn render(
    out: &mut dyn fmt::Write,
    t: &Table,
    header: &[&str],
    notes: RowNotes<'_>,
) -> fmt::Result {
    writeln!(out, "# blockmem profile: the decision table of one host")?;
    for h in header {
        writeln!(out, "# {h}")?;
    }
    writeln!(out, "version = {VERSION}")?;
    writeln!(
        out,
        "llc_effective = {}  # probes of larger blocks read the line half this from the end",
        Size(t.llc_effective)
    )?;
    writeln!(
        out,
        "probe_hit_max = {}  # a probe load of at most this many TSC cycles hit the cache",
        t.probe_hit_max
    )?;
    writeln!(
        out,
        "probe_fault_min = {}  # a first touch of the page slower than this took a page fault",
        t.probe_fault_min
    )?;
    for op in LOOP_OPS {
        write!(out, "{}.{LOOP_KEY} = ", op.name())?;
        match t.loop_temporal_max[loop_index(op)] {
            LOOP_HALF_LLC => write!(out, "half-llc")?,
            n => write!(out, "{}", Size(n))?,
        }
        writeln!(
            out,
            "  # a block streamed lately and met again soon is written with temporal stores up to this size"
        )?;
    }
    writeln!(
        out,
        "contended_calls = {}  # the contended rows serve a call while this many large calls run at once, itself included",
        t.contended_calls
    )?;
    let key_width = "copy.noreuse.unknown".len();
    for (fam, hint, st, row) in t.keyed_rows() {
        if st == State::Unknown {
            writeln!(out)?;
        }
        let key = RowKey(fam, hint, st);
        writeln!(out, "{key:<key_width$} = {row}")?;
        if let Some(n) = notes(fam, hint, st) {
            for l in n.lines() {
                writeln!(out, "#   {l}")?;
            }
        }
    }
    if t.has_contended_rows() {
        writeln!(out, "\n# While other large calls run (contended_calls); rows not given here are the rows above.")?;
    }
    for (fam, hint, st, row) in t.keyed_contended_rows() {
        if row != t.row(fam, hint, st) {
            let key = RowKey(fam, hint, st);
            writeln!(out, "{key}.{CONTENDED} = {row}")?;
        }
    }
    Ok(())
}

/// A row's key as the file spells it (`copy.auto.unknown`).
pub struct RowKey(pub Family, pub Hint, pub State);

impl fmt::Display for RowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RowKey(fam, hint, st) = *self;
        // Through `pad` so that width and alignment apply to the whole key.
        let mut buf = [0u8; 32];
        let mut w = SliceWriter {
            buf: &mut buf,
            len: 0,
        };
        let _ = write!(w, "{}.{}.{}", fam.name(), hint.name(), st.name());
        let len = w.len;
        f.pad(core::str::from_utf8(&buf[..len]).unwrap_or("?"))
    }
}

struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            if self.len == self.buf.len() {
                return Err(fmt::Error);
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

/// A byte count printed with the largest exact binary suffix (`64KiB`, `3MiB`, `100`);
/// `usize::MAX` as `unbounded`.
pub struct Size(pub usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == usize::MAX {
            return f.pad("unbounded");
        }
        let mut buf = [0u8; 32];
        let mut w = SliceWriter {
            buf: &mut buf,
            len: 0,
        };
        let mut done = false;
        for (shift, suffix) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.is_multiple_of(1 << shift) {
                let _ = write!(w, "{}{}", n >> shift, suffix);
                done = true;
                break;
            }
        }
        if !done {
            let _ = write!(w, "{n}");
        }
        let len = w.len;
        f.pad(core::str::from_utf8(&buf[..len]).unwrap_or("?"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Buf {
        bytes: [u8; 8192],
        len: usize,
    }
    impl fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let b = s.as_bytes();
            if self.len + b.len() > self.bytes.len() {
                return Err(fmt::Error);
            }
            self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
            Ok(())
        }
    }
    fn buf() -> Buf {
        Buf {
            bytes: [0; 8192],
            len: 0,
        }
    }

    fn sample() -> Table {
        let mut t = Table::uniform(KernelId::Avx2, 24 << 20);
        t.probe_hit_max = 180;
        t.loop_temporal_max = [4 << 20, LOOP_HALF_LLC];
        let copy = t.row_mut(Family::Copy, Hint::Auto, State::Unknown);
        copy.push(4096, Action::Run(KernelId::RepMovsb)).unwrap();
        copy.push(64 << 10, Action::Probe).unwrap();
        let cold = t.row_mut(Family::Copy, Hint::Auto, State::Cold);
        cold.push(8 << 20, Action::Run(KernelId::Avx2Nt)).unwrap();
        let zero = t.row_mut(Family::Set, Hint::NoReuse, State::Unknown);
        zero.push(16 << 10, Action::Run(KernelId::Clzero)).unwrap();
        t
    }

    #[test]
    fn round_trip_with_notes() {
        let t = sample();
        let mut b = buf();
        let notes = |f: Family, h: Hint, s: State| {
            (f == Family::Copy && h == Hint::Auto && s == State::Cold)
                .then_some("8MiB: avx2_nt 1.0 ms, avx2 1.4 ms")
        };
        render(&mut b, &t, &["host: test"], &notes).unwrap();
        let text = core::str::from_utf8(&b.bytes[..b.len]).unwrap();
        assert!(text.contains(
            "copy.auto.unknown    = from 0: avx2; from 4KiB: rep_movsb; from 64KiB: probe\n"
        ));
        assert!(text.contains("#   8MiB: avx2_nt 1.0 ms"));
        assert!(text.contains("\ncopy.loop_temporal_max = 4MiB  #"));
        assert!(text.contains("\nset.loop_temporal_max = half-llc  #"));
        let (q, prov) = parse(&b.bytes[..b.len], &Table::uniform(KernelId::Sse2, 1)).unwrap();
        let mut r = Table::uniform(KernelId::Sse2, 1);
        parse_into(&b.bytes[..b.len], &mut r).unwrap();
        assert_eq!(r, t);
        assert_eq!(q, t);
        assert_eq!(prov.rows_from_file(), ROWS as u32);
    }

    #[test]
    fn missing_rows_keep_defaults_and_equal_bands_merge() {
        let d = Table::uniform(KernelId::Sse2, 8 << 20);
        let (t, prov) = parse(
            b"version = 2\ncopy.reuse.cold = from 0: avx2; from 1K: avx2; from 2K: rep_movsb # c\n",
            &d,
        )
        .unwrap();
        let row = t.row(Family::Copy, Hint::Reuse, State::Cold);
        assert_eq!(row.bands().len(), 2);
        assert_eq!(row.at(2047), Action::Run(KernelId::Avx2));
        assert_eq!(row.at(2048), Action::Run(KernelId::RepMovsb));
        assert_eq!(row.at(usize::MAX), Action::Run(KernelId::RepMovsb));
        assert_eq!(
            t.row(Family::Set, Hint::Auto, State::Unknown),
            d.row(Family::Set, Hint::Auto, State::Unknown)
        );
        assert!(prov.row_from_file(Family::Copy, Hint::Reuse, State::Cold));
        assert!(!prov.row_from_file(Family::Copy, Hint::Auto, State::Cold));
        assert_eq!(t.llc_effective, 8 << 20);
        assert_eq!(
            t.loop_temporal_max, DEFAULT_LOOP_TEMPORAL_MAX,
            "a file without them"
        );
        let (t, _) = parse(b"version = 2\nset.loop_temporal_max = 0\n", &d).unwrap();
        let [copy, set] = DEFAULT_LOOP_TEMPORAL_MAX;
        assert_eq!((copy, set), (1 << 20, LOOP_HALF_LLC));
        assert_eq!(t.loop_temporal_max, [copy, 0]);
        let (t, _) = parse(b"version = 2\ncopy.loop_temporal_max = 8M\n", &d).unwrap();
        assert_eq!(t.loop_temporal_max, [8 << 20, set]);
        let (t, _) = parse(b"version = 2\ncopy.loop_temporal_max = half-llc\n", &d).unwrap();
        assert_eq!(t.loop_temporal_max, [LOOP_HALF_LLC, set]);
        let kind = |text: &[u8]| parse(text, &d).unwrap_err().kind;
        assert_eq!(
            kind(b"version = 2\ncopy.loop_temporal_max = 1M\ncopy.loop_temporal_max = 2M\n"),
            ErrorKind::DuplicateKey
        );
        assert_eq!(
            kind(b"version = 2\nset.loop_temporal_max = lots\n"),
            ErrorKind::BadSize
        );
        for text in [
            &b"version = 2\nloop_temporal_max = 1M\n"[..],
            b"version = 2\nmove.loop_temporal_max = 1M\n",
            b"version = 2\nzero.loop_temporal_max = 1M\n",
            b"version = 2\ncopyloop_temporal_max = 1M\n",
        ] {
            assert_eq!(kind(text), ErrorKind::UnknownKey);
        }
    }

    /// Contended rows: given ones parse and round-trip; a row the file gives without
    /// its twin has the twin equal to it; rows the file does not name keep the
    /// defaults' twins; `contended_calls` below 2 is refused.
    #[test]
    fn contended_rows_parse_render_and_follow_their_twins() {
        let mut defaults = sample();
        defaults
            .contended_row_mut(Family::Copy, Hint::Auto, State::Cold)
            .push(16 << 20, Action::Run(KernelId::Avx512Nt))
            .unwrap();
        defaults
            .contended_row_mut(Family::Set, Hint::Auto, State::Cold)
            .push(1 << 20, Action::Run(KernelId::Avx2Nt))
            .unwrap();
        assert!(defaults.has_contended_rows());
        let text = b"version = 2\ncontended_calls = 3\ncopy.auto.cold = from 0: avx2\ncopy.auto.fresh.contended = from 0: avx2; from 64KiB: avx2_nt\n";
        let (t, seen) = parse(text, &defaults).unwrap();
        assert_eq!(t.contended_calls, 3);
        // Given without its twin: the twin is the row.
        assert_eq!(
            t.contended_row(Family::Copy, Hint::Auto, State::Cold),
            t.row(Family::Copy, Hint::Auto, State::Cold)
        );
        // Not named: the defaults' twin stays.
        assert_eq!(
            t.contended_row(Family::Set, Hint::Auto, State::Cold),
            defaults.contended_row(Family::Set, Hint::Auto, State::Cold)
        );
        // Given: as written; its row is the defaults'.
        let want = Row::new(&[
            Band {
                from: 0,
                action: Action::Run(KernelId::Avx2),
            },
            Band {
                from: 64 << 10,
                action: Action::Run(KernelId::Avx2Nt),
            },
        ]);
        assert_eq!(
            Some(*t.contended_row(Family::Copy, Hint::Auto, State::Fresh)),
            want
        );
        assert_eq!(
            t.row(Family::Copy, Hint::Auto, State::Fresh),
            defaults.row(Family::Copy, Hint::Auto, State::Fresh)
        );
        assert!(seen.contended_row_from_file(Family::Copy, Hint::Auto, State::Fresh));
        assert!(!seen.contended_row_from_file(Family::Copy, Hint::Auto, State::Cold));
        let mut b = buf();
        render(&mut b, &t, &[], &|_, _, _| None).unwrap();
        let (back, _) = parse(&b.bytes[..b.len], &Table::uniform(KernelId::Portable, 0)).unwrap();
        assert_eq!(back, t);
        for (bad, line) in [(&b"version = 2\ncontended_calls = 1\n"[..], 2), (b"version = 2\ncopy.auto.cold.contended = from 0: avx2\ncopy.auto.cold.contended = from 0: avx2\n", 3), (b"version = 2\ncopy.auto.cold.busy = from 0: avx2\n", 2)] {
            let e = parse(bad, &defaults).unwrap_err();
            assert_eq!(e.line, line, "{e}");
        }
    }

    #[test]
    fn sizes_print_with_suffixes() {
        let show = |n: usize| {
            let mut b = buf();
            fmt::write(&mut b, format_args!("{}", Size(n))).unwrap();
            b.bytes[..b.len].to_vec()
        };
        assert_eq!(show(0), b"0");
        assert_eq!(show(64 << 10), b"64KiB");
        assert_eq!(show(3 << 20), b"3MiB");
        assert_eq!(show((1 << 20) + 1), b"1048577");
        assert_eq!(show(usize::MAX), b"unbounded");
    }

    #[test]
    fn every_error_names_its_line_and_reason() {
        let d = Table::uniform(KernelId::Sse2, 8 << 20);
        let cases: [(&[u8], usize, ErrorKind); 17] = [
            (
                b"copy.auto.unknown = from 0: avx2\n",
                1,
                ErrorKind::MissingVersion,
            ),
            (b"# only a comment\n", 0, ErrorKind::MissingVersion),
            (
                b"version = 1\nstream_auto = 1\n",
                1,
                ErrorKind::UnsupportedVersion(1),
            ),
            (
                b"version = 2\ncopy.auto.unknown from 0\n",
                2,
                ErrorKind::NotKeyValue,
            ),
            (b"version = 2\nstream_auto = 5\n", 2, ErrorKind::UnknownKey),
            (
                b"version = 2\ncopy.auto = from 0: avx2\n",
                2,
                ErrorKind::UnknownKey,
            ),
            (
                b"version = 2\nset.auto.cold = from 0: avx2\nset.auto.cold = from 0: avx2\n",
                3,
                ErrorKind::DuplicateKey,
            ),
            (
                b"version = 2\nllc_effective = 5 MB\n",
                2,
                ErrorKind::BadSize,
            ),
            (
                b"version = 2\nllc_effective = 99999999999999999999999\n",
                2,
                ErrorKind::Overflow,
            ),
            (
                b"version = 2\nprobe_hit_max = 5GiB\n",
                2,
                ErrorKind::Overflow,
            ),
            (
                b"version = 2\ncopy.auto.cold = from 0: avx3\n",
                2,
                ErrorKind::UnknownKernel,
            ),
            (
                b"version = 2\ncopy.auto.cold = 0: avx2\n",
                2,
                ErrorKind::BadBand,
            ),
            (
                b"version = 2\ncopy.auto.cold = from 1: avx2\n",
                2,
                ErrorKind::BandsNotIncreasing,
            ),
            (
                b"version = 2\ncopy.auto.cold = from 0: avx2; from 0: sse2\n",
                2,
                ErrorKind::BandsNotIncreasing,
            ),
            (
                b"version = 2\ncopy.auto.cold = from 0: rep_stosb\n",
                2,
                ErrorKind::WrongKernelForFamily,
            ),
            (
                b"version = 2\ncopy.auto.cold = from 0: avx2; from 8KiB: probe\n",
                2,
                ErrorKind::ProbeInKnownRow,
            ),
            (
                b"version = 2\ncopy.auto.unknown = from 0: avx2; from 1KiB: probe\n",
                2,
                ErrorKind::ProbeTooSmall,
            ),
        ];
        for (text, line, kind) in cases {
            let e = parse(text, &d).unwrap_err();
            assert_eq!(
                (e.line, e.kind),
                (line, kind),
                "{:?}",
                core::str::from_utf8(text)
            );
        }
        let many = b"version = 2\nset.auto.cold = from 0: avx2; from 1: sse2; from 2: avx2; from 3: sse2; from 4: avx2; from 5: sse2; from 6: avx2; from 7: sse2; from 8: avx2\n";
        assert_eq!(parse(many, &d).unwrap_err().kind, ErrorKind::TooManyBands);
        assert_eq!(
            parse(b"version = 2\n\xff\n", &d).unwrap_err().kind,
            ErrorKind::NotUtf8
        );
    }

    #[test]
    fn the_unknown_key_reason_names_every_family_hint_and_state() {
        let reason = ErrorKind::UnknownKey.reason();
        let dims = reason
            .split_once("FAMILY.HINT.STATE: ")
            .and_then(|(_, r)| r.split_once(';'))
            .unwrap()
            .0
            .trim_end_matches(')');
        let mut parts = dims.split(" . ");
        let mut same = |names: &mut dyn Iterator<Item = &'static str>| {
            assert!(parts.next().unwrap().split('|').eq(names), "{reason}");
        };
        same(&mut Family::ALL.iter().map(|f| f.name()));
        same(&mut Hint::ALL.iter().map(|h| h.name()));
        same(&mut State::ALL.iter().map(|s| s.name()));
    }

    #[test]
    fn set_rows_take_zero_only_kernels_and_copy_rows_do_not() {
        assert!(kernel_fits(Family::Set, KernelId::Clzero));
        assert!(kernel_fits(Family::Set, KernelId::RepStosb));
        assert!(!kernel_fits(Family::Copy, KernelId::Clzero));
        assert!(!kernel_fits(Family::Set, KernelId::Avx512Pw));
        assert!(sample().check().is_ok());
        let mut t = sample();
        t.row_mut(Family::Copy, Hint::Auto, State::Cached)
            .reset(Action::Probe);
        assert_eq!(t.check().unwrap_err().3, ErrorKind::ProbeInKnownRow);
    }
}
