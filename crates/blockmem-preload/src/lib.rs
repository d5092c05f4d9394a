//! The LD_PRELOAD shim: puts blockmem under unmodified programs.
//!
//! ```text
//! cargo rustc --release -p blockmem-preload -- -C panic=abort
//! LD_PRELOAD=$PWD/target/release/libblockmem_preload.so BLOCKMEM_STATS=1 sort big.txt
//! ```
//!
//! It exports `memcpy`, `memmove`, `memset`, `bzero`, `mempcpy` and the fortified
//! `__memcpy_chk`, `__memmove_chk`, `__memset_chk`, `__mempcpy_chk` with the C library's
//! semantics and return values; the dynamic linker binds every call the program (and
//! every other library) makes to these names here instead of in libc. Small calls run
//! the core's inline rungs right here; the others go to the core's entry points
//! (`blockmem::copy_raw` and friends: the policy, then the kernel) with
//! [`blockmem::Hint::Auto`], or the hint a hint map names for the call's site (module
//! `hints`).
//!
//! # Rules this object keeps
//!
//! * **Works before its constructor has run.** The copy path reads one atomic byte
//!   ([`MODE`]); it is zero until the constructor has read the environment, and zero
//!   means "plain blockmem", which needs no initialisation (the core derives its
//!   profile on first use, from CPUID and the profile file read with raw system calls,
//!   without allocating). The dynamic linker, libc's own start-up, other libraries'
//!   constructors and the program's `.preinit_array` may all call `memcpy` first, and
//!   get a correct one (a test calls every symbol from `.preinit_array`).
//! * **Never allocates, never locks, never calls itself.** The crate is `no_std` and
//!   `#![no_builtins]`, uses no formatting machinery, no slices helpers that lower to
//!   `memcpy`, and no stack array initialisers large enough to become `memset` calls; a
//!   test (`tests/disasm.rs`) reads the shared object's dynamic relocations and its
//!   disassembly and fails on any call to `memcpy`, `memmove`, `memset` or any other
//!   name exported here. No exported function calls another one: each calls the shared
//!   `#[inline(always)]` bodies below.
//! * **Async-signal-safe, thread-safe, fork-safe.** State is atomics written once by
//!   the constructor; statistics are relaxed atomic counters. Nothing needs resetting in
//!   a forked child; an exec'd program loads the shim afresh from `LD_PRELOAD`.
//! * **Environment read once, at load** (module `config`), from the `envp` the dynamic linker
//!   passes to constructors (no `getenv`, no allocation), and ignored entirely when the
//!   kernel marks the process `AT_SECURE` (set-user-ID and friends).
//!
//! # Small sizes stay inside the exported function
//!
//! Most calls real programs make are tiny (sqlite3 makes tens of millions of 1–16 byte
//! copies). For sizes up to [`INLINE_MAX`] each exported function runs the core's own
//! inline rungs (`blockmem::arch::all::small` and the SSE2 `copy_short`/`set_short` of
//! `blockmem::arch::generic`, the same blocks `blockmem::dispatch` is made of) directly,
//! so that they compile into the symbol itself: going through `blockmem::copy_raw`
//! costs a call and three register saves that glibc's `memcpy` does not pay, which a
//! program of small calls such as sqlite3 shows in `blockmem run --compare`. Above it, the
//! call goes to the core (`copy_raw`, `move_raw`, `set_raw`: policy, then kernel).
//!
//! # `memcpy` tolerates overlap
//!
//! C makes overlapping `memcpy` undefined, yet real programs do it, and glibc on x86-64
//! forgives them: its `memcpy` *is* its `memmove` (`__memcpy_avx_unaligned_erms` is an
//! alias of `__memmove_avx_unaligned_erms`, and the `evex`/`avx512` variants likewise).
//! A shim whose `memcpy` copied forward blindly would turn a latent bug into corrupted
//! output that the same binary never shows without the shim, which is precisely what
//! this object must not do. The inline rungs load everything before they store, so
//! they are moves already; above them `memcpy` and `mempcpy` check disjointness (two
//! subtractions and two compares) and hand overlapping ranges to `move_raw`, which also
//! guarantees that non-temporal stores are never used on them (docs/DESIGN.md). Disjoint
//! ranges, the case every correct program is in, take the copy path with streaming
//! stores still allowed.
//!
//! # Panic strategy
//!
//! Nothing here can panic: no indexing, no arithmetic that overflow-checks, no
//! `unwrap`; the disassembly test fails on any call into `core::panicking` (whose
//! formatting code could call `memcpy`). The object preloaded into programs is built with `-C panic=abort`
//! (`cargo rustc --release -p blockmem-preload -- -C panic=abort`, what
//! `scripts/install.sh` and the tests do), and then it is pure `no_std` with a
//! `#[panic_handler]` that aborts. Stable rustc refuses a `no_std` shared object built
//! with `panic=unwind` (it has no unwinding runtime to offer), and cargo forces
//! `panic=unwind` on a plain `cargo build` with the workspace's release profile and on
//! everything built for tests, so under `panic=unwind` only, the crate links `std` to
//! borrow its unwinding runtime. That variant works too but carries `std` (and `std`'s
//! own `memcpy` imports); it is not the one to deploy, and the tests never use it.

