//! Entry points behind the public API: the inline size ladder, then the policy, then a
//! direct call to the chosen kernel.
//!
//! ```text
//!   AVX-512BW + BMI2:  n <= 64 one masked access; copy/move n <= 512 and set/zero
//!                      n <= 2048 64-byte blocks (arch::x86_64::masked), inline
//!   otherwise          n <= 32 scalar head/tail, n <= 128 SSE2 head/tail, inline
//!   below the fast-path bound (Auto, or a hint below its streaming size): the
//!                      calibrated temporal kernel through one published pointer,
//!                      then rep movsb / rep stosb inside their windows, then (copy
//!                      and move) the robust kernel through its pointer over the
//!                      profile's robust range, up to where a probe could matter
//!   otherwise          probe a line (policy::probe_offset: the middle, past the
//!                      LLC half the LLC from the end) if n >= probe_from(hint): from the
//!                      profile's probe size (NoReuse: its streaming size), the first
//!                      size where a probe result can change the kernel; never when
//!                      the ranges overlap,
//!                      policy::decide(op, n, hint, overlap, probes, profile) -> kernel
//! ```
//!
//! Global state is a handful of atomics, published once: the profile (CPUID defaults
//! plus the calibration file, loaded on the first call that needs the policy;
//! replaceable with [`install`]) and an optional forced kernel. Nothing here allocates, locks or calls `memcpy`; every path is
//! async-signal-safe and works before any initialisation has run.

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::autoload::{self, Found, Source};
use crate::cpu::{self, Features};
use crate::kernel::{CopyFn, KernelId, Op, SetFn};
use crate::policy::{self, Probes, Thresholds};
use crate::profile::{self, ErrorKind, Profile, ProfileError};
use crate::Hint;

// Everything an operation reads lives in one 64-byte-aligned block: the fast path in
// its first cache line, the rest of the profile in the second. A cold call (after the
// program streamed through more than the cache) then pays one or two misses for the
// dispatcher's own state, not one per static: the lab's cold 4 KiB copies showed each
// such miss costing about a third of a microsecond in this VM.
#[repr(C, align(64))]
struct Published {
    // Line 1: the fast path. Above the inline ladder and below `copy_fast_below`, every
    // `Hint::Auto` copy and move uses `copy_fast` (no threshold, probe or rep-movsb
    // window starts lower); likewise `set_fast` for set and zero. 0 = no fast path
    // (not yet published, or a kernel is forced).
    copy_fast_below: AtomicUsize,
    set_fast_below: AtomicUsize,
    // The fast kernels' entry points: one load and one call, no dispatch code or jump
    // table in between (on a cold call each of those is another miss).
    copy_fast_fn: AtomicPtr<()>,
    move_fast_fn: AtomicPtr<()>,
    set_fast_fn: AtomicPtr<()>,
    copy_fast: AtomicU8,
    set_fast: AtomicU8,
    // Calls with `Reuse` or `NoReuse` take the fast path below this too (the smaller
    // of their streaming thresholds): a hint changes nothing there either.
    hinted_fast_below: AtomicUsize,
    // From the fast-path bound up to these, a call runs `rep movsb` / `rep stosb`
    // directly (0 = no such segment): the calibrated windows usually start below the
    // probe size, and the policy's path (read the profile, decide) cost more than the
    // choice is worth there.
    copy_rep_below: AtomicUsize,
    set_rep_below: AtomicUsize,
    // From the end of a rep window up to these, the fast path's kernel again (0 =
    // none): a window that ends below the probe size must not send the sizes after
    // it down the policy's path (a 4 KiB hot copy took 40 ns there instead of 24).
    copy_tail_below: AtomicUsize,
    set_tail_below: AtomicUsize,
    // From the end of those segments up to this, copies and moves run the robust
    // kernel through these pointers (0 = none): where the profile has one kernel serve
    // every cache state unprobed, the policy's path only read the profile to pick it.
    // Published (Release) after the pointers; read with Acquire.
    copy_robust_below: AtomicUsize,
    copy_robust_fn: AtomicPtr<()>,
    move_robust_fn: AtomicPtr<()>,
    // 0 = not initialised, 1 = a caller is initialising, 2 = published.
    state: AtomicU8,
    // 0 = no forced kernel, else KernelId as u8 + 1.
    forced: AtomicU8,
    // The feature mask in force (cpu::features() at the last refresh).
    features: AtomicU32,
    stream_auto: AtomicUsize,
    stream_auto_cold_dst: AtomicUsize,
    stream_no_reuse: AtomicUsize,
    stream_reuse: AtomicUsize,
    probe_min: AtomicUsize,
    // Per hint (`hint_index`), the size from which a call probes: where a probe
    // result can change the kernel (`policy::probe_from`); usize::MAX = never.
    probe_from: [AtomicUsize; 3],
    // Line 2: the rest of the profile.
    rep_movsb_min: AtomicUsize,
    rep_movsb_max: AtomicUsize,
    rep_stosb_min: AtomicUsize,
    rep_stosb_max: AtomicUsize,
    probe_hit_max: AtomicU32,
    copy_temporal: AtomicU8,
    copy_cold_src: AtomicU8,
    probe_src_min: AtomicUsize,
    copy_cold_dst: AtomicU8,
    set_cold_dst: AtomicU8,
    copy_temporal_large: AtomicU8,
    copy_robust: AtomicU8,
    copy_robust_min: AtomicUsize,
    copy_robust_max: AtomicUsize,
    copy_stream: AtomicU8,
    set_temporal: AtomicU8,
    set_stream: AtomicU8,
    zero_stream: AtomicU8,
    // Not on the operation path.
    llc_effective: AtomicUsize,
}

