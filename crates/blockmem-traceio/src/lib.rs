//! The trace I/O library: what `blockmem trace` preloads beside the shim so that the
//! trace sees what becomes of a copy's destination after the call.
//!
//! ```text
//! cargo build --release -p blockmem-traceio
//! LD_PRELOAD=libblockmem_preload.so:libblockmem_traceio.so BLOCKMEM_TRACE=t CMD
//! ```
//!
//! A separate object, loaded only by `blockmem trace`, so that an untraced program
//! pays nothing for wrappers around its system calls. Its constructor does nothing
//! the program can see; the shim's constructor, when tracing, finds
//! `blockmem_traceio_register` and hands it its hooks (the shim's `watch` module).
//! From then on:
//!
//! * **I/O by call site.** `read`, `write`, `pread`, `pwrite`, `readv`, `writev`,
//!   `preadv`, `pwritev` (and their `v2` forms), `recv`, `send`, `recvfrom`,
//!   `sendto`, `recvmsg`, `sendmsg` call the next
//!   definition (`dlsym(RTLD_NEXT)`) exactly once, never retried, and return its
//!   result with its `errno`; around it they lift the shim's traps on the buffer (a
//!   protected page must not become `EFAULT`; the page's fate is "read by the
//!   kernel" for output, "written by the kernel" for input) and count the call, its
//!   bytes and its cycles under its call site. The site is the caller's return
//!   address, taken by a two-instruction stub (as the shim does); `recvfrom` and
//!   `sendto` have six arguments, no free register for it, and count under site 0.
//!   `fread` and `fwrite` lift their buffer too (glibc writes a large `fwrite`
//!   straight from it), as do, without counting, the other calls that hand the kernel
//!   a user buffer: `recvmmsg`, `sendmmsg`, `vmsplice`, `process_vm_readv` and
//!   `process_vm_writev`.
//!   Submissions through a shared ring (`io_uring`, Linux AIO) or the raw `syscall`
//!   function are not seen: a traced destination they hand the kernel may fail
//!   with `EFAULT` (`--watch 0` turns the traps off).
//! * **Traps' handler.** With traps on, a `SIGSEGV` handler asks the shim whether the
//!   fault was one of its traps; if not, it calls the program's handler as the
//!   program installed it. `sigaction` and `signal` for `SIGSEGV` record the
//!   program's handler and report it back, while ours stays installed (with the
//!   program's mask and `SA_ONSTACK`/`SA_NODEFER`/`SA_RESTART` flags); a default or
//!   ignored disposition is restored for real before the fault is re-run, so the
//!   program dies of it as it would have.
//! * **Freed memory.** `free`, `realloc`, `munmap`, `mremap`, `madvise`, `mprotect`
//!   and `mmap(MAP_FIXED)` lift the traps on their range first, so that protection
//!   never outlives the memory or overrides the program's own.
//!
//! Nothing here allocates; the wrappers are `C-unwind` and hold nothing to drop, so
//! thread cancellation inside a blocking call unwinds through them.

#![deny(unsafe_op_in_unsafe_fn)]
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use core::ffi::{c_int, c_void, CStr};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::cell::UnsafeCell;

use libc::{iovec, msghdr, sigaction as SigAction, siginfo_t, size_t, ssize_t};

/// The shim's hooks (its `watch::Hooks`, same layout).
#[repr(C)]
pub struct Hooks {
    version: u32,
    traps: u32,
    fault: unsafe extern "C" fn(*mut siginfo_t, *mut c_void) -> c_int,
    lift: extern "C" fn(*const c_void, usize, c_int),
    io: extern "C" fn(u32, usize, usize, isize, u64),
    expire: extern "C" fn(c_int),
    live: extern "C" fn() -> c_int,
}

static HOOKS: AtomicPtr<Hooks> = AtomicPtr::new(core::ptr::null_mut());

fn hooks() -> Option<&'static Hooks> {
    let p = HOOKS.load(Ordering::Acquire);
    // SAFETY: set once from the shim's static hooks.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// `lift` fates (the shim's numbering).
const RELEASED: c_int = 0;
const KERNEL_READ: c_int = 1;
const KERNEL_WRITE: c_int = 2;

