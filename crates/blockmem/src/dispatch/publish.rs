//! The published plan and the table it is compiled from: loading the profile on first
//! use, installing or reloading a table, forcing a kernel, masking CPU features. Each
//! change compiles a spare plan ([`PLANS`]) and swaps one pointer ([`CURRENT`]), so a
//! call never waits and never reads a plan being rewritten (see [`Plan`]). Each also
//! points the core's assembly entries (`wide`) at the bodies the features in force
//! allow ([`ROUTE`], [`LEVEL`]).

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::autoload::{self, Found, Source};
use crate::builtin::Class;
use crate::cpu::{self, Features};
use crate::kernel::KernelId;
use crate::policy::{self, Plan};
use crate::profile::{self, ErrorKind, ProfileError, Table};

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
/// Which bodies hold the small sizes under the feature mask in force: 0 before a plan is
/// published, [`SMALL_WIDE`] (the AVX-512 bodies), [`SMALL_AVX2`] (the AVX2 bodies) or
/// [`SMALL_NARROW`] (the Rust ladder). Read by the Rust ladder (see [`small_path`]) and
/// by [`super::inline_max`]; the core's entries read the route it sets (`wide`).
static SMALL: AtomicU8 = AtomicU8::new(0);
#[cfg(target_arch = "x86_64")]
pub(super) const SMALL_WIDE: u8 = 1;
pub(super) const SMALL_NARROW: u8 = 2;
#[cfg(target_arch = "x86_64")]
pub(super) const SMALL_AVX2: u8 = 3;
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
    if !sensing_contention() {
        slot.alone_only();
    }
    CURRENT.store(slot as *const Plan as *mut Plan, Ordering::Release);
    #[cfg(target_arch = "x86_64")]
    let path = {
        use crate::arch::x86_64::entry::{level_of, LEVEL_AVX2, LEVEL_AVX512};
        let level = level_of(f);
        route_entries(level);
        match level {
            LEVEL_AVX512 => SMALL_WIDE,
            LEVEL_AVX2 => SMALL_AVX2,
            _ => SMALL_NARROW,
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let path = SMALL_NARROW;
    SMALL.store(path, Ordering::Release);
}

/// The route words of the core's entries: open while the published feature mask has
/// AVX-512BW and BMI2 ([`route_entries`]).
#[cfg(target_arch = "x86_64")]
pub(super) static ROUTE: [AtomicUsize; 3] = crate::arch::x86_64::entry::ROUTE_INIT;

/// The level byte of the core's entries: `LEVEL_AVX2` (`arch::x86_64::entry`) for the
/// AVX2 bodies, anything else for `general` (0 until a plan is published).
#[cfg(target_arch = "x86_64")]
pub(super) static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Points the core's entries at the bodies of `level` (from the feature mask in force;
/// called whenever a plan is published): the AVX-512 bodies through the open route,
/// the AVX2 bodies through the level byte, or `general`. A call racing the change runs
/// either the old bodies or the new, both of which the CPU has.
#[cfg(target_arch = "x86_64")]
fn route_entries(level: u8) {
    use crate::arch::x86_64::entry::{close_route, open_route, LEVEL_AVX512};
    LEVEL.store(level, Ordering::Release);
    if level == LEVEL_AVX512 {
        open_route(&ROUTE);
    } else {
        close_route(&ROUTE);
    }
}

fn publish(t: *const Table, source: Source) {
    TABLE.store(t as *mut Table, Ordering::Release);
    SOURCE.store(source as u8, Ordering::Relaxed);
    recompile();
    STATE.store(2, Ordering::Release);
}

/// Whether calls count the large calls in flight and read the contended rows.
static SENSING: AtomicBool = AtomicBool::new(true);

/// Turns the contention input off (`false`: no call counts, every call reads the
/// rows a call alone reads, as under a table without contended rows) or on again (the
/// default). For measuring what the input costs and buys, side by side in one process.
pub fn sense_contention(on: bool) {
    SENSING.store(on, Ordering::Relaxed);
    plan();
    lock_loading();
    recompile();
    unlock_loading();
}

/// Whether the contention input is on ([`sense_contention`]).
pub fn sensing_contention() -> bool {
    SENSING.load(Ordering::Relaxed)
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
/// gets an uncompiled plan, whose every band probes; `large::first_call` runs such
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

/// [`SMALL`]: which bodies hold the small sizes. The Rust ladder reads it only where
/// the assembly bodies pass a call on (x86-64), or on every call (other targets).
#[inline(always)]
pub(super) fn small_path() -> u8 {
    SMALL.load(Ordering::Relaxed)
}

/// The published plan, or `None` before the first initialisation.
#[inline(always)]
pub(super) fn published() -> Option<&'static Plan> {
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: `CURRENT` only ever holds one of the static `PLANS`.
    (!p.is_null()).then(|| unsafe { &*p })
}