static P: Published = Published {
    copy_fast_below: AtomicUsize::new(0),
    set_fast_below: AtomicUsize::new(0),
    copy_fast_fn: AtomicPtr::new(core::ptr::null_mut()),
    move_fast_fn: AtomicPtr::new(core::ptr::null_mut()),
    set_fast_fn: AtomicPtr::new(core::ptr::null_mut()),
    copy_fast: AtomicU8::new(0),
    hinted_fast_below: AtomicUsize::new(0),
    copy_rep_below: AtomicUsize::new(0),
    set_rep_below: AtomicUsize::new(0),
    copy_tail_below: AtomicUsize::new(0),
    set_tail_below: AtomicUsize::new(0),
    copy_robust_below: AtomicUsize::new(0),
    copy_robust_fn: AtomicPtr::new(core::ptr::null_mut()),
    move_robust_fn: AtomicPtr::new(core::ptr::null_mut()),
    set_fast: AtomicU8::new(0),
    state: AtomicU8::new(0),
    forced: AtomicU8::new(0),
    features: AtomicU32::new(0),
    stream_auto: AtomicUsize::new(0),
    stream_auto_cold_dst: AtomicUsize::new(0),
    stream_no_reuse: AtomicUsize::new(0),
    stream_reuse: AtomicUsize::new(0),
    probe_min: AtomicUsize::new(0),
    probe_from: [
        AtomicUsize::new(usize::MAX),
        AtomicUsize::new(usize::MAX),
        AtomicUsize::new(usize::MAX),
    ],
    rep_movsb_min: AtomicUsize::new(0),
    rep_movsb_max: AtomicUsize::new(0),
    rep_stosb_min: AtomicUsize::new(0),
    rep_stosb_max: AtomicUsize::new(0),
    probe_hit_max: AtomicU32::new(0),
    copy_temporal: AtomicU8::new(0),
    copy_cold_src: AtomicU8::new(0),
    probe_src_min: AtomicUsize::new(0),
    copy_cold_dst: AtomicU8::new(0),
    set_cold_dst: AtomicU8::new(0),
    copy_temporal_large: AtomicU8::new(0),
    copy_robust: AtomicU8::new(0),
    copy_robust_min: AtomicUsize::new(usize::MAX),
    copy_robust_max: AtomicUsize::new(usize::MAX),
    copy_stream: AtomicU8::new(0),
    set_temporal: AtomicU8::new(0),
    set_stream: AtomicU8::new(0),
    zero_stream: AtomicU8::new(0),
    llc_effective: AtomicUsize::new(0),
};

// Reporting state, off the operation path.
static SOURCE: AtomicU8 = AtomicU8::new(0);
// The rejected profile's error: 0 = none, else (kind code + 1); its line; its payload.
static ERROR_KIND: AtomicUsize = AtomicUsize::new(0);
static ERROR_LINE: AtomicUsize = AtomicUsize::new(0);
static ERROR_VERSION: AtomicUsize = AtomicUsize::new(0);

/// The fast path in force: `(copy_below, copy_kernel, set_below, set_kernel)`; a
/// `*_below` of 0 means no fast path for those ops.
pub fn fast_path() -> (usize, KernelId, usize, KernelId) {
    profile();
    (
        P.copy_fast_below.load(Ordering::Relaxed),
        kernel_at(P.copy_fast.load(Ordering::Relaxed)),
        P.set_fast_below.load(Ordering::Relaxed),
        kernel_at(P.set_fast.load(Ordering::Relaxed)),
    )
}

/// The `rep` segments after the fast path: `(copy_below, set_below)`; from the fast
/// path's bound up to these, copies and moves run `rep movsb` and sets and zeroes
/// `rep stosb` without consulting the policy (0: no segment).
pub fn rep_segments() -> (usize, usize) {
    profile();
    (
        P.copy_rep_below.load(Ordering::Relaxed),
        P.set_rep_below.load(Ordering::Relaxed),
    )
}

/// The fast path's second stretch, after a rep window that ends below the policy's
/// start: `(copy_below, set_below)`; from the window's end up to these the fast-path
/// kernel runs again (0: none).
pub fn fast_tails() -> (usize, usize) {
    profile();
    (
        P.copy_tail_below.load(Ordering::Relaxed),
        P.set_tail_below.load(Ordering::Relaxed),
    )
}

/// The robust segment after them: `(from, below, kernel)`; copies and moves of
/// `from..below` bytes run the profile's robust kernel through a published pointer
/// (`below` = 0: no such segment; calls there take the policy's path).
pub fn robust_segment() -> (usize, usize, KernelId) {
    profile();
    let below = P.copy_robust_below.load(Ordering::Acquire);
    (
        if below == 0 { 0 } else { copy_chain_end() },
        below,
        kernel_at(P.copy_robust.load(Ordering::Relaxed)),
    )
}

/// Where the copy segments before the robust one end: the last published of the
/// fast path's tail, the rep window and the fast path (0: none published).
fn copy_chain_end() -> usize {
    [&P.copy_tail_below, &P.copy_rep_below, &P.copy_fast_below]
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .find(|&b| b != 0)
        .unwrap_or(0)
}

