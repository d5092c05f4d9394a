//! `BLOCKMEM_TRACE=<path>`: one record per intercepted call — op, size, addresses,
//! TSC cycles, the kernel that ran, the calling thread and, every `BLOCKMEM_TRACE_SAMPLE`-th call, the
//! probed cache state of the source and destination — in the binary format of
//! [`crate::trace_file`]. `blockmem trace` runs programs this way and reports.
//!
//! # Buffers: per thread in effect, owned by nobody
//!
//! Records go to a fixed pool of [`SLOTS`] buffers of [`SLOT_BYTES`] each, mapped once
//! by the constructor. A call *claims* a buffer for its own duration with one
//! compare-and-swap on the buffer's busy word, starting at an index hashed from the
//! calling thread's thread pointer (`fs:0` on x86-64: one load, no system call, no
//! thread-local storage), and releases it when its record is written. A thread
//! therefore keeps finding the same buffer, and threads do not share cache lines while
//! they trace; yet no buffer belongs to a thread, so nothing has to be handed back
//! when a thread exits. A claim never waits: if the hashed buffer is busy (another
//! thread with a colliding hash, or this very thread interrupted by a signal whose
//! handler copies), the next [`TRIES`] − 1 buffers are tried, and a call that finds
//! all of them busy runs untraced and is counted in the trailer. No lock, no
//! allocation and no `memcpy` on the copy path; only the claiming call touches a
//! buffer's contents, so a signal handler can never see or corrupt a half-written
//! record.
//!
//! A full buffer is written to the file with one `write(2)` (`O_APPEND`, so blocks
//! from different buffers never interleave) by the call that filled it; every buffer
//! is written at exit from the same `.fini_array` function that prints the statistics
//! line, trace first, so that both cover the same calls. `errno` is preserved.
//!
//! # Fork and exec
//!
//! The pool is mapped `MADV_WIPEONFORK`: a forked child starts with empty buffers,
//! none left busy by a thread that does not exist in it, and a zero "ready" word, so
//! its first traced call (or its exit) creates the child's own file, `<path>.<pid>`,
//! closes the parent's descriptor and writes a header naming the parent. A
//! `pthread_atfork` prepare handler writes the parent's buffers and then records the
//! TSC just before `fork`, which becomes the child's start time: a report can line the
//! child up with its parent's records and count the calls a child's statistics
//! inherit, even when the parent later replaces itself with `exec`. Where the kernel
//! lacks `MADV_WIPEONFORK` (before Linux 4.14), a `pthread_atfork` child handler
//! resets the pool instead. An exec'd program loads the shim afresh from
//! `LD_PRELOAD`, finds `BLOCKMEM_TRACE` in its environment, and creates the next free
//! name (`O_EXCL`; never truncating: it keeps its pid, so `<path>.<pid>.1` and on);
//! records a process had not flushed when it called `exec` are lost, as its
//! statistics are.
//!
//! # Timing and probing
//!
//! Cycles are TSC ticks around the whole call as the program experiences it (the
//! dispatcher's own decision and probes included; `lfence; rdtsc` … `rdtscp`), measured
//! overhead included (it is in the header and the report subtracts it). Sampled calls
//! are probed *before* that window: a timed load of the first byte of the source and
//! the destination (the first-line probe of seed 003, docs/SEEDS.md), then up to 8
//! lines spread across each block (see `trace_file`). The probe loads warm those lines,
//! so a sampled call's own time is slightly flattered; the line blockmem's policy may
//! probe itself (the middle one, past the LLC one half the LLC from the end:
//! `blockmem::policy::probe_offset`; a calibrated profile's `probe_min`) is left out so
//! that its decision is not changed by the tracer.

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use blockmem::policy::Plan;
use blockmem::profile::{Family, State};
use blockmem::{Hint, KernelId, Op};

use crate::next::Next;
use crate::stats::OpSlot;
use crate::trace_file::{
    self as file, clock_ns, errno, kernel_slot, set_errno, Local, Writer, ARGV0, BLOCK_HEAD,
    MAX_RECORD, SLOT_INLINE, SLOT_LIBC, TAG_FLAG, TAG_KERNEL_ESCAPE, TAG_SAMPLED, TRACE_PATH,
};
use crate::{copy_small, disjoint, set_small, INLINE_MAX};

/// Buffers in the pool.
pub(crate) const SLOTS: usize = 64;
/// Bytes per buffer (block framing included): a full one is one `write(2)`.
pub(crate) const SLOT_BYTES: usize = 64 << 10;
/// Buffers a call tries before it gives up (and runs untraced, counted).
const TRIES: usize = 4;
/// Bytes at the start of a buffer reserved for the block framing and chunk header.
const CHUNK_HEAD: usize = BLOCK_HEAD + 8;
/// Lines probed across a block at most (per region).
const SPREAD_LINES: usize = 8;
/// Default of `BLOCKMEM_TRACE_SAMPLE`.
pub(crate) const DEFAULT_SAMPLE: u32 = 64;
/// How long the exit flush waits, in all, for buffers other threads hold.
const EXIT_WAIT_NS: u64 = 100_000_000;

