//! One streaming pass over every record of every file: totals, size classes,
//! alignment, 4 KiB aliasing, probe agreement, destination fate, the exact size
//! distribution, the per-process totals `BLOCKMEM_STATS` would print, and per thread
//! the bytes streamed and the bytes written through the cache that polluted it.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use serde::Serialize;

use super::fate::{FateTracker, Fates, NO_GROUP, NO_SITE};
use super::format::{CallOp, Header, Record, RegionProbe, TraceFile, Trailer};
use super::observed::{IoTotals, Observed};
use super::sites::{Resolver, Sites};

/// Calls, bytes and cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Calls.
    pub calls: u64,
    /// Bytes.
    pub bytes: u64,
    /// TSC cycles (timer overhead subtracted per call).
    pub cycles: u64,
}

impl Counts {
    // Saturating: the counts come from a file, which may claim any size or time.
    pub(crate) fn add(&mut self, n: u64, cycles: u64) {
        self.calls = self.calls.saturating_add(1);
        self.bytes = self.bytes.saturating_add(n);
        self.cycles = self.cycles.saturating_add(cycles);
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &Counts) {
        self.calls = self.calls.saturating_add(o.calls);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.cycles = self.cycles.saturating_add(o.cycles);
    }
}

/// Seed 004 Table 7's size categories (the seeds: docs/SEEDS.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeKind {
    /// A non-zero multiple of 4096 bytes.
    FullPages,
    /// 2048, 1024, 512 or 256 bytes: half to a sixteenth of a page.
    PageFragment,
    /// Anything else.
    Irregular,
}

impl SizeKind {
    /// All, in table order.
    pub const ALL: [SizeKind; 3] = [
        SizeKind::FullPages,
        SizeKind::PageFragment,
        SizeKind::Irregular,
    ];

    /// Classifies a size.
    pub fn of(n: u64) -> SizeKind {
        if n >= 4096 && n.is_multiple_of(4096) {
            SizeKind::FullPages
        } else if matches!(n, 256 | 512 | 1024 | 2048) {
            SizeKind::PageFragment
        } else {
            SizeKind::Irregular
        }
    }

    /// Table label.
    pub fn label(self) -> &'static str {
        match self {
            SizeKind::FullPages => "full page(s)",
            SizeKind::PageFragment => "page fragment (1/2..1/16)",
            SizeKind::Irregular => "irregular",
        }
    }
}

/// Size classes there are (0 B, then up to 2^0 … 2^64).
pub const CLASSES: usize = 66;

/// Size class: 0 for empty calls, else `k + 1` with `2^(k-1) < n <= 2^k` (seed 003
/// Table 2's rows: "up to the given size, larger than the previous row").
pub fn size_class(n: u64) -> u32 {
    if n == 0 {
        0
    } else {
        // ceil(log2 n) + 1
        64 - (n - 1).leading_zeros() + 1
    }
}

/// The upper bound of a size class.
pub fn class_max(class: u32) -> u64 {
    if class == 0 {
        0
    } else {
        1u64 << (class - 1).min(63)
    }
}

/// The largest power of two dividing `addr`, at most 64 (64: line-aligned).
pub fn alignment(addr: u64) -> u64 {
    if addr == 0 {
        64
    } else {
        (addr & addr.wrapping_neg()).min(64)
    }
}

/// Index of an alignment in `[1, 2, 4, …, 64]`.
fn align_index(addr: u64) -> usize {
    alignment(addr).trailing_zeros() as usize
}

/// The 4 KiB-aliasing bins: `(dst - src) mod 4096`. 1–31 is where `rep movsb` is
/// many times slower (`blockmem::arch::x86_64::rep_movsb`).
pub const ALIAS_BINS: [(u64, u64, &str); 8] = [
    (0, 0, "0 (same page offset)"),
    (1, 31, "1–31"),
    (32, 63, "32–63"),
    (64, 255, "64–255"),
    (256, 1023, "256–1023"),
    (1024, 3071, "1024–3071"),
    (3072, 4031, "3072–4031"),
    (4032, 4095, "4032–4095"),
];

