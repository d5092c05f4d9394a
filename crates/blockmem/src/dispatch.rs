//! Entry points behind the public API: the inline size ladder, then the policy, then a
//! direct call to the chosen kernel.
//!
//! ```text
//!   n <= 32            small ladder, inline (portable scalar head/tail)
//!   n <= 128 (x86-64)  SSE2 head/tail vectors, inline
//!   otherwise          probe first lines if Auto and n >= profile.probe_min,
//!                      policy::decide(op, n, hint, overlap, probes, profile) -> kernel
//! ```
//!
//! Global state is a handful of atomics, published once: the profile (CPUID defaults
//! plus the calibration file, loaded on the first call that needs the policy;
//! replaceable with [`install`]) and an optional forced kernel. Nothing here allocates, locks or calls `memcpy`; every path is
//! async-signal-safe and works before any initialisation has run.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::autoload::{self, Found, Source};
use crate::cpu::{self, features};
use crate::kernel::{KernelId, Op};
use crate::policy::{self, Probes, Thresholds};
use crate::profile::{self, ErrorKind, Profile, ProfileError};
use crate::Hint;

// The published profile, one atomic per field (a torn read during a concurrent
// `install` can only pick a different valid kernel, never a wrong result).
const FIELDS: usize = 15;
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicUsize = AtomicUsize::new(0);
static PUBLISHED: [AtomicUsize; FIELDS] = [ZERO; FIELDS];

// 0 = not initialised, 1 = a caller is initialising, 2 = published.
static STATE: AtomicU8 = AtomicU8::new(0);
static SOURCE: AtomicU8 = AtomicU8::new(0);
// The rejected profile's error: 0 = none, else (kind code + 1); its line; its payload.
static ERROR_KIND: AtomicUsize = AtomicUsize::new(0);
static ERROR_LINE: AtomicUsize = AtomicUsize::new(0);
static ERROR_VERSION: AtomicUsize = AtomicUsize::new(0);
// 0 = no forced kernel, else KernelId as u8 + 1.
static FORCED: AtomicU8 = AtomicU8::new(0);

// The fast path: above the inline ladder and below COPY_FAST_BELOW, every copy and move
// uses COPY_FAST whatever the hint (no threshold, probe or rep-movsb window starts
// lower); likewise SET_FAST for set and zero. One atomic load instead of a policy
// evaluation: ~10 ns of a 4 KiB copy. 0 = no fast path (not yet published, or forced).
static COPY_FAST_BELOW: AtomicUsize = AtomicUsize::new(0);
static COPY_FAST: AtomicU8 = AtomicU8::new(0);
static SET_FAST_BELOW: AtomicUsize = AtomicUsize::new(0);
static SET_FAST: AtomicU8 = AtomicU8::new(0);

/// The fast path in force: `(copy_below, copy_kernel, set_below, set_kernel)`; a
/// `*_below` of 0 means no fast path for those ops.
pub fn fast_path() -> (usize, KernelId, usize, KernelId) {
    profile();
    (
        COPY_FAST_BELOW.load(Ordering::Relaxed),
        kernel_at(COPY_FAST.load(Ordering::Relaxed) as usize),
        SET_FAST_BELOW.load(Ordering::Relaxed),
        kernel_at(SET_FAST.load(Ordering::Relaxed) as usize),
    )
}