/// `Control::ready` values.
const NOT_STARTED: u32 = 0;
const STARTING: u32 = 1;
const READY: u32 = 2;
const FAILED: u32 = 3;

/// One buffer's bookkeeping; touched only by the call that holds the buffer.
#[repr(C)]
struct SlotState {
    /// Bytes used in `buf` (0, or `CHUNK_HEAD` plus the records).
    len: usize,
    /// Records in the buffer.
    count: u32,
    /// Calls until the next sampled one (0: this one).
    countdown: u32,
    /// Previous record's start TSC, destination, source, call site and thread (for
    /// the deltas).
    prev_tsc: u64,
    prev_dst: u64,
    prev_src: u64,
    prev_site: u64,
    prev_tid: u64,
    /// Records appended since the process started its file.
    total: u64,
}

#[repr(C, align(64))]
struct Slot {
    busy: AtomicU32,
    state: UnsafeCell<SlotState>,
    buf: UnsafeCell<[u8; SLOT_BYTES]>,
}

/// Per-process counters and state, wiped in a forked child together with the buffers.
#[repr(C, align(64))]
struct Control {
    ready: AtomicU32,
    no_slot: AtomicU64,
    while_starting: AtomicU64,
    lost_records: AtomicU64,
}

#[repr(C)]
struct Pool {
    ctl: Control,
    slots: [Slot; SLOTS],
    /// The program's I/O calls by site (with the trace I/O library; module `watch`).
    io: [crate::watch::IoSlot; crate::watch::IO_SLOTS],
}

/// The I/O table of this process, once tracing runs.
pub(crate) fn io_table() -> Option<&'static [crate::watch::IoSlot; crate::watch::IO_SLOTS]> {
    let pool = pool()?;
    (pool.ctl.ready.load(Ordering::Acquire) == READY).then_some(&pool.io)
}

// SAFETY: a slot's `UnsafeCell`s are accessed only by the holder of its `busy` word
// (claimed with Acquire, released with Release); everything else is atomic.
unsafe impl Sync for Pool {}

/// The pool (null until the constructor mapped it).
static POOL: AtomicPtr<Pool> = AtomicPtr::new(core::ptr::null_mut());
/// The trace file's descriptor and the process it belongs to (not wiped on fork: a
/// child reads them to name its parent and to close the parent's descriptor).
static FD: AtomicI32 = AtomicI32::new(-1);
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
/// TSC read just before the last `fork` (by the `pthread_atfork` prepare handler).
static FORK_TSC: AtomicU64 = AtomicU64::new(0);
/// Settings published by the constructor.
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(0);
static HIT_MAX: AtomicU32 = AtomicU32::new(0);
/// The profile's effective LLC, for the line the policy probes (skipped here).
static LLC: AtomicUsize = AtomicUsize::new(0);
static TSC_KHZ: AtomicU64 = AtomicU64::new(0);
static OVERHEAD: AtomicU32 = AtomicU32::new(0);
/// Header flags every file of this process tree carries (the fork mechanism).
static EXTRA_FLAGS: AtomicU32 = AtomicU32::new(0);

// ---- clocks ---------------------------------------------------------------------------

/// TSC at the start of a timed region: `lfence; rdtsc` (everything before it, the
/// tracer's own work included, has completed). No fence after it: in a virtual machine
/// each fence and TSC read is dear, on every call; letting the call's first instructions
/// start a few cycles early only shortens tiny calls' times, which are dominated by
/// the timer overhead the report subtracts anyway.
#[inline(always)]
fn stamp_start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc are architectural on x86-64 and touch no memory.
    unsafe {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        _mm_lfence();
        _rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// TSC at the end of a timed region: `rdtscp` waits until every earlier instruction
/// (the call's last load) has executed; stores may still be in the store buffer, as
/// they are for the program.
#[inline(always)]
fn stamp_end() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtscp writes only `aux`.
    unsafe {
        use core::arch::x86_64::__rdtscp;
        let mut aux = 0u32;
        __rdtscp(&mut aux)
    }
    #[cfg(not(target_arch = "x86_64"))]
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Smallest of 32 empty timed regions.
fn measure_overhead() -> u32 {
    let mut best = u64::MAX;
    for _ in 0..32 {
        let t0 = stamp_start();
        let t1 = stamp_end();
        best = best.min(t1.wrapping_sub(t0));
    }
    best.min(u64::from(u32::MAX)) as u32
}

/// TSC ticks per millisecond, measured over 100 µs of `CLOCK_MONOTONIC` (1 tick per
/// nanosecond where the stamps are that clock). Each clock reading is bracketed by two
/// stamps and paired with their midpoint; the first reading only warms the vDSO.
fn measure_tsc_khz() -> u64 {
    let pair = || {
        let a = stamp_start();
        let n = clock_ns(libc::CLOCK_MONOTONIC);
        let b = stamp_start();
        (n, a / 2 + b / 2)
    };
    pair();
    let (n0, t0) = pair();
    loop {
        let (n1, t1) = pair();
        let elapsed = n1.wrapping_sub(n0);
        if elapsed >= 100_000 || n0 == 0 {
            return t1.wrapping_sub(t0).saturating_mul(1_000_000) / elapsed.max(1);
        }
    }
}

// ---- the pool -------------------------------------------------------------------------

/// A hash of the calling thread's identity: its thread pointer (the TCB address glibc
/// and musl keep at `fs:0`), else the address of a stack variable.
#[inline(always)]
fn thread_hash() -> usize {
    #[cfg(target_arch = "x86_64")]
    let key: usize = {
        let v: usize;
        // SAFETY: fs:0 holds the thread control block's self pointer on x86-64 Linux
        // for every thread once libc set it up (before any constructor or thread body
        // runs); a plain load.
        unsafe {
            core::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) v,
                options(nostack, preserves_flags, readonly)
            )
        };
        v
    };
    #[cfg(not(target_arch = "x86_64"))]
    let key: usize = {
        let local = 0u8;
        core::ptr::addr_of!(local) as usize >> 16
    };
    ((key as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

/// A buffer held by the current call; released on drop.
struct Claim<'a> {
    slot: &'a Slot,
    index: usize,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.slot.busy.store(0, Ordering::Release);
    }
}

