//! `BLOCKMEM_STATS=1`: calls and bytes per operation and per kernel, for the process
//! and for each of its threads, printed on stderr when the process exits.
//!
//! Each call is counted under the kernel that ran it: with statistics on, calls take
//! the path traced calls take (`trace::execute`: the core's decision with the call's
//! own hint, from a hint map or `Auto`, its probe included, then that kernel), so the
//! count is observed, not predicted. Calls the shim or the core's inline ladder run are
//! `inline`; pass-through calls (`BLOCKMEM_DISABLE=1`) count as `libc`. Nothing here
//! runs with statistics off (the copy path checks one byte).
//!
//! The first line is the process's (`calls/bytes` pairs; kernels with no calls are
//! left out):
//!
//! ```text
//! blockmem: pid 4242 calls/bytes: copy 1200/35000000 move 3/100 set 40/5000 zero 0/0; kernels: inline 1190/20000 avx2 50/65100 avx2_nt 3/34920000; profile cpuid-defaults
//! ```
//!
//! followed, when they apply, by `; disabled (libc)`, `; forced <kernel>`,
//! `; hints N sites from SIZE B` and the profile's rejection reason. Then the same
//! calls by thread: a line for all threads together (`threads N and others` when some
//! were past the table's [`THREADS`]), one per thread (its kernel tid, in the order
//! threads first called), and one for the threads past the table (`other threads`). Bytes are split by the store class of the
//! kernel that ran (`temporal`: cached stores, `inline` included; `streamed`:
//! non-temporal; `libc`: passed through), calls by size band:
//!
//! ```text
//! blockmem: pid 4242 threads 2: calls 1243 bytes 35005100 temporal 85100 streamed 34920000 libc 0; sizes <=128 1190 <=2K 20 <=64K 30 <=1M 0 >1M 3
//! blockmem: pid 4242 tid 4242: calls 1200 bytes 35000000 temporal 80000 streamed 34920000 libc 0; sizes <=128 1180 <=2K 10 <=64K 7 <=1M 0 >1M 3
//! blockmem: pid 4242 tid 4250: calls 43 bytes 5100 temporal 5100 streamed 0 libc 0; sizes <=128 10 <=2K 10 <=64K 23 <=1M 0 >1M 0
//! ```
//!
//! A forked child's counters start as a copy of its parent's, so its lines include the
//! parent's threads up to the fork, as its totals do; an exec'd program starts afresh.
//!
//! # Per-thread slots
//!
//! Counters live in a fixed table of per-thread slots (no allocation, nothing to hand
//! back when a thread exits). A thread's first counted call claims the next slot with
//! one compare-and-swap and caches its index with its tid (module `thread`); from then
//! on it alone writes that slot, with plain read-modify-write instructions: one
//! instruction each, so a signal handler on the same thread cannot split an update,
//! and no other thread writes the line. Threads past [`THREADS`] share the last slot
//! with atomic adds. Slots are never reused; the totals are sums over them.
//!
//! # Output
//!
//! The lines are written with `write(2)` from a `.fini_array` entry, so they appear on
//! `exit` (and `dlclose`), not on `_exit` or a fatal signal. A forked child that exits
//! prints its own, with its own pid.
//!
//! They go to a duplicate of stderr taken at load ([`keep_stderr`]): the
//! program's own `atexit` handlers run before `.fini_array`, and some close stderr
//! (GNU coreutils' `close_stdout` does), which would silence a write to fd 2. The
//! duplicate is close-on-exec and sits at fd 200 or above (lowest free fd from 3 if
//! the limit is lower), away from the numbers programs expect `open` to return; it
//! exists only when statistics are on. Nothing the shim writes goes to stdout, which is
//! the program's (`gzip -c f > f.gz` under `BLOCKMEM_STATS=1` or `blockmem trace` leaves
//! `f.gz` exactly as gzip wrote it).

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use blockmem::KernelId;

use crate::out::Line;
use crate::{config, INLINE_MAX, MODE, MODE_STATS, MODE_TRACE};

/// The operation as the caller named it: `memcpy`, `mempcpy` and their `_chk` variants
/// are `Copy`; `memmove` is `Move`; `memset` is `Set`; `bzero` is `Zero`.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpSlot {
    Copy = 0,
    Move = 1,
    Set = 2,
    Zero = 3,
}

const OP_NAMES: [&[u8]; 4] = [b"copy", b"move", b"set", b"zero"];