#![no_std]
#![no_builtins]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// See "Panic strategy" above: only for a build with panic=unwind.
#[cfg(not(panic = "abort"))]
extern crate std;

mod config;
mod hints;
mod maps;
mod next;
mod out;
mod stats;
mod thread;
mod trace;
mod trace_file;
mod warned;
mod watch;

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use blockmem::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
// Named by `copy_entry!` and `set_entry!`.
#[cfg(target_arch = "x86_64")]
use blockmem::entry_asm;
use blockmem::Hint;

use crate::next::Next;

/// Everything the copy path needs to know, in one byte: zero until the constructor has
/// run, and zero afterwards unless an environment variable asked for something.
pub static MODE: AtomicU8 = AtomicU8::new(0);
/// `MODE` bit: count calls and bytes (`BLOCKMEM_STATS=1`).
pub const MODE_STATS: u8 = 1 << 0;
/// `MODE` bit: pass calls through to the next definition, normally libc's
/// (`BLOCKMEM_DISABLE=1`). Set only after every pointer it needs has been resolved.
pub const MODE_DISABLE: u8 = 1 << 1;
/// Which bodies of the assembly entries (`blockmem::arch::x86_64::entry`) the exported
/// functions run: `blockmem::dispatch::wide::LEVEL_AVX512` (also the Rust-level
/// `blockmem::dispatch::wide` paths) or `LEVEL_AVX2`, as the CPU allows, when no mode
/// but hints is set. Set by the constructor, after `MODE`; 0 until then, and on other
/// CPUs: the general path.
pub static FAST: AtomicU8 = AtomicU8::new(0);
/// The route words of the `routed` assembly entries (`blockmem::arch::x86_64::entry`):
/// closed (every call goes on to the test of [`FAST`]) until the constructor opens them
/// where the entries run their AVX-512 bodies ([`FAST`] is `LEVEL_AVX512`).
#[cfg(target_arch = "x86_64")]
pub static ROUTE: [AtomicUsize; 3] = blockmem::arch::x86_64::entry::ROUTE_INIT;
/// `MODE` bit: record every call in the trace file (`BLOCKMEM_TRACE=<path>`; module
/// `trace`). Set only after the file and the buffers exist.
pub const MODE_TRACE: u8 = 1 << 2;
/// `MODE` bit: apply per-call-site hints (`BLOCKMEM_HINTS=<file>`; module `hints`).
/// Set only after the site table is filled. Calls up to [`INLINE_MAX`] ignore it: they
/// stay inline in the exported function.
pub const MODE_HINTS: u8 = 1 << 3;

#[cfg(panic = "abort")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort() has no preconditions. Unreachable in practice (see the crate docs).
    unsafe { libc::abort() }
}

// The precompiled `core` is built for unwinding, and the link keeps one of its
// `.eh_frame` entries, which names `rust_eh_personality`. Nothing here ever unwinds, but
// an undefined symbol would stop the dynamic linker from loading the shim, so a hidden
// (not exported) personality routine is defined. Were it ever called, it answers
// `_URC_FATAL_PHASE1_ERROR` (3), which makes the unwinder give up.
#[cfg(all(panic = "abort", target_arch = "x86_64"))]
core::arch::global_asm!(
    ".pushsection .text.rust_eh_personality,\"ax\",@progbits",
    ".globl rust_eh_personality",
    ".hidden rust_eh_personality",
    ".type rust_eh_personality,@function",
    "rust_eh_personality:",
    "    mov eax, 3",
    "    ret",
    ".size rust_eh_personality, . - rust_eh_personality",
    ".popsection",
);