/// Op numbers of the trace file's I/O block.
const OP_READ: u32 = 0;
const OP_WRITE: u32 = 1;
const OP_PREAD: u32 = 2;
const OP_PWRITE: u32 = 3;
const OP_READV: u32 = 4;
const OP_WRITEV: u32 = 5;
const OP_RECV: u32 = 6;
const OP_SEND: u32 = 7;
const OP_RECVFROM: u32 = 8;
const OP_SENDTO: u32 = 9;
const OP_RECVMSG: u32 = 10;
const OP_SENDMSG: u32 = 11;
const OP_PREADV: u32 = 12;
const OP_PWRITEV: u32 = 13;

/// Called by the shim's constructor when it traces. Returns 1 when the `SIGSEGV`
/// handler the traps need is installed (or traps are off), 0 otherwise.
///
/// # Safety
/// `h` points to hooks that live as long as the process.
#[no_mangle]
pub unsafe extern "C" fn blockmem_traceio_register(h: *const Hooks) -> c_int {
    // SAFETY: the caller's contract.
    if h.is_null() || unsafe { (*h).version } != 1 {
        return 0;
    }
    HOOKS.store(h.cast_mut(), Ordering::Release);
    // SAFETY: as above.
    if unsafe { (*h).traps } == 0 {
        return 1;
    }
    c_int::from(install_handler())
}

// ---- the next definitions -----------------------------------------------------------

/// One function found with `dlsym(RTLD_NEXT)`, cached.
struct Next {
    name: &'static CStr,
    p: AtomicPtr<c_void>,
}

static RESOLVING: AtomicBool = AtomicBool::new(false);