/// Kernel slots, numbered as in trace files: `inline`, then one per [`KernelId`] in
/// table order, then `libc`.
const KERNEL_SLOTS: usize = KernelId::ALL.len() + 2;
const SLOT_INLINE: usize = crate::trace_file::SLOT_INLINE as usize;
const SLOT_LIBC: usize = crate::trace_file::SLOT_LIBC as usize;
const _: () = assert!(SLOT_LIBC == KERNEL_SLOTS - 1);

/// Where the line goes: the duplicate of stderr, or stderr itself; -1: nowhere (stderr
/// was closed at start). Never stdout.
static STATS_FD: AtomicI32 = AtomicI32::new(2);

/// Duplicates stderr for the line at exit (see the module docs). Called by the
/// constructor when statistics are on.
pub(crate) fn keep_stderr() {
    for lowest in [200, 3] {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on fd 2 has no memory-safety preconditions; a
        // closed fd 2 just makes it fail.
        let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, lowest) };
        if fd >= 0 {
            STATS_FD.store(fd, Ordering::Relaxed);
            return;
        }
    }
    // Neither worked. If fd 2 is not even open, the program started with stderr closed
    // and whatever it opens later may get that number (its output file, say): then the
    // line is not written at all.
    // SAFETY: fcntl(F_GETFD) has no memory-safety preconditions.
    if unsafe { libc::fcntl(2, libc::F_GETFD) } < 0 {
        STATS_FD.store(-1, Ordering::Relaxed);
    }
}

/// Threads with a slot of their own; later ones share the `other threads` slot.
pub(crate) const THREADS: usize = 256;
/// Index of the shared slot.
const OTHER: u32 = THREADS as u32;

/// Size bands: calls up to each bound, then above the last. The first is the shim's
/// inline rungs, the second its assembly entries' fast path.
const BAND_MAX: [usize; 4] = [INLINE_MAX, 2 << 10, 64 << 10, 1 << 20];
const BAND_NAMES: [&[u8]; 5] = [b"<=128", b"<=2K", b"<=64K", b"<=1M", b">1M"];
const BANDS: usize = BAND_NAMES.len();
const _: () = assert!(INLINE_MAX == 128 || !cfg!(target_arch = "x86_64"));

/// One thread's counters (the shared slot: every thread past [`THREADS`]).
#[repr(C, align(64))]
struct Slot {
    /// Kernel tid of the owner (0: unclaimed, or the shared slot).
    tid: AtomicU32,
    op_calls: [AtomicU64; 4],
    op_bytes: [AtomicU64; 4],
    kernel_calls: [AtomicU64; KERNEL_SLOTS],
    kernel_bytes: [AtomicU64; KERNEL_SLOTS],
    bands: [AtomicU64; BANDS],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            tid: AtomicU32::new(0),
            op_calls: [const { AtomicU64::new(0) }; 4],
            op_bytes: [const { AtomicU64::new(0) }; 4],
            kernel_calls: [const { AtomicU64::new(0) }; KERNEL_SLOTS],
            kernel_bytes: [const { AtomicU64::new(0) }; KERNEL_SLOTS],
            bands: [const { AtomicU64::new(0) }; BANDS],
        }
    }
}

static SLOTS: [Slot; THREADS + 1] = [const { Slot::new() }; THREADS + 1];
/// Slots claimed so far (at most [`THREADS`]).
static CLAIMED: AtomicU32 = AtomicU32::new(0);

/// The slot of thread `tid`: the one it already has (a signal handler may have
/// claimed it during the thread's first call), else the next free one, else the
/// shared one. Lock-free: one compare-and-swap that only fails when another thread
/// claimed at the same moment.
pub(crate) fn slot_for(tid: u32) -> u32 {
    let mut n = CLAIMED.load(Ordering::Acquire);
    for (i, s) in SLOTS.iter().enumerate().take(n as usize) {
        if s.tid.load(Ordering::Relaxed) == tid {
            return i as u32;
        }
    }
    while (n as usize) < THREADS {
        match CLAIMED.compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                if let Some(s) = SLOTS.get(n as usize) {
                    s.tid.store(tid, Ordering::Relaxed);
                }
                return n;
            }
            Err(now) => n = now,
        }
    }
    OTHER
}