fn alias_bin(dst: u64, src: u64) -> usize {
    let d = dst.wrapping_sub(src) & 4095;
    ALIAS_BINS
        .iter()
        .position(|&(lo, hi, _)| d >= lo && d <= hi)
        .unwrap_or(0)
}

/// Seed 003 Table 2's rows: blocks up to this many bytes (and above the previous row);
/// the last row is everything larger than 64 KiB.
pub const PROBE_ROWS: [u64; 11] = [
    128,
    256,
    512,
    1024,
    2048,
    4096,
    8192,
    16384,
    32768,
    65536,
    u64::MAX,
];

/// Agreement of the first-line probe with the block's sampled state, for one region.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Agreement {
    /// First line and block agree (both cached or both uncached).
    pub agree: u64,
    /// They disagree.
    pub disagree: u64,
    /// Block neither cached (> 60% of its probed lines) nor uncached (< 40%): not
    /// counted, as in seed 003.
    pub ambiguous: u64,
    /// No line besides the first to probe (the block fits one or two lines).
    pub single_line: u64,
    /// Blocks whose sampled state was cached (of agree + disagree).
    pub block_cached: u64,
}

impl Agreement {
    fn add(&mut self, p: &RegionProbe, hit_max: u32) {
        if p.lines == 0 {
            self.single_line += 1;
            return;
        }
        let frac = f64::from(p.cached) / f64::from(p.lines);
        let block = if frac > 0.6 {
            true
        } else if frac < 0.4 {
            false
        } else {
            self.ambiguous += 1;
            return;
        };
        let first = p.first_cycles <= u64::from(hit_max);
        if first == block {
            self.agree += 1;
        } else {
            self.disagree += 1;
        }
        if block {
            self.block_cached += 1;
        }
    }

    /// Percent of decided blocks where the first line agreed (None: none decided).
    pub fn percent(&self) -> Option<f64> {
        let d = self.agree + self.disagree;
        (d > 0).then(|| 100.0 * self.agree as f64 / d as f64)
    }

    fn merge(&mut self, o: &Agreement) {
        self.agree += o.agree;
        self.disagree += o.disagree;
        self.ambiguous += o.ambiguous;
        self.single_line += o.single_line;
        self.block_cached += o.block_cached;
    }
}

/// One row of the probe table.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ProbeRow {
    /// Sampled blocks in the row.
    pub blocks: u64,
    /// Source regions (copy and move).
    pub src: Agreement,
    /// Destination regions.
    pub dst: Agreement,
}

/// The fleetbench-style distribution of one op family.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Distribution {
    /// Calls per exact size.
    pub sizes: BTreeMap<u64, u64>,
    /// Calls whose ranges overlap.
    pub overlapping: u64,
    /// Calls.
    pub calls: u64,
    /// Pointer alignments (sources and destinations pooled): index k counts
    /// alignment 2^k (6: 64 and more).
    pub aligns: [u64; 7],
}

/// A call kept for the libc estimate: size and offsets within a 4 KiB page.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sampled {
    /// Bytes.
    pub n: u64,
    /// Destination address mod 4096.
    pub dst_off: u64,
    /// Source address mod 4096.
    pub src_off: u64,
    /// Ranges overlap (move): source offset from the destination.
    pub overlap_delta: Option<i64>,
}

/// Calls kept per (op, size class) for the estimate.
pub const ESTIMATE_SAMPLES: usize = 64;

/// Where a kernel's stores leave the destination (from the kernel's name in the
/// header): `inline` and temporal kernels in cache, streaming ones past it; `libc`
/// (pass-through) is not known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stores {
    Temporal,
    Streamed,
    Unknown,
}

impl Stores {
    fn of(kernel: &str) -> Stores {
        match kernel {
            "libc" => Stores::Unknown,
            _ => match blockmem::KernelId::from_name(kernel) {
                Some(k) if k.streams() => Stores::Streamed,
                _ => Stores::Temporal,
            },
        }
    }
}