/// True if `[dst, dst+n)` and `[src, src+n)` share no byte.
#[inline(always)]
pub(crate) fn disjoint(dst: *const u8, src: *const u8, n: usize) -> bool {
    (dst as usize).wrapping_sub(src as usize) >= n && (src as usize).wrapping_sub(dst as usize) >= n
}

/// Largest size the exported functions handle inline (see the crate docs): the top of
/// the core's inline ladder, 8 SSE2 vectors on x86-64, the scalar ladder elsewhere.
#[cfg(target_arch = "x86_64")]
pub const INLINE_MAX: usize = 128;
/// Largest size the exported functions handle inline (see the crate docs).
#[cfg(not(target_arch = "x86_64"))]
pub const INLINE_MAX: usize = SMALL_MAX;

/// Copies `n <= INLINE_MAX` bytes with the core's inline rungs. Every load precedes
/// every store, so overlap is allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
#[allow(clippy::if_same_then_else)] // the same call under two size ranges: see below
pub(crate) unsafe fn copy_small(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: each rung's size precondition holds; SSE2 is architectural on x86-64.
    unsafe {
        // 1–3 bytes first: the ladder inlined under `n < 4` keeps only its two smallest
        // rungs. Such copies dominate some programs (sqlite3: 24 M of its 25 M memcpy
        // calls), and each rung skipped is a branch less on every one of them.
        if n < 4 {
            copy_le32(dst, src, n);
        } else if n <= SMALL_MAX {
            copy_le32(dst, src, n);
        } else {
            #[cfg(target_arch = "x86_64")]
            blockmem::arch::generic::copy_short::<core::arch::x86_64::__m128i>(dst, src, n);
        }
    }
}

/// Sets `n <= INLINE_MAX` bytes to `byte` with the core's inline rungs.
///
/// # Safety
/// `dst` valid for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
pub(crate) unsafe fn set_small(dst: *mut u8, byte: u8, n: usize) {
    // SAFETY: as `copy_small`.
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n);
        } else {
            #[cfg(target_arch = "x86_64")]
            {
                use blockmem::arch::generic::{set_short, Vector};
                use core::arch::x86_64::__m128i;
                set_short::<__m128i>(dst, __m128i::splat(byte), n);
            }
        }
    }
}

/// Returns `p` without letting the optimiser see that it is the argument it was given.
/// The out-of-line bodies end with this so that the compiler cannot infer "returns its
/// argument" and keep `dst` alive across the call in a saved register: the exported
/// functions then end in a plain tail call, and their inline path needs no stack frame.
#[inline(always)]
fn opaque(p: *mut c_void) -> *mut c_void {
    core::hint::black_box(p)
}

/// `copy_body` with `FAST` set and no mode: the core's AVX-512 path, out of line so
/// that `mempcpy` and the fortified entries keep no stack frame (they may still jump
/// to a site entry, which reads the caller's return address from the top of the stack).
///
/// # Safety
/// As [`copy_body`]; `FAST` is set.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe extern "C" fn copy_fast(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    // SAFETY: forwarded contract; `FAST` is set only where the entries may run.
    unsafe { blockmem::dispatch::wide::copy_forgiving(dst, src, n, Hint::Auto) };
    opaque(ret)
}

/// `set_body` with `FAST` set and no mode (see [`copy_fast`]).
///
/// # Safety
/// As [`set_body`]; `FAST` is set.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe extern "C" fn set_fast(dst: *mut u8, byte: u8, n: usize, ret: *mut c_void) -> *mut c_void {
    // SAFETY: as in `copy_fast`.
    unsafe { blockmem::dispatch::wide::set(dst, byte, n, Hint::Auto) };
    opaque(ret)
}

