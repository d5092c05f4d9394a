//! The environment, read once at load by a constructor.
//!
//! | variable | effect |
//! |---|---|
//! | `BLOCKMEM_STATS=1` | print calls and bytes per op and per kernel, and per thread, at exit ([`crate::stats`]) |
//! | `BLOCKMEM_DISABLE=1` | pass every call through to the next definition (libc's) |
//! | `BLOCKMEM_FORCE=<kernel>` | `blockmem::dispatch::force` that kernel (`auto` = the policy) |
//! | `BLOCKMEM_PROFILE=<path>` | the calibration profile (read by the core, see `blockmem::autoload`) |
//! | `BLOCKMEM_TRACE=<path>` | record every call in a trace file ([`crate::trace`]; children write `<path>.<pid>`) |
//! | `BLOCKMEM_TRACE_SAMPLE=N` | with tracing, probe the cache state every N-th call (default 64; 0: never) |
//! | `BLOCKMEM_TRACE_WATCH=N` | with tracing and the trace I/O library, watch the destination of one in N calls covering whole pages (default 1, at most one a millisecond; 0: never; [`crate::watch`]) |
//! //! | `BLOCKMEM_MASK_FEATURES=<list>` | CPU features to mask off, comma-separated (`avx512f`, `avx2`, ...): run as a smaller host would |
//! | `BLOCKMEM_HINTS=<file>` | per-call-site hints, a hint map from `blockmem trace --advise` ([`crate::hints`]) |
//! | `BLOCKMEM_PROFILE_WARNED=<profile>` | set by the shim: an ancestor reported that rejected profile ([`crate::warned`]) |
//! | `BLOCKMEM_TRACE_WARNED=<path>` | set by the shim: an ancestor reported that refused trace path ([`crate::warned`]) |
//!
//! A flag is on when its value is non-empty and not `0`. Everything is ignored when
//! the process runs with `AT_SECURE` (set-user-ID, set-group-ID, file capabilities):
//! an unprivileged user must not steer a privileged program's memory operations.
//!
//! The constructor is an `.init_array` entry, which the dynamic linker calls with
//! `(argc, argv, envp)` on glibc; reading `envp` directly needs neither `getenv` nor any
//! allocation. Calls made before it runs (the dynamic linker's, libc's, other
//! constructors', the program's `.preinit_array`) use blockmem as configured by the
//! core alone.
//!
//! The profile is the core's business: it loads `BLOCKMEM_PROFILE` (or the default
//! path) on the first call that needs the policy, without allocating, and ignores the
//! environment under `AT_SECURE` itself. The constructor makes that first call happen
//! at load time, in a known place rather than inside some later `memcpy`, and reports a
//! rejected profile on stderr (naming the line) once per process tree: the children of
//! a process that reported it stay silent ([`crate::warned`]). The program then runs
//! on the built-in table and is never stopped.

use core::ffi::{c_char, c_int};
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use blockmem::autoload::Source;
use blockmem::profile::{ErrorKind, ProfileError};

use crate::out::Line;
use crate::stats::warn;
use crate::warned::Marker;
use crate::{next, MODE, MODE_DISABLE, MODE_HINTS, MODE_STATS, MODE_TRACE};

/// `BLOCKMEM_PROFILE` as given (for messages; the core reads the variable itself).
static PROFILE_PATH: [AtomicU8; PROFILE_PATH_CAP] = [const { AtomicU8::new(0) }; PROFILE_PATH_CAP];
static PROFILE_PATH_LEN: AtomicUsize = AtomicUsize::new(0);
const PROFILE_PATH_CAP: usize = 256;

/// Bits describing the configuration, for the statistics line.
static NOTES: AtomicU8 = AtomicU8::new(0);
const NOTE_DISABLED: u8 = 1 << 0;
const NOTE_DISABLE_FAILED: u8 = 1 << 1;

