//! `BLOCKMEM_HINTS=<file>`: per-call-site hints, written by `blockmem trace --advise`.
//!
//! # The hint map
//!
//! A small text file; `#` starts a comment, blank lines are ignored. The first other
//! line is `blockmem-hints 1`; every further line names one call site:
//!
//! ```text
//! blockmem-hints 1
//! # hint   offset     object
//! noreuse  0x1a2f     /usr/bin/python3.12
//! reuse    0x4b10c    /usr/lib/x86_64-linux-gnu/libz.so.1.3
//! ```
//!
//! `hint` is `reuse`, `noreuse` or `auto`; `offset` (hexadecimal with `0x`, or decimal)
//! is the call's return address as an offset in the object *file* (what
//! `/proc/self/maps` relates addresses to: address − mapping start + mapping offset);
//! `object` is the absolute path of the executable or shared object, to the end of the
//! line. At most [`MAX_SITES`] sites and [`MAX_FILE`] bytes.
//!
//! # Loading and lookup
//!
//! The constructor reads the file like the profile (`blockmem::autoload`'s reader:
//! regular files only, opened `O_NONBLOCK | O_CLOEXEC`, `fstat` first, size-limited;
//! ignored entirely under `AT_SECURE` with the rest of the environment), turns every
//! site into an address with the executable mappings in `/proc/self/maps`, and fills
//! a fixed open-addressing table of [`SLOTS`] return addresses. Sites in objects not
//! mapped at that point (loaded later with `dlopen`) are not applied.
//!
//! A call looks its site up only at or above `FROM`: the smallest size at which a
//! hint can change the kernel the compiled plan picks
//! (`blockmem::policy::Plan::hint_matters_from`). Below it, and for every call up to
//! the inline size, the lookup costs nothing. Above it: one multiply, and a few
//! relaxed loads of a table written once before `MODE` published it. No lock, no
//! allocation, async-signal-safe.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use blockmem::profile::Family;
use blockmem::Hint;

use crate::out::Line;
use crate::MODE_HINTS;

/// Table slots (a power of two, twice [`MAX_SITES`]: probe runs stay short).
const SLOTS: usize = 1024;
/// Sites a hint map may hold.
pub(crate) const MAX_SITES: usize = SLOTS / 2;
/// Largest hint map read.
pub(crate) const MAX_FILE: usize = 64 << 10;
/// Longest object path.
const MAX_PATH: usize = 1000;

static KEYS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static HINTS: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];
/// Smallest call size a hint can change (`usize::MAX` until loaded).
static FROM: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Sites placed in the table (for the statistics line).
static PLACED: AtomicUsize = AtomicUsize::new(0);

/// Appends `; hints N sites from SIZE` to the statistics line when a map is in use.
pub(crate) fn describe(line: &mut Line) {
    let placed = PLACED.load(Ordering::Relaxed);
    if placed > 0 {
        line.bytes(b"; hints ");
        line.num(placed as u64);
        line.bytes(b" sites from ");
        line.num(FROM.load(Ordering::Relaxed) as u64);
        line.bytes(b" B");
    }
}

const HINT_AUTO: u8 = 0;
const HINT_REUSE: u8 = 1;
const HINT_NO_REUSE: u8 = 2;

