//! Two processes (seed 003 Table 1: `bw_pipe`, `bw_unix`): a producer, forked and pinned
//! to a second CPU, sends batches of messages; the consumer (the lab, pinned to the
//! first) receives and times them. Channels:
//!
//! - `pipe`, `unix` (a `SOCK_STREAM` socketpair): `write` then `read`, two kernel copies.
//! - `vmsplice`: the producer's pages spliced into a pipe, the consumer `read`s them: one
//!   copy. A page in the pipe is still the producer's, so it rotates over enough
//!   page-aligned slots that no slot is rewritten while the pipe may hold it.
//! - `shm-ring`: a ring of slots in a shared mapping, libc `memcpy` in and out, the
//!   indices spun on: two copies, no system call. `shm-inplace`: the consumer reads the
//!   slot where it lies (no copy on its side).
//! - `user-copy×2`: one process, the same bytes copied twice through a 64 KiB staging
//!   buffer with libc `memcpy`: what the pipe's two copies cost without the kernel.
//!
//! Temperatures: `hot`, every message from and into one buffer; `cold`, every message
//! of a batch in its own slot of a region flushed from every cache before the batch.
//! Each message carries its sequence number in its first and last word, checked as it
//! arrives; with `read` the consumer also sums every word of it (checked against the
//! sum it must have); an untimed batch per cell compares every byte.
//!
//! The blocking channels run again, hot, with both processes pinned to the first CPU:
//! a blocked side is then woken by a context switch, not by an interrupt to another
//! CPU. The processes' mechanics (fork, control block, producer) live in `pair.rs`.

use serde_json::json;

use super::pair::{pipe_pages, Pair};
use super::{check, record, Facts};
use crate::lab::cpus::allowed_cpus;
use crate::lab::experiments::{fmt_size, Ctx};
use crate::lab::runner::Record;
use crate::lab::timer::Timer;

/// The part's name in the records.
pub const PART: &str = "ipc";

/// Message sizes (full run, `--quick`).
const SIZES: [&[usize]; 2] = [
    &[64, 512, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20],
    &[64, 4 << 10, 64 << 10, 1 << 20],
];

/// Repetitions (batches) per cell (full run, `--quick`).
const REPS: [usize; 2] = [21, 15];

/// Bytes per batch, and the bounds on its message count.
const BATCH_BYTES: usize = 4 << 20;
const BATCH_MIN: usize = 8;
const BATCH_MAX: [usize; 2] = [4096, 2048];

/// The shared ring holds at least this many bytes (and two slots).
const RING_BYTES: usize = 256 << 10;

/// The classic loops' message and total bytes (full run, `--quick`).
const CLASSIC_MSG: usize = 64 << 10;
const CLASSIC_TOTAL: [usize; 2] = [32 << 20, 8 << 20];

/// A way of moving messages between the processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// `write` / `read` on a pipe.
    Pipe,
    /// `write` / `read` on a UNIX stream socketpair.
    Unix,
    /// `vmsplice` into a pipe / `read`.
    Vmsplice,
    /// A shared ring, copied in and out.
    ShmCopy,
    /// A shared ring, copied in, read in place.
    ShmInPlace,
    /// Two user-space copies in one process (the reference).
    UserCopy,
}

impl Channel {
    /// Every channel, in table order.
    pub const ALL: [Channel; 6] = [
        Channel::Pipe,
        Channel::Unix,
        Channel::Vmsplice,
        Channel::ShmCopy,
        Channel::ShmInPlace,
        Channel::UserCopy,
    ];

    /// The method name in the records.
    pub const fn name(self) -> &'static str {
        match self {
            Channel::Pipe => "pipe",
            Channel::Unix => "unix",
            Channel::Vmsplice => "vmsplice",
            Channel::ShmCopy => "shm-ring",
            Channel::ShmInPlace => "shm-inplace",
            Channel::UserCopy => "user-copy×2",
        }
    }

    /// Copies of every byte on the way (kernel or user).
    pub const fn copies(self) -> usize {
        match self {
            Channel::Vmsplice | Channel::ShmInPlace => 1,
            _ => 2,
        }
    }

    /// Consumer modes measured: `read` only where the consumer does nothing else.
    fn reuses(self) -> &'static [bool] {
        match self {
            Channel::ShmInPlace => &[true],
            _ => &[false, true],
        }
    }

    pub(super) fn is_ring(self) -> bool {
        matches!(self, Channel::ShmCopy | Channel::ShmInPlace)
    }
}

