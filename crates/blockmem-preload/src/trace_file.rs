//! The trace file: how `BLOCKMEM_TRACE` output is laid out, and the pieces of the
//! shim that write it (file creation, header, trailer, the record encoder).
//!
//! # Layout (version 5)
//!
//! A trace file is a sequence of *blocks*. Every block starts with the same 12 bytes
//! and can be skipped without understanding it:
//!
//! ```text
//! magic   4 bytes  "BMTR"
//! kind    u16      1 = header, 2 = records, 3 = trailer, 4 = maps, 5 = fate, 6 = I/O
//! flags   u16      0
//! length  u32      bytes of payload that follow
//! ```
//!
//! All integers are little-endian. A file holds one header block first, then a maps
//! block, then record blocks (one per flushed buffer, in the order they were written),
//! then, when the process exited through `exit`, a second maps block and one trailer
//! block (none after `_exit`, a fatal signal or an `exec`: the records flushed before
//! stay readable); fate blocks anywhere after the header, and I/O blocks before the
//! trailer. Version 3 differs only in having no fate and I/O blocks, version 2 also in
//! its records (no thread), version 1 also in having no call sites and no maps blocks.
//!
//! **Header** (kind 1): fixed fields, then three length-prefixed strings.
//!
//! ```text
//! u32 version (4)            u32 flags (bit 0: forked child, bit 1: fork detected
//!                                       by pthread_atfork instead of MADV_WIPEONFORK)
//! u32 pid                    u32 ppid
//! u32 parent pid (forked child: the process that forked; else 0)
//! u32 sample every N calls (0: never probe)
//! u64 TSC frequency, kHz (measured against CLOCK_MONOTONIC at load; a forked child
//!     inherits its parent's)
//! u64 start TSC              u64 start CLOCK_MONOTONIC ns   u64 start CLOCK_REALTIME ns
//!     (a forked child: the TSC read by its parent just before `fork`, and the clocks
//!     when the child started its file)
//! u32 timer overhead, TSC cycles (smallest of 32 empty timed regions)
//! u32 probe hit threshold, cycles (the profile's probe_hit_max)
//! u32 inline maximum, bytes (calls up to it run the shim's inline rungs)
//! u32 spread lines probed per region at most (8)
//! u32 buffers               u32 buffer bytes
//! u8  profile source (0 not loaded, 1 cpuid defaults, 2 BLOCKMEM_PROFILE, 3 default
//!     path, 4 installed, 5 AT_SECURE)
//! u8  forced kernel (0 none, else kernel slot)
//! u8 × 6  kernel slots of copy_temporal, copy_cold_src, copy_stream, set_temporal,
//!         set_stream, zero_stream
//! u64 × 10  stream_auto, stream_auto_cold_dst, stream_no_reuse, stream_reuse,
//!           probe_min, rep_movsb_min, rep_movsb_max, llc_effective, copy fast path
//!           limit, set fast path limit
//! u8 kernel slot count K, then K names (u8 length + bytes): slot 0 is `inline`, the
//!    last `libc`, the others blockmem's kernels in `KernelId` order
//! u16 length + bytes: argv[0] of the program (cut at 255 bytes)
//! ```
//!
//! **Records** (kind 2): `u32 buffer index`, `u32 record count`, then the records.
//! Each record is variable-length; the deltas restart from zero in every block, so each
//! block decodes on its own:
//!
//! ```text
//! tag      u8      bits 0-1 op as the caller named it (0 memcpy/mempcpy and _chk,
//!                  1 memmove, 2 memset, 3 bzero); bit 2 sampled (probe fields
//!                  follow); bit 3 copy/move: the ranges overlap, set: the fill byte
//!                  is 0; bits 4-7 kernel slot (15: the slot is the next byte)
//! [kernel  u8      only when bits 4-7 are 15]
//! start    zigzag varint  TSC at the call's start minus the previous record's
//! cycles   varint         TSC cycles of the call (timer overhead included)
//! size     varint         bytes
//! dst      zigzag varint  destination address minus the previous record's
//! src      zigzag varint  source address minus the previous copy/move record's
//!                         (copy and move only)
//! site     zigzag varint  the caller's return address minus the previous record's
//!                         (0: not known; version 2 and later)
//! tid      zigzag varint  the calling thread's kernel id minus the previous record's
//!                         (version 3 and later; a buffer usually holds one thread's
//!                         records, so this is one zero byte)
//! if sampled, for the source (copy and move), then the destination:
//!   first  varint  cycles of a timed load of the region's first byte
//!   spread u8      bits 0-3 lines probed across the block, bits 4-7 of those cached
//! ```
//!
//! Varints are LEB128 (7 bits a byte, low first); zigzag maps a signed delta `d` to
//! `(d << 1) ^ (d >> 63)`. The spread lines are the distinct cache lines holding the
//! bytes at `(2k+1)·n/16`, k = 0..7, leaving out the first line and, above the inline
//! size, the line of byte `n/2` (the one blockmem's own probe reads); a line counts as
//! cached when its timed load took at most the header's hit threshold.
//!
//! The call site is the return address the exported function found on the stack: the
//! instruction after the program's `call` (the report resolves `site - 1` to a
//! function and line, and the hint map names sites by it).
//!
//! **Maps** (kind 4): `u8 when` (1 at the start of the file, 2 at exit), then the
//! process's executable file mappings as `/proc/self/maps` lines (`start-end perms
//! offset dev inode path`, each ending in a newline). With the records' sites they
//! turn an address into an object and an offset within it after the run; a library
//! loaded with `dlopen` appears in the exit block.
//!
//! **Fate** (kind 5, module `watch`): what became of one watched destination, written
//! when every watched page of it has met its fate.
//!
//! ```text
//! u64 the call's start TSC     u64 destination     u64 size     u64 call site
//! u64 thread id | op << 32 (op as in the records' tag)
//! u32 pages watched
//! u32 × 8 pages whose first later access was: a load, a store, a system call that
//!     read it (write, send, …), one that wrote it (read, recv, …), a block operation
//!     reading it (its source), one writing it; released (freed, unmapped,
//!     re-protected) before any access; untouched within the watch window
//! u64 nanoseconds from the arming to the first access (0: none)
//! ```
//!
//! **I/O** (kind 6, written at exit): the program's I/O calls by call site.
//! `u32 count`, then per entry `u32 op` (0 read, 1 write, 2 pread, 3 pwrite, 4 readv,
//! 5 writev, 6 recv, 7 send, 8 recvfrom, 9 sendto, 10 recvmsg, 11 sendmsg, 12 preadv
//! and preadv2, 13 pwritev and pwritev2), `u64 call
//! site` (0: not known), `u64 calls`, `u64 bytes transferred`, `u64 bytes asked for`,
//! `u64 calls that failed`, `u64 TSC cycles in the calls`.
//!
//! **Trailer** (kind 3):
//!
//! ```text
//! u64 end TSC            u64 end CLOCK_MONOTONIC ns
//! u64 records written    u64 calls not recorded: every buffer tried was busy
//! u64 calls not recorded: a forked child was still creating its file
//! u64 records lost to failed writes    u64 buffers busy at exit (not flushed)
//! ```

