//! `fleet`: throughput on the fleetbench distributions (sizes, overlap probability and
//! pointer alignment sampled from production call sites; `data/fleet/` in this crate,
//! whose `SOURCE.md` gives their origin and licence). They are compiled into the binary
//! ([`SHIPPED`]), so the experiment runs anywhere without configuration; `--fleet-dir`
//! (or `BLOCKMEM_FLEET_DIR`) replays other files in the same format instead, such as a
//! traced program's. For each distribution a fixed sequence of
//! calls is drawn once and replayed by every method, on a hot working set (65,536 calls
//! over one buffer's worth of addresses: a shorter sequence, replayed, is learnt by the
//! branch predictor, which flatters branchy code) and a cold one (calls scattered over buffers several times the
//! effective LLC, flushed before each repetition).
//!
//! Verification: every call of one untimed pass is checked on its own (copy/move
//! against a snapshot of the source, set against the byte), and after every timed
//! repetition the whole destination buffer is compared with the state a reference
//! implementation leaves.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use blockmem::kernel::Op;
use serde_json::json;

use super::{distinct, libc_median, records_of, with_ratio, Ctx, ROUNDS};
use crate::lab::mem::Buffer;
use crate::lab::method::Method;
use crate::lab::report::Table;
use crate::lab::runner::{Record, SET_BYTE};
use crate::lab::state::{Access, CacheState, Region};
use crate::lab::stats::{paired_median_ratio, Summary};

/// Name in JSON and on the command line.
pub const NAME: &str = "fleet";

/// A parsed distribution file.
#[derive(Clone, Debug)]
pub struct Distribution {
    /// File stem (`Memcpy_Fleet`).
    pub name: String,
    /// The op (`Memcpy` → copy, `Memmove` → move, `Memset` → set).
    pub op: Op,
    /// (size, probability).
    pub sizes: Vec<(usize, f64)>,
    /// Probability that source and destination overlap.
    pub overlap: f64,
    /// (alignment, probability).
    pub aligns: Vec<(usize, f64)>,
}

fn parse_line(line: &str, what: &str, origin: &str) -> anyhow::Result<Vec<(usize, f64)>> {
    line.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (x, p) = e
                .trim()
                .split_once(':')
                .with_context(|| format!("{origin}: {what} line: entry '{e}' is not x:p"))?;
            Ok((
                x.parse()
                    .with_context(|| format!("{origin}: {what} line: bad value '{x}'"))?,
                p.parse()
                    .with_context(|| format!("{origin}: {what} line: bad probability '{p}'"))?,
            ))
        })
        .collect()
}

/// `(stem, include_str!("<crate>/data/fleet/<stem>.csv"))` for each stem.
macro_rules! shipped {
    ($($stem:literal),* $(,)?) => {
        &[$((
            $stem,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/fleet/", $stem, ".csv")),
        )),*]
    };
}

/// The fleetbench distributions of `data/fleet/` (see `SOURCE.md` there), compiled in:
/// (file stem, contents). A unit test checks that this list names every CSV file of
/// the directory.
pub const SHIPPED: &[(&str, &str)] = shipped![
    "Memcpy_0",
    "Memcpy_1",
    "Memcpy_2",
    "Memcpy_3",
    "Memcpy_4",
    "Memcpy_5",
    "Memcpy_6",
    "Memcpy_7",
    "Memcpy_8",
    "Memcpy_Fleet",
    "Memmove_0",
    "Memmove_1",
    "Memmove_2",
    "Memmove_3",
    "Memmove_4",
    "Memmove_5",
    "Memmove_6",
    "Memmove_7",
    "Memmove_8",
    "Memmove_Fleet",
    "Memset_0",
    "Memset_1",
    "Memset_2",
    "Memset_3",
    "Memset_4",
    "Memset_5",
    "Memset_6",
    "Memset_7",
    "Memset_8",
    "Memset_Fleet",
];

impl Distribution {
    /// Parses a fleetbench CSV file (sizes, overlap, alignments on three lines).
    pub fn parse(path: &Path) -> anyhow::Result<Distribution> {
        let text = crate::input::read_to_string(path)?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        Distribution::parse_text(stem, &text, &path.display().to_string())
    }