/// Message temperature (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temp {
    /// One buffer each side.
    Hot,
    /// A flushed slot per message.
    Cold,
}

impl Temp {
    /// The name in the records.
    pub const fn name(self) -> &'static str {
        match self {
            Temp::Hot => "hot",
            Temp::Cold => "cold",
        }
    }
}

/// One cell's layout.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) ch: Channel,
    pub(super) s: usize,
    pub(super) temp: Temp,
    /// Messages per batch.
    pub(super) msgs: usize,
    /// Source and destination slots (message `k` uses slot `k % slots`).
    pub(super) slots: usize,
    pub(super) sstride: usize,
    pub(super) dstride: usize,
    pub(super) ring_slots: usize,
    /// Consumer and producer CPUs; `None`: not pinned (the classic loops).
    pub(super) cpus: Option<(usize, usize)>,
}

impl Plan {
    pub(super) fn new(
        ch: Channel,
        s: usize,
        temp: Temp,
        msgs: usize,
        cpus: Option<(usize, usize)>,
    ) -> Plan {
        let line = |n: usize| n.div_ceil(64) * 64;
        let page = |n: usize| n.div_ceil(4096) * 4096;
        let sstride = if ch == Channel::Vmsplice {
            page(s)
        } else {
            line(s)
        };
        // A pipe holds at most its capacity in pages (a message's pages each one
        // buffer): that many messages, plus the one being written, may be in flight.
        let in_flight = if ch == Channel::Vmsplice {
            pipe_pages() / (sstride / 4096) + 2
        } else {
            1
        };
        let slots = match temp {
            Temp::Hot => in_flight,
            Temp::Cold => msgs.max(in_flight),
        };
        Plan {
            ch,
            s,
            temp,
            msgs,
            slots,
            sstride,
            dstride: line(s),
            ring_slots: (RING_BYTES / line(s)).max(2),
            cpus,
        }
    }
}

/// What one cell measured in one consumer mode.
struct Measured {
    reuse: bool,
    /// ns per message, one per batch.
    samples: Vec<f64>,
    /// ns per message of the consumer's read, one per batch (`reuse` only).
    read: Vec<f64>,
    verified: bool,
    /// Batches that ended with both processes on one CPU.
    same_cpu: usize,
}

/// Runs one cell: `reps` batches per consumer mode (modes alternating, so each pair
/// of batches is side by side), then an untimed full check per mode.
fn measure(p: Plan, reps: usize, seed: u64, timer: Timer) -> anyhow::Result<Vec<Measured>> {
    let mut pair = Pair::start(p, seed, timer)?;
    let mut out: Vec<Measured> =
        p.ch.reuses()
            .iter()
            .map(|&reuse| Measured {
                reuse,
                samples: Vec::new(),
                read: Vec::new(),
                verified: true,
                same_cpu: 0,
            })
            .collect();
    // One untimed batch: the channel's own buffers (pipe pages, socket buffers) warm.
    pair.batch(p.msgs, false, false)?;
    for rep in 0..reps {
        for i in 0..out.len() {
            let k = if rep % 2 == 0 { i } else { out.len() - 1 - i };
            let b = pair.batch(p.msgs, out[k].reuse, false)?;
            let m = &mut out[k];
            m.samples.push(b.ns);
            if m.reuse {
                m.read.push(b.read_ns);
            }
            m.verified &= b.ok;
            m.same_cpu += usize::from(b.same_cpu);
        }
    }
    for m in &mut out {
        m.verified &= pair.batch(p.msgs, m.reuse, true)?.ok;
    }
    pair.finish()?;
    Ok(out)
}

/// The CPUs of the pair: the first two allowed, or the one allowed twice (marked).
fn pair_cpus() -> ((usize, usize), bool) {
    let c = allowed_cpus();
    match c.as_slice() {
        [a, b, ..] => ((*a, *b), false),
        [a] => ((*a, *a), true),
        [] => ((0, 0), true),
    }
}