use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering};

use blockmem::KernelId;

/// Block magic.
pub(crate) const MAGIC: [u8; 4] = *b"BMTR";
/// Block kinds.
pub(crate) const KIND_HEADER: u16 = 1;
pub(crate) const KIND_RECORDS: u16 = 2;
pub(crate) const KIND_TRAILER: u16 = 3;
pub(crate) const KIND_MAPS: u16 = 4;
pub(crate) const KIND_FATE: u16 = 5;
pub(crate) const KIND_IO: u16 = 6;
/// Maps block `when` values.
pub(crate) const MAPS_START: u8 = 1;
pub(crate) const MAPS_EXIT: u8 = 2;
/// Bytes of a block's framing.
pub(crate) const BLOCK_HEAD: usize = 12;
/// Format version.
pub(crate) const VERSION: u32 = 5;
/// Header flag bits.
pub(crate) const FLAG_FORKED: u32 = 1 << 0;
pub(crate) const FLAG_ATFORK: u32 = 1 << 1;
/// Record tag bits.
pub(crate) const TAG_SAMPLED: u8 = 1 << 2;
pub(crate) const TAG_FLAG: u8 = 1 << 3;
pub(crate) const TAG_KERNEL_ESCAPE: u8 = 15;
/// Largest encoded record: tag, escape, seven 10-byte varints, two probe pairs.
pub(crate) const MAX_RECORD: usize = 2 + 7 * 10 + 2 * 11;

/// Appends bytes to caller-provided memory. The caller guarantees room (records:
/// `MAX_RECORD` bytes reserved; header and trailer: a local buffer checked here).
pub(crate) struct Writer {
    base: *mut u8,
    len: usize,
    cap: usize,
}

impl Writer {
    /// A writer over `cap` bytes at `base`, starting at offset `len`.
    ///
    /// # Safety
    /// `base` valid for `cap` byte writes for as long as the writer is used.
    pub(crate) unsafe fn new(base: *mut u8, len: usize, cap: usize) -> Writer {
        Writer { base, len, cap }
    }