/// The body of `memcpy` and `mempcpy`: a copy that forgives overlap (see the crate
/// docs). Returns `ret`, the caller's C return value, so that the exported function
/// ends in a tail call and the inline path needs no stack frame at all.
///
/// # Safety
/// `src` valid for `n` reads and `dst` for `n` writes (any pointers when `n == 0`).
#[inline(always)]
unsafe fn copy_body(dst: *mut u8, src: *const u8, n: usize, ret: *mut c_void) -> *mut c_void {
    #[cfg(target_arch = "x86_64")]
    if FAST.load(Ordering::Relaxed) == blockmem::dispatch::wide::LEVEL_AVX512
        && MODE.load(Ordering::Relaxed) == 0
    {
        // SAFETY: forwarded contract.
        return unsafe { copy_fast(dst, src, n, ret) };
    }
    if n <= INLINE_MAX && MODE.load(Ordering::Relaxed) & !MODE_HINTS == 0 {
        // SAFETY: forwarded contract; the inline rungs allow overlap.
        unsafe { copy_small(dst, src, n) };
        return ret;
    }
    // SAFETY: forwarded contract.
    unsafe {
        if MODE.load(Ordering::Relaxed) == 0 {
            copy_general(dst, src, n, ret, 0)
        } else {
            copy_general_sited(dst, src, n, ret)
        }
    }
}

/// `copy_body` above the inline sizes, or with a mode set. `site` is the caller's
/// return address (0 where it was not taken: no mode set).
///
/// # Safety
/// As [`copy_body`].
#[inline(never)]
unsafe extern "C" fn copy_general(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
    site: usize,
) -> *mut c_void {
    let mode = MODE.load(Ordering::Relaxed);
    // SAFETY (whole body): forwarded contract. Overlapping ranges go to the move.
    unsafe {
        if mode & !MODE_HINTS != 0 {
            // Plain pass-through first: it is what a `BLOCKMEM_DISABLE=1` run measures.
            if let (MODE_DISABLE, Some(f)) = (mode, Next::Memcpy.copy_fn(mode)) {
                f(dst.cast(), src.cast(), n);
            } else {
                copy_with_mode(mode, dst, src, n, site);
            }
        } else if n <= INLINE_MAX {
            copy_small(dst, src, n);
        } else {
            let hint = hints::for_call(mode, site, n);
            if disjoint(dst, src, n) {
                blockmem::copy_raw(dst, src, n, hint);
            } else {
                blockmem::move_raw(dst, src, n, hint);
            }
        }
    }
    opaque(ret)
}

/// `copy_body` when statistics, tracing or pass-through are on; kept out of line so
/// that the common path stays small.
///
/// # Safety
/// As [`copy_body`].
#[cold]
#[inline(never)]
unsafe fn copy_with_mode(mode: u8, dst: *mut u8, src: *const u8, n: usize, site: usize) {
    let call = trace::Call {
        kind: stats::OpSlot::Copy,
        mode,
        hint: hints::for_call(mode, site, n),
        site,
    };
    // SAFETY: forwarded contract.
    unsafe { run_with_mode(call, dst, src, 0, n) };
}

/// Runs a call with a mode set: traced, or as the shim runs it untraced (both pick the
/// kernel with `call.hint`), then counts it under the kernel that ran, in the calling
/// thread's slot, when statistics are on.
///
/// # Safety
/// The op's C contract: `dst` valid for `n` writes, `src` (copy, move) for `n` reads.
#[inline(always)]
unsafe fn run_with_mode(call: trace::Call, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    let counted = call.mode & MODE_STATS != 0;
    let me = if call.mode & (MODE_STATS | MODE_TRACE) != 0 {
        thread::me(counted)
    } else {
        thread::Me { tid: 0, slot: 0 }
    };
    // SAFETY (both): forwarded contract.
    let kernel = if call.mode & MODE_TRACE != 0 {
        unsafe { trace::call(call, me.tid, dst, src, byte, n) }
    } else {
        unsafe { trace::execute(call, dst, src, byte, n) }
    };
    if counted {
        stats::record(me.slot, call.kind, n, kernel);
    }
}

