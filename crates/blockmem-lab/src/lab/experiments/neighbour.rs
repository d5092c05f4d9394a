//! `neighbour`: what a small copy or set costs another core that writes the next cache
//! line (seed 004's multiprocessor effect at the scale of one call: a copy takes lines
//! away from the processors that use them).
//!
//! A thread on a second CPU increments a counter in a line again and again; on the
//! first CPU the method under test copies or sets `n` bytes that end 8 bytes before
//! that line (for copies, also the other way round: the source ends there), call after
//! call, until the neighbour has done its increments. Per op one more cell takes 1-15
//! bytes, a new size each call from a fixed sequence, ending at the same place: what a
//! program's varying small copies meet, where one size in a loop lets a ladder of size
//! tests predict every branch. Every byte
//! of a call lies in the line before the counter's, so a call that touches only the
//! lines its bytes lie in never takes the counter's line from the neighbour. A masked
//! vector access whose window reaches past the bytes does: a masked-out byte is neither
//! read nor written, but the access still takes its line (a load shares it). glibc's
//! masked `memset` stores a vector from the destination. blockmem's doors (the Rust API,
//! `auto` here, and the C entries) share one set of small-size blocks: sets place their
//! masked window in the destination's lines, and copies of 1-15 bytes in a process
//! that has had a second thread (this one) place a 16-byte window per side in the
//! bytes' lines; only a single-threaded process takes the masked window from the first
//! byte, which can share the next line (`docs/results/xeon-clx-2vcpu/neighbour`).
//! Per cell the record's samples are the caller's time per call; `neighbour_ns` is the
//! neighbour's time per increment in the same sample, `alone_ns` its time with the
//! caller idle, and `ratio_neighbour_libc_over_auto` the paired median of the
//! neighbour's time beside libc over its time beside auto (> 1: auto disturbs it
//! less). Verification: after every sample each byte the calls covered must hold what
//! the last call to cover it wrote, the rest of the two lines must be as they were,
//! and the counter must hold exactly the increments made (a store that wrote a
//! masked-out byte would lose some).
//!
//! Needs two CPUs in the process's affinity mask; with one it fails with a message
//! that says so (in the default set it is then skipped, with a warning).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Instant;

use blockmem::kernel::Op;
use serde_json::json;

use super::{distinct, records_of, Ctx};
use crate::lab::cpus::{allowed_cpus, pin, restore};
use crate::lab::mem::Buffer;
use crate::lab::method::{Entry, Method};
use crate::lab::report::Table;
use crate::lab::runner::{Record, SET_BYTE};
use crate::lab::stats::{paired_median_ratio, paired_ratio_ci, Summary};

/// Name in JSON and on the command line.
pub const NAME: &str = "neighbour";

/// Bytes per call. Each call's bytes end 8 bytes before the neighbour's line, so a
/// 64-byte window from the destination covers the counter, and a 16-byte one from a
/// call of 4 bytes reaches into the neighbour's line.
pub const SIZES: [usize; 4] = [4, 8, 24, 40];

/// Where every call's bytes end: 8 bytes before the neighbour's line.
const END: usize = 56;

/// The mixed cells' largest size: their calls take 1..=`MIXED_MAX` bytes, a new size
/// each call, as a program's varying small copies do (a ladder of size tests then
/// mispredicts where one size in a loop never does).
pub const MIXED_MAX: usize = 15;

/// Length of the mixed cells' size sequence (a power of two), fixed by its seed.
const MIXED_LEN: usize = 1 << 14;

/// Increments per sample (about 0.3 ms alone at 1.3 ns each).
const INCREMENTS: u64 = 200_000;

/// Offset of the counter in the block: the second line, 8 bytes in.
const COUNTER: usize = 64 + 8;

/// Neighbour phases.
const IDLE: u8 = 0;
const GO: u8 = 1;
const DONE: u8 = 2;
const EXIT: u8 = 3;

/// The shared state: the neighbour's phase and its last time per increment (f64 bits).
struct Shared {
    phase: AtomicU8,
    ns: AtomicU64,
    /// The neighbour's pinning: 0 not yet, 1 done, 2 refused.
    pinned: AtomicU8,
}

