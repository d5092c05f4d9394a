//! The calling thread's identity, for statistics and traces: its kernel thread id
//! (`gettid`) and its statistics slot ([`crate::stats`]).
//!
//! Both are cached in one thread-local word, `tid | (slot + 1) << 32`, so that only a
//! thread's first call with statistics or tracing on pays the `gettid` system call;
//! every later one pays one load. The word lives in the shim's own static TLS block
//! (initial-exec: an offset from `fs` the dynamic linker fixes at load), declared in
//! assembly because stable Rust has no `#[thread_local]` and `no_std` no
//! `thread_local!`. glibc zeroes that block for every new thread, reused stacks
//! included, so a thread never inherits an exited one's identity, and nothing has to
//! be handed back when a thread exits. A forked child's only thread has a new tid: a
//! `pthread_atfork` child handler clears its word.
//!
//! Where the word cannot be kept (other architectures), every call asks `gettid` and
//! finds its slot by tid: correct, slower.

use core::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .tbss.blockmem_thread_word,\"awT\",@nobits",
    ".p2align 3",
    ".globl blockmem_thread_word",
    ".hidden blockmem_thread_word",
    ".type blockmem_thread_word,@object",
    ".size blockmem_thread_word,8",
    "blockmem_thread_word:",
    ".zero 8",
    ".popsection",
);

/// The calling thread's word (0: not known yet).
#[inline(always)]
fn word() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let v: u64;
        // SAFETY: reads this thread's own 8-byte TLS word: the GOT entry holds its
        // offset from the thread pointer, which the dynamic linker filled at load.
        unsafe {
            core::arch::asm!(
                "mov {v}, qword ptr [rip + blockmem_thread_word@GOTTPOFF]",
                "mov {v}, qword ptr fs:[{v}]",
                v = out(reg) v,
                options(nostack, preserves_flags, readonly)
            )
        };
        v
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Stores the calling thread's word.
#[inline(always)]
fn set_word(w: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: writes this thread's own TLS word (see `word`).
    unsafe {
        core::arch::asm!(
            "mov {t}, qword ptr [rip + blockmem_thread_word@GOTTPOFF]",
            "mov qword ptr fs:[{t}], {w}",
            t = out(reg) _,
            w = in(reg) w,
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = w;
}

/// Who is calling: the kernel thread id, and the statistics slot (0 when statistics
/// are off; see [`crate::stats`]).
#[derive(Clone, Copy)]
pub(crate) struct Me {
    pub tid: u32,
    pub slot: u32,
}

/// The calling thread's identity; `stats`: statistics are on (a slot is needed).
#[inline(always)]
pub(crate) fn me(stats: bool) -> Me {
    let w = word();
    if w >> 32 != 0 || (w != 0 && !stats) {
        return Me {
            tid: w as u32,
            slot: ((w >> 32) as u32).wrapping_sub(1),
        };
    }
    first_call(w, stats)
}

/// A thread's first call (or, with statistics, its first counted one): asks the kernel
/// for the tid and claims a slot. A signal handler that interrupts this and copies
/// may claim a second slot for the same tid; the statistics merge slots by tid.
#[cold]
#[inline(never)]
fn first_call(w: u64, stats: bool) -> Me {
    let tid = if w != 0 { w as u32 } else { gettid() };
    let slot = if stats {
        crate::stats::slot_for(tid)
    } else {
        u32::MAX
    };
    set_word(u64::from(tid) | u64::from(slot.wrapping_add(1)) << 32);
    Me { tid, slot }
}

fn gettid() -> u32 {
    // SAFETY: SYS_gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// `pthread_atfork` child handler: the child's thread has a new tid.
extern "C" fn after_fork_in_child() {
    set_word(0);
}

static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the fork handler (from the constructor, when statistics or tracing are
/// on).
pub(crate) fn register() {
    if !REGISTERED.swap(true, Ordering::Relaxed) {
        // SAFETY: registering a handler with static lifetime; in the constructor,
        // where glibc may allocate.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    }
}