/// One thread of one process: its calls, and where its bytes went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadRow {
    /// Process id.
    pub pid: u32,
    /// Kernel thread id (0: not recorded, a trace older than format version 3).
    pub tid: u32,
    /// Calls.
    pub calls: u64,
    /// Bytes.
    pub bytes: u64,
    /// Bytes written by kernels with non-temporal stores (past the cache).
    pub streamed: u64,
    /// Bytes written through the cache (the inline rungs and temporal kernels).
    pub temporal: u64,
    /// Bytes passed through to libc (store class not known).
    pub libc: u64,
    /// What became of the temporal bytes' destinations (module `fate`).
    pub temporal_fates: Fates,
}

impl ThreadRow {
    /// Temporal bytes whose destination no later call read as its source within the
    /// fate window (overwritten or not seen again): cache space taken for nothing.
    pub fn polluted(&self) -> u64 {
        self.temporal_fates
            .overwritten
            .saturating_add(self.temporal_fates.not_seen_again)
    }

    /// Adds another row's counts (keeps this row's pid and tid).
    pub fn merge(&mut self, o: &ThreadRow) {
        self.calls = self.calls.saturating_add(o.calls);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.streamed = self.streamed.saturating_add(o.streamed);
        self.temporal = self.temporal.saturating_add(o.temporal);
        self.libc = self.libc.saturating_add(o.libc);
        self.temporal_fates.merge(&o.temporal_fates);
    }
}

/// Per-thread rows of one process while its records are read.
#[derive(Default)]
struct Threads {
    rows: Vec<ThreadRow>,
    index: HashMap<u32, u32>,
}

impl Threads {
    /// Counts a call of `n` bytes by `tid` whose kernel stores as `stores`; returns the
    /// fate group its destination is counted in (temporal writes only).
    fn add(&mut self, pid: u32, tid: u32, n: u64, stores: Stores) -> u32 {
        let rows = &mut self.rows;
        let i = *self.index.entry(tid).or_insert_with(|| {
            rows.push(ThreadRow {
                pid,
                tid,
                ..ThreadRow::default()
            });
            (rows.len() - 1) as u32
        });
        let r = &mut self.rows[i as usize];
        r.calls = r.calls.saturating_add(1);
        r.bytes = r.bytes.saturating_add(n);
        let class = match stores {
            Stores::Temporal => &mut r.temporal,
            Stores::Streamed => &mut r.streamed,
            Stores::Unknown => &mut r.libc,
        };
        *class = class.saturating_add(n);
        if stores == Stores::Temporal {
            i
        } else {
            NO_GROUP
        }
    }

    /// The rows, by tid, with the fates of their temporal bytes.
    fn finish(mut self, fates: &[Fates]) -> Vec<ThreadRow> {
        for (r, f) in self.rows.iter_mut().zip(fates) {
            r.temporal_fates = *f;
        }
        self.rows.sort_by_key(|r| r.tid);
        self.rows
    }
}

/// One process (one trace file).
#[derive(Clone, Debug, Serialize)]
pub struct Process {
    /// The file.
    pub file: String,
    /// Process id.
    pub pid: u32,
    /// Parent (getppid).
    pub ppid: u32,
    /// For a forked child, the pid that forked it.
    pub fork_parent: Option<u32>,
    /// The program.
    pub argv0: String,
    /// Records in the file.
    pub records: u64,
    /// Per op (copy, move, set, zero).
    pub by_op: [Counts; 4],
    /// What `BLOCKMEM_STATS` counts for this process: its own calls plus those its
    /// counters inherited through `fork` (the ancestors' calls before the fork).
    pub stats_equivalent: [Counts; 4],
    /// Cycles from start to exit (or to the last record).
    pub run_cycles: u64,
    /// TSC GHz used for this process.
    pub tsc_ghz: f64,
    /// The trailer (None: the process did not exit through `exit`).
    pub trailer: Option<Trailer>,
    /// Every N-th call probed.
    pub sample_every: u32,
    /// Parse and decode problems.
    pub warnings: Vec<String>,
}

impl Process {
    /// All ops together.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.by_op {
            t.merge(c);
        }
        t
    }
}