/// Recomputes the fast path and the cached feature mask from the published profile,
/// the forced kernel and `cpu::features()` (called whenever one of them changes).
pub(crate) fn refresh_fast_path() {
    P.copy_fast_below.store(0, Ordering::Relaxed);
    P.set_fast_below.store(0, Ordering::Relaxed);
    P.hinted_fast_below.store(0, Ordering::Relaxed);
    P.copy_rep_below.store(0, Ordering::Relaxed);
    P.set_rep_below.store(0, Ordering::Relaxed);
    P.copy_tail_below.store(0, Ordering::Relaxed);
    P.set_tail_below.store(0, Ordering::Relaxed);
    P.copy_robust_below.store(0, Ordering::Relaxed);
    let f = cpu::features();
    P.features.store(f.bits(), Ordering::Relaxed);
    if P.state.load(Ordering::Acquire) != 2 {
        return;
    }
    let p = read_published();
    for hint in Hint::ALL {
        P.probe_from[hint_index(hint)].store(policy::probe_from(&p, hint, f), Ordering::Relaxed);
    }
    if forced().is_some() {
        return;
    }
    // For `Hint::Auto` (what the C ABI and the shim pass), nothing but the temporal
    // kernel (or the rep-movsb window) can be chosen below both `stream_auto` and the
    // size from which a probe can change the kernel.
    let mut set_below = p
        .stream_auto
        .min(P.probe_from[hint_index(Hint::Auto)].load(Ordering::Relaxed));
    let policy_from = set_below;
    // From `copy_robust_min` the copy kernel is the robust one: the fast path, the rep
    // segment and the fast path's tail stop there (the robust segment may follow).
    let copy_end = policy_from.min(p.copy_robust_min);
    let mut copy_below = copy_end;
    if p.rep_movsb_min < p.rep_movsb_max {
        copy_below = copy_below.min(p.rep_movsb_min);
    }
    if p.rep_stosb_min < p.rep_stosb_max {
        set_below = set_below.min(p.rep_stosb_min);
    }
    P.hinted_fast_below
        .store(p.stream_no_reuse.min(p.stream_reuse), Ordering::Relaxed);
    let n = INLINE_MAX + 1;
    let copy = policy::decide(Op::Copy, n, Hint::Auto, false, Probes::NONE, &p, f);
    let mov = policy::decide(Op::Move, n, Hint::Auto, true, Probes::NONE, &p, f);
    let set = policy::decide(Op::Set, n, Hint::Auto, false, Probes::NONE, &p, f);
    let zero = policy::decide(Op::Zero, n, Hint::Auto, false, Probes::NONE, &p, f);
    let entry = |k: KernelId| k.kernel().and_then(|e| e.available());
    // Whether the policy, unprobed and unhinted, runs `k` for `n` bytes for every one
    // of `calls` (op, overlap): what a segment that skips it must agree with.
    const COPIES: &[(Op, bool)] = &[(Op::Copy, false), (Op::Move, false), (Op::Move, true)];
    const SETS: &[(Op, bool)] = &[(Op::Set, false), (Op::Zero, false)];
    let picks = |calls: &[(Op, bool)], n: usize, k: KernelId| {
        calls.iter().all(|&(op, overlap)| {
            policy::decide(op, n, Hint::Auto, overlap, Probes::NONE, &p, f) == k
        })
    };
    let copy_fns = entry(copy).and_then(|a| Some((a.copy_fn()?, entry(mov)?.move_fn()?)));
    if let (true, Some((c, m))) = (copy == mov && copy_below > n, copy_fns) {
        P.copy_fast.store(copy as u8, Ordering::Relaxed);
        P.copy_fast_fn.store(c as *mut (), Ordering::Relaxed);
        P.move_fast_fn.store(m as *mut (), Ordering::Relaxed);
        P.copy_fast_below.store(copy_below, Ordering::Release);
    }
    if let (true, Some(f)) = (
        set == zero && set_below > n,
        entry(set).and_then(|a| a.set_fn()),
    ) {
        P.set_fast.store(set as u8, Ordering::Relaxed);
        P.set_fast_fn.store(f as *mut (), Ordering::Relaxed);
        P.set_fast_below.store(set_below, Ordering::Release);
    }
    // The rep segments: [fast bound, end of the window or the policy's start), where
    // the policy would pick the rep kernel at both ends (it does in between: only the
    // window, `stream_auto` and the probe size move the choice there).
    if cfg!(target_arch = "x86_64") && P.copy_fast_below.load(Ordering::Relaxed) != 0 {
        let (lo, hi) = (copy_below, p.rep_movsb_max.min(copy_end));
        let rep_at = |n: usize| picks(COPIES, n, KernelId::RepMovsb);
        if lo == p.rep_movsb_min && lo < hi && rep_at(lo) && rep_at(hi - 1) {
            P.copy_rep_below.store(hi, Ordering::Relaxed);
            let fast = kernel_at(P.copy_fast.load(Ordering::Relaxed));
            let fast_at = |n: usize| picks(COPIES, n, fast);
            if hi < copy_end && fast_at(hi) && fast_at(copy_end - 1) {
                P.copy_tail_below.store(copy_end, Ordering::Relaxed);
            }
        }
    }
    // The robust segment: [copy_robust_min, where the policy would probe or stream
    // or the range ends), right after the segments before it (the dispatcher tests
    // only the upper bounds, in order), where the policy picks the profile's robust
    // kernel for copy and move, overlapping or not, at both ends (in between, unprobed,
    // only the range's and the streaming bounds move the choice).
    let chain_end = copy_chain_end();
    let (lo, hi) = (p.copy_robust_min, p.copy_robust_max.min(policy_from));
    let robust = p.copy_robust;
    let fns = entry(robust).and_then(|a| Some((a.copy_fn()?, a.move_fn()?)));
    if let (true, Some((c, m))) = (
        chain_end != 0
            && chain_end == lo
            && lo < hi
            && picks(COPIES, lo, robust)
            && picks(COPIES, hi - 1, robust),
        fns,
    ) {
        P.copy_robust_fn.store(c as *mut (), Ordering::Relaxed);
        P.move_robust_fn.store(m as *mut (), Ordering::Relaxed);
        P.copy_robust_below.store(hi, Ordering::Release);
    }
    if cfg!(target_arch = "x86_64") && P.set_fast_below.load(Ordering::Relaxed) != 0 {
        let (lo, hi) = (set_below, p.rep_stosb_max.min(policy_from));
        let rep_at = |n: usize| picks(SETS, n, KernelId::RepStosb);
        if lo == p.rep_stosb_min && lo < hi && rep_at(lo) && rep_at(hi - 1) {
            P.set_rep_below.store(hi, Ordering::Relaxed);
            let fast = kernel_at(P.set_fast.load(Ordering::Relaxed));
            let fast_at = |n: usize| picks(SETS, n, fast);
            if hi < policy_from && fast_at(hi) && fast_at(policy_from - 1) {
                P.set_tail_below.store(policy_from, Ordering::Relaxed);
            }
        }
    }
}