/// The neighbour: on GO, `INCREMENTS` read-modify-writes of the counter at `counter`,
/// timed; then DONE. Returns on EXIT.
fn neighbour(shared: &Shared, counter: usize, cpu: usize) {
    let ok = pin(cpu).is_some();
    shared
        .pinned
        .store(if ok { 1 } else { 2 }, Ordering::Release);
    let p = counter as *mut u64;
    loop {
        match shared.phase.load(Ordering::Acquire) {
            GO => {
                let t = Instant::now();
                for _ in 0..INCREMENTS {
                    // SAFETY: `p` is the counter, inside a buffer the experiment keeps
                    // mapped until this thread has seen EXIT; only this thread writes
                    // it while the caller runs.
                    unsafe { p.write_volatile(p.read_volatile() + 1) };
                }
                let ns = t.elapsed().as_secs_f64() * 1e9 / INCREMENTS as f64;
                shared.ns.store(ns.to_bits(), Ordering::Relaxed);
                shared.phase.store(DONE, Ordering::Release);
            }
            EXIT => return,
            _ => std::hint::spin_loop(),
        }
    }
}

/// One cell: an op, a size (the largest, for a mixed cell), whether the size changes
/// every call, and which of the call's ranges lies before the neighbour's line (the
/// destination, or for a copy the source: a read that shares the line rather than
/// taking it).
struct Job {
    op: Op,
    n: usize,
    mixed: bool,
    src_side: bool,
}

/// The calls of one sample: `dst` and `src` as passed, or for a mixed cell the end of
/// the range before the neighbour's line (each call's bytes end there) and the start
/// of the other range, with the sizes to take in turn.
#[derive(Clone, Copy)]
struct Calls<'a> {
    dst: *mut u8,
    src: *const u8,
    n: usize,
    mixed: Option<&'a [u8]>,
    src_side: bool,
}

/// One sample: starts the neighbour and makes `calls` through `entry` until it is
/// done. Returns (the caller's ns per call or NaN when idle, the neighbour's ns per
/// increment, the number of calls).
///
/// # Safety
/// The ranges of every call `calls` describes are valid (see [`Calls`]).
unsafe fn sample(shared: &Shared, entry: Option<Entry>, calls: Calls<'_>) -> (f64, f64, u64) {
    shared.phase.store(GO, Ordering::Release);
    let t = Instant::now();
    let mut count = 0u64;
    let Calls {
        dst, src, n, mixed, ..
    } = calls;
    // SAFETY (each call): forwarded contract.
    match (entry, mixed) {
        (Some(e), None) => {
            while shared.phase.load(Ordering::Acquire) != DONE {
                unsafe { e.call(dst, src, SET_BYTE, n) };
                count += 1;
            }
        }
        (Some(e), Some(seq)) => {
            while shared.phase.load(Ordering::Acquire) != DONE {
                let k = usize::from(seq[count as usize & (seq.len() - 1)]);
                let (d, s) = if calls.src_side {
                    (dst, src.wrapping_sub(k))
                } else {
                    (dst.wrapping_sub(k), src)
                };
                unsafe { e.call(d, s, SET_BYTE, k) };
                count += 1;
            }
        }
        (None, _) => {
            while shared.phase.load(Ordering::Acquire) != DONE {
                std::hint::spin_loop();
            }
        }
    }
    let caller = t.elapsed().as_secs_f64() * 1e9;
    shared.phase.store(IDLE, Ordering::Release);
    let ns = f64::from_bits(shared.ns.load(Ordering::Relaxed));
    let per_call = if entry.is_some() {
        caller / count.max(1) as f64
    } else {
        f64::NAN
    };
    (per_call, ns, count)
}

/// The mixed cells' sizes, 1..=[`MIXED_MAX`], from a fixed seed.
fn mixed_sizes() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(0x5112e5);
    (0..MIXED_LEN)
        .map(|_| rng.u8(1..=MIXED_MAX as u8))
        .collect()
}