/// Recomputes the fast path from the published profile, the forced kernel and the
/// current feature mask (called whenever one of them changes).
pub(crate) fn refresh_fast_path() {
    COPY_FAST_BELOW.store(0, Ordering::Relaxed);
    SET_FAST_BELOW.store(0, Ordering::Relaxed);
    if STATE.load(Ordering::Acquire) != 2 || forced().is_some() {
        return;
    }
    let p = read_published();
    let f = features();
    let streams = p
        .stream_auto
        .min(p.stream_auto_cold_dst)
        .min(p.stream_no_reuse)
        .min(p.stream_reuse);
    let mut copy_below = streams;
    if p.probe_min != 0 {
        copy_below = copy_below.min(p.probe_min);
    }
    if p.rep_movsb_min < p.rep_movsb_max {
        copy_below = copy_below.min(p.rep_movsb_min);
    }
    let n = INLINE_MAX + 1;
    let copy = policy::decide(Op::Copy, n, Hint::Auto, false, Probes::NONE, &p, f);
    let mov = policy::decide(Op::Move, n, Hint::Auto, true, Probes::NONE, &p, f);
    let set = policy::decide(Op::Set, n, Hint::Auto, false, Probes::NONE, &p, f);
    let zero = policy::decide(Op::Zero, n, Hint::Auto, false, Probes::NONE, &p, f);
    if copy == mov && copy_below > n {
        COPY_FAST.store(copy as u8, Ordering::Relaxed);
        COPY_FAST_BELOW.store(copy_below, Ordering::Relaxed);
    }
    if set == zero && streams > n {
        SET_FAST.store(set as u8, Ordering::Relaxed);
        SET_FAST_BELOW.store(streams, Ordering::Relaxed);
    }
}

fn encode(p: &Profile) -> [usize; FIELDS] {
    [
        p.stream_auto,
        p.stream_auto_cold_dst,
        p.stream_no_reuse,
        p.stream_reuse,
        p.probe_min,
        p.probe_hit_max as usize,
        p.copy_temporal as usize,
        p.copy_cold_src as usize,
        p.copy_stream as usize,
        p.set_temporal as usize,
        p.set_stream as usize,
        p.zero_stream as usize,
        p.rep_movsb_min,
        p.rep_movsb_max,
        p.llc_effective,
    ]
}

fn kernel_at(v: usize) -> KernelId {
    if v < KernelId::ALL.len() {
        KernelId::ALL[v]
    } else {
        KernelId::Portable
    }
}

fn publish(p: &Profile, source: Source) {
    let v = encode(p);
    let mut i = 0;
    while i < FIELDS {
        PUBLISHED[i].store(v[i], Ordering::Relaxed);
        i += 1;
    }
    SOURCE.store(source as u8, Ordering::Relaxed);
    STATE.store(2, Ordering::Release);
    refresh_fast_path();
}

fn read_published() -> Profile {
    let f = |i: usize| PUBLISHED[i].load(Ordering::Relaxed);
    Profile {
        stream_auto: f(0),
        stream_auto_cold_dst: f(1),
        stream_no_reuse: f(2),
        stream_reuse: f(3),
        probe_min: f(4),
        probe_hit_max: f(5) as u32,
        copy_temporal: kernel_at(f(6)),
        copy_cold_src: kernel_at(f(7)),
        copy_stream: kernel_at(f(8)),
        set_temporal: kernel_at(f(9)),
        set_stream: kernel_at(f(10)),
        zero_stream: kernel_at(f(11)),
        rep_movsb_min: f(12),
        rep_movsb_max: f(13),
        llc_effective: f(14),
    }
}

// A static, not a const: indexing a const array copies it (a `memcpy` when unoptimised).
static ERROR_KINDS: [ErrorKind; 13] = [
    ErrorKind::MissingVersion,
    ErrorKind::UnsupportedVersion(0),
    ErrorKind::NotKeyValue,
    ErrorKind::UnknownKey,
    ErrorKind::DuplicateKey,
    ErrorKind::BadSize,
    ErrorKind::Overflow,
    ErrorKind::UnknownKernel,
    ErrorKind::WrongKernelForKey,
    ErrorKind::Inconsistent,
    ErrorKind::TooLarge,
    ErrorKind::NotUtf8,
    ErrorKind::Unreadable,
];

