//! Output without `std`, `core::fmt` or allocation: a fixed line buffer on the stack,
//! decimal numbers by repeated division, and `write(2)` until everything is written.

use core::mem::MaybeUninit;

/// Writes all of `bytes` to `fd`, retrying on `EINTR` and short writes. Returns false
/// on any other error (there is nowhere to report it).
pub(crate) fn write_all(fd: i32, bytes: &[u8]) -> bool {
    let mut p = bytes.as_ptr();
    let mut left = bytes.len();
    while left > 0 {
        // SAFETY: `p..p+left` lies inside `bytes`. The system call itself, not libc's
        // `write`: the trace I/O library counts the program's writes, not the shim's.
        let r = unsafe { libc::syscall(libc::SYS_write, fd, p, left) } as isize;
        if r > 0 {
            let done = r as usize;
            left -= done.min(left);
            p = p.wrapping_add(done);
        } else if r < 0 && errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// A few words for the errnos a trace file's creation or writing meets.
pub(crate) fn errno_text(e: i32) -> &'static [u8] {
    match e {
        libc::ENOENT => b"no such file or directory",
        libc::EACCES | libc::EPERM => b"permission denied",
        libc::ENOTDIR => b"a component of the path is not a directory",
        libc::EROFS => b"read-only file system",
        libc::ENOSPC => b"no space left on device",
        libc::EDQUOT => b"disk quota exceeded",
        libc::EFBIG => b"file too large",
        libc::EIO => b"input/output error",
        libc::ELOOP => b"too many levels of symbolic links",
        libc::ENAMETOOLONG => b"file name too long",
        libc::EMFILE | libc::ENFILE => b"too many open files",
        libc::EEXIST => b"every name tried exists already",
        libc::ENOMEM => b"out of memory",
        _ => b"system error",
    }
}

fn errno() -> i32 {
    // SAFETY: `__errno_location` returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// Capacity of a [`Line`]; longer content is cut off.
const LINE_CAP: usize = 1024;

/// One line of output being assembled. Left uninitialised on purpose: a zeroed
/// kilobyte would be a `memset` call.
pub(crate) struct Line {
    buf: [MaybeUninit<u8>; LINE_CAP],
    len: usize,
}

impl Line {
    pub(crate) fn new() -> Line {
        Line {
            buf: [const { MaybeUninit::uninit() }; LINE_CAP],
            len: 0,
        }
    }

    pub(crate) fn byte(&mut self, b: u8) {
        if self.len < LINE_CAP {
            // SAFETY: `len < LINE_CAP`, so the byte lies inside `buf`.
            unsafe {
                self.buf
                    .as_mut_ptr()
                    .add(self.len)
                    .write(MaybeUninit::new(b))
            };
            self.len += 1;
        }
    }

    pub(crate) fn bytes(&mut self, s: &[u8]) {
        for &b in s {
            self.byte(b);
        }
    }

    /// Appends `v` in decimal.
    pub(crate) fn num(&mut self, v: u64) {
        let mut div = 10_000_000_000_000_000_000u64;
        let mut started = false;
        while div > 0 {
            let digit = (v / div % 10) as u8;
            if digit != 0 || started || div == 1 {
                self.byte(b'0' + digit);
                started = true;
            }
            div /= 10;
        }
    }

    /// The bytes so far.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes were written by `byte`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }

    /// Writes the line to `fd`; false if that failed.
    pub(crate) fn write_to(&self, fd: i32) -> bool {
        write_all(fd, self.as_bytes())
    }
}
