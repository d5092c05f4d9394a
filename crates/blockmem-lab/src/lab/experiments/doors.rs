//! `doors`: small calls as C programs make them, through each door into blockmem,
//! against the system library through the same door.
//!
//! A C driver (`c/doors.c`, compiled into the binary and built with the system's `cc`
//! when the experiment runs) replays the same calls through one door:
//!
//! * `shim`: plain `memcpy`/`memmove`/`memset` calls, bound by the dynamic linker to
//!   glibc or, with `LD_PRELOAD`, to `libblockmem_preload.so`: what an unmodified
//!   program gets;
//! * `shim-mt`: the same in a driver that has started and joined a thread first, as a
//!   multithreaded program runs: there the shim's 1-15-byte copies keep to the lines
//!   their bytes lie in, which costs them on mixed sizes (`docs/METHOD.md`);
//! * `fnptr`: the same functions through function pointers (qsort-style callers,
//!   languages that take `memcpy`'s address);
//! * `cabi`: `blockmem_copy`/`_move`/`_set` from `libblockmem_ffi.so` with
//!   `BLOCKMEM_HINT_AUTO` passed as their fourth argument, as a caller passing hints
//!   meets them (a call with the constant `BLOCKMEM_HINT_AUTO` written in C compiles,
//!   through the header's macros, to the `cmem` functions);
//! * `cmem`: `blockmem_memcpy`/`_memmove`/`_memset`, the same library in the C
//!   functions' own shape (no hint argument to set).
//!
//! Through the C ABI's doors glibc is measured with the very same loops: a library
//! built from `c/doors_libc.c` and preloaded into the driver binds the C ABI's names to
//! glibc's `memcpy`/`memmove`/`memset` (IFUNCs, so the driver's GOT holds glibc's
//! addresses and no instruction is added). Where the caller's code lies moves a call's
//! time (`docs/METHOD.md`), so every door runs one binary on both sides and only the
//! call's target differs.
//!
//! Workloads: every fleetbench distribution (hot: 65,536 calls drawn over one buffer's
//! worth of addresses, a sequence too long for the branch predictor to learn; cold:
//! calls scattered over 64 MiB, before each sample every line they
//! touch flushed and the cache filled by a read sweep, the lab's `clean` state), and fixed
//! sizes from 1 B to 4 KiB: repeated in a tight loop on hot buffers, the case where a
//! predictable branch ladder is at its best; the same loop with each call's first and
//! last bytes read back before the next call starts (its addresses depend on them),
//! which measures a call's latency to usable bytes, as a program that copies or sets
//! bytes and then uses them meets it; and cold, 4,000 calls of the size at addresses scattered as the
//! cold distributions' calls (at any byte offset), which shows what each size class
//! costs when its lines come from memory.
//!
//! Each driver process measures one implementation through one door over all
//! workloads; processes alternate (libc first in even rounds, blockmem first in odd
//! ones), so a neighbour's burst of load falls on both. The ratio of a cell is the
//! median over rounds of libc's time over blockmem's in the same round. Each of a
//! round's samples runs another of the driver's 16 copies of the replay loop (the
//! loop's placement moves a call's time by up to 15% either way; `docs/METHOD.md`),
//! the same copies on both sides. Every call is checked once (in the first round's
//! processes, each call through the next copy of the loop), untimed, against a byte
//! loop with guard bytes on both sides, and the driver refuses to run if `memcpy` is
//! not bound to the object it is meant to measure.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use blockmem::kernel::Op;
use serde_json::json;

use super::fleet::{self, Distribution};
use super::{fmt_size, Ctx};
use crate::lab::report::Table;
use crate::lab::runner::Record;
use crate::lab::stats::{paired_median_ratio, paired_ratio_ci, Summary};

/// Name in JSON and on the command line.
pub const NAME: &str = "doors";

/// The driver's source and the C ABI header it includes.
const DRIVER_C: &str = include_str!("../../../c/doors.c");
/// The library that gives the C ABI's names to the system library's functions,
/// preloaded into the driver when it measures glibc through the `cabi` and `cmem` doors.
const LIBC_NAMES_C: &str = include_str!("../../../c/doors_libc.c");
const HEADER: &str = include_str!("../../../../blockmem-ffi/include/blockmem.h");