/// Runs it.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        anyhow::bail!(
            "neighbour needs two CPUs and this process may run on {} (see `taskset -p {}`); run it where two are allowed",
            cpus.len(),
            std::process::id()
        );
    }
    let methods: Vec<Method> = match ctx.methods {
        Some(m) => m.to_vec(),
        None => vec![Method::libc().map_err(anyhow::Error::msg)?, Method::auto()],
    };
    let reps = ctx.reps.unwrap_or(if ctx.quick { 11 } else { 21 }).max(1);
    let jobs: Vec<Job> = [(Op::Copy, false), (Op::Copy, true), (Op::Set, false)]
        .into_iter()
        .flat_map(|(op, src_side)| {
            let fixed = SIZES.map(|n| (n, false));
            fixed
                .into_iter()
                .chain([(MIXED_MAX, true)])
                .map(move |(n, mixed)| Job {
                    op,
                    n,
                    mixed,
                    src_side,
                })
        })
        .collect();
    let seq = mixed_sizes();
    // Two lines: the calls' (0) and the neighbour's (1), on a page of their own.
    let mut block = Buffer::new(4096);
    let mut src = Buffer::new(4096);
    src.fill_random(&mut fastrand::Rng::with_seed(0x4e1));
    // Where a copy whose source lies before the neighbour's line writes.
    let mut out_buf = Buffer::new(4096);
    let out_ptr = out_buf.as_mut_ptr();
    let base = block.as_mut_ptr();
    let shared = Shared {
        phase: AtomicU8::new(IDLE),
        ns: AtomicU64::new(0),
        pinned: AtomicU8::new(0),
    };
    let Some(old) = pin(cpus[0]) else {
        anyhow::bail!(
            "neighbour: cannot pin the caller to CPU {}: {}",
            cpus[0],
            std::io::Error::last_os_error()
        );
    };
    let pb = ctx.bar(jobs.len() * reps, NAME, "samples");
    let mut out = Vec::new();
    let pinned = std::thread::scope(|s| {
        let counter = base as usize + COUNTER;
        let shared = &shared;
        let cpu = cpus[1];
        s.spawn(move || neighbour(shared, counter, cpu));
        let pinned = loop {
            match shared.pinned.load(Ordering::Acquire) {
                0 => std::hint::spin_loop(),
                p => break p == 1,
            }
        };
        for job in jobs.iter().filter(|_| pinned) {
            let entries: Vec<Option<Entry>> = methods.iter().map(|m| m.entry(job.op)).collect();
            let m = methods.len();
            let off = END - job.n;
            // Per method: caller ns per call, neighbour ns per increment; alone.
            let mut caller = vec![Vec::new(); m];
            let mut neigh = vec![Vec::new(); m];
            let mut alone = Vec::new();
            let mut verified = vec![true; m];
            let mut count = 0u64;
            // SAFETY: `base` is a page of ours; the counter lies in it. A source before
            // the neighbour's line holds the source pattern from the start.
            unsafe {
                std::ptr::write_bytes(base, 0x5a, 128);
                (base.add(COUNTER) as *mut u64).write_volatile(0);
                if job.src_side {
                    std::ptr::copy_nonoverlapping(src.as_ptr(), base.add(off), job.n);
                }
            }
            // `base + off .. + n` lies in the block's first line; `src` and `out_buf`
            // hold 4096 bytes each. A mixed cell passes the end of the range before the
            // neighbour's line (its calls start `k` bytes before it).
            let near = if job.mixed { END } else { off };
            let (d, from) = if job.src_side {
                (out_ptr, base.wrapping_add(near) as *const u8)
            } else {
                (base.wrapping_add(near), src.as_ptr())
            };
            let calls = Calls {
                dst: d,
                src: from,
                n: job.n,
                mixed: job.mixed.then_some(&seq[..]),
                src_side: job.src_side,
            };
            for _ in 0..reps {
                // SAFETY: the caller idles.
                let (_, a, _) = unsafe { sample(shared, None, calls) };
                alone.push(a);
                count += INCREMENTS;
                for j in ctx.runner.method_order(m) {
                    let Some(e) = entries[j] else { continue };
                    // SAFETY: as above.
                    let (c, ns, made) = unsafe { sample(shared, Some(e), calls) };
                    count += INCREMENTS;
                    caller[j].push(c);
                    neigh[j].push(ns);
                    let (want_block, want_out) = expected(job, &src, &seq, made);
                    verified[j] &= check(&block, &want_block, count)
                        && (!job.src_side || out_buf.as_slice()[..job.n] == want_out[..]);
                    // SAFETY: as above; the neighbour is idle.
                    unsafe {
                        if job.src_side {
                            std::ptr::write_bytes(out_ptr, 0, job.n);
                        } else {
                            std::ptr::write_bytes(base.add(off), 0x5a, job.n);
                        }
                    }
                }
                pb.inc(1);
            }
            let libc_at = methods.iter().position(|m| m.name() == "libc");
            let auto_at = methods.iter().position(|m| m.name() == "auto");
            let (ratio, ci) = match (libc_at, auto_at) {
                (Some(l), Some(a)) => (
                    paired_median_ratio(&neigh[l], &neigh[a]),
                    paired_ratio_ci(&neigh[l], &neigh[a], 0.95, 1000, 11),
                ),
                _ => (None, None),
            };
            for (j, method) in methods.iter().enumerate() {
                if entries[j].is_none() {
                    continue;
                }
                out.push(record(
                    ctx,
                    method,
                    job,
                    off,
                    &caller[j],
                    &neigh[j],
                    &alone,
                    verified[j],
                    ratio,
                    ci,
                ));
            }
        }
        shared.phase.store(EXIT, Ordering::Release);
        pinned
    });
    pb.finish_and_clear();
    restore(&old);
    if !pinned {
        anyhow::bail!(
            "neighbour: cannot pin its second thread to CPU {}: the two would share a CPU",
            cpus[1]
        );
    }
    Ok(out)
}

