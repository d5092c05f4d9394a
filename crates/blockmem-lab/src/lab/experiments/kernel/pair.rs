//! The two processes of an IPC cell: the shared control block, the producer (run in
//! the forked child, allocating nothing) and the consumer's side ([`Pair`]), which
//! receives, checks and times batches of messages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::ipc::{Channel, Plan, Temp};
use crate::lab::cpus::{pin, restore};
use crate::lab::mem::Buffer;
use crate::lab::state::flush;
use crate::lab::timer::{stamp as stamp_tsc, Timer};

/// The staging buffer of `user-copy×2`: a default pipe's capacity.
const STAGE: usize = 64 << 10;

/// How long a wait for the other process may take before the cell fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// A default pipe's capacity in pages.
pub(super) fn pipe_pages() -> usize {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return 16;
    }
    // SAFETY: our pipe; F_GETPIPE_SZ takes no argument.
    let n = unsafe { libc::fcntl(fds[0], libc::F_GETPIPE_SZ) };
    // SAFETY: closing what we opened.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    if n > 0 {
        n as usize / 4096
    } else {
        16
    }
}

/// One word of its own line (two, against the adjacent-line prefetcher).
#[repr(C, align(128))]
#[derive(Default)]
struct Word(AtomicU64);

/// The control block both processes map: the consumer's command (`gen` bumped last),
/// the producer's `ready`, the consumer's `go`, the ring's indices.
#[repr(C)]
#[derive(Default)]
struct Ctl {
    gen: Word,
    count: Word,
    first: Word,
    quit: Word,
    ready: Word,
    go: Word,
    head: Word,
    tail: Word,
    /// The CPU the producer ended its last batch on, then the batch's `gen`.
    cpu: Word,
    done: Word,
}

/// An anonymous mapping, shared with the children forked while it lives.
struct Shared {
    ptr: *mut u8,
    len: usize,
}

