//! The measurement engine: one [`Cell`] (method × op × size × src/dst state × offsets
//! × what follows) is prepared, timed and checked `reps` times and becomes one
//! [`Record`].
//!
//! Every repetition: poison the destination (each byte differs from what the op will
//! write, and a canary follows the region), build the cache states, time the call with
//! `rdtscp`, then compare the destination with the source (or the fill byte) and check
//! the canary. A small cold cell does this on several slots after one sweep, each call
//! a sample (see [`calls_per_sweep`]). Two extra, untimed preparations (before the first and after the last
//! repetition) are probed to verify the cache states; probing disturbs the state, so
//! it never precedes a timed call.

use blockmem::kernel::Op;
use serde_json::{json, Map, Value};

use super::mem::Buffer;
use super::method::{Entry, Method};
use super::state::{
    probe_lines, Access, BackgroundCheck, CacheState, Region, StateBuilder, StateCheck, PROBE_LINES,
};
use super::stats::Summary;
use super::timer::Timer;
use super::warn::{Warning, Warnings};

/// What happens right after the measured call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Nothing.
    Nothing,
    /// The destination is read completely (seed 003 Fig. 3, docs/SEEDS.md); timed
    /// separately.
    ReadDst,
    /// An application working set of `ws` bytes, made hot before the call, is read
    /// again after it (seed 004 pollution); a paired repetition without the call gives
    /// the baseline.
    ReadApp {
        /// Working-set bytes.
        ws: usize,
    },
    /// The same call on the same destination `calls` more times, back to back, the
    /// last one timed: what each call costs a program that writes one buffer in a loop
    /// (a reused output or heap block), every call finding the destination where the
    /// one before left it. The record's time is that call's; the first call's is an
    /// extra.
    Again {
        /// Calls after the first (at least 1).
        calls: usize,
    },
}

/// One cell to measure.
#[derive(Clone, Debug)]
pub struct Cell<'a> {
    /// Experiment name (recorded).
    pub experiment: &'static str,
    /// The method.
    pub method: &'a Method,
    /// The op.
    pub op: Op,
    /// Bytes per call.
    pub size: usize,
    /// Source state (ignored for set/zero).
    pub src: CacheState,
    /// Destination state.
    pub dst: CacheState,
    /// Source offset from a page boundary.
    pub src_off: usize,
    /// Destination offset from a page boundary.
    pub dst_off: usize,
    /// What follows the call.
    pub after: After,
    /// Timed repetitions.
    pub reps: usize,
}

/// A cell without its method: the shape every method of a group is measured on.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Experiment name (recorded).
    pub experiment: &'static str,
    /// The op.
    pub op: Op,
    /// Bytes per call.
    pub size: usize,
    /// Source state (ignored for set/zero).
    pub src: CacheState,
    /// Destination state.
    pub dst: CacheState,
    /// What follows the call.
    pub after: After,
    /// Timed repetitions.
    pub reps: usize,
}

impl Shape {
    /// The cell for `method`, page-aligned source and destination.
    pub fn cell<'a>(&self, method: &'a Method) -> Cell<'a> {
        Cell {
            experiment: self.experiment,
            method,
            op: self.op,
            size: self.size,
            src: self.src,
            dst: self.dst,
            src_off: 0,
            dst_off: 0,
            after: self.after,
            reps: self.reps,
        }
    }

    /// One group: a cell per method, the destination `dst_off` bytes past a page
    /// boundary (the source page-aligned).
    pub fn cells<'a>(
        &self,
        methods: impl IntoIterator<Item = &'a Method>,
        dst_off: usize,
    ) -> Vec<Cell<'a>> {
        methods
            .into_iter()
            .map(|m| Cell {
                dst_off,
                ..self.cell(m)
            })
            .collect()
    }
}

/// One result row (docs/DESIGN.md's fixed fields plus extras and raw samples).
#[derive(Clone, Debug)]
pub struct Record {
    /// Experiment that produced it.
    pub experiment: String,
    /// Method name.
    pub method: String,
    /// Op name.
    pub op: String,
    /// Bytes per call.
    pub size: usize,
    /// Source state name (`none` for set/zero).
    pub src: String,
    /// Destination state name.
    pub dst: String,
    /// What happened to the destination after the call (`none`, `read`).
    pub reuse: String,
    /// Timing summary (ns).
    pub summary: Summary,
    /// Bandwidth at the median (GB/s).
    pub gbps: f64,
    /// Every measured call left the right bytes.
    pub verified: bool,
    /// Raw samples (ns), in measurement order.
    pub samples_ns: Vec<f64>,
    /// Experiment-specific fields.
    pub extras: Map<String, Value>,
}

impl Record {
    /// A key that identifies the cell and method across runs (for `--compare`).
    pub fn key(&self) -> String {
        self.key_with(Some(&self.method))
    }

    /// A key that identifies the cell whatever the method: the records of one cell's
    /// methods share it ([`Record::key`] without the method).
    pub fn cell_key(&self) -> String {
        self.key_with(None)
    }

    fn key_with(&self, method: Option<&str>) -> String {
        let mut k = self.experiment.clone();
        if let Some(m) = method {
            k.push('/');
            k.push_str(m);
        }
        k.push_str(&format!(
            "/{}/{}/{}/{}/{}",
            self.op, self.size, self.src, self.dst, self.reuse
        ));
        for f in [
            "sweep",
            "dst_offset",
            "src_offset",
            "app_ws",
            "door",
            "loop",
            "workload",
            "working_set",
            "part",
            "threads",
            "victim_ws",
        ] {
            if let Some(v) = self.extras.get(f) {
                k.push_str(&format!("/{f}={v}"));
            }
        }
        k
    }

    /// The JSON object: fixed fields first, then extras, then raw samples.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("experiment".into(), json!(self.experiment));
        m.insert("method".into(), json!(self.method));
        m.insert("op".into(), json!(self.op));
        m.insert("size".into(), json!(self.size));
        m.insert("src".into(), json!(self.src));
        m.insert("dst".into(), json!(self.dst));
        m.insert("reuse".into(), json!(self.reuse));
        m.insert("min_ns".into(), json!(self.summary.min));
        m.insert("median_ns".into(), json!(self.summary.median));
        m.insert("max_ns".into(), json!(self.summary.max));
        m.insert("gbps".into(), json!(self.gbps));
        m.insert("verified".into(), json!(self.verified));
        m.insert("q1_ns".into(), json!(self.summary.q1));
        m.insert("q3_ns".into(), json!(self.summary.q3));
        m.insert("reps".into(), json!(self.summary.n));
        m.insert("key".into(), json!(self.key()));
        for (k, v) in &self.extras {
            m.insert(k.clone(), v.clone());
        }
        m.insert("samples_ns".into(), json!(self.samples_ns));
        Value::Object(m)
    }

    /// Reads back an object [`Record::to_json`] wrote (a lab JSON file's `results`);
    /// fields other than the fixed ones become extras. The error names the first fixed
    /// field missing or of the wrong type.
    pub fn from_json(v: &Value) -> Result<Record, String> {
        let s = |k: &str| {
            v[k].as_str()
                .map(String::from)
                .ok_or_else(|| format!("no string \"{k}\""))
        };
        let f = |k: &str| v[k].as_f64().ok_or_else(|| format!("no number \"{k}\""));
        let (experiment, method, op) = (s("experiment")?, s("method")?, s("op")?);
        let size = v["size"].as_u64().ok_or("no integer \"size\"")? as usize;
        let (src, dst, reuse) = (s("src")?, s("dst")?, s("reuse")?);
        let samples_ns: Vec<f64> = v["samples_ns"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let from_samples = Summary::of(&samples_ns);
        let summary = Summary {
            n: v["reps"].as_u64().map_or(from_samples.n, |n| n as usize),
            min: f("min_ns")?,
            q1: v["q1_ns"].as_f64().unwrap_or(from_samples.q1),
            median: f("median_ns")?,
            q3: v["q3_ns"].as_f64().unwrap_or(from_samples.q3),
            max: f("max_ns")?,
            mean: from_samples.mean,
        };
        const FIXED: [&str; 17] = [
            "experiment",
            "method",
            "op",
            "size",
            "src",
            "dst",
            "reuse",
            "min_ns",
            "median_ns",
            "max_ns",
            "gbps",
            "verified",
            "q1_ns",
            "q3_ns",
            "reps",
            "key",
            "samples_ns",
        ];
        let extras = v
            .as_object()
            .ok_or("not an object")?
            .iter()
            .filter(|(k, _)| !FIXED.contains(&k.as_str()))
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect();
        Ok(Record {
            experiment,
            method,
            op,
            size,
            src,
            dst,
            reuse,
            summary,
            gbps: f("gbps")?,
            verified: v["verified"].as_bool().ok_or("no boolean \"verified\"")?,
            samples_ns,
            extras,
        })
    }

    /// A numeric extra, if present.
    pub fn extra_f64(&self, k: &str) -> Option<f64> {
        self.extras.get(k).and_then(Value::as_f64)
    }

    /// A text extra, or `""` when absent.
    pub fn extra_str(&self, k: &str) -> &str {
        self.extras.get(k).and_then(Value::as_str).unwrap_or("")
    }
}

