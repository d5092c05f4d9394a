//! `threads`: block copies and clears on several cores at once (seed 004: block
//! operations share the memory system with the other processors, take their cache
//! lines away, and hand data from one core to another). Three parts, all on pinned
//! threads, one per CPU of the process's affinity mask:
//!
//! 1. `scaling`: N = 1..=cpus threads, each copying (then, separately, zeroing) its own
//!    block again and again in one barrier-started window, at three sizes: a thread's
//!    share of the effective LLC halved (stays cached), about the effective LLC, and
//!    four times it (memory bound). Aggregate GB/s = all threads' bytes over the
//!    longest thread's time; per-thread GB/s beside it. Whether temporal or streaming
//!    stores win can change with N: streaming saves the read-for-ownership traffic
//!    that N copiers share.
//! 2. `victim`: one thread chases pointers through a warm working set (¾ of the L2, and
//!    the LLC's share per CPU) while the other CPUs copy blocks far past the LLC with
//!    each method; its ns per line beside each method against alone, paired per
//!    repetition. Streaming copiers should evict less of it.
//! 3. `handoff`: a producer on one CPU copies a block into a destination no cache
//!    holds (libc, auto, temporal and streaming kernels, `rep_movsb`), a consumer on
//!    another then reads and sums all of it: temporal stores leave the lines modified
//!    in the producer's caches (the consumer's reads snoop them there), streaming
//!    stores send them to memory (`docs/results/xeon-clx-2vcpu/threads`).
//!
//! Every sample verifies: the copiers' and producers' destinations are compared with
//! their sources (or checked zero) after every window, with sampled lines of them
//! overwritten before it so a method that stores nothing fails; the consumer's sum must
//! match the source's. With one CPU allowed the experiment is skipped with a warning.
//!
//! [`run_pinned`] (N pinned threads looping a method over their own blocks for a
//! window, optionally beside a lead thread) is what other modules call to measure a
//! contended row; [`run_with`] takes methods to add to every part's list.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use blockmem::kernel::Op;
use blockmem::Hint;
use serde_json::json;

use super::{distinct, fmt_size, records_of, Ctx};
use crate::lab::cpus::{allowed_cpus, pin, topology_line};
use crate::lab::mem::Buffer;
use crate::lab::method::{Entry, Method};
use crate::lab::report::Table;
use crate::lab::runner::{Record, SET_BYTE};
use crate::lab::state::{flush, median, read_lines, LINE};
use crate::lab::stats::{paired_median_ratio, paired_ratio_ci, Summary};
use crate::lab::warn::Warning;

/// Name in JSON and on the command line.
pub const NAME: &str = "threads";

/// The parts, as the records' `part` field names them.
pub const SCALING: &str = "scaling";
/// See [`SCALING`].
pub const VICTIM: &str = "victim";
/// See [`SCALING`].
pub const HANDOFF: &str = "handoff";

/// Largest block of the memory-bound size per thread (`--quick`, full run): the
/// window must cover several calls, and every CPU holds a source and a destination.
const FAR_CAP: [usize; 2] = [32 << 20, 128 << 20];

/// Most memory all threads' blocks of one size take together.
const ALL_BLOCKS_CAP: usize = 2 << 30;

/// Timed window of one sample (`--quick`, full run).
const WINDOW_MS: [u64; 2] = [15, 40];

/// Repetitions (`--quick`, full run) unless `--reps`.
const REPS: [usize; 2] = [5, 11];

/// Hand-off rounds per repetition count: single copies of at most an LLC share are
/// short, so they get more repetitions than a window.
const HANDOFF_REPS: [usize; 2] = [11, 31];

/// Bootstrap replicates of every interval here.
const RESAMPLES: usize = 1000;

/// One looping thread: the CPU it is pinned to, the method's entry and its own block.
#[derive(Clone, Copy)]
pub struct LoopJob {
    /// The CPU.
    pub cpu: usize,
    /// The method's entry for the op.
    pub entry: Entry,
    /// The block's destination.
    pub dst: *mut u8,
    /// The block's source (ignored by set and zero).
    pub src: *const u8,
    /// The byte a set stores (0 for a zero: libc zeroes with `memset`).
    pub byte: u8,
    /// Bytes per call.
    pub n: usize,
}

// SAFETY: a job is a description of a block its thread alone touches while
// `run_pinned` runs (its contract); the pointers are not dereferenced elsewhere then.
unsafe impl Send for LoopJob {}
// SAFETY: as above; shared references only read the description.
unsafe impl Sync for LoopJob {}

/// What one looping thread did in its window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadRun {
    /// Its CPU.
    pub cpu: usize,
    /// Whole calls made.
    pub calls: u64,
    /// Bytes those calls covered.
    pub bytes: u64,
    /// Time from the common start to the end of its last call (ns).
    pub ns: f64,
}

impl ThreadRun {
    /// Its GB/s.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / self.ns.max(1.0)
    }
}

/// All threads' bytes over the longest thread's time, GB/s.
pub fn aggregate_gbps(runs: &[ThreadRun]) -> f64 {
    let bytes: u64 = runs.iter().map(|r| r.bytes).sum();
    let ns = runs.iter().map(|r| r.ns).fold(0.0, f64::max);
    bytes as f64 / ns.max(1.0)
}

/// A thread that runs beside the loopers: its CPU, and what it does once all have
/// started (its result comes back; the loopers stop when it returns).
pub type Lead<'a, R> = (usize, &'a (dyn Fn() -> R + Sync));

