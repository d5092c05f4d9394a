//! `blockmem lab`: block memory operations measured under controlled cache states.
//!
//! The engine is reusable (the calibration command builds on it):
//! * [`timer`]: `rdtscp` timing, measured TSC frequency, overhead subtraction;
//! * [`mem`]: pre-faulted page-aligned buffers;
//! * [`state`]: hot / clean / dirty construction and verification, effective LLC;
//! * [`method`]: kernels, `libc` (from libc.so.6 itself) and `auto`;
//! * [`runner`]: prepare → time → verify for one cell, into a [`runner::Record`];
//! * [`stats`], [`warn`]: summaries and advice;
//! * [`summary`]: the answer a run leads with, `auto` against `libc` per op;
//! * [`export`], [`plot`], [`report`]: JSON/CSV/Markdown, SVG, terminal and HTML;
//! * [`experiments`]: one module per seed figure.
//!
//! Flags are parsed once by clap ([`LabArgs`]), then validated into [`LabOptions`];
//! everything after that works from the options.
//!
//! Using the engine directly (what `blockmem calibrate` does):
//!
//! ```
//! use blockmem::kernel::Op;
//! use blockmem_lab::lab::{engine, method::Method, runner::{After, Cell}, state::CacheState};
//!
//! // Clock + hierarchy; `Some(..)` skips the effective-LLC measurement; `false`: stop
//! // stamps do not wait for stores to drain.
//! let mut runner = engine(Some(8 << 20), false);
//! let (libc, portable) = (Method::libc().unwrap(), Method::kernel("portable").unwrap());
//! let cell = |m| Cell {
//!     experiment: "doc", method: m, op: Op::Copy, size: 64 << 10,
//!     src: CacheState::Hot, dst: CacheState::Clean, src_off: 0, dst_off: 0,
//!     after: After::Nothing, reps: 3,
//! };
//! // Interleaved: each repetition runs both methods, so drift hits both alike.
//! let recs = runner.measure_group(&[cell(&libc), cell(&portable)]);
//! for r in recs.into_iter().flatten() {
//!     assert!(r.verified); // every timed call's destination bytes were checked
//!     assert_eq!(r.summary.n, 3);
//!     println!("{} {:.1} GB/s, dst probe: {}", r.method, r.gbps, r.extras["dst_state_check"]);
//! }
//! ```

pub mod compare;
pub mod cpus;
pub mod experiments;
pub mod export;
pub mod load;
pub mod mem;
pub mod method;
pub mod perf;
pub mod plot;
pub mod progress;
pub mod report;
pub mod runner;
pub mod state;
pub mod stats;
pub mod summary;
pub mod timer;
pub mod warn;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use experiments::{Ctx, Experiment};
use export::{Csv, Exporter, Json, Markdown, RunData};
use method::Method;
use runner::{Record, Runner};
use state::{Hierarchy, StateBuilder};
use timer::Timer;
use warn::Warning;

fn experiment_names() -> Vec<&'static str> {
    Experiment::ALL.iter().map(|e| e.name()).collect()
}

/// Flags of `blockmem lab`.
#[derive(clap::Args, Debug, Default)]
#[command(after_help = "Experiments (the default set, in this order):\n  \
    temperature  3×3 hot/clean/dirty src×dst matrix per method (seed 000 Tables 5–6)\n  \
    sizes        32 B..64 MiB, hot/cold src×dst (seed 003 Fig. 2)\n  \
    alignment    dst offset 0..64 and 4 KiB aliasing (seed 000 Tables 3–4)\n  \
    reuse        copy, then read the destination (seed 003 Fig. 3); copy into it again in a loop\n  \
    pollution    cost of re-reading a warm working set after a copy (seed 004)\n  \
    zero         set/zero 4 KiB..256 MiB, hot and clean (seed 004); set and zero one block in a loop\n  \
    fleet        fleetbench size distributions\n  \
    neighbour    small copies and sets beside another core's line (seed 004)\n\n\
    Named only (not in the default set):\n  \
    policy       auto vs libc vs the per-cell best kernel (run `blockmem calibrate` first)\n  \
    probe        cache-probe cost and accuracy (seed 003 Table 2)\n  \
    threads      N pinned copiers' GB/s, a victim beside them, a hand-off (seed 004)\n  \
    contention   large calls alone and beside other CPUs' copies, auto-alone beside auto (seed 004)\n  \
    doors        small calls through the shim, the C ABI and pointers from a C driver\n  \
    kernel       read/pread of a cached file, pipe/socket/vmsplice/shared ring IPC (seed 000 §1, 003 Table 1)\n\n\
    `blockmem lab` alone runs the default set and writes ./blockmem-lab/index.html.\n\
    Seed NNN: the source documents, summarised in the repository's docs/SEEDS.md.")]
