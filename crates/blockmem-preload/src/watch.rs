//! What becomes of a traced call's destination after the call: page traps on a sample
//! of destinations, and the program's I/O by call site. Only while tracing, and only
//! with the trace I/O library preloaded beside the shim (`libblockmem_traceio.so`,
//! which `blockmem trace` loads): it interposes the C library calls that must see
//! protected pages first (`read`/`write` and the other I/O calls, `free`, `munmap`,
//! `mprotect`, …), owns the `SIGSEGV` handler (chaining to the program's), and calls
//! back here through the [`Hooks`] the constructor hands it.
//!
//! # Traps
//!
//! Traps rather than the MMU's accessed and dirty bits: idle-page tracking needs root,
//! soft-dirty bits see only writes, and neither tells a load from the kernel's copy.
//!
//! After a sampled call (one eligible call in `BLOCKMEM_TRACE_WATCH`, at most one per
//! [`ARM_GAP_NS`], while a watch slot is free) whose destination covers whole pages, up
//! to [`WATCH_PAGES`] of those pages, spread across it, are made `PROT_NONE`. The first
//! later access to each page faults; the handler tells a read from a write by the
//! fault's error code (bit 1 of `REG_ERR`), lifts the protection of that page only
//! (`PROT_READ | PROT_WRITE`: the destination was just written, so it was writable)
//! and counts the page's fate. A page handed to a wrapped system call first is lifted
//! by the wrapper and counted as read (or written) by the kernel; a page a later block
//! operation reads or writes is lifted by the tracer before the operation runs. A page
//! still protected [`WATCH_NS`] after the call, or when the process exits, is lifted and
//! counted untouched; one the program frees, unmaps or re-protects first, released.
//! Before `fork` every page is lifted (a child must not inherit our protection) and
//! those untouched so far are left out: their fate is not known. When every page of a
//! watch has its fate, one fate block goes to the trace file.
//!
//! What a page's first access says about the rest of it is a sample; a system call
//! counts every watched page of its whole buffer (lifted before the call), even when
//! it transfers less. Stdio's own system calls happen inside the C library and are
//! not wrapped: `fwrite`/`fread` lift their buffers, but a page first reached by
//! another libc-internal system call would fail it with `EFAULT`; the sampling, the
//! window and the few pages per call keep that exposure small.
//!
//! Everything here is async-signal-safe: atomics, `mprotect`, `write`; no allocation,
//! no lock, and no `memcpy` on a protected page. Threads may fault on the same page at
//! once, and a signal handler may interrupt a lift and fault on its page: a watch's
//! bits carry the generation of its arming, so a lift wins a bit and its page
//! together; a lift is announced before its bit clears, and a fault on an announced
//! page finishes the lift itself; a fault whose handler runs after the page was given
//! back (another thread lifted it) is re-run, the mapping allowing the access now.
//! Any other fault is the program's: the library calls the program's handler.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::trace_file::{self as file, clock_ns, errno, set_errno, Local, BLOCK_HEAD};

/// Watch slots (destinations watched at once).
const WATCHES: usize = 8;
/// Pages watched per destination at most.
const WATCH_PAGES: usize = 16;
/// Page size the traps work in.
const PAGE: usize = 4096;
/// A page not touched within this long after its call counts as untouched: by then
/// the copy's lines have no reason to be in cache any more.
pub(crate) const WATCH_NS: u64 = 20_000_000;
/// Least time between two armed watches: bounds the traps' cost (a watch costs a few
/// dozen system calls and faults).
const ARM_GAP_NS: u64 = 1_000_000;
/// Lifts announced at once at most (threads and nested handlers lifting together).
const LIFTS: usize = 64;
/// Slots of the I/O table (call site and op), and probes per lookup.
pub(crate) const IO_SLOTS: usize = 256;
const IO_PROBES: usize = 16;