/// Runs every job on its own thread pinned to its CPU. All start at one barrier; each
/// calls its entry on its block again and again, counting whole calls, until `window`
/// has passed on its own clock, or, with a `lead`, until the lead's function (run on
/// its own pinned thread, started at the same barrier) has returned. Returns each
/// job's run, in job order, and the lead's result.
///
/// # Safety
/// Every job's `dst` valid for `n` writes and `src` for `n` reads (copies), no job's
/// block overlapping another's or anything the lead touches, for the whole call.
pub unsafe fn run_pinned<R: Send>(
    jobs: &[LoopJob],
    window: Duration,
    lead: Option<Lead<'_, R>>,
) -> anyhow::Result<(Vec<ThreadRun>, Option<R>)> {
    let barrier = Barrier::new(jobs.len() + usize::from(lead.is_some()));
    let (stop, failed) = (AtomicBool::new(false), AtomicBool::new(false));
    let has_lead = lead.is_some();
    let lead_cpu = lead.as_ref().map(|l| l.0);
    let window_ns = window.as_nanos() as f64;
    let (runs, out) = std::thread::scope(|s| {
        let (barrier, stop, failed) = (&barrier, &stop, &failed);
        let start = |cpu: usize| {
            if pin(cpu).is_none() {
                failed.store(true, Ordering::Relaxed);
            }
            barrier.wait();
            !failed.load(Ordering::Relaxed)
        };
        let loopers: Vec<_> = jobs
            .iter()
            .map(|job| {
                s.spawn(move || {
                    let mut run = ThreadRun {
                        cpu: job.cpu,
                        ..ThreadRun::default()
                    };
                    if !start(job.cpu) {
                        return run;
                    }
                    let t0 = Instant::now();
                    loop {
                        // SAFETY: the caller's contract.
                        unsafe { job.entry.call(job.dst, job.src, job.byte, job.n) };
                        run.calls += 1;
                        run.ns = t0.elapsed().as_nanos() as f64;
                        let done = if has_lead {
                            stop.load(Ordering::Acquire)
                        } else {
                            run.ns >= window_ns
                        };
                        if done {
                            break;
                        }
                    }
                    run.bytes = run.calls * job.n as u64;
                    run
                })
            })
            .collect();
        let lead = lead.map(|(cpu, f)| {
            s.spawn(move || {
                let r = start(cpu).then(f);
                stop.store(true, Ordering::Release);
                r
            })
        });
        let runs: Vec<ThreadRun> = loopers
            .into_iter()
            .map(|h| h.join().expect("a looping thread panicked"))
            .collect();
        let out = lead.and_then(|h| h.join().expect("the lead thread panicked"));
        (runs, out)
    });
    if failed.load(Ordering::Relaxed) {
        anyhow::bail!(
            "threads: sched_setaffinity refused to pin a thread to one of the CPUs {:?}; is another process changing this one's affinity mask?",
            jobs.iter().map(|j| j.cpu).chain(lead_cpu).collect::<Vec<_>>()
        );
    }
    Ok((runs, out))
}

/// A thread's own block: a random source and a destination.
struct Block {
    src: Buffer,
    dst: Buffer,
}

impl Block {
    fn new(n: usize, seed: u64) -> Block {
        let mut src = Buffer::new(n);
        src.fill_random(&mut fastrand::Rng::with_seed(seed));
        Block {
            src,
            dst: Buffer::new(n),
        }
    }

    /// A job over this block; a zero's byte is 0 (libc's zero is `memset`).
    fn job(&mut self, cpu: usize, op: Op, entry: Entry, n: usize) -> LoopJob {
        LoopJob {
            cpu,
            entry,
            dst: self.dst.as_mut_ptr(),
            src: self.src.as_ptr(),
            byte: if op == Op::Zero { 0 } else { SET_BYTE },
            n,
        }
    }

    /// Overwrites the first and last byte and one byte in every 4 KiB + 64 (a line of
    /// each page in turn) with what `op` would not leave there: a method that stores
    /// nothing then fails [`Block::verify`].
    fn poison(&mut self, op: Op, n: usize) {
        let src = self.src.as_slice();
        let d = self.dst.as_mut_slice();
        for i in (0..n).step_by(4096 + LINE).chain([n - 1]) {
            d[i] = match op {
                Op::Copy | Op::Move => !src[i],
                Op::Set => !SET_BYTE,
                Op::Zero => 0xA5,
            };
        }
    }

    /// The destination holds what `op` should have left in its `n` bytes.
    fn verify(&self, op: Op, n: usize) -> bool {
        let d = &self.dst.as_slice()[..n];
        match op {
            Op::Copy | Op::Move => d == &self.src.as_slice()[..n],
            Op::Set => d.iter().all(|&b| b == SET_BYTE),
            Op::Zero => d.iter().all(|&b| b == 0),
        }
    }
}

/// The methods of a part: the user's (those implementing `op`), else libc, auto, the
/// widest temporal and streaming kernels and `rep` (the kernels this CPU has); then
/// `extra`, whatever the caller adds (an `auto` variant, say).
fn methods_for(ctx: &Ctx<'_>, op: Op, rep: &str, extra: &[Method]) -> Vec<Method> {
    let mut v: Vec<Method> = match ctx.methods {
        Some(m) => m.to_vec(),
        None => {
            let mut v: Vec<Method> = Method::libc().into_iter().collect();
            v.push(Method::auto());
            let temporal = Method::kernel("avx512").or_else(|| Method::kernel("avx2"));
            let streaming = Method::kernel("avx512_nt").or_else(|| Method::kernel("avx2_nt"));
            v.extend(temporal.into_iter().chain(streaming));
            v.extend(Method::kernel(rep));
            v
        }
    };
    v.extend(extra.iter().cloned());
    v.retain(|m| m.supports(op));
    v
}

