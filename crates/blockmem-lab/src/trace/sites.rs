//! Call sites: the trace's calls grouped by the code that made them, named by function
//! and `file:line` where the object has debug information, and what a hint there
//! would change.
//!
//! A record's site is the return address the shim found on the stack (format version
//! 2). The file's maps blocks (its executable mappings at start and at exit) turn it
//! into an object and an offset in the object *file*, so that the same site in two
//! processes (a forked child, a second run) is one site, and so that a hint map can
//! name it. `addr2line` resolves `offset − 1` (inside the `call` instruction) after
//! converting it to the object's virtual address with its program headers.
//!
//! Per site: calls, bytes and cycles per op, the size histogram, the source and
//! destination state the sampled probes found at the call, the destination's fate
//! (`fate`), the kernels that ran, and, for the sites that take the most time, the
//! replayed time of their calls under each hint ([`estimate`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use blockmem::profile::State;
use blockmem::{Hint, Op};
use serde::Serialize;

use super::analysis::{size_class, Counts, Sampled};
use super::fate::Fates;
use super::format::{CallOp, Header, IoCount, Mapping, Record, RegionProbe, Watched};
use super::observed::{IoTotals, Observed};

/// Calls kept per site for the replay.
pub const SITE_SAMPLES: usize = 16;
/// Sites symbolised and replayed at most (the ones with the most cycles).
pub const TOP_SITES: usize = 40;

/// What the sampled probes found in one region, counted over a site's calls.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StateCounts {
    /// Sampled calls.
    pub sampled: u64,
    /// Of those, the region was mostly cached (more than 60% of the probed lines, or
    /// the first line where the block spans one or two lines).
    pub cached: u64,
}

impl StateCounts {
    fn add(&mut self, p: &RegionProbe, hit_max: u32) {
        self.sampled += 1;
        let cached = if p.lines > 0 {
            f64::from(p.cached) > 0.6 * f64::from(p.lines)
        } else {
            p.first_cycles <= u64::from(hit_max)
        };
        self.cached += u64::from(cached);
    }

    /// Percent of sampled calls that found the region cached (None: none sampled).
    pub fn cached_percent(&self) -> Option<f64> {
        (self.sampled > 0).then(|| 100.0 * self.cached as f64 / self.sampled as f64)
    }
}

/// The replayed time of a site's calls under each hint (see [`estimate`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SiteEstimate {
    /// Replayed calls.
    pub replayed: usize,
    /// The destination was made cold before each call (else warm).
    pub dst_cold: bool,
    /// The destination was read after each call (its fate: read again).
    pub reread: bool,
    /// Median replay time per hint relative to `Auto`: (hint, ratio).
    pub ratios: Vec<(String, f64)>,
    /// Traced cycles × the best ratio: the time the best choice would have taken.
    pub best_cycles: f64,
    /// The hint of the best ratio.
    pub best: String,
}

/// One call site.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Site {
    /// The object holding the call (None: the address was in no recorded mapping).
    pub object: Option<String>,
    /// The return address as an offset in the object file (the raw address where the
    /// object is unknown).
    pub offset: u64,
    /// The calling function (debug information or symbol table).
    pub function: Option<String>,
    /// Source file and line of the call (debug information).
    pub file: Option<String>,
    /// Line of the call.
    pub line: Option<u32>,
    /// Per op (copy, move, set, zero).
    pub by_op: [Counts; 4],
    /// Calls per size class (see `analysis::size_class`).
    pub classes: BTreeMap<u32, u64>,
    /// Smallest and largest call.
    pub min_size: u64,
    /// Largest call.
    pub max_size: u64,
    /// Source state at the call (copy and move).
    pub src_state: StateCounts,
    /// Destination state at the call.
    pub dst_state: StateCounts,
    /// What became of the destination bytes (block operations).
    pub fates: Fates,
    /// What the page traps saw become of the watched destinations.
    pub observed: Observed,
    /// The program's I/O calls made here, by op.
    pub io: BTreeMap<&'static str, IoTotals>,
    /// Calls per kernel that ran.
    pub kernels: BTreeMap<String, u64>,
    /// The replay, for the sites that take the most time.
    pub estimate: Option<SiteEstimate>,
    /// Kept calls for the replay.
    #[serde(skip)]
    pub samples: Vec<Sampled>,
    #[serde(skip)]
    seen: u64,
}