/// Fates of a watched page, in the fate block's order.
pub(crate) const LOAD_READ: usize = 0;
pub(crate) const LOAD_WRITE: usize = 1;
pub(crate) const KERNEL_READ: usize = 2;
pub(crate) const KERNEL_WRITE: usize = 3;
pub(crate) const BLOCK_READ: usize = 4;
pub(crate) const BLOCK_WRITE: usize = 5;
pub(crate) const RELEASED: usize = 6;
pub(crate) const UNTOUCHED: usize = 7;
const FATES: usize = 8;
/// `si_code` of a fault on a mapped page the access is not allowed to (Linux).
const SEGV_ACCERR: c_int = 2;

/// The page bits of `Watch::left`.
const PAGE_BITS: u64 = (1 << WATCH_PAGES) - 1;

/// `Watch::state` values.
const FREE: u32 = 0;
const ARMING: u32 = 1;
const ACTIVE: u32 = 2;
const CLOSING: u32 = 3;

#[repr(C, align(64))]
struct Watch {
    state: AtomicU32,
    /// Pages armed (the first `count` of `pages`).
    count: AtomicU32,
    pages: [AtomicUsize; WATCH_PAGES],
    /// Bit i (i < 16): page i is still protected by us; bits 16 and up: the arming's
    /// generation.
    left: AtomicU64,
    /// Lifts of this watch's pages in progress (the closer waits for them).
    busy: AtomicU32,
    fates: [AtomicU32; FATES],
    /// Nanoseconds from the call's end to the first access (0: none yet).
    first_ns: AtomicU64,
    armed_ns: AtomicU64,
    call_tsc: AtomicU64,
    dst: AtomicU64,
    n: AtomicU64,
    site: AtomicU64,
    /// `tid | op << 32`.
    who: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const NEW_WATCH: Watch = Watch {
    state: AtomicU32::new(FREE),
    count: AtomicU32::new(0),
    pages: [const { AtomicUsize::new(0) }; WATCH_PAGES],
    left: AtomicU64::new(0),
    busy: AtomicU32::new(0),
    fates: [const { AtomicU32::new(0) }; FATES],
    first_ns: AtomicU64::new(0),
    armed_ns: AtomicU64::new(0),
    call_tsc: AtomicU64::new(0),
    dst: AtomicU64::new(0),
    n: AtomicU64::new(0),
    site: AtomicU64::new(0),
    who: AtomicU64::new(0),
};

static TABLE: [Watch; WATCHES] = [NEW_WATCH; WATCHES];
/// Watches not FREE (the fast test of every hook).
static LIVE: AtomicU32 = AtomicU32::new(0);
/// Arm one eligible call in this many (0: traps off); set by the constructor.
static EVERY: AtomicU32 = AtomicU32::new(0);
static ELIGIBLE: AtomicU64 = AtomicU64::new(0);
static LAST_ARM_NS: AtomicU64 = AtomicU64::new(0);
/// True once the I/O library took the hooks (traps need its handler).
static ATTACHED: AtomicU32 = AtomicU32::new(0);
/// The trace file (set by the tracer).
static FD: AtomicU32 = AtomicU32::new(u32::MAX);

/// Pages being lifted right now (0: a free entry).
static LIFTING: [AtomicUsize; LIFTS] = [const { AtomicUsize::new(0) }; LIFTS];

fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Sets the sampling rate (the constructor, before tracing is published).
pub(crate) fn configure(every: u32, fd: c_int) {
    EVERY.store(every, Ordering::Relaxed);
    FD.store(fd as u32, Ordering::Relaxed);
}

/// The trace file moved (a forked child's own file).
pub(crate) fn set_fd(fd: c_int) {
    FD.store(fd as u32, Ordering::Relaxed);
}

/// True if some watch may hold protected pages (the tracer then lifts a call's ranges
/// before running it).
#[inline(always)]
pub(crate) fn live() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
}

/// Gives one page back to the program, `PROT_READ | PROT_WRITE`.
fn unprotect(page: usize) {
    protect(page, libc::PROT_READ | libc::PROT_WRITE);
}

