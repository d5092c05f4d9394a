//! The estimated time of the traced calls with the system's libc instead of blockmem.
//!
//! How: for every (op, size class) of the trace, up to 64 of its calls (a uniform
//! sample: their exact sizes, their addresses' offsets within a 4 KiB page, and for
//! overlapping moves the distance between source and destination) are replayed on
//! the host running the report, by libc's function and by blockmem's `auto` entry point, in
//! alternating timed repetitions on warm buffers. The median time ratio libc/blockmem
//! of the class scales the cycles the traced program actually spent in that class:
//!
//! ```text
//! estimated libc cycles(op, class) = traced cycles(op, class) × libc time / blockmem time
//! ```
//!
//! What it assumes: the ratio measured on warm buffers holds for the program's calls,
//! whose cache state may differ (the probe table shows how often they found their
//! data cached); calls of very different sizes within one class are represented by the
//! sample. It is an estimate, labelled as such; a measured comparison is `blockmem run
//! --compare` (whole program) or a second trace with `BLOCKMEM_DISABLE=1`.
//!
//! The calls come from a file, so the replay trusts none of it: [`plan`] places every
//! call with checked arithmetic inside buffers sized from the calls themselves, each
//! range is checked against its mapping again just before the call, and
//! [`ReplayLimits`] bounds the largest call and the total mapped (a class beyond them
//! is left out, and the table says so).

use std::time::Duration;

use blockmem::kernel::Op;
use serde::Serialize;

use super::analysis::{class_max, size_class, Analysis, Sampled, CLASSES};
use super::format::CallOp;
use crate::lab::mem::Buffer;
use crate::lab::method::{Entry, Method};
use crate::lab::timer::Timer;

/// One (op, class) row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The op.
    pub op: CallOp,
    /// Size class (see `analysis::size_class`).
    pub class: u32,
    /// Calls in the trace.
    pub calls: u64,
    /// Traced cycles (blockmem).
    pub traced_cycles: u64,
    /// Calls replayed.
    pub replayed: usize,
    /// Median libc time / median blockmem time on the replay.
    pub ratio: f64,
    /// Traced cycles × ratio.
    pub libc_cycles: f64,
}

/// The estimate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Estimate {
    /// Per (op, class), ascending.
    pub rows: Vec<Row>,
    /// Sum of traced cycles over estimated classes.
    pub traced_cycles: u64,
    /// Sum of estimated libc cycles.
    pub libc_cycles: f64,
    /// Why there is no estimate, if there is none.
    pub skipped: Option<String>,
    /// Classes left out of the estimate, and why.
    pub notes: Vec<String>,
}

/// Replays at most this many bytes per method and repetition in one class (large
/// classes replay fewer calls).
const BYTES_PER_REP: u64 = 64 << 20;

/// How much the replay may map and run. The calls come from a file, so every bound
/// is checked: a class whose calls are larger than `max_call`, or that would take the
/// estimate's buffers past `map_budget` or its replayed bytes past `copy_budget`, is
/// left out with a note. The defaults keep any trace's estimate to about a second.
#[derive(Clone, Copy, Debug)]
pub struct ReplayLimits {
    /// Largest call replayed, bytes.
    pub max_call: u64,
    /// Bytes mapped for replay buffers over the whole estimate.
    pub map_budget: u64,
    /// Bytes copied or set by all the replays together (both methods, warm-up runs
    /// included).
    pub copy_budget: u64,
    /// Timed repetitions per method (fewer for classes above 1 MiB).
    pub reps: usize,
}

impl Default for ReplayLimits {
    /// 128 MiB calls at most, 1 GiB of buffers and 2 GiB replayed in all, 11
    /// repetitions.
    fn default() -> Self {
        ReplayLimits {
            max_call: 128 << 20,
            map_budget: 1 << 30,
            copy_budget: 2 << 30,
            reps: 11,
        }
    }
}

fn entry(m: &Method, op: CallOp, overlap: bool) -> Option<Entry> {
    m.entry(match op {
        CallOp::Copy if !overlap => Op::Copy,
        CallOp::Copy | CallOp::Move => Op::Move,
        CallOp::Set => Op::Set,
        CallOp::Zero => Op::Zero,
    })
}