impl Next {
    const fn new(name: &'static CStr) -> Next {
        Next {
            name,
            p: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The next definition (null: not found, or asked while `dlsym` itself runs).
    fn get(&self) -> *mut c_void {
        let p = self.p.load(Ordering::Relaxed);
        if !p.is_null() || RESOLVING.swap(true, Ordering::Acquire) {
            return p;
        }
        // SAFETY: RTLD_NEXT with a NUL-terminated name.
        let q = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        self.p.store(q, Ordering::Relaxed);
        RESOLVING.store(false, Ordering::Release);
        q
    }
}

/// The next definition of `$next` as a function of type `$t`, or, when there is none,
/// `return $fail` with `errno` set to `ENOSYS`.
macro_rules! next {
    ($next:expr, $t:ty, $fail:expr) => {{
        let p = $next.get();
        if p.is_null() {
            // SAFETY: this thread's errno.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            return $fail;
        }
        // SAFETY: the symbol of that name in the C library has this signature.
        unsafe { core::mem::transmute::<*mut c_void, $t>(p) }
    }};
}

static N_READ: Next = Next::new(c"read");
static N_WRITE: Next = Next::new(c"write");
static N_PREAD: Next = Next::new(c"pread64");
static N_PWRITE: Next = Next::new(c"pwrite64");
static N_READV: Next = Next::new(c"readv");
static N_WRITEV: Next = Next::new(c"writev");
static N_RECV: Next = Next::new(c"recv");
static N_SEND: Next = Next::new(c"send");
static N_RECVFROM: Next = Next::new(c"recvfrom");
static N_SENDTO: Next = Next::new(c"sendto");
static N_RECVMSG: Next = Next::new(c"recvmsg");
static N_SENDMSG: Next = Next::new(c"sendmsg");
static N_PREADV: Next = Next::new(c"preadv64");
static N_PWRITEV: Next = Next::new(c"pwritev64");
static N_PREADV2: Next = Next::new(c"preadv64v2");
static N_PWRITEV2: Next = Next::new(c"pwritev64v2");
static N_RECVMMSG: Next = Next::new(c"recvmmsg");
static N_SENDMMSG: Next = Next::new(c"sendmmsg");
static N_VMSPLICE: Next = Next::new(c"vmsplice");
static N_PVM_READV: Next = Next::new(c"process_vm_readv");
static N_PVM_WRITEV: Next = Next::new(c"process_vm_writev");
static N_FREAD: Next = Next::new(c"fread");
static N_FWRITE: Next = Next::new(c"fwrite");
static N_FREE: Next = Next::new(c"free");
static N_REALLOC: Next = Next::new(c"realloc");
static N_MUNMAP: Next = Next::new(c"munmap");
static N_MREMAP: Next = Next::new(c"mremap");
static N_MADVISE: Next = Next::new(c"madvise");
static N_MPROTECT: Next = Next::new(c"mprotect");
static N_MMAP: Next = Next::new(c"mmap");
static N_SIGACTION: Next = Next::new(c"sigaction");
static N_SIGNAL: Next = Next::new(c"signal");

/// Resolves every next definition at load, before the program runs.
extern "C" fn init() {
    for n in [
        &N_READ,
        &N_WRITE,
        &N_PREAD,
        &N_PWRITE,
        &N_READV,
        &N_WRITEV,
        &N_RECV,
        &N_SEND,
        &N_RECVFROM,
        &N_SENDTO,
        &N_RECVMSG,
        &N_SENDMSG,
        &N_PREADV,
        &N_PWRITEV,
        &N_PREADV2,
        &N_PWRITEV2,
        &N_RECVMMSG,
        &N_SENDMMSG,
        &N_VMSPLICE,
        &N_PVM_READV,
        &N_PVM_WRITEV,
        &N_FREAD,
        &N_FWRITE,
        &N_FREE,
        &N_REALLOC,
        &N_MUNMAP,
        &N_MREMAP,
        &N_MADVISE,
        &N_MPROTECT,
        &N_MMAP,
        &N_SIGACTION,
        &N_SIGNAL,
    ] {
        n.get();
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

// ---- I/O ----------------------------------------------------------------------------

fn tsc() -> u64 {
    // SAFETY: rdtsc is architectural on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

fn errno() -> c_int {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn set_errno(e: c_int) {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// Before the call: the kernel is about to read (`how` = KERNEL_READ) or write the
/// buffer; lift the traps on it.
fn before(h: Option<&Hooks>, buf: *const c_void, n: usize, how: c_int) {
    if let Some(h) = h {
        (h.lift)(buf, n, how);
    }
}

/// After the call: count it and close the shim's old watches, `errno` untouched.
fn after(h: Option<&Hooks>, op: u32, site: usize, asked: usize, r: isize, t0: u64) {
    if let Some(h) = h {
        let e = errno();
        (h.io)(op, site, asked, r, tsc().wrapping_sub(t0));
        (h.expire)(0);
        set_errno(e);
    }
}

/// Lifts the traps on every buffer of an `iovec` array; returns the bytes asked for.
///
/// # Safety
/// `iov` valid for `cnt` entries when `0 < cnt <= IOV_MAX` (else nothing is read: the
/// call itself fails with `EINVAL`).
unsafe fn before_iov(h: Option<&Hooks>, iov: *const iovec, cnt: c_int, how: c_int) -> usize {
    if iov.is_null() || cnt <= 0 || cnt > 1024 {
        return 0;
    }
    let mut asked = 0usize;
    for i in 0..cnt as usize {
        // SAFETY: the caller's contract.
        let v = unsafe { &*iov.add(i) };
        before(h, v.iov_base, v.iov_len, how);
        asked = asked.wrapping_add(v.iov_len);
    }
    asked
}

/// Defines the exported `$name`, a two-instruction stub that passes its caller's
/// return address to `$body` in `$reg` (the register after the last argument) and
/// jumps there with the stack untouched.
macro_rules! sited {
    ($(#[$m:meta])* $name:ident($($a:ident: $t:ty),*) -> $r:ty, $reg:literal, $body:ident) => {
        $(#[$m])*
        ///
        /// # Safety
        /// The C function's contract.
        #[no_mangle]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {f}",
                f = sym $body
            )
        }
    };
}

/// `read`, `write`, `recv`, `send`-shaped bodies.
macro_rules! io_body {
    ($body:ident, $next:ident, $op:expr, $how:expr, ($($a:ident: $t:ty),*), $buf:ident, $n:ident) => {
        unsafe extern "C-unwind" fn $body($($a: $t,)* site: usize) -> ssize_t {
            type F = unsafe extern "C-unwind" fn($($t),*) -> ssize_t;
            let f = next!($next, F, -1);
            let h = hooks();
            before(h, $buf as *const c_void, $n, $how);
            let t0 = tsc();
            // SAFETY: the caller's contract, passed on unchanged.
            let r = unsafe { f($($a),*) };
            after(h, $op, site, $n, r, t0);
            r
        }
    };
}

io_body!(read_body, N_READ, OP_READ, KERNEL_WRITE, (fd: c_int, buf: *mut c_void, n: size_t), buf, n);
io_body!(write_body, N_WRITE, OP_WRITE, KERNEL_READ, (fd: c_int, buf: *const c_void, n: size_t), buf, n);
io_body!(pread_body, N_PREAD, OP_PREAD, KERNEL_WRITE, (fd: c_int, buf: *mut c_void, n: size_t, off: i64), buf, n);
io_body!(pwrite_body, N_PWRITE, OP_PWRITE, KERNEL_READ, (fd: c_int, buf: *const c_void, n: size_t, off: i64), buf, n);
io_body!(recv_body, N_RECV, OP_RECV, KERNEL_WRITE, (fd: c_int, buf: *mut c_void, n: size_t, flags: c_int), buf, n);
io_body!(send_body, N_SEND, OP_SEND, KERNEL_READ, (fd: c_int, buf: *const c_void, n: size_t, flags: c_int), buf, n);

sited!(/// C `read`.
    read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t, "rcx", read_body);
sited!(/// C `write`.
    write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t, "rcx", write_body);
sited!(/// C `pread`.
    pread(fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t, "r8", pread_body);
sited!(/// C `pread64`.
    pread64(fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t, "r8", pread_body);
sited!(/// C `pwrite`.
    pwrite(fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t, "r8", pwrite_body);
sited!(/// C `pwrite64`.
    pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t, "r8", pwrite_body);
sited!(/// C `recv`.
    recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t, "r8", recv_body);
sited!(/// C `send`.
    send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t, "r8", send_body);

/// `readv`/`writev` bodies, and with the arguments after the count (`$x`) those of
/// `preadv`/`pwritev` and their `v2` forms.
macro_rules! iov_body {
    ($body:ident, $next:ident, $op:expr, $how:expr, ($($x:ident: $t:ty),*)) => {
        unsafe extern "C-unwind" fn $body(
            fd: c_int,
            iov: *const iovec,
            cnt: c_int,
            $($x: $t,)*
            site: usize,
        ) -> ssize_t {
            type F = unsafe extern "C-unwind" fn(c_int, *const iovec, c_int, $($t),*) -> ssize_t;
            let f = next!($next, F, -1);
            let h = hooks();
            // SAFETY: the caller's contract (an iovec array of `cnt` entries).
            let asked = unsafe { before_iov(h, iov, cnt, $how) };
            let t0 = tsc();
            // SAFETY: passed on unchanged.
            let r = unsafe { f(fd, iov, cnt, $($x),*) };
            after(h, $op, site, asked, r, t0);
            r
        }
    };
}

iov_body!(readv_body, N_READV, OP_READV, KERNEL_WRITE, ());
iov_body!(writev_body, N_WRITEV, OP_WRITEV, KERNEL_READ, ());
sited!(/// C `readv`.
    readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t, "rcx", readv_body);
sited!(/// C `writev`.
    writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t, "rcx", writev_body);

iov_body!(preadv_body, N_PREADV, OP_PREADV, KERNEL_WRITE, (off: i64));
iov_body!(pwritev_body, N_PWRITEV, OP_PWRITEV, KERNEL_READ, (off: i64));
iov_body!(preadv2_body, N_PREADV2, OP_PREADV, KERNEL_WRITE, (off: i64, flags: c_int));
iov_body!(pwritev2_body, N_PWRITEV2, OP_PWRITEV, KERNEL_READ, (off: i64, flags: c_int));
sited!(/// C `preadv`.
    preadv(fd: c_int, iov: *const iovec, cnt: c_int, off: i64) -> ssize_t, "r8", preadv_body);
sited!(/// C `preadv64`.
    preadv64(fd: c_int, iov: *const iovec, cnt: c_int, off: i64) -> ssize_t, "r8", preadv_body);
sited!(/// C `pwritev`.
    pwritev(fd: c_int, iov: *const iovec, cnt: c_int, off: i64) -> ssize_t, "r8", pwritev_body);
sited!(/// C `pwritev64`.
    pwritev64(fd: c_int, iov: *const iovec, cnt: c_int, off: i64) -> ssize_t, "r8", pwritev_body);
sited!(/// C `preadv2`.
    preadv2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t, "r9",
    preadv2_body);
sited!(/// C `preadv64v2`.
    preadv64v2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t, "r9",
    preadv2_body);
sited!(/// C `pwritev2`.
    pwritev2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t, "r9",
    pwritev2_body);
sited!(/// C `pwritev64v2`.
    pwritev64v2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t, "r9",
    pwritev2_body);

/// `recvmsg`/`sendmsg` bodies.
macro_rules! msg_body {
    ($body:ident, $next:ident, $op:expr, $how:expr, $m:ty) => {
        unsafe extern "C-unwind" fn $body(
            fd: c_int,
            msg: $m,
            flags: c_int,
            site: usize,
        ) -> ssize_t {
            type F = unsafe extern "C-unwind" fn(c_int, $m, c_int) -> ssize_t;
            let f = next!($next, F, -1);
            let h = hooks();
            let asked = if msg.is_null() {
                0
            } else {
                // SAFETY: the caller's contract (a valid msghdr).
                unsafe { before_iov(h, (*msg).msg_iov, (*msg).msg_iovlen as c_int, $how) }
            };
            let t0 = tsc();
            // SAFETY: passed on unchanged.
            let r = unsafe { f(fd, msg, flags) };
            after(h, $op, site, asked, r, t0);
            r
        }
    };
}

msg_body!(
    recvmsg_body,
    N_RECVMSG,
    OP_RECVMSG,
    KERNEL_WRITE,
    *mut msghdr
);
msg_body!(
    sendmsg_body,
    N_SENDMSG,
    OP_SENDMSG,
    KERNEL_READ,
    *const msghdr
);
sited!(/// C `recvmsg`.
    recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t, "rcx", recvmsg_body);
sited!(/// C `sendmsg`.
    sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t, "rcx", sendmsg_body);

/// C `recvfrom` (counted under site 0: see the crate docs).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut libc::sockaddr,
    len: *mut libc::socklen_t,
) -> ssize_t {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut c_void,
        size_t,
        c_int,
        *mut libc::sockaddr,
        *mut libc::socklen_t,
    ) -> ssize_t;
    let f = next!(N_RECVFROM, F, -1);
    let h = hooks();
    before(h, buf, n, KERNEL_WRITE);
    let t0 = tsc();
    // SAFETY: passed on unchanged.
    let r = unsafe { f(fd, buf, n, flags, addr, len) };
    after(h, OP_RECVFROM, 0, n, r, t0);
    r
}

/// C `sendto` (counted under site 0: see the crate docs).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> ssize_t {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *const c_void,
        size_t,
        c_int,
        *const libc::sockaddr,
        libc::socklen_t,
    ) -> ssize_t;
    let f = next!(N_SENDTO, F, -1);
    let h = hooks();
    before(h, buf, n, KERNEL_READ);
    let t0 = tsc();
    // SAFETY: passed on unchanged.
    let r = unsafe { f(fd, buf, n, flags, addr, len) };
    after(h, OP_SENDTO, 0, n, r, t0);
    r
}

// ---- the other calls that hand user buffers to the kernel: traps lifted, not counted

/// Lifts the traps on every message's buffers of an `mmsghdr` array.
///
/// # Safety
/// `v` valid for `n` entries, each a valid `msghdr` (the call's own contract).
unsafe fn before_mmsg(v: *const libc::mmsghdr, n: libc::c_uint, how: c_int) {
    let h = hooks();
    if v.is_null() || h.is_none_or(|h| (h.live)() == 0) {
        return;
    }
    for i in 0..n.min(1024) as usize {
        // SAFETY: the caller's contract.
        let m = unsafe { &(*v.add(i)).msg_hdr };
        // SAFETY: as above.
        unsafe { before_iov(h, m.msg_iov, m.msg_iovlen as c_int, how) };
    }
}

/// C `recvmmsg`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn recvmmsg(
    fd: c_int,
    v: *mut libc::mmsghdr,
    n: libc::c_uint,
    flags: c_int,
    timeout: *mut libc::timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        c_int,
        *mut libc::mmsghdr,
        libc::c_uint,
        c_int,
        *mut libc::timespec,
    ) -> c_int;
    let f = next!(N_RECVMMSG, F, -1);
    // SAFETY: the caller's contract.
    unsafe { before_mmsg(v, n, KERNEL_WRITE) };
    // SAFETY: passed on unchanged.
    unsafe { f(fd, v, n, flags, timeout) }
}

/// C `sendmmsg`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn sendmmsg(
    fd: c_int,
    v: *mut libc::mmsghdr,
    n: libc::c_uint,
    flags: c_int,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(c_int, *mut libc::mmsghdr, libc::c_uint, c_int) -> c_int;
    let f = next!(N_SENDMMSG, F, -1);
    // SAFETY: the caller's contract.
    unsafe { before_mmsg(v, n, KERNEL_READ) };
    // SAFETY: passed on unchanged.
    unsafe { f(fd, v, n, flags) }
}

/// C `vmsplice`: the pipe takes the buffer's pages, read later by the kernel.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn vmsplice(
    fd: c_int,
    iov: *const iovec,
    n: size_t,
    flags: libc::c_uint,
) -> ssize_t {
    type F = unsafe extern "C-unwind" fn(c_int, *const iovec, size_t, libc::c_uint) -> ssize_t;
    let f = next!(N_VMSPLICE, F, -1);
    // SAFETY: the caller's contract.
    unsafe { before_iov(hooks(), iov, n.min(1024) as c_int, KERNEL_READ) };
    // SAFETY: passed on unchanged.
    unsafe { f(fd, iov, n, flags) }
}

/// `process_vm_readv`/`process_vm_writev` bodies: the local buffers are what this
/// process's pages give (`writev`: read by the kernel) or take (`readv`: written), and
/// where the other process is this one, the remote buffers the other way round.
macro_rules! lift_process_vm {
    ($(#[$m:meta])* $name:ident, $next:ident, $how:expr, $remote_how:expr) => {
        $(#[$m])*
        ///
        /// # Safety
        /// The C function's contract.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(
            pid: libc::pid_t,
            local: *const iovec,
            nlocal: libc::c_ulong,
            remote: *const iovec,
            nremote: libc::c_ulong,
            flags: libc::c_ulong,
        ) -> ssize_t {
            type F = unsafe extern "C-unwind" fn(
                libc::pid_t,
                *const iovec,
                libc::c_ulong,
                *const iovec,
                libc::c_ulong,
                libc::c_ulong,
            ) -> ssize_t;
            let f = next!($next, F, -1);
            let h = hooks();
            // SAFETY: the caller's contract.
            unsafe { before_iov(h, local, nlocal.min(1024) as c_int, $how) };
            // SAFETY: as above; `getpid` has no preconditions.
            if pid == unsafe { libc::getpid() } {
                // SAFETY: the caller's contract.
                unsafe { before_iov(h, remote, nremote.min(1024) as c_int, $remote_how) };
            }
            // SAFETY: passed on unchanged.
            unsafe { f(pid, local, nlocal, remote, nremote, flags) }
        }
    };
}

lift_process_vm!(/// C `process_vm_readv`.
    process_vm_readv, N_PVM_READV, KERNEL_WRITE, KERNEL_READ);
lift_process_vm!(/// C `process_vm_writev`.
    process_vm_writev, N_PVM_WRITEV, KERNEL_READ, KERNEL_WRITE);

/// C `fread`: lifts the buffer (glibc reads a large request straight into it).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn fread(
    buf: *mut c_void,
    size: size_t,
    n: size_t,
    file: *mut libc::FILE,
) -> size_t {
    type F = unsafe extern "C-unwind" fn(*mut c_void, size_t, size_t, *mut libc::FILE) -> size_t;
    let f = next!(N_FREAD, F, 0);
    before(hooks(), buf, size.saturating_mul(n), KERNEL_WRITE);
    // SAFETY: passed on unchanged.
    unsafe { f(buf, size, n, file) }
}

/// C `fwrite`: lifts the buffer (glibc writes a large request straight from it).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn fwrite(
    buf: *const c_void,
    size: size_t,
    n: size_t,
    file: *mut libc::FILE,
) -> size_t {
    type F = unsafe extern "C-unwind" fn(*const c_void, size_t, size_t, *mut libc::FILE) -> size_t;
    let f = next!(N_FWRITE, F, 0);
    before(hooks(), buf, size.saturating_mul(n), KERNEL_READ);
    // SAFETY: passed on unchanged.
    unsafe { f(buf, size, n, file) }
}

// ---- memory the program gives back --------------------------------------------------

/// Lifts the traps on `[p, p+n)` as released, when some page may be protected.
fn release(p: *const c_void, n: usize) {
    if let Some(h) = hooks() {
        if (h.live)() != 0 {
            (h.lift)(p, n, RELEASED);
        }
    }
}

/// C `free`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if !p.is_null() && hooks().is_some_and(|h| (h.live)() != 0) {
        // SAFETY: `p` is a live allocation (the caller's contract).
        release(p, unsafe { libc::malloc_usable_size(p) });
    }
    let f = N_FREE.get();
    if !f.is_null() {
        // SAFETY: libc's `free`.
        unsafe { core::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(f)(p) };
    }
}