/// Placement slots a small cell rotates over.
const SLOTS: usize = 16;
/// Largest per-slot span (region + offsets + canary) that rotates.
const SLOT_SPAN_MAX: usize = 256 << 10;
/// Rotating slots start this far apart at least: eight page-table entries share a
/// 64-byte line, so slots 32 KiB apart each have their own. A cell that times several
/// slots after one sweep (see [`calls_per_sweep`]) would otherwise find the
/// page-table line of a later slot cached by an earlier slot's page walk, and skip a
/// DRAM access a lone cold call pays.
const SLOT_ALIGN: usize = 32 << 10;

/// How many slots one preparation of a cold cell serves: the sweep (flush the cold
/// regions of every slot, then read or write 1.5 effective LLCs twice, several
/// milliseconds) is done once, then each slot in turn gets its hot regions touched and
/// its call timed, each call a sample of its own.
///
/// Why: a cold call of a few KiB is a handful of DRAM accesses whose latency varies
/// call to call, so one sample per sweep leaves a cell's median to that noise; fifteen
/// timed calls per sweep give 15× the samples for the same time.
///
/// An untimed lead call on one more slot goes first: the first call after a sweep also
/// pays for what the sweep evicted besides the data (upper page-table levels among
/// it), which a program copying cold data has cached, as it has its code (see
/// [`WARM_MAX`]).
///
/// What keeps each call as cold as a lone one: the slots are distinct lines on
/// distinct pages (their TLB entries were evicted by the sweep), `SLOT_ALIGN` (32 KiB) apart
/// (their page-table lines too), called in a random order (no stride for a
/// prefetcher to follow), and together they touch at most an eighth of the L2, so the
/// background the sweep left (clean or dirty lines of other data) is still what
/// surrounds the last call. A hot region is touched right before its own call, as in
/// a lone preparation. Cells that are all hot (no sweep), that do not rotate
/// (`span > SLOT_SPAN_MAX`), or that re-read an application working set (its baseline
/// is paired with one call) keep one call per preparation.
///
/// The samples of one sweep share the machine's state of that moment, so they are not
/// fully independent: the bootstrap intervals over them are somewhat narrow.
pub fn calls_per_sweep(
    op: Op,
    n: usize,
    src: CacheState,
    dst: CacheState,
    after: After,
    span: usize,
    l2: usize,
) -> usize {
    let copy_like = matches!(op, Op::Copy | Op::Move);
    let cold = dst.is_cold() || (copy_like && src.is_cold());
    if !cold || span > SLOT_SPAN_MAX || matches!(after, After::ReadApp { .. } | After::Again { .. })
    {
        return 1;
    }
    let touched = if copy_like { 2 * n } else { n }.max(1);
    // The lead call and the timed ones together.
    ((l2 / 8) / touched).saturating_sub(1).clamp(1, SLOTS - 1)
}

/// Cold cells up to this size run each method once, untimed, on a scratch buffer after
/// the cache state is built. The eviction sweep that makes the data cold also evicts
/// every method's code and bookkeeping (libc's GOT and thresholds, blockmem's dispatch
/// state), and at a few KiB one extra DRAM miss is a large share of the call: the
/// experiments are about the *data's*
/// temperature (seed 000 §3.3), and a program that copies often keeps its copy
/// routine's code and state cached. The warm-up touches 2 × size bytes of scratch,
/// under 1% of the LLC. Larger cells are left alone: a miss or two is noise there.
pub const WARM_MAX: usize = 64 << 10;

/// Canary bytes after every destination region.
const CANARY: usize = 64;
const CANARY_BYTE: u8 = 0xC3;
/// Byte written by the `set` op.
pub const SET_BYTE: u8 = 0xA5;

/// Grows-only buffers reused across cells.
#[derive(Default)]
struct Pool {
    src: Option<Buffer>,
    dst: Option<Buffer>,
    app: Option<Buffer>,
    /// Source and destination of the untimed warm-up call (see [`WARM_MAX`]).
    warm: Option<Buffer>,
    /// The chain built in `app`: (working-set bytes, head pointer, links).
    app_chain: Option<(usize, *const usize, usize)>,
}

fn ensure<'a>(
    slot: &'a mut Option<Buffer>,
    len: usize,
    random: Option<&mut fastrand::Rng>,
) -> &'a mut Buffer {
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        *slot = None; // unmap the old one first
        let mut b = Buffer::new(len);
        if let Some(rng) = random {
            b.fill_random(rng);
        }
        *slot = Some(b);
    }
    slot.as_mut().expect("just ensured")
}

/// Lines of the application working set the pollution re-read visits.
pub const APP_LINES: usize = 8192;

/// Links `lines` into a cyclic pointer chain in their order (each holds the address of
/// the next, the last the first's) and returns its head for [`chase`].
///
/// # Safety
/// Every pointer must be valid for an aligned `usize` write; `lines` is not empty.
unsafe fn link_cycle(lines: &[*mut usize]) -> *const usize {
    for (i, &l) in lines.iter().enumerate() {
        // SAFETY: caller's contract.
        unsafe { l.write(lines[(i + 1) % lines.len()] as usize) };
    }
    lines[0]
}

/// Follows a pointer chain of `links` links from `head` (dependent loads: every miss
/// costs its full latency, like an application's pointer-rich data).
pub fn chase(head: *const usize, links: usize) -> usize {
    let mut p = head;
    for _ in 0..links {
        // SAFETY: `head` starts a cyclic chain built by `Runner::app_chain` inside a
        // pool buffer; every link points to another link of it.
        p = unsafe { p.read_volatile() } as *const usize;
    }
    std::hint::black_box(p as usize)
}

/// Sums a region as `u64` words (a full, vectorised read).
///
/// # Safety
/// `[p, p+n)` must be valid for reads.
pub unsafe fn read_all(p: *const u8, n: usize) -> u64 {
    // SAFETY: caller's contract.
    let s = unsafe { std::slice::from_raw_parts(p, n) };
    let mut acc = 0u64;
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        acc = acc.wrapping_add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    for &b in chunks.remainder() {
        acc = acc.wrapping_add(b as u64);
    }
    std::hint::black_box(acc)
}

/// A quick reading of the machine's current speed: memory bandwidth of a read larger
/// than the LLC, and a hot in-cache copy. Taken before each experiment and at the end,
/// it shows whether other load changed the machine under the run (a shared VM's
/// neighbours take memory bandwidth and LLC capacity), so a comparison of two runs
/// can tell a real change from interference.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Sentinel {
    /// When (`before temperature`, `end`).
    pub at: String,
    /// GB/s reading a buffer of 2× the effective LLC (best of 3).
    pub dram_read_gbps: f64,
    /// GB/s of a hot 256 KiB copy with the C library (median of 31).
    pub hot_copy_gbps: f64,
    /// ns per dependent load of a random line, one per page, of that same buffer
    /// (median of 5 chases of 4096 links): what a small cold copy mostly waits for.
    pub dram_latency_ns: f64,
}

/// The engine: clock, state builder, buffers, warnings.
pub struct Runner {
    /// The clock.
    pub timer: Timer,
    /// The cache-state builder (owns the eviction buffer).
    pub states: StateBuilder,
    /// Warnings so far.
    pub warnings: Warnings,
    /// Triple the repetitions of all-hot cells up to 256 KiB (cheap to prepare, short
    /// and noise-prone). On by default; the lab turns it off when `--reps` is given.
    pub boost_cheap_cells: bool,
    /// Time hot batches on a mix of sizes instead of one repeated size (see
    /// [`size_mix`]). Off by default (the lab's cells are one size each); calibration
    /// turns it on.
    pub size_mix: bool,
    pool: Pool,
    rng: fastrand::Rng,
}