/// The C ABI library the `cabi` and `cmem` doors link.
pub const FFI_NAME: &str = "libblockmem_ffi.so";
/// Its SONAME.
const FFI_SONAME: &str = "libblockmem.so.0";
/// How to build it.
pub const FFI_BUILD: &str = "cargo build --release -p blockmem-ffi";

/// Sizes of the fixed-size loops: powers of two, the sizes halfway between them from 48
/// bytes (a size class's middle, not only its edges), and 2,112 bytes, the largest copy
/// the C entries run inline where glibc's memmove still runs its vector loop (on CPUs
/// with FSRM), just past the sets' inline 2 KiB.
pub const FIXED: [usize; 21] = [
    1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 2112, 3072,
    4096,
];

/// Calls drawn per distribution on a hot working set, replayed once per sample. A
/// short sequence replayed over and over is learnt by the branch predictor, which a
/// program's calls are not; from about 64K calls on, the time no longer falls with the
/// length (`docs/results/epyc-zen4-2vcpu/doors`).
pub(crate) const HOT_CALLS: usize = 1 << 16;
/// Calls drawn per distribution on a cold working set (each a cache miss or more,
/// whatever the branches do; every sample follows a flush of their lines and an
/// eviction sweep).
const COLD_CALLS: usize = 4000;
/// Bytes of each arena the cold calls are scattered over. Every line they touch is
/// flushed before each sample, so the span sets only how many pages (TLB entries,
/// DRAM rows) the calls spread over; a constant keeps one run's cold workload the
/// next one's, where twice the measured effective LLC moves with the measurement.
const COLD_SPAN: usize = 64 << 20;
/// Identical calls per fixed-size loop pass (the loop is meant to be predictable).
const FIXED_CALLS: usize = 1000;
/// Bytes of each arena the read-back calls start in: with the bytes a call writes,
/// within the L1 data cache beside the source's (both at most 12 KiB + 4 KiB).
const CHAIN_SPAN: usize = 12 << 10;

/// How a fixed-size job's calls are laid out, in JSON (`loop`) and in the tables: the
/// same call over and over on hot buffers, calls of one size scattered cold, or the
/// same call over and over with each one's first and last bytes read back before the
/// next starts.
pub(crate) const LOOP_HOT: &str = "fixed size";
pub(crate) const LOOP_COLD: &str = "one size, scattered";
pub(crate) const LOOP_CHAIN: &str = "fixed size, read back";

/// The doors, in report order. `shim-mt` is the shim's door in a process that has had
/// a second thread, where its 1-15-byte copies keep to the lines their bytes lie in.
pub const DOORS: [&str; 5] = ["shim", "shim-mt", "cabi", "cmem", "fnptr"];

/// The two implementations a door reaches.
const IMPLS: [&str; 2] = ["libc", "auto"];

/// One workload of the job file.
struct Job {
    name: String,
    op: Op,
    cold: bool,
    /// Each call waits for the first and last bytes the call before wrote (`c/doors.c`,
    /// `chain`).
    chain: bool,
    /// A fixed-size job's layout (`LOOP_HOT`, `LOOP_COLD`, `LOOP_CHAIN`); `None` for a
    /// distribution.
    layout: Option<&'static str>,
    reps: u32,
    calls: Vec<fleet::Call>,
    mean: f64,
}

fn op_code(op: Op) -> u32 {
    match op {
        Op::Copy => 0,
        Op::Move => 1,
        Op::Set | Op::Zero => 2,
    }
}