impl Shared {
    fn new(len: usize) -> anyhow::Result<Shared> {
        let len = len.max(1).div_ceil(4096) * 4096;
        // SAFETY: a fresh anonymous mapping, checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        anyhow::ensure!(
            p != libc::MAP_FAILED,
            "kernel: cannot map {len} shared bytes: {}",
            std::io::Error::last_os_error()
        );
        Ok(Shared { ptr: p.cast(), len })
    }

    fn ctl(&self) -> &Ctl {
        // SAFETY: the mapping is page-aligned, zero-filled (a valid `Ctl`: atomics of
        // zero) and at least a page, larger than `Ctl`; it lives as long as `self`.
        unsafe { &*(self.ptr as *const Ctl) }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping this value made.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Spins on `f` (pausing, then yielding the CPU: with one CPU the other process must
/// run) until it gives a value; `None` when `give_up` says so (checked now and then).
fn spin_until<T>(mut f: impl FnMut() -> Option<T>, mut give_up: impl FnMut() -> bool) -> Option<T> {
    let mut i: u64 = 0;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        i += 1;
        if i < 2000 {
            std::hint::spin_loop();
        } else {
            // SAFETY: no preconditions.
            unsafe { libc::sched_yield() };
            if i.is_multiple_of(1024) && give_up() {
                return None;
            }
        }
    }
}

/// `write`s or `vmsplice`s all of `[m, m+n)` into `fd`; false on an error.
///
/// # Safety
/// `m` valid for `n` reads, and (vmsplice) left unchanged while the pipe holds it.
unsafe fn send_fd(fd: libc::c_int, m: *const u8, n: usize, splice: bool) -> bool {
    let mut done = 0;
    while done < n {
        // SAFETY: the caller's contract; `done < n`.
        let r = unsafe {
            let p = m.add(done);
            if splice {
                let iov = libc::iovec {
                    iov_base: p as *mut libc::c_void,
                    iov_len: n - done,
                };
                libc::vmsplice(fd, &iov, 1, 0)
            } else {
                libc::write(fd, p.cast(), n - done)
            }
        };
        if r <= 0 {
            return false;
        }
        done += r as usize;
    }
    true
}

/// `read`s exactly `n` bytes into `m`; false on an error or end of file.
///
/// # Safety
/// `m` valid for `n` writes.
unsafe fn recv_fd(fd: libc::c_int, m: *mut u8, n: usize) -> bool {
    let mut done = 0;
    while done < n {
        // SAFETY: the caller's contract; `done < n`.
        let r = unsafe { libc::read(fd, m.add(done).cast(), n - done) };
        if r <= 0 {
            return false;
        }
        done += r as usize;
    }
    true
}

/// Writes `seq` into the first and last word of the `s`-byte message at `m`.
///
/// # Safety
/// `m` valid for `s ≥ 16` writes.
unsafe fn stamp(m: *mut u8, s: usize, seq: u64) {
    // SAFETY: the caller's contract.
    unsafe {
        (m as *mut u64).write_unaligned(seq);
        (m.add(s - 8) as *mut u64).write_unaligned(seq);
    }
}

/// The producer, in the forked child: pins itself, copies the pattern into its own
/// mapping, then serves batches until told to quit. Allocates nothing (the parent may
/// hold the allocator's lock on another thread) and never returns.
///
/// # Safety
/// Called in a freshly forked child; `pattern` holds `slots × sstride` bytes; `ring`
/// (ring channels) `ring_slots × dstride`; `fd` (other channels) the write end.
unsafe fn producer(p: &Plan, ctl: &Ctl, ring: *mut u8, fd: libc::c_int, pattern: *const u8) -> ! {
    // SAFETY: plain system calls; the child's own memory.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if let Some((_, cpu)) = p.cpus {
            if pin(cpu).is_none() {
                libc::_exit(4);
            }
        }
        let span = p.slots * p.sstride;
        let src = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        );
        if src == libc::MAP_FAILED {
            libc::_exit(2);
        }
        let src = src as *mut u8;
        std::ptr::copy_nonoverlapping(pattern, src, span);
        let mut last = 0;
        loop {
            let gen = spin_until(
                || Some(ctl.gen.0.load(Ordering::Acquire)).filter(|&g| g != last),
                || false,
            )
            .unwrap_or(last);
            last = gen;
            if ctl.quit.0.load(Ordering::Relaxed) != 0 {
                libc::_exit(0);
            }
            let count = ctl.count.0.load(Ordering::Relaxed);
            let first = ctl.first.0.load(Ordering::Relaxed);
            if p.temp == Temp::Cold {
                flush(src, span);
            }
            ctl.ready.0.store(gen, Ordering::Release);
            spin_until(
                || (ctl.go.0.load(Ordering::Acquire) == gen).then_some(()),
                || false,
            );
            for seq in first..first + count {
                let m = src.add((seq % p.slots as u64) as usize * p.sstride);
                stamp(m, p.s, seq);
                let sent = if p.ch.is_ring() {
                    let h = ctl.head.0.load(Ordering::Relaxed);
                    spin_until(
                        || {
                            (h - ctl.tail.0.load(Ordering::Acquire) < p.ring_slots as u64)
                                .then_some(())
                        },
                        || false,
                    );
                    let slot = ring.add((h % p.ring_slots as u64) as usize * p.dstride);
                    libc::memcpy(slot.cast(), m.cast(), p.s);
                    ctl.head.0.store(h + 1, Ordering::Release);
                    true
                } else {
                    send_fd(fd, m, p.s, p.ch == Channel::Vmsplice)
                };
                if !sent {
                    libc::_exit(3);
                }
            }
            ctl.cpu
                .0
                .store(libc::sched_getcpu() as u64, Ordering::Relaxed);
            ctl.done.0.store(gen, Ordering::Release);
        }
    }
}