/// Everything the report shows.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Analysis {
    /// Per process.
    pub processes: Vec<Process>,
    /// Per op (copy, move, set, zero).
    pub by_op: [Counts; 4],
    /// Per kernel name, then per op.
    pub kernels: BTreeMap<String, [Counts; 4]>,
    /// Per op, per size class (index: the class, see [`size_class`]).
    pub classes: [Vec<Counts>; 4],
    /// Per op, seed 004 Table 7 categories (in [`SizeKind::ALL`] order).
    pub kinds: [[Counts; 3]; 4],
    /// Per op, destination alignment (index k: 2^k, 64 last).
    pub dst_align: [[u64; 7]; 4],
    /// Per op, source alignment (copy and move).
    pub src_align: [[u64; 7]; 4],
    /// Copy and move calls with destination and source at the same offset in a line.
    pub same_line_offset: u64,
    /// Copy and move calls of at least 64 bytes by `(dst - src) mod 4096` bin.
    pub alias: [u64; 8],
    /// Seed 003 Table 2 rows.
    pub probe_rows: Vec<ProbeRow>,
    /// Probe hit threshold of the (first) file, cycles.
    pub hit_max: u32,
    /// Sampled calls.
    pub sampled: u64,
    /// Destination fate per op of the writing call.
    pub fates: [Fates; 4],
    /// Watched destinations' fates per op of the writing call (page traps).
    pub observed: [Observed; 4],
    /// The program's I/O by op (the trace I/O library).
    pub io: BTreeMap<&'static str, IoTotals>,
    /// True if some file carried fate or I/O blocks (traced with the I/O library).
    pub io_traced: bool,
    /// Per thread of each process (processes in report order, threads by tid).
    pub threads: Vec<ThreadRow>,
    /// Fate window, bytes of later traffic (None: to the end of each process).
    pub fate_window: Option<u64>,
    /// Distributions: Memcpy (copy), Memmove (move), Memset (set and zero).
    pub distributions: [Distribution; 3],
    /// Total cycles of the processes' lifetimes.
    pub run_cycles: u64,
    /// Kept calls per (op, class) for the libc estimate, at `op * CLASSES + class`.
    #[serde(skip)]
    pub samples: Vec<Vec<Sampled>>,
    /// Calls per (op, class) seen (for the reservoir), indexed like `samples`.
    #[serde(skip)]
    seen: Vec<u64>,
    /// The current file's kernel counts by slot (merged by name at its end).
    #[serde(skip)]
    slot_kernels: Vec<[Counts; 4]>,
    /// Kernel slot 'libc' used: the trace is of a pass-through run.
    pub passthrough_calls: u64,
    /// The calls by call site (module `sites`).
    pub sites: Sites,
    /// Problems.
    pub warnings: Vec<String>,
}

/// Options of the analysis.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Fate window in bytes; None: each file's profile's effective LLC; `Some(0)`: no
    /// window (to the end of the process).
    pub window: Option<u64>,
}

fn process_ghz(h: &Header, t: Option<&Trailer>) -> f64 {
    if let Some(t) = t {
        let ns = t.end_ns.saturating_sub(h.start_ns);
        let cycles = t.end_tsc.saturating_sub(h.start_tsc);
        if !h.forked() && ns >= 10_000_000 {
            return cycles as f64 / ns as f64;
        }
    }
    if h.tsc_khz > 0 {
        h.tsc_khz as f64 / 1e6
    } else {
        1.0
    }
}