/// What every part shares: the CPUs, the options, the sizes derived from the hierarchy.
struct Plan {
    cpus: Vec<usize>,
    reps: usize,
    handoff_reps: usize,
    window: Duration,
    l2: usize,
    llc: usize,
    topology: String,
}

impl Plan {
    fn new(ctx: &Ctx<'_>, cpus: Vec<usize>) -> Plan {
        let q = usize::from(!ctx.quick);
        let h = &ctx.runner.states.hier;
        Plan {
            reps: ctx.reps.unwrap_or(REPS[q]).max(1),
            handoff_reps: ctx.reps.unwrap_or(HANDOFF_REPS[q]).max(1),
            window: Duration::from_millis(WINDOW_MS[q]),
            l2: h.l2,
            llc: h.llc_effective,
            topology: topology_line(&cpus, h.llc_effective),
            cpus,
        }
    }

    /// Largest block per thread: [`FAR_CAP`], and [`ALL_BLOCKS_CAP`] over all CPUs.
    fn cap(&self, quick: bool) -> usize {
        FAR_CAP[usize::from(!quick)].min(ALL_BLOCKS_CAP / (2 * self.cpus.len()))
    }

    /// A CPU's share of the effective LLC, whole pages, at most a quarter of the cap
    /// (a measurement disturbed by other tenants can find a huge LLC).
    fn llc_share(&self, quick: bool) -> usize {
        ((self.llc / self.cpus.len()).min(self.cap(quick) / 4) / 4096 * 4096).max(16 << 10)
    }

    /// The scaling sizes, labelled: the user's, else a thread's LLC share halved, the
    /// effective LLC, and four times it, each capped ([`Plan::cap`]), the last
    /// labelled with the multiple of the LLC it reaches.
    fn scaling_sizes(&self, ctx: &Ctx<'_>) -> Vec<(String, usize)> {
        if let Some(s) = ctx.sizes {
            return s.iter().map(|&n| ("given".to_string(), n)).collect();
        }
        let cap = self.cap(ctx.quick);
        let size = |n: usize| (n.min(cap) / 4096 * 4096).max(16 << 10);
        let far = size(4 * self.llc);
        let mut v = vec![
            (
                "LLC share / 2".to_string(),
                size(self.llc_share(ctx.quick) / 2),
            ),
            ("≈ LLC".to_string(), size(self.llc)),
            (
                format!("{:.1}× LLC", far as f64 / self.llc.max(1) as f64),
                far,
            ),
        ];
        v.dedup_by_key(|s| s.1);
        v
    }

    /// The hand-off sizes: the user's, else 64 KiB, the L2 and a CPU's LLC share.
    fn handoff_sizes(&self, ctx: &Ctx<'_>) -> Vec<usize> {
        match ctx.sizes {
            Some(s) => s.to_vec(),
            None => {
                let mut v = vec![64 << 10, self.l2, self.llc_share(ctx.quick)];
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }

    /// The fields every record of the experiment carries.
    fn extras(
        &self,
        part: &str,
        threads: usize,
        role: &str,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut e = serde_json::Map::new();
        e.insert("part".into(), json!(part));
        e.insert("threads".into(), json!(threads));
        e.insert("role".into(), json!(role));
        e.insert(
            "cpus".into(),
            json!(self.cpus[..threads.min(self.cpus.len())]),
        );
        e.insert("topology".into(), json!(self.topology));
        e
    }
}

/// Runs it with the default methods.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    // Where the table has contended rows, `auto` with the contention input off beside
    // it: the contended choice against the alone choice as threads are added.
    let alone: Vec<Method> = blockmem::dispatch::table()
        .has_contended_rows()
        .then(Method::auto_alone)
        .into_iter()
        .collect();
    run_with(ctx, &alone)
}

/// Runs it, every part's methods followed by `extra` (those implementing its op).
pub fn run_with(ctx: &mut Ctx<'_>, extra: &[Method]) -> anyhow::Result<Vec<Record>> {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        let reason = format!(
            "threads needs two CPUs and this process may run on {} (see `taskset -p {}`); run it where two are allowed",
            cpus.len(),
            std::process::id()
        );
        eprintln!("blockmem lab: {NAME} skipped: {reason}");
        ctx.runner.warnings.push(Warning::ExperimentSkipped {
            experiment: NAME.into(),
            reason,
        });
        return Ok(Vec::new());
    }
    let plan = Plan::new(ctx, cpus);
    eprintln!("blockmem lab: {NAME}: {}", plan.topology);
    let mut out = scaling(ctx, &plan, extra)?;
    out.extend(victim(ctx, &plan, extra)?);
    out.extend(handoff(ctx, &plan, extra)?);
    Ok(out)
}

/// Per repetition of one scaling cell: aggregate ns per call (the block's bytes at the
/// aggregate rate), and each thread's GB/s.
#[derive(Default)]
struct Scaled {
    agg_ns: Vec<f64>,
    per_thread: Vec<Vec<f64>>,
    verified: bool,
}