impl Site {
    /// All ops together.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.by_op {
            t.merge(c);
        }
        t
    }

    /// The op with the most calls.
    pub fn main_op(&self) -> CallOp {
        CallOp::ALL
            .into_iter()
            .max_by_key(|&o| self.by_op[o as usize].calls)
            .unwrap_or(CallOp::Copy)
    }

    /// `function (file:line)`, or what is known of it.
    pub fn label(&self) -> String {
        let object = self.object.as_deref().map(|o| {
            Path::new(o)
                .file_name()
                .map_or(o.to_string(), |f| f.to_string_lossy().into_owned())
        });
        let place = match (&self.file, self.line) {
            (Some(f), Some(l)) => Some(format!("{f}:{l}")),
            _ => None,
        };
        match (&self.function, place, object) {
            (Some(func), Some(p), _) => format!("{func} ({p})"),
            (Some(func), None, Some(o)) => format!("{func} ({o}+{:#x})", self.offset),
            (None, Some(p), _) => p,
            (_, _, Some(o)) => format!("{o}+{:#x}", self.offset),
            (_, _, None) => format!("{:#x} (no mapping)", self.offset),
        }
    }

    /// Share of the destination bytes read again by a later call.
    pub fn reuse_fraction(&self) -> Option<f64> {
        if let Some(r) = self.observed.read_fraction() {
            return Some(r);
        }
        let t = self.fates.total();
        (t > 0).then(|| self.fates.used_as_source as f64 / t as f64)
    }

    fn record(&mut self, h: &Header, r: &Record, cycles: u64) {
        let t = self.total();
        if t.calls == 0 || r.n < self.min_size {
            self.min_size = r.n;
        }
        self.max_size = self.max_size.max(r.n);
        self.by_op[r.op as usize].add(r.n, cycles);
        *self.classes.entry(size_class(r.n)).or_default() += 1;
        *self
            .kernels
            .entry(h.kernel_name(r.kernel).to_string())
            .or_default() += 1;
        if let Some(p) = r.probe {
            if let Some(s) = p.src {
                self.src_state.add(&s, h.hit_max);
            }
            self.dst_state.add(&p.dst, h.hit_max);
        }
        self.seen += 1;
        let s = Sampled {
            n: r.n,
            dst_off: r.dst % 4096,
            src_off: r.src % 4096,
            overlap_delta: (r.op.has_src() && r.flag).then(|| r.src.wrapping_sub(r.dst) as i64),
        };
        if self.samples.len() < SITE_SAMPLES {
            self.samples.push(s);
        } else {
            let j = super::analysis::mix(self.seen ^ r.tsc) % self.seen;
            if let Some(slot) = self.samples.get_mut(j as usize) {
                *slot = s;
            }
        }
    }
}

/// Every site of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sites {
    /// True if at least one file recorded call sites.
    pub recorded: bool,
    /// The sites, in first-seen order until [`Sites::finish`] sorts them by cycles.
    pub list: Vec<Site>,
    #[serde(skip)]
    index: HashMap<(Option<String>, u64), u32>,
}

/// Resolves one file's raw return addresses to site numbers.
pub struct Resolver<'a> {
    maps: &'a [Mapping],
    cache: HashMap<u64, u32>,
}