/// `mprotect` of one page, by system call: the trace I/O library interposes libc's
/// `mprotect` (to see the program's) and would come back here.
fn protect(page: usize, prot: c_int) -> bool {
    // SAFETY: a whole page inside a traced call's destination (the caller's choice).
    unsafe { libc::syscall(libc::SYS_mprotect, page, PAGE, prot) == 0 }
}

/// True if the mapping holding `page` allows the access now (`/proc/self/maps`, read
/// with system calls into stack buffers: only on faults that are not plainly ours).
fn allowed_now(page: usize, write: bool) -> bool {
    let mut allowed = false;
    crate::maps::for_each(|m| {
        if m.start <= page && page < m.end {
            // "start-end rwxp ...": the permissions follow the first space.
            let perms = m
                .line
                .iter()
                .position(|&b| b == b' ')
                .and_then(|at| m.line.get(at + 1..));
            if let Some(p) = perms {
                allowed = if write {
                    p.get(1) == Some(&b'w')
                } else {
                    p.first() == Some(&b'r')
                };
            }
        }
    });
    allowed
}

/// True if some lift of `page` is under way (its bit cleared, its `mprotect` not yet
/// done).
fn being_lifted(page: usize) -> bool {
    LIFTING.iter().any(|e| e.load(Ordering::Acquire) == page)
}

/// Takes page `i` of `w` back from protection with fate `fate` (the lifter that
/// clears its bit counts it); closes the watch when it was the last one. True if this
/// call cleared the bit.
fn take_page(w: &Watch, i: usize, fate: usize) -> bool {
    let bit = 1u64 << i;
    w.busy.fetch_add(1, Ordering::Acquire);
    // The bit is won together with the generation it belongs to, and the page read
    // in between is that generation's (its pages are stored before its bits are set):
    // a slot re-armed meanwhile makes the exchange fail.
    let mut won = None;
    loop {
        let cur = w.left.load(Ordering::Acquire);
        if cur & bit == 0 {
            break;
        }
        let page = w.pages[i].load(Ordering::Relaxed);
        // Announced before the bit clears: a fault that finds the bit clear finds the
        // lift, and may finish it itself (it may have interrupted this very lifter).
        let entry = lifting(page);
        if w.left
            .compare_exchange(cur, cur & !bit, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            won = Some((page, cur & PAGE_BITS & !bit == 0, entry));
            break;
        }
        lifted(entry);
    }
    if let Some((page, _, entry)) = won {
        let since = now_ns().wrapping_sub(w.armed_ns.load(Ordering::Relaxed));
        let fate = if since > WATCH_NS && fate < RELEASED {
            UNTOUCHED
        } else {
            fate
        };
        if fate < RELEASED {
            let _ =
                w.first_ns
                    .compare_exchange(0, since.max(1), Ordering::Relaxed, Ordering::Relaxed);
        }
        w.fates[fate].fetch_add(1, Ordering::Relaxed);
        unprotect(page);
        lifted(entry);
    }
    w.busy.fetch_sub(1, Ordering::Release);
    if let Some((_, true, _)) = won {
        close(w, Some(UNTOUCHED));
    }
    won.is_some()
}

/// Announces a lift of `page` (before its bit is cleared); returns the entry to end
/// it with (None: every entry busy, the lift goes unannounced).
fn lifting(page: usize) -> Option<&'static AtomicUsize> {
    LIFTING.iter().find(|e| {
        e.load(Ordering::Relaxed) == 0
            && e.compare_exchange(0, page, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    })
}

fn lifted(entry: Option<&AtomicUsize>) {
    if let Some(e) = entry {
        e.store(0, Ordering::Release);
    }
}