/// C `realloc`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    if !p.is_null() && hooks().is_some_and(|h| (h.live)() != 0) {
        // SAFETY: `p` is a live allocation (the caller's contract).
        release(p, unsafe { libc::malloc_usable_size(p) });
    }
    type F = unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void;
    let f = next!(N_REALLOC, F, core::ptr::null_mut());
    // SAFETY: passed on unchanged.
    unsafe { f(p, n) }
}

/// C `munmap`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn munmap(p: *mut c_void, n: size_t) -> c_int {
    release(p, n);
    type F = unsafe extern "C" fn(*mut c_void, size_t) -> c_int;
    let f = next!(N_MUNMAP, F, -1);
    // SAFETY: passed on unchanged.
    unsafe { f(p, n) }
}

/// C `mremap` (the optional fifth argument is read as the register it arrives in).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    p: *mut c_void,
    old: size_t,
    new: size_t,
    flags: c_int,
    to: *mut c_void,
) -> *mut c_void {
    release(p, old);
    type F = unsafe extern "C" fn(*mut c_void, size_t, size_t, c_int, *mut c_void) -> *mut c_void;
    let f = next!(N_MREMAP, F, libc::MAP_FAILED);
    // SAFETY: passed on unchanged.
    unsafe { f(p, old, new, flags, to) }
}