fn record_error(e: Option<ProfileError>) {
    let Some(e) = e else {
        ERROR_KIND.store(0, Ordering::Relaxed);
        return;
    };
    let mut code = 0;
    let mut version = 0;
    let mut i = 0;
    while i < ERROR_KINDS.len() {
        let same = match (ERROR_KINDS[i], e.kind) {
            (ErrorKind::UnsupportedVersion(_), ErrorKind::UnsupportedVersion(v)) => {
                version = v as usize;
                true
            }
            (a, b) => a == b,
        };
        if same {
            code = i;
            break;
        }
        i += 1;
    }
    ERROR_LINE.store(e.line, Ordering::Relaxed);
    ERROR_VERSION.store(version, Ordering::Relaxed);
    ERROR_KIND.store(code + 1, Ordering::Relaxed);
}

/// Derives the CPUID defaults and loads the profile file, once. Re-entrant calls (a
/// signal handler, another thread, or a compiler-inserted `memcpy` recursing through
/// the shim) get [`Profile::FALLBACK`] instead of waiting or deriving again.
fn init() -> Profile {
    if STATE
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return if STATE.load(Ordering::Acquire) == 2 {
            read_published()
        } else {
            Profile::FALLBACK
        };
    }
    load_now()
}

fn load_now() -> Profile {
    let defaults = Profile::from_caches(&cpu::used_caches());
    let mut buf = core::mem::MaybeUninit::<[u8; autoload::MAX_PROFILE_BYTES]>::uninit();
    let base = buf.as_mut_ptr() as *mut u8;
    // SAFETY: `base` is valid for MAX_PROFILE_BYTES writes; `find` initialises the
    // first `len` bytes it reports, and only those are read.
    let (profile, source, error) = match unsafe { autoload::find(base) } {
        Found::Nothing => (defaults, Source::Defaults, None),
        Found::Secure => (defaults, Source::Secure, None),
        Found::Error(src, e) => (defaults, src, Some(e)),
        Found::Bytes(src, len) => {
            match profile::parse(unsafe { core::slice::from_raw_parts(base, len) }, defaults) {
                Ok((p, _)) => (p, src, None),
                Err(e) => (defaults, src, Some(e)),
            }
        }
    };
    record_error(error);
    publish(&profile, source);
    profile
}

/// The profile in use (loaded on first call: see the module docs).
#[inline]
pub fn profile() -> Profile {
    if STATE.load(Ordering::Acquire) == 2 {
        read_published()
    } else {
        init()
    }
}

/// The three streaming thresholds of the profile in use.
pub fn thresholds() -> Thresholds {
    let p = profile();
    Thresholds {
        stream_auto: p.stream_auto,
        stream_no_reuse: p.stream_no_reuse,
        stream_reuse: p.stream_reuse,
    }
}

/// Replaces the streaming thresholds of the profile in use (other keys unchanged).
pub fn set_thresholds(t: Thresholds) {
    let mut p = profile();
    p.stream_auto = t.stream_auto;
    p.stream_no_reuse = t.stream_no_reuse;
    p.stream_reuse = t.stream_reuse;
    install(&p);
}

/// Installs a profile for the whole process (replacing the loaded one).
pub fn install(p: &Profile) {
    record_error(None);
    publish(p, Source::Installed);
}

/// Loads the profile again from `BLOCKMEM_PROFILE` or the default path (after
/// `blockmem calibrate` wrote a new one, say) and returns what [`status`] then says.
pub fn reload() -> (Source, Option<ProfileError>) {
    load_now();
    status()
}

/// Where the profile in use came from, and the error of a rejected profile file (the
/// library then runs on CPUID defaults).
pub fn status() -> (Source, Option<ProfileError>) {
    profile();
    let source = match SOURCE.load(Ordering::Relaxed) {
        1 => Source::Defaults,
        2 => Source::Env,
        3 => Source::DefaultPath,
        4 => Source::Installed,
        5 => Source::Secure,
        _ => Source::NotLoaded,
    };
    let error = match ERROR_KIND.load(Ordering::Relaxed) {
        0 => None,
        code => {
            let kind = match ERROR_KINDS[(code - 1).min(ERROR_KINDS.len() - 1)] {
                ErrorKind::UnsupportedVersion(_) => {
                    ErrorKind::UnsupportedVersion(ERROR_VERSION.load(Ordering::Relaxed) as u32)
                }
                k => k,
            };
            Some(ProfileError {
                line: ERROR_LINE.load(Ordering::Relaxed),
                kind,
            })
        }
    };
    (source, error)
}