pub struct LabArgs {
    /// Experiments to run (default: the default set, see below).
    #[arg(value_name = "EXPERIMENT", value_parser = clap::builder::PossibleValuesParser::new(experiment_names()))]
    pub experiments: Vec<String>,
    /// Fewer sizes, methods and offsets: the default set in under 3 minutes.
    #[arg(long)]
    pub quick: bool,
    /// Write results as JSON (docs/DESIGN.md's fields, raw samples, host info).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write results as CSV.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Write the tables as Markdown.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write everything (JSON, CSV, Markdown, SVG plots, index.html) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Methods to measure, comma-separated: kernel names, `libc`, `auto` (default:
    /// each experiment's set).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Sizes to measure, comma-separated, with optional K/M/G suffix (e.g. 4K,1M).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Timed repetitions per cell (default: per experiment, fewer with --quick). A
    /// cold cell of a few KiB times several placements after each cache preparation,
    /// so it records a multiple of N samples (`calls_per_sweep` in the JSON).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: Option<u32>,
    /// Effective LLC size to assume instead of measuring it (e.g. 12M).
    #[arg(long, value_name = "SIZE")]
    pub llc: Option<String>,
    /// Directory of fleetbench-format distribution CSVs, or one such file, to replay
    /// instead of the fleetbench distributions built into blockmem (also
    /// $BLOCKMEM_FLEET_DIR); `--distribution PATH` says the same (e.g. a traced
    /// program's, from `blockmem trace --export-distribution DIR`).
    #[arg(long, visible_alias = "distribution", value_name = "PATH")]
    pub fleet_dir: Option<PathBuf>,
    /// Compare two result JSON files cell by cell instead of measuring.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Agreement tolerance for --compare (relative, e.g. 0.10).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.10)]
    pub tolerance: f64,
    /// Stop the clock when the call's last instruction has executed, with its stores
    /// possibly still in the store buffer: the cost a caller sees when it goes on with
    /// work that does not store. By default every timed region ends with `mfence`, so a
    /// sample includes the time until the call's stores are globally visible, which
    /// every method pays sooner or later and the streaming kernels pay inside the call
    /// (their `sfence`).
    #[arg(long = "no-drain-stores", action = clap::ArgAction::SetFalse)]
    pub drain_stores: bool,
    /// Drain every call's stores before the stop stamp: the default (the flag is kept
    /// for scripts written when it was not; the last of the two flags wins).
    #[arg(long = "drain-stores", overrides_with = "drain_stores")]
    pub drain_stores_default: bool,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// CPU features to mask off for the whole run, comma-separated, named as
    /// `blockmem info` prints them (e.g. `avx512f` to measure as an AVX2-only host
    /// would, `avx` for SSE2 only): kernels that need them are unavailable and `auto`
    /// runs the table of the CPU class that remains (its built-in table, unless a
    /// profile is in use).
    #[arg(long, value_name = "LIST")]
    pub mask_features: Option<String>,
}

