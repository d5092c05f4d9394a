//! A rejected profile or trace path is reported once per process tree, not once per
//! process.
//!
//! Every process of a tree run under the shim inherits the same environment, so a bad
//! `BLOCKMEM_PROFILE` would be reported by each command of a shell script (a build
//! runs thousands). The first process that reports it adds
//! `BLOCKMEM_PROFILE_WARNED=<the profile it named>` to its environment; its children
//! inherit the variable and stay silent about that profile. A child given another
//! profile still reports that one, and every process's statistics line still says its
//! profile was rejected. A refused `BLOCKMEM_TRACE` works the same way, with
//! `BLOCKMEM_TRACE_WARNED=<the path>`.
//!
//! # Adding a variable from inside an arbitrary program
//!
//! `setenv` is out: it allocates (the program's allocator may not be ready while
//! constructors run) and takes libc's lock, and the shim does neither. Instead the
//! constructor builds a new environment array in static memory — the pointers of the
//! current entries (the strings stay where they are), the marker, a null — and points
//! `environ` at it with one atomic store, after the array is complete: a signal handler
//! or another thread reading `environ` meanwhile (the core's own `getenv` does) sees
//! the old environment or the new one, never part of one. Nothing else is written, so
//! this is async-signal-safe. POSIX lets a program assign `environ`, and glibc's and
//! musl's `setenv`, `putenv`, `unsetenv` and `clearenv` work on an array they did not
//! allocate (they copy it before growing it and never free it). It reaches the
//! children because it happens in the constructor, before `main`: glibc passes
//! `environ` to `main` as its third argument then, shells and interpreters import it
//! at start-up, and `exec*`, `posix_spawn` and `system` pass it on.
//!
//! Where it cannot work, the result is a repeated warning, never a missing or a wrong
//! one: a program that builds its children's environment from scratch (`env -i`)
//! drops the marker, and an environment of more than `ENV_CAP - 2` entries is left
//! alone. (Profile paths are compared as the shim keeps them, by their first 256 bytes.)

use core::ffi::c_char;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// What a marker says was reported.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Marker {
    /// A rejected `BLOCKMEM_PROFILE` (or default profile).
    Profile = 0,
    /// A refused `BLOCKMEM_TRACE`.
    Trace = 1,
}

impl Marker {
    const ALL: [Marker; 2] = [Marker::Profile, Marker::Trace];

    /// The variable's name.
    pub(crate) const fn name(self) -> &'static [u8] {
        match self {
            Marker::Profile => b"BLOCKMEM_PROFILE_WARNED",
            Marker::Trace => b"BLOCKMEM_TRACE_WARNED",
        }
    }
}

/// Entries the published environment holds, its null included (4 KiB of `.bss`, only
/// touched in a process that warns).
const ENV_CAP: usize = 512;

/// Bytes of a marker string: the longest name, `=`, a value (a profile path as kept
/// in `config::PROFILE_PATH`, a source name, or a trace path of at most
/// `trace_file::PATH_MAX` bytes) and the NUL.
const MARKER_CAP: usize = 24 + 1 + crate::trace_file::PATH_MAX + 1;

/// The environment array published by [`publish`]; `AtomicPtr<c_char>` has the layout
/// of `*mut c_char`, so this is a `char *[ENV_CAP]` the C library can use.
static NEW_ENV: [AtomicPtr<c_char>; ENV_CAP] = [const { AtomicPtr::new(null_mut()) }; ENV_CAP];

/// The `NAME=value` strings, NUL-terminated, that [`NEW_ENV`] points to, by marker.
static MARKERS: [[AtomicU8; MARKER_CAP]; 2] =
    [const { [const { AtomicU8::new(0) }; MARKER_CAP] }; 2];

/// Bit `m` set: marker `m` is filled in and waits for [`publish`].
static PENDING: AtomicU8 = AtomicU8::new(0);

extern "C" {
    /// The C library's environment (POSIX `environ`).
    static mut environ: *mut *mut c_char;
}

/// `environ` as an atomic: `AtomicPtr<T>` has the size and alignment of `*mut T`.
fn environ_atomic() -> &'static AtomicPtr<*mut c_char> {
    // SAFETY: `environ` is a pointer-sized, pointer-aligned variable that lives as long
    // as the process; viewing it as an `AtomicPtr` only changes how it is accessed.
    unsafe { &*core::ptr::addr_of_mut!(environ).cast::<AtomicPtr<*mut c_char>>() }
}

/// True if the NUL-terminated string `entry` is an earlier marker (`NAME=…`) of a
/// kind about to be published.
///
/// # Safety
/// `entry` points to a NUL-terminated string.
unsafe fn is_replaced(entry: *const c_char, pending: u8) -> bool {
    Marker::ALL.iter().any(|&m| {
        // SAFETY: forwarded contract.
        pending & (1 << m as u8) != 0 && unsafe { starts_with(entry, m.name()) }
    })
}

/// True if the NUL-terminated string `entry` starts with `name=`.
///
/// # Safety
/// `entry` points to a NUL-terminated string.
unsafe fn starts_with(entry: *const c_char, name: &[u8]) -> bool {
    for (i, &want) in name.iter().chain(b"=").enumerate() {
        // SAFETY: the comparison stops at the first difference, at the latest at the
        // string's NUL (`want` is never 0), so `i` stays inside the string.
        if unsafe { *entry.add(i) } as u8 != want {
            return false;
        }
    }
    true
}

/// Fills in marker `m` as `NAME=value` for the next [`publish`]; false (and nothing
/// changed) if it does not fit. Only from the constructor.
pub(crate) fn mark(m: Marker, value: &[u8]) -> bool {
    let name = m.name();
    if name.len() + 1 + value.len() + 1 > MARKER_CAP {
        return false;
    }
    for (slot, &b) in MARKERS[m as usize]
        .iter()
        .zip(name.iter().chain(b"=").chain(value).chain(b"\0"))
    {
        slot.store(b, Ordering::Relaxed);
    }
    PENDING.fetch_or(1 << m as u8, Ordering::Relaxed);
    true
}

/// Adds the markers [`mark`] filled in to the environment, replacing inherited ones
/// of the same names; false (and nothing changed) if they do not fit. Called once, by
/// the constructor, after everything it reports.
pub(crate) fn publish() -> bool {
    let pending = PENDING.load(Ordering::Relaxed);
    if pending == 0 {
        return true;
    }
    let current = environ_atomic().load(Ordering::Acquire);
    let mut slots = NEW_ENV.iter();
    let mut i = 0;
    while !current.is_null() {
        // SAFETY: `environ` is a null-terminated array of pointers to NUL-terminated
        // strings; `i` never passes its terminating null.
        let entry = unsafe { *current.add(i) };
        if entry.is_null() {
            break;
        }
        i += 1;
        // SAFETY: as above.
        if unsafe { is_replaced(entry, pending) } {
            continue;
        }
        match slots.next() {
            Some(slot) => slot.store(entry, Ordering::Relaxed),
            None => return false,
        }
    }
    for m in Marker::ALL {
        if pending & (1 << m as u8) != 0 {
            let Some(slot) = slots.next() else {
                return false;
            };
            let marker = MARKERS[m as usize].as_ptr().cast::<c_char>().cast_mut();
            slot.store(marker, Ordering::Relaxed);
        }
    }
    let Some(end) = slots.next() else {
        return false;
    };
    end.store(null_mut(), Ordering::Relaxed);
    // Release: the array above is complete before `environ` names it.
    environ_atomic().store(
        NEW_ENV.as_ptr().cast::<*mut c_char>().cast_mut(),
        Ordering::Release,
    );
    true
}