/// Index of a hint in [`Published::probe_from`].
#[inline]
const fn hint_index(hint: Hint) -> usize {
    match hint {
        Hint::Auto => 0,
        Hint::Reuse => 1,
        Hint::NoReuse => 2,
    }
}

/// The size from which a call with `hint` probes (`usize::MAX`: never): where some
/// probe result would change the kernel ([`policy::probe_from`]).
pub fn probe_from(hint: Hint) -> usize {
    profile();
    P.probe_from[hint_index(hint)].load(Ordering::Relaxed)
}

/// The feature mask the dispatcher works with (kept in its own cache line).
#[inline]
fn published_features() -> Features {
    Features::from_bits(P.features.load(Ordering::Relaxed))
}

fn kernel_at(v: u8) -> KernelId {
    if (v as usize) < KernelId::ALL.len() {
        KernelId::ALL[v as usize]
    } else {
        KernelId::Portable
    }
}

fn publish(p: &Profile, source: Source) {
    P.stream_auto.store(p.stream_auto, Ordering::Relaxed);
    P.stream_auto_cold_dst
        .store(p.stream_auto_cold_dst, Ordering::Relaxed);
    P.stream_no_reuse
        .store(p.stream_no_reuse, Ordering::Relaxed);
    P.stream_reuse.store(p.stream_reuse, Ordering::Relaxed);
    P.probe_min.store(p.probe_min, Ordering::Relaxed);
    P.rep_movsb_min.store(p.rep_movsb_min, Ordering::Relaxed);
    P.rep_movsb_max.store(p.rep_movsb_max, Ordering::Relaxed);
    P.rep_stosb_min.store(p.rep_stosb_min, Ordering::Relaxed);
    P.rep_stosb_max.store(p.rep_stosb_max, Ordering::Relaxed);
    P.copy_cold_dst
        .store(p.copy_cold_dst as u8, Ordering::Relaxed);
    P.set_cold_dst
        .store(p.set_cold_dst as u8, Ordering::Relaxed);
    P.copy_temporal_large
        .store(p.copy_temporal_large as u8, Ordering::Relaxed);
    P.copy_robust.store(p.copy_robust as u8, Ordering::Relaxed);
    P.copy_robust_min
        .store(p.copy_robust_min, Ordering::Relaxed);
    P.copy_robust_max
        .store(p.copy_robust_max, Ordering::Relaxed);
    P.probe_hit_max.store(p.probe_hit_max, Ordering::Relaxed);
    P.copy_temporal
        .store(p.copy_temporal as u8, Ordering::Relaxed);
    P.copy_cold_src
        .store(p.copy_cold_src as u8, Ordering::Relaxed);
    P.probe_src_min.store(p.probe_src_min, Ordering::Relaxed);
    P.copy_stream.store(p.copy_stream as u8, Ordering::Relaxed);
    P.set_temporal
        .store(p.set_temporal as u8, Ordering::Relaxed);
    P.set_stream.store(p.set_stream as u8, Ordering::Relaxed);
    P.zero_stream.store(p.zero_stream as u8, Ordering::Relaxed);
    P.llc_effective.store(p.llc_effective, Ordering::Relaxed);
    SOURCE.store(source as u8, Ordering::Relaxed);
    P.state.store(2, Ordering::Release);
    refresh_fast_path();
}

