//! The dispatcher's two memories of addresses, what a call knows of its destination
//! without probing it: the pages calls of recalling bands wrote lately ([`WRITTEN`],
//! [`written_lately`]), and the blocks probed calls streamed lately ([`STREAMED`],
//! [`met_again`]). Both are lock-free tables of atomics; a race between threads loses
//! or repeats an entry, which costs one call the other kernel, never correctness.
//! What a call does with the answers is [`crate::policy::Plan::choose`]'s.

use core::sync::atomic::{AtomicUsize, Ordering};

/// The time-stamp counter (0 where there is none: there the probe never finds a block
/// cold, and nothing is remembered).
#[inline]
pub(super) fn tsc() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC exists on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() as usize }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Ways in each set of [`WRITTEN`].
const WRITTEN_WAYS: usize = 4;
/// Sets of [`WRITTEN`] (a power of two).
const WRITTEN_SETS: usize = 64;

/// One set of the memory of written pages: page numbers (0: empty) and the
/// time-stamp counter when each was last checked (0: not yet), its low bits the count
/// of calls left that trust the check ([`written_lately`]), in one cache line.
#[repr(C, align(64))]
struct WrittenSet {
    page: [AtomicUsize; WRITTEN_WAYS],
    at: [AtomicUsize; WRITTEN_WAYS],
}

/// The pages that calls of recalling bands ([`crate::policy::Step::Recall`]) started
/// in lately: a set-associative table of [`WRITTEN_SETS`] sets of [`WRITTEN_WAYS`]
/// pages, the set chosen by the calling thread's stack (which megabyte it lies in), the
/// way by the page.
///
/// Why: below the sizes where a probe pays, a call cannot tell a destination in cache
/// from one in memory, and the kernel that wins on one loses on the other (`rep stosb`
/// against 32-byte stores: `docs/results/epyc-zen5-2vcpu/written-lately`). A
/// destination written by the call before, or a few calls before, is in cache: a
/// program setting one buffer again and again, or reusing a freed heap block at once.
///
/// Each thread mostly keeps to its own set (threads' stacks lie megabytes apart), so
/// threads setting their own blocks do not take each other's lines on every call. The
/// first call on a page stores it without a time (scattered calls pay one load and two
/// stores, no time-stamp read); the second stores the time; from the third on, a call
/// within the window finds it written lately.
static WRITTEN: [WrittenSet; WRITTEN_SETS] = [const {
    WrittenSet {
        page: [const { AtomicUsize::new(0) }; WRITTEN_WAYS],
        at: [const { AtomicUsize::new(0) }; WRITTEN_WAYS],
    }
}; WRITTEN_SETS];

/// How long (time-stamp counter ticks) after a check a page written by a recalling
/// call of `n` bytes still counts as written lately ([`written_lately`]): 4,096 ticks,
/// too little for a core to read enough other data to push a block out of its L2 cache,
/// plus `n / 4`, the time sixteen calls take at 64 bytes a tick (the trusted calls
/// between two checks, in a loop on one block). Once the block has left the L2, 32-byte
/// stores lose to `rep stosb` (`docs/results/epyc-zen5-2vcpu/written-lately`,
/// `set_loops.txt`).
pub const fn written_window(n: usize) -> usize {
    4096 + n / 4
}

/// Multiplier of the memory's hashes (the golden ratio in fixed point, truncated where
/// `usize` is narrower).
const GOLDEN: usize = 0x9e37_79b9_7f4a_7c15_u64 as usize;

/// The entry of [`WRITTEN`] for the page holding `dst`, as seen from the calling
/// thread: (the way's page, its time).
#[inline(always)]
fn written_entry(dst: usize) -> (&'static AtomicUsize, &'static AtomicUsize, usize) {
    let stack = stack_pointer();
    let set = (stack >> 20).wrapping_mul(GOLDEN) >> (usize::BITS - WRITTEN_SETS.trailing_zeros());
    let page = dst >> 12;
    let way = page.wrapping_mul(GOLDEN) >> (usize::BITS - WRITTEN_WAYS.trailing_zeros());
    let s = &WRITTEN[set % WRITTEN_SETS];
    (&s.page[way % WRITTEN_WAYS], &s.at[way % WRITTEN_WAYS], page)
}

/// The calling thread's stack pointer, or an address near it: which of its megabytes
/// the stack lies in. Read from the register on x86-64: the address of a local would
/// give the calling function a stack slot whose address escapes, and keep it from ending
/// in a jump to its kernel (see `kernel::CopyFn`).
#[inline(always)]
fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads a register; no memory, stack or flags touched.
        unsafe {
            core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let marker = 0u8;
        core::hint::black_box(core::ptr::addr_of!(marker)) as usize
    }
}

/// The bits of a [`WRITTEN`] time that count the trusted calls left.
const WRITTEN_BUDGET: usize = 0xf;
/// Calls on a page found written lately that trust that finding without reading the
/// time-stamp counter again (see [`written_lately`]): as many as its count holds.
const WRITTEN_TRUSTED: usize = WRITTEN_BUDGET;