/// The body of `memmove`; returns `ret` (see [`copy_body`]).
///
/// # Safety
/// `src` valid for `n` reads and `dst` for `n` writes; overlap allowed.
#[inline(always)]
unsafe fn move_body(dst: *mut u8, src: *const u8, n: usize, ret: *mut c_void) -> *mut c_void {
    if n <= INLINE_MAX && MODE.load(Ordering::Relaxed) & !MODE_HINTS == 0 {
        // SAFETY: forwarded contract; the inline rungs allow overlap.
        unsafe { copy_small(dst, src, n) };
        return ret;
    }
    // SAFETY: forwarded contract.
    unsafe {
        if MODE.load(Ordering::Relaxed) == 0 {
            move_general(dst, src, n, ret, 0)
        } else {
            move_general_sited(dst, src, n, ret)
        }
    }
}

/// `move_body` above the inline sizes, or with a mode set (`site`: as
/// [`copy_general`]).
///
/// # Safety
/// As [`move_body`].
#[inline(never)]
unsafe extern "C" fn move_general(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
    site: usize,
) -> *mut c_void {
    let mode = MODE.load(Ordering::Relaxed);
    // SAFETY (whole body): forwarded contract.
    unsafe {
        if mode & !MODE_HINTS != 0 {
            if let (MODE_DISABLE, Some(f)) = (mode, Next::Memmove.copy_fn(mode)) {
                f(dst.cast(), src.cast(), n);
            } else {
                move_with_mode(mode, dst, src, n, site);
            }
        } else if n <= INLINE_MAX {
            copy_small(dst, src, n);
        } else {
            blockmem::move_raw(dst, src, n, hints::for_call(mode, site, n));
        }
    }
    opaque(ret)
}

/// # Safety
/// As [`move_body`].
#[cold]
#[inline(never)]
unsafe fn move_with_mode(mode: u8, dst: *mut u8, src: *const u8, n: usize, site: usize) {
    let call = trace::Call {
        kind: stats::OpSlot::Move,
        mode,
        hint: hints::for_call(mode, site, n),
        site,
    };
    // SAFETY: forwarded contract.
    unsafe { run_with_mode(call, dst, src, 0, n) };
}

/// The body of `memset` and `bzero`; returns `ret` (see [`copy_body`]).
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
unsafe fn set_body(
    slot: stats::OpSlot,
    dst: *mut u8,
    byte: u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    #[cfg(target_arch = "x86_64")]
    if FAST.load(Ordering::Relaxed) == blockmem::dispatch::wide::LEVEL_AVX512
        && MODE.load(Ordering::Relaxed) == 0
    {
        // SAFETY: forwarded contract.
        return unsafe { set_fast(dst, byte, n, ret) };
    }
    if n <= INLINE_MAX && MODE.load(Ordering::Relaxed) & !MODE_HINTS == 0 {
        // SAFETY: forwarded contract.
        unsafe { set_small(dst, byte, n) };
        return ret;
    }
    // SAFETY: forwarded contract.
    unsafe {
        if MODE.load(Ordering::Relaxed) == 0 {
            set_general(slot, dst, byte, n, ret, 0)
        } else {
            set_general_sited(slot, dst, byte, n, ret)
        }
    }
}

/// `set_body` above the inline sizes, or with a mode set (`site`: as
/// [`copy_general`]).
///
/// # Safety
/// As [`set_body`].
#[inline(never)]
unsafe extern "C" fn set_general(
    slot: stats::OpSlot,
    dst: *mut u8,
    byte: u8,
    n: usize,
    ret: *mut c_void,
    site: usize,
) -> *mut c_void {
    let mode = MODE.load(Ordering::Relaxed);
    // SAFETY (whole body): forwarded contract.
    unsafe {
        if mode & !MODE_HINTS != 0 {
            match (mode, slot, Next::Memset.set_fn(mode)) {
                (MODE_DISABLE, stats::OpSlot::Set, Some(f)) => {
                    f(dst.cast(), c_int::from(byte), n);
                }
                _ => set_with_mode(mode, slot, dst, byte, n, site),
            }
        } else if n <= INLINE_MAX {
            set_small(dst, byte, n);
        } else {
            blockmem::set_raw(dst, byte, n, hints::for_call(mode, site, n));
        }
    }
    opaque(ret)
}