fn read_published() -> Profile {
    let u = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    let k = |a: &AtomicU8| kernel_at(a.load(Ordering::Relaxed));
    Profile {
        stream_auto: u(&P.stream_auto),
        stream_auto_cold_dst: u(&P.stream_auto_cold_dst),
        stream_no_reuse: u(&P.stream_no_reuse),
        stream_reuse: u(&P.stream_reuse),
        probe_min: u(&P.probe_min),
        probe_hit_max: P.probe_hit_max.load(Ordering::Relaxed),
        copy_temporal: k(&P.copy_temporal),
        copy_cold_src: k(&P.copy_cold_src),
        probe_src_min: u(&P.probe_src_min),
        copy_cold_dst: k(&P.copy_cold_dst),
        set_cold_dst: k(&P.set_cold_dst),
        copy_temporal_large: k(&P.copy_temporal_large),
        copy_robust: k(&P.copy_robust),
        copy_robust_min: u(&P.copy_robust_min),
        copy_robust_max: u(&P.copy_robust_max),
        copy_stream: k(&P.copy_stream),
        set_temporal: k(&P.set_temporal),
        set_stream: k(&P.set_stream),
        zero_stream: k(&P.zero_stream),
        rep_movsb_min: u(&P.rep_movsb_min),
        rep_movsb_max: u(&P.rep_movsb_max),
        rep_stosb_min: u(&P.rep_stosb_min),
        rep_stosb_max: u(&P.rep_stosb_max),
        llc_effective: u(&P.llc_effective),
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
    if P.state
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return if P.state.load(Ordering::Acquire) == 2 {
            read_published()
        } else {
            Profile::FALLBACK
        };
    }
    load_now()
}

/// The loader's file buffer. Static rather than on the stack: the first operation that
/// needs the policy may run in a signal handler on a small alternate stack (SIGSTKSZ is
/// 8 KiB), and this buffer alone is 16 KiB. Only the holder of `LOADING` touches it.
struct LoadBuf(core::cell::UnsafeCell<[u8; autoload::MAX_PROFILE_BYTES]>);
// SAFETY: the buffer is only accessed by the thread that set `LOADING` (see load_now).
unsafe impl Sync for LoadBuf {}
static LOAD_BUF: LoadBuf = LoadBuf(core::cell::UnsafeCell::new(
    [0; autoload::MAX_PROFILE_BYTES],
));
static LOADING: AtomicBool = AtomicBool::new(false);

fn load_now() -> Profile {
    let defaults = Profile::from_caches(&cpu::used_caches());
    if LOADING.swap(true, Ordering::Acquire) {
        // Another load is reading the file (a `reload` racing the first use): publish
        // the defaults so nothing waits; that load publishes the file's profile after.
        publish(&defaults, Source::Defaults);
        return defaults;
    }
    let base = LOAD_BUF.0.get() as *mut u8;
    // SAFETY: `LOADING` gives this thread sole use of the buffer, valid for
    // MAX_PROFILE_BYTES writes; `find` initialises the first `len` bytes it reports,
    // and only those are read.
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
    LOADING.store(false, Ordering::Release);
    record_error(error);
    publish(&profile, source);
    profile
}

/// The profile in use (loaded on first call: see the module docs).
#[inline]
pub fn profile() -> Profile {
    if P.state.load(Ordering::Acquire) == 2 {
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
    P.forced
        .store(kernel.map_or(0, |k| k as u8 + 1), Ordering::Relaxed);
    refresh_fast_path();
}

/// The forced kernel, if any.
pub fn forced() -> Option<KernelId> {
    match P.forced.load(Ordering::Relaxed) {
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
        if policy::usable(k, op, published_features()) {
            return k;
        }
    }
    policy::decide(
        op,
        n,
        hint,
        overlap,
        probes,
        &profile(),
        published_features(),
    )
}

/// Chooses for a real call: probes a line of `dst` ([`policy::probe_offset`]: the
/// middle, past the LLC half the LLC from the end) (and then of `src` where
/// [`policy::probes_source`] says its state changes the kernel and its probe pays:
/// from `probe_src_min`, not after a cold destination) when the profile says probing
/// pays at this size and the result can change the kernel, and for `NoReuse` wherever
/// it would stream (for every hint: a cached destination is never streamed and a cold
/// one gets the cold-destination kernel).
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
        if policy::usable(k, op, published_features()) {
            return k;
        }
    }
    let p = profile();
    let mut probes = Probes::NONE;
    // Only where a result can change the kernel (NoReuse, about to stream from its own
    // lower threshold, checks from there that the destination is not cached:
    // streaming a hot 64 KiB destination ran 4.8x slower than updating it in place).
    if n >= P.probe_from[hint_index(hint)].load(Ordering::Relaxed) && !overlap {
        // SAFETY: forwarded contract (one-byte reads inside the ranges).
        unsafe {
            probes.dst = probe_block(dst, n, &p);
            // The source's state matters only where it changes the kernel.
            if !src.is_null() && policy::probes_source(&p, n, probes.dst) {
                probes.src = probe_block(src, n, &p);
            }
        }
    }
    policy::decide(op, n, hint, overlap, probes, &p, published_features())
}

/// The state of a block from one timed load of its middle line, or past the LLC of a
/// line half the LLC from its end ([`policy::probe_offset`]), after an untimed load
/// 2 KiB away in the same page fills the TLB (see `probe::load_cycles_tlb_warm`).
///
/// # Safety
/// `b` valid for `n` one-byte reads, `n >= 4096`.
#[inline]
unsafe fn probe_block(b: *const u8, n: usize, p: &Profile) -> policy::Probed {
    debug_assert!(n >= policy::PROBE_MIN_BYTES);
    // SAFETY: probe_offset(n, _) < n for n >= 4096; the page mate needs no more (see
    // load_cycles_tlb_warm).
    unsafe {
        crate::probe::probe(
            b.add(policy::probe_offset(n, p.llc_effective)),
            p.probe_hit_max,
        )
    }
}