/// C `madvise`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn madvise(p: *mut c_void, n: size_t, advice: c_int) -> c_int {
    release(p, n);
    type F = unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int;
    let f = next!(N_MADVISE, F, -1);
    // SAFETY: passed on unchanged.
    unsafe { f(p, n, advice) }
}

/// C `mprotect`.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn mprotect(p: *mut c_void, n: size_t, prot: c_int) -> c_int {
    release(p, n);
    type F = unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int;
    let f = next!(N_MPROTECT, F, -1);
    // SAFETY: passed on unchanged.
    unsafe { f(p, n, prot) }
}

/// C `mmap`: a fixed mapping replaces what was there.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    p: *mut c_void,
    n: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    if flags & libc::MAP_FIXED != 0 {
        release(p, n);
    }
    type F = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, i64) -> *mut c_void;
    let f = next!(N_MMAP, F, libc::MAP_FAILED);
    // SAFETY: passed on unchanged.
    unsafe { f(p, n, prot, flags, fd, off) }
}

/// C `mmap64` (the same function under its large-file name).
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    p: *mut c_void,
    n: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    // SAFETY: the same contract.
    unsafe { mmap(p, n, prot, flags, fd, off) }
}

// ---- SIGSEGV ------------------------------------------------------------------------

/// The program's `SIGSEGV` action, as it set it (guarded by `LOCK`); the handler
/// reads only `PROG_HANDLER` and `PROG_FLAGS`.
struct Action(UnsafeCell<SigAction>);
// SAFETY: accessed only under `LOCK`.
unsafe impl Sync for Action {}