impl Claim<'_> {
    /// The buffer's state and bytes, exclusively.
    #[allow(clippy::mut_from_ref)]
    fn parts(&self) -> (&mut SlotState, *mut u8) {
        // SAFETY: the claim holds `busy`, so no other call (thread or signal handler)
        // touches these cells until it is dropped; `parts` is called once per claim.
        unsafe {
            (
                &mut *self.slot.state.get(),
                self.slot.buf.get().cast::<u8>(),
            )
        }
    }
}

fn claim_at(pool: &Pool, index: usize) -> Option<Claim<'_>> {
    let slot = pool.slots.get(index)?;
    let free = slot.busy.load(Ordering::Relaxed) == 0
        && slot
            .busy
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
    // `then`, not `then_some`: a `Claim` built eagerly and dropped on failure would
    // release the holder's buffer.
    free.then(|| Claim { slot, index })
}

fn claim(pool: &Pool) -> Option<Claim<'_>> {
    let first = thread_hash();
    (0..TRIES).find_map(|i| claim_at(pool, (first + i) % SLOTS))
}

fn pool() -> Option<&'static Pool> {
    let p = POOL.load(Ordering::Acquire);
    // SAFETY: a non-null POOL points to the constructor's mapping, never unmapped.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Writes the buffer's records as one block and empties it. Preserves `errno`.
fn flush(claim: &Claim<'_>) {
    let (st, buf) = claim.parts();
    flush_parts(claim.index, st, buf);
}

fn flush_parts(index: usize, st: &mut SlotState, buf: *mut u8) {
    if st.count > 0 {
        // SAFETY: `buf` holds SLOT_BYTES bytes and this call holds the buffer.
        let mut w = unsafe { Writer::new(buf, 0, CHUNK_HEAD) };
        w.bytes(&file::MAGIC);
        w.u16(file::KIND_RECORDS);
        w.u16(0);
        w.u32((st.len - BLOCK_HEAD) as u32);
        w.u32(index as u32);
        w.u32(st.count);
        let saved = errno();
        // SAFETY: the first `len` bytes of `buf` are initialised (header + records).
        let bytes = unsafe { core::slice::from_raw_parts(buf, st.len) };
        if !crate::out::write_all(FD.load(Ordering::Relaxed), bytes) {
            report_write_failure(errno());
            if let Some(p) = pool() {
                p.ctl
                    .lost_records
                    .fetch_add(u64::from(st.count), Ordering::Relaxed);
            }
        }
        set_errno(saved);
    }
    st.len = 0;
    st.count = 0;
    st.prev_tsc = 0;
    st.prev_dst = 0;
    st.prev_src = 0;
    st.prev_site = 0;
    st.prev_tid = 0;
}

/// Set by the first failed write of this process's trace file.
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);

/// Says once per process that writing its trace failed (a full disk, a file size
/// limit, …): the records of that block and of later failed writes are lost, and
/// the trailer counts them. Async-signal-safe (a stack line, one `write`).
#[cold]
fn report_write_failure(e: c_int) {
    if WRITE_FAILED.swap(true, Ordering::Relaxed) {
        return;
    }
    let mut line = crate::out::Line::new();
    line.bytes(b"blockmem: BLOCKMEM_TRACE=");
    line.bytes(TRACE_PATH.get());
    line.bytes(b": writing the trace of pid ");
    line.num(getpid() as u64);
    line.bytes(b" failed (");
    line.bytes(crate::out::errno_text(e));
    line.bytes(b", errno ");
    line.num(e as u64);
    line.bytes(b"); its records are lost from here on (the trailer counts them)\n");
    line.write_to(2);
}

// ---- probing --------------------------------------------------------------------------