/// A NUL-terminated environment string as a slice (without the NUL).
///
/// # Safety
/// `p` points to a NUL-terminated string that lives for the rest of the process (the
/// initial environment block does).
unsafe fn c_bytes(p: *const c_char) -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: reads stop at the terminating NUL, inside the string.
    unsafe {
        while *p.add(len) != 0 {
            len += 1;
        }
        core::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

/// If `entry` is `NAME=value`, the value.
fn value_of<'a>(entry: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = (entry.get(..name.len())?, entry.get(name.len()..)?);
    if head != name {
        return None;
    }
    match rest.split_first() {
        Some((b'=', value)) => Some(value),
        _ => None,
    }
}

fn is_on(value: &[u8]) -> bool {
    !value.is_empty() && value != b"0"
}

/// Applies `BLOCKMEM_FORCE`. An unknown name is reported with every kernel of the
/// kernel table, so the message lists exactly the names this build accepts.
/// `BLOCKMEM_MASK_FEATURES=avx512f,...`: masks CPU features off for the process, as
/// `blockmem lab --mask-features` does, to run as a smaller host would (kernels,
/// table and assembly entry bodies). An unknown name is reported and skipped.
fn apply_mask(value: &[u8]) {
    use blockmem::cpu::Features;
    let mut mask = Features::NONE;
    for name in value.split(|&b| b == b',').filter(|n| !n.is_empty()) {
        match core::str::from_utf8(name)
            .ok()
            .and_then(Features::from_name)
        {
            Some(f) => mask = mask.union(f),
            None => warn(&[
                b"BLOCKMEM_MASK_FEATURES: unknown feature ",
                name,
                b"; ignored",
            ]),
        }
    }
    blockmem::dispatch::mask_features(mask);
}

fn apply_force(value: &[u8]) {
    if value.is_empty() || value == b"auto" {
        return;
    }
    let table = blockmem::kernel::table();
    let Some(kernel) = table.iter().find(|k| k.name().as_bytes() == value) else {
        let mut line = Line::new();
        line.bytes(b"blockmem: BLOCKMEM_FORCE=");
        line.bytes(value);
        line.bytes(b": no such kernel (");
        for (i, k) in table.iter().enumerate() {
            if i > 0 {
                line.bytes(b", ");
            }
            line.bytes(k.name().as_bytes());
        }
        line.bytes(b", or auto); using the policy\n");
        line.write_to(2);
        return;
    };
    if !kernel.is_available() {
        warn(&[
            b"BLOCKMEM_FORCE=",
            value,
            b": this CPU cannot run that kernel; using the policy",
        ]);
        return;
    }
    blockmem::dispatch::force(Some(kernel.id));
}

fn record_profile_path(value: &[u8]) {
    let mut len = 0;
    for (slot, &b) in PROFILE_PATH.iter().zip(value) {
        slot.store(b, Ordering::Relaxed);
        len += 1;
    }
    PROFILE_PATH_LEN.store(len, Ordering::Release);
}

/// Appends where the profile came from: `built-in`, `default-path`, or the path
/// given in `BLOCKMEM_PROFILE`.
fn profile_source(line: &mut Line, source: Source) {
    if source == Source::Env {
        let len = PROFILE_PATH_LEN.load(Ordering::Acquire);
        for slot in PROFILE_PATH.iter().take(len) {
            line.byte(slot.load(Ordering::Relaxed));
        }
    } else {
        line.bytes(source.name().as_bytes());
    }
}

/// Appends "line N: reason".
fn profile_error(line: &mut Line, e: ProfileError) {
    if e.line > 0 {
        line.bytes(b"line ");
        line.num(e.line as u64);
        line.bytes(b": ");
    }
    line.bytes(e.kind.reason().as_bytes());
    if let ErrorKind::UnsupportedVersion(v) = e.kind {
        line.bytes(b" (found version ");
        line.num(u64::from(v));
        line.byte(b')');
    }
}

