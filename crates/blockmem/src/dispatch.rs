//! Entry points behind the public API: the inline size ladder, then one lookup in the
//! published [`Plan`], then a direct call to the kernel it names.
//!
//! ```text
//!   AVX-512BW + BMI2:  set n <= 64 one masked store, copy n < 16 one masked access,
//!                      n <= 64 two 16- or 32-byte ones; move n <= 512, copy n <= 2112
//!                      and set/zero n <= 2048 64-byte blocks (arch::x86_64::masked),
//!                      inline
//!   otherwise          n <= 32 scalar head/tail, n <= 128 SSE2 head/tail, inline
//!   above that         the plan's `unknown` row for the op's family and the hint:
//!                      find the band holding n; call its kernel through the entry
//!                      point stored in the band, or, in a probe band, time one load
//!                      of the destination (policy::probe_offset) and call the kernel
//!                      of the band holding n in the row of the state found, or, in a
//!                      recalling band, call the `cached` row's kernel if the page dst
//!                      starts in was written lately by such a call (`WRITTEN`), else
//!                      the band's own
//! ```
//!
//! The plan is compiled ([`policy::compile`]) from the table in use: the file named by
//! `BLOCKMEM_PROFILE` or found at the default path, else the built-in table of the CPU
//! class ([`crate::builtin`]), or one a program [`install`]s. It is published through
//! one pointer; a change of table, feature mask or forced kernel compiles a spare plan
//! and swaps the pointer. The table is loaded on the first call that needs the plan.
//! Nothing here allocates, locks or calls `memcpy`; every path is async-signal-safe and
//! works before any initialisation has run.

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::arch::all::small::{copy_le32, set_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::autoload::{self, Found, Source};
use crate::builtin::Class;
use crate::cpu::{self, Features};
use crate::kernel::{CopyFn, Hint, KernelId, Op, SetFn};
use crate::policy::{self, Plan, Step};
use crate::profile::{self, ErrorKind, Family, ProfileError, State, Table};

/// Plans to compile into, in turn: a plan is rewritten only after three newer ones
/// were published, so a call that loaded the pointer just before a swap finds its plan
/// intact (and if several installs raced one call, every value it reads is still a
/// valid kernel for its op; see [`Plan`]).
static PLANS: [Plan; 4] = [
    Plan::UNCOMPILED,
    Plan::UNCOMPILED,
    Plan::UNCOMPILED,
    Plan::UNCOMPILED,
];
static NEXT_PLAN: AtomicUsize = AtomicUsize::new(0);
/// The published plan (null until the first initialisation).
static CURRENT: AtomicPtr<Plan> = AtomicPtr::new(core::ptr::null_mut());
/// Which inline path the entries take under the feature mask in force: 0 before a plan
/// is published, [`SMALL_WIDE`] where [`wide_small`] holds, [`SMALL_NARROW`] otherwise.
/// Read on every call (see [`small_path`]).
static SMALL: AtomicU8 = AtomicU8::new(0);
const SMALL_WIDE: u8 = 1;
const SMALL_NARROW: u8 = 2;
/// 0 = not initialised, 1 = a caller is initialising, 2 = published.
static STATE: AtomicU8 = AtomicU8::new(0);
/// 0 = no forced kernel, else KernelId as u8 + 1.
static FORCED: AtomicU8 = AtomicU8::new(0);
/// The table in use (a built-in static, or one of [`TABLES`]).
static TABLE: AtomicPtr<Table> = AtomicPtr::new(core::ptr::null_mut());
static SOURCE: AtomicU8 = AtomicU8::new(0);
// The last profile error: 0 = none, else 1 + index in `ErrorKind::ALL`.
static ERROR_KIND: AtomicUsize = AtomicUsize::new(0);
static ERROR_LINE: AtomicUsize = AtomicUsize::new(0);
static ERROR_VERSION: AtomicUsize = AtomicUsize::new(0);

/// Storage for tables read from a file or installed, used in turn (like [`PLANS`]).
/// Only the holder of [`LOADING`] writes one, and never the one in use.
struct TableBuf(core::cell::UnsafeCell<Table>);
// SAFETY: written only under `LOADING`, never while published (see `next_table_buf`).
unsafe impl Sync for TableBuf {}
static TABLES: [TableBuf; 3] = [
    TableBuf(core::cell::UnsafeCell::new(Table::uniform(
        KernelId::Portable,
        0,
    ))),
    TableBuf(core::cell::UnsafeCell::new(Table::uniform(
        KernelId::Portable,
        0,
    ))),
    TableBuf(core::cell::UnsafeCell::new(Table::uniform(
        KernelId::Portable,
        0,
    ))),
];
static NEXT_TABLE: AtomicUsize = AtomicUsize::new(0);
/// Held while a table buffer or the file buffer is written.
static LOADING: AtomicBool = AtomicBool::new(false);

/// The loader's file buffer. Static rather than on the stack: the first operation that
/// needs the plan may run in a signal handler on a small alternate stack (SIGSTKSZ is
/// 8 KiB), and this buffer alone is 16 KiB. Only the holder of `LOADING` touches it.
struct LoadBuf(core::cell::UnsafeCell<[u8; autoload::MAX_PROFILE_BYTES]>);
// SAFETY: the buffer is only accessed by the thread that set `LOADING` (see load_now).
unsafe impl Sync for LoadBuf {}
static LOAD_BUF: LoadBuf = LoadBuf(core::cell::UnsafeCell::new(
    [0; autoload::MAX_PROFILE_BYTES],
));

/// A table buffer that is not the one in use. Caller holds `LOADING`.
fn next_table_buf() -> *mut Table {
    loop {
        let i = NEXT_TABLE.fetch_add(1, Ordering::Relaxed) % TABLES.len();
        let p = TABLES[i].0.get();
        if !core::ptr::eq(p, TABLE.load(Ordering::Relaxed)) {
            return p;
        }
    }
}

/// Takes `LOADING` (spinning while another loader or installer holds it: neither is
/// ever on an operation's path once a plan is published).
fn lock_loading() {
    while LOADING
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
}

fn unlock_loading() {
    LOADING.store(false, Ordering::Release);
}

/// The LLC size a table without a measured one (a built-in table) runs with: the
/// CPUID estimate, which [`policy::Plan::llc_effective`] asks for on first use.
pub(crate) fn llc_default() -> usize {
    cpu::llc_estimate(cpu::used_caches().llc.size, autoload::cpus_available())
}

/// Compiles the table in use for the current features and forced kernel into a spare
/// plan and publishes it (called whenever one of them changes).
fn recompile() {
    let t = TABLE.load(Ordering::Acquire);
    if t.is_null() {
        return;
    }
    let f = cpu::features();
    let slot = &PLANS[NEXT_PLAN.fetch_add(1, Ordering::Relaxed) % PLANS.len()];
    // SAFETY: `TABLE` only ever holds a built-in static or a table buffer that is not
    // rewritten while in use.
    let table = unsafe { &*t };
    // No LLC estimate here: the plan works it out when a call first needs it.
    policy::compile(table, f, forced(), 0, slot);
    CURRENT.store(slot as *const Plan as *mut Plan, Ordering::Release);
    let path = if wide_small(f.bits()) {
        SMALL_WIDE
    } else {
        SMALL_NARROW
    };
    SMALL.store(path, Ordering::Release);
}

fn publish(t: *const Table, source: Source) {
    TABLE.store(t as *mut Table, Ordering::Release);
    SOURCE.store(source as u8, Ordering::Relaxed);
    recompile();
    STATE.store(2, Ordering::Release);
}

/// The published plan, initialising on first use.
#[inline]
pub fn plan() -> &'static Plan {
    let p = CURRENT.load(Ordering::Acquire);
    if p.is_null() {
        init();
        return current_or_fallback();
    }
    // SAFETY: `CURRENT` only ever holds one of the static `PLANS`.
    unsafe { &*p }
}