/// Messages per batch of `s`-byte messages.
fn batch_msgs(s: usize, quick: bool) -> usize {
    (BATCH_BYTES / s).clamp(BATCH_MIN, BATCH_MAX[usize::from(quick)])
}

/// Where the pair ran: `two CPUs`, `one CPU` (both pinned to it) or `unpinned`.
fn placement(p: &Plan) -> &'static str {
    match p.cpus {
        Some((a, b)) if a != b => TWO_CPUS,
        Some(_) => ONE_CPU,
        None => "unpinned",
    }
}

/// Placement names in the records.
pub const TWO_CPUS: &str = "two CPUs";
/// See [`TWO_CPUS`].
pub const ONE_CPU: &str = "one CPU";

/// Part 2: every size × temperature × channel on two CPUs; then the channels that
/// block (pipe, socket, vmsplice), hot, with both processes on one CPU: a wake-up is
/// then a context switch instead of a cross-CPU interrupt.
pub fn run(ctx: &mut Ctx<'_>, facts: &Facts) -> anyhow::Result<Vec<Record>> {
    let q = usize::from(ctx.quick);
    let sizes: Vec<usize> = ctx
        .sizes_or(SIZES[0], SIZES[1])
        .into_iter()
        .map(|s| s.max(64).div_ceil(64) * 64)
        .collect();
    let reps = ctx.reps.unwrap_or(REPS[q]).max(1);
    let (cpus, single) = pair_cpus();
    if single {
        eprintln!(
            "blockmem lab: {} {PART}: one CPU allowed: producer and consumer share CPU {} (placement `one CPU`)",
            super::NAME,
            cpus.0
        );
    }
    let mut plans = Vec::new();
    for &s in &sizes {
        for temp in [Temp::Hot, Temp::Cold] {
            for ch in Channel::ALL {
                plans.push(Plan::new(ch, s, temp, batch_msgs(s, ctx.quick), Some(cpus)));
            }
        }
    }
    if !single {
        for &s in &sizes {
            for ch in [Channel::Pipe, Channel::Unix, Channel::Vmsplice] {
                let one = Some((cpus.0, cpus.0));
                plans.push(Plan::new(ch, s, Temp::Hot, batch_msgs(s, ctx.quick), one));
            }
        }
    }
    let pb = ctx.bar(plans.len(), &format!("{} {PART}", super::NAME), "cells");
    let mut out = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        for m in measure(*p, reps, 0x1bc_0000 + i as u64, ctx.runner.timer)? {
            out.push(ipc_record(ctx, facts, p, m));
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(out)
}

fn ipc_record(ctx: &mut Ctx<'_>, facts: &Facts, p: &Plan, m: Measured) -> Record {
    let reuse = if m.reuse { "read" } else { "none" };
    check(
        ctx,
        m.verified,
        format!(
            "{} {PART} {} {} {} {reuse} {}",
            super::NAME,
            p.ch.name(),
            fmt_size(p.s),
            p.temp.name(),
            placement(p)
        ),
    );
    let mut e = facts.extras(PART);
    e.insert("temperature".into(), json!(p.temp.name()));
    e.insert("placement".into(), json!(placement(p)));
    e.insert("msgs_per_batch".into(), json!(p.msgs));
    e.insert("copies".into(), json!(p.ch.copies()));
    e.insert("slots".into(), json!(p.slots));
    e.insert(
        "same_cpu_batches".into(),
        json!(m.same_cpu as f64 / m.samples.len().max(1) as f64),
    );
    match p.cpus {
        Some((a, b)) => e.insert("cpus".into(), json!([a, b])),
        None => e.insert("cpus".into(), json!("unpinned")),
    };
    if !m.read.is_empty() {
        let r = crate::lab::stats::Summary::of(&m.read);
        e.insert("read_ns_per_msg".into(), json!(r.median));
        e.insert("read_gbps".into(), json!(r.gbps(p.s)));
    }
    record(
        p.ch.name(),
        p.s,
        (p.temp.name(), p.temp.name(), reuse),
        m.samples,
        &[],
        m.verified,
        e,
    )
}

/// lmbench's `bw_pipe` and `bw_unix`: 64 KiB messages, one buffer each side, neither
/// process pinned, a fixed total per pass; one sample per pass, as ns per message.
pub fn classic(ctx: &mut Ctx<'_>, facts: &Facts) -> anyhow::Result<Vec<Record>> {
    let q = usize::from(ctx.quick);
    let passes = ctx.reps.unwrap_or([21, 15][q]).max(1);
    let msgs = CLASSIC_TOTAL[q] / CLASSIC_MSG;
    let mut out = Vec::new();
    for (ch, name) in [(Channel::Pipe, "bw_pipe"), (Channel::Unix, "bw_unix")] {
        let p = Plan::new(ch, CLASSIC_MSG, Temp::Hot, msgs, None);
        let m = measure(p, passes, 0xc1a5, ctx.runner.timer)?.remove(0);
        check(ctx, m.verified, format!("{} {name}", super::NAME));
        let mut e = facts.extras(super::read::CLASSIC);
        e.insert("loop".into(), json!(name));
        e.insert("total_bytes".into(), json!(CLASSIC_TOTAL[q]));
        e.insert("cpus".into(), json!("unpinned"));
        e.insert("placement".into(), json!("unpinned"));
        e.insert(
            "same_cpu_batches".into(),
            json!(m.same_cpu as f64 / m.samples.len().max(1) as f64),
        );
        out.push(record(
            name,
            CLASSIC_MSG,
            ("hot", "hot", "none"),
            m.samples,
            &[],
            m.verified,
            e,
        ));
    }
    Ok(out)
}

/// Whether the kernel offers `MSG_ZEROCOPY` (`SO_ZEROCOPY` accepted) on a UNIX and on a
/// TCP socket, in words.
pub fn zerocopy_probe() -> String {
    // SO_ZEROCOPY (asm-generic/socket.h).
    const SO_ZEROCOPY: libc::c_int = 60;
    let try_on = |domain: libc::c_int| -> Result<(), std::io::Error> {
        // SAFETY: a fresh socket, closed below.
        let s = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let one: libc::c_int = 1;
        // SAFETY: `one` is a c_int, its size given.
        let rc = unsafe {
            libc::setsockopt(
                s,
                libc::SOL_SOCKET,
                SO_ZEROCOPY,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        let e = std::io::Error::last_os_error();
        // SAFETY: ours.
        unsafe { libc::close(s) };
        if rc == 0 {
            Ok(())
        } else {
            Err(e)
        }
    };
    let word = |r: Result<(), std::io::Error>| match r {
        Ok(()) => "offered".to_string(),
        Err(e) => format!("not offered ({e})"),
    };
    format!(
        "MSG_ZEROCOPY: AF_UNIX {}, TCP {} (not measured: the kernel copies looped-back zerocopy data anyway, per its msg_zerocopy documentation)",
        word(try_on(libc::AF_UNIX)),
        word(try_on(libc::AF_INET))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmsplice_rotates_over_more_slots_than_a_pipe_holds_messages() {
        let pages = pipe_pages();
        let p = Plan::new(Channel::Vmsplice, 64, Temp::Hot, 8, None);
        assert!(p.slots > pages, "{p:?}");
        let p = Plan::new(Channel::Vmsplice, 1 << 20, Temp::Hot, 8, None);
        assert_eq!(p.sstride, 1 << 20);
        assert!(p.slots >= 2);
        let p = Plan::new(Channel::Pipe, 100, Temp::Hot, 8, None);
        assert_eq!((p.slots, p.sstride, p.dstride), (1, 128, 128));
    }

    #[test]
    fn every_channel_moves_verified_messages() {
        for ch in Channel::ALL {
            for temp in [Temp::Hot, Temp::Cold] {
                let p = Plan::new(ch, 4096 + 64, temp, 16, None);
                let m = measure(p, 1, 7, Timer::nominal()).unwrap();
                assert!(m.iter().all(|m| m.verified), "{ch:?} {temp:?}");
            }
        }
    }
}