/// The methods `--quick` measures by default: libc, `auto`, and of the kernels only
/// the widest of each store class (`calibrate::measure::widest_of_each_class`), never
/// the byte and word loops that serve as references: the quick default set's time goes
/// to the cells, not to kernels that an `avx512` or `avx2` beside them outruns.
pub fn quick_methods(all: Vec<Method>) -> Vec<Method> {
    use blockmem::kernel::KernelId;
    let ids: Vec<KernelId> = all
        .iter()
        .filter_map(|m| KernelId::from_name(m.name()))
        .filter(|k| !matches!(k, KernelId::Naive | KernelId::Portable))
        .collect();
    let keep = crate::calibrate::measure::widest_of_each_class(&ids);
    all.into_iter()
        .filter(|m| KernelId::from_name(m.name()).is_none_or(|k| keep.contains(&k)))
        .collect()
}

/// Parses `--mask-features`: feature names, comma-separated.
pub fn parse_features(list: &str) -> Result<blockmem::cpu::Features> {
    use blockmem::cpu::Features;
    let mut f = Features::NONE;
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let one = Features::from_name(name).with_context(|| {
            let known: Vec<&str> = Features::ALL_NAMED.iter().map(|(_, n)| *n).collect();
            format!(
                "--mask-features: unknown feature {name:?} (known: {})",
                known.join(", ")
            )
        })?;
        f = f.union(one);
    }
    Ok(f)
}

/// Validated options.
pub struct LabOptions {
    /// Experiments, in run order.
    pub experiments: Vec<Experiment>,
    /// True when the user named the experiments (then one that cannot run is an error;
    /// in the default set it is skipped with a warning).
    pub explicit: bool,
    /// Quick mode.
    pub quick: bool,
    /// Methods the user named.
    pub methods: Option<Vec<Method>>,
    /// Sizes the user named.
    pub sizes: Option<Vec<usize>>,
    /// Repetitions.
    pub reps: Option<usize>,
    /// Effective LLC override.
    pub llc: Option<usize>,
    /// Output files.
    pub json: Option<PathBuf>,
    /// CSV output.
    pub csv: Option<PathBuf>,
    /// Markdown output.
    pub markdown: Option<PathBuf>,
    /// Report directory.
    pub out: Option<PathBuf>,
    /// Fleet distributions.
    pub fleet_dir: Option<PathBuf>,
    /// Timed regions end with the stores drained.
    pub drain_stores: bool,
    /// No progress bars.
    pub quiet: bool,
}

/// Parses `4096`, `4K`, `4KiB`, `1M`, `1MiB`, `2G`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, mul) = [
        ("kib", 1usize << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("k", 1 << 10),
        ("m", 1 << 20),
        ("g", 1 << 30),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n.trim().to_string(), *m)))
    .unwrap_or((lower.clone(), 1));
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 4096, 4K, 1M, 64MiB)"))?;
    n.checked_mul(mul)
        .filter(|&x| x > 0)
        .ok_or_else(|| format!("size '{s}' must be positive and fit in memory"))
}

/// Largest size the lab accepts per buffer.
pub const MAX_SIZE: usize = 4 << 30;

