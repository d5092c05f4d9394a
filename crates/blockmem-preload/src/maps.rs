//! `/proc/self/maps`, read without allocating: the executable mappings of the process,
//! for the trace file (so that call sites can be resolved to objects after the run)
//! and for the hint map (to turn an object and offset into an address).
//!
//! Only the constructor, the exit function and a forked child's first traced call read
//! it, never an ordinary call: one `open`, a few `read`s into a stack buffer, `close`.
//! A line is parsed as it completes; lines longer than [`LINE_CAP`] bytes (paths near
//! `PATH_MAX`) are cut there, so their path is incomplete and they match nothing.

use core::mem::MaybeUninit;

/// Longest line kept.
pub(crate) const LINE_CAP: usize = 1024;
const CHUNK: usize = 4096;

/// One line of the maps file.
pub(crate) struct Mapping<'a> {
    /// First address.
    pub start: usize,
    /// One past the last address.
    pub end: usize,
    /// Offset in the file of `start`.
    pub offset: usize,
    /// The mapping is executable (`x` in its permissions).
    pub exec: bool,
    /// The path (empty for anonymous mappings; `[vdso]` and the like start with `[`).
    pub path: &'a [u8],
    /// The whole line, without its newline.
    pub line: &'a [u8],
}

/// Parses a hexadecimal number at the start of `s`; returns it and the rest.
fn hex(s: &[u8]) -> (usize, &[u8]) {
    let mut v = 0usize;
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        v = v.wrapping_mul(16).wrapping_add(usize::from(d));
        i += 1;
    }
    (v, s.get(i..).unwrap_or(&[]))
}

/// Skips one field and the spaces after it.
fn skip_field(s: &[u8]) -> &[u8] {
    let mut i = 0;
    while s.get(i).is_some_and(|&b| b != b' ') {
        i += 1;
    }
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    s.get(i..).unwrap_or(&[])
}

/// Parses `start-end perms offset dev inode   path`.
fn parse(line: &[u8]) -> Option<Mapping<'_>> {
    let (start, rest) = hex(line);
    let rest = rest.strip_prefix(b"-")?;
    let (end, rest) = hex(rest);
    let rest = rest.strip_prefix(b" ")?;
    let exec = rest.get(2) == Some(&b'x');
    let rest = skip_field(rest);
    let (offset, rest) = hex(rest);
    let rest = skip_field(skip_field(skip_field(rest)));
    Some(Mapping {
        start,
        end,
        offset,
        exec,
        path: rest,
        line,
    })
}

/// Calls `f` with every mapping of the process, in the file's order. False if the file
/// could not be opened (no `/proc`).
pub(crate) fn for_each(mut f: impl FnMut(&Mapping<'_>)) -> bool {
    let saved = crate::trace_file::errno();
    // SAFETY: a NUL-terminated constant path.
    let fd = unsafe {
        libc::open(
            c"/proc/self/maps".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        crate::trace_file::set_errno(saved);
        return false;
    }
    let mut chunk = [const { MaybeUninit::<u8>::uninit() }; CHUNK];
    let mut line = [const { MaybeUninit::<u8>::uninit() }; LINE_CAP];
    let mut len = 0usize;
    loop {
        // SAFETY: reads at most CHUNK bytes into `chunk`.
        let r = unsafe { libc::syscall(libc::SYS_read, fd, chunk.as_mut_ptr(), CHUNK) } as isize;
        if r < 0 && crate::trace_file::errno() == libc::EINTR {
            continue;
        }
        if r <= 0 {
            break;
        }
        for c in chunk.iter().take(r as usize) {
            // SAFETY: the first `r` bytes were written by `read`.
            let b = unsafe { c.assume_init() };
            if b == b'\n' {
                // SAFETY: the first `len` bytes of `line` were written below.
                let text = unsafe { core::slice::from_raw_parts(line.as_ptr().cast::<u8>(), len) };
                if let Some(m) = parse(text) {
                    f(&m);
                }
                len = 0;
            } else if let Some(slot) = line.get_mut(len) {
                slot.write(b);
                len += 1;
            }
        }
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    crate::trace_file::set_errno(saved);
    true
}