/// Emits the watch's fate block and frees its slot, once (whoever moves it from
/// ACTIVE to CLOSING). Pages still protected are lifted with fate `rest` (None: no
/// fate, they are left out of the block).
fn close(w: &Watch, rest: Option<usize>) {
    if w.state
        .compare_exchange(ACTIVE, CLOSING, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    let count = w.count.load(Ordering::Relaxed) as usize;
    for i in 0..count {
        if w.left.load(Ordering::Acquire) & 1 << i != 0 {
            take_page_closing(w, i, rest);
        }
    }
    // Lifts racing with the close finish in a few instructions; a lift interrupted by
    // a signal whose handler closes the watch never finishes first, hence the bound.
    for _ in 0..10_000 {
        if w.busy.load(Ordering::Acquire) == 0 {
            break;
        }
        core::hint::spin_loop();
    }
    emit(w);
    LIVE.fetch_sub(1, Ordering::Relaxed);
    w.state.store(FREE, Ordering::Release);
}

/// `take_page` without the close (the closer's own lifts).
fn take_page_closing(w: &Watch, i: usize, fate: Option<usize>) {
    let bit = 1u64 << i;
    let page = w.pages[i].load(Ordering::Relaxed);
    let entry = lifting(page);
    if w.left.fetch_and(!bit, Ordering::AcqRel) & bit != 0 {
        if let Some(f) = fate {
            w.fates[f].fetch_add(1, Ordering::Relaxed);
        }
        unprotect(page);
    }
    lifted(entry);
}

/// Writes one fate block (see `trace_file`).
fn emit(w: &Watch) {
    let fd = FD.load(Ordering::Relaxed) as c_int;
    let pages: u32 = w.fates.iter().map(|f| f.load(Ordering::Relaxed)).sum();
    if fd < 0 || pages == 0 {
        return;
    }
    let saved = errno();
    let mut local = Local::new();
    let mut out = local.writer();
    out.bytes(&file::MAGIC);
    out.u16(file::KIND_FATE);
    out.u16(0);
    out.u32(FATE_PAYLOAD as u32);
    out.u64(w.call_tsc.load(Ordering::Relaxed));
    out.u64(w.dst.load(Ordering::Relaxed));
    out.u64(w.n.load(Ordering::Relaxed));
    out.u64(w.site.load(Ordering::Relaxed));
    out.u64(w.who.load(Ordering::Relaxed));
    out.u32(pages);
    for f in &w.fates {
        out.u32(f.load(Ordering::Relaxed));
    }
    out.u64(w.first_ns.load(Ordering::Relaxed));
    crate::out::write_all(fd, out.as_slice());
    set_errno(saved);
}

/// Bytes of a fate block's payload.
const FATE_PAYLOAD: usize = 5 * 8 + 4 + FATES * 4 + 8;

/// After a traced call: watches its destination if it is sampled. `op` is the call's
/// op slot, `tsc` its start.
pub(crate) fn after_call(op: u8, tsc: u64, tid: u32, site: usize, dst: *mut u8, n: usize) {
    let every = EVERY.load(Ordering::Relaxed);
    if every == 0 || ATTACHED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let first = (dst as usize).wrapping_add(PAGE - 1) & !(PAGE - 1);
    let end = (dst as usize).wrapping_add(n) & !(PAGE - 1);
    if end <= first || (dst as usize).checked_add(n).is_none() {
        return;
    }
    if !ELIGIBLE
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(u64::from(every))
    {
        return;
    }
    let now = now_ns();
    let last = LAST_ARM_NS.load(Ordering::Relaxed);
    if last != 0 && now.wrapping_sub(last) < ARM_GAP_NS {
        return;
    }
    let Some(w) = TABLE.iter().find(|w| {
        w.state.load(Ordering::Relaxed) == FREE
            && w.state
                .compare_exchange(FREE, ARMING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }) else {
        return;
    };
    LIVE.fetch_add(1, Ordering::Relaxed);
    LAST_ARM_NS.store(now, Ordering::Relaxed);
    // A new generation with no page yet, before any page is stored (see `take_page`).
    let generation = (w.left.load(Ordering::Relaxed) >> WATCH_PAGES) + 1;
    w.left.store(generation << WATCH_PAGES, Ordering::Release);
    let pages = (end - first) / PAGE;
    let k = pages.min(WATCH_PAGES);
    for (i, slot) in w.pages.iter().enumerate().take(k) {
        slot.store(first + i * pages / k * PAGE, Ordering::Relaxed);
    }
    for f in &w.fates {
        f.store(0, Ordering::Relaxed);
    }
    w.count.store(k as u32, Ordering::Relaxed);
    w.first_ns.store(0, Ordering::Relaxed);
    w.armed_ns.store(now, Ordering::Relaxed);
    w.call_tsc.store(tsc, Ordering::Relaxed);
    w.dst.store(dst as u64, Ordering::Relaxed);
    w.n.store(n as u64, Ordering::Relaxed);
    w.site.store(site as u64, Ordering::Relaxed);
    w.who
        .store(u64::from(tid) | u64::from(op) << 32, Ordering::Relaxed);
    // Pages are protected before their bits are set, all while the watch is ARMING
    // (a fault on one then re-runs until it is ACTIVE): a lift cannot come between
    // the protection and the bit. Signals are blocked meanwhile, so that no handler
    // on this thread waits on an ARMING watch.
    let saved = errno();
    let mut all = core::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = core::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset fills `all`; pthread_sigmask fills `old` and restores it below.
    let blocked = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, all.as_ptr(), old.as_mut_ptr()) == 0
    };
    for i in 0..k {
        // A whole page inside the destination the program just had written.
        if protect(w.pages[i].load(Ordering::Relaxed), libc::PROT_NONE) {
            w.left.fetch_or(1u64 << i, Ordering::AcqRel);
        }
    }
    w.state.store(ACTIVE, Ordering::Release);
    if blocked {
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), core::ptr::null_mut()) };
    }
    set_errno(saved);
    if w.left.load(Ordering::Acquire) & PAGE_BITS == 0 {
        close(w, None);
    }
}