#[inline(always)]
fn slot_of(site: usize) -> usize {
    ((site as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize & (SLOTS - 1)
}

/// The hint for a call of `n` bytes from `site`: `Auto` unless hints are on, `n` is
/// large enough for a hint to matter, and the map names the site.
#[inline(always)]
pub(crate) fn for_call(mode: u8, site: usize, n: usize) -> Hint {
    if mode & MODE_HINTS == 0 || n < FROM.load(Ordering::Relaxed) || site == 0 {
        return Hint::Auto;
    }
    lookup(site)
}

fn lookup(site: usize) -> Hint {
    let mut i = slot_of(site);
    for _ in 0..SLOTS {
        let (Some(k), Some(h)) = (KEYS.get(i), HINTS.get(i)) else {
            break;
        };
        match k.load(Ordering::Relaxed) {
            0 => break,
            key if key == site => {
                return match h.load(Ordering::Relaxed) {
                    HINT_REUSE => Hint::Reuse,
                    HINT_NO_REUSE => Hint::NoReuse,
                    _ => Hint::Auto,
                };
            }
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
    Hint::Auto
}

/// Inserts a site (constructor only, before `MODE_HINTS` is published).
fn insert(site: usize, hint: u8) -> bool {
    let mut i = slot_of(site);
    for _ in 0..SLOTS {
        let (Some(k), Some(h)) = (KEYS.get(i), HINTS.get(i)) else {
            return false;
        };
        let key = k.load(Ordering::Relaxed);
        if key == 0 || key == site {
            h.store(hint, Ordering::Relaxed);
            k.store(site, Ordering::Relaxed);
            return true;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    false
}

/// One parsed site line.
#[derive(Clone, Copy)]
struct Site<'a> {
    hint: u8,
    offset: usize,
    path: &'a [u8],
}

/// Splits off the first space-separated word.
fn word(s: &[u8]) -> (&[u8], &[u8]) {
    let s = s.trim_ascii_start();
    let end = s
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .unwrap_or(s.len());
    (s.get(..end).unwrap_or(&[]), s.get(end..).unwrap_or(&[]))
}

fn number(s: &[u8]) -> Option<usize> {
    let (digits, radix) = match s.strip_prefix(b"0x") {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: usize = 0;
    for &b in digits {
        let d = (b as char).to_digit(radix)? as usize;
        v = v.checked_mul(radix as usize)?.checked_add(d)?;
    }
    Some(v)
}

/// Why a line was rejected.
fn parse_site(line: &[u8]) -> Result<Site<'_>, &'static [u8]> {
    let (hint, rest) = word(line);
    let hint = match hint {
        b"reuse" => HINT_REUSE,
        b"noreuse" => HINT_NO_REUSE,
        b"auto" => HINT_AUTO,
        _ => return Err(b"expected a hint: reuse, noreuse or auto"),
    };
    let (offset, rest) = word(rest);
    let offset = number(offset).ok_or(b"expected an offset (0x... or decimal)".as_slice())?;
    let path = rest.trim_ascii();
    if path.first() != Some(&b'/') || path.len() > MAX_PATH {
        return Err(b"expected an absolute object path (at most 1000 bytes)");
    }
    Ok(Site { hint, offset, path })
}

/// The lines of `text` that are neither blank nor comments, numbered from 1.
fn content_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, l)| {
            let l = match l.iter().position(|&b| b == b'#') {
                Some(c) => l.get(..c).unwrap_or(&[]),
                None => l,
            };
            let l = l.trim_ascii();
            (!l.is_empty()).then_some((i + 1, l))
        })
}

/// Checks the whole map; the first problem as (line, reason).
fn check(text: &[u8]) -> Result<usize, (usize, &'static [u8])> {
    let mut lines = content_lines(text);
    match lines.next() {
        Some((_, b"blockmem-hints 1")) => {}
        Some((n, _)) => return Err((n, b"expected the first line `blockmem-hints 1`")),
        None => return Err((0, b"empty: expected `blockmem-hints 1`")),
    }
    let mut sites = 0;
    for (n, l) in lines {
        parse_site(l).map_err(|e| (n, e))?;
        sites += 1;
        if sites > MAX_SITES {
            return Err((n, b"more than 512 sites"));
        }
    }
    Ok(sites)
}

/// Resolves every site of `text` (already checked) through the executable mappings;
/// returns how many were placed in the table.
fn resolve(text: &[u8]) -> usize {
    let mut placed = 0;
    crate::maps::for_each(|m| {
        if !m.exec {
            return;
        }
        for (_, l) in content_lines(text).skip(1) {
            let Ok(s) = parse_site(l) else { continue };
            let span = m.end.wrapping_sub(m.start);
            if s.path == m.path && s.offset >= m.offset && s.offset - m.offset < span {
                let addr = m.start + (s.offset - m.offset);
                if insert(addr, s.hint) {
                    placed += 1;
                }
            }
        }
    });
    placed
}

fn warn_line(path: &[u8], line: usize, reason: &[u8]) {
    let mut l = Line::new();
    l.bytes(b"blockmem: BLOCKMEM_HINTS=");
    l.bytes(path);
    l.bytes(b": ");
    if line > 0 {
        l.bytes(b"line ");
        l.num(line as u64);
        l.bytes(b": ");
    }
    l.bytes(reason);
    l.bytes(b"; running without hints (the format: `blockmem trace --advise`, README)\n");
    l.write_to(2);
}

/// Reads the hint map at `path` and fills the table (see the module docs); true if at
/// least one site was placed, and then the caller sets [`MODE_HINTS`]. Problems are
/// reported on stderr, naming the file and line; the program always runs on.
///
/// # Safety
/// Only from the constructor (single-threaded, before `MODE` is published).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) unsafe fn load(path: &[u8]) -> bool {
    use blockmem::autoload::{read_regular_file, ReadError};
    if path.is_empty() || path.len() > MAX_PATH {
        warn_line(path, 0, b"path empty or longer than 1000 bytes");
        return false;
    }
    let mut name = crate::trace_file::Local::new();
    let mut w = name.writer();
    w.bytes(path);
    w.byte(0);
    // SAFETY: an anonymous private mapping; no existing memory is affected.
    let mem = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            MAX_FILE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `mem` holds MAX_FILE writable bytes; the path is NUL-terminated.
    let read = unsafe { read_regular_file(w.as_slice(), mem.cast(), MAX_FILE) };
    let placed = match read {
        Err(ReadError::NotRegular) => {
            warn_line(path, 0, b"not a regular file");
            0
        }
        Err(ReadError::Unreadable) => {
            warn_line(path, 0, b"cannot be opened or read");
            0
        }
        Ok(None) => {
            warn_line(path, 0, b"larger than 64 KiB");
            0
        }
        Ok(Some(len)) => {
            // SAFETY: the first `len` bytes were read into the mapping.
            let text = unsafe { core::slice::from_raw_parts(mem.cast::<u8>(), len) };
            match check(text) {
                Ok(_) => resolve(text),
                Err((line, reason)) => {
                    warn_line(path, line, reason);
                    0
                }
            }
        }
    };
    // SAFETY: our mapping, no longer used.
    unsafe { libc::munmap(mem, MAX_FILE) };
    if placed > 0 {
        let plan = blockmem::dispatch::plan();
        let from = Family::ALL
            .iter()
            .map(|&f| plan.hint_matters_from(f))
            .min()
            .unwrap_or(usize::MAX);
        FROM.store(from, Ordering::Relaxed);
        PLACED.store(placed, Ordering::Relaxed);
    }
    placed > 0
}

/// Elsewhere the map is not read.
///
/// # Safety
/// Only from the constructor.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub(crate) unsafe fn load(path: &[u8]) -> bool {
    warn_line(path, 0, b"hint maps are read on x86-64 Linux only");
    false
}