/// Calls kernel `k` for `op`: a direct call for every kernel, no table lookup (the
/// table is cold memory on a cold call). A kernel that lacks the op (which the policy
/// and `force` exclude) falls back to the portable kernel.
///
/// # Safety
/// As the op's C contract: pointers valid for `n` bytes; for `Copy`, no overlap; `k`'s
/// CPU features present (the policy, the fast path and `choose` only return such
/// kernels).
#[inline(never)]
unsafe fn run(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    use crate::arch::all::{naive, portable};
    #[cfg(target_arch = "x86_64")]
    use crate::arch::x86_64 as x;
    // SAFETY: forwarded contract; every arm calls a kernel whose features the caller
    // has established.
    unsafe {
        match (k, op) {
            (KernelId::Naive, Op::Copy) => naive::copy(dst, src, n),
            (KernelId::Naive, Op::Move) => naive::move_(dst, src, n),
            (KernelId::Naive, Op::Set | Op::Zero) => naive::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Copy) => x::sse2::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Move) => x::sse2::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Sse2, Op::Set | Op::Zero) => x::sse2::set(dst, byte, n),
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
            (KernelId::Avx2Pf, Op::Copy) => x::avx2_pf::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Pf, Op::Move) => x::avx2_pf::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2PfNt, Op::Copy) => x::avx2_pf_nt::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2PfNt, Op::Move) => x::avx2_pf_nt::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512, Op::Copy) => x::avx512::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512, Op::Move) => x::avx512::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512, Op::Set | Op::Zero) => x::avx512::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512Nt, Op::Copy) => x::avx512_nt::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512Nt, Op::Move) => x::avx512_nt::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512Nt, Op::Set | Op::Zero) => x::avx512_nt::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Pw, Op::Copy) => x::avx2_pw::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx2Pw, Op::Move) => x::avx2_pw::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512Pw, Op::Copy) => x::avx512_pw::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Avx512Pw, Op::Move) => x::avx512_pw::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::RepMovsb, Op::Copy) => x::rep_movsb::copy(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::RepMovsb, Op::Move) => x::rep_movsb::move_(dst, src, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::RepStosb, Op::Set | Op::Zero) => x::rep_stosb::set(dst, byte, n),
            #[cfg(target_arch = "x86_64")]
            (KernelId::Clzero, Op::Zero) => x::clzero::zero(dst, n),
            (_, Op::Copy) => portable::copy(dst, src, n),
            (_, Op::Move) => portable::move_(dst, src, n),
            (_, Op::Set | Op::Zero) => portable::set(dst, byte, n),
        }
    }
}

/// The fast-path entry in `slot`.
///
/// # Safety
/// Only after reading a non-zero fast-path limit with `Acquire`: the limit is published
/// (`Release`) after the slot holds a `CopyFn` of an available kernel.
#[inline(always)]
unsafe fn fast_copy(slot: &AtomicPtr<()>) -> CopyFn {
    // SAFETY: per the contract the pointer came from a `CopyFn`.
    unsafe { core::mem::transmute::<*mut (), CopyFn>(slot.load(Ordering::Relaxed)) }
}

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
const INLINE_MAX: usize = SMALL_MAX;

/// True if the published feature mask has AVX-512BW and BMI2 (not masked off): then
/// [`copy`], [`move_`] and [`set`] handle up to [`WIDE_MAX`] bytes inline with the
/// masked and 64-byte paths of `arch::x86_64::masked`. With sizes that vary call to
/// call they avoid the ladder's mispredictions (which cost twice glibc's masked
/// memset's time on the fleetbench memset distribution) and the indirect call into a
/// kernel (twice glibc's time at 200–512 bytes).
#[inline(always)]
fn wide_small(f: u32) -> bool {
    let need = Features::AVX512BW.union(Features::BMI2).bits();
    f & need == need
}

/// Largest sizes the inline path handles with AVX-512 (copy and move; set and zero).
#[cfg(target_arch = "x86_64")]
const WIDE_MAX: usize = crate::arch::x86_64::masked::WIDE_MAX;
#[cfg(target_arch = "x86_64")]
const SET_WIDE_MAX: usize = crate::arch::x86_64::masked::SET_WIDE_MAX;
#[cfg(not(target_arch = "x86_64"))]
const WIDE_MAX: usize = INLINE_MAX;
#[cfg(not(target_arch = "x86_64"))]
const SET_WIDE_MAX: usize = INLINE_MAX;

/// Largest size [`copy`], [`move_`] and [`set`] handle for `op` inline, without a
/// kernel: where AVX-512BW and BMI2 are in force 512 bytes for copy and move and
/// 2048 for set and zero, else 128 (64 on targets other than x86-64).
pub fn inline_max(op: Op) -> usize {
    if P.features.load(Ordering::Relaxed) == 0 {
        profile();
    }
    match (wide_small(P.features.load(Ordering::Relaxed)), op) {
        (false, _) => INLINE_MAX,
        (true, Op::Copy | Op::Move) => WIDE_MAX,
        (true, Op::Set | Op::Zero) => SET_WIDE_MAX,
    }
}

/// The inline rungs shared by copy and move (both are overlap-safe). `f` is the
/// published feature mask (0 before the first initialisation: the SSE2 ladder, which
/// every x86-64 CPU runs).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`, or
/// `n <= WIDE_MAX` when `wide_small(f)`.
#[inline(always)]
unsafe fn copy_inline(f: u32, dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: each rung's size precondition holds; SSE2 is architectural on x86-64;
    // the wide path runs only where the published mask has its features.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if wide_small(f) {
            return crate::arch::x86_64::masked::copy_le512(dst, src, n);
        }
        if n <= SMALL_MAX {
            copy_le32(dst, src, n)
        } else {
            #[cfg(target_arch = "x86_64")]
            crate::arch::generic::copy_short::<core::arch::x86_64::__m128i>(dst, src, n)
        }
    }
}