/// # Safety
/// As [`set_body`].
#[cold]
#[inline(never)]
unsafe fn set_with_mode(
    mode: u8,
    slot: stats::OpSlot,
    dst: *mut u8,
    byte: u8,
    n: usize,
    site: usize,
) {
    let call = trace::Call {
        kind: slot,
        mode,
        hint: hints::for_call(mode, site, n),
        site,
    };
    // SAFETY: forwarded contract (no source).
    unsafe { run_with_mode(call, dst, core::ptr::null(), byte, n) };
}

// ---- call sites ------------------------------------------------------------------------

// The caller's return address (its *call site*) is what tracing records and what the
// hint map is keyed by. Rust has no stable `__builtin_return_address`, so the three
// `*_general_sited` entries below are two instructions of assembly each: load the
// word at the top of the stack into the next free argument register and jump to the
// Rust body, which takes it as its last argument.
//
// That word is the caller's return address because the exported functions reach
// these entries by a tail jump with the stack exactly as the caller left it: they
// have no stack frame (no push, no `sub rsp`), which `tests/disasm.rs` checks on the
// built object. Were that ever to break, the word would be some other address and
// the call would be attributed to a wrong site (a trace or a hint-map miss), never
// run incorrectly: every hint is correct for every call. Only calls with a mode set
// pay the two instructions; a plain run never enters these entries.
//
// A caller that itself tail-jumps to `memcpy` has no return address of its own on
// the stack: its call is attributed to the site that called it.

/// [`copy_general`] with `site` = the return address on the stack at entry.
///
/// # Safety
/// As [`copy_body`]; only reached by a tail jump from an exported function (see above).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn copy_general_sited(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    core::arch::naked_asm!("mov r8, qword ptr [rsp]", "jmp {f}", f = sym copy_general)
}

/// [`move_general`] with `site` = the return address on the stack at entry.
///
/// # Safety
/// As [`move_body`]; only reached by a tail jump from an exported function.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn move_general_sited(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    core::arch::naked_asm!("mov r8, qword ptr [rsp]", "jmp {f}", f = sym move_general)
}

/// [`set_general`] with `site` = the return address on the stack at entry.
///
/// # Safety
/// As [`set_body`]; only reached by a tail jump from an exported function.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn set_general_sited(
    slot: stats::OpSlot,
    dst: *mut u8,
    byte: u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    core::arch::naked_asm!("mov r9, qword ptr [rsp]", "jmp {f}", f = sym set_general)
}

/// Elsewhere no site is taken (0: traces carry none, hint maps never match).
///
/// # Safety
/// As [`copy_body`].
#[cfg(not(target_arch = "x86_64"))]
unsafe extern "C" fn copy_general_sited(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { copy_general(dst, src, n, ret, 0) }
}

/// # Safety
/// As [`move_body`].
#[cfg(not(target_arch = "x86_64"))]
unsafe extern "C" fn move_general_sited(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { move_general(dst, src, n, ret, 0) }
}

/// # Safety
/// As [`set_body`].
#[cfg(not(target_arch = "x86_64"))]
unsafe extern "C" fn set_general_sited(
    slot: stats::OpSlot,
    dst: *mut u8,
    byte: u8,
    n: usize,
    ret: *mut c_void,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { set_general(slot, dst, byte, n, ret, 0) }
}

/// glibc's `__chk_fail`: the fortified caller's destination is smaller than `n`.
/// Same message, same signal (`SIGABRT`).
#[cold]
#[inline(never)]
fn chk_fail() -> ! {
    out::write_all(2, b"*** buffer overflow detected ***: terminated\n");
    // SAFETY: abort() has no preconditions.
    unsafe { libc::abort() }
}

// ---- the assembly entries ---------------------------------------------------------------

// On x86-64, `memcpy`, `memmove` and `memset` are the core's assembly entries
// (`blockmem::copy_entry!`, `blockmem::set_entry!`): with `FAST` set they handle up to
// 2 KiB themselves; otherwise, and above 2 KiB, they jump on, with the stack as their
// caller left it, to the stubs below, which take the caller's return address (the call
// site traces record and hint maps are keyed by) and jump into the Rust bodies. Above
// 2 KiB with no mode set, the stub goes straight to the core.