/// Whether the page holding `dst` was started in by a recalling call lately, as the
/// one now asking (reading the time-stamp counter through `now`, which gives 0 where
/// there is none: then never); records this call either way.
///
/// Lately: less than [`written_window`] ticks before the last time the page was
/// checked. A page found written lately trusts that for the next [`WRITTEN_TRUSTED`]
/// calls on it (the count kept in the time's low bits), since a time-stamp read costs
/// a good part of a small set; one found written long ago, or not yet timed, is checked
/// again on the next call. So a block met again only after a long while is never
/// trusted, and a block evicted between two calls of a loop trusting it costs at most
/// that many calls the cached row's kernel. The memory cannot see `clflush`
/// (`docs/results/epyc-zen5-2vcpu/written-lately`, `policy`).
pub fn written_lately(dst: usize, n: usize, now: impl FnOnce() -> usize) -> bool {
    let (page_of, at_of, page) = written_entry(dst);
    // Page 0 is never a destination (the null page), so 0 marks an empty way.
    if page == 0 || page_of.load(Ordering::Relaxed) != page {
        page_of.store(page, Ordering::Relaxed);
        at_of.store(0, Ordering::Relaxed);
        return false;
    }
    let at = at_of.load(Ordering::Relaxed);
    if at & WRITTEN_BUDGET != 0 {
        at_of.store(at - 1, Ordering::Relaxed);
        return true;
    }
    let now = now() & !WRITTEN_BUDGET;
    if now == 0 {
        return false;
    }
    let lately = at != 0 && now.wrapping_sub(at) < written_window(n);
    let budget = if lately { WRITTEN_TRUSTED } else { 0 };
    at_of.store(now | budget, Ordering::Relaxed);
    lately
}

/// Forgets every written page (for tests that check decisions call by call).
pub fn forget_written() {
    for s in &WRITTEN {
        for p in &s.page {
            p.store(0, Ordering::Relaxed);
        }
    }
}

/// Blocks the dispatcher's memory of streamed blocks holds (see [`met_again`]).
pub const STREAMED_SLOTS: usize = 8;

/// The start addresses of the last destinations a probed call streamed that a
/// temporal write would have kept in cache (0: empty), with the time-stamp counter
/// when each was last met ([`STREAMED_AT`]), overwritten in turn from
/// [`STREAMED_NEXT`]; one set for the process.
///
/// Why: a probe cannot tell a block that is cold because the program has not touched
/// it for long from one that is cold because the last call on it streamed it past the
/// cache. A program that writes the same buffer again and again (a heap block freed
/// and reused, a reused output buffer) would have its block streamed on every call,
/// each time found cold because of the last (`docs/results/epyc-zen4-2vcpu/reuse-loop`,
/// and CPython's `reused_bytes.py` beside it in `docs/results/README.md`). So such a
/// block, met again
/// within [`streamed_window`] of the last call on it, is written with temporal stores
/// and stays remembered as long as it keeps coming back that soon; a block streamed
/// once, or met again only later, keeps streaming.
static STREAMED: [AtomicUsize; STREAMED_SLOTS] = [const { AtomicUsize::new(0) }; STREAMED_SLOTS];
/// When each entry of [`STREAMED`] was last met (time-stamp counter, its low bits
/// where `usize` is narrower: only differences under [`streamed_window`] matter).
static STREAMED_AT: [AtomicUsize; STREAMED_SLOTS] = [const { AtomicUsize::new(0) }; STREAMED_SLOTS];
static STREAMED_NEXT: AtomicUsize = AtomicUsize::new(0);

/// How long (time-stamp counter ticks) a streamed block of `n` bytes stays
/// remembered after a call on it, for an effective LLC of `llc` bytes: the time that
/// call takes at 4 bytes a tick, plus the time one core takes to read the rest of an
/// LLC's worth of other data, `llc - n` bytes, at 32 bytes a tick. A block met again
/// sooner would most likely still be cached had it been written there; one met later
/// may have been evicted by other work, and is streamed again (figures:
/// `docs/results/epyc-zen5-2vcpu/written-lately/dispatch-notes.md`).
pub const fn streamed_window(llc: usize, n: usize) -> usize {
    n / 4 + llc.saturating_sub(n) / 32
}

/// Records that a probed call streamed the block at `dst` at time `now` (time-stamp
/// counter).
pub fn remember_streamed(dst: usize, now: usize) {
    let i = STREAMED_NEXT.fetch_add(1, Ordering::Relaxed) % STREAMED_SLOTS;
    STREAMED_AT[i].store(now, Ordering::Relaxed);
    STREAMED[i].store(dst, Ordering::Relaxed);
}

/// Whether the block at `dst` was streamed ([`remember_streamed`]) or met again
/// less than `window` ticks before `now`; if so, it is met again now. A block last
/// met longer ago is forgotten (the caller streams it and remembers it anew).
pub fn met_again(dst: usize, now: usize, window: usize) -> bool {
    if dst == 0 {
        return false;
    }
    // An index loop: the unoptimised core copies iterator adapters with `memcpy`
    // (which the shim would call back into; `tests/no_libc_calls.rs`).
    let mut i = 0;
    while i < STREAMED_SLOTS {
        let (e, at) = (&STREAMED[i], &STREAMED_AT[i]);
        i += 1;
        if e.load(Ordering::Relaxed) != dst {
            continue;
        }
        if now.wrapping_sub(at.load(Ordering::Relaxed)) < window {
            at.store(now, Ordering::Relaxed);
            return true;
        }
        let _ = e.compare_exchange(dst, 0, Ordering::Relaxed, Ordering::Relaxed);
    }
    false
}

/// Forgets every streamed block (for tests that check decisions call by call).
pub fn forget_streamed() {
    for e in &STREAMED {
        e.store(0, Ordering::Relaxed);
    }
}