/// The workloads: each distribution hot and cold, then each fixed size for copy and
/// set, hot (the same call over and over) and cold (`COLD_CALLS` calls of that size at
/// addresses drawn over the cold span, at any byte offset in a line, as the cold
/// distributions' calls). Offsets leave 64 bytes before every destination for the
/// guard bytes.
fn jobs(dists: &[Distribution], cold_span: usize, quick: bool) -> Vec<Job> {
    let mut out = Vec::new();
    for d in dists {
        let max = d.max_size() + 256;
        for cold in [false, true] {
            let span = if cold { cold_span.max(4 * max) } else { max };
            let count = if cold { COLD_CALLS } else { HOT_CALLS };
            let mut calls = fleet::draw(d, count, span, 0xd0025);
            for c in &mut calls {
                c.dst += 64;
                c.src += 64;
            }
            let mean = calls.iter().map(|c| c.n).sum::<usize>() as f64 / calls.len() as f64;
            out.push(Job {
                name: d.name.clone(),
                op: d.op,
                cold,
                chain: false,
                layout: None,
                reps: 1,
                calls,
                mean,
            });
        }
    }
    let fixed: &[usize] = if quick { &FIXED[4..] } else { &FIXED };
    for op in [Op::Copy, Op::Set] {
        for &n in fixed {
            let one = fleet::Call {
                n,
                src: 4096,
                dst: 4096,
                overlap: false,
            };
            out.push(Job {
                name: format!("fixed_{n}"),
                op,
                cold: false,
                chain: false,
                layout: Some(LOOP_HOT),
                reps: if n >= 1024 { 8 } else { 32 },
                calls: vec![one; FIXED_CALLS],
                mean: n as f64,
            });
        }
    }
    // Read back: the calls at addresses drawn over CHAIN_SPAN (any byte offset), so
    // that no call writes where the one before did (a load can take a store's bytes
    // from the same address in ways it cannot from another).
    let mut rng = fastrand::Rng::with_seed(0xc4a1);
    for op in [Op::Copy, Op::Set] {
        for &n in fixed {
            out.push(Job {
                name: format!("chain_{n}"),
                op,
                cold: false,
                chain: true,
                layout: Some(LOOP_CHAIN),
                reps: if n >= 1024 { 8 } else { 32 },
                calls: scattered(n, FIXED_CALLS, CHAIN_SPAN, &mut rng),
                mean: n as f64,
            });
        }
    }
    let mut rng = fastrand::Rng::with_seed(0xc01d);
    for op in [Op::Copy, Op::Set] {
        for &n in fixed {
            out.push(Job {
                name: format!("cold_{n}"),
                op,
                cold: true,
                chain: false,
                layout: Some(LOOP_COLD),
                reps: 1,
                calls: scattered(n, COLD_CALLS, cold_span - n - 128, &mut rng),
                mean: n as f64,
            });
        }
    }
    out
}

/// `count` calls of `n` bytes, each source and destination at its own offset drawn
/// from 64 to 64 + `span` (any byte offset; the 64 bytes before leave room for the
/// guard bytes).
fn scattered(n: usize, count: usize, span: usize, rng: &mut fastrand::Rng) -> Vec<fleet::Call> {
    (0..count)
        .map(|_| fleet::Call {
            n,
            src: 64 + rng.usize(..span),
            dst: 64 + rng.usize(..span),
            overlap: false,
        })
        .collect()
}