static PROG: Action = Action(UnsafeCell::new(
    // SAFETY: an all-zero sigaction is SIG_DFL with no flags and an empty mask.
    unsafe { core::mem::zeroed() },
));
static PROG_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
static PROG_FLAGS: AtomicUsize = AtomicUsize::new(0);
static LOCK: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

type SigactionFn = unsafe extern "C" fn(c_int, *const SigAction, *mut SigAction) -> c_int;

fn lock() {
    while LOCK.swap(true, Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

fn unlock() {
    LOCK.store(false, Ordering::Release);
}

/// Our action for the program's: its mask and the flags that shape delivery, and
/// `SA_NODEFER`: a trap taken inside our handler (by a signal handler that interrupted
/// a lift) must reach it, not kill the process. Without `SA_NODEFER` of its own, the
/// program's handler is called with `SIGSEGV` blocked, as the kernel would.
fn ours(prog: &SigAction) -> SigAction {
    // SAFETY: zeroed is a valid sigaction.
    let mut a: SigAction = unsafe { core::mem::zeroed() };
    a.sa_sigaction = on_segv as *const () as usize;
    a.sa_mask = prog.sa_mask;
    a.sa_flags = libc::SA_SIGINFO
        | libc::SA_NODEFER
        | (prog.sa_flags & (libc::SA_ONSTACK | libc::SA_RESTART));
    a
}

/// Records the current action as the program's and installs ours.
fn install_handler() -> bool {
    let p = N_SIGACTION.get();
    if p.is_null() {
        return false;
    }
    // SAFETY: libc's sigaction.
    let real = unsafe { core::mem::transmute::<*mut c_void, SigactionFn>(p) };
    lock();
    // SAFETY: under LOCK; `real` fills PROG with the current action.
    let ok = unsafe {
        let prog = &mut *PROG.0.get();
        if real(libc::SIGSEGV, core::ptr::null(), prog) == 0 {
            PROG_HANDLER.store(prog.sa_sigaction, Ordering::Relaxed);
            PROG_FLAGS.store(prog.sa_flags as usize, Ordering::Relaxed);
            let a = ours(prog);
            real(libc::SIGSEGV, &a, core::ptr::null_mut()) == 0
        } else {
            false
        }
    };
    INSTALLED.store(ok, Ordering::Release);
    unlock();
    ok
}

/// Our `SIGSEGV` handler: the shim's trap, else the program's handler.
extern "C" fn on_segv(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    if let Some(h) = hooks() {
        // SAFETY: what the kernel passed.
        if unsafe { (h.fault)(info, ctx) } == 1 {
            return;
        }
    }
    let e = errno();
    if std::env::var_os("TRACEIO_DEBUG").is_some() {
        unsafe {
            eprintln!(
                "chain: code {} addr {:?} live {}",
                (*info).si_code,
                (*info).si_addr(),
                hooks().map_or(-1, |h| (h.live)())
            );
        }
    }
    let handler = PROG_HANDLER.load(Ordering::Acquire);
    let flags = PROG_FLAGS.load(Ordering::Relaxed) as c_int;
    // SAFETY: a siginfo from the kernel (or null).
    let sent = info.is_null() || unsafe { (*info).si_code } <= 0;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        if handler == libc::SIG_IGN && sent {
            return;
        }
        // The default action, for real: a fault runs again and kills; a sent signal
        // is raised again (blocked until this handler returns).
        let p = N_SIGACTION.get();
        if !p.is_null() {
            // SAFETY: libc's sigaction, a zeroed (SIG_DFL) action.
            unsafe {
                let real = core::mem::transmute::<*mut c_void, SigactionFn>(p);
                let dfl: SigAction = core::mem::zeroed();
                real(libc::SIGSEGV, &dfl, core::ptr::null_mut());
                if sent {
                    libc::raise(libc::SIGSEGV);
                }
            }
        }
        set_errno(e);
        return;
    }
    if flags & libc::SA_RESETHAND != 0 {
        PROG_HANDLER.store(libc::SIG_DFL, Ordering::Release);
    }
    set_errno(e);
    // SAFETY: the program's handler, called as it asked to be.
    unsafe {
        if flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
                core::mem::transmute(handler);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(c_int) = core::mem::transmute(handler);
            f(sig);
        }
    }
}