/// Part 1: every op, size and thread count, the methods interleaved per repetition.
fn scaling(ctx: &mut Ctx<'_>, plan: &Plan, extra: &[Method]) -> anyhow::Result<Vec<Record>> {
    let sizes = plan.scaling_sizes(ctx);
    let ops = [(Op::Copy, "rep_movsb"), (Op::Zero, "rep_stosb")];
    let cells: usize = ops
        .iter()
        .map(|&(op, rep)| methods_for(ctx, op, rep, extra).len())
        .sum::<usize>()
        * sizes.len()
        * plan.cpus.len()
        * plan.reps;
    let pb = ctx.bar(cells, &format!("{NAME} {SCALING}"), "windows");
    let mut out = Vec::new();
    for (label, n) in sizes.iter().map(|(l, n)| (l.as_str(), *n)) {
        let mut blocks: Vec<Block> = (0..plan.cpus.len())
            .map(|i| Block::new(n, 0x7e_0000 + i as u64))
            .collect();
        for &(op, rep) in &ops {
            let methods = methods_for(ctx, op, rep, extra);
            for threads in 1..=plan.cpus.len() {
                let mut cell: Vec<Scaled> = (0..methods.len())
                    .map(|_| Scaled {
                        per_thread: vec![Vec::new(); threads],
                        verified: true,
                        ..Scaled::default()
                    })
                    .collect();
                for _ in 0..plan.reps {
                    for j in ctx.runner.method_order(methods.len()) {
                        let entry = methods[j].entry(op).expect("methods_for keeps the op's");
                        let jobs: Vec<LoopJob> = blocks[..threads]
                            .iter_mut()
                            .zip(&plan.cpus)
                            .map(|(b, &cpu)| {
                                b.poison(op, n);
                                b.job(cpu, op, entry, n)
                            })
                            .collect();
                        // SAFETY: every job's block is its own thread's, `n` bytes each.
                        let (runs, _) = unsafe { run_pinned::<()>(&jobs, plan.window, None)? };
                        let c = &mut cell[j];
                        c.agg_ns.push(n as f64 / aggregate_gbps(&runs));
                        for (t, r) in runs.iter().enumerate() {
                            c.per_thread[t].push(r.gbps());
                        }
                        c.verified &= blocks[..threads].iter().all(|b| b.verify(op, n));
                        pb.inc(1);
                    }
                }
                for (m, c) in methods.iter().zip(&cell) {
                    out.push(scaling_record(ctx, plan, m, (op, n, label, threads), c));
                }
            }
        }
    }
    pb.finish_and_clear();
    Ok(out)
}

fn verification_warning(ctx: &mut Ctx<'_>, verified: bool, cell: String) {
    if !verified {
        ctx.runner
            .warnings
            .push(Warning::VerificationFailed { cell });
    }
}

fn scaling_record(
    ctx: &mut Ctx<'_>,
    plan: &Plan,
    m: &Method,
    (op, n, label, threads): (Op, usize, &str, usize),
    c: &Scaled,
) -> Record {
    verification_warning(
        ctx,
        c.verified,
        format!(
            "{NAME} {SCALING} {} {} ×{threads} {}",
            op.name(),
            fmt_size(n),
            m.name()
        ),
    );
    let s = Summary::of(&c.agg_ns);
    let mut extras = plan.extras(SCALING, threads, "copier");
    extras.insert("size_class".into(), json!(label));
    extras.insert("streams".into(), json!(m.streams));
    let per: Vec<serde_json::Value> = c
        .per_thread
        .iter()
        .zip(&plan.cpus)
        .map(|(g, cpu)| {
            let t = Summary::of(g);
            json!({"cpu": cpu, "min_gbps": t.min, "median_gbps": t.median, "max_gbps": t.max})
        })
        .collect();
    extras.insert("per_thread_gbps".into(), json!(per));
    extras.insert(
        "aggregate_gbps".into(),
        json!({"min": n as f64 / s.max, "median": s.gbps(n), "max": n as f64 / s.min}),
    );
    Record {
        experiment: NAME.into(),
        method: m.name().into(),
        op: op.name().into(),
        size: n,
        src: if op == Op::Copy { "loop" } else { "none" }.into(),
        dst: "loop".into(),
        reuse: "again".into(),
        gbps: s.gbps(n),
        summary: s,
        verified: c.verified,
        samples_ns: c.agg_ns.clone(),
        extras,
    }
}

/// A working set laid out for a pointer chase: every line holds the address of the
/// next in a random cycle through all of them.
struct Chase {
    buf: Buffer,
    lines: usize,
}

impl Chase {
    fn new(ws: usize, seed: u64) -> Chase {
        let mut buf = Buffer::new(ws);
        let lines = ws / LINE;
        let mut order: Vec<usize> = (0..lines).collect();
        fastrand::Rng::with_seed(seed).shuffle(&mut order);
        let base = buf.as_mut_ptr() as usize;
        let words = buf.as_mut_slice();
        for i in 0..lines {
            let (from, to) = (order[i], order[(i + 1) % lines]);
            words[from * LINE..from * LINE + 8].copy_from_slice(&(base + to * LINE).to_ne_bytes());
        }
        Chase { buf, lines }
    }

    /// Two untimed passes, then dependent loads for `window`: (ns per load over the
    /// thread's own CPU time, that CPU time over the window's). CPU time leaves out
    /// the time other tenants' threads held the CPU; the share says how much that was.
    /// Takes the buffer's address as a number so that a lead closure over it can be
    /// shared.
    ///
    /// # Safety
    /// `start` is the address of a live [`Chase`]'s buffer of `lines` lines.
    unsafe fn time(start: usize, lines: usize, window: Duration) -> (f64, f64) {
        let mut q = start as *const usize;
        let mut step = |k: usize| {
            for _ in 0..k {
                // SAFETY: every line of the buffer holds the address of another of its
                // lines (built in `new`); the caller keeps the buffer alive.
                q = unsafe { q.read_volatile() } as *const usize;
            }
        };
        step(2 * lines);
        let (t0, c0) = (Instant::now(), thread_cpu_ns());
        let mut loads = 0u64;
        while t0.elapsed() < window {
            step(1024);
            loads += 1024;
        }
        let (wall, cpu) = (t0.elapsed().as_nanos() as f64, thread_cpu_ns() - c0);
        std::hint::black_box(q);
        (cpu / loads as f64, cpu / wall)
    }
}

/// The calling thread's CPU time, ns.
fn thread_cpu_ns() -> f64 {
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant Linux knows.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
    }
}