/// Loads the profile now (see the module docs) and reports a rejected one, unless
/// `warned` (the inherited `BLOCKMEM_PROFILE_WARNED`) says an ancestor reported the
/// same profile; after reporting, marks the environment so that children stay silent.
///
/// `reload`, not `status`: a call that needed the policy before this constructor ran
/// (another library's constructor, the program's `.preinit_array`) may have made the
/// core load its profile while libc's `environ` was still unset, so that it saw no
/// `BLOCKMEM_PROFILE` and settled on defaults. Now the environment is in place.
fn load_profile(warned: Option<&[u8]>) {
    if let (source, Some(error)) = blockmem::dispatch::reload() {
        // The profile as the message names it: the path, or where it came from.
        let mut named = Line::new();
        profile_source(&mut named, source);
        if warned == Some(named.as_bytes()) {
            return;
        }
        let mut line = Line::new();
        line.bytes(b"blockmem: profile ");
        profile_source(&mut line, source);
        line.bytes(b" rejected: ");
        profile_error(&mut line, error);
        line.bytes(b"; using the built-in table\n");
        line.write_to(2);
        crate::warned::mark(crate::warned::Marker::Profile, named.as_bytes());
    }
}

/// `BLOCKMEM_TRACE_SAMPLE`: a decimal number; anything else warns and keeps the
/// default.
fn parse_sample(value: &[u8]) -> u32 {
    parse_count(
        value,
        b"BLOCKMEM_TRACE_SAMPLE=",
        crate::trace::DEFAULT_SAMPLE,
    )
}

/// A decimal count for `name` (`NAME=`); anything else warns and gives `default`.
fn parse_count(value: &[u8], name: &[u8], default: u32) -> u32 {
    let mut n: u32 = 0;
    let valid = !value.is_empty()
        && value.iter().all(|&b| {
            let d = b.wrapping_sub(b'0');
            match n.checked_mul(10).and_then(|x| x.checked_add(u32::from(d))) {
                Some(x) if d < 10 => {
                    n = x;
                    true
                }
                _ => false,
            }
        });
    if valid {
        return n;
    }
    warn(&[name, value, b": not a number of calls; keeping the default"]);
    default
}

/// Starts tracing to `path`; if it cannot, says why on stderr (naming the path) and
/// leaves tracing off, the program running as it would untraced. Silent when `warned`
/// (the inherited `BLOCKMEM_TRACE_WARNED`) says an ancestor reported the same path;
/// after reporting, marks the environment so that children stay silent.
///
/// # Safety
/// Only from the constructor.
unsafe fn start_trace(
    path: &[u8],
    sample: u32,
    watch: u32,
    argv: *const *const c_char,
    warned: Option<&[u8]>,
) -> bool {
    let mut argv0: &[u8] = b"";
    if !argv.is_null() {
        // SAFETY: argv is the process's NULL-terminated argument vector; its first
        // entry, if not null, is a NUL-terminated string living as long as the process.
        let first = unsafe { *argv };
        if !first.is_null() {
            // SAFETY: as above.
            argv0 = unsafe { c_bytes(first) };
        }
    }
    // SAFETY: constructor (contract).
    let error = match unsafe { crate::trace::start(path, sample, watch, argv0) } {
        Ok(()) => return true,
        Err(e) => e,
    };
    if warned == Some(path) {
        return false;
    }
    let mut line = Line::new();
    line.bytes(b"blockmem: BLOCKMEM_TRACE=");
    line.bytes(path);
    line.bytes(b": ");
    match error {
        crate::trace::StartError::BadPath => {
            line.bytes(b"path empty or longer than 1000 bytes");
        }
        crate::trace::StartError::NotRegular(what) => {
            line.bytes(what);
            line.bytes(b" (give a file name in a writable directory)");
        }
        crate::trace::StartError::Os(what, errno) => {
            line.bytes(b"cannot ");
            line.bytes(if what == b"open" {
                b"create the file"
            } else {
                what
            });
            line.bytes(b": ");
            line.bytes(crate::out::errno_text(errno));
            line.bytes(b" (errno ");
            line.num(errno as u64);
            line.byte(b')');
        }
    }
    line.bytes(b"; not tracing\n");
    line.write_to(2);
    crate::warned::mark(crate::warned::Marker::Trace, path);
    false
}