/// Adds `v` to a counter. A slot of its own is written by one thread only, so one
/// plain read-modify-write instruction is exact (a signal handler runs between
/// instructions, never inside one); the shared slot needs a locked add.
#[inline(always)]
fn bump(c: &AtomicU64, v: u64, own: bool) {
    #[cfg(target_arch = "x86_64")]
    if own {
        // SAFETY: `c` is a valid, aligned u64 that only this thread writes (see above);
        // readers load it atomically, and an aligned 8-byte store is never torn.
        unsafe {
            core::arch::asm!(
                "add qword ptr [{p}], {v}",
                p = in(reg) c.as_ptr(),
                v = in(reg) v,
                options(nostack)
            )
        };
        return;
    }
    let _ = own;
    c.fetch_add(v, Ordering::Relaxed);
}

/// Counts one call of `n` bytes by the thread of statistics slot `slot` (from
/// `thread::me`) that ran on kernel slot `kernel` (as `trace::execute` returns it:
/// `inline`, one per [`KernelId`], `libc`).
pub(crate) fn record(slot: u32, op: OpSlot, n: usize, kernel: u8) {
    let Some(s) = SLOTS.get(slot as usize) else {
        return;
    };
    let own = slot != OTHER;
    let k = usize::from(kernel);
    if let (Some(c), Some(b)) = (s.op_calls.get(op as usize), s.op_bytes.get(op as usize)) {
        bump(c, 1, own);
        bump(b, n as u64, own);
    }
    if let (Some(c), Some(b)) = (s.kernel_calls.get(k), s.kernel_bytes.get(k)) {
        bump(c, 1, own);
        bump(b, n as u64, own);
    }
    let band = BAND_MAX.iter().filter(|&&m| n > m).count();
    if let Some(c) = s.bands.get(band) {
        bump(c, 1, own);
    }
}

fn kernel_name(slot: usize) -> &'static [u8] {
    match slot {
        SLOT_INLINE => b"inline",
        SLOT_LIBC => b"libc",
        _ => match KernelId::ALL.get(slot.wrapping_sub(1)) {
            Some(k) => k.name().as_bytes(),
            None => b"?",
        },
    }
}

/// Bytes of kernel slot `slot` go to: 0 temporal, 1 streamed, 2 libc.
fn store_class(slot: usize) -> usize {
    match slot {
        SLOT_INLINE => 0,
        SLOT_LIBC => 2,
        _ => match KernelId::ALL.get(slot.wrapping_sub(1)) {
            Some(k) if k.streams() => 1,
            _ => 0,
        },
    }
}

/// The slots a line sums. No line copies counters into an array of its own: a large
/// stack array would be zeroed with a `memset` call.
#[derive(Clone, Copy)]
enum Group {
    /// Every slot: the process.
    All,
    /// The claimed slots of one tid (more than one only if a signal handler claimed
    /// during the thread's first call).
    Tid(u32, usize),
    /// The shared slot.
    Other,
}

impl Group {
    fn has(self, i: usize, s: &Slot) -> bool {
        match self {
            Group::All => true,
            Group::Tid(tid, claimed) => i < claimed && s.tid.load(Ordering::Relaxed) == tid,
            Group::Other => i == OTHER as usize,
        }
    }

    /// The sum of one counter over the group's slots.
    fn sum(self, counter: impl Fn(&Slot) -> Option<&AtomicU64>) -> u64 {
        SLOTS
            .iter()
            .enumerate()
            .filter(|&(i, s)| self.has(i, s))
            .filter_map(|(_, s)| counter(s))
            .fold(0, |a, c| a.wrapping_add(c.load(Ordering::Relaxed)))
    }

    fn op(self, k: usize) -> (u64, u64) {
        (
            self.sum(|s| s.op_calls.get(k)),
            self.sum(|s| s.op_bytes.get(k)),
        )
    }

    fn kernel(self, k: usize) -> (u64, u64) {
        (
            self.sum(|s| s.kernel_calls.get(k)),
            self.sum(|s| s.kernel_bytes.get(k)),
        )
    }

    fn calls(self) -> u64 {
        (0..4).fold(0, |a, k| a.wrapping_add(self.op(k).0))
    }
}

fn pair(line: &mut Line, (calls, bytes): (u64, u64)) {
    line.num(calls);
    line.byte(b'/');
    line.num(bytes);
}

fn start(line: &mut Line) {
    line.bytes(b"blockmem: pid ");
    // SAFETY: getpid has no preconditions.
    line.num(unsafe { libc::getpid() } as u64);
}

