//! A rejected profile is reported once per process tree, not once per process.
//!
//! Every process of a tree run under the shim inherits the same environment, so a bad
//! `BLOCKMEM_PROFILE` would be reported by each command of a shell script (a build
//! runs thousands). The first process that reports it adds
//! `BLOCKMEM_PROFILE_WARNED=<the profile it named>` to its environment; its children
//! inherit the variable and stay silent about that profile. A child given another
//! profile still reports that one, and every process's statistics line still says its
//! profile was rejected.
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
//! alone. (Paths are compared as the shim keeps them, by their first 256 bytes.)

use core::ffi::c_char;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// The marker's name.
pub(crate) const NAME: &[u8] = b"BLOCKMEM_PROFILE_WARNED";

/// Entries the published environment holds, its null included (4 KiB of `.bss`, only
/// touched in a process that warns).
const ENV_CAP: usize = 512;

/// Bytes of the marker string: the name, `=`, a profile path as kept in
/// `config::PROFILE_PATH` (at most 256 bytes) or a source name, and the NUL.
const MARKER_CAP: usize = NAME.len() + 1 + 256 + 1;

/// The environment array published by [`publish`]; `AtomicPtr<c_char>` has the layout
/// of `*mut c_char`, so this is a `char *[ENV_CAP]` the C library can use.
static NEW_ENV: [AtomicPtr<c_char>; ENV_CAP] = [const { AtomicPtr::new(null_mut()) }; ENV_CAP];

/// The `NAME=value` string, NUL-terminated, that [`NEW_ENV`] points to.
static MARKER: [AtomicU8; MARKER_CAP] = [const { AtomicU8::new(0) }; MARKER_CAP];

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

/// True if the NUL-terminated string `entry` is an earlier marker (`NAME=…`).
///
/// # Safety
/// `entry` points to a NUL-terminated string.
unsafe fn is_marker(entry: *const c_char) -> bool {
    for (i, &want) in NAME.iter().chain(b"=").enumerate() {
        // SAFETY: the comparison stops at the first difference, at the latest at the
        // string's NUL (`want` is never 0), so `i` stays inside the string.
        if unsafe { *entry.add(i) } as u8 != want {
            return false;
        }
    }
    true
}

/// Adds `NAME=value` to the environment, replacing an inherited marker; false (and
/// nothing changed) if it does not fit. Called once, by the constructor.
pub(crate) fn publish(value: &[u8]) -> bool {
    if NAME.len() + 1 + value.len() + 1 > MARKER_CAP {
        return false;
    }
    for (slot, &b) in MARKER
        .iter()
        .zip(NAME.iter().chain(b"=").chain(value).chain(b"\0"))
    {
        slot.store(b, Ordering::Relaxed);
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
        if unsafe { is_marker(entry) } {
            continue;
        }
        match slots.next() {
            Some(slot) => slot.store(entry, Ordering::Relaxed),
            None => return false,
        }
    }
    let (Some(marker), Some(end)) = (slots.next(), slots.next()) else {
        return false;
    };
    marker.store(
        MARKER.as_ptr().cast::<c_char>().cast_mut(),
        Ordering::Relaxed,
    );
    end.store(null_mut(), Ordering::Relaxed);
    // Release: the array above is complete before `environ` names it.
    environ_atomic().store(
        NEW_ENV.as_ptr().cast::<*mut c_char>().cast_mut(),
        Ordering::Release,
    );
    true
}
