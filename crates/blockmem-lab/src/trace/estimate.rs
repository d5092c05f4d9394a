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

use std::time::Duration;

use blockmem::kernel::Op;
use serde::Serialize;

use super::analysis::{size_class, Analysis, Sampled, CLASSES};
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
}

/// Replays at most this many bytes per method and repetition in one class (large
/// classes replay fewer calls).
const BYTES_PER_REP: u64 = 64 << 20;

fn entry(m: &Method, op: CallOp, overlap: bool) -> Option<Entry> {
    m.entry(match op {
        CallOp::Copy if !overlap => Op::Copy,
        CallOp::Copy | CallOp::Move => Op::Move,
        CallOp::Set => Op::Set,
        CallOp::Zero => Op::Zero,
    })
}

/// Where the replay puts a call in its buffers: (dst, src) offsets.
fn place(s: &Sampled, max: u64) -> (usize, usize) {
    match s.overlap_delta {
        // Source and destination both in the destination buffer, `delta` apart.
        Some(d) => {
            let dst = max + 4096 + s.dst_off;
            (dst as usize, (dst as i64 + d) as usize)
        }
        None => (s.dst_off as usize, s.src_off as usize),
    }
}

/// Times one class: returns the median libc / blockmem ratio.
fn measure(
    timer: &Timer,
    libc: &Method,
    auto: &Method,
    op: CallOp,
    calls: &[Sampled],
) -> Option<f64> {
    let max = calls.iter().map(|c| c.n).max()?;
    let len = (3 * max + 3 * 4096) as usize;
    let mut dst = Buffer::new(len);
    let mut src = Buffer::new(len);
    src.fill_random(&mut fastrand::Rng::with_seed(3));
    let run = |m: &Method, dst: &mut Buffer| -> Option<f64> {
        let d = dst.as_mut_ptr();
        let s = src.as_ptr();
        let entries: Vec<(Entry, usize, *const u8)> = calls
            .iter()
            .map(|c| {
                let e = entry(m, op, c.overlap_delta.is_some())?;
                let (dof, sof) = place(c, max);
                let from = if c.overlap_delta.is_some() {
                    d.wrapping_add(sof) as *const u8
                } else {
                    s.wrapping_add(sof)
                };
                Some((e, dof, from))
            })
            .collect::<Option<_>>()?;
        Some(timer.time(|| {
            for ((e, dof, from), c) in entries.iter().zip(calls) {
                // SAFETY: every range lies inside its buffer (3·max + 3 pages long):
                // disjoint calls start below 4096 and are at most `max` long;
                // overlapping moves start at max + 4096 + (offset < 4096) with the
                // source less than n <= max away.
                unsafe { e.call(d.wrapping_add(*dof), *from, 0x5a, c.n as usize) };
            }
        }))
    };
    // Warm both paths and the buffers once, then alternate.
    run(libc, &mut dst)?;
    run(auto, &mut dst)?;
    let reps = if max > 1 << 20 { 5 } else { 11 };
    let (mut l, mut b) = (Vec::new(), Vec::new());
    for i in 0..reps {
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

/// Estimates the libc time of `a`'s calls (see the module docs).
pub fn estimate(a: &Analysis) -> Estimate {
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
    let timer = Timer::calibrate(Duration::from_millis(20));
    let mut out = Estimate::default();
    for (key, samples) in a.samples.iter().enumerate() {
        let (op, class) = (CallOp::ALL[key / CLASSES], (key % CLASSES) as u32);
        let counts = a.classes[op as usize][class as usize];
        if counts.calls == 0 || class == 0 || samples.is_empty() {
            continue;
        }
        // Fewer calls for large classes: at most BYTES_PER_REP per repetition.
        let mut chosen: Vec<Sampled> = Vec::new();
        let mut bytes = 0;
        for s in samples {
            if !chosen.is_empty() && bytes + s.n > BYTES_PER_REP {
                break;
            }
            bytes += s.n;
            chosen.push(*s);
        }
        debug_assert!(chosen.iter().all(|s| size_class(s.n) == class));
        let Some(ratio) = measure(&timer, &libc, &auto, op, &chosen) else {
            continue;
        };
        let libc_cycles = counts.cycles as f64 * ratio;
        out.traced_cycles += counts.cycles;
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