/// The largest size the inline path takes for feature mask `f`.
#[inline(always)]
fn inline_limit(f: u32) -> usize {
    if wide_small(f) {
        WIDE_MAX
    } else {
        INLINE_MAX
    }
}

/// `rep movsb` copy (the segment after the fast path; never published elsewhere).
///
/// # Safety
/// As [`copy`].
#[inline(always)]
unsafe fn rep_copy(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: forwarded contract; `rep movsb` is architectural on x86-64.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        crate::arch::x86_64::rep_movsb::copy(dst, src, n)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unsafe {
        run(KernelId::Portable, Op::Copy, dst, src, 0, n)
    }
}

/// `rep movsb` move (see [`rep_copy`]).
///
/// # Safety
/// As [`move_`].
#[inline(always)]
unsafe fn rep_move(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: forwarded contract.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        crate::arch::x86_64::rep_movsb::move_(dst, src, n)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unsafe {
        run(KernelId::Portable, Op::Move, dst, src, 0, n)
    }
}

/// `rep stosb` fill (see [`rep_copy`]).
///
/// # Safety
/// As [`set`].
#[inline(always)]
unsafe fn rep_set(dst: *mut u8, byte: u8, n: usize) {
    // SAFETY: forwarded contract.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        crate::arch::x86_64::rep_stosb::set(dst, byte, n)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unsafe {
        run(KernelId::Portable, Op::Set, dst, core::ptr::null(), byte, n)
    }
}

/// Where a call above the inline ladder goes without consulting the policy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Segment {
    /// The fast-path kernel, through its published pointer.
    Fast,
    /// `rep movsb` / `rep stosb`, inside their window.
    Rep,
    /// The robust copy kernel, through its published pointer (copies and moves only).
    Robust,
    /// The policy's path.
    Policy,
}

/// The segment of an `n`-byte call (`copies`: copy or move, else set or zero): the
/// fast path, the rep window after it and the fast path again after the window, for
/// `Auto` and for a hinted call below both hinted streaming thresholds; the policy's
/// path otherwise. The one place the dispatcher's entry points and
/// [`decide_for_call`] read these bounds.
#[inline(always)]
fn segment(copies: bool, n: usize, hint: Hint) -> Segment {
    let (fast, rep, tail) = if copies {
        (&P.copy_fast_below, &P.copy_rep_below, &P.copy_tail_below)
    } else {
        (&P.set_fast_below, &P.set_rep_below, &P.set_tail_below)
    };
    // Acquire on the fast bound: the kernel pointers were published before it.
    let seg = if n < fast.load(Ordering::Acquire) {
        Segment::Fast
    } else if n < rep.load(Ordering::Relaxed) {
        Segment::Rep
    } else if n < tail.load(Ordering::Relaxed) {
        Segment::Fast
    } else if copies && n < P.copy_robust_below.load(Ordering::Acquire) {
        // Acquire: the robust kernel's pointers were published before its bound.
        Segment::Robust
    } else {
        return Segment::Policy;
    };
    if hint == Hint::Auto || n < P.hinted_fast_below.load(Ordering::Relaxed) {
        seg
    } else {
        Segment::Policy
    }
}

/// The fast-path set kernel.
///
/// # Safety
/// Only after [`segment`] returned [`Segment::Fast`] for a set: a non-zero
/// `set_fast_below` was published (Release) after `set_fast_fn` was set to a `SetFn`
/// of an available kernel.
#[inline(always)]
unsafe fn fast_set() -> SetFn {
    // SAFETY: per the contract the pointer came from a `SetFn`.
    unsafe { core::mem::transmute::<*mut (), SetFn>(P.set_fast_fn.load(Ordering::Relaxed)) }
}

/// The first call of the process (nothing published yet): initialise, then run the
/// call with whatever got published (0 again if initialisation is under way on this
/// thread, which the inline ladder and the policy both handle). Out of line so that
/// the callers' fast paths stay leaf code (no registers saved around the init call).
#[cold]
#[inline(never)]
unsafe fn first_call(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize, hint: Hint) {
    profile();
    let f = P.features.load(Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe {
        match op {
            Op::Copy => copy_with(f, dst, src, n, hint),
            Op::Move => move_with(f, dst, src, n, hint),
            Op::Set | Op::Zero => set_with(f, dst, byte, n, hint),
        }
    }
}

/// `memcpy` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, ranges disjoint.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    let f = P.features.load(Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe {
        if f == 0 {
            return first_call(Op::Copy, dst, src, 0, n, hint);
        }
        copy_with(f, dst, src, n, hint)
    }
}

#[inline(always)]
unsafe fn copy_with(f: u32, dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= inline_limit(f) {
            return copy_inline(f, dst, src, n);
        }
        match segment(true, n, hint) {
            Segment::Fast => fast_copy(&P.copy_fast_fn)(dst, src, n),
            Segment::Robust => fast_copy(&P.copy_robust_fn)(dst, src, n),
            Segment::Rep => rep_copy(dst, src, n),
            Segment::Policy => by_policy(Op::Copy, dst, src, 0, n, hint),
        }
    }
}