/// Where the replay reads a call's source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    /// At this offset of the source buffer.
    Src(usize),
    /// At this offset of the destination buffer (an overlapping move).
    Dst(usize),
}

/// One call placed in the replay buffers.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    /// Destination offset.
    pub dst: usize,
    /// Source.
    pub from: From,
    /// Bytes.
    pub n: usize,
    /// The source overlaps the destination.
    pub overlap: bool,
}

/// A class's replay: both buffers' length and every call's place, each range checked
/// to lie inside its buffer.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    /// Bytes of each buffer (source and destination).
    pub len: usize,
    /// The calls.
    pub calls: Vec<Placed>,
}

/// `off..off + n` inside a buffer of `len` bytes, as a checked offset.
fn inside(off: u64, n: u64, len: usize) -> Option<usize> {
    (off.checked_add(n)? <= len as u64).then_some(off as usize)
}

/// Places `calls` in two buffers: disjoint calls at their page offsets (below 4096),
/// overlapping moves past `max + 4096` in the destination buffer with the source
/// `delta` away (the buffers are then `3·max + 3 pages` long, else `max + 1 page`).
/// None if a call is larger than `max_call` or a range would leave its buffer (a trace
/// the reader's checks should have refused).
pub fn plan(calls: &[Sampled], max_call: u64) -> Option<ReplayPlan> {
    let max = calls.iter().map(|c| c.n).max()?;
    if max > max_call {
        return None;
    }
    let len = if calls.iter().any(|c| c.overlap_delta.is_some()) {
        max.checked_mul(3)?.checked_add(3 * 4096)?
    } else {
        max.checked_add(4096)?
    };
    let len = usize::try_from(len).ok()?;
    let placed = calls
        .iter()
        .map(|c| {
            let (dst_off, src_off) = (c.dst_off % 4096, c.src_off % 4096);
            let (dst, from) = match c.overlap_delta {
                Some(d) => {
                    let dst = max + 4096 + dst_off;
                    let src = dst.checked_add_signed(d)?;
                    (inside(dst, c.n, len)?, From::Dst(inside(src, c.n, len)?))
                }
                None => (
                    inside(dst_off, c.n, len)?,
                    From::Src(inside(src_off, c.n, len)?),
                ),
            };
            Some(Placed {
                dst,
                from,
                n: c.n as usize,
                overlap: c.overlap_delta.is_some(),
            })
        })
        .collect::<Option<_>>()?;
    Some(ReplayPlan { len, calls: placed })
}