/// Lifts every watched page in `[a, a+len)` with fate `fate`.
pub(crate) fn lift(a: usize, len: usize, fate: usize) {
    if !live() || len == 0 {
        return;
    }
    let lo = a & !(PAGE - 1);
    let hi = a.saturating_add(len);
    let saved = errno();
    for w in &TABLE {
        if w.state.load(Ordering::Acquire) != ACTIVE {
            continue;
        }
        let left = w.left.load(Ordering::Acquire);
        for i in 0..w.count.load(Ordering::Relaxed) as usize {
            let p = w.pages[i].load(Ordering::Relaxed);
            if left & 1 << i != 0 && p >= lo && p < hi {
                take_page(w, i, fate);
            }
        }
    }
    set_errno(saved);
}

/// Why watches are closed before their pages were touched.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Those older than [`WATCH_NS`]: the rest is untouched.
    Old,
    /// All: the process ends, the rest is untouched.
    Exit,
    /// All: the process forks (the child must not inherit protected pages); the rest
    /// has no known fate and is left out.
    Fork,
}

/// Closes watches (see [`Expiry`]).
pub(crate) fn expire(why: Expiry) {
    if !live() {
        return;
    }
    let now = now_ns();
    let saved = errno();
    for w in &TABLE {
        if w.state.load(Ordering::Acquire) == ACTIVE
            && (why != Expiry::Old
                || now.wrapping_sub(w.armed_ns.load(Ordering::Relaxed)) > WATCH_NS)
        {
            close(w, (why != Expiry::Fork).then_some(UNTOUCHED));
        }
    }
    set_errno(saved);
}

