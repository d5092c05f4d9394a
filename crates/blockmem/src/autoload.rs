//! Loading the calibration profile once, on the first operation that needs the policy,
//! from `BLOCKMEM_PROFILE` or the default path (`$XDG_CACHE_HOME/blockmem/profile`,
//! else `$HOME/.cache/blockmem/profile`).
//!
//! This runs inside whatever operation came first — possibly a `memcpy` under the
//! shim, possibly in a signal handler — so it allocates nothing, takes no lock and
//! calls no libc I/O: the environment comes from `environ`, the file through raw
//! `openat`/`fstat`/`read`/`close` system calls into a fixed buffer. A path that is not
//! a regular file (a directory, FIFO or device) is rejected before anything is read,
//! and never opened in a way that can block. Under AT_SECURE (set-user-ID and similar
//! programs) the environment is ignored and no file is read: such programs get the
//! built-in table.

use crate::profile::{ErrorKind, ProfileError};

/// Largest profile file read (a generated profile is about 1.5 KiB).
pub const MAX_PROFILE_BYTES: usize = 16 << 10;
const MAX_PATH: usize = 1024;

/// Where the profile in use came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// Nothing loaded yet (no operation has needed the policy).
    NotLoaded,
    /// No profile file: the built-in table of the CPU class.
    Defaults,
    /// The file named by `BLOCKMEM_PROFILE`.
    Env,
    /// The default path.
    DefaultPath,
    /// Installed by the program through [`crate::dispatch::install`].
    Installed,
    /// Environment ignored: the process runs with AT_SECURE.
    Secure,
}

impl Source {
    /// A stable name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Source::NotLoaded => "not-loaded",
            Source::Defaults => "built-in",
            Source::Env => "BLOCKMEM_PROFILE",
            Source::DefaultPath => "default-path",
            Source::Installed => "installed",
            Source::Secure => "built-in (AT_SECURE: environment ignored)",
        }
    }
}