/// What a sampled call's probes found.
#[derive(Clone, Copy, Default)]
struct Probes {
    src_first: u64,
    src_spread: u8,
    dst_first: u64,
    dst_spread: u8,
}

/// Cycles of a timed load of `*p`.
///
/// # Safety
/// `p` valid for a one-byte read.
#[inline(always)]
unsafe fn timed_load(p: *const u8) -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded contract.
    return unsafe { blockmem::probe::load_cycles(p) };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
        0
    }
}

/// Probes up to [`SPREAD_LINES`] distinct lines across `[p, p+n)` (see the module
/// docs); returns `lines | cached << 4`.
///
/// # Safety
/// `p` valid for `n` reads, `n > 0`.
unsafe fn probe_spread(p: *const u8, n: usize, hit_max: u64) -> u8 {
    let first = p as usize >> 6;
    // The line the policy probes (see the module docs).
    let mid = if n >= blockmem::policy::PROBE_MIN_BYTES {
        let llc = LLC.load(Ordering::Relaxed);
        (p as usize).wrapping_add(blockmem::policy::probe_offset(n, llc)) >> 6
    } else {
        usize::MAX
    };
    let (mut last, mut lines, mut cached) = (first, 0u8, 0u8);
    for k in 0..SPREAD_LINES {
        let odd = 2 * k + 1;
        // (2k+1)·n/16 without overflow; always < n.
        let off = (n / 16) * odd + (n % 16) * odd / 16;
        let at = p.wrapping_add(off);
        let line = at as usize >> 6;
        if line == first || line == last || line == mid {
            continue;
        }
        last = line;
        lines += 1;
        // SAFETY: off < n, inside the region (contract).
        if unsafe { timed_load(at) } <= hit_max {
            cached += 1;
        }
    }
    lines | cached << 4
}

/// The sampled probes, first lines first (seed 003's predictor must see the state the
/// call found, not one the spread probes changed).
///
/// # Safety
/// `dst` (and `src` when `copies`) valid for `n` reads, `n > 0`.
unsafe fn probe_call(copies: bool, dst: *const u8, src: *const u8, n: usize) -> Probes {
    let hit_max = u64::from(HIT_MAX.load(Ordering::Relaxed));
    let mut p = Probes::default();
    // SAFETY: forwarded contract.
    unsafe {
        if copies {
            p.src_first = timed_load(src);
        }
        p.dst_first = timed_load(dst);
        if copies {
            p.src_spread = probe_spread(src, n, hit_max);
        }
        p.dst_spread = probe_spread(dst, n, hit_max);
    }
    p
}

// ---- the call -------------------------------------------------------------------------

/// Runs the call as the shim does with a mode set (pass-through, inline rungs, or the
/// core's decision with `c.hint`, probe included, and its kernel) and returns the
/// kernel slot that ran it: what traces record and statistics count.
///
/// # Safety
/// The op's C contract: `dst` valid for `n` writes, `src` (copy, move) for `n` reads.
#[inline(always)]
pub(crate) unsafe fn execute(c: Call, dst: *mut u8, src: *const u8, byte: u8, n: usize) -> u8 {
    let Call {
        kind, mode, hint, ..
    } = c;
    // SAFETY (whole body): forwarded contract; the pass-through pointers were resolved
    // for exactly these names; overlapping copies go to the move, as untraced.
    unsafe {
        let op = match kind {
            OpSlot::Copy | OpSlot::Move => {
                let next = if kind == OpSlot::Copy {
                    Next::Memcpy
                } else {
                    Next::Memmove
                };
                if let Some(f) = next.copy_fn(mode) {
                    f(dst.cast(), src.cast(), n);
                    return SLOT_LIBC;
                }
                if n <= INLINE_MAX {
                    copy_small(dst, src, n);
                    return SLOT_INLINE;
                }
                if kind == OpSlot::Copy && disjoint(dst, src, n) {
                    Op::Copy
                } else {
                    Op::Move
                }
            }
            OpSlot::Set | OpSlot::Zero => {
                if kind == OpSlot::Zero {
                    if let Some(z) = Next::Bzero.zero_fn(mode) {
                        z(dst.cast(), n);
                        return SLOT_LIBC;
                    }
                }
                if let Some(s) = Next::Memset.set_fn(mode) {
                    s(dst.cast(), c_int::from(byte), n);
                    return SLOT_LIBC;
                }
                if n <= INLINE_MAX {
                    set_small(dst, byte, n);
                    return SLOT_INLINE;
                }
                if byte == 0 {
                    Op::Zero
                } else {
                    Op::Set
                }
            }
        };
        let from = if matches!(op, Op::Copy | Op::Move) {
            src
        } else {
            core::ptr::null()
        };
        match blockmem::dispatch::decide_for_call(op, dst, from, n, hint) {
            Some(k) => {
                blockmem::dispatch::run_kernel(k, op, dst, src, byte, n);
                kernel_slot(k)
            }
            // The core's inline path (up to `dispatch::inline_max()`) or a move onto
            // itself (which `move_raw` skips): no kernel.
            None => {
                let _ = match op {
                    Op::Copy => blockmem::copy_raw(dst, src, n, hint),
                    Op::Move => blockmem::move_raw(dst, src, n, hint),
                    Op::Set | Op::Zero => blockmem::set_raw(dst, byte, n, hint),
                };
                SLOT_INLINE
            }
        }
    }
}