/// Times one class: returns the median libc / blockmem ratio.
fn measure(
    timer: &Timer,
    (libc, auto): (&Method, &Method),
    op: CallOp,
    plan: &ReplayPlan,
    reps: usize,
) -> Option<f64> {
    let mut dst = Buffer::new(plan.len);
    let mut src = Buffer::new(plan.len);
    src.fill_random(&mut fastrand::Rng::with_seed(3));
    let run = |m: &Method, dst: &mut Buffer| -> Option<f64> {
        let (d, dlen, s, slen) = (dst.as_mut_ptr(), dst.len(), src.as_ptr(), src.len());
        let mut calls: Vec<(Entry, *mut u8, *const u8, usize)> = Vec::new();
        for c in &plan.calls {
            let e = entry(m, op, c.overlap)?;
            // The explicit check before every copy: each range inside the mapping it
            // is in, whatever the plan says.
            let (from, from_len) = match c.from {
                From::Src(o) => (s.wrapping_add(o), slen.checked_sub(o)?),
                From::Dst(o) => (d.wrapping_add(o) as *const u8, dlen.checked_sub(o)?),
            };
            if c.n > from_len || c.n > dlen.checked_sub(c.dst)? {
                return None;
            }
            calls.push((e, d.wrapping_add(c.dst), from, c.n));
        }
        Some(timer.time(|| {
            for &(e, to, from, n) in &calls {
                // SAFETY: checked just above: `to..to + n` lies inside the destination
                // mapping and `from..from + n` inside its own (the source buffer, or
                // the destination for an overlapping move, which the move handles).
                unsafe { e.call(to, from, 0x5a, n) };
            }
        }))
    };
    // Warm both paths and the buffers once, then alternate.
    run(libc, &mut dst)?;
    run(auto, &mut dst)?;
    let (mut l, mut b) = (Vec::new(), Vec::new());
    for i in 0..reps.max(1) {
        if i % 2 == 0 {
            l.push(run(libc, &mut dst)?);
            b.push(run(auto, &mut dst)?);
        } else {
            b.push(run(auto, &mut dst)?);
            l.push(run(libc, &mut dst)?);
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (lm, bm) = (med(&mut l), med(&mut b));
    (bm > 0.0).then(|| lm / bm)
}

/// Estimates the libc time of `a`'s calls (see the module docs), with the default
/// [`ReplayLimits`] and a calibrated timer.
pub fn estimate(a: &Analysis) -> Estimate {
    estimate_with(
        a,
        &Timer::calibrate(Duration::from_millis(20)),
        ReplayLimits::default(),
    )
}

/// [`estimate`] with a given timer and limits.
pub fn estimate_with(a: &Analysis, timer: &Timer, lim: ReplayLimits) -> Estimate {
    if a.passthrough_calls > 0 {
        return Estimate {
            skipped: Some(
                "the trace ran libc itself (BLOCKMEM_DISABLE=1): its times are libc's".into(),
            ),
            ..Estimate::default()
        };
    }
    let libc = match Method::libc() {
        Ok(m) => m,
        Err(e) => {
            return Estimate {
                skipped: Some(format!("libc's functions are not available here: {e}")),
                ..Estimate::default()
            }
        }
    };
    let auto = Method::auto();
    let mut out = Estimate::default();
    let (mut mapped, mut copied) = (0u64, 0u64);
    for (key, samples) in a.samples.iter().enumerate() {
        let (op, class) = (CallOp::ALL[key / CLASSES], (key % CLASSES) as u32);
        let Some(counts) = a.classes[op as usize].get(class as usize) else {
            continue;
        };
        if counts.calls == 0 || class == 0 || samples.is_empty() {
            continue;
        }
        let chosen = choose(samples);
        debug_assert!(chosen.iter().all(|s| size_class(s.n) == class));
        let Some(plan) = plan(&chosen, lim.max_call) else {
            out.notes.push(format!(
                "{} calls up to {} left out: larger than the {} replay limit",
                op.name(),
                size(class_max(class)),
                size(lim.max_call)
            ));
            continue;
        };
        // Classes of calls above 1 MiB: 5 repetitions.
        let reps = if class_max(class) > 1 << 20 {
            lim.reps.min(5)
        } else {
            lim.reps
        };
        let bytes = 2 * plan.len as u64;
        let replayed = chosen.iter().fold(0u64, |t, c| t.saturating_add(c.n));
        let copies = replayed.saturating_mul(2 + 2 * reps as u64);
        if mapped + bytes > lim.map_budget || copied.saturating_add(copies) > lim.copy_budget {
            out.notes.push(format!(
                "{} calls up to {} left out: the replay would pass its budget ({} mapped, {} replayed in all)",
                op.name(),
                size(class_max(class)),
                size(lim.map_budget),
                size(lim.copy_budget)
            ));
            continue;
        }
        mapped += bytes;
        copied = copied.saturating_add(copies);
        let Some(ratio) = measure(timer, (&libc, &auto), op, &plan, reps) else {
            continue;
        };
        let libc_cycles = counts.cycles as f64 * ratio;
        out.traced_cycles = out.traced_cycles.saturating_add(counts.cycles);
        out.libc_cycles += libc_cycles;
        out.rows.push(Row {
            op,
            class,
            calls: counts.calls,
            traced_cycles: counts.cycles,
            replayed: chosen.len(),
            ratio,
            libc_cycles,
        });
    }
    out
}

fn size(n: u64) -> String {
    crate::lab::experiments::fmt_size(usize::try_from(n).unwrap_or(usize::MAX))
}

/// The calls of a class to replay: fewer for large classes, at most BYTES_PER_REP
/// per repetition (and at least one call).
fn choose(samples: &[Sampled]) -> Vec<Sampled> {
    let mut chosen: Vec<Sampled> = Vec::new();
    let mut bytes = 0u64;
    for s in samples {
        if !chosen.is_empty() && bytes.saturating_add(s.n) > BYTES_PER_REP {
            break;
        }
        bytes = bytes.saturating_add(s.n);
        chosen.push(*s);
    }
    chosen
}