/// Part 2, one working set: per repetition the victim alone, then beside each method's
/// copiers, in a random order. Returns per method (ns per line, copiers' GB/s,
/// verified), alone's ns per line, and the victim's CPU shares.
type VictimRuns = (Vec<(Vec<f64>, Vec<f64>, bool)>, Vec<f64>, Vec<f64>);

fn victim_cell(
    ctx: &mut Ctx<'_>,
    plan: &Plan,
    methods: &[Method],
    chase: &Chase,
    blocks: &mut [Block],
    n: usize,
    pb: &crate::lab::progress::Progress,
) -> anyhow::Result<VictimRuns> {
    let mut per: Vec<(Vec<f64>, Vec<f64>, bool)> =
        vec![(Vec::new(), Vec::new(), true); methods.len()];
    let (mut alone, mut shares) = (Vec::new(), Vec::new());
    let (at, lines, window) = (chase.buf.as_ptr() as usize, chase.lines, plan.window);
    // SAFETY: `chase` outlives every `run_pinned` below.
    let lead = move || unsafe { Chase::time(at, lines, window) };
    let victim_cpu = plan.cpus[0];
    for _ in 0..plan.reps {
        for j in ctx.runner.method_order(methods.len() + 1) {
            let Some(m) = methods.get(j) else {
                // SAFETY: no loopers; the lead reads its own buffer.
                let (_, ns) = unsafe { run_pinned(&[], plan.window, Some((victim_cpu, &lead)))? };
                let (ns, share) = ns.unwrap_or((f64::NAN, f64::NAN));
                alone.push(ns);
                shares.push(share);
                continue;
            };
            let entry = m.entry(Op::Copy).expect("methods_for keeps the op's");
            let jobs: Vec<LoopJob> = blocks
                .iter_mut()
                .zip(&plan.cpus[1..])
                .map(|(b, &cpu)| {
                    b.poison(Op::Copy, n);
                    b.job(cpu, Op::Copy, entry, n)
                })
                .collect();
            // SAFETY: each copier's block is its own; the lead reads only its buffer.
            let (runs, ns) = unsafe { run_pinned(&jobs, plan.window, Some((victim_cpu, &lead)))? };
            let (ns, share) = ns.unwrap_or((f64::NAN, f64::NAN));
            per[j].0.push(ns);
            shares.push(share);
            per[j].1.push(aggregate_gbps(&runs));
            per[j].2 &= blocks.iter().all(|b| b.verify(Op::Copy, n));
            pb.inc(1);
        }
    }
    Ok((per, alone, shares))
}

/// Part 2: the victim's working sets, beside the copiers of each method and alone.
fn victim(ctx: &mut Ctx<'_>, plan: &Plan, extra: &[Method]) -> anyhow::Result<Vec<Record>> {
    let mut extra = extra.to_vec();
    extra.push(Method::auto_with_hint(Hint::NoReuse, "auto-noreuse"));
    extra.push(Method::auto_with_hint(Hint::Reuse, "auto-reuse"));
    let methods = methods_for(ctx, Op::Copy, "rep_movsb", &extra);
    let n = plan
        .scaling_sizes(ctx)
        .iter()
        .map(|s| s.1)
        .max()
        .unwrap_or(4 << 20);
    let sets = [
        ("L2", (plan.l2 * 3 / 4) / 4096 * 4096),
        ("LLC share", plan.llc_share(ctx.quick)),
    ];
    let mut blocks: Vec<Block> = (1..plan.cpus.len())
        .map(|i| Block::new(n, 0x71c_0000 + i as u64))
        .collect();
    let pb = ctx.bar(
        sets.len() * plan.reps * methods.len(),
        &format!("{NAME} {VICTIM}"),
        "windows",
    );
    let libc_at = methods.iter().position(|m| m.name() == "libc");
    let mut out = Vec::new();
    for (k, &(level, ws)) in sets.iter().enumerate() {
        let chase = Chase::new(ws.max(4096), 0xc4a5e + k as u64);
        let (per, alone, shares) = victim_cell(ctx, plan, &methods, &chase, &mut blocks, n, &pb)?;
        for (j, m) in methods.iter().enumerate() {
            let (ns, copier, verified) = &per[j];
            verification_warning(
                ctx,
                *verified,
                format!("{NAME} {VICTIM} {} beside {}", fmt_size(ws), m.name()),
            );
            let pass: Vec<f64> = ns.iter().map(|x| x * chase.lines as f64).collect();
            let s = Summary::of(&pass);
            let mut e = plan.extras(VICTIM, plan.cpus.len(), "victim");
            e.insert("victim_ws".into(), json!(ws));
            e.insert("victim_level".into(), json!(level));
            e.insert("copy_size".into(), json!(n));
            e.insert("copiers".into(), json!(plan.cpus.len() - 1));
            e.insert("victim_ns_per_line".into(), json!(median(ns)));
            e.insert("alone_ns_per_line".into(), json!(median(&alone)));
            e.insert("alone_samples_ns_per_line".into(), json!(alone));
            e.insert("copier_gbps".into(), json!(median(copier)));
            e.insert("victim_cpu_share".into(), json!(median(&shares)));
            if let Some(r) = paired_median_ratio(ns, &alone) {
                e.insert("slowdown".into(), json!(r));
            }
            if let Some(ci) = paired_ratio_ci(ns, &alone, 0.95, RESAMPLES, 7 + j as u64) {
                e.insert("slowdown_ci95".into(), json!([ci.0, ci.1]));
            }
            if let Some(l) = libc_at {
                let base = &per[l].0;
                if let Some(r) = paired_median_ratio(base, ns) {
                    e.insert("ratio_victim_libc_over_method".into(), json!(r));
                }
                if let Some(ci) = paired_ratio_ci(base, ns, 0.95, RESAMPLES, 11 + j as u64) {
                    e.insert("ratio_victim_ci95".into(), json!([ci.0, ci.1]));
                }
            }
            out.push(Record {
                experiment: NAME.into(),
                method: m.name().into(),
                op: Op::Copy.name().into(),
                size: ws,
                src: "loop".into(),
                dst: "loop".into(),
                reuse: "none".into(),
                gbps: s.gbps(ws),
                summary: s,
                verified: *verified,
                samples_ns: pass,
                extras: e,
            });
        }
    }
    pb.finish_and_clear();
    Ok(out)
}