impl LabArgs {
    /// Validates the flags into options.
    pub fn validate(&self) -> Result<LabOptions> {
        let experiments: Vec<Experiment> = if self.experiments.is_empty() {
            Experiment::DEFAULT.to_vec()
        } else {
            let mut v: Vec<Experiment> = self
                .experiments
                .iter()
                .map(|n| {
                    Experiment::from_name(n).with_context(|| format!("unknown experiment '{n}'"))
                })
                .collect::<Result<_>>()?;
            v.dedup();
            v
        };
        let methods = if self.methods.is_empty() {
            None
        } else {
            let mut v = Vec::new();
            for n in &self.methods {
                v.push(Method::by_name(n.trim()).map_err(|e| anyhow::anyhow!("--methods: {e}"))?);
            }
            Some(v)
        };
        let sizes = if self.sizes.is_empty() {
            None
        } else {
            let v: Vec<usize> = self
                .sizes
                .iter()
                .map(|s| parse_size(s).map_err(|e| anyhow::anyhow!("--sizes: {e}")))
                .collect::<Result<_>>()?;
            if let Some(big) = v.iter().find(|&&n| n > MAX_SIZE) {
                bail!("--sizes: {big} bytes is more than the lab's limit of 4 GiB per buffer");
            }
            Some(v)
        };
        let llc = match &self.llc {
            None => None,
            Some(s) => {
                let n = parse_size(s).map_err(|e| anyhow::anyhow!("--llc: {e}"))?;
                if n < 64 << 10 {
                    bail!("--llc: {n} bytes is smaller than any last-level cache; give e.g. --llc 12M");
                }
                Some(n)
            }
        };
        if !(self.tolerance > 0.0 && self.tolerance < 10.0) {
            bail!(
                "--tolerance: {} is not a fraction like 0.10",
                self.tolerance
            );
        }
        let out = self.out.clone().or_else(|| {
            (self.experiments.is_empty() && self.json.is_none() && self.csv.is_none())
                .then(|| PathBuf::from("blockmem-lab"))
        });
        Ok(LabOptions {
            experiments,
            explicit: !self.experiments.is_empty(),
            quick: self.quick,
            methods,
            sizes,
            reps: self.reps.map(|r| r as usize),
            llc,
            json: self.json.clone(),
            csv: self.csv.clone(),
            markdown: self.markdown.clone(),
            out,
            fleet_dir: self.fleet_dir.clone(),
            drain_stores: self.drain_stores,
            quiet: self.quiet,
        })
    }
}

fn libc_version() -> String {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) }
        .to_string_lossy()
        .into_owned()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The `host` object of the JSON.
pub fn host_json(runner: &Runner, opts: &LabOptions, perf: &perf::PerfStatus) -> Value {
    let info = blockmem::cpu::detect();
    let r = crate::info::report(&info);
    json!({
        "cpu": r["cpu"],
        "cpus": blockmem::autoload::cpus_available(),
        "caches": r["caches"],
        "hierarchy": runner.states.hier,
        "eviction_buffer_bytes": runner.states.eviction_bytes(),
        "timer": runner.timer,
        "perf": perf,
        "libc": method::libc_origin().unwrap_or_else(|e| format!("unavailable: {e}")),
        "libc_version": libc_version(),
        "kernel": kernel_release(),
        "blockmem_version": env!("CARGO_PKG_VERSION"),
        // The decision table `auto` ran with: every figure of the run can be tied to it.
        "profile": r["profile"],
        "table": r["table"],
        "methods_available": Method::all().iter().map(|m| m.name().to_string()).collect::<Vec<_>>(),
        "options": {
            "quick": opts.quick,
            "reps": opts.reps,
            "sizes": opts.sizes,
            "methods": opts.methods.as_ref().map(|m| m.iter().map(|x| x.name().to_string()).collect::<Vec<_>>()),
            "llc_override": opts.llc,
            "drain_stores": opts.drain_stores,
        },
        "started_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
    })
}

/// Builds the engine: timer, measured hierarchy, state builder (see [`timed_runner`]).
pub fn engine(llc: Option<usize>, drain_stores: bool) -> Runner {
    let timer = Timer::calibrate(Duration::from_millis(30));
    let hier = Hierarchy::measure(&timer, llc);
    timed_runner(hier, timer, drain_stores)
}

/// A runner over a measured hierarchy. With `drain_stores` its samples include the
/// drain of their stores (the hierarchy is measured with loads, on the plain clock,
/// either way).
pub fn timed_runner(hier: Hierarchy, timer: Timer, drain_stores: bool) -> Runner {
    let mut runner = Runner::new(StateBuilder::new(hier, timer));
    if drain_stores {
        runner.timer = timer.draining();
    }
    runner
}

/// Writes to stdout; a closed pipe (`blockmem lab | head`) silences the rest instead of
/// aborting the run (the JSON and report files still get written).
fn emit(s: &str) {
    crate::output::print_lossy(s);
}

fn mib(n: usize) -> String {
    experiments::fmt_size(n)
}