/// What a traced call is, besides its arguments.
#[derive(Clone, Copy)]
pub(crate) struct Call {
    /// The op as the caller named it.
    pub kind: OpSlot,
    /// `MODE` when the call started.
    pub mode: u8,
    /// The hint it runs with (`Auto` unless a hint map names its site).
    pub hint: Hint,
    /// The caller's return address (0: unknown).
    pub site: usize,
}

/// One intercepted call with tracing on, by thread `tid`: probe (when sampled), time,
/// run, record. Returns the kernel slot that ran it (as [`execute`]).
///
/// # Safety
/// The op's C contract: `dst` valid for `n` writes, `src` (copy, move) for `n` reads.
#[inline(never)]
pub(crate) unsafe fn call(
    c: Call,
    tid: u32,
    dst: *mut u8,
    src: *const u8,
    byte: u8,
    n: usize,
) -> u8 {
    let Some(pool) = pool() else {
        // SAFETY: forwarded contract.
        return unsafe { execute(c, dst, src, byte, n) };
    };
    if pool.ctl.ready.load(Ordering::Acquire) != READY && !start_forked(pool) {
        pool.ctl.while_starting.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        return unsafe { execute(c, dst, src, byte, n) };
    }
    let Some(claim) = claim(pool) else {
        pool.ctl.no_slot.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        return unsafe { execute(c, dst, src, byte, n) };
    };
    let kind = c.kind;
    let copies = matches!(kind, OpSlot::Copy | OpSlot::Move);
    if crate::watch::live() {
        // Watched pages this call touches: their fate is this call, and neither the
        // probes nor the kernel may fault on them.
        if copies {
            crate::watch::lift(src as usize, n, crate::watch::BLOCK_READ);
        }
        crate::watch::lift(dst as usize, n, crate::watch::BLOCK_WRITE);
        crate::watch::expire(crate::watch::Expiry::Old);
    }
    let (st, buf) = claim.parts();
    let sampled = st.countdown == 0 && n > 0 && SAMPLE_EVERY.load(Ordering::Relaxed) > 0;
    let probes = if sampled {
        st.countdown = SAMPLE_EVERY.load(Ordering::Relaxed) - 1;
        // SAFETY: both regions are readable for n > 0 bytes (the C contract: a
        // destination valid for writes is readable on every target this builds for).
        unsafe { probe_call(copies, dst, src, n) }
    } else {
        st.countdown = st.countdown.saturating_sub(1);
        Probes::default()
    };
    let t0 = stamp_start();
    // SAFETY: forwarded contract.
    let kernel = unsafe { execute(c, dst, src, byte, n) };
    let t1 = stamp_end();

    if st.len + MAX_RECORD > SLOT_BYTES {
        flush_parts(claim.index, st, buf);
    }
    if st.len == 0 {
        st.len = CHUNK_HEAD;
    }
    let flag = if copies {
        n > 0 && !disjoint(dst, src, n)
    } else {
        byte == 0
    };
    // SAFETY: `buf` holds SLOT_BYTES bytes, this call holds it, and MAX_RECORD bytes
    // are free past `len`.
    let mut w = unsafe { Writer::new(buf, st.len, SLOT_BYTES) };
    let mut tag =
        kind as u8 | if sampled { TAG_SAMPLED } else { 0 } | if flag { TAG_FLAG } else { 0 };
    if kernel < TAG_KERNEL_ESCAPE {
        tag |= kernel << 4;
        w.byte(tag);
    } else {
        w.byte(tag | TAG_KERNEL_ESCAPE << 4);
        w.byte(kernel);
    }
    w.delta(t0, st.prev_tsc);
    w.varint(t1.wrapping_sub(t0));
    w.varint(n as u64);
    w.delta(dst as u64, st.prev_dst);
    if copies {
        w.delta(src as u64, st.prev_src);
        st.prev_src = src as u64;
    }
    w.delta(c.site as u64, st.prev_site);
    st.prev_site = c.site as u64;
    w.delta(u64::from(tid), st.prev_tid);
    st.prev_tid = u64::from(tid);
    if sampled {
        if copies {
            w.varint(probes.src_first);
            w.byte(probes.src_spread);
        }
        w.varint(probes.dst_first);
        w.byte(probes.dst_spread);
    }
    st.prev_tsc = t0;
    st.prev_dst = dst as u64;
    st.len = w.len();
    st.count += 1;
    st.total += 1;
    drop(claim);
    crate::watch::after_call(kind as u8, t0, tid, c.site, dst, n);
    kernel
}

// ---- files ----------------------------------------------------------------------------

fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