impl<'a> Resolver<'a> {
    /// A resolver over one file's mappings.
    pub fn new(maps: &'a [Mapping]) -> Resolver<'a> {
        Resolver {
            maps,
            cache: HashMap::new(),
        }
    }

    /// The site number of a raw return address (new sites are added to `sites`).
    pub fn site(&mut self, sites: &mut Sites, raw: u64) -> u32 {
        if let Some(&i) = self.cache.get(&raw) {
            return i;
        }
        // The last mapping holding it: the exit block's, if a library was replaced.
        let key = match self
            .maps
            .iter()
            .rev()
            .find(|m| m.start <= raw && raw < m.end)
        {
            Some(m) => (Some(m.path.clone()), raw - m.start + m.offset),
            None => (None, raw),
        };
        let next = sites.list.len() as u32;
        let i = *sites.index.entry(key.clone()).or_insert_with(|| {
            sites.list.push(Site {
                object: key.0,
                offset: key.1,
                ..Site::default()
            });
            next
        });
        self.cache.insert(raw, i);
        i
    }
}

impl Sites {
    /// Adds one record of site `i`.
    pub fn record(&mut self, i: u32, h: &Header, r: &Record, cycles: u64) {
        if let Some(s) = self.list.get_mut(i as usize) {
            s.record(h, r, cycles);
        }
    }

    /// Adds one watched call of site `i`.
    pub fn watched(&mut self, i: u32, w: &Watched) {
        if let Some(s) = self.list.get_mut(i as usize) {
            s.observed.add(w);
        }
    }

    /// Adds one I/O block entry of site `i`.
    pub fn io(&mut self, i: u32, c: &IoCount) {
        if let Some(s) = self.list.get_mut(i as usize) {
            s.io.entry(c.op).or_default().add(c);
        }
    }

    /// Adds one process's fates by site number.
    pub fn add_fates(&mut self, by_site: &[Fates]) {
        for (s, f) in self.list.iter_mut().zip(by_site) {
            s.fates.merge(f);
        }
    }

    /// Sorts by cycles (most first) and names the top sites.
    pub fn finish(&mut self) {
        self.list
            .sort_by_key(|s| std::cmp::Reverse((s.total().cycles, s.total().calls)));
        self.index.clear();
        let mut sym = Symbolizer::default();
        for s in self.list.iter_mut().take(TOP_SITES) {
            sym.name(s);
        }
        // Sites that only do I/O have no block-operation cycles: named by their bytes.
        let mut io: Vec<&mut Site> = self
            .list
            .iter_mut()
            .skip(TOP_SITES)
            .filter(|s| !s.io.is_empty())
            .collect();
        io.sort_by_key(|s| std::cmp::Reverse(s.io.values().map(|t| t.bytes).sum::<u64>()));
        for s in io.into_iter().take(TOP_SITES) {
            sym.name(s);
        }
    }
}

/// One object opened for symbolisation.
struct Object {
    loader: addr2line::Loader,
    /// PT_LOAD segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

/// Opens each object once.
#[derive(Default)]
struct Symbolizer {
    objects: HashMap<String, Option<Object>>,
}

fn load_segments(path: &str) -> Option<Vec<(u64, u64, u64)>> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let data = std::fs::read(path).ok()?;
    let elf = object::elf::FileHeader64::<object::Endianness>::parse(&*data).ok()?;
    let endian = elf.endian().ok()?;
    let segments = elf
        .program_headers(endian, &*data)
        .ok()?
        .iter()
        .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
        .map(|p| (p.p_offset(endian), p.p_filesz(endian), p.p_vaddr(endian)))
        .collect();
    Some(segments)
}

impl Symbolizer {
    fn name(&mut self, site: &mut Site) {
        let Some(path) = site.object.clone() else {
            return;
        };
        let obj = self.objects.entry(path.clone()).or_insert_with(|| {
            Some(Object {
                segments: load_segments(&path)?,
                loader: addr2line::Loader::new(&path).ok()?,
            })
        });
        let Some(obj) = obj else { return };
        let Some(&(off, _, vaddr)) = obj
            .segments
            .iter()
            .find(|&&(o, len, _)| o <= site.offset && site.offset < o + len)
        else {
            return;
        };
        // Inside the call instruction: the return address may start the next line.
        let probe = (site.offset - off + vaddr).saturating_sub(1);
        if let Ok(mut frames) = obj.loader.find_frames(probe) {
            if let Ok(Some(f)) = frames.next() {
                site.function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|d| d.into_owned()));
                if let Some(loc) = f.location {
                    site.file = loc.file.map(|p| {
                        Path::new(p)
                            .file_name()
                            .map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
                    });
                    site.line = loc.line;
                }
            }
        }
        if site.function.is_none() {
            site.function = obj
                .loader
                .find_symbol(probe)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        }
    }
}