/// Runs `blockmem lab`.
pub fn run(args: &LabArgs) -> Result<()> {
    if let Some(files) = &args.compare {
        let c = compare::compare(&files[0], &files[1])?;
        let sent = c
            .sentinel_table()
            .map(|t| t.to_text() + "\n")
            .unwrap_or_default();
        emit(&format!(
            "{}\n{sent}{}",
            c.summary(args.tolerance).to_text(),
            c.worst(10).to_text()
        ));
        return Ok(());
    }
    if let Some(list) = &args.mask_features {
        blockmem::dispatch::mask_features(parse_features(list)?);
        // The built-in table follows the CPU class that remains.
        blockmem::dispatch::reload();
        eprintln!(
            "blockmem lab: features masked off: {} (built-in table: {})",
            list,
            blockmem::dispatch::builtin_class().name()
        );
    }
    let opts = args.validate()?;
    check_outputs(&opts)?;
    let started = Instant::now();
    eprintln!("blockmem lab: measuring the timer and the cache hierarchy…");
    let mut runner = engine(opts.llc, opts.drain_stores);
    runner.boost_cheap_cells = opts.reps.is_none();
    let perf = perf::status();
    {
        let h = &runner.states.hier;
        eprintln!(
            "blockmem lab: TSC {:.3} GHz, timer overhead {:.0} ticks{}; L2 {}, LLC {} reported, {} effective ({}); \
             probe: resident {:.0}–{:.0} ns, DRAM {:.0} ns; eviction buffer {}",
            runner.timer.ticks_per_ns,
            runner.timer.overhead_ticks,
            if runner.timer.drain_stores {
                " (stop stamps wait for stores to drain)"
            } else {
                " (stop stamps do not wait for stores: --no-drain-stores)"
            },
            mib(h.l2),
            mib(h.llc_reported),
            mib(h.llc_effective),
            h.llc_source,
            h.probe_hot_ns,
            h.probe_llc_ns,
            h.probe_dram_ns,
            mib(runner.states.eviction_bytes())
        );
        let h = h.clone();
        if !perf.available {
            runner.warnings.push(Warning::NoCounters {
                detail: perf.detail.clone(),
            });
        }
        if h.llc_source.starts_with("cpuid") {
            runner.warnings.push(Warning::LlcNotMeasured {
                used: h.llc_effective,
            });
        }
        if !h.can_verify() {
            runner.warnings.push(Warning::StateUnverifiable {
                hot_ns: h.probe_llc_ns,
                dram_ns: h.probe_dram_ns,
            });
        }
        if runner.timer.freq_spread > 1.01 {
            runner.warnings.push(Warning::UnstableTsc {
                spread: runner.timer.freq_spread,
            });
        }
    }
    if let Err(e) = Method::libc() {
        runner.warnings.push(Warning::NoLibc { detail: e });
    }
    let host = host_json(&runner, &opts, &perf);
    let all_methods = if opts.quick {
        quick_methods(Method::all())
    } else {
        Method::all()
    };
    let mut records: Vec<Record> = Vec::new();
    let mut tables = Vec::new();
    let mut timings = Vec::new();
    let mut sentinels = Vec::new();
    let mut skipped = Vec::new();
    for &exp in &opts.experiments {
        sentinels.push(runner.sentinel(&format!("before {}", exp.name())));
        let t0 = Instant::now();
        let mut ctx = Ctx {
            runner: &mut runner,
            quick: opts.quick,
            methods: opts.methods.as_deref(),
            all_methods: &all_methods,
            sizes: opts.sizes.as_deref(),
            reps: opts.reps,
            quiet: opts.quiet,
            fleet_dir: opts.fleet_dir.clone(),
        };
        let recs = match exp.run(&mut ctx) {
            Ok(r) => r,
            // In the default set, an experiment that cannot run (a --fleet-dir that
            // does not exist, say) is skipped so the others still report.
            Err(e) if !opts.explicit => {
                let reason = format!("{e:#}");
                eprintln!("blockmem lab: {} skipped: {reason}", exp.name());
                runner.warnings.push(Warning::ExperimentSkipped {
                    experiment: exp.name().into(),
                    reason: reason.clone(),
                });
                skipped.push((exp.name().to_string(), reason));
                continue;
            }
            Err(e) => return Err(e),
        };
        let ts = exp.tables(&recs);
        for t in &ts {
            emit(&format!("{}\n", t.to_text()));
        }
        let secs = t0.elapsed().as_secs_f64();
        eprintln!(
            "blockmem lab: {} done in {:.1} s ({} cells)",
            exp.name(),
            secs,
            recs.len()
        );
        timings.push(json!({"experiment": exp.name(), "seconds": secs, "cells": recs.len()}));
        tables.extend(ts);
        records.extend(recs);
    }
    sentinels.push(runner.sentinel("end"));
    let spread = |f: fn(&runner::Sentinel) -> f64| {
        let v: Vec<f64> = sentinels.iter().map(f).collect();
        v.iter().copied().fold(f64::MIN, f64::max) / v.iter().copied().fold(f64::MAX, f64::min)
    };
    let (dram_spread, hot_spread) = (spread(|s| s.dram_read_gbps), spread(|s| s.hot_copy_gbps));
    if dram_spread > 1.15 || hot_spread > 1.15 {
        runner.warnings.push(Warning::Interference {
            dram_spread,
            hot_spread,
        });
    }
    let mut host = host;
    host["sentinels"] = json!(sentinels);
    host["durations"] = json!(timings);
    host["total_seconds"] = json!(started.elapsed().as_secs_f64());
    let data = RunData {
        headline: summary::summarize(&host, &records),
        host,
        experiments: opts
            .experiments
            .iter()
            .map(|e| e.name().to_string())
            .collect(),
        skipped,
        records,
        warnings: runner.warnings.lines(),
        warning_groups: runner.warnings.groups(),
        tables,
    };
    let report = write_outputs(&opts, &data)?;
    for w in &data.warnings {
        eprintln!("warning: {w}");
    }
    let bad = data.records.iter().filter(|r| !r.verified).count();
    eprintln!(
        "blockmem lab: {} results, {} verified, in {:.1} s",
        data.records.len(),
        data.records.len() - bad,
        started.elapsed().as_secs_f64()
    );
    if let Some(p) = report {
        eprintln!("blockmem lab: report written to {}", p.display());
    }
    // The closing summary, last, so it is what a reader of the log sees first.
    eprint!("{}", data.headline.to_text());
    if bad > 0 {
        bail!("{bad} result(s) failed verification: a method wrote wrong bytes (see the warnings above)");
    }
    Ok(())
}