/// C `sigaction`: for `SIGSEGV` while our handler is installed, records and reports
/// the program's action.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const SigAction,
    old: *mut SigAction,
) -> c_int {
    let f = next!(N_SIGACTION, SigactionFn, -1);
    if sig != libc::SIGSEGV || !INSTALLED.load(Ordering::Acquire) {
        // SAFETY: passed on unchanged.
        return unsafe { f(sig, act, old) };
    }
    lock();
    // SAFETY: under LOCK; `old` and `act` per the caller's contract.
    let r = unsafe {
        let prog = &mut *PROG.0.get();
        if !old.is_null() {
            core::ptr::write(old, core::ptr::read(prog));
        }
        if act.is_null() {
            0
        } else {
            *prog = core::ptr::read(act);
            PROG_FLAGS.store(prog.sa_flags as usize, Ordering::Relaxed);
            PROG_HANDLER.store(prog.sa_sigaction, Ordering::Release);
            let a = ours(prog);
            f(sig, &a, core::ptr::null_mut())
        }
    };
    unlock();
    r
}

/// C `signal` (glibc's calls its own `sigaction` directly, so it is wrapped too):
/// BSD semantics, as glibc's.
///
/// # Safety
/// The C function's contract.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    if sig != libc::SIGSEGV || !INSTALLED.load(Ordering::Acquire) {
        type F = unsafe extern "C" fn(c_int, libc::sighandler_t) -> libc::sighandler_t;
        let f = next!(N_SIGNAL, F, libc::SIG_ERR);
        // SAFETY: passed on unchanged.
        return unsafe { f(sig, handler) };
    }
    // SAFETY: zeroed is a valid sigaction; the pointers are ours.
    unsafe {
        let mut act: SigAction = core::mem::zeroed();
        let mut old: SigAction = core::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
        if sigaction(sig, &act, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}