// ---- the replay -----------------------------------------------------------------------

/// Replays at most this many bytes per hint and repetition at one site.
const BYTES_PER_REP: u64 = 64 << 20;
/// Repetitions per hint (alternating).
const REPS: usize = 7;

/// The hints compared, by name.
pub const HINTS: [(Hint, &str); 3] = [
    (Hint::Auto, "auto"),
    (Hint::Reuse, "reuse"),
    (Hint::NoReuse, "noreuse"),
];

/// How a site's calls are replayed: cache state before, and a read of the destination
/// after when the trace saw it read again.
#[derive(Clone, Copy)]
struct Setup {
    dst_cold: bool,
    src_cold: bool,
    reread: bool,
}

fn cold(s: &StateCounts, n: u64) -> bool {
    match s.cached_percent() {
        Some(p) => p < 50.0,
        // Not sampled: large blocks are assumed cold.
        None => n >= 1 << 20,
    }
}

/// Nanoseconds of one pass over `calls` with `hint`, state prepared before each call
/// (untimed), the reread (timed) after.
fn replay_once(
    op: CallOp,
    hint: Hint,
    calls: &[Sampled],
    setup: Setup,
    bufs: (&mut [u8], &mut [u8]),
) -> f64 {
    let (dst, src) = bufs;
    let mut ns = 0.0;
    for c in calls {
        let n = c.n as usize;
        let d = dst[c.dst_off as usize..].as_mut_ptr();
        let s = src[c.src_off as usize..].as_ptr();
        // SAFETY: both buffers hold max size + 4096 bytes and the offsets are < 4096.
        unsafe {
            let prep = |p: *const u8, is_cold: bool| {
                if is_cold {
                    crate::lab::state::flush(p, n);
                } else {
                    crate::lab::state::read_lines(p, n);
                }
            };
            prep(d, setup.dst_cold);
            if op.has_src() {
                prep(s, setup.src_cold);
            }
            let t0 = Instant::now();
            match op {
                CallOp::Copy => {
                    blockmem::copy_raw(d, s, n, hint);
                }
                CallOp::Move => {
                    blockmem::move_raw(d, s, n, hint);
                }
                CallOp::Set | CallOp::Zero => {
                    blockmem::set_raw(d, 0, n, hint);
                }
            }
            if setup.reread {
                crate::lab::state::read_lines(d, n);
            }
            ns += t0.elapsed().as_secs_f64() * 1e9;
        }
    }
    ns
}