/// Writes the job file (format in `c/doors.c`); returns the arena size it needs.
fn write_jobs(path: &Path, jobs: &[Job]) -> anyhow::Result<u64> {
    const SRC_IN_DST: u64 = 1 << 63;
    let arena = jobs
        .iter()
        .flat_map(|j| &j.calls)
        .map(|c| c.dst.max(c.src) + c.n + 128)
        .max()
        .unwrap_or(4096) as u64;
    let mut b = Vec::new();
    b.extend_from_slice(b"BMDOORS1");
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&(jobs.len() as u32).to_le_bytes());
    b.extend_from_slice(&arena.to_le_bytes());
    for j in jobs {
        let mut name = [0u8; 32];
        let bytes = j.name.as_bytes();
        name[..bytes.len().min(31)].copy_from_slice(&bytes[..bytes.len().min(31)]);
        b.extend_from_slice(&name);
        for v in [op_code(j.op), j.cold as u32, j.reps, j.chain as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&(j.calls.len() as u64).to_le_bytes());
        for c in &j.calls {
            let src = c.src as u64 | if c.overlap { SRC_IN_DST } else { 0 };
            for v in [c.n as u64, src, c.dst as u64] {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    std::fs::write(path, b).with_context(|| format!("writing {}", path.display()))?;
    Ok(arena)
}

/// The shared objects the doors need, beside the running binary.
struct Objects {
    shim: PathBuf,
    ffi_dir: PathBuf,
}

fn objects() -> anyhow::Result<Objects> {
    let exe = std::env::current_exe().context("cannot find the running binary")?;
    let dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    let shim = crate::run_cmd::locate_shim(None, std::env::var_os("BLOCKMEM_PRELOAD_PATH"), &dir)?;
    for d in [dir.clone(), dir.join("../lib")] {
        if d.join(FFI_NAME).is_file() {
            return Ok(Objects { shim, ffi_dir: d });
        }
    }
    bail!(
        "{FFI_NAME} not found beside {} (the `cabi` and `cmem` doors link it).\nBuild it with\n  {FFI_BUILD}",
        exe.display()
    )
}

/// The driver and the library that measures glibc through the C ABI's doors.
struct Driver {
    exe: PathBuf,
    libc_names: PathBuf,
}

/// Compiles the driver and `c/doors_libc.c` into `dir`. `-fno-builtin` keeps every
/// call a real call; without alignment of loops and jumps, each loop copy's padding
/// moves its loop.
fn build_drivers(dir: &Path, ffi_dir: &Path) -> anyhow::Result<Driver> {
    std::fs::write(dir.join("doors.c"), DRIVER_C)?;
    std::fs::write(dir.join("doors_libc.c"), LIBC_NAMES_C)?;
    std::fs::write(dir.join("blockmem.h"), HEADER)?;
    // The library's SONAME is `libblockmem.so.0` (what an installed copy is called);
    // the driver finds it through a link in its own directory.
    std::os::unix::fs::symlink(ffi_dir.join(FFI_NAME), dir.join(FFI_SONAME))?;
    let exe = dir.join("doors");
    let libc_names = dir.join("libdoors-libc.so");
    cc(&[
        "-O2",
        "-fno-builtin",
        "-fno-align-loops",
        "-fno-align-jumps",
        "-o",
        &exe.to_string_lossy(),
        &dir.join("doors.c").to_string_lossy(),
        &format!("-I{}", dir.display()),
        &ffi_dir.join(FFI_NAME).to_string_lossy(),
        &format!("-Wl,-rpath,{}", dir.display()),
        "-ldl",
        "-pthread",
    ])?;
    cc(&[
        "-O2",
        "-fno-builtin",
        "-shared",
        "-fPIC",
        "-o",
        &libc_names.to_string_lossy(),
        &dir.join("doors_libc.c").to_string_lossy(),
    ])?;
    Ok(Driver { exe, libc_names })
}

/// Runs the C compiler (`$CC`, else `cc`) with `args`.
fn cc(args: &[&str]) -> anyhow::Result<()> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(args)
        .output()
        .with_context(|| format!("cannot run the C compiler '{cc}' (set CC to another)"))?;
    if !out.status.success() {
        bail!(
            "building the doors driver failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// One driver process: per job, (verified, ns per call samples). `check`: verify every
/// call first (else the verdict is `None`); `layout`: the copy of the replay loop the
/// first sample runs (the driver takes it modulo its number of copies, `LAYOUTS` in
/// `c/doors.c`; sample `s` runs `layout + s`).
#[allow(clippy::too_many_arguments)]
fn run_driver(
    driver: &Driver,
    jobs_file: &Path,
    door: &str,
    imp: &str,
    shim: &Path,
    evict: usize,
    check: bool,
    layout: usize,
) -> anyhow::Result<Vec<(Option<bool>, Vec<f64>)>> {
    let mut cmd = Command::new(&driver.exe);
    cmd.arg(jobs_file)
        .arg(match door {
            "shim" => "plain",
            "shim-mt" => "plain-mt",
            other => other,
        })
        .arg(if imp == "libc" { "libc" } else { "blockmem" })
        .arg(SAMPLES.to_string())
        .arg(evict.to_string())
        .arg(if check { "1" } else { "0" })
        .arg(layout.to_string())
        .env_remove("LD_PRELOAD")
        .env_remove("BLOCKMEM_TRACE")
        .env_remove("BLOCKMEM_STATS")
        .env_remove("BLOCKMEM_DISABLE");
    // blockmem through the shim's doors: the shim preloaded; glibc through the C ABI's
    // doors: the C ABI's names bound to glibc's functions (`c/doors_libc.c`).
    if matches!(door, "shim" | "shim-mt" | "fnptr") {
        if imp != "libc" {
            cmd.env("LD_PRELOAD", shim);
        }
    } else if imp == "libc" {
        cmd.env("LD_PRELOAD", &driver.libc_names);
    }
    // `blockmem lab --mask-features`: the shim and the C ABI library run as the smaller
    // host too (glibc follows `GLIBC_TUNABLES`, inherited from the lab's environment).
    let mask: Vec<&str> = blockmem::cpu::masked().names().collect();
    if mask.is_empty() {
        cmd.env_remove("BLOCKMEM_MASK_FEATURES");
    } else {
        cmd.env("BLOCKMEM_MASK_FEATURES", mask.join(","));
    }
    let out = cmd.output().context("cannot run the doors driver")?;
    if !out.status.success() {
        bail!(
            "the doors driver ({door}, {imp}) failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() != 5 {
                bail!("the doors driver printed an unexpected line: {l}");
            }
            let samples = f[4]
                .split(',')
                .map(|v| v.parse::<f64>().context("bad sample from the doors driver"))
                .collect::<anyhow::Result<Vec<f64>>>()?;
            let verdict = match f[3] {
                "-" => None,
                v => Some(v == "1"),
            };
            Ok((verdict, samples))
        })
        .collect()
}

/// Timed samples per job in each driver process.
const SAMPLES: usize = 3;

/// Runs the experiment.
pub fn run(ctx: &mut Ctx<'_>) -> anyhow::Result<Vec<Record>> {
    let objs = objects()?;
    let tmp = tempfile::tempdir().context("cannot create a scratch directory")?;
    let driver = build_drivers(tmp.path(), &objs.ffi_dir)?;
    // Every shipped distribution, or the files `--fleet-dir` names (all of them).
    let given = ctx.fleet_dir.as_deref().map(|p| (p, "--fleet-dir"));
    let dists = fleet::load(given, false)?;
    let llc = ctx.runner.states.hier.llc_effective;
    let jobs = jobs(&dists, COLD_SPAN, ctx.quick);
    let jobs_file = tmp.path().join("jobs.bin");
    write_jobs(&jobs_file, &jobs)?;
    let rounds = ctx.reps.unwrap_or(if ctx.quick { 5 } else { 11 });
    let evict = llc * 3 / 2;
    let pb = ctx.bar(rounds * DOORS.len() * IMPLS.len(), NAME, "driver runs");
    // per door, per impl, per job: (verified, per-round medians, all samples)
    let mut got = vec![vec![vec![(true, Vec::new(), Vec::new()); jobs.len()]; 2]; DOORS.len()];
    for round in 0..rounds {
        for (d, door) in DOORS.iter().enumerate() {
            for k in 0..2 {
                let i = if round % 2 == 0 { k } else { 1 - k };
                pb.set_message(format!("{door} {}", IMPLS[i]));
                // Every call is verified in the first round, each through another copy
                // of the loop: later rounds run the same code on the same calls (and
                // verifying 65,536 calls per distribution every time would take most
                // of the experiment's time).
                let check = round == 0;
                let layout = round * SAMPLES;
                let res = run_driver(
                    &driver, &jobs_file, door, IMPLS[i], &objs.shim, evict, check, layout,
                )?;
                if res.len() != jobs.len() {
                    bail!(
                        "the doors driver reported {} jobs of {}",
                        res.len(),
                        jobs.len()
                    );
                }
                for (j, (ok, mut s)) in res.into_iter().enumerate() {
                    let cell = &mut got[d][i][j];
                    if let Some(ok) = ok {
                        cell.0 &= ok;
                    }
                    cell.2.extend_from_slice(&s);
                    cell.1.push(crate::lab::stats::median_of(&mut s));
                }
                pb.inc(1);
            }
        }
    }
    pb.finish_and_clear();
    let mut out = Vec::new();
    for (d, door) in DOORS.iter().enumerate() {
        for (j, job) in jobs.iter().enumerate() {
            let (libc, auto) = (&got[d][0][j], &got[d][1][j]);
            let ratio = paired_median_ratio(&libc.1, &auto.1);
            let ci = paired_ratio_ci(&libc.1, &auto.1, 0.95, 1000, 7);
            for (i, cell) in [libc, auto].into_iter().enumerate() {
                out.push(record(ctx, door, IMPLS[i], job, cell, ratio, ci));
            }
        }
    }
    Ok(out)
}

fn record(
    ctx: &mut Ctx<'_>,
    door: &str,
    method: &str,
    job: &Job,
    cell: &(bool, Vec<f64>, Vec<f64>),
    ratio: Option<f64>,
    ci: Option<(f64, f64)>,
) -> Record {
    let (verified, rounds, all) = cell;
    if !verified {
        ctx.runner
            .warnings
            .push(crate::lab::warn::Warning::VerificationFailed {
                cell: format!("doors {door} {} {}", job.name, method),
            });
    }
    // Times are per call: the record's samples are the per-round medians.
    let s = Summary::of(rounds);
    let mut extras = serde_json::Map::new();
    extras.insert("door".into(), json!(door));
    let fixed = job.layout.is_some();
    if let Some(layout) = job.layout {
        extras.insert("loop".into(), json!(layout));
    } else {
        extras.insert("workload".into(), json!(job.name));
        extras.insert(
            "working_set".into(),
            json!(if job.cold { "cold" } else { "hot" }),
        );
        extras.insert("mean_size".into(), json!(job.mean));
    }
    extras.insert("calls".into(), json!(job.calls.len()));
    extras.insert("ns_per_call".into(), json!(s.median));
    extras.insert("all_samples_ns".into(), json!(all));
    if let Some(r) = ratio {
        extras.insert("ratio_libc_over_auto".into(), json!(r));
    }
    if let Some((lo, hi)) = ci {
        extras.insert("ratio_ci95".into(), json!([lo, hi]));
    }
    let st = if job.cold { "clean" } else { "hot" };
    let size = if fixed {
        job.calls[0].n
    } else {
        job.mean.round() as usize
    };
    Record {
        experiment: NAME.into(),
        method: method.into(),
        op: job.op.name().into(),
        size,
        src: if job.op == Op::Set {
            "none".into()
        } else {
            st.into()
        },
        dst: st.into(),
        reuse: "none".into(),
        gbps: s.gbps(size),
        summary: s,
        verified: *verified,
        samples_ns: rounds.clone(),
        extras,
    }
}

/// The ratio of a cell (libc over auto), from the auto record.
fn ratio_of(r: &Record) -> Option<(f64, Option<(f64, f64)>)> {
    ratio_with_ci(r, "ratio_libc_over_auto", "ratio_ci95")
}

/// A ratio and its interval, from a record's extras `ratio` and `ci` (`[lo, hi]`).
pub(super) fn ratio_with_ci(
    r: &Record,
    ratio: &str,
    ci: &str,
) -> Option<(f64, Option<(f64, f64)>)> {
    let x = r.extra_f64(ratio)?;
    let ci = r.extras.get(ci).and_then(|v| {
        let a = v.as_array()?;
        Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?))
    });
    Some((x, ci))
}

/// `r [lo–hi]`, or `r` without an interval.
pub(super) fn fmt_ratio((r, ci): (f64, Option<(f64, f64)>)) -> String {
    match ci {
        Some((lo, hi)) => format!("{r:.2} [{lo:.2}–{hi:.2}]"),
        None => format!("{r:.2}"),
    }
}

/// Geometric mean.
fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// A table of ratios: one row per label with each column's record (the `auto` one,
/// which carries the cell's ratio), and a last row of each column's geometric mean.
fn ratio_table(
    title: &str,
    first: &str,
    cols: Vec<String>,
    rows: Vec<(String, Vec<Option<&Record>>)>,
) -> Table {
    let mut header = vec![first.to_string()];
    header.extend(cols);
    let mut t = Table::new(
        title,
        "> 1: blockmem faster; [95% interval over rounds]; shim = plain calls into LD_PRELOAD, shim-mt = the same in a process that has had a second thread, cabi = blockmem_copy/_set, cmem = blockmem_memcpy/_memset, fnptr = calls through a pointer",
        header,
    );
    let mut per_col: Vec<Vec<f64>> = vec![Vec::new(); t.header.len() - 1];
    for (label, cells) in rows {
        let mut row = vec![label];
        for (c, cell) in cells.into_iter().enumerate() {
            match cell.and_then(ratio_of) {
                Some(x) => {
                    per_col[c].push(x.0);
                    row.push(fmt_ratio(x));
                }
                None => row.push("–".into()),
            }
        }
        t.rows.push(row);
    }
    let mut g = vec!["geometric mean".to_string()];
    g.extend(
        per_col
            .iter()
            .map(|v| geomean(v).map_or("–".into(), |x| format!("{x:.2}"))),
    );
    t.rows.push(g);
    t
}

/// Four tables: distributions (rows) × door and working set, and fixed sizes × door and
/// op, hot, cold and hot with each call's bytes read back before the next call; each
/// cell libc's time over auto's with its 95% interval, and a geometric mean.
pub fn tables(recs: &[Record]) -> Vec<Table> {
    let autos: Vec<&Record> = recs
        .iter()
        .filter(|r| r.experiment == NAME && r.method == "auto")
        .collect();
    let text = |r: &Record, k: &str| r.extra_str(k).to_string();
    // Distributions, by name.
    let cols: Vec<(&str, &str)> = DOORS
        .iter()
        .flat_map(|&d| ["hot", "cold"].map(|w| (d, w)))
        .collect();
    let mut names: Vec<String> = autos
        .iter()
        .map(|r| text(r, "workload"))
        .filter(|w| !w.is_empty())
        .collect();
    names.sort();
    names.dedup();
    let rows = names
        .iter()
        .map(|name| {
            let of = |r: &Record| text(r, "workload") == *name;
            let mean = autos
                .iter()
                .find(|r| of(r))
                .and_then(|r| r.extra_f64("mean_size"));
            let label = format!(
                "{name} ({})",
                fmt_size(mean.unwrap_or(0.0).round() as usize)
            );
            let cells = cols
                .iter()
                .map(|&(d, w)| {
                    autos
                        .iter()
                        .copied()
                        .find(|r| of(r) && text(r, "door") == d && text(r, "working_set") == w)
                })
                .collect();
            (label, cells)
        })
        .collect();
    let dist = ratio_table(
        "doors: fleet distributions, libc time / blockmem time per door",
        "distribution (mean size)",
        cols.iter().map(|(d, w)| format!("{d} {w}")).collect(),
        rows,
    );
    let hot = sizes_table(
        &autos,
        LOOP_HOT,
        "doors: one size repeated in a tight loop (hot), libc time / blockmem time",
    );
    let cold = sizes_table(
        &autos,
        LOOP_COLD,
        "doors: one size at scattered addresses (cold), libc time / blockmem time",
    );
    let chain = sizes_table(
        &autos,
        LOOP_CHAIN,
        "doors: one size in a tight loop, each call's bytes read back before the next (hot, latency), libc time / blockmem time",
    );
    vec![dist, hot, cold, chain]
}

/// Fixed sizes (rows) × door and op, for the records whose `loop` is `tag`.
fn sizes_table(autos: &[&Record], tag: &str, title: &str) -> Table {
    let cols: Vec<(&str, &str)> = DOORS
        .iter()
        .flat_map(|&d| ["copy", "set"].map(|o| (d, o)))
        .collect();
    let looped: Vec<&Record> = autos
        .iter()
        .copied()
        .filter(|r| r.extra_str("loop") == tag)
        .collect();
    let mut sizes: Vec<usize> = looped.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let rows = sizes
        .iter()
        .map(|&n| {
            let cells = cols
                .iter()
                .map(|&(d, o)| {
                    looped
                        .iter()
                        .copied()
                        .find(|r| r.size == n && r.extra_str("door") == d && r.op == o)
                })
                .collect();
            (fmt_size(n), cells)
        })
        .collect();
    ratio_table(
        title,
        "size",
        cols.iter().map(|(d, o)| format!("{d} {o}")).collect(),
        rows,
    )
}