/// A tiny deterministic generator for the reservoir.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Analysis {
    /// Analyses `files`, which should be the files of one run (a process tree).
    pub fn run(files: &[TraceFile], opts: Options) -> Result<Analysis> {
        let mut a = Analysis {
            probe_rows: vec![ProbeRow::default(); PROBE_ROWS.len()],
            hit_max: files.first().map_or(0, |f| f.header.hit_max),
            classes: std::array::from_fn(|_| vec![Counts::default(); CLASSES]),
            samples: vec![Vec::new(); 4 * CLASSES],
            seen: vec![0; 4 * CLASSES],
            ..Analysis::default()
        };
        // Parents before children (a child's inherited counts need its parent's).
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_key(|&i| (files[i].header.start_tsc, files[i].header.pid));
        // For every file, the fork points of its children (their start TSCs).
        let parent_of: Vec<Option<usize>> = files.iter().map(|f| find_parent(files, f)).collect();
        let mut cuts: Vec<Vec<u64>> = vec![Vec::new(); files.len()];
        for (i, p) in parent_of.iter().enumerate() {
            if let Some(p) = p {
                cuts[*p].push(files[i].header.start_tsc);
            }
        }
        // (file, cut) -> the parent's own totals before the cut.
        let mut snapshots: HashMap<(usize, u64), [Counts; 4]> = HashMap::new();
        let mut processes: Vec<Option<Process>> = vec![None; files.len()];
        for &i in &order {
            let f = &files[i];
            let window = match opts.window {
                Some(0) => None,
                Some(w) => Some(w),
                None => f.header.profile.size("llc_effective").filter(|&w| w > 0),
            };
            if a.fate_window.is_none() {
                a.fate_window = window;
            }
            let mut cut_list = cuts[i].clone();
            cut_list.sort_unstable();
            let mut proc = a.process(f, window, &cut_list, |cut, totals| {
                snapshots.insert((i, cut), *totals);
            })?;
            let mut inherited = [Counts::default(); 4];
            if let Some(p) = parent_of[i] {
                let before = snapshots
                    .get(&(p, f.header.start_tsc))
                    .copied()
                    .unwrap_or_default();
                let parent_inherited = processes[p]
                    .as_ref()
                    .map(|pp: &Process| {
                        let mut x = pp.stats_equivalent;
                        for (k, c) in x.iter_mut().enumerate() {
                            c.calls = c.calls.saturating_sub(pp.by_op[k].calls);
                            c.bytes = c.bytes.saturating_sub(pp.by_op[k].bytes);
                            c.cycles = c.cycles.saturating_sub(pp.by_op[k].cycles);
                        }
                        x
                    })
                    .unwrap_or_default();
                for (k, inh) in inherited.iter_mut().enumerate() {
                    inh.merge(&before[k]);
                    inh.merge(&parent_inherited[k]);
                }
            }
            for (k, eq) in proc.stats_equivalent.iter_mut().enumerate() {
                *eq = proc.by_op[k];
                eq.merge(&inherited[k]);
            }
            processes[i] = Some(proc);
        }
        a.processes = order.iter().filter_map(|&i| processes[i].take()).collect();
        a.run_cycles = a
            .processes
            .iter()
            .fold(0u64, |t, p| t.saturating_add(p.run_cycles));
        a.sites.finish();
        Ok(a)
    }

    /// One file's pass. `on_cut(cut, totals)` gets the own totals of the calls that
    /// started before each cut.
    fn process(
        &mut self,
        f: &TraceFile,
        window: Option<u64>,
        cuts: &[u64],
        mut on_cut: impl FnMut(u64, &[Counts; 4]),
    ) -> Result<Process> {
        let h = &f.header;
        let mut by_op = [Counts::default(); 4];
        let mut fate = FateTracker::new(window.unwrap_or(u64::MAX));
        let mut next_cut = 0;
        let mut records = 0u64;
        let mut last_tsc = h.start_tsc;
        let overhead = u64::from(h.timer_overhead);
        self.slot_kernels = vec![[Counts::default(); 4]; 256];
        let mut resolver = Resolver::new(&f.mappings);
        let stores: Vec<Stores> = h.kernels.iter().map(|k| Stores::of(k)).collect();
        let mut threads = Threads::default();
        let sited = f.has_sites();
        self.sites.recorded |= sited;
        let mut it = f.records();
        for r in it.by_ref() {
            while next_cut < cuts.len() && r.tsc >= cuts[next_cut] {
                on_cut(cuts[next_cut], &by_op);
                next_cut += 1;
            }
            records += 1;
            last_tsc = last_tsc.max(r.tsc.saturating_add(r.cycles));
            let cycles = r.cycles.saturating_sub(overhead);
            by_op[r.op as usize].add(r.n, cycles);
            self.record(h, &r, cycles);
            let site = if sited {
                let i = resolver.site(&mut self.sites, r.site);
                self.sites.record(i, h, &r, cycles);
                i
            } else {
                NO_SITE
            };
            let kernel_stores = stores.get(usize::from(r.kernel)).copied();
            let group = threads.add(h.pid, r.tid, r.n, kernel_stores.unwrap_or(Stores::Unknown));
            let src = r.op.has_src().then_some(r.src);
            fate.call(r.op, site, group, r.dst, src, r.n);
        }
        while next_cut < cuts.len() {
            on_cut(cuts[next_cut], &by_op);
            next_cut += 1;
        }
        fate.finish();
        self.sites.add_fates(&fate.by_site);
        self.io_traced |= !f.watched.is_empty() || !f.io.is_empty();
        for w in &f.watched {
            self.observed[w.op as usize].add(w);
            if sited {
                let i = resolver.site(&mut self.sites, w.site);
                self.sites.watched(i, w);
            }
        }
        for c in &f.io {
            self.io.entry(c.op).or_default().add(c);
            if sited {
                let i = resolver.site(&mut self.sites, c.site);
                self.sites.io(i, c);
            }
        }
        self.threads.extend(threads.finish(&fate.by_group));
        for (slot, per_op) in std::mem::take(&mut self.slot_kernels).iter().enumerate() {
            if per_op.iter().all(|c| c.calls == 0) {
                continue;
            }
            let name = h.kernel_name(slot as u8).to_string();
            let e = self.kernels.entry(name).or_default();
            for (k, c) in per_op.iter().enumerate() {
                e[k].merge(c);
            }
        }
        for (k, fates) in fate.by_op.iter().enumerate() {
            self.fates[k].merge(fates);
        }
        let mut warnings = f.warnings.clone();
        if let Some(e) = it.error.take() {
            warnings.push(e);
        }
        let end_tsc = f.trailer.map(|t| t.end_tsc);
        let run_cycles = end_tsc.unwrap_or(last_tsc).saturating_sub(h.start_tsc);
        for (k, c) in by_op.iter().enumerate() {
            self.by_op[k].merge(c);
        }
        self.warnings.extend(warnings.iter().cloned());
        Ok(Process {
            file: f.path.display().to_string(),
            pid: h.pid,
            ppid: h.ppid,
            fork_parent: h.forked().then_some(h.fork_parent),
            argv0: h.argv0.clone(),
            records,
            by_op,
            stats_equivalent: by_op,
            run_cycles,
            tsc_ghz: process_ghz(h, f.trailer.as_ref()),
            trailer: f.trailer,
            sample_every: h.sample_every,
            warnings,
        })
    }

    /// Everything but fate and per-process totals, for one record.
    fn record(&mut self, h: &Header, r: &Record, cycles: u64) {
        let op = r.op as usize;
        if h.kernels
            .get(r.kernel as usize)
            .is_some_and(|k| k == "libc")
        {
            self.passthrough_calls += 1;
        }
        if let Some(k) = self.slot_kernels.get_mut(r.kernel as usize) {
            k[op].add(r.n, cycles);
        }
        let class = size_class(r.n);
        self.classes[op][class as usize].add(r.n, cycles);
        let kind = SizeKind::ALL
            .iter()
            .position(|&k| k == SizeKind::of(r.n))
            .unwrap_or(2);
        self.kinds[op][kind].add(r.n, cycles);
        self.dst_align[op][align_index(r.dst)] += 1;
        let fam = match r.op {
            CallOp::Copy => 0,
            CallOp::Move => 1,
            CallOp::Set | CallOp::Zero => 2,
        };
        let d = &mut self.distributions[fam];
        d.calls += 1;
        *d.sizes.entry(r.n).or_default() += 1;
        d.aligns[align_index(r.dst)] += 1;
        let overlap = r.op.has_src() && r.flag;
        if overlap {
            d.overlapping += 1;
        }
        if r.op.has_src() {
            d.aligns[align_index(r.src)] += 1;
            self.src_align[op][align_index(r.src)] += 1;
            if r.dst % 64 == r.src % 64 {
                self.same_line_offset += 1;
            }
            if r.n >= 64 {
                self.alias[alias_bin(r.dst, r.src)] += 1;
            }
        }
        if let Some(p) = r.probe {
            self.sampled += 1;
            let row = PROBE_ROWS
                .iter()
                .position(|&m| r.n <= m)
                .unwrap_or(PROBE_ROWS.len() - 1);
            let pr = &mut self.probe_rows[row];
            pr.blocks += 1;
            if let Some(s) = p.src {
                pr.src.add(&s, h.hit_max);
            }
            pr.dst.add(&p.dst, h.hit_max);
        }
        // Reservoir of calls for the libc estimate.
        let key = op * CLASSES + class as usize;
        let seen = &mut self.seen[key];
        *seen += 1;
        let s = Sampled {
            n: r.n,
            dst_off: r.dst % 4096,
            src_off: r.src % 4096,
            overlap_delta: overlap.then(|| r.src.wrapping_sub(r.dst) as i64),
        };
        let kept = &mut self.samples[key];
        if kept.len() < ESTIMATE_SAMPLES {
            kept.push(s);
        } else {
            let j = mix(*seen ^ r.tsc) % *seen;
            if (j as usize) < ESTIMATE_SAMPLES {
                kept[j as usize] = s;
            }
        }
    }

    /// All ops together.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.by_op {
            t.merge(c);
        }
        t
    }

    /// Probe agreement over every row.
    pub fn probe_total(&self) -> ProbeRow {
        let mut t = ProbeRow::default();
        for r in &self.probe_rows {
            t.blocks += r.blocks;
            t.src.merge(&r.src);
            t.dst.merge(&r.dst);
        }
        t
    }

    /// Size classes with at least one call, ascending.
    pub fn used_classes(&self) -> Vec<u32> {
        (0..CLASSES as u32)
            .filter(|&c| self.classes.iter().any(|v| v[c as usize].calls > 0))
            .collect()
    }

    /// Cycles per nanosecond to convert totals (the first process's estimate).
    pub fn ghz(&self) -> f64 {
        self.processes
            .iter()
            .max_by_key(|p| p.run_cycles)
            .map_or(1.0, |p| p.tsc_ghz)
    }
}