/// Bytes one sample of a hot cell covers at least (see [`batch_for`]).
pub const BATCH_BYTES: usize = 64 << 10;
/// Most calls one sample covers.
pub const BATCH_MAX: usize = 1024;

/// How many timed calls one sample covers. Hot cells are timed in batches of at least
/// [`BATCH_BYTES`] (a microsecond or more): a single hot call of a few hundred bytes
/// takes a time close to the timer's own cost (subtracted as a median that itself
/// moves), so single-call samples do not repeat. A batch
/// is the same call repeated, as a program's copy loop repeats it; the data stays hot.
/// Cold cells are always single calls (the second call would find the data hot).
pub fn batch_for(op: Op, n: usize, src: CacheState, dst: CacheState) -> usize {
    let hot =
        dst == CacheState::Hot && (matches!(op, Op::Set | Op::Zero) || src == CacheState::Hot);
    if hot {
        BATCH_BYTES.div_ceil(n.max(1)).clamp(1, BATCH_MAX)
    } else {
        1
    }
}

/// The sizes of one mixed batch of `batch` calls around `n` (see [`Runner::size_mix`]),
/// and the factor that scales the batch's time per call to `n` bytes.
///
/// A program rarely repeats one size, and a kernel's loop exit is a branch whose
/// outcome follows the size: timed on a single repeated size it is always predicted,
/// in a real call stream it often is not, so a calibration on fixed sizes keeps loops
/// that lose on a mixed stream (`docs/results/xeon-avx512-2vcpu/lab-quick`). The sizes
/// are uniform in `[3n/4, n]` (never past `n`,
/// so the buffers, canary and verification of the cell hold; the last call is `n`
/// bytes, so the whole destination is written and checked); the scale is
/// `n / mean`, which is exact for the per-byte part of a call and overstates its
/// fixed part by at most a seventh, alike for every kernel. `None` below two calls
/// per batch or when `n < 8`.
pub fn size_mix(n: usize, batch: usize, seed: u64) -> Option<(Vec<usize>, f64)> {
    if batch < 2 || n < 8 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed ^ n as u64);
    let lo = n - n / 4;
    let mut sizes: Vec<usize> = (0..batch - 1).map(|_| rng.usize(lo..=n)).collect();
    sizes.push(n);
    let mean = sizes.iter().sum::<usize>() as f64 / batch as f64;
    Some((sizes, n as f64 / mean))
}

/// Bytes one slot of a cell spans: its region at the larger offset, and the canary,
/// in whole pages.
fn slot_span(c: &Cell<'_>) -> usize {
    (c.src_off.max(c.dst_off) + c.size + CANARY).next_multiple_of(4096)
}

/// Whether two cells differ at most in their method (one interleaved group).
fn same_shape(a: &Cell<'_>, b: &Cell<'_>) -> bool {
    (
        a.experiment,
        a.op,
        a.size,
        a.src,
        a.dst,
        a.src_off,
        a.dst_off,
        a.after,
        a.reps,
    ) == (
        b.experiment,
        b.op,
        b.size,
        b.src,
        b.dst,
        b.src_off,
        b.dst_off,
        b.after,
        b.reps,
    )
}

/// A group's accumulated state between passes (see [`Runner::measure_rounds`]).
#[derive(Default)]
struct GroupRun {
    entries: Vec<Option<Entry>>,
    /// Per method, the contention input it runs with (see `Method::senses_contention`).
    sense: Vec<Option<bool>>,
    batch: usize,
    /// Mixed batch sizes and their time scale (see [`size_mix`]).
    mix: Option<(Vec<usize>, f64)>,
    checks_n: usize,
    /// Slots (samples) per preparation (see [`calls_per_sweep`]).
    per_sweep: usize,
    /// Timed repetitions plus state-check preparations.
    total: usize,
    /// The timed repetitions of the first passes, once the group was extended.
    first_reps: Option<usize>,
    samples: Vec<Vec<f64>>,
    after_samples: Vec<Vec<f64>>,
    base_samples: Vec<Vec<f64>>,
    verified: Vec<bool>,
    checks: Vec<StateCheck>,
    background: Vec<BackgroundCheck>,
}

impl GroupRun {
    /// Timed repetitions so far (each gives every method `per_sweep` samples).
    fn timed_reps(&self) -> usize {
        self.samples.iter().map(Vec::len).max().unwrap_or(0) / self.per_sweep.max(1)
    }

    /// Per cell, the samples its record's summary is built from: the call's time,
    /// plus the destination's read where the cell reads it after; the last call's
    /// where it calls again.
    fn timed_totals(&self, after: After) -> Vec<Vec<f64>> {
        self.samples
            .iter()
            .zip(&self.after_samples)
            .map(|(s, a)| match after {
                After::ReadDst => call_and_read(s, a),
                After::Again { .. } => a.clone(),
                _ => s.clone(),
            })
            .collect()
    }
}

/// Per sample, the call's time plus the destination's read after it.
fn call_and_read(calls: &[f64], reads: &[f64]) -> Vec<f64> {
    calls.iter().zip(reads).map(|(a, b)| a + b).collect()
}

/// How often [`Runner::measure_rounds_extending`] asks a group for more repetitions.
pub const MAX_EXTENSIONS: usize = 4;

/// A group's samples so far, as [`Runner::measure_rounds_extending`] shows them.
pub struct SoFar<'s> {
    /// Timed repetitions made.
    pub reps: usize,
    /// Timed repetitions of the first passes.
    pub first: usize,
    /// Per cell (in the group's order), the samples its record would be built from
    /// (the call plus the destination's read for [`After::ReadDst`]), paired by
    /// index across the cells; empty for a method lacking the op.
    pub totals: &'s [Vec<f64>],
}

fn cell_name(c: &Cell<'_>) -> String {
    let states = if matches!(c.op, Op::Set | Op::Zero) {
        format!("dst {}", c.dst)
    } else {
        format!("{}→{}", c.src, c.dst)
    };
    let off = if c.dst_off != 0 {
        format!(" +{}", c.dst_off)
    } else {
        String::new()
    };
    format!(
        "{} {} {} {} B {states}{off}",
        c.experiment,
        c.method.name(),
        c.op.name(),
        c.size
    )
}

impl Runner {
    /// An engine over `states`.
    pub fn new(states: StateBuilder) -> Runner {
        Runner {
            timer: states.timer,
            states,
            warnings: Warnings::default(),
            boost_cheap_cells: true,
            size_mix: false,
            pool: Pool::default(),
            rng: fastrand::Rng::with_seed(0xb10c),
        }
    }

    /// The application working set of `ws` bytes with a random cyclic chain through
    /// [`APP_LINES`] of its lines (all of them if fewer), built once per size:
    /// (base, bytes, head, links).
    fn app_chain(&mut self, ws: usize) -> (*mut u8, usize, *const usize, usize) {
        let base = ensure(&mut self.pool.app, ws, None).as_mut_ptr();
        match self.pool.app_chain {
            Some((w, head, links)) if w == ws => (base, ws, head, links),
            _ => {
                let lines = ws / super::state::LINE;
                let mut pick: Vec<usize> = (0..lines).collect();
                self.rng.shuffle(&mut pick);
                pick.truncate(APP_LINES.min(lines));
                let links = pick.len();
                let lines: Vec<*mut usize> = pick
                    .iter()
                    .map(|&l| base.wrapping_add(l * super::state::LINE) as *mut usize)
                    .collect();
                // SAFETY: every line lies inside the `ws`-byte app buffer, aligned.
                let head = unsafe { link_cycle(&lines) };
                self.pool.app_chain = Some((ws, head, links));
                (base, ws, head, links)
            }
        }
    }