/// The process line (see the module docs).
fn process_line(line: &mut Line) {
    start(line);
    line.bytes(b" calls/bytes:");
    for (k, name) in OP_NAMES.iter().enumerate() {
        line.byte(b' ');
        line.bytes(name);
        line.byte(b' ');
        pair(line, Group::All.op(k));
    }
    line.bytes(b"; kernels:");
    for k in 0..KERNEL_SLOTS {
        let counts = Group::All.kernel(k);
        if counts.0 != 0 {
            line.byte(b' ');
            line.bytes(kernel_name(k));
            line.byte(b' ');
            pair(line, counts);
        }
    }
    config::describe(line);
}

/// The rest of a thread line: calls, bytes by store class, calls by size band.
fn thread_counts(line: &mut Line, g: Group) {
    let mut class = [0u64; 3];
    for k in 0..KERNEL_SLOTS {
        let c = &mut class[store_class(k)];
        *c = c.wrapping_add(g.kernel(k).1);
    }
    line.bytes(b": calls ");
    line.num(g.calls());
    line.bytes(b" bytes ");
    line.num(class.iter().fold(0, |a, &b| a.wrapping_add(b)));
    for (name, v) in [&b" temporal "[..], b" streamed ", b" libc "]
        .iter()
        .zip(class)
    {
        line.bytes(name);
        line.num(v);
    }
    line.bytes(b"; sizes");
    for (k, name) in BAND_NAMES.iter().enumerate() {
        line.byte(b' ');
        line.bytes(name);
        line.byte(b' ');
        line.num(g.sum(|s| s.bands.get(k)));
    }
}

/// Writes one line to the statistics descriptor (stderr if writing there fails).
fn emit(line: &mut Line) {
    line.byte(b'\n');
    let fd = STATS_FD.load(Ordering::Relaxed);
    if fd >= 0 && !line.write_to(fd) && fd != 2 {
        line.write_to(2);
    }
}

/// The claimed slots whose tid no earlier slot has: one per thread.
fn first_of_tid(claimed: usize) -> impl Iterator<Item = u32> {
    let tid = |s: &Slot| s.tid.load(Ordering::Relaxed);
    SLOTS
        .iter()
        .enumerate()
        .take(claimed)
        .filter(move |&(i, s)| !SLOTS.iter().take(i).any(|e| tid(e) == tid(s)))
        .map(move |(_, s)| tid(s))
}

/// The thread lines: all threads, one per tid, then the shared slot.
fn thread_lines(claimed: usize) {
    let mut line = Line::new();
    start(&mut line);
    line.bytes(b" threads ");
    let other = Group::Other.calls() > 0;
    line.num(first_of_tid(claimed).count() as u64);
    if other {
        line.bytes(b" and others");
    }
    thread_counts(&mut line, Group::All);
    emit(&mut line);
    for tid in first_of_tid(claimed) {
        let g = Group::Tid(tid, claimed);
        if g.calls() == 0 {
            continue;
        }
        let mut line = Line::new();
        start(&mut line);
        line.bytes(b" tid ");
        line.num(u64::from(tid));
        thread_counts(&mut line, g);
        emit(&mut line);
    }
    if other {
        let mut line = Line::new();
        start(&mut line);
        line.bytes(b" other threads");
        thread_counts(&mut line, Group::Other);
        emit(&mut line);
    }
}

/// Runs at exit: writes the trace's buffers if tracing is on (first, so that the
/// trace and the lines cover the same calls), then prints the lines if statistics are
/// on.
extern "C" fn print_at_exit() {
    let mode = MODE.load(Ordering::Relaxed);
    if mode & MODE_TRACE != 0 {
        crate::trace::finish();
    }
    if mode & MODE_STATS == 0 || STATS_FD.load(Ordering::Relaxed) < 0 {
        return;
    }
    let mut line = Line::new();
    process_line(&mut line);
    emit(&mut line);
    thread_lines((CLAIMED.load(Ordering::Acquire) as usize).min(THREADS));
}

#[used]
#[link_section = ".fini_array"]
static PRINT_AT_EXIT: extern "C" fn() = print_at_exit;

/// Writes a warning line to stderr (used by the constructor).
pub(crate) fn warn(parts: &[&[u8]]) {
    let mut line = Line::new();
    line.bytes(b"blockmem: ");
    for p in parts {
        line.bytes(p);
    }
    line.byte(b'\n');
    line.write_to(2);
}