/// Fails before any measuring if an output cannot be written (a minutes-long run
/// should not end in "cannot create file").
fn check_outputs(opts: &LabOptions) -> Result<()> {
    for (flag, p) in [
        ("--json", &opts.json),
        ("--csv", &opts.csv),
        ("--markdown", &opts.markdown),
    ] {
        if let Some(p) = p {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).with_context(|| {
                    format!(
                        "{flag} {}: cannot create directory {}",
                        p.display(),
                        dir.display()
                    )
                })?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("{flag} {}: cannot write there", p.display()))?;
        }
    }
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    }
    Ok(())
}

/// Writes the files asked for; returns the report's `index.html` when `--out` named
/// (or defaulted to) a directory.
fn write_outputs(opts: &LabOptions, data: &RunData) -> Result<Option<PathBuf>> {
    if let Some(p) = &opts.json {
        Json.write_file(data, p)?;
    }
    if let Some(p) = &opts.csv {
        Csv.write_file(data, p)?;
    }
    if let Some(p) = &opts.markdown {
        Markdown.write_file(data, p)?;
    }
    opts.out
        .as_deref()
        .map(|dir| write_report(dir, data))
        .transpose()
}

/// Writes the whole report into `dir`: `results.{json,csv,md}`, the SVG plots,
/// `summary.svg` (the headline chart) and `index.html`; returns the page's path.
pub fn write_report(dir: &Path, data: &RunData) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the report directory {}", dir.display()))?;
    Json.write_file(data, &dir.join("results.json"))?;
    Csv.write_file(data, &dir.join("results.csv"))?;
    Markdown.write_file(data, &dir.join("results.md"))?;
    let mut sections = Vec::new();
    for name in &data.experiments {
        let Some(exp) = Experiment::from_name(name) else {
            continue;
        };
        let plots = plot::plot(exp, &data.records, dir)
            .with_context(|| format!("plotting {}", exp.name()))?;
        let skipped = data.skipped.iter().find(|(e, _)| e == name);
        let ran = data.records.iter().any(|r| r.experiment == exp.name());
        sections.push(report::Section {
            name: exp.name().into(),
            about: exp.about().into(),
            tables: exp.tables(&data.records),
            plots,
            missing: match (skipped, ran) {
                (Some((_, why)), _) => Some(format!("skipped: {why}")),
                (None, false) => Some(
                    "it ran but recorded no cell: none of the methods measured implements its op \
                     (see the warnings)"
                        .into(),
                ),
                (None, true) => None,
            },
        });
    }
    let chart = plot::ratio_chart(&data.headline);
    let mut files: Vec<String> = ["results.json", "results.csv", "results.md"]
        .map(String::from)
        .to_vec();
    if !chart.is_empty() {
        let p = dir.join("summary.svg");
        std::fs::write(&p, &chart).with_context(|| format!("cannot write {}", p.display()))?;
        files.push("summary.svg".into());
    }
    report::write_html(
        dir,
        &report::Page {
            host: &data.host,
            headline: &data.headline,
            chart: &chart,
            sections: &sections,
            warnings: &data.warning_groups,
            files: &files,
        },
    )?;
    Ok(dir.join("index.html"))
}