/// One hand-off: the producer (on `cpus.0`, its source read first) copies `n` bytes
/// with `entry` into `dst`, then the consumer (on `cpus.1`, waiting since the common
/// start) reads and sums them. Returns (producer ns, consumer ns, the sum).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, 8-byte aligned, disjoint.
unsafe fn hand_off(
    entry: Entry,
    dst: *mut u8,
    src: *const u8,
    n: usize,
    cpus: (usize, usize),
) -> anyhow::Result<(f64, f64, u64)> {
    let barrier = Barrier::new(2);
    let (ready, failed) = (AtomicBool::new(false), AtomicBool::new(false));
    let (dst_at, src_at) = (dst as usize, src as usize);
    let (p, c) = std::thread::scope(|s| {
        let (barrier, ready, failed) = (&barrier, &ready, &failed);
        let start = |cpu: usize| {
            if pin(cpu).is_none() {
                failed.store(true, Ordering::Relaxed);
            }
            barrier.wait();
            !failed.load(Ordering::Relaxed)
        };
        let producer = s.spawn(move || {
            if pin(cpus.0).is_none() {
                failed.store(true, Ordering::Relaxed);
            }
            // The source in the producer's caches, as a block just computed would be.
            // SAFETY: the caller's contract.
            unsafe { read_lines(src_at as *const u8, n) };
            barrier.wait();
            if failed.load(Ordering::Relaxed) {
                return f64::NAN;
            }
            let t0 = Instant::now();
            // SAFETY: the caller's contract.
            unsafe { entry.call(dst_at as *mut u8, src_at as *const u8, 0, n) };
            let ns = t0.elapsed().as_nanos() as f64;
            ready.store(true, Ordering::Release);
            ns
        });
        let consumer = s.spawn(move || {
            if !start(cpus.1) {
                return (f64::NAN, 0);
            }
            while !ready.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let t0 = Instant::now();
            // SAFETY: the producer has finished writing `n` bytes at `dst`, 8-byte
            // aligned (the caller's contract); nothing writes them now.
            let words = unsafe { std::slice::from_raw_parts(dst_at as *const u64, n / 8) };
            let sum = std::hint::black_box(words)
                .iter()
                .fold(0u64, |a, &w| a.wrapping_add(w));
            (t0.elapsed().as_nanos() as f64, std::hint::black_box(sum))
        });
        (
            producer.join().expect("the producer panicked"),
            consumer.join().expect("the consumer panicked"),
        )
    });
    if failed.load(Ordering::Relaxed) {
        anyhow::bail!("threads: cannot pin the hand-off's threads to CPUs {cpus:?}");
    }
    Ok((p, c.0, c.1))
}

/// Part 3: per size, every method's hand-offs interleaved per repetition, the
/// destination poisoned and flushed from every cache before each.
fn handoff(ctx: &mut Ctx<'_>, plan: &Plan, extra: &[Method]) -> anyhow::Result<Vec<Record>> {
    let methods = methods_for(ctx, Op::Copy, "rep_movsb", extra);
    let sizes = plan.handoff_sizes(ctx);
    let cpus = (plan.cpus[0], plan.cpus[1]);
    let pb = ctx.bar(
        sizes.len() * plan.handoff_reps * methods.len(),
        &format!("{NAME} {HANDOFF}"),
        "rounds",
    );
    let mut out = Vec::new();
    for &n in &sizes {
        let n = n.div_ceil(8) * 8;
        let mut b = Block::new(n, 0x4a4d0ff);
        let want = b.src.as_slice()[..n].chunks_exact(8).fold(0u64, |a, w| {
            a.wrapping_add(u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
        });
        let m = methods.len();
        let (mut prod, mut cons, mut verified) =
            (vec![Vec::new(); m], vec![Vec::new(); m], vec![true; m]);
        for _ in 0..plan.handoff_reps {
            for j in ctx.runner.method_order(m) {
                let entry = methods[j]
                    .entry(Op::Copy)
                    .expect("methods_for keeps the op's");
                b.poison(Op::Copy, n);
                // SAFETY: our own buffer.
                unsafe { flush(b.dst.as_ptr(), n) };
                // SAFETY: the block's buffers hold `n` bytes each, page-aligned.
                let (p, c, sum) =
                    unsafe { hand_off(entry, b.dst.as_mut_ptr(), b.src.as_ptr(), n, cpus)? };
                prod[j].push(p);
                cons[j].push(c);
                verified[j] &= sum == want && b.verify(Op::Copy, n);
                pb.inc(1);
            }
        }
        let libc_at = methods.iter().position(|m| m.name() == "libc");
        for (j, method) in methods.iter().enumerate() {
            verification_warning(
                ctx,
                verified[j],
                format!("{NAME} {HANDOFF} {} {}", fmt_size(n), method.name()),
            );
            let total: Vec<f64> = prod[j].iter().zip(&cons[j]).map(|(p, c)| p + c).collect();
            let s = Summary::of(&total);
            let mut e = plan.extras(HANDOFF, 2, "producer+consumer");
            e.insert("cpus".into(), json!([cpus.0, cpus.1]));
            for (k, v) in [("producer", &prod[j]), ("consumer", &cons[j])] {
                let t = Summary::of(v);
                e.insert(format!("{k}_ns"), json!(t.median));
                e.insert(format!("{k}_min_ns"), json!(t.min));
                e.insert(format!("{k}_max_ns"), json!(t.max));
            }
            e.insert("consumer_samples_ns".into(), json!(cons[j]));
            if let Some(l) = libc_at {
                if let Some(r) = paired_median_ratio(&cons[l], &cons[j]) {
                    e.insert("ratio_consumer_libc_over_method".into(), json!(r));
                }
                if let Some(ci) =
                    paired_ratio_ci(&cons[l], &cons[j], 0.95, RESAMPLES, 13 + j as u64)
                {
                    e.insert("ratio_consumer_ci95".into(), json!([ci.0, ci.1]));
                }
            }
            out.push(Record {
                experiment: NAME.into(),
                method: method.name().into(),
                op: Op::Copy.name().into(),
                size: n,
                src: "hot".into(),
                dst: "clean".into(),
                reuse: "read".into(),
                gbps: s.gbps(n),
                summary: s,
                verified: verified[j],
                samples_ns: total,
                extras: e,
            });
        }
    }
    pb.finish_and_clear();
    Ok(out)
}

/// The records of one part.
fn part(recs: &[Record], name: &str) -> Vec<Record> {
    recs.iter()
        .filter(|r| r.extra_str("part") == name)
        .cloned()
        .collect()
}

/// `r [lo–hi]` from a record's ratio and interval fields, or `–`.
fn ratio_cell(r: &Record, ratio: &str, ci: &str) -> String {
    super::doors::ratio_with_ci(r, ratio, ci).map_or("–".into(), super::doors::fmt_ratio)
}

/// The tables: scaling, which store class wins per N, the victim, the hand-off.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, _) = records_of(recs, NAME);
    if recs.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    out.extend(scaling_table(&part(&recs, SCALING)));
    out.extend(crossing_table(&part(&recs, SCALING)));
    out.extend(victim_table(&part(&recs, VICTIM)));
    out.extend(handoff_table(&part(&recs, HANDOFF)));
    out
}