/// Defines `$name`, the stub an assembly entry jumps to above 2 KiB with `FAST` set:
/// with no mode set, straight to the core's `$core` (hint Auto in ecx); with one (a
/// hint map), to `$general`, the sited Rust body. The stack is untouched, so
/// `$general` still finds the caller's return address on top of it.
macro_rules! above_stub {
    ($(#[$meta:meta])* $name:ident($($arg:ident: $ty:ty),*), general = $general:path, core = $core:path) => {
        $(#[$meta])*
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        unsafe extern "C" fn $name($($arg: $ty),*) -> *mut c_void {
            core::arch::naked_asm!(
                "cmp byte ptr [rip + {mode}], 0",
                "jne {general}",
                "xor ecx, ecx",
                "jmp {core}",
                mode = sym MODE,
                general = sym $general,
                core = sym $core,
            )
        }
    };
}

/// `memcpy` without `FAST`: `ret = dst` (rcx), then [`copy_general_sited`], which
/// takes the call site from the top of the stack.
///
/// # Safety
/// As [`memcpy`]; only reached by a tail jump from it.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn memcpy_sited(dst: *mut u8, src: *const u8, n: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rcx, rdi", "jmp {f}", f = sym copy_general_sited)
}

above_stub! {
    /// `memcpy` above 2 KiB with `FAST` set.
    ///
    /// # Safety
    /// As [`memcpy_sited`].
    memcpy_above_sited(dst: *mut u8, src: *const u8, n: usize),
    general = memcpy_sited, core = blockmem::dispatch::wide::copy_forgiving_above
}

/// `memmove` without `FAST` (see [`memcpy_sited`]).
///
/// # Safety
/// As [`memmove`]; only reached by a tail jump from it.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn memmove_sited(dst: *mut u8, src: *const u8, n: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rcx, rdi", "jmp {f}", f = sym move_general_sited)
}

above_stub! {
    /// `memmove` above 2 KiB with `FAST` set.
    ///
    /// # Safety
    /// As [`memmove_sited`].
    memmove_above_sited(dst: *mut u8, src: *const u8, n: usize),
    general = memmove_sited, core = blockmem::dispatch::wide::move_above
}

/// `memset` with its call site (the fourth argument), as `set_general` takes it.
///
/// # Safety
/// As [`memset`].
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn memset_site_body(
    dst: *mut u8,
    c: c_int,
    n: usize,
    site: usize,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { set_general(stats::OpSlot::Set, dst, c as u8, n, dst.cast(), site) }
}

/// `memset` without `FAST` (see [`memcpy_sited`]).
///
/// # Safety
/// As [`memset`]; only reached by a tail jump from it.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "C" fn memset_sited(dst: *mut u8, c: c_int, n: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rcx, qword ptr [rsp]", "jmp {f}", f = sym memset_site_body)
}

above_stub! {
    /// `memset` above 2 KiB with `FAST` set.
    ///
    /// # Safety
    /// As [`memset_sited`].
    memset_above_sited(dst: *mut u8, c: c_int, n: usize),
    general = memset_sited, core = blockmem::dispatch::wide::set_above
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// C `memcpy`: copies `n` bytes from `src` to `dst`, returns `dst`. Overlapping
    /// ranges are copied as `memmove` would (see the crate docs). With [`FAST`] set, up
    /// to 2 KiB in the assembly of `blockmem::arch::x86_64::entry`.
    ///
    /// # Safety
    /// `src` valid for `n` reads, `dst` valid for `n` writes.
    #[no_mangle]
    pub fn memcpy(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = routed, route = ROUTE, flag = FAST, general = memcpy_sited, above = memcpy_above_sited, hint = "",
    overlap = possible
}

/// C `memcpy` (see the x86-64 definition).
///
/// # Safety
/// `src` valid for `n` reads, `dst` valid for `n` writes.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: the C contract is the caller's.
    unsafe { copy_body(dst.cast(), src.cast(), n, dst) }
}

/// GNU `mempcpy`: `memcpy` that returns `dst + n`.
///
/// # Safety
/// As [`memcpy`].
#[no_mangle]
pub unsafe extern "C" fn mempcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let end = dst.cast::<u8>().wrapping_add(n).cast();
    // SAFETY: the C contract is the caller's.
    unsafe { copy_body(dst.cast(), src.cast(), n, end) }
}