/// Replays one site (see the module docs); None if it has nothing to replay.
fn estimate_site(site: &Site) -> Option<SiteEstimate> {
    let op = site.main_op();
    let mut calls: Vec<Sampled> = Vec::new();
    let mut bytes = 0;
    for s in site
        .samples
        .iter()
        .filter(|s| s.overlap_delta.is_none() && s.n > 0)
    {
        if !calls.is_empty() && bytes + s.n > BYTES_PER_REP {
            break;
        }
        bytes += s.n;
        calls.push(*s);
    }
    let max = calls.iter().map(|c| c.n).max()? as usize;
    let setup = Setup {
        dst_cold: cold(&site.dst_state, max as u64),
        src_cold: cold(&site.src_state, max as u64),
        reread: site.reuse_fraction().is_some_and(|r| r >= 0.5),
    };
    let mut dst = vec![0x11u8; max + 4096];
    let mut src = vec![0x5au8; max + 4096];
    // A hint under which the plan picks the same kernels as `Auto` for every kept call
    // takes the same time by construction: it is not replayed (ratio 1), so that
    // replay noise cannot credit it with a saving.
    let differs: Vec<bool> = HINTS
        .iter()
        .map(|&(h, _)| {
            calls.iter().any(|c| {
                [State::Cached, State::Cold, State::Fresh]
                    .into_iter()
                    .any(|st| planned(op, c.n, h, st) != planned(op, c.n, Hint::Auto, st))
            })
        })
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); HINTS.len()];
    for rep in 0..=REPS {
        for k in 0..HINTS.len() {
            // Alternate the order every repetition; the first repetition only warms up.
            let i = if rep % 2 == 0 { k } else { HINTS.len() - 1 - k };
            if i > 0 && !differs[i] {
                continue;
            }
            let t = replay_once(op, HINTS[i].0, &calls, setup, (&mut dst, &mut src));
            if rep > 0 {
                times[i].push(t);
            }
        }
    }
    let base = crate::lab::state::median(&times[0]).max(1e-9);
    let med: Vec<f64> = times
        .iter()
        .zip(&differs)
        .enumerate()
        .map(|(i, (v, &d))| {
            if i > 0 && !d {
                base
            } else {
                crate::lab::state::median(v)
            }
        })
        .collect();
    let ratios: Vec<(String, f64)> = HINTS
        .iter()
        .zip(&med)
        .map(|((_, name), m)| (name.to_string(), m / base))
        .collect();
    let (best, ratio) = ratios
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or(("auto".into(), 1.0));
    Some(SiteEstimate {
        replayed: calls.len(),
        dst_cold: setup.dst_cold,
        reread: setup.reread,
        best_cycles: site.total().cycles as f64 * ratio,
        best,
        ratios,
    })
}

/// Replays the calls of the sites that take the most time under each hint, on the
/// host running the report: the destination (and source) made cold or warm as the
/// sampled probes found it at the call, and read after the call when its fate was to
/// be read again. Scaled like the libc estimate: traced cycles × replay ratio. Only
/// sites with calls a hint can change (`min_hint_size` and up) are replayed.
pub fn estimate(sites: &mut Sites, min_hint_size: u64) {
    for s in sites.list.iter_mut().take(TOP_SITES) {
        if s.max_size >= min_hint_size && s.total().cycles > 0 {
            s.estimate = estimate_site(s);
        }
    }
}

/// The smallest call size at which a hint can change the kernel the plan in force
/// picks (the shim's hint lookup starts there).
pub fn min_hint_size() -> u64 {
    let plan = blockmem::dispatch::plan();
    blockmem::profile::Family::ALL
        .iter()
        .map(|&f| plan.hint_matters_from(f))
        .min()
        .unwrap_or(usize::MAX) as u64
}

/// The kernel the plan in force picks for a call of `n` bytes of `op` with `hint`
/// when the destination is in `state`.
pub fn planned(op: CallOp, n: u64, hint: Hint, state: State) -> Option<blockmem::KernelId> {
    blockmem::dispatch::plan().decide(core_op(op), n as usize, hint, false, state)
}

/// True if a call of `n` bytes of `op` runs on the inline ladder, never reaching the
/// plan (nor a hint).
pub fn runs_inline(op: CallOp, n: u64) -> bool {
    n as usize <= blockmem::dispatch::inline_max(core_op(op))
}

fn core_op(op: CallOp) -> Op {
    match op {
        CallOp::Copy => Op::Copy,
        CallOp::Move => Op::Move,
        CallOp::Set => Op::Set,
        CallOp::Zero => Op::Zero,
    }
}