fn scaling_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let methods = distinct(recs, |r| r.method.clone());
    let mut header = vec!["op, size, threads".to_string()];
    header.extend(methods.iter().cloned());
    let mut t = Table::new(
        "threads scaling: aggregate GB/s of N pinned threads, each copying or zeroing its own block in a loop",
        format!(
            "median [min–max] over repetitions; (per thread: the slowest and fastest thread's median GB/s); {}",
            first.extra_str("topology")
        ),
        header,
    );
    for (op, n, threads) in distinct(recs, |r| {
        (
            r.op.clone(),
            r.size,
            r.extra_f64("threads").unwrap_or(0.0) as usize,
        )
    }) {
        let cell: Vec<&Record> = recs
            .iter()
            .filter(|r| r.op == op && r.size == n && r.extra_f64("threads") == Some(threads as f64))
            .collect();
        let class = cell.first().map_or("", |r| r.extra_str("size_class"));
        let mut row = vec![format!("{op} {} ({class}) ×{threads}", fmt_size(n))];
        for m in &methods {
            row.push(match cell.iter().find(|r| &r.method == m) {
                Some(r) => {
                    let a = &r.extras["aggregate_gbps"];
                    let per: Vec<f64> = r.extras["per_thread_gbps"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p["median_gbps"].as_f64())
                        .collect();
                    let lo = per.iter().copied().fold(f64::MAX, f64::min);
                    let hi = per.iter().copied().fold(0.0, f64::max);
                    format!(
                        "{:.1} [{:.1}–{:.1}] ({lo:.1}–{hi:.1})",
                        a["median"].as_f64().unwrap_or(f64::NAN),
                        a["min"].as_f64().unwrap_or(f64::NAN),
                        a["max"].as_f64().unwrap_or(f64::NAN),
                    )
                }
                None => "–".into(),
            });
        }
        t.rows.push(row);
    }
    Some(t)
}

/// Per op and size, at each thread count: which store class has the higher aggregate
/// GB/s, its best kernel against the other class's best.
fn crossing_table(recs: &[Record]) -> Option<Table> {
    let kernels: Vec<&Record> = recs
        .iter()
        .filter(|r| r.method != "libc" && !r.method.starts_with("auto"))
        .filter(|r| !r.method.starts_with("rep_"))
        .collect();
    if kernels.is_empty() {
        return None;
    }
    let counts = distinct(recs, |r| r.extra_f64("threads").unwrap_or(0.0) as usize);
    let mut header = vec!["op, size".to_string()];
    header.extend(counts.iter().map(|n| format!("N={n}")));
    let mut t = Table::new(
        "threads scaling: temporal or streaming stores, as the thread count grows",
        "the store class whose best kernel has the higher aggregate GB/s, and by how much; rep_* and libc/auto left out",
        header,
    );
    for (op, n) in distinct(recs, |r| (r.op.clone(), r.size)) {
        let mut row = vec![format!("{op} {}", fmt_size(n))];
        for &c in &counts {
            let best = |streams: bool| {
                kernels
                    .iter()
                    .filter(|r| {
                        r.op == op && r.size == n && r.extra_f64("threads") == Some(c as f64)
                    })
                    .filter(|r| r.extras.get("streams").and_then(|v| v.as_bool()) == Some(streams))
                    .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
                    .map(|r| (r.method.clone(), r.gbps))
            };
            row.push(match (best(false), best(true)) {
                (Some((tm, tg)), Some((_, sg))) if tg >= sg => {
                    format!("temporal ({tm}) {:.2}×", tg / sg)
                }
                (Some((_, tg)), Some((sm, sg))) => format!("streaming ({sm}) {:.2}×", sg / tg),
                _ => "–".into(),
            });
        }
        t.rows.push(row);
    }
    Some(t)
}