    /// Measures a [`Sentinel`] (about 20 ms).
    pub fn sentinel(&mut self, at: &str) -> Sentinel {
        let big = (2 * self.states.hier.llc_effective).clamp(16 << 20, 256 << 20);
        let buf = Buffer::new(big);
        let t = self.timer;
        let dram = (0..3)
            .map(|_| {
                // SAFETY: `buf` is ours, `big` bytes.
                t.time(|| unsafe {
                    read_all(buf.as_ptr(), big);
                })
            })
            .fold(f64::MAX, f64::min);
        let n = 256 << 10;
        let src = Buffer::new(n);
        let mut dst = Buffer::new(n);
        let copy = super::method::Method::libc()
            .ok()
            .and_then(|m| m.entry(Op::Copy));
        let mut v = Vec::new();
        for _ in 0..31 {
            v.push(t.time(|| match copy {
                // SAFETY: both buffers are `n` bytes and distinct.
                Some(e) => unsafe { e.call(dst.as_mut_ptr(), src.as_ptr(), 0, n) },
                None => dst.as_mut_slice().copy_from_slice(src.as_slice()),
            }));
        }
        // A chain through one random line of each of LINKS random pages: every load
        // misses the caches and, mostly, the TLB, as a small cold copy's do.
        const LINKS: usize = 4096;
        let pages = big / 4096;
        let mut order: Vec<usize> = (0..pages).collect();
        self.rng.shuffle(&mut order);
        order.truncate(LINKS.min(pages));
        let lines: Vec<*mut usize> = order
            .iter()
            .map(|&pg| {
                buf.as_ptr()
                    .wrapping_add(pg * 4096 + self.rng.usize(..64) * 64)
                    as *mut usize
            })
            .collect();
        // SAFETY: every line lies inside `buf`, 8-byte aligned; the buffer is ours.
        let head = unsafe { link_cycle(&lines) };
        let mut lat = Vec::new();
        for _ in 0..5 {
            // Push the chain out of the caches first (a read of the whole buffer).
            // SAFETY: `buf` is ours, `big` bytes.
            unsafe { read_all(buf.as_ptr(), big) };
            lat.push(
                t.time(|| {
                    chase(head, lines.len());
                }) / lines.len() as f64,
            );
        }
        Sentinel {
            at: at.into(),
            dram_read_gbps: big as f64 / dram,
            hot_copy_gbps: n as f64 / Summary::of(&v).median,
            dram_latency_ns: Summary::of(&lat).median,
        }
    }

    /// Frees the buffers (call between experiments with very different sizes).
    pub fn release(&mut self) {
        self.pool = Pool::default();
    }

    /// Measures one cell. Returns `None` (and records a warning) when the method lacks
    /// the op.
    pub fn measure(&mut self, c: &Cell<'_>) -> Option<Record> {
        self.measure_group(std::slice::from_ref(c)).pop().flatten()
    }