/// What a load attempt found: the file's bytes (in `buf[..len]`), or why not.
pub(crate) enum Found {
    /// No file to read (variable unset and no default file).
    Nothing,
    /// AT_SECURE process.
    Secure,
    /// Read `len` bytes from the source.
    Bytes(Source, usize),
    /// The profile file could not be read, was too large, or is not a regular file.
    Error(Source, ProfileError),
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) mod sys {
    extern "C" {
        static environ: *const *const u8;
        fn getauxval(kind: u64) -> u64;
    }
    const AT_SECURE: u64 = 23;

    pub fn secure() -> bool {
        // SAFETY: getauxval only reads the auxiliary vector; async-signal-safe.
        unsafe { getauxval(AT_SECURE) != 0 }
    }

    /// The value of `name` in the environment, as bytes (without the NUL).
    pub fn getenv(name: &[u8]) -> Option<&'static [u8]> {
        // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings
        // maintained by libc (null before libc initialises: then no variables).
        unsafe {
            let mut e = environ;
            if e.is_null() {
                return None;
            }
            while !(*e).is_null() {
                let s = *e;
                let mut i = 0;
                while i < name.len() && *s.add(i) == name[i] {
                    i += 1;
                }
                if i == name.len() && *s.add(i) == b'=' {
                    let v = s.add(i + 1);
                    let mut len = 0;
                    while *v.add(len) != 0 {
                        len += 1;
                    }
                    return Some(core::slice::from_raw_parts(v, len));
                }
                e = e.add(1);
            }
            None
        }
    }

    pub(crate) use crate::sys::syscall4;

    const SYS_READ: usize = 0;
    const SYS_CLOSE: usize = 3;

    /// Opens the NUL-terminated `path` read-only, `O_NONBLOCK | O_CLOEXEC` (a FIFO or
    /// device never blocks the open); the descriptor, or a negative errno.
    ///
    /// # Safety
    /// `path` is NUL-terminated.
    unsafe fn open_read(path: &[u8]) -> isize {
        const SYS_OPENAT: usize = 257;
        const AT_FDCWD: isize = -100;
        const O_RDONLY_NONBLOCK_CLOEXEC: usize = 0o4000 | 0o2000000;
        debug_assert!(path.last() == Some(&0));
        // SAFETY: a NUL-terminated path (contract); the kernel only reads it.
        unsafe {
            syscall4(
                SYS_OPENAT,
                AT_FDCWD as usize,
                path.as_ptr() as usize,
                O_RDONLY_NONBLOCK_CLOEXEC,
                0,
            )
        }
    }

    /// Why a file was not read.
    pub enum ReadError {
        /// It cannot be opened or read.
        Unreadable,
        /// It is not a regular file (a directory, FIFO, socket or device).
        NotRegular,
    }

    /// Reads the NUL-terminated `path` into `buf[..cap]`; `Ok(None)` if it is larger
    /// than `cap`. `buf` may be uninitialised: it is only written (a zeroed 16 KiB
    /// buffer would cost a `memset` call).
    ///
    /// The file is opened non-blocking and checked with `fstat` before any read, so a
    /// FIFO without a writer (or a terminal, or any device) is rejected at once: a
    /// blocking open or read of one would hang whatever operation came first.
    ///
    /// # Safety
    /// `buf` valid for `cap` writes.
    pub unsafe fn read_file(
        path: &[u8],
        buf: *mut u8,
        cap: usize,
    ) -> Result<Option<usize>, ReadError> {
        const SYS_FSTAT: usize = 5;
        // `struct stat` on x86-64 Linux: 144 bytes, `st_mode` (u32) at byte 24.
        const STAT_WORDS: usize = 18;
        const ST_MODE_WORD: usize = 3;
        const S_IFMT: u64 = 0o170000;
        const S_IFREG: u64 = 0o100000;
        debug_assert!(path.last() == Some(&0));
        // SAFETY: path is NUL-terminated; buf is valid for cap writes (contract); the
        // kernel writes a whole `struct stat` into `st` when fstat succeeds, and only
        // then is it read.
        unsafe {
            let fd = open_read(path);
            if fd < 0 {
                return Err(ReadError::Unreadable);
            }
            let mut st = core::mem::MaybeUninit::<[u64; STAT_WORDS]>::uninit();
            let r = syscall4(SYS_FSTAT, fd as usize, st.as_mut_ptr() as usize, 0, 0);
            let regular =
                r == 0 && (st.as_ptr() as *const u64).add(ST_MODE_WORD).read() & S_IFMT == S_IFREG;
            if !regular {
                syscall4(SYS_CLOSE, fd as usize, 0, 0, 0);
                return Err(if r == 0 {
                    ReadError::NotRegular
                } else {
                    ReadError::Unreadable
                });
            }
            let mut len = 0;
            let result = loop {
                if len == cap {
                    // One more byte would not fit: too large.
                    let mut probe = [0u8; 1];
                    let r = syscall4(SYS_READ, fd as usize, probe.as_mut_ptr() as usize, 1, 0);
                    break if r == 0 { Ok(Some(len)) } else { Ok(None) };
                }
                let r = syscall4(SYS_READ, fd as usize, buf.add(len) as usize, cap - len, 0);
                if r == -4 {
                    continue; // EINTR
                }
                if r < 0 {
                    break Err(ReadError::Unreadable);
                }
                if r == 0 {
                    break Ok(Some(len));
                }
                len += r as usize;
            };
            syscall4(SYS_CLOSE, fd as usize, 0, 0, 0);
            result
        }
    }

    /// True once libc has set `environ` (it is null while the program is relocated).
    pub fn environ_set() -> bool {
        // SAFETY: reads the pointer only.
        unsafe { !environ.is_null() }
    }

    /// [`super::env_at_load`] from `/proc/self/environ`, read in chunks: the entries
    /// are NUL-terminated `NAME=value` strings.
    ///
    /// # Safety
    /// `buf` valid for `cap` writes.
    pub unsafe fn scan_proc_environ(name: &[u8], buf: *mut u8, cap: usize) -> Option<usize> {
        const CHUNK: usize = 512;
        let path = b"/proc/self/environ\0";
        // SAFETY: a NUL-terminated path; reads go to `chunk`, writes to buf[..cap].
        unsafe {
            let fd = open_read(path);
            if fd < 0 {
                return None;
            }
            let mut chunk = core::mem::MaybeUninit::<[u8; CHUNK]>::uninit();
            let mut m = EnvMatch::new(name);
            let found = loop {
                let r = syscall4(SYS_READ, fd as usize, chunk.as_mut_ptr() as usize, CHUNK, 0);
                if r == -4 {
                    continue; // EINTR
                }
                if r <= 0 {
                    break None;
                }
                let bytes = core::slice::from_raw_parts(chunk.as_ptr() as *const u8, r as usize);
                if let Some(len) = m.feed(bytes, buf, cap) {
                    break Some(len);
                }
            };
            syscall4(SYS_CLOSE, fd as usize, 0, 0, 0);
            found
        }
    }

    /// A search for `NAME=` at the start of NUL-terminated entries fed in pieces.
    pub struct EnvMatch<'a> {
        name: &'a [u8],
        /// Bytes of `NAME=` matched in the current entry; `usize::MAX` once it differs.
        at: usize,
        /// Bytes of the value copied so far.
        len: usize,
    }

    impl<'a> EnvMatch<'a> {
        /// A search for `name`.
        pub fn new(name: &'a [u8]) -> Self {
            EnvMatch {
                name,
                at: 0,
                len: 0,
            }
        }

        /// Feeds the next bytes; the value's length once its entry ends (the value in
        /// `buf[..len]`, cut at `cap`).
        ///
        /// # Safety
        /// `buf` valid for `cap` writes.
        pub unsafe fn feed(&mut self, bytes: &[u8], buf: *mut u8, cap: usize) -> Option<usize> {
            let key = self.name.len();
            for &b in bytes {
                if b == 0 {
                    if self.at == key + 1 {
                        return Some(self.len);
                    }
                    self.at = 0;
                } else if self.at == key + 1 {
                    if self.len < cap {
                        // SAFETY: len < cap (contract).
                        unsafe { buf.add(self.len).write(b) };
                        self.len += 1;
                    }
                } else if self.at != usize::MAX {
                    let want = if self.at < key {
                        self.name[self.at]
                    } else {
                        b'='
                    };
                    self.at = if b == want { self.at + 1 } else { usize::MAX };
                }
            }
            None
        }
    }
}