    /// The shipped distribution named `stem` (`Memcpy_Fleet`), if there is one.
    pub fn shipped(stem: &str) -> Option<Distribution> {
        let (stem, text) = SHIPPED.iter().find(|(s, _)| *s == stem)?;
        Some(
            Distribution::parse_text(stem, text, &shipped_origin(stem))
                .expect("the shipped distributions parse (unit-tested)"),
        )
    }

    /// Parses the contents of a fleetbench CSV file whose stem is `name`; `origin`
    /// names it in errors.
    pub fn parse_text(name: &str, text: &str, origin: &str) -> anyhow::Result<Distribution> {
        let op = match name.split('_').next() {
            Some("Memcpy") => Op::Copy,
            Some("Memmove") => Op::Move,
            Some("Memset") => Op::Set,
            _ => bail!("{origin}: name must start with Memcpy_, Memmove_ or Memset_"),
        };
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() < 3 {
            bail!(
                "{origin}: expected 3 lines (sizes, overlap, alignments), found {}",
                lines.len()
            );
        }
        let sizes = parse_line(lines[0], "size", origin)?;
        let ov = parse_line(lines[1], "overlap", origin)?;
        let aligns = parse_line(lines[2], "alignment", origin)?;
        if sizes.is_empty() || aligns.is_empty() {
            bail!("{origin}: empty size or alignment distribution");
        }
        let overlap = ov.iter().filter(|(x, _)| *x == 1).map(|(_, p)| p).sum();
        Ok(Distribution {
            name: name.to_string(),
            op,
            sizes,
            overlap,
            aligns,
        })
    }

    /// Largest size.
    pub fn max_size(&self) -> usize {
        self.sizes.iter().map(|s| s.0).max().unwrap_or(0)
    }
}

fn sample(dist: &[(usize, f64)], rng: &mut fastrand::Rng) -> usize {
    let total: f64 = dist.iter().map(|d| d.1).sum();
    let mut x = rng.f64() * total;
    for &(v, p) in dist {
        if x < p {
            return v;
        }
        x -= p;
    }
    dist.last().map(|d| d.0).unwrap_or(0)
}

/// One call of a workload: byte offsets into the source and destination buffers (for
/// an overlapping move both are in the destination buffer).
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// Bytes.
    pub n: usize,
    /// Source offset.
    pub src: usize,
    /// Destination offset.
    pub dst: usize,
    /// Source is inside the destination buffer (overlapping move).
    pub overlap: bool,
}

/// An offset whose alignment is exactly `a` within a 64-byte line (64: line-aligned).
fn aligned_offset(a: usize, rng: &mut fastrand::Rng) -> usize {
    if a >= 64 || a == 0 {
        0
    } else {
        a * (2 * rng.usize(..64 / (2 * a)) + 1)
    }
}

/// Draws `count` calls. `span`: bytes of each buffer the calls may use (hot: just the
/// largest call; cold: scattered over a large buffer).
pub fn draw(d: &Distribution, count: usize, span: usize, seed: u64) -> Vec<Call> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let max = d.max_size() + 128;
    (0..count)
        .map(|_| {
            let n = sample(&d.sizes, &mut rng);
            let slots = (span.saturating_sub(max) / 64).max(1);
            let base = |rng: &mut fastrand::Rng| rng.usize(..slots) * 64;
            let overlap = d.op == Op::Move && n > 1 && rng.f64() < d.overlap;
            let so = aligned_offset(sample(&d.aligns, &mut rng), &mut rng);
            let dof = aligned_offset(sample(&d.aligns, &mut rng), &mut rng);
            if overlap {
                // Both ends inside the destination buffer, |dst - src| < n.
                let b = base(&mut rng) + max;
                let delta = rng.usize(1..n) as isize * if rng.bool() { 1 } else { -1 };
                let s = b + so;
                Call {
                    n,
                    src: s,
                    dst: (s as isize + delta) as usize,
                    overlap: true,
                }
            } else {
                Call {
                    n,
                    src: base(&mut rng) + so,
                    dst: base(&mut rng) + dof,
                    overlap: false,
                }
            }
        })
        .collect()
}

