//! `BLOCKMEM_STATS=1`: calls and bytes per operation and per kernel, printed as one
//! line on stderr when the process exits.
//!
//! Counters are relaxed atomics, touched only when statistics are on (the copy path
//! checks one byte otherwise). Each call is counted under the kernel that ran it: with
//! statistics on, calls take the path traced calls take (`trace::execute`: the core's
//! decision with the call's own hint, from a hint map or `Auto`, its probe included,
//! then that kernel), so the count is observed, not predicted. Calls the shim or the
//! core's inline ladder run are `inline`; pass-through calls (`BLOCKMEM_DISABLE=1`)
//! count as `libc`.
//!
//! The line (`calls/bytes` pairs; kernels with no calls are left out):
//!
//! ```text
//! blockmem: pid 4242 calls/bytes: copy 1200/35000000 move 3/100 set 40/5000 zero 0/0; kernels: inline 1190/20000 avx2 53/35085100; profile cpuid-defaults
//! ```
//!
//! followed, when they apply, by `; disabled (libc)`, `; forced <kernel>`,
//! `; hints N sites from SIZE B` and the profile's rejection reason.
//!
//! It is written with `write(2)` from a `.fini_array` entry, so it appears on `exit`
//! (and `dlclose`), not on `_exit` or a fatal signal. A forked child that exits prints
//! its own line, with its own pid.
//!
//! The line goes to a duplicate of stderr taken at load ([`keep_stderr`]): the
//! program's own `atexit` handlers run before `.fini_array`, and some close stderr
//! (GNU coreutils' `close_stdout` does), which would silence a write to fd 2. The
//! duplicate is close-on-exec and sits at fd 200 or above (lowest free fd from 3 if
//! the limit is lower), away from the numbers programs expect `open` to return; it
//! exists only when statistics are on. Nothing the shim writes goes to stdout, which is
//! the program's (`gzip -c f > f.gz` under `BLOCKMEM_STATS=1` or `blockmem trace` leaves
//! `f.gz` exactly as gzip wrote it).

use core::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use blockmem::KernelId;

use crate::out::Line;
use crate::{config, MODE, MODE_STATS, MODE_TRACE};

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

static OP_CALLS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static OP_BYTES: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static KERNEL_CALLS: [AtomicU64; KERNEL_SLOTS] = [const { AtomicU64::new(0) }; KERNEL_SLOTS];
static KERNEL_BYTES: [AtomicU64; KERNEL_SLOTS] = [const { AtomicU64::new(0) }; KERNEL_SLOTS];

fn add(calls: &[AtomicU64], bytes: &[AtomicU64], slot: usize, n: usize) {
    if let (Some(c), Some(b)) = (calls.get(slot), bytes.get(slot)) {
        c.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Counts one call of `n` bytes that ran on kernel slot `kernel` (as
/// `trace::execute` returns it: `inline`, one per [`KernelId`], `libc`).
pub(crate) fn record(slot: OpSlot, n: usize, kernel: u8) {
    add(&OP_CALLS, &OP_BYTES, slot as usize, n);
    add(&KERNEL_CALLS, &KERNEL_BYTES, usize::from(kernel), n);
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

fn pair(line: &mut Line, calls: &AtomicU64, bytes: &AtomicU64) {
    line.num(calls.load(Ordering::Relaxed));
    line.byte(b'/');
    line.num(bytes.load(Ordering::Relaxed));
}

/// Runs at exit: writes the trace's buffers if tracing is on (first, so that the
/// trace and the line cover the same calls), then prints the line if statistics are on.
extern "C" fn print_at_exit() {
    let mode = MODE.load(Ordering::Relaxed);
    if mode & MODE_TRACE != 0 {
        crate::trace::finish();
    }
    if mode & MODE_STATS == 0 {
        return;
    }
    let mut line = Line::new();
    line.bytes(b"blockmem: pid ");
    // SAFETY: getpid has no preconditions.
    line.num(unsafe { libc::getpid() } as u64);
    line.bytes(b" calls/bytes:");
    for ((name, calls), bytes) in OP_NAMES.iter().zip(&OP_CALLS).zip(&OP_BYTES) {
        line.byte(b' ');
        line.bytes(name);
        line.byte(b' ');
        pair(&mut line, calls, bytes);
    }
    line.bytes(b"; kernels:");
    for (slot, (calls, bytes)) in KERNEL_CALLS.iter().zip(&KERNEL_BYTES).enumerate() {
        if calls.load(Ordering::Relaxed) == 0 {
            continue;
        }
        line.byte(b' ');
        line.bytes(kernel_name(slot));
        line.byte(b' ');
        pair(&mut line, calls, bytes);
    }
    config::describe(&mut line);
    line.byte(b'\n');
    let fd = STATS_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    if !line.write_to(fd) && fd != 2 {
        line.write_to(2);
    }
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