/// What one batch measured.
pub(super) struct Batch {
    /// ns per message, receipt (and read) included.
    pub(super) ns: f64,
    /// ns per message of the consumer's read alone (with `read`).
    pub(super) read_ns: f64,
    /// Every check held.
    pub(super) ok: bool,
    /// Producer and consumer ended the batch on the same CPU.
    pub(super) same_cpu: bool,
}

/// The consumer's side of one cell: the producer forked (or, for `user-copy×2`, the
/// source in this process), the buffers, the counters.
pub(super) struct Pair {
    p: Plan,
    shared: Shared,
    ring: Option<Shared>,
    pattern: Vec<u8>,
    /// Sum of the words of every slot's pattern but the first and the last.
    inner: Vec<u64>,
    dst: Buffer,
    /// `user-copy×2`: the source and the staging buffer.
    local: Option<(Buffer, Buffer)>,
    fd: libc::c_int,
    pid: libc::pid_t,
    seq: u64,
    gen: u64,
    old_mask: Option<libc::cpu_set_t>,
    timer: Timer,
}

impl Pair {
    /// Lays out the cell, pins this thread, forks the producer.
    pub(super) fn start(p: Plan, seed: u64, timer: Timer) -> anyhow::Result<Pair> {
        let mut pattern = vec![0u8; p.slots * p.sstride];
        fastrand::Rng::with_seed(seed).fill(&mut pattern);
        let inner = (0..p.slots)
            .map(|j| {
                let m = &pattern[j * p.sstride + 8..j * p.sstride + p.s - 8];
                m.chunks_exact(8).fold(0u64, |a, w| {
                    a.wrapping_add(u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
                })
            })
            .collect();
        let shared = Shared::new(std::mem::size_of::<Ctl>())?;
        let ring = if p.ch.is_ring() {
            Some(Shared::new(p.ring_slots * p.dstride)?)
        } else {
            None
        };
        let old_mask = match p.cpus {
            Some((c, _)) => Some(pin(c).ok_or_else(|| {
                anyhow::anyhow!(
                    "kernel: sched_setaffinity refused CPU {c}; is another process changing this one's affinity mask?"
                )
            })?),
            None => None,
        };
        let mut pair = Pair {
            p,
            shared,
            ring,
            pattern,
            inner,
            dst: Buffer::new(1),
            local: None,
            fd: -1,
            pid: 0,
            seq: 0,
            gen: 0,
            old_mask,
            timer,
        };
        if p.ch == Channel::UserCopy {
            let mut src = Buffer::new(pair.pattern.len());
            src.as_mut_slice()[..pair.pattern.len()].copy_from_slice(&pair.pattern);
            pair.local = Some((src, Buffer::new(STAGE)));
        } else {
            pair.fork()?;
        }
        // After the fork: pages of their own, no copy-on-write faults while timed.
        pair.dst = Buffer::new(p.slots * p.dstride);
        Ok(pair)
    }

    fn fork(&mut self) -> anyhow::Result<()> {
        let mut fds = [-1; 2];
        // SAFETY: `fds` has room for two descriptors.
        let rc = unsafe {
            match self.p.ch {
                Channel::Unix => libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                ),
                Channel::Pipe | Channel::Vmsplice => libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC),
                _ => 0,
            }
        };
        anyhow::ensure!(
            rc == 0,
            "kernel: cannot open a {}: {}",
            self.p.ch.name(),
            std::io::Error::last_os_error()
        );
        let ring = self.ring.as_ref().map_or(std::ptr::null_mut(), |r| r.ptr);
        // SAFETY: the child runs `producer` only (no allocation, no locks) and exits.
        let pid = unsafe { libc::fork() };
        anyhow::ensure!(
            pid >= 0,
            "kernel: fork failed: {}",
            std::io::Error::last_os_error()
        );
        if pid == 0 {
            // SAFETY: the child; its end of the channel, the shared mappings and the
            // pattern were all set up before the fork.
            unsafe {
                if fds[0] >= 0 {
                    libc::close(fds[0]);
                }
                producer(
                    &self.p,
                    self.shared.ctl(),
                    ring,
                    fds[1],
                    self.pattern.as_ptr(),
                )
            }
        }
        if fds[1] >= 0 {
            // SAFETY: the producer's end, ours to close.
            unsafe { libc::close(fds[1]) };
        }
        self.fd = fds[0];
        self.pid = pid;
        Ok(())
    }

    /// Whether the producer has exited (reaped).
    fn producer_gone(&self) -> bool {
        let mut st = 0;
        // SAFETY: our child; WNOHANG never blocks.
        self.pid > 0 && unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) } == self.pid
    }

    /// One batch of `count` messages. `read`: the consumer sums every message (timed
    /// apart as well); `full`: compares every byte (untimed).
    pub(super) fn batch(&mut self, count: usize, read: bool, full: bool) -> anyhow::Result<Batch> {
        let p = self.p;
        if full {
            self.dst.as_mut_slice().fill(0xEE);
        }
        if p.temp == Temp::Cold {
            // SAFETY: our own buffers.
            unsafe {
                flush(self.dst.as_ptr(), p.slots * p.dstride);
                if let Some((src, _)) = &self.local {
                    flush(src.as_ptr(), p.slots * p.sstride);
                }
            }
        }
        let ctl = self.shared.ctl();
        let first = self.seq;
        if p.ch != Channel::UserCopy {
            self.gen += 1;
            let gen = self.gen;
            ctl.count.0.store(count as u64, Ordering::Relaxed);
            ctl.first.0.store(first, Ordering::Relaxed);
            ctl.gen.0.store(gen, Ordering::Release);
            let deadline = Instant::now() + DEADLINE;
            let ready = spin_until(
                || (ctl.ready.0.load(Ordering::Acquire) == gen).then_some(()),
                || self.producer_gone() || Instant::now() > deadline,
            );
            anyhow::ensure!(
                ready.is_some(),
                "kernel: the {} producer did not answer (exited or stuck)",
                p.ch.name()
            );
        }
        let t0 = Instant::now();
        ctl.go.0.store(self.gen, Ordering::Release);
        let (mut ok, mut read_ns) = (true, 0.0);
        for seq in first..first + count as u64 {
            let (good, ns) = self.one(seq, read, full)?;
            ok &= good;
            read_ns += ns;
        }
        let ns = t0.elapsed().as_nanos() as f64 / count as f64;
        self.seq += count as u64;
        // SAFETY: no preconditions.
        let mine = unsafe { libc::sched_getcpu() } as u64;
        let theirs = if p.ch == Channel::UserCopy {
            mine
        } else {
            // The producer stores its CPU after its last send; wait for it.
            let ctl = self.shared.ctl();
            let deadline = Instant::now() + DEADLINE;
            spin_until(
                || (ctl.done.0.load(Ordering::Acquire) == self.gen).then_some(()),
                || self.producer_gone() || Instant::now() > deadline,
            );
            ctl.cpu.0.load(Ordering::Relaxed)
        };
        Ok(Batch {
            ns,
            read_ns: read_ns / count as f64,
            ok,
            same_cpu: mine == theirs,
        })
    }

    /// Receives (or, for `user-copy×2`, copies) message `seq` and checks it; with
    /// `read`, also the ns its sum of every word took.
    fn one(&mut self, seq: u64, read: bool, full: bool) -> anyhow::Result<(bool, f64)> {
        let p = self.p;
        let j = (seq % p.slots as u64) as usize;
        let dst = self.dst.as_mut_ptr().wrapping_add(j * p.dstride);
        let m: *const u8 = match p.ch {
            Channel::UserCopy => {
                let (src, stage) = self.local.as_mut().expect("user-copy has its buffers");
                let from = src.as_mut_ptr().wrapping_add(j * p.sstride);
                // SAFETY: slot `j` of our source, the staging buffer, slot `j` of the
                // destination: all ours, disjoint, large enough.
                unsafe {
                    stamp(from, p.s, seq);
                    for off in (0..p.s).step_by(STAGE) {
                        let c = STAGE.min(p.s - off);
                        libc::memcpy(stage.as_mut_ptr().cast(), from.add(off).cast(), c);
                        libc::memcpy(dst.add(off).cast(), stage.as_ptr().cast(), c);
                    }
                }
                dst
            }
            Channel::ShmCopy | Channel::ShmInPlace => {
                let ctl = self.shared.ctl();
                let deadline = Instant::now() + DEADLINE;
                let got = spin_until(
                    || (ctl.head.0.load(Ordering::Acquire) > seq).then_some(()),
                    || self.producer_gone() || Instant::now() > deadline,
                );
                anyhow::ensure!(got.is_some(), "kernel: the ring's producer stopped");
                let ring = self.ring.as_ref().expect("ring channels have a ring").ptr;
                let slot = ring.wrapping_add((seq % p.ring_slots as u64) as usize * p.dstride);
                if p.ch == Channel::ShmCopy {
                    // SAFETY: a published slot (head > seq) and our slot `j`.
                    unsafe { libc::memcpy(dst.cast(), slot.cast(), p.s) };
                    ctl.tail.0.store(seq + 1, Ordering::Release);
                    dst
                } else {
                    slot
                }
            }
            _ => {
                // SAFETY: slot `j` of our destination holds `s` bytes.
                let ok = unsafe { recv_fd(self.fd, dst, p.s) };
                anyhow::ensure!(ok, "kernel: {} read failed or ended early", p.ch.name());
                dst
            }
        };
        // SAFETY: `m` holds the `s` bytes of message `seq` (a ring slot is not reused
        // before the tail passes it, below), 8-byte aligned.
        let words = unsafe { std::slice::from_raw_parts(m as *const u64, p.s / 8) };
        let mut ok = words[0] == seq && words[p.s / 8 - 1] == seq;
        let mut read_ns = 0.0;
        if read {
            let t0 = stamp_tsc();
            let sum = std::hint::black_box(&words[1..p.s / 8 - 1])
                .iter()
                .fold(0u64, |a, &w| a.wrapping_add(w));
            read_ns = self.timer.to_ns(stamp_tsc() - t0);
            ok &= sum == self.inner[j];
        }
        if full {
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(m.add(8), p.s - 16) };
            ok &= bytes == &self.pattern[j * p.sstride + 8..j * p.sstride + p.s - 8];
        }
        if p.ch == Channel::ShmInPlace {
            self.shared.ctl().tail.0.store(seq + 1, Ordering::Release);
        }
        Ok((ok, read_ns))
    }

    /// Tells the producer to quit and reaps it; gives the CPU mask back.
    pub(super) fn finish(mut self) -> anyhow::Result<()> {
        let r = self.stop();
        if let Some(m) = self.old_mask.take() {
            restore(&m);
        }
        r
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        if self.pid <= 0 {
            return Ok(());
        }
        let ctl = self.shared.ctl();
        ctl.quit.0.store(1, Ordering::Relaxed);
        ctl.gen.0.store(self.gen + 1, Ordering::Release);
        if self.fd >= 0 {
            // SAFETY: our end of the channel.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
        let mut st = 0;
        // SAFETY: our child.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
        self.pid = 0;
        anyhow::ensure!(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
            "kernel: the {} producer failed (wait status {st:#x})",
            self.p.ch.name()
        );
        Ok(())
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        if self.pid > 0 {
            // SAFETY: our child, which must not outlive the cell.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
        if self.fd >= 0 {
            // SAFETY: our end of the channel.
            unsafe { libc::close(self.fd) };
        }
        if let Some(m) = self.old_mask.take() {
            restore(&m);
        }
    }
}