/// The `SIGSEGV` handler's question: was this fault one of our traps? If so the page
/// is lifted (or being lifted) and the access can simply run again.
///
/// # Safety
/// `info` and `ctx` as the kernel passed them to an `SA_SIGINFO` handler.
unsafe extern "C" fn fault(info: *mut libc::siginfo_t, ctx: *mut c_void) -> c_int {
    if info.is_null() {
        return 0;
    }
    // SAFETY: a siginfo the kernel filled for SIGSEGV.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code != SEGV_ACCERR {
        return 0;
    }
    let page = addr & !(PAGE - 1);
    let write = !ctx.is_null() && {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the ucontext of the signal frame; REG_ERR holds the page-fault error
        // code on x86-64 (bit 1: the access was a write).
        unsafe {
            let uc = ctx.cast::<libc::ucontext_t>();
            (*uc).uc_mcontext.gregs[libc::REG_ERR as usize] & 2 != 0
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    };
    let saved = errno();
    let mut ours = false;
    if live() {
        for w in &TABLE {
            let state = w.state.load(Ordering::Acquire);
            if state == FREE {
                continue;
            }
            if state == ARMING {
                let count = w.count.load(Ordering::Relaxed) as usize;
                ours |= (0..count).any(|i| w.pages[i].load(Ordering::Relaxed) == page);
                continue;
            }
            let left = w.left.load(Ordering::Acquire);
            for i in 0..w.count.load(Ordering::Relaxed) as usize {
                if left & 1 << i != 0
                    && w.pages[i].load(Ordering::Relaxed) == page
                    && take_page(w, i, if write { LOAD_WRITE } else { LOAD_READ })
                {
                    ours = true;
                }
            }
        }
    }
    // Lost a race with another lifter (or the bit was cleared just before): the page
    // is, or is about to be, accessible; re-run the access.
    // Not a page we hold now. A lift under way (its bit cleared, its mprotect not yet
    // done) is finished here: the lifter may be the code this handler interrupted.
    // A fault taken while the page was ours, whose handler runs only after another
    // thread lifted it (a loaded machine can delay it for long), is re-run: the
    // mapping allows the access now. Anything else is the program's.
    let ours =
        ours || (being_lifted(page) && {
            unprotect(page);
            true
        }) || allowed_now(page, write);
    set_errno(saved);
    c_int::from(ours)
}

/// One I/O call as the library saw it: op (the library's numbering), call site,
/// bytes asked for, result (bytes or -1) and TSC cycles spent in the call.
#[repr(C)]
pub(crate) struct IoSlot {
    key: AtomicU64,
    calls: AtomicU64,
    bytes: AtomicU64,
    asked: AtomicU64,
    errors: AtomicU64,
    cycles: AtomicU64,
}

extern "C" fn io(op: u32, site: usize, asked: usize, result: isize, cycles: u64) {
    let Some(table) = crate::trace::io_table() else {
        return;
    };
    let key = (site as u64 & ((1 << 56) - 1)) | (u64::from(op) + 1) << 56;
    let start = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 56) as usize;
    let slot = (0..IO_PROBES)
        .map(|k| &table[(start + k) % IO_SLOTS])
        .find(|s| {
            let k = s.key.load(Ordering::Relaxed);
            k == key
                || (k == 0
                    && match s
                        .key
                        .compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed)
                    {
                        Ok(_) => true,
                        Err(now) => now == key,
                    })
        });
    // A full neighbourhood: counted in the last slot under its own key (site unknown).
    let slot = slot.unwrap_or(&table[IO_SLOTS - 1]);
    slot.calls.fetch_add(1, Ordering::Relaxed);
    slot.asked.fetch_add(asked as u64, Ordering::Relaxed);
    if result < 0 {
        slot.errors.fetch_add(1, Ordering::Relaxed);
    } else {
        slot.bytes.fetch_add(result as u64, Ordering::Relaxed);
    }
    slot.cycles.fetch_add(cycles, Ordering::Relaxed);
}