/// What a sample of `made` calls leaves: the block's two lines (the counter's bytes
/// aside) and the first `job.n` bytes of the output buffer of a copy whose source lies
/// before the line. Each byte holds what the last call that covered it wrote (calls of
/// `k` bytes cover the `k` before [`END`]), else its value before the sample: 0x5a in
/// the block, 0 in the output, the source pattern where the source lies in the block.
fn expected(job: &Job, src: &Buffer, seq: &[u8], made: u64) -> ([u8; 128], Vec<u8>) {
    let pattern = src.as_slice();
    let mut block = [0x5au8; 128];
    let mut out = vec![0u8; job.n];
    if job.src_side {
        block[END - job.n..END].copy_from_slice(&pattern[..job.n]);
    }
    // The size of call `i`; then, latest call first, the bytes each settles: `done`
    // counts the bytes before END (or at the output's start) later calls covered.
    let size = |i: u64| {
        if job.mixed {
            usize::from(seq[i as usize & (seq.len() - 1)])
        } else {
            job.n
        }
    };
    let (mut done, mut i) = (0, made);
    while done < job.n && i > 0 {
        i -= 1;
        let k = size(i).min(job.n);
        for e in done + 1..=k {
            match (job.op, job.src_side) {
                (Op::Set | Op::Zero, _) => block[END - e] = SET_BYTE,
                (_, false) => block[END - e] = pattern[k - e],
                (_, true) => out[e - 1] = block[END - k + e - 1],
            }
        }
        done = done.max(k);
    }
    (block, out)
}

/// The block after a sample: as `want` (see [`expected`]), and the counter at `count`.
fn check(block: &Buffer, want: &[u8; 128], count: u64) -> bool {
    let b = block.as_slice();
    let lines_ok = (0..128)
        .filter(|i| !(COUNTER..COUNTER + 8).contains(i))
        .all(|i| b[i] == want[i]);
    let counter = u64::from_ne_bytes(b[COUNTER..COUNTER + 8].try_into().unwrap_or([0; 8]));
    lines_ok && counter == count
}

#[allow(clippy::too_many_arguments)]
fn record(
    ctx: &mut Ctx<'_>,
    m: &Method,
    job: &Job,
    off: usize,
    caller: &[f64],
    neigh: &[f64],
    alone: &[f64],
    verified: bool,
    ratio: Option<f64>,
    ci: Option<(f64, f64)>,
) -> Record {
    if !verified {
        ctx.runner
            .warnings
            .push(crate::lab::warn::Warning::VerificationFailed {
                cell: format!("neighbour {} {} B {}", job.op.name(), job.n, m.name()),
            });
    }
    let s = Summary::of(caller);
    let mut extras = serde_json::Map::new();
    let side = if job.src_side {
        "src_offset"
    } else {
        "dst_offset"
    };
    extras.insert(side.into(), json!(off));
    if job.mixed {
        extras.insert("mixed_sizes".into(), json!([1, job.n]));
    }
    extras.insert(
        "neighbour_ns".into(),
        json!(crate::lab::state::median(neigh)),
    );
    extras.insert("neighbour_samples_ns".into(), json!(neigh));
    extras.insert("alone_ns".into(), json!(crate::lab::state::median(alone)));
    if let Some(r) = ratio {
        extras.insert("ratio_neighbour_libc_over_auto".into(), json!(r));
    }
    if let Some((lo, hi)) = ci {
        extras.insert("ratio_neighbour_ci95".into(), json!([lo, hi]));
    }
    Record {
        experiment: NAME.into(),
        method: m.name().into(),
        op: job.op.name().into(),
        size: job.n,
        src: if job.op == Op::Set {
            "none".into()
        } else {
            "hot".into()
        },
        dst: "hot".into(),
        reuse: "none".into(),
        // A mixed cell's sizes are uniform over 1..=n: (n + 1) / 2 bytes a call.
        gbps: s.gbps(if job.mixed { job.n.div_ceil(2) } else { job.n }),
        summary: s,
        verified,
        samples_ns: caller.to_vec(),
        extras,
    }
}