/// The policy's path: choose (probing when the profile says so) and run. Out of line:
/// it is taken only above the fast path, where a call is a small share of the time.
#[inline(never)]
unsafe fn by_policy(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract; an overlapping move is flagged so the policy never
    // picks streaming stores for it.
    unsafe {
        let overlap = op == Op::Move && !disjoint(dst, src, n);
        let s = if matches!(op, Op::Copy | Op::Move) {
            src
        } else {
            core::ptr::null()
        };
        run(
            choose_for_call(op, dst, s, n, hint, overlap),
            op,
            dst,
            src,
            byte,
            n,
        )
    }
}

/// `memmove` with a hint.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
#[inline]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    let f = P.features.load(Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe {
        if f == 0 {
            return first_call(Op::Move, dst, src, 0, n, hint);
        }
        move_with(f, dst, src, n, hint)
    }
}

#[inline(always)]
unsafe fn move_with(f: u32, dst: *mut u8, src: *const u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract; inline rungs are overlap-safe.
    unsafe {
        if n <= inline_limit(f) {
            return copy_inline(f, dst, src, n);
        }
        match segment(true, n, hint) {
            Segment::Fast => fast_copy(&P.move_fast_fn)(dst, src, n),
            Segment::Robust => fast_copy(&P.move_robust_fn)(dst, src, n),
            Segment::Rep => rep_move(dst, src, n),
            Segment::Policy if !core::ptr::eq(dst, src) => {
                by_policy(Op::Move, dst, src, 0, n, hint)
            }
            Segment::Policy => {}
        }
    }
}

/// `memset` with a hint.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) {
    let f = P.features.load(Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe {
        if f == 0 {
            return first_call(Op::Set, dst, core::ptr::null(), byte, n, hint);
        }
        set_with(f, dst, byte, n, hint)
    }
}

#[inline(always)]
unsafe fn set_with(f: u32, dst: *mut u8, byte: u8, n: usize, hint: Hint) {
    // SAFETY: forwarded contract; the wide path runs only where the published mask has
    // its features.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if n <= SET_WIDE_MAX && wide_small(f) {
            return crate::arch::x86_64::masked::set_le2k(dst, byte, n);
        }
        if n <= SMALL_MAX {
            return set_le32(dst, byte, n);
        }
        #[cfg(target_arch = "x86_64")]
        if n <= INLINE_MAX {
            use crate::arch::generic::{set_short, Vector};
            use core::arch::x86_64::__m128i;
            return set_short::<__m128i>(dst, __m128i::splat(byte), n);
        }
        match segment(false, n, hint) {
            Segment::Fast => fast_set()(dst, byte, n),
            Segment::Rep => rep_set(dst, byte, n),
            Segment::Policy | Segment::Robust => {
                let op = if byte == 0 { Op::Zero } else { Op::Set };
                by_policy(op, dst, core::ptr::null(), byte, n, hint)
            }
        }
    }
}

/// The kernel a real call would run, decided exactly as [`copy`], [`move_`] and [`set`]
/// decide (inline ladder, fast path, forced kernel, probes when the profile enables
/// them, policy), for callers that must know what ran: the preload shim's tracer calls
/// this and then [`run_kernel`] with the answer, so that the kernel it records is the
/// one the call used, probes included. `None`: no kernel runs, because the inline
/// ladder handles the size (`n` up to [`inline_max`] for the op) or, above it, the call is a
/// move onto itself (which [`move_`] skips).
///
/// `op` is the op the kernel runs: `Zero` for a fill with byte 0 (what [`set`] does);
/// a move's overlap is computed here. Like a real call it may probe a line of
/// `src` and `dst` (a timed load that leaves the line cached), so decide once per
/// operation. Allocation-free and `memcpy`-free like every path here.
///
/// # Safety
/// `dst` valid for `n` reads; `src` null (set and zero) or valid for `n` reads.
pub unsafe fn decide_for_call(
    op: Op,
    dst: *const u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> Option<KernelId> {
    let copies = matches!(op, Op::Copy | Op::Move);
    if n <= inline_max(op) || (op == Op::Move && core::ptr::eq(dst, src)) {
        return None;
    }
    let (fast, rep) = if copies {
        (&P.copy_fast, KernelId::RepMovsb)
    } else {
        (&P.set_fast, KernelId::RepStosb)
    };
    match segment(copies, n, hint) {
        Segment::Fast => return Some(kernel_at(fast.load(Ordering::Relaxed))),
        Segment::Rep => return Some(rep),
        Segment::Robust => return Some(kernel_at(P.copy_robust.load(Ordering::Relaxed))),
        Segment::Policy => {}
    }
    let overlap = op == Op::Move && !disjoint(dst, src, n);
    let src = if copies { src } else { core::ptr::null() };
    // SAFETY: forwarded contract (one-byte reads inside the ranges).
    Some(unsafe { choose_for_call(op, dst, src, n, hint, overlap) })
}

/// Runs kernel `k` for `op` (the second half of a call whose kernel came from
/// [`decide_for_call`]). A kernel that lacks the op falls back to the portable one.
///
/// # Safety
/// As the op's C contract: `dst` valid for `n` writes, `src` (copy and move) valid for
/// `n` reads, ranges disjoint for `Copy`; `k`'s CPU features present (any kernel
/// [`decide_for_call`] returns qualifies).
pub unsafe fn run_kernel(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    // SAFETY: forwarded contract.
    unsafe { run(k, op, dst, src, byte, n) }
}