/// Writes the I/O block (see `trace_file`) of a table, if it has entries.
pub(crate) fn write_io(fd: c_int, table: &[IoSlot; IO_SLOTS]) {
    let used = table
        .iter()
        .filter(|s| s.calls.load(Ordering::Relaxed) > 0)
        .count();
    if used == 0 {
        return;
    }
    // Written in pieces of at most 16 entries per block, each from the stack.
    let mut entries = table
        .iter()
        .filter(|s| s.calls.load(Ordering::Relaxed) > 0)
        .peekable();
    while entries.peek().is_some() {
        let mut local = Local::new();
        let mut w = local.writer();
        for _ in 0..BLOCK_HEAD {
            w.byte(0);
        }
        let mut count = 0u32;
        w.u32(0);
        while count < 16 {
            let Some(s) = entries.next() else { break };
            let key = s.key.load(Ordering::Relaxed);
            w.u32((key >> 56) as u32 - 1);
            w.u64(key & ((1 << 56) - 1));
            for v in [&s.calls, &s.bytes, &s.asked, &s.errors, &s.cycles] {
                w.u64(v.load(Ordering::Relaxed));
            }
            count += 1;
        }
        let len = w.len();
        w.put_at(0, &file::MAGIC);
        w.put_at(4, &file::KIND_IO.to_le_bytes());
        w.put_at(6, &0u16.to_le_bytes());
        w.put_at(8, &((len - BLOCK_HEAD) as u32).to_le_bytes());
        w.put_at(BLOCK_HEAD, &count.to_le_bytes());
        crate::out::write_all(fd, w.as_slice());
    }
}

/// Empties an I/O table (a forked child where `MADV_WIPEONFORK` failed).
pub(crate) fn clear_io(table: &[IoSlot; IO_SLOTS]) {
    for s in table {
        for v in [&s.key, &s.calls, &s.bytes, &s.asked, &s.errors, &s.cycles] {
            v.store(0, Ordering::Relaxed);
        }
    }
}

/// `lift` for the library: `how` 0 released (freed, unmapped, re-protected), 1 read
/// by the kernel (the buffer of a `write`), 2 written by the kernel (of a `read`).
extern "C" fn lift_hook(addr: *const c_void, len: usize, how: c_int) {
    let fate = match how {
        1 => KERNEL_READ,
        2 => KERNEL_WRITE,
        _ => RELEASED,
    };
    lift(addr as usize, len, fate);
}

extern "C" fn expire_hook(all: c_int) {
    expire(if all != 0 { Expiry::Exit } else { Expiry::Old });
}

extern "C" fn live_hook() -> c_int {
    c_int::from(live())
}

/// What the shim hands the trace I/O library (its `blockmem_traceio_register`).
#[repr(C)]
pub struct Hooks {
    /// Layout version of this struct (1).
    pub version: u32,
    /// Non-zero: traps are on, the library must install its `SIGSEGV` handler.
    pub traps: u32,
    /// The fault test (1: ours, handled).
    pub fault: unsafe extern "C" fn(*mut libc::siginfo_t, *mut c_void) -> c_int,
    /// Lift watched pages in a range (`how`: 0 released, 1 kernel read, 2 kernel write).
    pub lift: extern "C" fn(*const c_void, usize, c_int),
    /// Count one I/O call.
    pub io: extern "C" fn(u32, usize, usize, isize, u64),
    /// Close old watches (non-zero: all of them).
    pub expire: extern "C" fn(c_int),
    /// Non-zero while some page may be protected.
    pub live: extern "C" fn() -> c_int,
}

static HOOKS: Hooks = Hooks {
    version: 1,
    traps: 0,
    fault,
    lift: lift_hook,
    io,
    expire: expire_hook,
    live: live_hook,
};
static HOOKS_TRAPS: Hooks = Hooks { traps: 1, ..HOOKS };

/// Hands the hooks to the trace I/O library if it is loaded (the constructor, after
/// tracing started).
pub(crate) fn attach() {
    type Register = unsafe extern "C" fn(*const Hooks) -> c_int;
    // SAFETY: dlsym with a NUL-terminated name; a found symbol of this name is the
    // library's registration function, of this signature.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"blockmem_traceio_register".as_ptr()) };
    if f.is_null() {
        return;
    }
    // SAFETY: see above.
    let register: Register = unsafe { core::mem::transmute::<*mut c_void, Register>(f) };
    let traps = EVERY.load(Ordering::Relaxed) != 0;
    let hooks = if traps { &HOOKS_TRAPS } else { &HOOKS };
    // SAFETY: the hooks are static.
    if unsafe { register(hooks) } == 1 && traps {
        ATTACHED.store(1, Ordering::Release);
    }
}
