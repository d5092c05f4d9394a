//! `blockmem trace`: what a program's block operations look like — how many of each
//! kind, how large, how aligned, how much of the run they took, whether the first
//! cache line predicted the block's cache state, and what became of the destinations
//! (seed 003 Tables 1–3, seed 004 Table 7; docs/SEEDS.md) — and which kernels blockmem
//! chose for them.
//!
//! ```text
//! blockmem trace [--sample N] [--out DIR] [--check-stats] [--export-distribution DIR] -- CMD ARGS...
//! blockmem trace report FILE|DIR... [--out DIR] [--stats FILE] [--export-distribution DIR]
//! ```
//!
//! The first form runs `CMD` with the LD_PRELOAD shim and `BLOCKMEM_TRACE=DIR/trace`
//! (`DIR` defaults to `./blockmem-trace`; earlier trace files there are removed), then
//! reads every trace file the run left — `DIR/trace` for the program, `DIR/trace.<pid>`
//! for the processes it forked or exec'd — and reports: in `DIR` the tables
//! (`report.txt`), `index.html`, `report.json` and SVG histograms; without `--out`,
//! the tables on stderr too. Never on stdout: that is the program's, and
//! `blockmem trace -- gzip -c f > f.gz` must leave `f.gz` exactly as gzip wrote it
//! (the shim writes only to its trace files and stderr). `--check-stats` also sets
//! `BLOCKMEM_STATS=1`, takes the statistics lines out of the program's stderr (the rest
//! is passed through) and checks, process by process, that the trace's totals equal
//! them. The second form reports files already written (also by hand:
//! `BLOCKMEM_TRACE=/tmp/t LD_PRELOAD=… CMD`); it runs no program, so its tables go to
//! stdout (and to `report.txt` with `--out`).
//!
//! What is recorded, the record format, and how per-thread buffers, signals, fork and
//! exec are handled: the shim's `trace` and `trace_file` modules. In short, per call:
//! op, size, source and destination addresses, start TSC, TSC cycles, the kernel that
//! ran, the calling thread (its kernel tid: the report's `Threads` table gives per
//! thread the bytes streamed, the bytes written through the cache and how many of those
//! polluted it, i.e. no later call read them); every N-th call (`--sample N`,
//! `BLOCKMEM_TRACE_SAMPLE`, default 64, 0 = never) also the timed-load latency of the
//! first byte of the source and destination and how many of up to 8 lines spread
//! across each were cached, probed before the call.
//!
//! # What becomes of a destination
//!
//! Beside the shim, the run form preloads the trace I/O library
//! (`libblockmem_traceio.so`, found next to the shim; `cargo build --release -p
//! blockmem-traceio`). With it the trace also holds the program's I/O calls by site
//! (the `Kernel I/O` table) and, for a sample of calls whose destination covers whole
//! pages (`--watch N`: one eligible call in N, at most one a millisecond, 0 = none),
//! the first later access to up to 16 of those pages, caught by page protection: a
//! load, a store, the kernel (`write`, `read`, …) or a block operation (the `observed`
//! fate table). `--advise` then judges a site by what the program really did with its
//! destinations. The mechanism and what it keeps intact (the program's own `SIGSEGV`
//! handler, system calls on protected pages): the shim's `watch` module.
//!
//! # Damaged files
//!
//! A trace file is checked before anything in it is used ([`format`](mod@format)): the header
//! must come first and be sane, every record block must fit the header's buffers and
//! hold no more records than its length allows, and every record must name a kernel
//! slot the header has, a size up to 1 TiB, ranges that do not wrap around the address
//! space, an overlap flag its addresses agree with and probes no wider than the
//! header's. A block or record that fails is skipped with a warning naming its byte
//! offset, so a damaged file still reports what could be read; a file without a sane
//! header is an error naming the offset. The libc estimate replays only such records,
//! checks every replayed range against its buffer again before the call, replays
//! calls of up to 128 MiB, and maps at most 1 GiB and replays at most 2 GiB in all
//! ([`estimate::ReplayLimits`]).
//!
//! # Overhead
//!
//! Every intercepted call pays a buffer claim (one compare-and-swap), `lfence; rdtsc`
//! and `rdtscp` around it, and a 2–20-byte record; every N-th call also pays its probes
//! (2 to 18 timed loads). A program dominated by large copies pays nothing measurable;
//! one made of tens of millions of tiny copies runs several times slower while traced
//! (`docs/results/xeon-avx512-2vcpu/callsites`), so its absolute times in the report are
//! inflated by the tracer while its counts, sizes and addresses are exact.