/// Reference semantics of one call on plain slices.
fn reference(call: &Call, op: Op, src: &[u8], dst: &mut [u8]) {
    match op {
        Op::Set | Op::Zero => {
            dst[call.dst..call.dst + call.n].fill(if op == Op::Set { SET_BYTE } else { 0 })
        }
        _ if call.overlap => dst.copy_within(call.src..call.src + call.n, call.dst),
        _ => dst[call.dst..call.dst + call.n].copy_from_slice(&src[call.src..call.src + call.n]),
    }
}

/// How the shipped distributions are named in errors.
fn shipped_origin(stem: &str) -> String {
    format!("data/fleet/{stem}.csv (built into blockmem)")
}

/// Which of `stems` to run: the three fleet-wide ones (`*_Fleet`) in quick mode, all in
/// full; in a set without `_Fleet` files (a traced program's, say) quick mode runs them
/// all. Returns indices into `stems`, in the order of their names.
fn select(stems: &[&str], quick: bool) -> Vec<usize> {
    let fleet_wide = |s: &str| s.ends_with("_Fleet");
    let only_fleet = quick && stems.iter().any(|s| fleet_wide(s));
    let mut v: Vec<usize> = (0..stems.len())
        .filter(|&i| !only_fleet || fleet_wide(stems[i]))
        .collect();
    v.sort_by_key(|&i| stems[i]);
    v
}