/// Forces one kernel for every op it implements, above the inline ladder (`None`
/// restores the policy). Ops the kernel lacks, or a kernel this CPU cannot run, keep
/// using the policy. This is what `BLOCKMEM_FORCE` sets.
pub fn force(kernel: Option<KernelId>) {
    FORCED.store(kernel.map_or(0, |k| k as u8 + 1), Ordering::Relaxed);
    refresh_fast_path();
}

/// The forced kernel, if any.
pub fn forced() -> Option<KernelId> {
    match FORCED.load(Ordering::Relaxed) {
        0 => None,
        v => KernelId::ALL.get(v as usize - 1).copied(),
    }
}

/// The kernel a call above the inline ladder would use when nothing is probed.
pub fn choose(op: Op, n: usize, hint: Hint, overlap: bool) -> KernelId {
    choose_probed(op, n, hint, overlap, Probes::NONE)
}

/// The kernel a call above the inline ladder would use, given probe results (what
/// `blockmem info`'s decision table prints).
pub fn choose_probed(op: Op, n: usize, hint: Hint, overlap: bool, probes: Probes) -> KernelId {
    if let Some(k) = forced() {
        if policy::usable(k, op, features()) {
            return k;
        }
    }
    policy::decide(op, n, hint, overlap, probes, &profile(), features())
}

/// Chooses for a real call: probes the first line of `src` (if any) and `dst` when the
/// hint leaves the state open (`Auto`, `NoReuse`) and the profile says probing pays
/// at this size.
///
/// # Safety
/// `dst` valid for a one-byte read; `src` null or valid for a one-byte read.
#[inline]
unsafe fn choose_for_call(
    op: Op,
    dst: *const u8,
    src: *const u8,
    n: usize,
    hint: Hint,
    overlap: bool,
) -> KernelId {
    if let Some(k) = forced() {
        if policy::usable(k, op, features()) {
            return k;
        }
    }
    let p = profile();
    let mut probes = Probes::NONE;
    if hint != Hint::Reuse && p.probe_min != 0 && n >= p.probe_min && !overlap {
        // SAFETY: both pointers are readable per the contract (n > 0 here).
        unsafe {
            probes.dst = crate::probe::probe(dst, p.probe_hit_max);
            if !src.is_null() {
                probes.src = crate::probe::probe(src, p.probe_hit_max);
            }
        }
    }
    policy::decide(op, n, hint, overlap, probes, &p, features())
}

/// Calls kernel `k` for `op`. Falls back to the portable kernel if `k` lacks the op
/// or cannot run here (which the policy already excludes).
///
/// # Safety
/// As the op's C contract: pointers valid for `n` bytes; for `Copy`, no overlap.
#[inline(never)]
unsafe fn run(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    use crate::arch::all::portable;
    #[cfg(target_arch = "x86_64")]
    use crate::arch::x86_64 as x;
    // SAFETY: `choose` only returns kernels whose features are present and that
    // implement `op`; pointer validity is the caller's contract.
    unsafe {
        match (k, op) {
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Copy) => x::avx2::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Move) => x::avx2::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2, Op::Set | Op::Zero) => x::avx2::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Copy) => x::avx2_nt::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Move) => x::avx2_nt::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Nt, Op::Set | Op::Zero) => x::avx2_nt::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Clzero, Op::Zero) => x::clzero::zero(dst, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Copy) => x::sse2::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Move) => x::sse2::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Set | Op::Zero) => x::sse2::set(dst, byte, n),
            (KernelId::Portable, Op::Copy) => portable::copy(dst, src, n),
            (KernelId::Portable, Op::Set | Op::Zero) => portable::set(dst, byte, n),
            (KernelId::Portable, Op::Move) => portable::move_(dst, src, n),
            // A forced kernel outside the policy's usual set: through the table.
            (other, op) => run_from_table(other, op, dst, src, byte, n),
        }
    }
}