/// Takes the CPU's features from the CPUID leaves glibc read when the process
/// started, so that detection executes no CPUID instruction: in a virtual machine each
/// is an exit to the hypervisor, paid by every process start
/// (`blockmem::cpu::detect_from`; `docs/results/epyc-zen4-2vcpu`). Where the C
/// library does not export them (glibc before 2.33, another C library) detection runs
/// CPUID itself, on first use.
fn features_from_libc() {
    if let Some(leaves) = libc_leaves() {
        blockmem::cpu::detect_from(&leaves);
    }
}

/// The CPUID leaves glibc keeps (`__x86_get_cpuid_feature_leaf`), if it exports them.
fn libc_leaves() -> Option<blockmem::cpu::Leaves> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    {
        // glibc's `struct cpuid_feature` (<sys/platform/x86.h>): the leaf's registers
        // as CPUID returned them, then the bits glibc itself uses (which its tunables
        // change; the first array they do not).
        #[repr(C)]
        struct CpuidFeature {
            cpuid: [u32; 4],
            active: [u32; 4],
        }
        type LeafFn = unsafe extern "C" fn(u32) -> *const CpuidFeature;
        // SAFETY: dlvsym with RTLD_DEFAULT and NUL-terminated strings. The version
        // finds glibc's definition only, not a program's own of that name.
        let sym = unsafe {
            libc::dlvsym(
                libc::RTLD_DEFAULT,
                c"__x86_get_cpuid_feature_leaf".as_ptr(),
                c"GLIBC_2.33".as_ptr(),
            )
        };
        if sym.is_null() {
            return None;
        }
        // SAFETY: glibc's function of this name (GLIBC_2.33) takes a leaf index and
        // returns a pointer to that leaf's record (a zeroed one for an index it does
        // not know).
        let leaf: LeafFn = unsafe { core::mem::transmute::<*mut libc::c_void, LeafFn>(sym) };
        let get = |index: u32| {
            // SAFETY: as above; the record lives as long as the process.
            let p = unsafe { leaf(index) };
            if p.is_null() {
                [0; 4]
            } else {
                // SAFETY: non-null, from glibc (above).
                unsafe { (*p).cpuid }
            }
        };
        // The indices glibc gives the leaves (<sys/platform/x86.h>): 0 leaf 1, 1 leaf
        // 7, 2 leaf 0x80000001, 3 leaf 0xD subleaf 1 (not used), 4 leaf 0x80000007,
        // 5 leaf 0x80000008.
        Some(blockmem::cpu::Leaves {
            l1: get(0),
            l7: get(1),
            e1: get(2),
            e7: get(4),
            e8: get(5),
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
    None
}

/// The constructor.
///
/// # Safety
/// Called by the dynamic linker with the process's `envp` (or null).
unsafe extern "C" fn init(_argc: c_int, argv: *const *const c_char, envp: *const *const c_char) {
    features_from_libc();
    // SAFETY: getauxval has no preconditions; an absent entry reads as 0.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    if secure || envp.is_null() {
        publish_fast(0);
        return;
    }
    let (mut stats, mut disable) = (false, false);
    let (mut trace_path, mut sample): (&[u8], u32) = (b"", crate::trace::DEFAULT_SAMPLE);
    let mut watch = 1u32;
    let mut hints_path: &[u8] = b"";
    let (mut warned, mut trace_warned) = (None, None);
    let mut i = 0;
    loop {
        // SAFETY: envp is a null-terminated array of pointers to NUL-terminated strings
        // that live as long as the process; `i` never passes the terminating null.
        let entry = unsafe { *envp.add(i) };
        if entry.is_null() {
            break;
        }
        i += 1;
        // SAFETY: as above.
        let entry = unsafe { c_bytes(entry) };
        if !entry.starts_with(b"BLOCKMEM_") {
            continue;
        }
        if let Some(v) = value_of(entry, b"BLOCKMEM_STATS") {
            stats = is_on(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_DISABLE") {
            disable = is_on(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_FORCE") {
            apply_force(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_MASK_FEATURES") {
            apply_mask(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_PROFILE") {
            record_profile_path(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_TRACE") {
            trace_path = v;
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_TRACE_SAMPLE") {
            sample = parse_sample(v);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_TRACE_WATCH") {
            watch = parse_count(v, b"BLOCKMEM_TRACE_WATCH=", 1);
        } else if let Some(v) = value_of(entry, b"BLOCKMEM_HINTS") {
            hints_path = v;
        } else if let Some(v) = value_of(entry, Marker::Profile.name()) {
            warned = Some(v);
        } else if let Some(v) = value_of(entry, Marker::Trace.name()) {
            trace_warned = Some(v);
        }
    }
    let mut mode = 0;
    if stats {
        crate::stats::keep_stderr();
        mode |= MODE_STATS;
    }
    if disable {
        if next::resolve() {
            mode |= MODE_DISABLE;
            NOTES.fetch_or(NOTE_DISABLED, Ordering::Relaxed);
        } else {
            NOTES.fetch_or(NOTE_DISABLE_FAILED, Ordering::Relaxed);
            warn(&[b"BLOCKMEM_DISABLE=1: the next memcpy/memmove/memset was not found; staying on blockmem"]);
        }
    }
    load_profile(warned);
    // SAFETY: this is the constructor. After the profile: the hint table's size bound
    // comes from the compiled plan.
    if !hints_path.is_empty() && unsafe { crate::hints::load(hints_path) } {
        mode |= MODE_HINTS;
    }
    // SAFETY: this is the constructor.
    if !trace_path.is_empty()
        && unsafe { start_trace(trace_path, sample, watch, argv, trace_warned) }
    {
        crate::watch::attach();
        mode |= MODE_TRACE;
    }
    if mode & (MODE_STATS | MODE_TRACE) != 0 {
        crate::thread::register();
    }
    crate::warned::publish();
    MODE.store(mode, Ordering::Release);
    publish_fast(mode);
}

/// Lets the exported functions run the assembly entries' bodies for this CPU when no
/// mode but hints is set (with hints, calls above 2 KiB still go through the call-site
/// lookup): sets `crate::FAST` to the level, and opens `crate::ROUTE` where it is
/// AVX-512 (see `blockmem::arch::x86_64::entry`).
fn publish_fast(mode: u8) {
    #[cfg(target_arch = "x86_64")]
    if mode & !MODE_HINTS == 0 {
        let level = blockmem::dispatch::wide::level();
        crate::FAST.store(level, Ordering::Release);
        if level == blockmem::dispatch::wide::LEVEL_AVX512 {
            blockmem::arch::x86_64::entry::open_route(&crate::ROUTE);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = mode;
}

#[used]
#[link_section = ".init_array"]
static INIT: unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) = init;

/// Appends the configuration notes to the statistics line.
pub(crate) fn describe(line: &mut Line) {
    let notes = NOTES.load(Ordering::Relaxed);
    if notes & NOTE_DISABLED != 0 {
        line.bytes(b"; disabled (libc)");
    }
    if notes & NOTE_DISABLE_FAILED != 0 {
        line.bytes(b"; disable failed");
    }
    if let Some(k) = blockmem::dispatch::forced() {
        line.bytes(b"; forced ");
        line.bytes(k.name().as_bytes());
    }
    crate::hints::describe(line);
    let (source, error) = blockmem::dispatch::status();
    line.bytes(b"; profile ");
    profile_source(line, source);
    if let Some(e) = error {
        line.bytes(b" (rejected: ");
        profile_error(line, e);
        line.byte(b')');
    }
}

#[cfg(test)]
mod tests {
    /// glibc's kept leaves give the features CPUID gives (the constructor takes them
    /// instead of running CPUID).
    #[test]
    fn libc_leaves_give_the_features_cpuid_gives() {
        #[cfg(target_arch = "x86_64")]
        if let Some(leaves) = super::libc_leaves() {
            assert_eq!(
                blockmem::cpu::features_of_leaves(&leaves),
                blockmem::cpu::features_by_cpuid()
            );
        }
    }
}