/// The distribution files under `path` (`--fleet-dir`): `path` alone if it is a file,
/// else its `*.csv` files chosen by [`select`].
fn files(path: &Path, quick: bool, flag: &str) -> anyhow::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let all: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| {
            format!(
                "{flag} {}: cannot list it; name a directory of Memcpy_/Memmove_/Memset_*.csv \
                 files or one such file (without it, the shipped fleetbench distributions run)",
                path.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    let stems: Vec<String> = all
        .iter()
        .map(|p| {
            p.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let stems: Vec<&str> = stems.iter().map(String::as_str).collect();
    let v: Vec<PathBuf> = select(&stems, quick)
        .into_iter()
        .map(|i| all[i].clone())
        .collect();
    if v.is_empty() {
        bail!(
            "{flag} {}: no Memcpy_/Memmove_/Memset_*.csv files in it",
            path.display()
        );
    }
    Ok(v)
}

/// The distributions to run: those under `given` (a path and the flag or variable
/// that named it), else the shipped ones ([`SHIPPED`]).
pub fn load(given: Option<(&Path, &str)>, quick: bool) -> anyhow::Result<Vec<Distribution>> {
    match given {
        Some((path, flag)) => files(path, quick, flag)?
            .iter()
            .map(|p| Distribution::parse(p))
            .collect(),
        None => {
            let stems: Vec<&str> = SHIPPED.iter().map(|(s, _)| *s).collect();
            select(&stems, quick)
                .into_iter()
                .map(|i| {
                    let (stem, text) = SHIPPED[i];
                    Distribution::parse_text(stem, text, &shipped_origin(stem))
                })
                .collect()
        }
    }
}

/// Runs every distribution × working set × method.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    // The flag wins over the variable; neither given: the shipped distributions.
    let env_dir = std::env::var_os("BLOCKMEM_FLEET_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let given = match (&ctx.fleet_dir, &env_dir) {
        (Some(p), _) => Some((p.as_path(), "--fleet-dir")),
        (None, Some(p)) => Some((p.as_path(), "BLOCKMEM_FLEET_DIR")),
        (None, None) => None,
    };
    let dists = load(given, ctx.quick)?;
    // Every method but the byte-at-a-time reference, unless named; each workload uses
    // those implementing its op.
    let methods: Vec<Method> = match ctx.methods {
        Some(m) => m.to_vec(),
        None => ctx
            .all_methods
            .iter()
            .filter(|m| m.name() != "naive")
            .cloned()
            .collect(),
    };
    // Calls per cold workload; a hot one draws HOT_CALLS, a sequence too long for the
    // branch predictor to learn (see `doors::HOT_CALLS`).
    let count = if ctx.quick { 2000 } else { 8000 };
    // Quick mode: 11 repetitions (scaled down past a 32 MiB LLC like every quick
    // experiment's), enough for a paired median of the three fleet-wide distributions;
    // `blockmem lab doors` replays every distribution through each door.
    let reps = ctx.reps.unwrap_or(if ctx.quick {
        super::quick_scaled(11, ctx.runner.states.hier.llc_effective)
    } else {
        31
    });
    let cold_span = (ctx.runner.states.hier.llc_effective * 2).clamp(16 << 20, 128 << 20);
    // Every workload is built first, then measured in ROUNDS passes over all of them
    // (each pass runs a share of every workload's repetitions): a neighbour's burst of
    // load then touches a share of each workload's samples instead of all of one's.
    struct Built {
        d: usize,
        ws: &'static str,
        calls: Vec<Call>,
        src: Buffer,
        init: Buffer,
        expect: Buffer,
        bytes: usize,
    }
    impl Built {
        fn workload<'a>(&'a self, dists: &'a [Distribution]) -> Workload<'a> {
            Workload {
                d: &dists[self.d],
                ws: self.ws,
                calls: &self.calls,
                src: &self.src,
                init: &self.init,
                expect: &self.expect,
                bytes: self.bytes,
            }
        }
    }
    let mut built: Vec<Built> = Vec::new();
    // Each workload's destination, apart: measuring writes it while `Workload`
    // borrows the rest.
    let mut dsts: Vec<Buffer> = Vec::new();
    for (i, d) in dists.iter().enumerate() {
        let max = d.max_size() + 256;
        for (ws, span) in [("hot", max), ("cold", cold_span.max(4 * max))] {
            let n = if ws == "hot" {
                super::doors::HOT_CALLS
            } else {
                count
            };
            let calls = draw(d, n, span, 0xf1ee7);
            let buf_len = span + 2 * max;
            let mut src = Buffer::new(buf_len);
            src.fill_random(&mut fastrand::Rng::with_seed(1));
            let mut init = Buffer::new(buf_len);
            init.fill_random(&mut fastrand::Rng::with_seed(2));
            let mut expect = Buffer::new(buf_len);
            expect.as_mut_slice().copy_from_slice(init.as_slice());
            for c in &calls {
                reference(c, d.op, src.as_slice(), expect.as_mut_slice());
            }
            let bytes: usize = calls.iter().map(|c| c.n).sum();
            built.push(Built {
                d: i,
                ws,
                calls,
                src,
                init,
                expect,
                bytes,
            });
            dsts.push(Buffer::new(buf_len));
        }
    }
    let per_workload: Vec<Vec<&Method>> = built
        .iter()
        .map(|b| {
            methods
                .iter()
                .filter(|m| m.supports(dists[b.d].op))
                .collect()
        })
        .collect();
    let pb = ctx.bar(
        per_workload.iter().map(Vec::len).sum::<usize>() * ROUNDS,
        NAME,
        "method passes",
    );
    let mut runs: Vec<Run> = built
        .iter()
        .zip(&per_workload)
        .zip(dsts.iter_mut())
        .map(|((b, ms), dst)| Run::new(ms, &b.workload(&dists), dst))
        .collect();
    for round in 0..ROUNDS {
        for (((b, ms), run), dst) in built
            .iter()
            .zip(&per_workload)
            .zip(runs.iter_mut())
            .zip(dsts.iter_mut())
        {
            let w = b.workload(&dists);
            pb.set_message(format!("{} {}", w.d.name, w.ws));
            let (lo, hi) = (reps * round / ROUNDS, reps * (round + 1) / ROUNDS);
            measure(ctx, run, &w, dst, lo..hi);
            pb.inc(ms.len() as u64);
        }
    }
    pb.finish_and_clear();
    let mut out = Vec::new();
    for ((b, ms), run) in built.iter().zip(&per_workload).zip(runs) {
        let w = b.workload(&dists);
        if run.entries.len() == ms.len() {
            let cold = w.ws == "cold";
            out.extend(
                ms.iter()
                    .zip(run.samples)
                    .zip(run.verified)
                    .map(|((m, samples), verified)| record(ctx, m, &w, cold, samples, verified)),
            );
        }
    }
    Ok(out)
}

/// One drawn call sequence and the buffers it runs over.
struct Workload<'a> {
    d: &'a Distribution,
    ws: &'a str,
    calls: &'a [Call],
    src: &'a Buffer,
    init: &'a Buffer,
    expect: &'a Buffer,
    bytes: usize,
}

/// Hot samples replay the sequence this many times: one replay of 65,536 small calls
/// takes a few hundred microseconds, long enough that one interrupt or a neighbour's
/// burst moves it little (a replay of 2,000 calls, ~10 µs, moved by 20%).
const HOT_REPLAYS: usize = 1;

impl Workload<'_> {
    /// Replays every call with `entry` on `dst`.
    ///
    /// # Safety
    /// `dst` is the workload's destination buffer (as long as `init`).
    #[inline(always)]
    unsafe fn replay(&self, entry: crate::lab::method::Entry, dst: *mut u8) {
        let sp = self.src.as_ptr();
        for c in self.calls {
            let from: *const u8 = if c.overlap {
                dst.wrapping_add(c.src)
            } else {
                sp.wrapping_add(c.src)
            };
            // SAFETY: `draw` keeps every call inside `span + max <= buf_len`; overlap
            // only for move, which allows it.
            unsafe { entry.call(dst.wrapping_add(c.dst), from, SET_BYTE, c.n) };
        }
    }

    /// One untimed pass checking every call on its own (copy/move against a snapshot
    /// of the source, set against the byte), then the whole buffer against `expect`.
    fn verify(&self, entry: crate::lab::method::Entry, dst: &mut Buffer) -> bool {
        let op = self.d.op;
        dst.as_mut_slice().copy_from_slice(self.init.as_slice());
        let mut ok = true;
        let mut scratch = Vec::new();
        for c in self.calls {
            let dp = dst.as_mut_ptr();
            let from: *const u8 = if c.overlap {
                dp.wrapping_add(c.src)
            } else {
                self.src.as_ptr().wrapping_add(c.src)
            };
            if op != Op::Set {
                scratch.clear();
                // SAFETY: `from..from+n` lies inside its buffer (see `replay`).
                scratch.extend_from_slice(unsafe { std::slice::from_raw_parts(from, c.n) });
            }
            // SAFETY: as in `replay`.
            unsafe { entry.call(dp.wrapping_add(c.dst), from, SET_BYTE, c.n) };
            let got = &dst.as_slice()[c.dst..c.dst + c.n];
            ok &= if op == Op::Set {
                got.iter().all(|&b| b == SET_BYTE)
            } else {
                got == &scratch[..]
            };
        }
        ok && dst.as_slice() == self.expect.as_slice()
    }
}