/// # Safety
/// As [`run`].
unsafe fn run_from_table(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    let avail = k.kernel().and_then(|e| e.available());
    // SAFETY: `Available` certifies the CPU features; pointers are the caller's contract.
    unsafe {
        match (op, avail) {
            (Op::Copy, Some(a)) if a.copy_fn().is_some() => (a.copy_fn().unwrap())(dst, src, n),
            (Op::Move, Some(a)) if a.move_fn().is_some() => (a.move_fn().unwrap())(dst, src, n),
            (Op::Set, Some(a)) if a.set_fn().is_some() => (a.set_fn().unwrap())(dst, byte, n),
            (Op::Zero, Some(a)) if a.zero_fn().is_some() => (a.zero_fn().unwrap())(dst, n),
            (Op::Copy, _) => crate::arch::all::portable::copy(dst, src, n),
            (Op::Move, _) => crate::arch::all::portable::move_(dst, src, n),
            (Op::Set | Op::Zero, _) => crate::arch::all::portable::set(dst, byte, n),
        }
    }
}

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
const INLINE_MAX: usize = SMALL_MAX;

/// The inline rungs shared by copy and move (both are overlap-safe).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn copy_inline(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: each rung's size precondition holds; SSE2 is architectural on x86-64.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else {
            #[cfg(target_arch = "x86_64")]
            crate::arch::generic::copy_short::<core::arch::x86_64::__m128i>(dst, src, n)
        }
    }
}

/// `memcpy` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, ranges disjoint.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= INLINE_MAX {
            copy_inline(dst, src, n)
        } else if n < COPY_FAST_BELOW.load(Ordering::Relaxed) {
            run(
                kernel_at(COPY_FAST.load(Ordering::Relaxed) as usize),
                Op::Copy,
                dst,
                src,
                0,
                n,
            )
        } else {
            run(
                choose_for_call(Op::Copy, dst, src, n, hint, false),
                Op::Copy,
                dst,
                src,
                0,
                n,
            )
        }
    }
}

/// `memmove` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
#[inline]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract; inline rungs are overlap-safe, and an overlapping
    // move is flagged so the policy never picks streaming stores for it.
    unsafe {
        if n <= INLINE_MAX {
            copy_inline(dst, src, n)
        } else if n < COPY_FAST_BELOW.load(Ordering::Relaxed) {
            run(
                kernel_at(COPY_FAST.load(Ordering::Relaxed) as usize),
                Op::Move,
                dst,
                src,
                0,
                n,
            )
        } else if !core::ptr::eq(dst, src) {
            let overlap = !disjoint(dst, src, n);
            run(
                choose_for_call(Op::Move, dst, src, n, hint, overlap),
                Op::Move,
                dst,
                src,
                0,
                n,
            )
        }
    }
}

/// `memset` with a hint.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= SMALL_MAX {
            set_le32(dst, byte, n)
        } else {
            #[cfg(target_arch = "x86_64")]
            if n <= INLINE_MAX {
                use crate::arch::generic::{set_short, Vector};
                use core::arch::x86_64::__m128i;
                return set_short::<__m128i>(dst, __m128i::splat(byte), n);
            }
            let op = if byte == 0 { Op::Zero } else { Op::Set };
            if n < SET_FAST_BELOW.load(Ordering::Relaxed) {
                return run(
                    kernel_at(SET_FAST.load(Ordering::Relaxed) as usize),
                    op,
                    dst,
                    core::ptr::null(),
                    byte,
                    n,
                );
            }
            run(
                choose_for_call(op, dst, core::ptr::null(), n, hint, false),
                op,
                dst,
                core::ptr::null(),
                byte,
                n,
            )
        }
    }
}