/// The value of `name` in the process's environment, copied into `buf[..cap]` (cut at
/// `cap` bytes); its length, or `None` where the variable is unset or the process runs
/// with AT_SECURE. Reads libc's `environ` where it is set, else `/proc/self/environ`
/// (what the kernel passed at `exec`): an IFUNC resolver runs while the program is
/// relocated, before libc has set `environ`. Allocation-free and async-signal-safe.
///
/// # Safety
/// `buf` valid for `cap` writes.
pub unsafe fn env_at_load(name: &[u8], buf: *mut u8, cap: usize) -> Option<usize> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        if sys::secure() {
            return None;
        }
        if let Some(v) = sys::environ_set().then(|| sys::getenv(name)) {
            let v = v?;
            let len = v.len().min(cap);
            let mut i = 0;
            while i < len {
                // SAFETY: i < len <= cap (contract).
                unsafe { buf.add(i).write(v[i]) };
                i += 1;
            }
            return Some(len);
        }
        // SAFETY: forwarded contract.
        unsafe { sys::scan_proc_environ(name, buf, cap) }
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (name, buf, cap);
        None
    }
}

/// Reads a small regular file the way the profile is read (see the module docs):
/// `path` NUL-terminated, opened `O_NONBLOCK | O_CLOEXEC` and checked with `fstat`
/// before any read, into `buf[..cap]`; `Ok(None)` if it is larger than `cap`. The
/// LD_PRELOAD shim reads its hint map (`BLOCKMEM_HINTS`) with it.
///
/// # Safety
/// `buf` valid for `cap` writes.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub unsafe fn read_regular_file(
    path: &[u8],
    buf: *mut u8,
    cap: usize,
) -> Result<Option<usize>, sys::ReadError> {
    // SAFETY: forwarded contract.
    unsafe { sys::read_file(path, buf, cap) }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use sys::ReadError;

pub use crate::sys::cpus_available;

/// Appends `part` to the path at `buf[..*len]` (a buffer of [`MAX_PATH`] bytes that
/// may be uninitialised: zeroing it would cost a `memset` call) and NUL-terminates it;
/// false if it does not fit.
///
/// # Safety
/// `buf` valid for `MAX_PATH` writes.
unsafe fn push(buf: *mut u8, len: &mut usize, part: &[u8]) -> bool {
    if *len + part.len() + 1 > MAX_PATH {
        return false;
    }
    let mut i = 0;
    while i < part.len() {
        // SAFETY: len + i < MAX_PATH - 1, inside the buffer.
        unsafe { buf.add(*len + i).write(part[i]) };
        i += 1;
    }
    *len += part.len();
    // SAFETY: len < MAX_PATH, inside the buffer.
    unsafe { buf.add(*len).write(0) };
    true
}

/// Finds and reads the profile into `buf` (which may be uninitialised; on
/// `Found::Bytes(_, len)` the first `len` bytes are written).
///
/// # Safety
/// `buf` valid for [`MAX_PROFILE_BYTES`] writes.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) unsafe fn find(buf: *mut u8) -> Found {
    if sys::secure() {
        return Found::Secure;
    }
    let mut storage = core::mem::MaybeUninit::<[u8; MAX_PATH]>::uninit();
    let path = storage.as_mut_ptr() as *mut u8;
    let mut len = 0;
    let source;
    // SAFETY (every `push` below): `path` is valid for MAX_PATH writes.
    if let Some(p) = sys::getenv(b"BLOCKMEM_PROFILE").filter(|p| !p.is_empty()) {
        source = Source::Env;
        if !unsafe { push(path, &mut len, p) } {
            return Found::Error(
                source,
                ProfileError {
                    line: 0,
                    kind: ErrorKind::Unreadable,
                },
            );
        }
    } else {
        source = Source::DefaultPath;
        let ok = match sys::getenv(b"XDG_CACHE_HOME").filter(|p| !p.is_empty()) {
            Some(xdg) => unsafe {
                push(path, &mut len, xdg) && push(path, &mut len, b"/blockmem/profile")
            },
            None => match sys::getenv(b"HOME").filter(|p| !p.is_empty()) {
                Some(home) => unsafe {
                    push(path, &mut len, home) && push(path, &mut len, b"/.cache/blockmem/profile")
                },
                None => return Found::Nothing,
            },
        };
        if !ok {
            return Found::Nothing;
        }
    }
    // SAFETY: forwarded contract.
    // SAFETY: a successful push wrote path[..=len] (NUL included); `buf` per contract.
    match unsafe {
        sys::read_file(
            core::slice::from_raw_parts(path, len + 1),
            buf,
            MAX_PROFILE_BYTES,
        )
    } {
        Ok(Some(n)) => Found::Bytes(source, n),
        Ok(None) => Found::Error(
            source,
            ProfileError {
                line: 0,
                kind: ErrorKind::TooLarge,
            },
        ),
        // Wherever it is, something other than a regular file is never a profile.
        Err(sys::ReadError::NotRegular) => Found::Error(
            source,
            ProfileError {
                line: 0,
                kind: ErrorKind::NotRegularFile,
            },
        ),
        // A missing default file is normal; a named one that cannot be read is an error.
        Err(sys::ReadError::Unreadable) if source == Source::Env => Found::Error(
            source,
            ProfileError {
                line: 0,
                kind: ErrorKind::Unreadable,
            },
        ),
        Err(sys::ReadError::Unreadable) => Found::Nothing,
    }
}

/// No loader on this target: the built-in table.
///
/// # Safety
/// None needed; `unsafe` to match the Linux signature.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub(crate) unsafe fn find(_buf: *mut u8) -> Found {
    Found::Nothing
}