/// A workload's samples so far, per method (see [`measure`]).
struct Run {
    entries: Vec<crate::lab::method::Entry>,
    samples: Vec<Vec<f64>>,
    verified: Vec<bool>,
}

impl Run {
    /// Resolves the methods' entries and verifies each once, untimed, call by call.
    fn new(methods: &[&Method], w: &Workload<'_>, dst: &mut Buffer) -> Run {
        let entries: Vec<_> = methods.iter().filter_map(|m| m.entry(w.d.op)).collect();
        let verified = entries.iter().map(|&e| w.verify(e, dst)).collect();
        Run {
            samples: vec![Vec::new(); entries.len()],
            entries,
            verified,
        }
    }
}

/// Repetitions `reps` of one workload: every method replays the whole call sequence
/// once per repetition, interleaved in a random order (as the runner's groups are),
/// so a change in the machine's speed during the workload affects every method alike.
fn measure(
    ctx: &mut Ctx<'_>,
    run: &mut Run,
    w: &Workload<'_>,
    dst: &mut Buffer,
    reps: std::ops::Range<usize>,
) {
    let cold = w.ws == "cold";
    let replays = if cold { 1 } else { HOT_REPLAYS };
    let state = if cold {
        CacheState::Clean
    } else {
        CacheState::Hot
    };
    let overlapping = w.calls.iter().any(|c| c.overlap);
    let timer = ctx.runner.timer;
    let m = run.entries.len();
    for _ in reps {
        for j in ctx.runner.method_order(m) {
            let entry = run.entries[j];
            dst.as_mut_slice().copy_from_slice(w.init.as_slice());
            let regions = [
                Region {
                    ptr: w.src.as_ptr() as *mut u8,
                    len: w.src.len(),
                    state,
                    access: Access::Read,
                },
                Region {
                    ptr: dst.as_mut_ptr(),
                    len: dst.len(),
                    state,
                    access: Access::Write,
                },
            ];
            let dp = dst.as_mut_ptr();
            // SAFETY: both buffers are ours and distinct from the eviction buffer;
            // `dp` is the workload's destination.
            unsafe {
                if cold {
                    ctx.runner.states.prepare(&regions);
                } else {
                    // Hot: one untimed replay warms exactly the lines (and the code
                    // paths) the calls use.
                    w.replay(entry, dp);
                }
            }
            let t = timer.time(|| {
                for _ in 0..replays {
                    // SAFETY: as above.
                    unsafe { w.replay(entry, dp) };
                }
            });
            run.samples[j].push(t / replays as f64);
            // Replaying copies and sets from separate sources is idempotent; a move
            // sequence with overlapping calls reads what earlier calls wrote, so there
            // only a single replay from `init` must equal `expect` (every call was
            // also checked on its own by `verify`). A hot sample follows its warm-up
            // replay, so it is never the only one.
            let passes = replays + usize::from(!cold);
            if passes == 1 || !overlapping {
                run.verified[j] &= dst.as_slice() == w.expect.as_slice();
            }
        }
    }
}