    /// Bytes written so far (from `base`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        if self.len < self.cap {
            // SAFETY: `len < cap`, inside the memory `new` was given.
            unsafe { self.base.add(self.len).write(b) };
            self.len += 1;
        }
    }

    pub(crate) fn bytes(&mut self, s: &[u8]) {
        for &b in s {
            self.byte(b);
        }
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// LEB128.
    #[inline(always)]
    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// A signed delta, zigzag-encoded.
    #[inline(always)]
    pub(crate) fn delta(&mut self, now: u64, before: u64) {
        let d = now.wrapping_sub(before) as i64;
        self.varint(((d << 1) ^ (d >> 63)) as u64);
    }

    /// Overwrites bytes at `at` (inside what was written) without moving the end.
    pub(crate) fn put_at(&mut self, at: usize, s: &[u8]) {
        for (i, &b) in s.iter().enumerate() {
            if at + i < self.len {
                // SAFETY: inside the written part of the memory `new` was given.
                unsafe { self.base.add(at + i).write(b) };
            }
        }
    }

    /// The written bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: the first `len` bytes were written through `byte`.
        unsafe { core::slice::from_raw_parts(self.base, self.len) }
    }
}

/// A stack buffer for the header and trailer, left uninitialised (zeroing it would be
/// a `memset` call).
pub(crate) struct Local {
    buf: [MaybeUninit<u8>; LOCAL_CAP],
}

const LOCAL_CAP: usize = 1100;

impl Local {
    pub(crate) fn new() -> Local {
        Local {
            buf: [const { MaybeUninit::uninit() }; LOCAL_CAP],
        }
    }

    pub(crate) fn writer(&mut self) -> Writer {
        // SAFETY: the buffer holds LOCAL_CAP bytes and outlives the writer's use in
        // every caller (both live in the same stack frame).
        unsafe { Writer::new(self.buf.as_mut_ptr().cast(), 0, LOCAL_CAP) }
    }
}

/// Bytes the constructor stores once, before tracing is switched on, and that are
/// read after (by a forked child creating its own file): the trace path and the
/// program name.
pub(crate) struct Bytes<const N: usize> {
    bytes: core::cell::UnsafeCell<[u8; N]>,
    len: AtomicUsize,
}

// SAFETY: written only by the constructor before `MODE` publishes tracing (Release),
// read only after that publication was observed (Acquire), never written again.
unsafe impl<const N: usize> Sync for Bytes<N> {}

impl<const N: usize> Bytes<N> {
    pub(crate) const fn new() -> Self {
        Bytes {
            bytes: core::cell::UnsafeCell::new([0; N]),
            len: AtomicUsize::new(0),
        }
    }

    /// Stores the first `max` bytes of `s` at most (`max < N`).
    ///
    /// # Safety
    /// Only from the constructor, before tracing is published.
    pub(crate) unsafe fn set(&self, s: &[u8], max: usize) {
        let base = self.bytes.get().cast::<u8>();
        let mut len = 0;
        for &b in s.iter().take(max.min(N)) {
            // SAFETY: len < N; nothing reads or writes the bytes concurrently
            // (contract).
            unsafe { base.add(len).write(b) };
            len += 1;
        }
        self.len.store(len, Ordering::Release);
    }

    /// The stored bytes.
    pub(crate) fn get(&self) -> &[u8] {
        let len = self.len.load(Ordering::Acquire).min(N);
        // SAFETY: the first `len` bytes were written before `len` was published and
        // are never written again.
        unsafe { core::slice::from_raw_parts(self.bytes.get().cast::<u8>(), len) }
    }
}

/// Longest trace path accepted; the buffer leaves room for `.<pid>.<n>` and the NUL.
pub(crate) const PATH_MAX: usize = 1000;

/// `BLOCKMEM_TRACE`.
pub(crate) static TRACE_PATH: Bytes<PATH_MAX> = Bytes::new();
/// The program's `argv[0]` (for the header).
pub(crate) static ARGV0: Bytes<255> = Bytes::new();

/// Why a trace file could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CreateError {
    /// `<path>` exists and is not a regular file (what it is, in words). Nothing is
    /// created beside it: a directory, FIFO or device given as the trace path is a
    /// mistake to report, not a name prefix to write `<path>.<pid>` files under.
    NotRegular(&'static [u8]),
    /// `open` failed with this errno (the directory is missing or not writable, …).
    Os(c_int),
}