/// The plan after an initialisation attempt: a re-entered call (a signal handler, a
/// compiler-inserted copy recursing through the shim) that finds none published yet
/// gets an uncompiled plan, whose every band probes; [`step_or_portable`] runs such
/// calls with the portable kernel.
fn current_or_fallback() -> &'static Plan {
    let p = CURRENT.load(Ordering::Acquire);
    if p.is_null() {
        static EMPTY: Plan = Plan::UNCOMPILED;
        return &EMPTY;
    }
    // SAFETY: as in `plan`.
    unsafe { &*p }
}

/// The table in use (loaded on first call: see the module docs).
pub fn table() -> &'static Table {
    plan();
    let t = TABLE.load(Ordering::Acquire);
    if t.is_null() {
        return Class::Baseline.table();
    }
    // SAFETY: as in `recompile`.
    unsafe { &*t }
}

/// The CPU class whose built-in table serves rows a profile does not give.
pub fn builtin_class() -> Class {
    Class::of(cpu::features(), cpu::family())
}

fn record_error(e: Option<ProfileError>) {
    let Some(e) = e else {
        ERROR_KIND.store(0, Ordering::Relaxed);
        return;
    };
    let mut code = 0;
    let mut version = 0;
    let mut i = 0;
    while i < ErrorKind::ALL.len() {
        let same = match (ErrorKind::ALL[i], e.kind) {
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

/// Loads the table once. Re-entrant calls (a signal handler, another thread, or a
/// compiler-inserted `memcpy` recursing through the shim) return at once: they run on
/// the plan published by then, or on the portable kernel. True if this call loaded.
fn init() -> bool {
    let first = STATE
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok();
    if first {
        load_now();
    }
    first
}

fn load_now() {
    if LOADING.swap(true, Ordering::Acquire) {
        // Another load is reading the file (a `reload` racing the first use): publish
        // the built-in table so nothing waits; that load publishes the file's after.
        publish(builtin_class().table(), Source::Defaults);
        return;
    }
    load_locked();
    unlock_loading();
}

/// Reads the profile file (or takes the built-in table) and publishes it. The caller
/// holds `LOADING`.
fn load_locked() {
    let builtin: *const Table = builtin_class().table();
    let base = LOAD_BUF.0.get() as *mut u8;
    // SAFETY: `LOADING` gives this thread sole use of the buffer, valid for
    // MAX_PROFILE_BYTES writes; `find` initialises the first `len` bytes it reports,
    // and only those are read.
    let (table, source, error) = match unsafe { autoload::find(base) } {
        Found::Nothing => (builtin, Source::Defaults, None),
        Found::Secure => (builtin, Source::Secure, None),
        Found::Error(src, e) => (builtin, src, Some(e)),
        Found::Bytes(src, len) => {
            let out = next_table_buf();
            // SAFETY: `out` is a table buffer not in use, written only under
            // `LOADING`; the file's bytes are initialised (see above).
            let parsed = unsafe {
                (*out).copy_from(&*builtin);
                profile::parse_into(core::slice::from_raw_parts(base, len), &mut *out)
            };
            match parsed {
                Ok(_) => (out as *const Table, src, None),
                Err(e) => (builtin, src, Some(e)),
            }
        }
    };
    record_error(error);
    publish(table, source);
}

/// Installs a table for the whole process (replacing the loaded one): it is copied, so
/// the caller keeps its own. Its `llc_effective` of 0 means "the CPUID estimate".
pub fn install(t: &Table) {
    plan();
    lock_loading();
    let out = next_table_buf();
    // SAFETY: `out` is a table buffer not in use, written only under `LOADING`.
    unsafe { (*out).copy_from(t) };
    record_error(None);
    publish(out, Source::Installed);
    unlock_loading();
}

/// Loads the profile again from `BLOCKMEM_PROFILE` or the default path (after
/// `blockmem calibrate` wrote a new one, say) and returns what [`status`] then says.
pub fn reload() -> (Source, Option<ProfileError>) {
    // Nothing loaded yet: this first load reads the file now, so once is enough (the
    // shim's constructor calls this in every process it starts).
    if init() {
        return status();
    }
    plan();
    lock_loading();
    load_locked();
    unlock_loading();
    status()
}

/// Where the table in use came from, and the error of a rejected profile file (the
/// library then runs on the built-in table).
pub fn status() -> (Source, Option<ProfileError>) {
    plan();
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
            let kind = match ErrorKind::ALL[(code - 1).min(ErrorKind::ALL.len() - 1)] {
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
/// restores the table). Ops the kernel lacks, or a kernel this CPU cannot run, keep
/// using the table. This is what `BLOCKMEM_FORCE` sets.
pub fn force(kernel: Option<KernelId>) {
    FORCED.store(kernel.map_or(0, |k| k as u8 + 1), Ordering::Relaxed);
    plan();
    recompile();
}

/// The forced kernel, if any.
pub fn forced() -> Option<KernelId> {
    match FORCED.load(Ordering::Relaxed) {
        0 => None,
        v => KernelId::ALL.get(v as usize - 1).copied(),
    }
}

/// Masks CPU features off for the whole process (replacing any earlier mask): kernels
/// that need them become unavailable and the plan is recompiled without them. Masking
/// AVX also masks AVX2 and AVX-512. Tests use it to prove the portable path and to
/// emulate smaller hosts; `Features::NONE` clears the mask.
pub fn mask_features(f: Features) {
    cpu::set_masked(f);
    plan();
    recompile();
}

/// The kernel a call above the inline ladder runs, given what a probe of its
/// destination found (`State::Unknown`: not probed); `None` where the band probes and
/// no state is given. What `blockmem info` prints.
pub fn choose_probed(op: Op, n: usize, hint: Hint, overlap: bool, dst: State) -> Option<KernelId> {
    plan().decide(op, n, hint, overlap, dst)
}

/// The kernel a call above the inline ladder runs without probing, `None` where its
/// band probes.
pub fn choose(op: Op, n: usize, hint: Hint, overlap: bool) -> Option<KernelId> {
    choose_probed(op, n, hint, overlap, State::Unknown)
}

/// The state of a block from one timed load of its middle line, or past the LLC of a
/// line half the LLC from its end ([`policy::probe_offset`]), after an untimed load
/// 2 KiB away in the same page fills the TLB and tells a fresh page by its fault (see
/// `probe::mate_then_load_cycles`).
///
/// # Safety
/// `b` valid for `n` one-byte reads, `n >= 4096`.
#[inline]
unsafe fn probe_block(b: *const u8, n: usize, plan: &Plan) -> State {
    debug_assert!(n >= policy::PROBE_MIN_BYTES);
    let o = policy::probe_offset(n, plan.llc_effective());
    // The page before the probed line's, or after it, whichever lies in the block.
    let neighbour = if o >= 4096 {
        Some(o - 4096)
    } else if o + 4096 < n {
        Some(o + 4096)
    } else {
        None
    };
    // SAFETY: probe_offset(n, _) < n for n >= 4096 and the neighbour is inside the
    // block; the page mate needs no more (see probe::mate_then_load_cycles).
    unsafe {
        crate::probe::probe(
            b.add(o),
            neighbour.map(|x| b.add(x)),
            plan.probe_hit_max(),
            plan.probe_fault_min(),
        )
    }
}

/// The state a call's probe found: `Cached` without a probe for an overlapping move
/// (its destination is read as its source), and for a block too small to probe.
///
/// # Safety
/// `dst` valid for `n` one-byte reads.
#[inline]
unsafe fn probed_state(plan: &Plan, op: Op, dst: *const u8, src: *const u8, n: usize) -> State {
    if n < policy::PROBE_MIN_BYTES || (op == Op::Move && !disjoint(dst as *mut u8, src, n)) {
        return State::Cached;
    }
    // SAFETY: forwarded contract, n >= 4096.
    unsafe { probe_block(dst, n, plan) }
}

/// The kernel of a call whose `unknown` band has no entry point for the hot path: a
/// band that recalls ([`recalled`]), else one that probes, after probing; a
/// destination this process streamed lately and meets again gets a temporal kernel
/// instead (see [`STREAMED`]).
///
/// # Safety
/// As [`probed_state`].
unsafe fn after_probe(
    plan: &Plan,
    op: Op,
    dst: *const u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> (KernelId, *mut ()) {
    let second = matches!(op, Op::Move | Op::Zero);
    if let Step::Recall(k) = plan
        .row(Family::of(op), hint, State::Unknown)
        .step(n, second)
    {
        return recalled(plan, op, dst, n, hint, k);
    }
    // SAFETY: forwarded contract.
    let state = unsafe { probed_state(plan, op, dst, src, n) };
    let (k, f) = step_or_portable(plan, op, n, hint, state);
    let max = plan.loop_temporal_max(op);
    if !keeps_streamed(k, hint, n, max, forced().is_some()) {
        return (k, f);
    }
    let now = tsc();
    if met_again(dst as usize, now, streamed_window(plan.llc_effective(), n)) {
        return temporal_instead(plan, op, n, hint);
    }
    remember_streamed(dst as usize, now);
    (k, f)
}

/// The time-stamp counter (0 where there is none: there the probe never finds a block
/// cold, and nothing is remembered).
#[inline]
fn tsc() -> usize {
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

/// The kernel of a call in a band that recalls ([`Step::Recall`]), whose `unknown` row
/// runs `k`: the `cached` row's kernel where the page `dst` starts in was written by a
/// call of such a band lately ([`written_lately`]), else `k`. Either way the
/// page is remembered ([`WRITTEN`]) as written now.
fn recalled(
    plan: &Plan,
    op: Op,
    dst: *const u8,
    n: usize,
    hint: Hint,
    k: KernelId,
) -> (KernelId, *mut ()) {
    if written_lately(dst as usize, n, tsc) {
        let (c, f) = step_or_portable(plan, op, n, hint, State::Cached);
        if !c.streams() {
            return (c, f);
        }
    }
    (k, entry_of(k, op))
}

/// The entry point of kernel `k` for `op` (the portable kernel's where `k` lacks it,
/// which a compiled plan never names).
fn entry_of(k: KernelId, op: Op) -> *mut () {
    match crate::kernel::entry_for(k, op) {
        Some(f) => f,
        None => crate::kernel::entry_for(KernelId::Portable, op).unwrap_or(core::ptr::null_mut()),
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

/// The pages that calls of recalling bands ([`Step::Recall`]) started in lately, for
/// the process: a set-associative table of [`WRITTEN_SETS`] sets of [`WRITTEN_WAYS`]
/// pages, the set chosen by the calling thread's stack (which megabyte it lies in), the
/// way by the page.
///
/// Why: below the sizes where a probe pays, a call cannot tell a destination in cache
/// from one in memory, and the kernel that wins on one loses on the other. On a 2-vCPU
/// AMD EPYC 9005 (Zen 5) KVM guest, a 4 KiB-1 MiB set with `rep stosb` ran at glibc's
/// speed on both (glibc runs it too), where 32-byte stores ran 1.1-1.8x as fast on a
/// block in the L1 or L2 cache (`scripts/workloads/set_loops.c`: a 4 KiB set again and
/// again 40 TSC ticks against 71, 16 KiB 158 against 261, 512 KiB 5,261 against 7,884;
/// 1 MiB 19,952 against 15,956) and 0.5-1.0x as fast on one in memory. A
/// destination written by the call before, or a few calls before, is in cache: a
/// program setting one buffer again and again, or reusing a freed heap block at once.
/// So a recalling band runs the `unknown` row's kernel (the one for a destination
/// nobody knows) unless the page the call starts in was written by such a call lately,
/// and then the `cached` row's. Lately: see [`written_lately`] and [`written_window`].
///
/// Each thread mostly keeps to its own set (threads' stacks lie megabytes apart), so
/// threads setting their own blocks do not take each other's lines on every call. The
/// first call on a page stores it without a time (no time-stamp read on calls at new
/// addresses: scattered calls pay one load and two stores); the second stores the
/// time; from the third on, a call within the window finds it written lately. Races
/// between threads lose or repeat an entry: a wrong guess costs one call the other
/// kernel, never correctness.
static WRITTEN: [WrittenSet; WRITTEN_SETS] = [const {
    WrittenSet {
        page: [const { AtomicUsize::new(0) }; WRITTEN_WAYS],
        at: [const { AtomicUsize::new(0) }; WRITTEN_WAYS],
    }
}; WRITTEN_SETS];

/// How long (time-stamp counter ticks) after a check a page written by a recalling
/// call of `n` bytes still counts as written lately ([`written_lately`]): 4,096 ticks
/// (about what a core takes to read 128 KiB at 32 bytes a tick: too little to push a
/// block out of a 1-2 MiB L2 cache) plus `n / 4`, the time sixteen calls take at 64
/// bytes a tick (the trusted calls between two checks, in a loop on one block: 4 KiB
/// sets in cache ran at 100 bytes a tick, 512 KiB at 100, on the Zen 5 guest below).
/// Once the block has left the L2, 32-byte stores lose to `rep stosb`: on a 2-vCPU AMD
/// EPYC Zen 5 KVM guest (`scripts/workloads/set_loops.c after`, medians of 15) a 64 KiB
/// set after a 2 MiB read took 2,106 ticks with them against 1,534, 16 KiB 1,222
/// against 572, 4 KiB 286 either way.
/// 4 KiB: 5,120 ticks, 2 us at a 2.6 GHz counter; a loop on one buffer comes back
/// within a few hundred.
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
/// checked, and a check is needed only every sixteenth call on it: a
/// time-stamp read costs about 24 TSC ticks (2-vCPU AMD EPYC Zen 5 KVM guest), a third
/// of a 4 KiB set, and a loop on one buffer would pay it on every call. A page found
/// written lately trusts that for the next fifteen calls on it (its count
/// kept in the time's low bits); one found written long ago, or not yet timed, is
/// checked again on the next call. So a block met again only after a long while (the
/// lab's cold cells that read other data between two calls) is never trusted, and a
/// block evicted between two calls of a loop that was trusting it costs at most that
/// many calls the cached row's kernel: a block leaves the cache only once the program
/// (or the machine) has read far more than it, which takes longer than those calls
/// lose. What the memory cannot see is `clflush`: the policy grid's clean 4 KiB zero
/// cell, which flushes the block within the window of the last call on it, ran at
/// 0.94-1.00x glibc's speed (1.00x before), on the Zen 5 guest.
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
/// each time found cold because of the last: calibration measures one call, where
/// streaming to a cold destination wins even when the bytes are read back, not the
/// next call that finds the block where this one left it. CPython building
/// `n.to_bytes(8) + payload` with a 1 MiB payload, 1,250 times
/// (`scripts/workloads/reused_bytes.py`), took 1.13-1.15x glibc's time under a
/// calibrated table that streams cold blocks from 64 KiB (on a 2-vCPU AMD EPYC (Zen 4)
/// KVM guest: 886-1,029 of its 1,296 large copies streamed, the destination a heap
/// block freed and reused by the next iteration); with this memory, 0.99-1.02x (at
/// most six streamed, the block found cached after).
///
/// So such a block, met again cold within [`streamed_window`] of the last call on it,
/// is written with temporal stores, which leave it cached for the time after, and is
/// remembered as long as it keeps coming back that soon: a probe that misreads the
/// cached block as cold once (an LLC hit behind a page walk can look like memory) does
/// not stream it again. A block streamed once and not met again keeps the stream's
/// gains, and so does one met again only later (other work may have evicted it
/// meanwhile: the lab's cold cells, which flush their destination and read three
/// effective LLCs of other data between two calls on the same block, keep streaming).
/// Races between threads lose or repeat an entry: a wrong guess costs one call the
/// other kernel, never correctness.
static STREAMED: [AtomicUsize; STREAMED_SLOTS] = [const { AtomicUsize::new(0) }; STREAMED_SLOTS];
/// When each entry of [`STREAMED`] was last met (time-stamp counter, its low bits
/// where `usize` is narrower: only differences under [`streamed_window`] matter).
static STREAMED_AT: [AtomicUsize; STREAMED_SLOTS] = [const { AtomicUsize::new(0) }; STREAMED_SLOTS];
static STREAMED_NEXT: AtomicUsize = AtomicUsize::new(0);

/// How long (time-stamp counter ticks) a streamed block of `n` bytes stays
/// remembered after a call on it was decided, for an effective LLC of `llc` bytes: the
/// time that call takes at 4 bytes a tick (10 GB/s at a 2.6 GHz counter; a copy into
/// an evicted block ran at 7-11 bytes a tick on the guest below), plus the time one
/// core takes to read the rest of an LLC's worth of other data, `llc - n` bytes, at 32
/// bytes a tick (about as fast as a core reads from its L3). A block met again sooner
/// would most likely still be cached had it been written there; one met later may have
/// been evicted by other work, and is streamed again. On a 2-vCPU AMD EPYC (Zen 4) KVM
/// guest (8.8 MiB effective LLC, 2.6 GHz counter), for 1 MiB: 0.52 M ticks, 0.2 ms;
/// CPython's loop above met its block about every 50 us, and a loop of 2 MiB copies
/// every 76-117 us, which a window without the call's own time (85 us) sometimes
/// missed. The lab's cold cells, which flush the block and read three effective LLCs
/// of other data between two calls on it, met it too late in every call (with a fixed
/// window of 4 M ticks, 1.6 ms, the 256 KiB cells wrote temporally and `auto` fell from
/// 1.41x libc to 0.99x there, hot source to evicted destination).
pub const fn streamed_window(llc: usize, n: usize) -> usize {
    n / 4 + llc.saturating_sub(n) / 32
}

/// Whether a probed call that is to run `k` takes part in the memory of streamed
/// blocks ([`met_again`], [`remember_streamed`]): `k` streams, the caller did not say
/// the destination will not be reused, no kernel is forced, and the block is at most
/// `max` bytes, the table's `copy.` or `set.loop_temporal_max` for the call's op: the
/// largest block that copying into (setting) again and again ran faster with temporal
/// stores than streamed, as calibration measures it (the lab's `reuse` loop cells; in
/// the built-in tables 1 MiB for copies, half the effective LLC for sets). Where that
/// ends is the host's: on a 2-vCPU AMD EPYC (Zen 4) KVM guest (9-13 MiB effective LLC)
/// temporal stores ran such a loop 1.7-1.9x as fast as streaming at 4 MiB in three
/// runs of four, level at 8 MiB, slower from 16 MiB; on a 16-vCPU Intel Xeon (family
/// 6, model 0xcf) KVM guest (11-16 MiB effective LLC, 2 MiB L2) streaming won from 2
/// MiB (1.5x at 2 MiB, 1.2x at 4 MiB, 1.2x at 8 MiB), and a fixed bound of half the
/// effective LLC, which suits the EPYC, wrote blocks of up to 8 MiB temporally (the
/// lab's `auto` at 0.86-0.97x glibc's time in those loops).
pub fn keeps_streamed(k: KernelId, hint: Hint, n: usize, max: usize, forced: bool) -> bool {
    k.streams() && hint != Hint::NoReuse && !forced && n <= max
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

/// The temporal kernel a probed call runs instead of streaming a block it streamed
/// lately: the `cached` row's, as for a block found in cache, unless that one streams
/// too, then the widest temporal kernel.
fn temporal_instead(plan: &Plan, op: Op, n: usize, hint: Hint) -> (KernelId, *mut ()) {
    let (k, f) = step_or_portable(plan, op, n, hint, State::Cached);
    if !k.streams() {
        return (k, f);
    }
    let k = policy::best_temporal(plan.features(), op);
    let f = crate::kernel::entry_for(k, op).unwrap_or(core::ptr::null_mut());
    (k, f)
}

/// The kernel and entry point of the band holding `n` in the row of `state`; the
/// portable kernel if that band would probe (an uncompiled plan, or one torn by racing
/// installs: never a known-state row of a compiled plan).
fn step_or_portable(
    plan: &Plan,
    op: Op,
    n: usize,
    hint: Hint,
    state: State,
) -> (KernelId, *mut ()) {
    let second = matches!(op, Op::Move | Op::Zero);
    match plan.row(Family::of(op), hint, state).step(n, second) {
        Step::Run(k, f) => (k, f),
        // Only `unknown` rows recall (`first_call`): the band's own kernel.
        Step::Recall(k) => (k, entry_of(k, op)),
        Step::Probe => (KernelId::Portable, entry_of(KernelId::Portable, op)),
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
unsafe fn run(k: KernelId, op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) -> *mut u8 {
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

/// Largest size the x86-64 inline SSE2 rung handles (8 × 16 bytes).
#[cfg(target_arch = "x86_64")]
const INLINE_MAX: usize = 128;
#[cfg(not(target_arch = "x86_64"))]
const INLINE_MAX: usize = SMALL_MAX;

/// True if the published feature mask has AVX-512BW and BMI2 (not masked off): then
/// every entry handles copies up to [`COPY_WIDE_MAX`] bytes (moves up to [`WIDE_MAX`],
/// or further when the ranges are disjoint) and sets up to [`SET_WIDE_MAX`] inline with
/// the masked and 64-byte paths of `arch::x86_64::masked`. With sizes that vary call to
/// call they avoid the ladder's mispredictions (which cost twice glibc's masked
/// memset's time on the fleetbench memset distribution) and the indirect call into a
/// kernel (twice glibc's time at 200–512 bytes).
#[inline(always)]
fn wide_small(f: u32) -> bool {
    let need = Features::AVX512BW.union(Features::BMI2).bits();
    f & need == need
}

/// Largest sizes the inline path handles with AVX-512: any copy or move up to
/// `WIDE_MAX` (every load before the first store), a copy of disjoint ranges up to
/// `COPY_WIDE_MAX` (a 256-byte loop), a set or zero up to `SET_WIDE_MAX`.
#[cfg(target_arch = "x86_64")]
const WIDE_MAX: usize = crate::arch::x86_64::masked::WIDE_MAX;
#[cfg(target_arch = "x86_64")]
const COPY_WIDE_MAX: usize = crate::arch::x86_64::masked::COPY_WIDE_MAX;
#[cfg(target_arch = "x86_64")]
const SET_WIDE_MAX: usize = crate::arch::x86_64::masked::SET_WIDE_MAX;
#[cfg(not(target_arch = "x86_64"))]
const WIDE_MAX: usize = INLINE_MAX;
#[cfg(not(target_arch = "x86_64"))]
const COPY_WIDE_MAX: usize = INLINE_MAX;
#[cfg(not(target_arch = "x86_64"))]
const SET_WIDE_MAX: usize = INLINE_MAX;

/// Largest size [`copy`], [`move_`] and [`set`] handle for `op` inline, without a
/// kernel: where AVX-512BW and BMI2 are in force 2112 bytes for copy, 2048 for set and
/// zero and 512 for move (a move of disjoint ranges stays inline up to 2112 too: see
/// `runs_inline`), else 128 (64 on targets other than x86-64).
pub fn inline_max(op: Op) -> usize {
    if small_path() == 0 {
        plan();
    }
    match (small_path() == SMALL_WIDE, op) {
        (false, _) => INLINE_MAX,
        (true, Op::Copy) => COPY_WIDE_MAX,
        (true, Op::Move) => WIDE_MAX,
        (true, Op::Set | Op::Zero) => SET_WIDE_MAX,
    }
}

/// True if a call of `op` on these ranges runs inline, without a kernel.
fn runs_inline(op: Op, dst: *const u8, src: *const u8, n: usize) -> bool {
    n <= inline_max(op)
        || (op == Op::Move && n <= inline_max(Op::Copy) && disjoint(dst as *mut u8, src, n))
}

/// Returns `p` through an empty `asm!`, so that the optimiser cannot infer that a
/// function returns its first argument: it would then keep that argument in a saved
/// register across the call and return it itself, turning each C entry's tail jump
/// into a call with a stack frame.
#[inline(always)]
#[allow(clippy::pointers_in_nomem_asm_block)] // the pointer is passed through, not used
fn opaque(mut p: *mut u8) -> *mut u8 {
    // SAFETY: an empty template; `p` passes through a register unchanged.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) p, options(nomem, nostack, preserves_flags))
    };
    p
}

/// [`SMALL`]: one byte load and a compare before the size test, rather than the feature
/// mask and a test of two of its bits (a Rust program that inlines [`copy`] reaches a
/// static of this crate through its GOT, as a shared object does, so either costs a
/// load of the address first). Every instruction of a small call counts, on cold lines
/// too: the calls a core keeps in flight, and so their misses, fall with the
/// instructions each takes. (A `rip`-relative read in inline assembly would save the
/// GOT load, but code inlined into a Rust `dylib` cannot refer to the static that way:
/// the linker refuses the relocation.)
#[inline(always)]
fn small_path() -> u8 {
    SMALL.load(Ordering::Relaxed)
}

/// What a copy entry may assume about its ranges (the `K` of [`copy_entry`]).
const DISJOINT: u8 = 0;
/// The ranges may overlap: memmove.
const MOVE: u8 = 1;
/// The ranges should not overlap but might: the shim's `memcpy`, which copies
/// overlapping ranges as a move (see the preload crate's docs).
const FORGIVE: u8 = 2;

/// The entry every door shares (the Rust API, the C ABI, the preload shim's
/// `memcpy`/`memmove`): one relaxed load of [`SMALL`], then, with AVX-512BW,
/// a jump to [`copy_wide`], which holds the masked and 64-byte paths inline; without,
/// the SSE2 ladder up to [`INLINE_MAX`]. Above the inline sizes, [`copy_large`]: the
/// plan. Returns `dst`, so that a C entry ends in a tail jump.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; disjoint ranges when `K` is
/// [`DISJOINT`].
#[inline(always)]
unsafe fn copy_entry<const K: u8>(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    let path = small_path();
    // SAFETY: forwarded contract; the wide path runs only where the published mask has
    // its features; the ladder's rungs are overlap-safe and need only SSE2.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if path == SMALL_WIDE {
            return copy_wide_inline::<K>(dst, src, n, hint);
        }
        if n <= INLINE_MAX {
            if path == 0 {
                return first_small(Op::Copy, dst, src, 0, n);
            }
            copy_narrow(dst, src, n);
            return dst;
        }
        copy_large::<K>(dst, src, n, hint)
    }
}

/// The SSE2 ladder (x86-64) or the scalar one: `n <= INLINE_MAX`, overlap-safe.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn copy_narrow(dst: *mut u8, src: *const u8, n: usize) {
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

/// The narrow ladder for a set (`n <= INLINE_MAX`).
///
/// # Safety
/// `dst` valid for `n` writes, `n <= INLINE_MAX`.
#[inline(always)]
unsafe fn set_narrow(dst: *mut u8, byte: u8, n: usize) {
    // SAFETY: as `copy_narrow`.
    unsafe {
        if n <= SMALL_MAX {
            return set_le32(dst, byte, n);
        }
        #[cfg(target_arch = "x86_64")]
        {
            use crate::arch::generic::{set_short, Vector};
            use core::arch::x86_64::__m128i;
            set_short::<__m128i>(dst, __m128i::splat(byte), n);
        }
    }
}

/// The first small call of a process ([`SMALL`] still 0): publish a plan, so that
/// later calls take the path of the CPU, and run this one on the narrow ladder (which
/// every x86-64 CPU runs, and which cannot recurse into an initialisation).
#[cold]
#[inline(never)]
unsafe fn first_small(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize) -> *mut u8 {
    plan();
    // SAFETY: forwarded contract, n <= INLINE_MAX.
    unsafe {
        match op {
            Op::Copy | Op::Move => copy_narrow(dst, src, n),
            Op::Set | Op::Zero => set_narrow(dst, byte, n),
        }
    }
    dst
}

/// The AVX-512 path of [`copy_entry`] as the caller's own code: up to 512 bytes the
/// register-explicit assembly of `masked::copy_le512` (no `#[target_feature]`, so it
/// inlines anywhere), above it a jump to [`copy_wide`].
///
/// # Safety
/// As [`copy_wide`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_wide_inline<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    use crate::arch::x86_64::masked;
    // SAFETY: forwarded contract. Above 128 bytes first, then up to 64, as the C
    // entries (where sizes come at random, fewer mispredicted tests:
    // `arch::x86_64::entry`).
    unsafe {
        if n > 2 * masked::MAX {
            if n <= WIDE_MAX {
                masked::copy_65_512(dst, src, n);
                return dst;
            }
            return copy_wide::<K>(dst, src, n, hint);
        }
        if n <= masked::MAX {
            masked::copy_le64(dst, src, n);
            return dst;
        }
        masked::copy_65_512(dst, src, n);
        dst
    }
}

/// The AVX-512 path of [`set_entry`] as the caller's own code (see
/// [`copy_wide_inline`]).
///
/// # Safety
/// As [`set_wide`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn set_wide_inline(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    use crate::arch::x86_64::masked;
    // SAFETY: forwarded contract. Above 128 bytes first, as the C entries' sets (where
    // sizes come at random, fewer mispredicted tests: `arch::x86_64::entry`); then one
    // compare takes 1..=64 (a zero-byte set goes to `set_wide`, which returns without a
    // store).
    unsafe {
        if n > 2 * masked::MAX {
            if n <= WIDE_MAX {
                masked::set_65_512(dst, byte, n);
                return dst;
            }
            return set_wide(dst, byte, n, hint);
        }
        if n.wrapping_sub(1) < masked::MAX {
            masked::set_masked(dst, byte, n);
            return dst;
        }
        if n > masked::MAX {
            masked::set_65_512(dst, byte, n);
            return dst;
        }
        set_wide(dst, byte, n, hint)
    }
}

/// [`copy_entry`] on a CPU with AVX-512BW and BMI2: up to 512 bytes one to eight
/// 64-byte accesses, every load first (a move); up to 2112 the 256-byte loop of
/// `masked::copy_le2k` when the ranges are disjoint; else the plan.
///
/// # Safety
/// As [`copy_entry`]; AVX-512F/BW/VL and BMI2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
unsafe extern "C" fn copy_wide<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    use crate::arch::x86_64::masked;
    // SAFETY: forwarded contract; `copy_le2k` gets disjoint ranges only.
    unsafe {
        if n <= WIDE_MAX {
            masked::copy_le512(dst, src, n);
            return opaque(dst);
        }
        if n <= COPY_WIDE_MAX && (K == DISJOINT || disjoint(dst, src, n)) {
            masked::copy_le2k(dst, src, n);
            return opaque(dst);
        }
        copy_large::<K>(dst, src, n, hint)
    }
}

/// A copy or move above the inline sizes: the row of the plan for the hint, then the
/// band's kernel, or a probe where the band probes.
///
/// # Safety
/// As [`copy_entry`].
#[inline(never)]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
unsafe extern "C" fn copy_large<const K: u8>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    let op = match K {
        DISJOINT => Op::Copy,
        MOVE => Op::Move,
        _ if disjoint(dst, src, n) => Op::Copy,
        _ => Op::Move,
    };
    if op == Op::Move && core::ptr::eq(dst, src) {
        return dst;
    }
    // SAFETY: forwarded contract; every move kernel is overlap-safe (the streaming ones
    // store temporally when the ranges overlap).
    unsafe {
        let Some(plan) = published() else {
            first_call(op, dst, src, 0, n, hint);
            return dst;
        };
        // Auto: the band and, where it recalls, its recall in one search (as the C
        // entries above their inline sizes).
        let entry = if hint == Hint::Auto {
            auto_entry(Family::Copy, n, op == Op::Move, dst)
        } else {
            plan.row(Family::Copy, hint, State::Unknown)
                .entry(n, op == Op::Move)
        };
        if entry.is_null() {
            return copy_by_probe(plan, op, dst, src, n, hint);
        }
        // The kernel returns `dst`: a jump (see `kernel::CopyFn`).
        as_copy(entry)(dst, src, n)
    }
}

/// The entry of every set and zero (as [`copy_entry`] for copies).
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
unsafe fn set_entry(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    let path = small_path();
    // SAFETY: as in `copy_entry`.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if path == SMALL_WIDE {
            return set_wide_inline(dst, byte, n, hint);
        }
        if n <= INLINE_MAX {
            if path == 0 {
                return first_small(Op::Set, dst, core::ptr::null(), byte, n);
            }
            set_narrow(dst, byte, n);
            return dst;
        }
        set_large(dst, byte, n, hint)
    }
}

/// [`set_entry`] on a CPU with AVX-512BW and BMI2.
///
/// # Safety
/// As [`set_entry`]; AVX-512F/BW/VL and BMI2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
#[inline]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
unsafe extern "C" fn set_wide(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe {
        if n <= SET_WIDE_MAX {
            crate::arch::x86_64::masked::set_le2k(dst, byte, n);
            return opaque(dst);
        }
        set_large(dst, byte, n, hint)
    }
}

/// A set or zero above the inline sizes (as [`copy_large`]).
///
/// # Safety
/// As [`set_entry`].
#[inline(never)]
// `extern "C"`: a function that cannot unwind, so that a C entry point (which must not
// unwind either) may end in a tail jump to it instead of a call inside an abort guard.
#[allow(improper_ctypes_definitions)] // called from Rust only; the C ABI for `nounwind`
unsafe extern "C" fn set_large(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    let op = if byte == 0 { Op::Zero } else { Op::Set };
    // SAFETY: forwarded contract.
    unsafe {
        let Some(plan) = published() else {
            first_call(op, dst, core::ptr::null(), byte, n, hint);
            return dst;
        };
        let entry = if hint == Hint::Auto {
            auto_entry(Family::Set, n, byte == 0, dst)
        } else {
            plan.row(Family::Set, hint, State::Unknown)
                .entry(n, byte == 0)
        };
        if entry.is_null() {
            return set_by_probe(plan, op, dst, byte, n, hint);
        }
        // The kernel returns `dst`: a jump (see `kernel::CopyFn`).
        as_set(entry)(dst, byte, n)
    }
}

/// The kernel an Auto call of `n` bytes at `dst` runs under the published plan
/// (`second`: the family's second op, move or zero), without probing: the band's entry
/// point, or where the band recalls ([`Step::Recall`]) the `cached` row's kernel's if
/// [`written_lately`] says so, else the band's own; null where the band probes or
/// before a plan is published (the probing path then decides). The rows of Auto calls
/// are the ones every `memcpy`, `memmove` and `memset` through the shim reads; the C
/// entries above their inline sizes and the general path's Auto calls ([`copy_large`],
/// [`set_large`]) come here first. One band search serves both: through the probing
/// path's decision (`recalled`, with the kernel's id and a search of the `cached` row)
/// a 4 KiB set in a loop took 76 TSC ticks, through this function 64-65, with `avx2`
/// in the band itself 59, glibc's 75 (2-vCPU AMD EPYC Zen 5 KVM guest).
#[inline(always)]
fn auto_entry(family: Family, n: usize, second: bool, dst: *mut u8) -> *mut () {
    let Some(plan) = published() else {
        return core::ptr::null_mut();
    };
    let row = plan.row(family, Hint::Auto, State::Unknown);
    let i = row.band(n);
    let f = row.entry_at(i, second);
    if !f.is_null() {
        return f;
    }
    let (own, hot) = plan.recalls(family, Hint::Auto).entries_at(i, n, second);
    if own.is_null() || hot.is_null() {
        // A band that probes (null: the general path), or sizes of a recalling band
        // where the cached row runs the band's own kernel.
        return own;
    }
    if written_lately(dst as usize, n, tsc) {
        hot
    } else {
        own
    }
}

/// A C entry's copy or move above its inline sizes. An Auto call (the C ABI's
/// `BLOCKMEM_HINT_AUTO`, every call through the shim) whose band runs a kernel goes
/// straight to it: one load of the plan, the band search, one indirect call. Through
/// [`copy_wide`] and [`copy_large`] the same call took about 65 instructions before
/// the kernel (the hint decoded, the inline classes and the overlap tested again, the
/// row computed), about 3.5 ns of a 2049-byte copy that glibc finishes in 8.4
/// (measured on a 2-vCPU Intel Xeon KVM guest). A move runs the band's move kernel, a
/// copy its copy kernel, and the shim's forgiving `memcpy` the one its ranges call for
/// (as [`copy_large`] chooses, so that the kernel a trace reports is the one that ran).
/// Anything else (another hint, a probing band, no plan yet) takes the general path.
///
/// # Safety
/// As [`copy_wide`]; disjoint ranges when `K` is [`DISJOINT`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_above_c<const K: u8>(dst: *mut u8, src: *const u8, n: usize, hint: u32) -> *mut u8 {
    if hint == Hint::C_AUTO {
        let second = match K {
            DISJOINT => false,
            MOVE => true,
            _ => !disjoint(dst, src, n),
        };
        let f = auto_entry(Family::Copy, n, second, dst);
        if !f.is_null() {
            // SAFETY: forwarded contract; `f` is a copy-family entry point of the
            // published plan, for the op the ranges allow. It returns `dst`: the call
            // is the function's last act, a jump (see `kernel::CopyFn`).
            return unsafe { as_copy(f)(dst, src, n) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { copy_wide::<K>(dst, src, n, Hint::from_c(hint)) }
}

/// A C entry's set above its inline sizes (as [`copy_above_c`]).
///
/// # Safety
/// As [`set_wide`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn set_above_c(dst: *mut u8, byte: u8, n: usize, hint: u32) -> *mut u8 {
    if hint == Hint::C_AUTO && n > SET_WIDE_MAX {
        let f = auto_entry(Family::Set, n, byte == 0, dst);
        if !f.is_null() {
            // SAFETY: forwarded contract; `f` is a set-family entry point of the
            // published plan (a zero kernel's set-shaped entry for a zero byte). It
            // returns `dst`: the call is the function's last act, a jump.
            return unsafe { as_set(f)(dst, byte, n) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { set_wide(dst, byte, n, Hint::from_c(hint)) }
}

/// The entry point of a band, as a copy kernel.
///
/// # Safety
/// `f` is a non-null `CopyFn` entry point from a compiled copy-family row.
#[inline(always)]
unsafe fn as_copy(f: *mut ()) -> CopyFn {
    // SAFETY: per the contract the pointer came from a `CopyFn`.
    unsafe { core::mem::transmute::<*mut (), CopyFn>(f) }
}

/// The entry point of a band, as a set kernel.
///
/// # Safety
/// `f` is a non-null `SetFn` entry point from a compiled set-family row.
#[inline(always)]
unsafe fn as_set(f: *mut ()) -> SetFn {
    // SAFETY: per the contract the pointer came from a `SetFn`.
    unsafe { core::mem::transmute::<*mut (), SetFn>(f) }
}

/// The published plan, or `None` before the first initialisation.
#[inline(always)]
fn published() -> Option<&'static Plan> {
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: `CURRENT` only ever holds one of the static `PLANS`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The first large call of the process (nothing published yet): initialise, then run
/// the call again through its entry, or, where the initialisation is already under
/// way further up this thread's stack (a re-entered call publishes nothing), with
/// the portable kernel.
#[cold]
#[inline(never)]
unsafe fn first_call(op: Op, dst: *mut u8, src: *const u8, byte: u8, n: usize, hint: Hint) {
    let plan = plan();
    // SAFETY: forwarded contract.
    unsafe {
        if published().is_some() {
            match op {
                Op::Copy => copy_entry::<DISJOINT>(dst, src, n, hint),
                Op::Move => copy_entry::<MOVE>(dst, src, n, hint),
                Op::Set | Op::Zero => set_entry(dst, byte, n, hint),
            };
            return;
        }
        let (_, f) = step_or_portable(plan, op, n, hint, State::Unknown);
        match op {
            Op::Copy | Op::Move => as_copy(f)(dst, src, n),
            Op::Set | Op::Zero => as_set(f)(dst, byte, n),
        };
    }
}

/// The AVX-512 entries, for a C entry point that checks once, at load, which entry
/// bodies may run ([`wide::level`]) and keeps the answer in a flag of its own: its exported
/// function is then a byte test and a jump here, without reading `SMALL` (which a
/// shared object reaches through its GOT: two dependent loads per call).
#[cfg(target_arch = "x86_64")]
pub mod wide {
    use super::{copy_wide_inline, set_wide_inline, Hint, DISJOINT, FORGIVE, MOVE};

    /// The `flag` of [`copy_entry!`](crate::copy_entry): the AVX-512 bodies.
    pub const LEVEL_AVX512: u8 = 1;
    /// The `flag` of [`copy_entry!`](crate::copy_entry): the AVX2 bodies.
    pub const LEVEL_AVX2: u8 = 2;

    /// Which assembly entry bodies this process may run: [`LEVEL_AVX512`] (AVX-512BW,
    /// VL and BMI2 with ZMM state enabled by the OS), [`LEVEL_AVX2`] (AVX2 with YMM
    /// state), or 0 (neither: the general path). Respects a feature mask. Reads CPUID
    /// only, no profile: a library's constructor may call it without file I/O.
    pub fn level() -> u8 {
        use crate::cpu::Features;
        let f = crate::cpu::features().bits();
        if super::wide_small(f) {
            LEVEL_AVX512
        } else if f & Features::AVX2.bits() != 0 {
            LEVEL_AVX2
        } else {
            0
        }
    }

    /// A copy of more than 512 bytes, for the C entries of
    /// [`copy_entry!`](crate::copy_entry): the 256-byte loop, then the plan.
    ///
    /// # Safety
    /// As [`super::copy`] and [`copy`]; `hint` a C ABI hint value.
    pub unsafe extern "C" fn copy_above(
        dst: *mut u8,
        src: *const u8,
        n: usize,
        hint: u32,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { super::copy_above_c::<DISJOINT>(dst, src, n, hint) }
    }

    /// [`copy_above`] for a copy that forgives overlap (the shim's `memcpy`).
    ///
    /// # Safety
    /// As [`super::copy_forgiving`] and [`copy`].
    pub unsafe extern "C" fn copy_forgiving_above(
        dst: *mut u8,
        src: *const u8,
        n: usize,
        hint: u32,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { super::copy_above_c::<FORGIVE>(dst, src, n, hint) }
    }

    /// [`copy_above`] for a move.
    ///
    /// # Safety
    /// As [`super::move_`] and [`copy`].
    pub unsafe extern "C" fn move_above(
        dst: *mut u8,
        src: *const u8,
        n: usize,
        hint: u32,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { super::copy_above_c::<MOVE>(dst, src, n, hint) }
    }

    /// A set the C entries of [`set_entry!`](crate::set_entry) do not handle inline
    /// (more than 2048 bytes).
    ///
    /// # Safety
    /// As [`super::set`] and [`copy`].
    pub unsafe extern "C" fn set_above(
        dst: *mut u8,
        c: core::ffi::c_int,
        n: usize,
        hint: u32,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { super::set_above_c(dst, c as u8, n, hint) }
    }

    /// [`super::copy`] on a CPU with AVX-512BW.
    ///
    /// # Safety
    /// As [`super::copy`]; [`level`] returned [`LEVEL_AVX512`] in this process and no feature
    /// mask has been set since.
    #[inline(always)]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
        // SAFETY: forwarded contract; the features are present (see above).
        unsafe { copy_wide_inline::<DISJOINT>(dst, src, n, hint) }
    }

    /// [`super::copy_forgiving`] on a CPU with AVX-512BW.
    ///
    /// # Safety
    /// As [`super::copy_forgiving`] and [`copy`].
    #[inline(always)]
    pub unsafe fn copy_forgiving(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
        // SAFETY: as in `copy`.
        unsafe { copy_wide_inline::<FORGIVE>(dst, src, n, hint) }
    }

    /// [`super::move_`] on a CPU with AVX-512BW.
    ///
    /// # Safety
    /// As [`super::move_`] and [`copy`].
    #[inline(always)]
    pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
        // SAFETY: as in `copy`.
        unsafe { copy_wide_inline::<MOVE>(dst, src, n, hint) }
    }

    /// [`super::set`] on a CPU with AVX-512BW.
    ///
    /// # Safety
    /// As [`super::set`] and [`copy`].
    #[inline(always)]
    pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
        // SAFETY: as in `copy`.
        unsafe { set_wide_inline(dst, byte, n, hint) }
    }
}

/// `memcpy` with a hint; returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, ranges disjoint.
#[inline(always)]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<DISJOINT>(dst, src, n, hint) }
}

/// `memcpy` that forgives overlap, as the preload shim's `memcpy` must (glibc's is
/// its `memmove`): small sizes as [`copy`] (every inline path loads before it stores),
/// above them a move when the ranges overlap. Returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
#[inline(always)]
pub unsafe fn copy_forgiving(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<FORGIVE>(dst, src, n, hint) }
}

/// The probing path (and a recalling band's) of a copy or move: probe, then run the
/// kernel of the state found; returns `dst`, the kernel's own return (a jump: see
/// `kernel::CopyFn`). Out of line: it is taken only by calls large enough that the
/// probe pays, or whose band recalls. Six arguments, all in registers, so that its
/// callers can end in a jump to it.
#[inline(never)]
// `extern "C"`, as `copy_large`: a caller of the same convention can end in a jump to
// it, and it in a jump to the kernel.
#[allow(improper_ctypes_definitions)] // called from Rust only
unsafe extern "C" fn copy_by_probe(
    plan: &Plan,
    op: Op,
    dst: *mut u8,
    src: *const u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract (one-byte reads inside the ranges).
    unsafe {
        let (_, f) = after_probe(plan, op, dst, src, n, hint);
        as_copy(f)(dst, src, n)
    }
}

/// [`copy_by_probe`] for a set or zero.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // called from Rust only
unsafe extern "C" fn set_by_probe(
    plan: &Plan,
    op: Op,
    dst: *mut u8,
    byte: u8,
    n: usize,
    hint: Hint,
) -> *mut u8 {
    // SAFETY: forwarded contract (a one-byte read inside the range).
    unsafe {
        let (_, f) = after_probe(plan, op, dst, core::ptr::null(), n, hint);
        as_set(f)(dst, byte, n)
    }
}

/// `memmove` with a hint; returns `dst`.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; overlap allowed.
#[inline(always)]
pub unsafe fn move_(dst: *mut u8, src: *const u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { copy_entry::<MOVE>(dst, src, n, hint) }
}

/// `memset` with a hint (a zero byte takes the zero kernel of the band); returns `dst`.
///
/// # Safety
/// `dst` valid for `n` writes.
#[inline(always)]
pub unsafe fn set(dst: *mut u8, byte: u8, n: usize, hint: Hint) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { set_entry(dst, byte, n, hint) }
}

/// The kernel a real call would run, decided exactly as [`copy`], [`move_`] and [`set`]
/// decide (inline ladder, plan, probe where its band probes), for callers that must
/// know what ran: the preload shim's tracer calls this and then [`run_kernel`] with the
/// answer, so that the kernel it records is the one the call used, probes included.
/// `None`: no kernel runs, because the inline ladder handles the size (`n` up to
/// [`inline_max`] for the op) or, above it, the call is a move onto itself (which
/// [`move_`] skips).
///
/// `op` is the op the kernel runs: `Zero` for a fill with byte 0 (what [`set`] does).
/// Like a real call it may probe a line of `dst` (a timed load that leaves the line
/// cached), so decide once per operation. Allocation-free and `memcpy`-free like every
/// path here.
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
    if runs_inline(op, dst, src, n) || (op == Op::Move && core::ptr::eq(dst, src)) {
        return None;
    }
    let plan = plan();
    let second = matches!(op, Op::Move | Op::Zero);
    match plan
        .row(Family::of(op), hint, State::Unknown)
        .step(n, second)
    {
        Step::Run(k, _) => Some(k),
        // SAFETY: forwarded contract.
        Step::Probe | Step::Recall(_) => {
            Some(unsafe { after_probe(plan, op, dst, src, n, hint) }.0)
        }
    }
}

/// Runs kernel `k` for `op` (the second half of a call whose kernel came from
/// [`decide_for_call`]) and returns `dst`. A kernel that lacks the op falls back to the
/// portable one.
///
/// # Safety
/// As the op's C contract: `dst` valid for `n` writes, `src` (copy and move) valid for
/// `n` reads, ranges disjoint for `Copy`; `k`'s CPU features present (any kernel
/// [`decide_for_call`] returns qualifies).
pub unsafe fn run_kernel(
    k: KernelId,
    op: Op,
    dst: *mut u8,
    src: *const u8,
    byte: u8,
    n: usize,
) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { run(k, op, dst, src, byte, n) }
}