fn source_code(s: blockmem::autoload::Source) -> u8 {
    use blockmem::autoload::Source;
    match s {
        Source::NotLoaded => 0,
        Source::Defaults => 1,
        Source::Env => 2,
        Source::DefaultPath => 3,
        Source::Installed => 4,
        Source::Secure => 5,
    }
}

/// Writes the header block (see `trace_file`).
fn write_header(fd: c_int, flags: u32, parent: i32, start_tsc: u64) -> bool {
    let mut local = Local::new();
    let mut w = local.writer();
    for _ in 0..BLOCK_HEAD {
        w.byte(0);
    }
    w.u32(file::VERSION);
    w.u32(flags | EXTRA_FLAGS.load(Ordering::Relaxed));
    w.u32(getpid() as u32);
    // SAFETY: getppid has no preconditions.
    w.u32(unsafe { libc::getppid() } as u32);
    w.u32(parent as u32);
    w.u32(SAMPLE_EVERY.load(Ordering::Relaxed));
    w.u64(TSC_KHZ.load(Ordering::Relaxed));
    w.u64(start_tsc);
    w.u64(clock_ns(libc::CLOCK_MONOTONIC));
    w.u64(clock_ns(libc::CLOCK_REALTIME));
    w.u32(OVERHEAD.load(Ordering::Relaxed));
    w.u32(HIT_MAX.load(Ordering::Relaxed));
    w.u32(INLINE_MAX as u32);
    w.u32(SPREAD_LINES as u32);
    w.u32(SLOTS as u32);
    w.u32(SLOT_BYTES as u32);
    let plan = blockmem::dispatch::plan();
    w.byte(source_code(blockmem::dispatch::status().0));
    w.byte(blockmem::dispatch::forced().map_or(0, kernel_slot));
    for k in summary_kernels(plan) {
        w.byte(kernel_slot(k));
    }
    for v in summary_sizes(plan) {
        w.u64(v as u64);
    }
    file::kernel_names(&mut w);
    let argv0 = ARGV0.get();
    w.u16(argv0.len() as u16);
    w.bytes(argv0);
    // The framing, now that the length is known.
    let len = w.len();
    w.put_at(0, &file::MAGIC);
    w.put_at(4, &file::KIND_HEADER.to_le_bytes());
    w.put_at(6, &0u16.to_le_bytes());
    w.put_at(8, &((len - BLOCK_HEAD) as u32).to_le_bytes());
    crate::out::write_all(fd, w.as_slice())
}

/// The kernels the trace header records as a summary of the decision table (the lab's
/// `PROFILE_KERNELS`): 1 MiB copies to a cached and a cold destination, the copy,
/// set and zero kernels of the `NoReuse` cold rows past any size, and 1 MiB sets to a
/// cached destination.
fn summary_kernels(plan: &Plan) -> [KernelId; 6] {
    let k = |op, n, hint, st| {
        plan.decide(op, n, hint, false, st)
            .unwrap_or(KernelId::Portable)
    };
    [
        k(Op::Copy, 1 << 20, Hint::Auto, State::Cached),
        k(Op::Copy, 1 << 20, Hint::Auto, State::Cold),
        k(Op::Copy, 1 << 40, Hint::NoReuse, State::Cold),
        k(Op::Set, 1 << 20, Hint::Auto, State::Cached),
        k(Op::Set, 1 << 40, Hint::NoReuse, State::Cold),
        k(Op::Zero, 1 << 40, Hint::NoReuse, State::Cold),
    ]
}

/// The sizes the trace header records as a summary of the decision table (the lab's
/// `PROFILE_SIZES`).
fn summary_sizes(plan: &Plan) -> [usize; 10] {
    // The first size from which a row's kernel streams.
    let streams_from = |fam, hint, st| {
        plan.row(fam, hint, st)
            .bands()
            .find(|(_, ks)| ks.is_some_and(|(a, _)| a.streams()))
            .map_or(usize::MAX, |(from, _)| from)
    };
    let first_below = |fam| {
        plan.row(fam, Hint::Auto, State::Unknown)
            .bands()
            .nth(1)
            .map_or(usize::MAX, |(from, _)| from)
    };
    [
        streams_from(Family::Copy, Hint::Auto, State::Unknown),
        streams_from(Family::Copy, Hint::Auto, State::Cold),
        streams_from(Family::Copy, Hint::NoReuse, State::Cold),
        streams_from(Family::Copy, Hint::Reuse, State::Cold),
        plan.probe_from(Family::Copy, Hint::Auto),
        plan.probe_from(Family::Set, Hint::Auto),
        streams_from(Family::Set, Hint::Auto, State::Cold),
        plan.llc_effective(),
        first_below(Family::Copy),
        first_below(Family::Set),
    ]
}

/// Bytes of the scratch mapping a maps block is built in; executable mappings past it
/// are left out (a process with thousands of shared objects).
const MAPS_BYTES: usize = 1 << 20;