/// Flags of `blockmem report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A JSON file `blockmem lab --json` (or `--out`, as results.json) wrote.
    #[arg(value_name = "JSON")]
    pub json: PathBuf,
    /// The directory to write the report into.
    #[arg(long, value_name = "DIR", default_value = "blockmem-lab")]
    pub out: PathBuf,
}

/// Runs `blockmem report`: the report of a saved run, without measuring, and its
/// summary on stderr.
pub fn report_from_json(args: &ReportArgs) -> Result<()> {
    let p = &args.json;
    let text = crate::input::read_to_string(p)?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))?;
    let data = RunData::from_json(&v).with_context(|| format!("{}", p.display()))?;
    let page = write_report(&args.out, &data)?;
    eprintln!("blockmem report: written to {}", page.display());
    eprint!("{}", data.headline.to_text());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("x1").unwrap_err().contains("not a size"));
    }

    #[test]
    fn validation_rejects_bad_methods_and_sizes() {
        let a = LabArgs {
            methods: vec!["bogus".into()],
            ..LabArgs::default()
        };
        assert!(a
            .validate()
            .err()
            .unwrap()
            .to_string()
            .contains("unknown method 'bogus'"));
        let a = LabArgs {
            sizes: vec!["12Q".into()],
            ..LabArgs::default()
        };
        assert!(a.validate().err().unwrap().to_string().contains("--sizes"));
        let a = LabArgs {
            llc: Some("1K".into()),
            ..LabArgs::default()
        };
        assert!(a.validate().err().unwrap().to_string().contains("--llc"));
    }

    #[test]
    fn lab_alone_runs_everything_into_a_report_dir() {
        let o = LabArgs {
            tolerance: 0.1,
            ..LabArgs::default()
        }
        .validate()
        .unwrap();
        assert_eq!(o.experiments, Experiment::DEFAULT.to_vec());
        assert_eq!(o.out, Some(PathBuf::from("blockmem-lab")));
        let o = LabArgs {
            experiments: vec!["sizes".into()],
            tolerance: 0.1,
            ..LabArgs::default()
        }
        .validate()
        .unwrap();
        assert_eq!(o.out, None);
    }
}