/// One table: per op and size, the neighbour's ns per increment alone and beside each
/// method, the ratio libc/auto of the latter, and the caller's ns per call.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    if recs.is_empty() {
        return Vec::new();
    }
    let mut header = vec![
        "op, bytes (the range before the line, its offset in its line)".to_string(),
        "alone".to_string(),
    ];
    header.extend(methods.iter().map(|m| format!("beside {m}")));
    header.push("libc / auto".into());
    header.push("caller ns per call".into());
    let mut t = Table::new(
        "neighbour: another core's ns per increment of a counter in the next line, while this core copies or sets bytes just before that line",
        "lower = less disturbed; libc / auto > 1: auto takes (or shares) the neighbour's line less often; [95% interval]; the caller's own time per call in the last column",
        header,
    );
    // (side, offset): which range lies before the neighbour's line.
    let side = |r: &Record| match r.extra_f64("src_offset") {
        Some(o) => ("src", o as usize),
        None => ("dst", r.extra_f64("dst_offset").unwrap_or(0.0) as usize),
    };
    for (op, n, (at, off)) in distinct(&recs, |r| (r.op.clone(), r.size, side(r))) {
        let cell: Vec<&Record> = recs
            .iter()
            .filter(|r| r.op == op && r.size == n && side(r) == (at, off))
            .collect();
        let Some(first) = cell.first() else { continue };
        let label = if first.extras.contains_key("mixed_sizes") {
            format!("{op} 1-{n} B, a new size each call ({at} ends at {END})")
        } else {
            format!("{op} {n} B ({at} at {off})")
        };
        let mut row = vec![
            label,
            format!("{:.2}", first.extra_f64("alone_ns").unwrap_or(f64::NAN)),
        ];
        for m in &methods {
            row.push(match cell.iter().find(|r| &r.method == m) {
                Some(r) => format!("{:.2}", r.extra_f64("neighbour_ns").unwrap_or(f64::NAN)),
                None => "–".into(),
            });
        }
        let auto = cell.iter().find(|r| r.method == "auto");
        row.push(
            auto.and_then(|r| {
                super::doors::ratio_with_ci(
                    r,
                    "ratio_neighbour_libc_over_auto",
                    "ratio_neighbour_ci95",
                )
            })
            .map_or("–".into(), super::doors::fmt_ratio),
        );
        row.push(
            methods
                .iter()
                .map(|m| match cell.iter().find(|r| &r.method == m) {
                    Some(r) => format!("{m} {:.1}", r.summary.median),
                    None => format!("{m} –"),
                })
                .collect::<Vec<_>>()
                .join(", "),
        );
        t.rows.push(row);
    }
    vec![t]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `made` calls leave, by applying every call in order to a model of the
    /// block and the output buffer, as the sample loop makes them.
    fn forward(job: &Job, pattern: &[u8], seq: &[u8], made: u64) -> ([u8; 128], Vec<u8>) {
        let mut block = [0x5au8; 128];
        let mut out = vec![0u8; job.n];
        if job.src_side {
            block[END - job.n..END].copy_from_slice(&pattern[..job.n]);
        }
        for i in 0..made {
            let k = if job.mixed {
                usize::from(seq[i as usize & (seq.len() - 1)])
            } else {
                job.n
            };
            match (job.op, job.src_side) {
                (Op::Set | Op::Zero, _) => block[END - k..END].fill(SET_BYTE),
                (_, false) => block[END - k..END].copy_from_slice(&pattern[..k]),
                (_, true) => out[..k].copy_from_slice(&block[END - k..END]),
            }
        }
        (block, out)
    }

    #[test]
    fn the_replay_leaves_what_the_calls_in_order_leave() {
        let mut src = Buffer::new(4096);
        src.fill_random(&mut fastrand::Rng::with_seed(7));
        let seq = mixed_sizes();
        assert!(seq.iter().all(|&k| (1..=MIXED_MAX as u8).contains(&k)));
        for (op, src_side) in [(Op::Copy, false), (Op::Copy, true), (Op::Set, false)] {
            let fixed = SIZES.map(|n| (n, false));
            for (n, mixed) in fixed.into_iter().chain([(MIXED_MAX, true)]) {
                let job = Job {
                    op,
                    n,
                    mixed,
                    src_side,
                };
                for made in [0, 1, 2, 3, 17, 1000, MIXED_LEN as u64 + 5] {
                    let want = forward(&job, src.as_slice(), &seq, made);
                    let got = expected(&job, &src, &seq, made);
                    assert_eq!(
                        got.0, want.0,
                        "{op:?} {n} mixed {mixed} src {src_side} {made}"
                    );
                    assert_eq!(
                        got.1, want.1,
                        "{op:?} {n} mixed {mixed} src {src_side} {made}"
                    );
                }
            }
        }
    }
}