/// Writes a maps block (see `trace_file`): the process's executable file mappings now,
/// as `/proc/self/maps` lines. Built in a scratch mapping (not on the copy path: the
/// constructor, a forked child's start, the exit function).
fn write_maps(fd: c_int, when: u8) {
    // SAFETY: an anonymous private mapping; no existing memory is affected.
    let mem = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            MAPS_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return;
    }
    // SAFETY: `mem` is our mapping of MAPS_BYTES bytes.
    let mut w = unsafe { Writer::new(mem.cast(), 0, MAPS_BYTES) };
    for _ in 0..BLOCK_HEAD {
        w.byte(0);
    }
    w.byte(when);
    let read = crate::maps::for_each(|m| {
        if m.exec && m.path.first() == Some(&b'/') && w.len() + m.line.len() < MAPS_BYTES {
            w.bytes(m.line);
            w.byte(b'\n');
        }
    });
    if read {
        let len = w.len();
        w.put_at(0, &file::MAGIC);
        w.put_at(4, &file::KIND_MAPS.to_le_bytes());
        w.put_at(6, &0u16.to_le_bytes());
        w.put_at(8, &((len - BLOCK_HEAD) as u32).to_le_bytes());
        crate::out::write_all(fd, w.as_slice());
    }
    // SAFETY: our mapping, no longer used.
    unsafe { libc::munmap(mem, MAPS_BYTES) };
}

fn write_trailer(fd: c_int, ctl: &Control, records: u64, busy_at_exit: u64) {
    let mut local = Local::new();
    let mut w = local.writer();
    w.bytes(&file::MAGIC);
    w.u16(file::KIND_TRAILER);
    w.u16(0);
    w.u32(7 * 8);
    w.u64(stamp_start());
    w.u64(clock_ns(libc::CLOCK_MONOTONIC));
    w.u64(records);
    w.u64(ctl.no_slot.load(Ordering::Relaxed));
    w.u64(ctl.while_starting.load(Ordering::Relaxed));
    w.u64(ctl.lost_records.load(Ordering::Relaxed));
    w.u64(busy_at_exit);
    crate::out::write_all(fd, w.as_slice());
}

/// A forked child's first traced call (or exit): creates its own file. False if it
/// cannot (tracing stays off in this process) or another call is doing it right now.
#[cold]
fn start_forked(pool: &Pool) -> bool {
    if let Err(state) =
        pool.ctl
            .ready
            .compare_exchange(NOT_STARTED, STARTING, Ordering::Acquire, Ordering::Acquire)
    {
        return state == READY;
    }
    let saved = errno();
    let parent = OWNER_PID.load(Ordering::Relaxed);
    let pid = getpid();
    let ok = match file::create(pid as u32, false) {
        Ok(fd) => {
            let old = FD.swap(fd, Ordering::Relaxed);
            crate::watch::set_fd(fd);
            OWNER_PID.store(pid, Ordering::Relaxed);
            if old >= 0 {
                // SAFETY: the parent's descriptor, inherited; this process's copy is
                // no longer used (the parent's stays open in the parent).
                unsafe { libc::close(old) };
            }
            let ok = write_header(
                fd,
                file::FLAG_FORKED,
                parent,
                FORK_TSC.load(Ordering::Relaxed),
            );
            write_maps(fd, file::MAPS_START);
            ok
        }
        Err(_) => false,
    };
    pool.ctl
        .ready
        .store(if ok { READY } else { FAILED }, Ordering::Release);
    set_errno(saved);
    ok
}

/// `pthread_atfork` prepare handler: writes every buffer no call holds (so that the
/// parent's file has all the calls a child's statistics inherit, even if the parent
/// later replaces itself with `exec`, which loses unwritten buffers), then reads the
/// TSC just before `fork`. A buffer another call holds (another thread's, or this
/// thread's if `fork` was called from a signal handler) is skipped, never waited for.
extern "C" fn before_fork() {
    // The child must not inherit protected pages (its copy of the watch table would
    // close them without the parent's knowledge).
    crate::watch::expire(crate::watch::Expiry::Fork);
    if let Some(pool) = pool() {
        if pool.ctl.ready.load(Ordering::Acquire) == READY {
            for index in 0..SLOTS {
                if let Some(c) = claim_at(pool, index) {
                    flush(&c);
                }
            }
        }
    }
    FORK_TSC.store(stamp_start(), Ordering::Relaxed);
}

/// `pthread_atfork` child handler, only where `MADV_WIPEONFORK` failed: empties the
/// buffers (the child's only thread holds none) and marks the pool not started.
extern "C" fn after_fork_in_child() {
    let Some(pool) = pool() else { return };
    for slot in &pool.slots {
        // SAFETY: the child has one thread, running this handler; no call holds a
        // buffer (a holder in the parent does not exist here), so resetting is
        // exclusive.
        let st = unsafe { &mut *slot.state.get() };
        st.len = 0;
        st.count = 0;
        st.countdown = 0;
        st.total = 0;
        slot.busy.store(0, Ordering::Relaxed);
    }
    pool.ctl.no_slot.store(0, Ordering::Relaxed);
    pool.ctl.while_starting.store(0, Ordering::Relaxed);
    pool.ctl.lost_records.store(0, Ordering::Relaxed);
    crate::watch::clear_io(&pool.io);
    pool.ctl.ready.store(NOT_STARTED, Ordering::Release);
}