fn record(
    ctx: &mut Ctx<'_>,
    m: &Method,
    w: &Workload<'_>,
    cold: bool,
    samples: Vec<f64>,
    verified: bool,
) -> Record {
    let (d, ws, calls, bytes) = (w.d, w.ws, w.calls, w.bytes);
    let timer = ctx.runner.timer;
    if !verified {
        ctx.runner
            .warnings
            .push(crate::lab::warn::Warning::VerificationFailed {
                cell: format!("fleet {} {ws} {}", d.name, m.name()),
            });
    }
    let s = Summary::of(&samples);
    let mut extras = serde_json::Map::new();
    extras.insert("workload".into(), json!(d.name));
    extras.insert("working_set".into(), json!(ws));
    extras.insert("calls".into(), json!(calls.len()));
    extras.insert(
        "replays_per_sample".into(),
        json!(if cold { 1 } else { HOT_REPLAYS }),
    );
    extras.insert("mean_size".into(), json!(bytes as f64 / calls.len() as f64));
    extras.insert("ns_per_call".into(), json!(s.median / calls.len() as f64));
    extras.insert(
        "overlapping_calls".into(),
        json!(calls.iter().filter(|c| c.overlap).count()),
    );
    extras.insert("median_cycles".into(), json!(s.median * timer.ticks_per_ns));
    let st = if cold { "clean" } else { "hot" };
    Record {
        experiment: NAME.into(),
        method: m.name().into(),
        op: d.op.name().into(),
        size: bytes,
        src: if d.op == Op::Set {
            "none".into()
        } else {
            st.into()
        },
        dst: st.into(),
        reuse: "none".into(),
        gbps: s.gbps(bytes),
        summary: s,
        verified,
        samples_ns: samples,
        extras,
    }
}