pub mod advise;
pub mod analysis;
pub mod distribution;
pub mod estimate;
pub mod fate;
pub mod format;
pub mod observed;
pub mod render;
pub mod sites;
pub mod stats_check;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use analysis::{Analysis, Options};
use format::TraceFile;
use stats_check::{StatsCheck, StatsLine};

/// Default of `--sample`.
pub const DEFAULT_SAMPLE: u32 = 64;
/// The trace I/O library, looked for next to the shim.
pub const TRACEIO_NAME: &str = "libblockmem_traceio.so";
/// How to build it.
pub const TRACEIO_BUILD: &str = "cargo build --release -p blockmem-traceio";

/// Flags of `blockmem trace`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
        blockmem trace -- python3 script.py\n  \
        blockmem trace --out /tmp/t --check-stats -- sqlite3 db.sqlite < q.sql\n  \
        blockmem trace report /tmp/t\n  \
        blockmem trace --export-distribution dist -- sort big.txt && blockmem lab fleet --distribution dist"
)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: Option<TraceCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Subcommand, Debug)]
enum TraceCommand {
    /// Report trace files already written (files, or directories holding them).
    Report(ReportArgs),
}

/// Report flags shared by both forms.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ReportOpts {
    /// Write report.txt, index.html, report.json and SVG histograms into DIR (running a
    /// program: also its trace files; default ./blockmem-trace, and the tables on
    /// stderr).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write the report as JSON to PATH too.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the traced sizes, overlaps and alignments as fleetbench distributions
    /// (`Memcpy_/Memmove_/Memset_<program>.csv`) into DIR, for `blockmem lab fleet
    /// --distribution DIR`.
    #[arg(long, value_name = "DIR")]
    pub export_distribution: Option<PathBuf>,
    /// Largest call size exported (larger calls are left out and counted).
    #[arg(long, value_name = "SIZE", default_value = "1M", value_parser = parse_size_arg)]
    pub export_max_size: u64,
    /// Destination-fate window: a use counts if fewer bytes than this moved through
    /// block operations between the write and the use (e.g. 32M), or `all` (to the end
    /// of the process). Default: the effective LLC of the profile the program ran with.
    #[arg(long, value_name = "SIZE|all", value_parser = parse_window)]
    pub window: Option<u64>,
    /// Skip the estimates (libc's time, and the call sites' time under each hint: they
    /// replay samples of the calls for a few seconds).
    #[arg(long)]
    pub no_estimate: bool,
    /// Advise hints per call site (table, `advice` in the JSON) and write the hint map
    /// for `BLOCKMEM_HINTS` (to --hints-out, else DIR/hints with --out, else
    /// ./blockmem-hints).
    #[arg(long)]
    pub advise: bool,
    /// Where --advise writes the hint map.
    #[arg(long, value_name = "PATH", requires = "advise")]
    pub hints_out: Option<PathBuf>,
}

/// Flags of the run form.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Probe the cache state every N-th call (0: never).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SAMPLE)]
    pub sample: u32,
    /// Watch the destination of one in N calls covering whole pages, at most one a
    /// millisecond (0: never; needs the trace I/O library next to the shim).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub watch: u32,
    /// Also run with BLOCKMEM_STATS=1 and check the trace's totals against it.
    #[arg(long)]
    pub check_stats: bool,
    /// The shim to preload (default: $BLOCKMEM_PRELOAD_PATH, else next to this binary).
    #[arg(long, value_name = "PATH")]
    pub preload: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportOpts,
    /// The program to run and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

/// Flags of `blockmem trace report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Trace files, or directories (every trace file inside is read).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A file holding the run's BLOCKMEM_STATS lines (its stderr) to check against.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    #[command(flatten)]
    pub report: ReportOpts,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    crate::lab::parse_size(s).map(|n| n as u64)
}

fn parse_window(s: &str) -> Result<u64, String> {
    if s == "all" {
        Ok(0)
    } else {
        parse_size_arg(s)
    }
}

/// Writes to stdout; a closed pipe silences the rest, the report files still get
/// written.
fn emit(s: &str) {
    crate::output::print_lossy(s);
}

/// Runs `blockmem trace`.
pub fn run(args: &TraceArgs) -> Result<()> {
    match &args.command {
        Some(TraceCommand::Report(r)) => report_files(r),
        None => run_program(&args.run),
    }
}

fn is_trace_file(p: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && &magic == b"BMTR"
}