    /// Every method on one shape, interleaved per repetition ([`Runner::measure_group`]);
    /// `None` where a method lacks the op.
    pub fn measure_methods<'m>(
        &mut self,
        methods: impl IntoIterator<Item = &'m Method>,
        shape: Shape,
    ) -> Vec<Option<Record>> {
        let cells = shape.cells(methods, 0);
        self.measure_group(&cells)
    }

    /// The order in which one repetition runs the `m` methods of a group: a fresh
    /// random permutation each time (seeded, so a run is repeatable).
    ///
    /// Not a rotation: with `j = (k + rep) % m` every method always followed the same
    /// neighbour, and what one call leaves behind (pending non-temporal or `rep movsb`
    /// writes) changes the next one's time, biasing whichever method follows it.
    /// lands in each method's spread rather than in one method's median.
    pub fn method_order(&mut self, m: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..m).collect();
        self.rng.shuffle(&mut order);
        order
    }

    /// Measures cells that differ only in their method, interleaved: every repetition
    /// runs each method once, in a random order (see [`Runner::method_order`]), so a
    /// change in the machine's speed during the group (another tenant starting a job)
    /// affects all methods alike and their ratios stay honest (hyperfine does the same
    /// across commands). Cells that differ in anything else are measured one after
    /// the other. Returns one entry per cell, `None` where the method lacks the op.
    pub fn measure_group(&mut self, cells: &[Cell<'_>]) -> Vec<Option<Record>> {
        if cells.windows(2).all(|w| same_shape(&w[0], &w[1])) {
            self.measure_interleaved(cells)
        } else {
            cells
                .iter()
                .flat_map(|c| self.measure_interleaved(std::slice::from_ref(c)))
                .collect()
        }
    }

    fn measure_interleaved(&mut self, cells: &[Cell<'_>]) -> Vec<Option<Record>> {
        let mut g = self.group_begin(cells);
        let total = g.total;
        self.group_reps(cells, &mut g, 0..total);
        self.group_finish(cells, g)
    }

    /// Measures many groups (each: cells that differ only in their method) in
    /// `rounds` passes over the whole list. Each pass runs a share of every group's
    /// repetitions, on freshly mapped buffers.
    ///
    /// Why: measured one group after another, a group's repetitions span a few
    /// milliseconds, so a burst of a neighbour's load on a shared host lands entirely on a
    /// few groups and moves their medians. Spread over passes, every group samples the
    /// whole experiment's duration, and a burst touches a share of each group's samples,
    /// which the median absorbs. Fresh buffers each pass put the data on new physical
    /// pages: a hot copy's speed can depend on where its pages landed, and a median over
    /// several placements is what repeats.
    ///
    /// `tick(k)` reports `k` cells done in a pass. Groups whose cells differ in more
    /// than the method are measured cell by cell in each pass.
    pub fn measure_rounds(
        &mut self,
        groups: &[Vec<Cell<'_>>],
        rounds: usize,
        tick: impl FnMut(usize),
    ) -> Vec<Vec<Option<Record>>> {
        self.measure_rounds_extending(groups, rounds, |_, _| 0, tick)
    }

    /// [`Runner::measure_rounds`], then more repetitions for the groups that ask for
    /// them: after the passes, `extend(cells, so_far)` sees each group's samples and
    /// returns how many timed repetitions to add (0: none). The groups that asked get
    /// them in `rounds` further passes, on fresh buffers as before, and are asked
    /// again, at most [`MAX_EXTENSIONS`] times. Every method of a group gets the same
    /// repetitions, interleaved as before, so samples stay paired by repetition; the
    /// records are built once, from all of them, and name how many timed repetitions
    /// the first passes made (`reps_extended_from`).
    ///
    /// Why: some cells are much noisier than others (a 64 MiB "hot" cell depends on
    /// how much of the shared LLC the neighbours leave), and a fixed count sized for
    /// them would waste time on the steady ones.
    pub fn measure_rounds_extending(
        &mut self,
        groups: &[Vec<Cell<'_>>],
        rounds: usize,
        mut extend: impl FnMut(&[Cell<'_>], &SoFar<'_>) -> usize,
        mut tick: impl FnMut(usize),
    ) -> Vec<Vec<Option<Record>>> {
        // Split mixed groups into single cells, remembering where each came from.
        let mut units: Vec<(usize, Vec<Cell<'_>>)> = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            if g.windows(2).all(|w| same_shape(&w[0], &w[1])) {
                units.push((i, g.clone()));
            } else {
                units.extend(g.iter().map(|c| (i, vec![c.clone()])));
            }
        }
        let mut runs: Vec<GroupRun> = units.iter().map(|(_, u)| self.group_begin(u)).collect();
        let rounds = rounds.max(1);
        // Per unit, the first repetition this phase runs (None: none): phase 0 runs
        // every repetition, each later phase the ones `extend` asked for.
        let mut from: Vec<Option<usize>> = vec![Some(0); units.len()];
        for phase in 0..=MAX_EXTENSIONS {
            if phase > 0 {
                let mut any = false;
                for (((_, u), g), f) in units.iter().zip(runs.iter_mut()).zip(from.iter_mut()) {
                    let after = u.first().map_or(After::Nothing, |c| c.after);
                    let reps = g.timed_reps();
                    let so_far = SoFar {
                        reps,
                        first: g.first_reps.unwrap_or(reps),
                        totals: &g.timed_totals(after),
                    };
                    let e = extend(u, &so_far);
                    *f = (e > 0).then_some(g.total);
                    if e > 0 {
                        // The added repetitions, and one more state check after them
                        // (the last index of a group is a check).
                        g.first_reps.get_or_insert(reps);
                        g.total += e + 1;
                        any = true;
                    }
                }
                if !any {
                    break;
                }
            }
            for r in 0..rounds {
                if phase > 0 || r > 0 {
                    self.pool = Pool::default();
                }
                for (((_, u), g), f) in units.iter().zip(runs.iter_mut()).zip(&from) {
                    let Some(s) = *f else { continue };
                    let span = g.total - s;
                    self.group_reps(u, g, s + span * r / rounds..s + span * (r + 1) / rounds);
                    tick(u.len());
                }
            }
        }
        let mut out: Vec<Vec<Option<Record>>> = groups.iter().map(|_| Vec::new()).collect();
        for ((i, u), g) in units.iter().zip(runs) {
            out[*i].extend(self.group_finish(u, g));
        }
        out
    }

    /// Everything a group needs before its first repetition.
    fn group_begin(&mut self, cells: &[Cell<'_>]) -> GroupRun {
        let entries: Vec<Option<Entry>> = cells
            .iter()
            .map(|c| {
                let e = c.method.entry(c.op);
                if e.is_none() {
                    self.warnings.push(Warning::MethodSkipped {
                        method: c.method.name().into(),
                        experiment: c.experiment,
                    });
                }
                e
            })
            .collect();
        let sense = cells.iter().map(|c| c.method.senses_contention).collect();
        let Some(c) = cells.first() else {
            return GroupRun::default();
        };
        let n = c.size;
        let copy_like = matches!(c.op, Op::Copy | Op::Move);
        // Cells with nothing to evict are cheap to prepare: more repetitions for the
        // same cost make their (short, noise-prone) times repeatable.
        let all_hot = c.dst == CacheState::Hot && (!copy_like || c.src == CacheState::Hot);
        let reps = if self.boost_cheap_cells && all_hot && n <= SLOT_SPAN_MAX {
            c.reps * 3
        } else {
            c.reps
        };
        // Untimed state checks: enough preparations to sample ~16 lines per region
        // (small regions yield only a few lines per probe), all but one before the
        // timed repetitions and one after them.
        let checks_n = (PROBE_LINES / probe_lines(n)).clamp(2, 8);
        let m = cells.len();
        let batch = match c.after {
            After::Nothing => batch_for(c.op, n, c.src, c.dst),
            _ => 1,
        };
        let per_sweep = calls_per_sweep(
            c.op,
            n,
            c.src,
            c.dst,
            c.after,
            slot_span(c),
            self.states.hier.l2,
        );
        GroupRun {
            entries,
            sense,
            batch,
            mix: self.size_mix.then(|| size_mix(n, batch, 0x5eed)).flatten(),
            checks_n,
            per_sweep,
            total: reps + checks_n,
            samples: vec![Vec::with_capacity(reps * per_sweep); m],
            after_samples: vec![Vec::new(); m],
            base_samples: vec![Vec::new(); m],
            verified: vec![true; m],
            checks: Vec::new(),
            background: Vec::new(),
            first_reps: None,
        }
    }

    /// Runs repetitions `reps` (indices into the group's `total`) of a group.
    fn group_reps(&mut self, cells: &[Cell<'_>], g: &mut GroupRun, reps: std::ops::Range<usize>) {
        let Some(c) = cells.first() else {
            return;
        };
        if reps.is_empty() {
            return;
        }
        let n = c.size;
        let copy_like = matches!(c.op, Op::Copy | Op::Move);
        let byte = match c.op {
            Op::Set => SET_BYTE,
            _ => 0,
        };
        // Small cells rotate over several page-aligned slots, one per repetition:
        // which physical pages (DRAM banks, cache sets) a buffer lands on differs from
        // run to run and moves small cold copies; the median over many
        // placements is what repeats (seed 002: run-to-run variability from page
        // placement).
        let span = slot_span(c);
        let slots = if span <= SLOT_SPAN_MAX { SLOTS } else { 1 };
        let span = if slots > 1 {
            span.next_multiple_of(SLOT_ALIGN)
        } else {
            span
        };
        let src_base = if copy_like {
            ensure(&mut self.pool.src, slots * span, Some(&mut self.rng)).as_ptr()
        } else {
            std::ptr::null()
        };
        let dst_base = ensure(&mut self.pool.dst, slots * span, None).as_mut_ptr();
        let app = match c.after {
            After::ReadApp { ws } => Some(self.app_chain(ws)),
            _ => None,
        };
        // After a cold state is built, each method first runs once, untimed, on a
        // small scratch buffer (see WARM_MAX).
        let cold = c.dst.is_cold() || (copy_like && c.src.is_cold());
        let warm = (cold && n <= WARM_MAX).then(|| {
            ensure(
                &mut self.pool.warm,
                2 * WARM_MAX + CANARY,
                Some(&mut self.rng),
            )
            .as_mut_ptr()
        });
        let place = |slot: usize| -> (*const u8, *mut u8, Vec<Region>) {
            let src = src_base.wrapping_add(slot * span + c.src_off);
            let dst = dst_base.wrapping_add(slot * span + c.dst_off);
            let mut regions = Vec::with_capacity(3);
            if copy_like {
                regions.push(Region {
                    ptr: src as *mut u8,
                    len: n,
                    state: c.src,
                    access: Access::Read,
                });
            }
            regions.push(Region {
                ptr: dst,
                len: n,
                state: c.dst,
                access: Access::Write,
            });
            if let Some((p, ws, _, _)) = app {
                regions.push(Region {
                    ptr: p,
                    len: ws,
                    state: CacheState::Hot,
                    access: Access::Read,
                });
            }
            (src, dst, regions)
        };
        let batch = g.batch;
        let mix = g.mix.as_ref();
        let timer = self.timer;
        let m = cells.len();
        let (checks_n, total, per_sweep) = (g.checks_n, g.total, g.per_sweep);
        for rep in reps {
            let probe_rep = rep < checks_n - 1 || rep == total - 1;
            let order = self.method_order(m);
            if probe_rep {
                let (src, dst, regions) = place(rep % slots);
                // SAFETY: `src` (n bytes), `dst` (n + CANARY bytes) and `app` lie
                // inside pool buffers owned by `self`, which nothing else touches
                // meanwhile; the regions do not overlap each other or the eviction
                // buffer.
                unsafe {
                    poison(dst, src, n, c.op, byte);
                    self.states.prepare(&regions);
                    // The background first: probing the regions would disturb it.
                    if let Some(b) = self.states.verify_background() {
                        g.background.push(b);
                    }
                    for r in &regions[..if copy_like { 2 } else { 1 }] {
                        g.checks.push(self.states.verify(r));
                    }
                }
                continue;
            }
            // The slots this repetition times: one, rotating; or a lead slot and
            // `per_sweep` timed ones, distinct, in a random order (see
            // `calls_per_sweep`).
            let picks: Vec<usize> = if per_sweep > 1 {
                let mut all: Vec<usize> = (0..slots).collect();
                self.rng.shuffle(&mut all);
                all.truncate(per_sweep + 1);
                all
            } else {
                vec![rep % slots]
            };
            let placed: Vec<(*const u8, *mut u8, Vec<Region>)> =
                picks.iter().map(|&k| place(k)).collect();
            let every: Vec<Region> = placed.iter().flat_map(|p| p.2.iter().copied()).collect();
            for &j in &order {
                let Some(entry) = g.entries[j] else { continue };
                if let Some(on) = g.sense[j] {
                    if blockmem::dispatch::sensing_contention() != on {
                        blockmem::dispatch::sense_contention(on);
                    }
                }
                // SAFETY: as above, for every placed slot; slots do not overlap.
                unsafe {
                    if let After::ReadApp { .. } = c.after {
                        // Paired baseline: same preparation, no call (one slot).
                        let (src, dst, regions) = &placed[0];
                        poison(*dst, *src, n, c.op, byte);
                        self.states.prepare(regions);
                        let (_, _, head, links) = app.expect("app buffer");
                        g.base_samples[j].push(timer.time(|| {
                            chase(head, links);
                        }));
                    }
                    for (src, dst, _) in &placed {
                        poison(*dst, *src, n, c.op, byte);
                    }
                    self.states.prepare_cold(&every);
                    for (i, (src, dst, regions)) in placed.iter().enumerate() {
                        let (src, dst) = (*src, *dst);
                        self.states.prepare_hot(regions);
                        if let (0, Some(w)) = (i, warm) {
                            // Untimed, on scratch memory: warms the method's code and
                            // metadata, not the measured data.
                            entry_call(entry, w.add(WARM_MAX), w, byte, n);
                        }
                        if i == 0 && per_sweep > 1 {
                            // The lead call: untimed (see `calls_per_sweep`).
                            entry_call(entry, dst, src, byte, n);
                            if !check_bytes(dst, src, n, c.op, byte) {
                                g.verified[j] = false;
                            }
                            continue;
                        }
                        let per_call = match mix {
                            None => {
                                timer.time(|| {
                                    for _ in 0..batch {
                                        entry_call(entry, dst, src, byte, n);
                                    }
                                }) / batch as f64
                            }
                            Some((sizes, scale)) => {
                                timer.time(|| {
                                    for &k in sizes {
                                        entry_call(entry, dst, src, byte, k);
                                    }
                                }) / batch as f64
                                    * scale
                            }
                        };
                        g.samples[j].push(per_call);
                        match c.after {
                            After::Nothing => {}
                            After::ReadDst => g.after_samples[j].push(timer.time(|| {
                                read_all(dst, n);
                            })),
                            After::ReadApp { .. } => {
                                let (_, _, head, links) = app.expect("app buffer");
                                g.after_samples[j].push(timer.time(|| {
                                    chase(head, links);
                                }));
                            }
                            After::Again { calls } => {
                                for _ in 1..calls {
                                    entry_call(entry, dst, src, byte, n);
                                }
                                g.after_samples[j].push(timer.time(|| {
                                    entry_call(entry, dst, src, byte, n);
                                }));
                            }
                        }
                        if !check_bytes(dst, src, n, c.op, byte) {
                            g.verified[j] = false;
                        }
                    }
                }
            }
        }
    }

    /// The group's records, one per cell (`None` where the method lacks the op).
    fn group_finish(&mut self, cells: &[Cell<'_>], mut g: GroupRun) -> Vec<Option<Record>> {
        let links = match cells.first().map(|c| c.after) {
            // As many links as `app_chain` builds for this working set.
            Some(After::ReadApp { ws }) => APP_LINES.min(ws / super::state::LINE),
            _ => 0,
        };
        (0..cells.len())
            .map(|j| {
                g.entries[j]?;
                let mut rec = self.finish(
                    &cells[j],
                    g.batch,
                    g.per_sweep,
                    g.mix.is_some(),
                    links,
                    g.verified[j],
                    std::mem::take(&mut g.samples[j]),
                    std::mem::take(&mut g.after_samples[j]),
                    std::mem::take(&mut g.base_samples[j]),
                    &g.checks,
                    &g.background,
                );
                if let Some(first) = g.first_reps {
                    rec.extras
                        .insert("reps_extended_from".into(), json!(first * g.per_sweep));
                }
                Some(rec)
            })
            .collect()
    }

    /// Turns one cell's samples into its record (and its warnings).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        c: &Cell<'_>,
        batch: usize,
        per_sweep: usize,
        mixed: bool,
        links: usize,
        verified: bool,
        samples: Vec<f64>,
        after_samples: Vec<f64>,
        base_samples: Vec<f64>,
        checks: &[StateCheck],
        background: &[BackgroundCheck],
    ) -> Record {
        let n = c.size;
        let copy_like = matches!(c.op, Op::Copy | Op::Move);
        let name = cell_name(c);
        if !verified {
            self.warnings
                .push(Warning::VerificationFailed { cell: name.clone() });
        }
        let mut extras = Map::new();
        extras.insert("batch".into(), json!(batch));
        if per_sweep > 1 {
            extras.insert("calls_per_sweep".into(), json!(per_sweep));
        }
        if mixed {
            extras.insert("size_mix".into(), json!("3n/4..=n, scaled to n"));
        }
        if c.src_off != 0 || c.dst_off != 0 {
            extras.insert("src_offset".into(), json!(c.src_off));
            extras.insert("dst_offset".into(), json!(c.dst_off));
        }
        self.state_extras(c, &name, copy_like, checks, &mut extras);
        if let Some(b) = background.first() {
            let lat: Vec<f64> = background.iter().map(|b| b.probe_ns).collect();
            let med = super::state::median(&lat);
            let resident = self.states.hier.is_resident(med);
            extras.insert("background".into(), json!(b.kind));
            extras.insert("background_probe_ns".into(), json!(med));
            extras.insert(
                "background_check".into(),
                json!(if resident { "resident" } else { "not resident" }),
            );
            if !resident {
                self.warnings.push(Warning::BackgroundNotResident {
                    cell: name.clone(),
                    probe_ns: med,
                });
            }
        }
        let copy_sum = Summary::of(&samples);
        let (summary, all) = match c.after {
            After::ReadDst => {
                let total = call_and_read(&samples, &after_samples);
                let read = Summary::of(&after_samples);
                extras.insert("copy_median_ns".into(), json!(copy_sum.median));
                extras.insert("read_median_ns".into(), json!(read.median));
                extras.insert("copy_samples_ns".into(), json!(samples));
                extras.insert("read_samples_ns".into(), json!(after_samples));
                (Summary::of(&total), total)
            }
            After::ReadApp { ws } => {
                let after = Summary::of(&after_samples);
                let base = Summary::of(&base_samples);
                let diffs: Vec<f64> = after_samples
                    .iter()
                    .zip(&base_samples)
                    .map(|(a, b)| a - b)
                    .collect();
                let extra = Summary::of(&diffs).median;
                let per_line = extra / links.max(1) as f64;
                let base_line = base.median / links.max(1) as f64;
                let miss_penalty = (self.states.hier.probe_dram_ns - base_line).max(1.0);
                extras.insert("app_ws".into(), json!(ws));
                extras.insert("app_lines_sampled".into(), json!(links));
                extras.insert("app_extra_ns_per_line".into(), json!(per_line));
                extras.insert(
                    "app_dram_miss_fraction".into(),
                    json!((per_line / miss_penalty).clamp(0.0, 1.0)),
                );
                extras.insert("app_read_ns".into(), json!(after.median));
                extras.insert("app_base_ns".into(), json!(base.median));
                extras.insert("app_extra_ns".into(), json!(extra));
                extras.insert(
                    "app_extra_ns_per_kib".into(),
                    json!(extra / (ws as f64 / 1024.0)),
                );
                extras.insert("app_read_samples_ns".into(), json!(after_samples));
                extras.insert("app_base_samples_ns".into(), json!(base_samples));
                (copy_sum, samples)
            }
            After::Again { calls } => {
                let again = Summary::of(&after_samples);
                extras.insert("first_median_ns".into(), json!(copy_sum.median));
                extras.insert("again_median_ns".into(), json!(again.median));
                extras.insert("again_calls".into(), json!(calls));
                extras.insert("first_samples_ns".into(), json!(samples));
                (again, after_samples)
            }
            After::Nothing => (copy_sum, samples),
        };
        let median_cycles = summary.median * self.timer.ticks_per_ns;
        extras.insert("median_cycles".into(), json!(median_cycles));
        extras.insert(
            "cycles_per_byte".into(),
            json!(median_cycles / n.max(1) as f64),
        );
        if summary.n >= 5 && summary.relative_iqr() > 0.25 {
            self.warnings.push(Warning::Noisy {
                cell: name,
                rel_iqr: summary.relative_iqr(),
            });
        }
        Record {
            experiment: c.experiment.into(),
            method: c.method.name().into(),
            op: c.op.name().into(),
            size: n,
            src: if copy_like {
                c.src.name().into()
            } else {
                "none".into()
            },
            dst: c.dst.name().into(),
            reuse: match c.after {
                After::ReadDst => "read".into(),
                After::Again { .. } => "again".into(),
                _ => "none".into(),
            },
            gbps: summary.gbps(n),
            summary,
            verified,
            samples_ns: all,
            extras,
        }
    }

    fn state_extras(
        &mut self,
        c: &Cell<'_>,
        name: &str,
        copy_like: bool,
        checks: &[StateCheck],
        extras: &mut Map<String, Value>,
    ) {
        let per = if copy_like { 2 } else { 1 };
        // A region is judged by the median over all its checks: one disturbed
        // preparation (an interrupt, a neighbour's burst) should not flip the verdict.
        let regions: &[(&str, CacheState)] = if copy_like {
            &[("src", c.src), ("dst", c.dst)]
        } else {
            &[("dst", c.dst)]
        };
        for (i, (label, state)) in regions.iter().enumerate() {
            let mine: Vec<&StateCheck> = checks.iter().skip(i).step_by(per).collect();
            let probe: Vec<f64> = mine.iter().map(|k| k.probe_ns).collect();
            let med = super::state::median(&probe);
            let verdict = if mine.iter().all(|k| k.verified.is_none()) {
                "unverifiable"
            } else if self.states.hier.is_resident(med) == (*state == CacheState::Hot) {
                "verified"
            } else {
                "contradicted"
            };
            extras.insert(
                format!("{label}_probe_ns"),
                json!(super::state::median(&probe)),
            );
            extras.insert(format!("{label}_state_check"), json!(verdict));
            let misses: Vec<u64> = mine.iter().filter_map(|k| k.counted_misses).collect();
            if !misses.is_empty() {
                extras.insert(format!("{label}_probe_llc_misses"), json!(misses));
            }
            if verdict == "contradicted" {
                self.warnings.push(Warning::StateMismatch {
                    cell: name.to_string(),
                    region: label,
                    wanted: state.name(),
                    probe_ns: med,
                });
            }
            if *state == CacheState::Hot && c.size > self.states.hier.llc_effective {
                self.warnings.push(Warning::HotExceedsLlc {
                    size: c.size,
                    llc: self.states.hier.llc_effective,
                });
            }
        }
    }
}

#[inline(always)]
unsafe fn entry_call(e: Entry, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
    // SAFETY: forwarded from `measure`'s invariants.
    unsafe { e.call(dst, src, byte, n) }
}

/// Writes a destination that differs from the expected result in every byte, and the
/// canary after it.
///
/// # Safety
/// `dst` valid for `n + CANARY` writes; for copy/move, `src` valid for `n` reads.
unsafe fn poison(dst: *mut u8, src: *const u8, n: usize, op: Op, byte: u8) {
    // SAFETY: caller's contract.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, n + CANARY) };
    match op {
        Op::Copy | Op::Move => {
            // SAFETY: caller's contract.
            let s = unsafe { std::slice::from_raw_parts(src, n) };
            for (x, y) in d[..n].iter_mut().zip(s) {
                *x = !*y;
            }
        }
        Op::Set | Op::Zero => d[..n].fill(!byte),
    }
    d[n..].fill(CANARY_BYTE);
}

/// True when the destination holds exactly the expected bytes and the canary is intact.
///
/// # Safety
/// As [`poison`].
unsafe fn check_bytes(dst: *const u8, src: *const u8, n: usize, op: Op, byte: u8) -> bool {
    // SAFETY: caller's contract.
    let d = unsafe { std::slice::from_raw_parts(dst, n + CANARY) };
    let body = match op {
        // SAFETY: caller's contract.
        Op::Copy | Op::Move => d[..n] == *unsafe { std::slice::from_raw_parts(src, n) },
        Op::Set | Op::Zero => d[..n].iter().all(|&x| x == byte),
    };
    body && d[n..].iter().all(|&x| x == CANARY_BYTE)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lab::state::Hierarchy;

    /// A runner with a fixed, small eviction buffer (no LLC measurement), for tests.
    pub(crate) fn small_runner() -> Runner {
        let timer = Timer::calibrate(std::time::Duration::from_millis(2));
        let hier = Hierarchy::measure(&timer, Some(4 << 20));
        Runner::new(StateBuilder::new(hier, timer))
    }

    fn cell<'a>(m: &'a Method, op: Op, n: usize) -> Cell<'a> {
        Cell {
            experiment: "test",
            method: m,
            op,
            size: n,
            src: CacheState::Hot,
            dst: CacheState::Clean,
            src_off: 3,
            dst_off: 5,
            after: After::Nothing,
            reps: 3,
        }
    }

    #[test]
    fn broken_method_is_caught_by_verification() {
        let mut r = small_runner();
        let m = Method::broken();
        let rec = r.measure(&cell(&m, Op::Copy, 1000)).unwrap();
        assert!(!rec.verified);
        assert!(r.warnings.has_errors());
        assert!(r.warnings.lines()[0].contains("WRONG RESULT"));
    }

    #[test]
    fn a_group_interleaves_methods_and_still_catches_the_broken_one() {
        let mut r = small_runner();
        let (good, bad, setter) = (Method::auto(), Method::broken(), Method::libc().unwrap());
        let mut cells = vec![cell(&good, Op::Copy, 3000), cell(&bad, Op::Copy, 3000)];
        let recs = r.measure_group(&cells);
        assert_eq!(recs.len(), 2);
        let (a, b) = (recs[0].as_ref().unwrap(), recs[1].as_ref().unwrap());
        assert!(a.verified && !b.verified);
        assert_eq!((a.method.as_str(), b.method.as_str()), ("auto", "broken"));
        assert_eq!(a.samples_ns.len(), b.samples_ns.len());
        // A cell differing in more than the method is measured on its own.
        cells.push(cell(&setter, Op::Set, 100));
        let recs = r.measure_group(&cells);
        assert_eq!(recs.len(), 3);
        assert!(recs[2].as_ref().unwrap().verified);
        // broken has no set entry: None, not a panic.
        assert!(r.measure(&cell(&bad, Op::Set, 100)).is_none());
    }

    #[test]
    fn real_methods_verify_for_every_op() {
        let mut r = small_runner();
        for m in Method::all() {
            for op in Op::ALL {
                if let Some(rec) = r.measure(&cell(&m, op, 777)) {
                    assert!(rec.verified, "{} {}", m.name(), op.name());
                    // Hot source, clean destination: several calls per sweep.
                    let per = calls_per_sweep(
                        op,
                        777,
                        CacheState::Hot,
                        CacheState::Clean,
                        After::Nothing,
                        4096,
                        r.states.hier.l2,
                    );
                    assert!(per > 1);
                    assert_eq!(rec.extras["calls_per_sweep"], per);
                    assert_eq!(rec.summary.n, 3 * per);
                    assert_eq!(rec.samples_ns.len(), 3 * per);
                }
            }
        }
        assert!(!r.warnings.has_errors());
    }

    #[test]
    fn reuse_and_pollution_records_carry_their_parts() {
        let mut r = small_runner();
        let m = Method::auto();
        let mut c = cell(&m, Op::Copy, 4096);
        c.after = After::ReadDst;
        let rec = r.measure(&c).unwrap();
        assert_eq!(rec.reuse, "read");
        let (cp, rd) = (
            rec.extra_f64("copy_median_ns").unwrap(),
            rec.extra_f64("read_median_ns").unwrap(),
        );
        assert!(cp >= 0.0 && rd >= 0.0);
        c.after = After::ReadApp { ws: 64 << 10 };
        let rec = r.measure(&c).unwrap();
        assert!(rec.extra_f64("app_extra_ns").is_some());
        assert!(rec.verified);
        // Called again: the record is the last call's, the first call an extra, one
        // call per preparation; a broken method is still caught.
        c.after = After::Again { calls: 2 };
        let rec = r.measure(&c).unwrap();
        assert_eq!(rec.reuse, "again");
        assert_eq!(rec.extras["again_calls"], 2);
        assert_eq!(
            rec.summary.median,
            rec.extra_f64("again_median_ns").unwrap()
        );
        assert!(rec.extra_f64("first_median_ns").unwrap() >= 0.0);
        assert!(rec.extras.get("calls_per_sweep").is_none());
        assert_eq!(rec.samples_ns.len(), c.reps);
        assert!(rec.verified);
        let bad = Method::broken();
        let mut b = cell(&bad, Op::Copy, 4096);
        b.after = After::Again { calls: 2 };
        assert!(!r.measure(&b).unwrap().verified);
    }

    #[test]
    fn rounds_keep_every_group_its_samples_order_and_verdict() {
        let mut r = small_runner();
        let (good, bad, libc) = (Method::auto(), Method::broken(), Method::libc().unwrap());
        let mut reuse = cell(&good, Op::Copy, 4096);
        reuse.after = After::ReadDst;
        let mut app = cell(&libc, Op::Copy, 2048);
        app.after = After::ReadApp { ws: 64 << 10 };
        let groups = vec![
            vec![cell(&good, Op::Copy, 3000), cell(&bad, Op::Copy, 3000)],
            // A mixed group is split, but its records come back in place.
            vec![cell(&libc, Op::Set, 100), cell(&good, Op::Zero, 70_000)],
            vec![reuse],
            vec![app],
            vec![cell(&bad, Op::Set, 100)],
        ];
        let mut ticks = 0;
        let out = r.measure_rounds(&groups, 4, |k| ticks += k);
        // Every cell once per pass (a split group's cells each count).
        assert_eq!(ticks, 4 * 7);
        assert_eq!(out.len(), groups.len());
        let rec = |g: usize, j: usize| out[g][j].as_ref().unwrap();
        assert_eq!(out[0].len(), 2);
        assert!(rec(0, 0).verified && !rec(0, 1).verified);
        assert_eq!(
            (rec(1, 0).op.as_str(), rec(1, 1).op.as_str()),
            ("set", "zero")
        );
        assert!(rec(1, 0).verified && rec(1, 1).verified);
        assert_eq!(rec(2, 0).reuse, "read");
        assert!(rec(3, 0).extra_f64("app_extra_ns").is_some());
        assert!(out[4][0].is_none());
        // The repetitions split over passes add up to what the cell asked for, times
        // the calls each preparation serves.
        let per = |rec: &Record| {
            rec.extras
                .get("calls_per_sweep")
                .map_or(1, |v| v.as_u64().unwrap())
        };
        for (g, j) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (3, 0)] {
            let rec = rec(g, j);
            assert_eq!(rec.summary.n as u64, 3 * per(rec), "group {g} cell {j}");
        }
        // The pollution cell keeps one call per preparation; the 3000-byte copy does not.
        assert_eq!(per(rec(3, 0)), 1);
        assert!(per(rec(0, 0)) > 1);
        // More passes than repetitions is fine too.
        let out = r.measure_rounds(&groups[..1], 50, |_| {});
        let rec = out[0][0].as_ref().unwrap();
        assert_eq!(rec.summary.n as u64, 3 * per(rec));
        assert!(r.warnings.has_errors());
    }

    #[test]
    fn extended_groups_get_paired_repetitions_and_say_so() {
        let mut r = small_runner();
        let (a, b) = (Method::auto(), Method::libc().unwrap());
        let mut read = cell(&a, Op::Copy, 3000);
        read.after = After::ReadDst;
        let mut read_b = read.clone();
        read_b.method = &b;
        let groups = vec![
            vec![cell(&a, Op::Copy, 3000), cell(&b, Op::Copy, 3000)],
            vec![read, read_b],
            vec![cell(&a, Op::Zero, 100)],
        ];
        // Group 0: two more repetitions once; group 1: one more each time it is
        // asked (so until the cap); group 2: none.
        let mut asked = [0usize; 3];
        let out = r.measure_rounds_extending(
            &groups,
            2,
            |cells, so_far| {
                let g = match (cells[0].op, cells[0].after) {
                    (Op::Zero, _) => 2,
                    (_, After::ReadDst) => 1,
                    _ => 0,
                };
                asked[g] += 1;
                // What the callback sees: every cell's samples, paired, and the
                // repetitions so far.
                assert_eq!(so_far.totals.len(), cells.len());
                assert!(so_far
                    .totals
                    .iter()
                    .all(|t| t.len() == so_far.totals[0].len()));
                assert!(so_far.totals[0].len() >= so_far.reps);
                assert_eq!(so_far.first, 3);
                match g {
                    0 if so_far.reps == 3 => 2,
                    1 => 1,
                    _ => 0,
                }
            },
            |_| {},
        );
        // Every group is asked before each possible extension while any group wants
        // one (group 1 always does, so MAX_EXTENSIONS times).
        assert_eq!(asked[0], MAX_EXTENSIONS);
        assert_eq!(asked[1], MAX_EXTENSIONS);
        assert_eq!(asked[2], MAX_EXTENSIONS);
        let per = |rec: &Record| {
            rec.extras
                .get("calls_per_sweep")
                .map_or(1, |v| v.as_u64().unwrap())
        };
        for (r0, r1) in out[0].iter().zip(&out[1]) {
            let rec = r0.as_ref().unwrap();
            assert!(rec.verified);
            assert_eq!(rec.summary.n as u64, 5 * per(rec));
            assert_eq!(
                rec.extra_f64("reps_extended_from"),
                Some(3.0 * per(rec) as f64)
            );
            let rec = r1.as_ref().unwrap();
            assert!(rec.verified);
            assert_eq!(rec.reuse, "read");
            assert_eq!(rec.summary.n as u64, (3 + MAX_EXTENSIONS as u64) * per(rec));
            assert_eq!(rec.samples_ns.len(), rec.summary.n);
            assert!(rec.extras.get("read_samples_ns").is_some());
        }
        let rec = out[2][0].as_ref().unwrap();
        assert_eq!(rec.summary.n as u64, 3 * per(rec));
        assert!(rec.extras.get("reps_extended_from").is_none());
        assert!(!r.warnings.has_errors());
    }

    #[test]
    fn method_order_is_a_fresh_permutation_with_varying_neighbours() {
        let mut r = small_runner();
        let m = 6;
        let mut follows = vec![vec![0usize; m]; m];
        let mut firsts = vec![0usize; m];
        for _ in 0..600 {
            let o = r.method_order(m);
            let mut seen = o.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..m).collect::<Vec<_>>());
            firsts[o[0]] += 1;
            for w in o.windows(2) {
                follows[w[1]][w[0]] += 1;
            }
        }
        // Every method runs first sometimes, and follows every other method: no
        // method always has the same predecessor (the carry-over a rotation had).
        assert!(firsts.iter().all(|&f| f > 50), "{firsts:?}");
        for (j, row) in follows.iter().enumerate() {
            for (i, &c) in row.iter().enumerate() {
                assert!(i == j || c > 40, "{j} after {i}: {c} times; {follows:?}");
            }
        }
        assert!(r.method_order(0).is_empty());
    }

    #[test]
    fn size_mix_stays_within_the_cell_and_ends_on_its_size() {
        assert!(size_mix(4096, 1, 1).is_none());
        assert!(size_mix(4, 64, 1).is_none());
        for (n, batch) in [(8, 1024), (256, 256), (4096, 16), (5000, 14), (16 << 10, 4)] {
            let (sizes, scale) = size_mix(n, batch, 7).unwrap();
            assert_eq!(sizes.len(), batch);
            assert_eq!(*sizes.last().unwrap(), n);
            assert!(sizes.iter().all(|&k| k >= n - n / 4 && k <= n));
            let mean = sizes.iter().sum::<usize>() as f64 / batch as f64;
            assert!((scale * mean - n as f64).abs() < 1e-6);
            assert!((1.0..=4.0 / 3.0).contains(&scale));
            // Deterministic: every kernel of a group replays the same sizes.
            assert_eq!(size_mix(n, batch, 7).unwrap().0, sizes);
        }
        // Large batches really mix: more than a handful of distinct sizes.
        let (sizes, _) = size_mix(4096, 16, 7).unwrap();
        let mut d = sizes.clone();
        d.sort_unstable();
        d.dedup();
        assert!(d.len() > 8, "{sizes:?}");
    }

    #[test]
    fn several_calls_per_sweep_only_for_small_cold_cells() {
        use CacheState::*;
        let l2 = 2 << 20;
        let n = |op, n, s, d, after| calls_per_sweep(op, n, s, d, after, 4096, l2);
        // A 4 KiB cold copy: 15 timed calls after the lead one (16 slots).
        assert_eq!(n(Op::Copy, 4096, Clean, Clean, After::Nothing), SLOTS - 1);
        assert_eq!(n(Op::Copy, 4096, Hot, Dirty, After::ReadDst), SLOTS - 1);
        // Bounded by an eighth of the L2 with the lead call: 256 KiB / 32 KiB - 1.
        assert_eq!(n(Op::Copy, 16 << 10, Clean, Hot, After::Nothing), 7);
        assert_eq!(n(Op::Set, 16 << 10, Hot, Clean, After::Nothing), 15);
        assert_eq!(n(Op::Zero, 64 << 10, Hot, Dirty, After::Nothing), 3);
        assert_eq!(n(Op::Copy, 64 << 10, Clean, Clean, After::Nothing), 1);
        // All hot: no sweep to share (a set's source state does not count).
        assert_eq!(n(Op::Copy, 4096, Hot, Hot, After::Nothing), 1);
        assert_eq!(n(Op::Set, 4096, Clean, Hot, After::Nothing), 1);
        // The pollution baseline is paired with a single call.
        let app = After::ReadApp { ws: 1 << 20 };
        assert_eq!(n(Op::Copy, 4096, Clean, Clean, app), 1);
        // Slots that do not rotate.
        let big = calls_per_sweep(Op::Copy, 64, Clean, Clean, After::Nothing, 1 << 20, l2);
        assert_eq!(big, 1);
    }

    #[test]
    fn batches_only_hot_small_cells() {
        use CacheState::*;
        assert_eq!(batch_for(Op::Copy, 32, Hot, Hot), BATCH_MAX);
        assert_eq!(batch_for(Op::Copy, 1024, Hot, Hot), 64);
        assert_eq!(batch_for(Op::Copy, 4096, Hot, Hot), 16);
        assert_eq!(batch_for(Op::Copy, 5000, Hot, Hot), 14);
        assert_eq!(batch_for(Op::Copy, 32, Clean, Hot), 1);
        assert_eq!(batch_for(Op::Copy, 32, Hot, Dirty), 1);
        assert_eq!(batch_for(Op::Zero, 32, Clean, Hot), BATCH_MAX);
        assert_eq!(batch_for(Op::Copy, 1 << 20, Hot, Hot), 1);
        assert_eq!(batch_for(Op::Copy, 0, Hot, Hot), BATCH_MAX);
    }
}