/// Per working set: ns per call for each workload and method.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let (recs, methods) = records_of(recs, NAME);
    let wl = |r: &Record| r.extra_str("workload").to_string();
    let wsf = |r: &Record| r.extra_str("working_set").to_string();
    let mut out = Vec::new();
    for ws in distinct(&recs, wsf) {
        let mut header = vec!["workload".to_string(), "mean B".to_string()];
        header.extend(methods.iter().cloned());
        let mut t = Table::new(
            format!("fleet, {ws} working set: ns per call (speed-up over libc)"),
            "fleetbench distributions; a fixed sequence of calls replayed by every method; ns per call: the median; the speed-up over libc is paired: the median over repetitions of libc's time / the method's in the same repetition (the methods run interleaved, so what a repetition shares cancels)",
            header,
        );
        for w in distinct(&recs, wl) {
            let same = |r: &Record| wl(r) == w && wsf(r) == ws;
            let Some(first) = recs.iter().find(|r| same(r)) else {
                continue;
            };
            let mut row = vec![
                w.clone(),
                format!("{:.0}", first.extra_f64("mean_size").unwrap_or(0.0)),
            ];
            let libc = recs.iter().find(|r| r.method == "libc" && same(r));
            for m in &methods {
                row.push(match recs.iter().find(|r| &r.method == m && same(r)) {
                    Some(r) => {
                        let ns = format!("{:.1}", r.extra_f64("ns_per_call").unwrap_or(f64::NAN));
                        match libc.and_then(|l| paired_median_ratio(&l.samples_ns, &r.samples_ns)) {
                            Some(x) => format!("{ns} ({x:.2}×)"),
                            None => with_ratio(ns, r.summary.median, libc_median(&recs, same)),
                        }
                    }
                    None => "-".into(),
                });
            }
            t.rows.push(row);
        }
        out.push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn parses_the_three_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "Memmove_Test.csv",
            "0:0.5,100:0.5\n0:0.9,1:0.1\n1:0.5,64:0.5\n",
        );
        let dist = Distribution::parse(&p).unwrap();
        assert_eq!(dist.op, Op::Move);
        assert_eq!(dist.sizes, vec![(0, 0.5), (100, 0.5)]);
        assert!((dist.overlap - 0.1).abs() < 1e-12);
        assert_eq!(dist.max_size(), 100);
    }

    #[test]
    fn bad_files_name_the_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "Memcpy_X.csv", "0:0.5,zz:0.5\n0:1\n1:1\n");
        let e = format!("{:#}", Distribution::parse(&p).unwrap_err());
        assert!(e.contains("Memcpy_X.csv") && e.contains("size line"), "{e}");
        let p = write(d.path(), "Other.csv", "0:1\n0:1\n1:1\n");
        assert!(Distribution::parse(&p).is_err());
    }

    #[test]
    fn drawn_calls_stay_in_bounds_and_respect_alignment() {
        let dist = Distribution {
            name: "Memmove_T".into(),
            op: Op::Move,
            sizes: vec![(1, 0.3), (1000, 0.7)],
            overlap: 0.5,
            aligns: vec![(8, 0.5), (64, 0.5)],
        };
        let span = 1 << 16;
        let calls = draw(&dist, 2000, span, 1);
        let lim = span + 2 * (dist.max_size() + 256);
        assert!(calls.iter().any(|c| c.overlap));
        for c in &calls {
            assert!(c.src + c.n <= lim && c.dst + c.n <= lim, "{c:?}");
            if c.overlap {
                assert!(c.src.abs_diff(c.dst) < c.n);
            } else {
                assert!(c.dst % 8 == 0 && c.src % 8 == 0);
            }
        }
    }

    #[test]
    fn the_shipped_distributions_parse() {
        let all = load(None, false).unwrap();
        assert_eq!(all.len(), SHIPPED.len());
        for d in &all {
            assert!(d.max_size() > 0, "{}", d.name);
        }
        let quick: Vec<String> = load(None, true)
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(quick, ["Memcpy_Fleet", "Memmove_Fleet", "Memset_Fleet"]);
        assert_eq!(Distribution::shipped("Memset_Fleet").unwrap().op, Op::Set);
        assert!(Distribution::shipped("Memcpy_Nonesuch").is_none());
    }

    /// `SHIPPED` names exactly the CSV files of `data/fleet/`, so a file added there is
    /// not silently left out of the binary.
    #[test]
    fn shipped_lists_every_file_of_the_data_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/fleet");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut listed: Vec<&str> = SHIPPED.iter().map(|(s, _)| *s).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }

    #[test]
    fn a_given_directory_replaces_the_shipped_set_and_quick_keeps_its_files() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "Memcpy_Prog.csv", "8:1\n0:1\n8:1\n");
        write(d.path(), "Memset_Prog.csv", "8:1\n0:1\n8:1\n");
        write(d.path(), "notes.txt", "not a distribution");
        let names: Vec<String> = load(Some((d.path(), "--fleet-dir")), true)
            .unwrap()
            .into_iter()
            .map(|x| x.name)
            .collect();
        assert_eq!(names, ["Memcpy_Prog", "Memset_Prog"]);
        let e = format!(
            "{:#}",
            load(Some((&d.path().join("missing"), "--fleet-dir")), true).unwrap_err()
        );
        assert!(e.contains("--fleet-dir") && e.contains("missing"), "{e}");
    }
}