/// The trace files named: files as given, directories' trace files sorted by name.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<TraceFile>> {
    let mut names = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot list {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && is_trace_file(f))
                .collect();
            v.sort();
            names.extend(v);
        } else {
            names.push(p.clone());
        }
    }
    if names.is_empty() {
        bail!(
            "no trace files in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    names.iter().map(|n| TraceFile::open(n)).collect()
}

fn report_files(args: &ReportArgs) -> Result<()> {
    let files = collect(&args.files)?;
    let stats = match &args.stats {
        Some(p) => {
            let text = crate::input::read_to_string(p).context("--stats")?;
            Some(
                text.lines()
                    .filter_map(stats_check::parse_line)
                    .collect::<Vec<_>>(),
            )
        }
        None => None,
    };
    let title = format!(
        "trace report: {}",
        args.files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    report(
        &files,
        &args.report,
        &title,
        stats.as_deref(),
        None,
        Tables::Stdout,
    )
}

/// Where the report's tables are printed, besides `report.txt` in `--out`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tables {
    /// `trace report`: the tables are the command's output.
    Stdout,
    /// A traced program's run without `--out`: stdout belongs to the program.
    Stderr,
    /// A traced program's run with `--out`: only the file (stderr says where).
    FileOnly,
}

/// Analyses, prints and writes everything; fails if a statistics check was asked for
/// and did not match.
fn report(
    files: &[TraceFile],
    opts: &ReportOpts,
    title: &str,
    stats: Option<&[StatsLine]>,
    wall: Option<f64>,
    tables: Tables,
) -> Result<()> {
    let mut a = Analysis::run(
        files,
        Options {
            window: opts.window,
        },
    )?;
    let min_hint = sites::min_hint_size();
    let estimate = if opts.no_estimate {
        None
    } else {
        eprintln!("blockmem trace: estimating libc's time (replaying samples of the calls)…");
        let e = estimate::estimate(&a);
        if a.sites.recorded {
            eprintln!("blockmem trace: estimating the call sites' time under each hint…");
            sites::estimate(&mut a.sites, min_hint);
        }
        Some(e)
    };
    let advice = opts.advise.then(|| advise::advise(&a, min_hint));
    let check = stats.map(|lines| StatsCheck::new(lines, &a));
    let r = render::Report {
        title: title.to_string(),
        analysis: &a,
        estimate: estimate.as_ref(),
        stats: check.as_ref(),
        wall_seconds: wall,
        advice: advice.as_deref(),
    };
    let mut text = format!("blockmem {title}\n\n");
    for t in r.tables() {
        text.push_str(&t.to_text());
        text.push('\n');
    }
    match tables {
        Tables::Stdout => emit(&text),
        Tables::Stderr => {
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        Tables::FileOnly => {}
    }
    for w in &a.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(p) = &opts.json {
        write_json(&r, p)?;
    }
    if let Some(adv) = &advice {
        write_hint_map(&a, adv, opts, title)?;
    }
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create --out directory {}", dir.display()))?;
        let txt = dir.join("report.txt");
        std::fs::write(&txt, &text).with_context(|| format!("cannot write {}", txt.display()))?;
        write_json(&r, &dir.join("report.json"))?;
        let plots = r.plots(dir)?;
        r.html(dir, &plots, &["report.json".to_string()])?;
        eprintln!(
            "blockmem trace: report written to {} (tables: {})",
            dir.join("index.html").display(),
            txt.display()
        );
    }
    if let Some(dir) = &opts.export_distribution {
        // Named after the busiest process (a wrapper script's shell or `env` is not
        // the program of interest).
        let root = a.processes.iter().max_by_key(|p| p.records);
        let name = distribution::name_for(root.map_or("trace", |p| p.argv0.as_str()));
        for w in distribution::export(&a, dir, &name, opts.export_max_size)? {
            eprintln!(
                "blockmem trace: wrote {} ({} calls{})",
                w.path.display(),
                w.calls,
                if w.dropped_calls > 0 {
                    format!(
                        "; {} calls ({} bytes) above --export-max-size left out",
                        w.dropped_calls, w.dropped_bytes
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(c) = &check {
        if !c.all_match() {
            bail!(
                "the trace's totals differ from BLOCKMEM_STATS for {} of {} processes compared (see the last table)",
                c.mismatched(),
                c.compared()
            );
        }
        eprintln!(
            "blockmem trace: totals match BLOCKMEM_STATS for all {} processes compared ({} others had no statistics line or no complete trace)",
            c.compared(),
            c.rows.len() - c.compared()
        );
    }
    Ok(())
}

/// Writes the `--advise` hint map (see [`ReportOpts::advise`] for where).
fn write_hint_map(
    a: &Analysis,
    adv: &[advise::Advice],
    opts: &ReportOpts,
    title: &str,
) -> Result<()> {
    if !a.sites.recorded {
        eprintln!(
            "blockmem trace: no hint map: the trace has no call sites (format version 1); trace the program again"
        );
        return Ok(());
    }
    let path = match (&opts.hints_out, &opts.out) {
        (Some(p), _) => p.clone(),
        (None, Some(dir)) => dir.join("hints"),
        (None, None) => PathBuf::from("blockmem-hints"),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create the directory of --hints-out {}",
                path.display()
            )
        })?;
    }
    std::fs::write(&path, advise::hint_map(adv, title))
        .with_context(|| format!("cannot write the hint map {}", path.display()))?;
    let sites = adv.iter().filter(|x| x.in_map).count();
    eprintln!(
        "blockmem trace: hint map with {sites} site(s) written to {} (apply it: BLOCKMEM_HINTS={} with the shim preloaded, or blockmem run --compare --hints {} -- CMD)",
        path.display(),
        path.display(),
        path.display()
    );
    Ok(())
}

fn write_json(r: &render::Report<'_>, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(&r.json())?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// Removes earlier trace files (`trace`, `trace.*`) from `dir`.
fn clean(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if (name == "trace" || name.starts_with("trace.")) && p.is_file() {
            std::fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    Ok(())
}

fn describe(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_program(args: &RunArgs) -> Result<()> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let shim = crate::run_cmd::locate_shim(
        args.preload.as_deref(),
        std::env::var_os("BLOCKMEM_PRELOAD_PATH"),
        &exe_dir,
    )?;
    let out = args
        .report
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("blockmem-trace"));
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create --out directory {}", out.display()))?;
    clean(&out)?;
    let trace_path = std::path::absolute(out.join("trace"))
        .with_context(|| format!("cannot resolve {}", out.display()))?;
    let mut c = Command::new(&args.command[0]);
    c.args(&args.command[1..]);
    let mut preload = shim.as_os_str().to_os_string();
    let io = shim.with_file_name(TRACEIO_NAME);
    if io.is_file() {
        preload.push(":");
        preload.push(&io);
    } else {
        eprintln!(
            "blockmem trace: {} not found: the program's I/O and what becomes of its destinations are not observed (build it: {TRACEIO_BUILD})",
            io.display()
        );
    }
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    c.env("LD_PRELOAD", preload)
        .env("BLOCKMEM_TRACE", &trace_path)
        .env("BLOCKMEM_TRACE_SAMPLE", args.sample.to_string())
        .env("BLOCKMEM_TRACE_WATCH", args.watch.to_string());
    if args.check_stats {
        c.env("BLOCKMEM_STATS", "1").stderr(Stdio::piped());
    } else {
        c.env_remove("BLOCKMEM_STATS");
    }
    let cmd = describe(&args.command);
    eprintln!(
        "blockmem trace: running {cmd} (traces in {})",
        out.display()
    );
    let start = Instant::now();
    let mut child = c.spawn().with_context(|| format!("cannot run {cmd}"))?;
    // With --check-stats: statistics lines are kept (the per-thread ones dropped: the
    // report's threads table shows the same), everything else passes through.
    let mut lines = Vec::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines() {
            let line = line.context("reading the program's stderr")?;
            match stats_check::parse_line(&line) {
                Some(l) => lines.push(l),
                None if stats_check::is_thread_line(&line) => {}
                None => eprintln!("{line}"),
            }
        }
    }
    let status = child.wait().context("waiting for the program")?;
    let wall = start.elapsed().as_secs_f64();
    let files = collect(std::slice::from_ref(&out)).with_context(|| {
        format!(
            "{cmd} left no trace (was the shim preloaded? a static or set-user-ID program ignores LD_PRELOAD and BLOCKMEM_TRACE)"
        )
    })?;
    let mut opts = args.report.clone();
    opts.out = Some(out);
    let tables = if args.report.out.is_some() {
        Tables::FileOnly
    } else {
        Tables::Stderr
    };
    report(
        &files,
        &opts,
        &format!("trace: {cmd}"),
        args.check_stats.then_some(lines.as_slice()),
        Some(wall),
        tables,
    )?;
    if !status.success() {
        bail!("{cmd} failed ({status}); the report covers what it did");
    }
    Ok(())
}