#[cfg(target_arch = "x86_64")]
blockmem::copy_entry! {
    /// C `memmove`: copies `n` bytes, the ranges may overlap; returns `dst`. With
    /// [`FAST`] set, up to 2 KiB in the assembly of `blockmem::arch::x86_64::entry`.
    ///
    /// # Safety
    /// `src` valid for `n` reads, `dst` valid for `n` writes.
    #[no_mangle]
    pub fn memmove(dst: *mut c_void, src: *const c_void, n: usize);
    bodies = routed, route = ROUTE, flag = FAST, general = memmove_sited, above = memmove_above_sited, hint = "",
    overlap = possible
}

/// C `memmove` (see the x86-64 definition).
///
/// # Safety
/// `src` valid for `n` reads, `dst` valid for `n` writes.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: the C contract is the caller's.
    unsafe { move_body(dst.cast(), src.cast(), n, dst) }
}

#[cfg(target_arch = "x86_64")]
blockmem::set_entry! {
    /// C `memset`: sets `n` bytes to `c` converted to `unsigned char`; returns `dst`.
    /// With [`FAST`] set, up to 2 KiB in the assembly of
    /// `blockmem::arch::x86_64::entry`.
    ///
    /// # Safety
    /// `dst` valid for `n` writes.
    #[no_mangle]
    pub fn memset(dst: *mut c_void, c: c_int, n: usize);
    bodies = routed, route = ROUTE, flag = FAST, general = memset_sited, above = memset_above_sited, hint = ""
}

/// C `memset` (see the x86-64 definition).
///
/// # Safety
/// `dst` valid for `n` writes.
#[cfg(not(target_arch = "x86_64"))]
#[no_mangle]
pub unsafe extern "C" fn memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: the C contract is the caller's.
    unsafe { set_body(stats::OpSlot::Set, dst.cast(), c as u8, n, dst) }
}

/// BSD `bzero`: zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes.
#[no_mangle]
pub unsafe extern "C" fn bzero(dst: *mut c_void, n: usize) {
    // SAFETY: the C contract is the caller's.
    unsafe { set_body(stats::OpSlot::Zero, dst.cast(), 0, n, dst) };
}

/// Fortified `memcpy` (`-D_FORTIFY_SOURCE`): aborts like glibc if `dstlen < n`.
///
/// # Safety
/// As [`memcpy`]; `dstlen` is the size of the object `dst` points into.
#[no_mangle]
pub unsafe extern "C" fn __memcpy_chk(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    dstlen: usize,
) -> *mut c_void {
    if dstlen < n {
        chk_fail();
    }
    // SAFETY: the C contract is the caller's.
    unsafe { copy_body(dst.cast(), src.cast(), n, dst) }
}

/// Fortified `mempcpy`: aborts like glibc if `dstlen < n`, else returns `dst + n`.
///
/// # Safety
/// As [`__memcpy_chk`].
#[no_mangle]
pub unsafe extern "C" fn __mempcpy_chk(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    dstlen: usize,
) -> *mut c_void {
    if dstlen < n {
        chk_fail();
    }
    let end = dst.cast::<u8>().wrapping_add(n).cast();
    // SAFETY: the C contract is the caller's.
    unsafe { copy_body(dst.cast(), src.cast(), n, end) }
}

/// Fortified `memmove`: aborts like glibc if `dstlen < n`.
///
/// # Safety
/// As [`memmove`]; `dstlen` is the size of the object `dst` points into.
#[no_mangle]
pub unsafe extern "C" fn __memmove_chk(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    dstlen: usize,
) -> *mut c_void {
    if dstlen < n {
        chk_fail();
    }
    // SAFETY: the C contract is the caller's.
    unsafe { move_body(dst.cast(), src.cast(), n, dst) }
}

/// Fortified `memset`: aborts like glibc if `dstlen < n`.
///
/// # Safety
/// As [`memset`]; `dstlen` is the size of the object `dst` points into.
#[no_mangle]
pub unsafe extern "C" fn __memset_chk(
    dst: *mut c_void,
    c: c_int,
    n: usize,
    dstlen: usize,
) -> *mut c_void {
    if dstlen < n {
        chk_fail();
    }
    // SAFETY: the C contract is the caller's.
    unsafe { set_body(stats::OpSlot::Set, dst.cast(), c as u8, n, dst) }
}