fn victim_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let mut t = Table::new(
        format!(
            "threads victim: ns per line of a pointer chase through a warm working set (over the victim's CPU time), while {} other CPU(s) copy {} blocks",
            first.extra_f64("copiers").unwrap_or(0.0),
            fmt_size(first.extra_f64("copy_size").unwrap_or(0.0) as usize)
        ),
        "median over repetitions; slowdown = beside / alone, paired per repetition [95% interval]; libc / method > 1: the method's copies slow the victim less than libc's; CPU share: the victim's CPU time over the wall time (other tenants had the rest)",
        ["working set", "copiers' method", "alone", "beside", "slowdown", "libc / method", "copiers' GB/s", "CPU share"]
            .map(String::from)
            .to_vec(),
    );
    for r in recs {
        t.rows.push(vec![
            format!(
                "{} ({})",
                fmt_size(r.extra_f64("victim_ws").unwrap_or(0.0) as usize),
                r.extra_str("victim_level")
            ),
            r.method.clone(),
            format!(
                "{:.2}",
                r.extra_f64("alone_ns_per_line").unwrap_or(f64::NAN)
            ),
            format!(
                "{:.2}",
                r.extra_f64("victim_ns_per_line").unwrap_or(f64::NAN)
            ),
            ratio_cell(r, "slowdown", "slowdown_ci95"),
            ratio_cell(r, "ratio_victim_libc_over_method", "ratio_victim_ci95"),
            format!("{:.1}", r.extra_f64("copier_gbps").unwrap_or(f64::NAN)),
            format!(
                "{:.0}%",
                100.0 * r.extra_f64("victim_cpu_share").unwrap_or(f64::NAN)
            ),
        ]);
    }
    Some(t)
}

fn handoff_table(recs: &[Record]) -> Option<Table> {
    let first = recs.first()?;
    let cpus = first
        .extras
        .get("cpus")
        .map(|v| v.to_string())
        .unwrap_or_default();
    let mut t = Table::new(
        format!("threads hand-off: a producer copies a block, a consumer on another CPU then reads all of it (CPUs {cpus})"),
        "µs, median [min–max] over rounds; the destination flushed from every cache before each round; libc / method > 1: the consumer reads faster after the method than after libc [95% interval]",
        ["size", "method", "producer copy", "consumer read", "total", "consumer libc / method"]
            .map(String::from)
            .to_vec(),
    );
    let us = |r: &Record, k: &str| {
        let f = |s: &str| r.extra_f64(&format!("{k}{s}")).unwrap_or(f64::NAN) / 1000.0;
        format!("{:.2} [{:.2}–{:.2}]", f("_ns"), f("_min_ns"), f("_max_ns"))
    };
    for r in recs {
        t.rows.push(vec![
            fmt_size(r.size),
            r.method.clone(),
            us(r, "producer"),
            us(r, "consumer"),
            format!("{:.2}", r.summary.median / 1000.0),
            ratio_cell(r, "ratio_consumer_libc_over_method", "ratio_consumer_ci95"),
        ]);
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_loops_copy_their_own_blocks_and_report_each_thread() {
        let cpus = allowed_cpus();
        let n = 64 << 10;
        let mut blocks: Vec<Block> = (0..cpus.len().min(2))
            .map(|i| Block::new(n, i as u64))
            .collect();
        let entry = Method::auto().entry(Op::Copy).unwrap();
        let jobs: Vec<LoopJob> = blocks
            .iter_mut()
            .zip(&cpus)
            .map(|(b, &c)| {
                b.poison(Op::Copy, n);
                assert!(!b.verify(Op::Copy, n));
                b.job(c, Op::Copy, entry, n)
            })
            .collect();
        // SAFETY: each job's block is its own.
        let (runs, lead) =
            unsafe { run_pinned::<()>(&jobs, Duration::from_millis(2), None) }.unwrap();
        assert!(lead.is_none());
        assert_eq!(runs.len(), jobs.len());
        for (r, b) in runs.iter().zip(&blocks) {
            assert!(r.calls >= 1 && r.bytes == r.calls * n as u64 && r.ns > 0.0);
            assert!(b.verify(Op::Copy, n));
        }
        assert!(aggregate_gbps(&runs) > 0.0);
    }

    #[test]
    fn a_lead_stops_the_loopers_when_it_returns() {
        let cpus = allowed_cpus();
        let n = 4096;
        let mut b = Block::new(n, 1);
        let entry = Method::auto().entry(Op::Zero).unwrap();
        let jobs = [b.job(*cpus.last().unwrap(), Op::Zero, entry, n)];
        let lead = || 42;
        // SAFETY: the job's block is its own; the lead touches nothing.
        let (runs, out) =
            unsafe { run_pinned(&jobs, Duration::from_secs(3600), Some((cpus[0], &lead))) }
                .unwrap();
        assert_eq!(out, Some(42));
        assert!(runs[0].calls >= 1);
        assert!(b.verify(Op::Zero, n));
    }

    #[test]
    fn a_chase_visits_every_line() {
        let c = Chase::new(64 << 10, 3);
        let mut q = c.buf.as_ptr() as *const usize;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..c.lines {
            seen.insert(q as usize);
            // SAFETY: as in `Chase::time`.
            q = unsafe { q.read() } as *const usize;
        }
        assert_eq!(seen.len(), c.lines);
        assert_eq!(q, c.buf.as_ptr() as *const usize);
    }
}