/// The file of the process that forked `f`: the one with that pid alive at the fork.
fn find_parent(files: &[TraceFile], f: &TraceFile) -> Option<usize> {
    if !f.header.forked() {
        return None;
    }
    let at = f.header.start_tsc;
    files
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            p.header.pid == f.header.fork_parent
                && p.header.start_tsc <= at
                && p.trailer.is_none_or(|t| t.end_tsc >= at)
        })
        .max_by_key(|(_, p)| p.header.start_tsc)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_follow_seed_003_rows() {
        assert_eq!(size_class(0), 0);
        assert_eq!(size_class(1), 1);
        assert_eq!(size_class(2), 2);
        assert_eq!(size_class(3), 3);
        assert_eq!(size_class(4), 3);
        assert_eq!(class_max(size_class(128)), 128);
        assert_eq!(class_max(size_class(129)), 256);
        assert_eq!(class_max(size_class(1)), 1);
        assert_eq!(class_max(size_class(4096)), 4096);
        assert_eq!(class_max(size_class(4097)), 8192);
    }

    #[test]
    fn table_7_kinds_and_alignment() {
        assert_eq!(SizeKind::of(4096), SizeKind::FullPages);
        assert_eq!(SizeKind::of(3 * 4096), SizeKind::FullPages);
        assert_eq!(SizeKind::of(1024), SizeKind::PageFragment);
        assert_eq!(SizeKind::of(1000), SizeKind::Irregular);
        assert_eq!(SizeKind::of(0), SizeKind::Irregular);
        assert_eq!(alignment(0x1000), 64);
        assert_eq!(alignment(0x1008), 8);
        assert_eq!(alignment(0x1001), 1);
        assert_eq!(alias_bin(0x2010, 0x1000), 1);
        assert_eq!(alias_bin(0x201f, 0x1000), 1);
        assert_eq!(alias_bin(0x2020, 0x1000), 2);
        assert_eq!(alias_bin(0x1000, 0x1000), 0);
        assert_eq!(alias_bin(0x1000, 0x1010), 7);
    }
}