/// Why tracing could not start (for the constructor's warning).
pub(crate) enum StartError {
    /// The path is empty or longer than `trace_file::PATH_MAX`.
    BadPath,
    /// The path exists and is not a regular file (what it is, in words).
    NotRegular(&'static [u8]),
    /// A system call failed with this errno (`mmap` or `open`).
    Os(&'static [u8], c_int),
}

/// Starts tracing in the constructor: maps the pool, creates `<path>`, writes the
/// header. The caller then sets the `MODE_TRACE` bit.
///
/// # Safety
/// Only from the constructor (single-threaded, before `MODE` is published).
pub(crate) unsafe fn start(
    path: &[u8],
    sample: u32,
    watch: u32,
    argv0: &[u8],
) -> Result<(), StartError> {
    if path.is_empty() || path.len() > file::PATH_MAX {
        return Err(StartError::BadPath);
    }
    // SAFETY: constructor, before publication (contract).
    unsafe {
        TRACE_PATH.set(path, file::PATH_MAX);
        ARGV0.set(argv0, 255);
    }
    let sample = if cfg!(target_arch = "x86_64") {
        sample
    } else {
        0
    };
    SAMPLE_EVERY.store(sample, Ordering::Relaxed);
    let plan = blockmem::dispatch::plan();
    HIT_MAX.store(plan.probe_hit_max(), Ordering::Relaxed);
    LLC.store(plan.llc_effective(), Ordering::Relaxed);
    OVERHEAD.store(measure_overhead(), Ordering::Relaxed);
    TSC_KHZ.store(measure_tsc_khz(), Ordering::Relaxed);
    let bytes = core::mem::size_of::<Pool>().next_multiple_of(4096);
    // SAFETY: an anonymous private mapping; no existing memory is affected.
    let mem = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return Err(StartError::Os(b"mmap", errno()));
    }
    // SAFETY: `mem` is our mapping of `bytes` bytes.
    let wiped = unsafe { libc::madvise(mem, bytes, libc::MADV_WIPEONFORK) } == 0;
    if !wiped {
        EXTRA_FLAGS.store(file::FLAG_ATFORK, Ordering::Relaxed);
    }
    // SAFETY: registering handlers with static lifetime; glibc may allocate here,
    // which is fine in a constructor (those calls run untraced: MODE is not set yet).
    unsafe {
        libc::pthread_atfork(
            Some(before_fork),
            None,
            if wiped {
                None
            } else {
                Some(after_fork_in_child)
            },
        );
    }
    let pid = getpid();
    let fd = match file::create(pid as u32, true) {
        Ok(fd) => fd,
        Err(e) => {
            // SAFETY: our mapping, unused.
            unsafe { libc::munmap(mem, bytes) };
            return Err(match e {
                file::CreateError::NotRegular(what) => StartError::NotRegular(what),
                file::CreateError::Os(errno) => StartError::Os(b"open", errno),
            });
        }
    };
    FD.store(fd, Ordering::Relaxed);
    crate::watch::configure(watch, fd);
    OWNER_PID.store(pid, Ordering::Relaxed);
    let pool = mem.cast::<Pool>();
    write_header(fd, 0, 0, stamp_start());
    write_maps(fd, file::MAPS_START);
    // SAFETY: the mapping is zeroed, a valid `Pool` (atomics and plain integers); no
    // other reference exists yet.
    unsafe { (*pool).ctl.ready.store(READY, Ordering::Release) };
    POOL.store(pool, Ordering::Release);
    Ok(())
}

/// At exit (from the shim's `.fini_array` function, before the statistics line):
/// writes every buffer and the trailer. Buffers held by other threads are waited for
/// up to 100 ms in all, then left out and counted.
pub(crate) fn finish() {
    let Some(pool) = pool() else { return };
    if pool.ctl.ready.load(Ordering::Acquire) != READY && !start_forked(pool) {
        return;
    }
    let saved = errno();
    crate::watch::expire(crate::watch::Expiry::Exit);
    let (mut records, mut busy) = (0u64, 0u64);
    let t0 = clock_ns(libc::CLOCK_MONOTONIC);
    for index in 0..SLOTS {
        let mut claimed = claim_at(pool, index);
        if claimed.is_none() {
            while claimed.is_none()
                && clock_ns(libc::CLOCK_MONOTONIC).wrapping_sub(t0) < EXIT_WAIT_NS
            {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
                claimed = claim_at(pool, index);
            }
        }
        match claimed {
            Some(c) => {
                flush(&c);
                records += c.parts().0.total;
            }
            None => busy += 1,
        }
    }
    write_maps(FD.load(Ordering::Relaxed), file::MAPS_EXIT);
    crate::watch::write_io(FD.load(Ordering::Relaxed), &pool.io);
    write_trailer(FD.load(Ordering::Relaxed), &pool.ctl, records, busy);
    set_errno(saved);
}