/// What `path` (NUL-terminated) is, if it exists and is not a regular file.
fn not_regular(path: &[u8]) -> Option<&'static [u8]> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `path` is NUL-terminated; `stat` fills `st` when it returns 0. It never
    // opens the file, so a FIFO cannot block it.
    if unsafe { libc::stat(path.as_ptr().cast::<c_char>(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: filled by the successful `stat`. Only the field is read: copying the
    // whole struct out could become a `memcpy` call.
    let mode = unsafe { (*st.as_ptr()).st_mode } & libc::S_IFMT;
    match mode {
        libc::S_IFREG => None,
        libc::S_IFDIR => Some(b"is a directory"),
        libc::S_IFIFO => Some(b"is a FIFO"),
        libc::S_IFCHR | libc::S_IFBLK => Some(b"is a device"),
        libc::S_IFSOCK => Some(b"is a socket"),
        _ => Some(b"is not a regular file"),
    }
}

/// Creates the trace file for process `pid`: `<path>` itself when `plain` (the
/// process the variable was set for), else, or when `<path>` exists already as a
/// regular file, `<path>.<pid>`, then `<path>.<pid>.1` … (an exec'd program keeps its
/// pid). A `<path>` that exists as anything but a regular file is refused. Never
/// truncates or opens an existing file (`O_CREAT | O_EXCL`: only a new regular file
/// is ever opened, so nothing can block). The descriptor is moved to 200 or above
/// (else to the lowest free one from 3) and is close-on-exec. It is never 0, 1 or 2,
/// even in a program started with those closed: a program that later opens its output
/// there, or `dup2`s onto it, must not find trace records in it.
pub(crate) fn create(pid: u32, plain: bool) -> Result<c_int, CreateError> {
    let path = TRACE_PATH.get();
    let mut name = Local::new();
    {
        let mut w = name.writer();
        w.bytes(path);
        w.byte(0);
        if let Some(what) = not_regular(w.as_slice()) {
            return Err(CreateError::NotRegular(what));
        }
    }
    for attempt in 0..102u32 {
        if attempt == 0 && !plain {
            continue;
        }
        let mut w = name.writer();
        w.bytes(path);
        if attempt > 0 {
            w.byte(b'.');
            decimal(&mut w, u64::from(pid));
        }
        if attempt > 1 {
            w.byte(b'.');
            decimal(&mut w, u64::from(attempt - 1));
        }
        w.byte(0);
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_APPEND | libc::O_CLOEXEC;
        // SAFETY: the name is NUL-terminated inside `name`.
        let fd = unsafe { libc::open(w.as_slice().as_ptr().cast::<c_char>(), flags, 0o644) };
        if fd < 0 {
            let e = errno();
            if e == libc::EEXIST {
                continue;
            }
            return Err(CreateError::Os(e));
        }
        for lowest in [200, 3] {
            // SAFETY: fcntl/close on a descriptor we own.
            unsafe {
                let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, lowest);
                if moved >= 0 {
                    libc::close(fd);
                    return Ok(moved);
                }
            }
        }
        if fd > 2 {
            return Ok(fd);
        }
        let e = errno();
        // SAFETY: close on a descriptor we own.
        unsafe { libc::close(fd) };
        return Err(CreateError::Os(e));
    }
    Err(CreateError::Os(libc::EEXIST))
}

/// Appends `v` in decimal.
pub(crate) fn decimal(w: &mut Writer, v: u64) {
    let mut div = 10_000_000_000_000_000_000u64;
    let mut started = false;
    while div > 0 {
        let digit = (v / div % 10) as u8;
        if digit != 0 || started || div == 1 {
            w.byte(b'0' + digit);
            started = true;
        }
        div /= 10;
    }
}

pub(crate) fn errno() -> c_int {
    // SAFETY: `__errno_location` returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

pub(crate) fn set_errno(e: c_int) {
    // SAFETY: as `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// Kernel slot numbers (shared with the statistics): 0 `inline`, then one per
/// `KernelId` in table order, then `libc`.
pub(crate) const SLOT_INLINE: u8 = 0;
pub(crate) const SLOT_LIBC: u8 = KernelId::ALL.len() as u8 + 1;

/// A kernel's slot.
pub(crate) fn kernel_slot(k: KernelId) -> u8 {
    k as u8 + 1
}

/// Appends the kernel name table (count, then length-prefixed names).
pub(crate) fn kernel_names(w: &mut Writer) {
    w.byte(SLOT_LIBC + 1);
    w.byte(6);
    w.bytes(b"inline");
    for k in KernelId::ALL {
        let name = k.name().as_bytes();
        w.byte(name.len() as u8);
        w.bytes(name);
    }
    w.byte(4);
    w.bytes(b"libc");
}

/// Monotonic and real-time clocks, in nanoseconds.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: clock_gettime fills `ts` on success (async-signal-safe, vDSO).
    let ok = unsafe { libc::clock_gettime(clock, ts.as_mut_ptr()) } == 0;
    if !ok {
        return 0;
    }
    // SAFETY: filled on success.
    let ts = unsafe { ts.assume_init() };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
