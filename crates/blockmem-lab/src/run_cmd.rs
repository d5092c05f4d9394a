//! `blockmem run [--compare] [--runs N] -- CMD ARGS...`: runs an unmodified program
//! with `libblockmem_preload.so` preloaded and reports its wall and CPU time; with
//! `--compare`, also without the shim, alternating the two so that drift (page cache,
//! frequency, other load) hits both alike, and the ratio of the medians. One extra,
//! untimed run with `BLOCKMEM_STATS=1` shows what went through the shim.
//!
//! `--profile P` (repeatable) runs the shim once per decision table instead: `P` a
//! profile file, or `builtin` for the CPU class's built-in table whatever profile is
//! installed, so that one alternating run compares libc, the built-in table and a
//! calibrated one. `--hints MAP` (repeatable) adds a run of the shim with
//! `BLOCKMEM_HINTS=MAP` (a hint map from `blockmem trace --advise`) over the first
//! `--profile`'s table, or the table the shim finds itself: `--compare --hints MAP`
//! alternates libc, the shim, and the shim with the hint map; two maps (the advice
//! of two traces) are compared in the same alternation.
//!
//! The shim is found at `--preload PATH`, else `$BLOCKMEM_PRELOAD_PATH`, else next to
//! this executable (`target/release/` after a build), else in `../lib/` beside it (an
//! installed layout, `PREFIX/bin` and `PREFIX/lib`).
//!
//! Times: wall from spawn to exit; CPU as user + system time from `wait4`, which
//! covers the program's threads and the children it waited for.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// The shim's file name.
pub const SHIM_NAME: &str = "libblockmem_preload.so";

/// How to build the shim (it must be built with `panic=abort`).
pub const SHIM_BUILD: &str = "cargo rustc --release -p blockmem-preload -- -C panic=abort";

/// Flags of `blockmem run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Also run the program without the shim (alternating) and report the ratio.
    #[arg(long)]
    pub compare: bool,
    /// Timed runs per configuration.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Untimed warm-up runs per configuration before the timed ones.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Let the program's stdout and stderr through (default: discarded).
    #[arg(long)]
    pub show_output: bool,
    /// The shim to preload (default: $BLOCKMEM_PRELOAD_PATH, else next to this binary).
    #[arg(long, value_name = "PATH")]
    pub preload: Option<PathBuf>,
    /// Run the shim with this decision table: a profile file, or `builtin` for the
    /// built-in table of the CPU class. Repeat to compare tables in one alternating
    /// run (default: the table the shim finds itself).
    #[arg(long = "profile", value_name = "PATH|builtin")]
    pub profiles: Vec<String>,
    /// Also run the shim with this hint map (`BLOCKMEM_HINTS`, from `blockmem trace
    /// --advise`) over the first --profile's table, alternating with the other
    /// configurations. Repeat to compare maps.
    #[arg(long = "hints", value_name = "MAP")]
    pub hints: Vec<PathBuf>,
    /// The program to run and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

/// With or without the shim, and with which table.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Config {
    /// The system's C library only.
    Libc,
    /// `LD_PRELOAD=libblockmem_preload.so`, with the table it finds itself.
    Shim,
    /// The shim with `BLOCKMEM_PROFILE` set to a file (`label` names the table).
    ShimWith {
        /// The profile file.
        profile: PathBuf,
        /// `built-in`, or the file's name.
        label: String,
        /// The file was written for this run (`builtin`) and is removed after it.
        scratch: bool,
    },
    /// The shim with `BLOCKMEM_HINTS` set, over the first `--profile`'s table or the
    /// one it finds itself.
    ShimHints {
        /// The hint map.
        map: PathBuf,
        /// `BLOCKMEM_PROFILE` for the run, if one was given.
        profile: Option<PathBuf>,
        /// `hints`, or `hints FILE` where several maps run.
        label: String,
    },
}

impl Config {
    fn label(&self) -> String {
        match self {
            Config::Libc => "libc".into(),
            Config::Shim => "blockmem shim".into(),
            Config::ShimWith { label, .. } => format!("shim, {label}"),
            Config::ShimHints { label, .. } => format!("shim + {label}"),
        }
    }

    fn shim(&self) -> bool {
        *self != Config::Libc
    }
}

/// A profile that selects the built-in table: the version line alone (every row and
/// scalar not in a file keeps the built-in table's).
pub const BUILTIN_PROFILE: &str =
    "# blockmem profile: the built-in table (no rows given)\nversion = 2\n";

/// The shim configurations `--profile` asks for; `builtin` becomes a file of
/// [`BUILTIN_PROFILE`] in `scratch`.
fn shim_configs(profiles: &[String], scratch: &Path) -> anyhow::Result<Vec<Config>> {
    profiles
        .iter()
        .map(|p| {
            if p == "builtin" {
                let path = scratch.join(format!("blockmem-run-builtin-{}.profile", std::process::id()));
                std::fs::write(&path, BUILTIN_PROFILE)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                return Ok(Config::ShimWith {
                    profile: path,
                    label: "built-in table".into(),
                    scratch: true,
                });
            }
            let path = PathBuf::from(p);
            anyhow::ensure!(
                path.is_file(),
                "--profile {p}: not a file (give a profile written by `blockmem calibrate`, or `builtin`)"
            );
            let label = path
                .file_name()
                .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned());
            Ok(Config::ShimWith {
                profile: path,
                label: format!("profile {label}"),
                scratch: false,
            })
        })
        .collect()
}

/// One timed run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Spawn to exit.
    pub wall: Duration,
    /// User + system time of the program and its reaped children.
    pub cpu: Duration,
}

/// Min, median and max of some durations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Smallest.
    pub min: Duration,
    /// Middle value (mean of the two middle ones for an even count).
    pub median: Duration,
    /// Largest.
    pub max: Duration,
}

impl Summary {
    /// Summarises `values` (empty: all zero).
    pub fn of(values: &[Duration]) -> Summary {
        let mut v = values.to_vec();
        v.sort_unstable();
        let n = v.len();
        if n == 0 {
            return Summary {
                min: Duration::ZERO,
                median: Duration::ZERO,
                max: Duration::ZERO,
            };
        }
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2
        };
        Summary {
            min: v[0],
            median,
            max: v[n - 1],
        }
    }
}

/// Everything `blockmem run` measured.
#[derive(Debug)]
pub struct Report {
    /// The command line, for the heading.
    pub command: String,
    /// The shim used.
    pub shim: PathBuf,
    /// Timed samples per configuration, in run order.
    pub samples: Vec<(Config, Vec<Sample>)>,
    /// The `BLOCKMEM_STATS` lines of the extra run.
    pub stats: Vec<String>,
    /// Warm-up runs per configuration.
    pub warmup: u32,
}

/// Finds the shim: the explicit path, else the environment's, else beside `exe_dir`
/// or in `exe_dir/../lib`.
pub fn locate_shim(
    explicit: Option<&Path>,
    env: Option<OsString>,
    exe_dir: &Path,
) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!("--preload {}: no such file", p.display());
    }
    if let Some(p) = env.filter(|p| !p.is_empty()).map(PathBuf::from) {
        if p.is_file() {
            return Ok(p);
        }
        bail!("BLOCKMEM_PRELOAD_PATH={}: no such file", p.display());
    }
    let candidates = [
        exe_dir.join(SHIM_NAME),
        exe_dir.join("../lib").join(SHIM_NAME),
    ];
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    bail!(
        "{SHIM_NAME} not found (looked in {} and {}).\nBuild it with\n  {SHIM_BUILD}\n\
         or point BLOCKMEM_PRELOAD_PATH (or --preload) at it.",
        candidates[0].display(),
        candidates[1].display()
    )
}

fn describe(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command for one run: the shim prepended to any `LD_PRELOAD` already set, and
/// `BLOCKMEM_STATS` removed unless `stats` (counting costs a little on every call).
fn command_for(args: &RunArgs, shim: &Path, config: &Config, stats: bool) -> Command {
    let mut c = Command::new(&args.command[0]);
    c.args(&args.command[1..]).stdin(Stdio::null());
    if !args.show_output {
        c.stdout(Stdio::null()).stderr(Stdio::null());
    }
    c.env_remove("BLOCKMEM_STATS").env_remove("BLOCKMEM_HINTS");
    match config {
        Config::ShimWith { profile, .. } => {
            c.env("BLOCKMEM_PROFILE", profile);
        }
        Config::ShimHints { map, profile, .. } => {
            c.env("BLOCKMEM_HINTS", map);
            if let Some(p) = profile {
                c.env("BLOCKMEM_PROFILE", p);
            }
        }
        Config::Libc | Config::Shim => {}
    }
    if config.shim() {
        let mut preload = shim.as_os_str().to_os_string();
        if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(":");
            preload.push(existing);
        }
        c.env("LD_PRELOAD", preload);
        if stats {
            c.env("BLOCKMEM_STATS", "1");
        }
    }
    c
}

/// Waits for `pid` with `wait4`, returning its exit status word and CPU time.
fn wait_with_rusage(pid: u32) -> anyhow::Result<(i32, Duration)> {
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    loop {
        // SAFETY: `status` and `usage` are valid for writes; `pid` is our child, not yet
        // reaped (std's `Child` is never waited on for it).
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, usage.as_mut_ptr()) };
        if r == pid as libc::pid_t {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
    // SAFETY: wait4 succeeded, so it filled `usage` (it was zeroed before anyway).
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok((status, tv(usage.ru_utime) + tv(usage.ru_stime)))
}

fn status_text(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

/// One run: spawn, wait, time. Fails if the program does.
fn run_once(args: &RunArgs, shim: &Path, config: &Config) -> anyhow::Result<Sample> {
    let mut cmd = command_for(args, shim, config, false);
    let start = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", describe(&args.command)))?;
    let (status, cpu) = wait_with_rusage(child.id())?;
    let wall = start.elapsed();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        bail!(
            "{} failed ({}) {}; rerun with --show-output to see why",
            describe(&args.command),
            status_text(status),
            if config.shim() {
                "under the shim"
            } else {
                "without the shim"
            }
        );
    }
    Ok(Sample { wall, cpu })
}

/// The extra run with `BLOCKMEM_STATS=1`: its statistics lines.
fn stats_run(args: &RunArgs, shim: &Path) -> anyhow::Result<Vec<String>> {
    let mut cmd = command_for(args, shim, &Config::Shim, true);
    cmd.stderr(Stdio::piped());
    if !args.show_output {
        cmd.stdout(Stdio::null());
    }
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {}", describe(&args.command)))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    Ok(stderr
        .lines()
        .filter(|l| l.starts_with("blockmem:") && !crate::trace::stats_check::is_thread_line(l))
        .map(String::from)
        .collect())
}

/// Runs everything and returns the measurements.
pub fn measure(args: &RunArgs, shim: &Path) -> anyhow::Result<Report> {
    let mut configs = if args.profiles.is_empty() {
        vec![Config::Shim]
    } else {
        shim_configs(&args.profiles, &std::env::temp_dir())?
    };
    configs.extend(hint_configs(&args.hints, configs.first())?);
    if args.compare {
        configs.push(Config::Libc);
    }
    let result = measure_configs(args, shim, &configs);
    for c in &configs {
        if let Config::ShimWith {
            profile,
            scratch: true,
            ..
        } = c
        {
            let _ = std::fs::remove_file(profile);
        }
    }
    result
}

/// One configuration per hint map, over the table of `base` (the first shim
/// configuration).
fn hint_configs(maps: &[PathBuf], base: Option<&Config>) -> anyhow::Result<Vec<Config>> {
    let profile = match base {
        Some(Config::ShimWith { profile, .. }) => Some(profile.clone()),
        _ => None,
    };
    maps.iter()
        .map(|map| {
            anyhow::ensure!(
                map.is_file(),
                "--hints {}: not a file (give a hint map written by `blockmem trace --advise`)",
                map.display()
            );
            let label = if maps.len() == 1 {
                "hints".to_string()
            } else {
                let name = map.file_name().unwrap_or(map.as_os_str());
                format!("hints {}", name.to_string_lossy())
            };
            Ok(Config::ShimHints {
                map: map.clone(),
                profile: profile.clone(),
                label,
            })
        })
        .collect()
}

fn measure_configs(args: &RunArgs, shim: &Path, configs: &[Config]) -> anyhow::Result<Report> {
    for _ in 0..args.warmup {
        for c in configs {
            run_once(args, shim, c)?;
        }
    }
    let mut samples: Vec<(Config, Vec<Sample>)> =
        configs.iter().map(|c| (c.clone(), Vec::new())).collect();
    for i in 0..args.runs as usize {
        // Alternate which configuration goes first (ABBA), so that neither always runs
        // right after the other.
        let order: Vec<usize> = if i % 2 == 0 {
            (0..configs.len()).collect()
        } else {
            (0..configs.len()).rev().collect()
        };
        for k in order {
            let s = run_once(args, shim, &configs[k])?;
            samples[k].1.push(s);
        }
    }
    let stats = stats_run(args, shim)?;
    Ok(Report {
        command: describe(&args.command),
        shim: shim.to_path_buf(),
        samples,
        stats,
        warmup: args.warmup,
    })
}

/// A duration with four significant digits in a unit that suits it.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// One statistics line's total calls and bytes (`copy a/b move c/d set e/f zero g/h`).
pub fn stats_totals(line: &str) -> Option<(u64, u64)> {
    let ops = line.split(" calls/bytes: ").nth(1)?.split(';').next()?;
    let words: Vec<&str> = ops.split_whitespace().collect();
    let mut totals = (0, 0);
    for pair in words.chunks(2) {
        let (calls, bytes) = pair.get(1)?.split_once('/')?;
        totals.0 += calls.parse::<u64>().ok()?;
        totals.1 += bytes.parse::<u64>().ok()?;
    }
    Some(totals)
}

/// Largest number of statistics lines printed one by one; the rest are summed.
const STATS_LINES_SHOWN: usize = 4;

/// The report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let runs = r.samples.first().map_or(0, |s| s.1.len());
    let _ = writeln!(out, "blockmem run: {}", r.command);
    let _ = writeln!(
        out,
        "shim: {}\n{runs} timed run(s) per configuration{}, {} warm-up\n",
        r.shim.display(),
        if r.samples.len() > 1 {
            ", alternating"
        } else {
            ""
        },
        r.warmup
    );
    let _ = writeln!(
        out,
        "{:<15} {:>11} {:>11} {:>11}   {:>11} {:>11} {:>11}",
        "", "wall median", "wall min", "wall max", "cpu median", "cpu min", "cpu max"
    );
    let mut medians = Vec::new();
    for (config, samples) in &r.samples {
        let wall = Summary::of(&samples.iter().map(|s| s.wall).collect::<Vec<_>>());
        let cpu = Summary::of(&samples.iter().map(|s| s.cpu).collect::<Vec<_>>());
        let _ = writeln!(
            out,
            "{:<15} {:>11} {:>11} {:>11}   {:>11} {:>11} {:>11}",
            config.label(),
            secs(wall.median),
            secs(wall.min),
            secs(wall.max),
            secs(cpu.median),
            secs(cpu.min),
            secs(cpu.max)
        );
        medians.push((config.clone(), wall.median, cpu.median));
    }
    let libc = medians.iter().find(|m| m.0 == Config::Libc);
    let shims: Vec<_> = medians.iter().filter(|m| m.0.shim()).collect();
    if let Some(libc) = libc {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        for shim in &shims {
            let name = if shim.0 == Config::Shim {
                "shim / libc".to_string()
            } else {
                format!("{} / libc", shim.0.label())
            };
            let _ = writeln!(
                out,
                "{:<15} {:>11.3} {:>11} {:>11}   {:>11.3}",
                name,
                ratio(shim.1, libc.1),
                "",
                "",
                ratio(shim.2, libc.2)
            );
        }
        if !shims.is_empty() {
            let _ = writeln!(out, "(ratio of medians; below 1: faster under the shim)");
        }
    }
    // Each hint map against the shim over the same table (the first shim row).
    let base = medians.iter().find(|m| m.0.shim());
    let hinted: Vec<_> = medians
        .iter()
        .filter(|m| matches!(m.0, Config::ShimHints { .. }))
        .collect();
    if let Some(p) = base.filter(|_| !hinted.is_empty()) {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        for h in &hinted {
            let _ = writeln!(
                out,
                "{:<15} {:>11.3} {:>11} {:>11}   {:>11.3}",
                format!(
                    "{} / {}",
                    h.0.label().trim_start_matches("shim + "),
                    p.0.label()
                ),
                ratio(h.1, p.1),
                "",
                "",
                ratio(h.2, p.2)
            );
        }
        let _ = writeln!(out, "(below 1: the hint map made it faster)");
    }
    let _ = writeln!(
        out,
        "\nshim statistics (one extra untimed run with BLOCKMEM_STATS=1):"
    );
    if r.stats.is_empty() {
        let _ = writeln!(
            out,
            "  none printed (the program exited without exit(), e.g. by _exit or a signal)"
        );
    }
    let mut lines: Vec<&String> = r.stats.iter().collect();
    lines.sort_by_key(|l| std::cmp::Reverse(stats_totals(l).map_or(0, |t| t.0)));
    for l in lines.iter().take(STATS_LINES_SHOWN) {
        let _ = writeln!(out, "  {l}");
    }
    if lines.len() > STATS_LINES_SHOWN {
        let rest = &lines[STATS_LINES_SHOWN..];
        let (calls, bytes) = rest
            .iter()
            .filter_map(|l| stats_totals(l))
            .fold((0, 0), |a, t| (a.0 + t.0, a.1 + t.1));
        let _ = writeln!(
            out,
            "  ... and {} more process(es): {calls} calls, {bytes} bytes",
            rest.len()
        );
    }
    out
}

/// `blockmem run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot locate the blockmem executable")?;
    let exe_dir = exe.parent().unwrap_or(Path::new("."));
    let shim = locate_shim(
        args.preload.as_deref(),
        std::env::var_os("BLOCKMEM_PRELOAD_PATH"),
        exe_dir,
    )?;
    let report = measure(args, &shim)?;
    crate::output::print(&render(&report))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn summary_min_median_max() {
        let s = Summary::of(&[ms(5), ms(1), ms(3)]);
        assert_eq!((s.min, s.median, s.max), (ms(1), ms(3), ms(5)));
        let s = Summary::of(&[ms(4), ms(1), ms(3), ms(2)]);
        assert_eq!(s.median, Duration::from_micros(2500));
        assert_eq!(Summary::of(&[]).max, Duration::ZERO);
    }

    #[test]
    fn durations_in_a_fitting_unit() {
        assert_eq!(secs(Duration::from_millis(2500)), "2.500 s");
        assert_eq!(secs(Duration::from_micros(19_420)), "19.42 ms");
        assert_eq!(secs(Duration::from_nanos(412_300)), "412.3 us");
    }

    #[test]
    fn stats_line_totals() {
        let line = "blockmem: pid 7 calls/bytes: copy 10/1000 move 2/20 set 3/300 zero 0/0; \
                    kernels: inline 14/320 avx2 1/1000; profile cpuid-defaults";
        assert_eq!(stats_totals(line), Some((15, 1320)));
        assert_eq!(
            stats_totals("blockmem: BLOCKMEM_FORCE=x: no such kernel"),
            None
        );
    }

    #[test]
    fn shim_location_order_and_advice() {
        let dir = std::env::temp_dir().join(format!("blockmem-run-test-{}", std::process::id()));
        let bin = dir.join("bin");
        let lib = dir.join("lib");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        // Nothing there: the error says how to build it.
        let err = locate_shim(None, None, &bin).unwrap_err().to_string();
        assert!(err.contains(SHIM_BUILD), "{err}");
        // Installed layout: PREFIX/lib.
        std::fs::write(lib.join(SHIM_NAME), b"").unwrap();
        assert_eq!(
            locate_shim(None, None, &bin).unwrap(),
            bin.join("../lib").join(SHIM_NAME)
        );
        // Beside the binary wins over ../lib.
        std::fs::write(bin.join(SHIM_NAME), b"").unwrap();
        assert_eq!(locate_shim(None, None, &bin).unwrap(), bin.join(SHIM_NAME));
        // The environment wins over both; a wrong one is an error, not a fallback.
        let env_path = lib.join(SHIM_NAME);
        assert_eq!(
            locate_shim(None, Some(env_path.clone().into()), &bin).unwrap(),
            env_path
        );
        assert!(locate_shim(None, Some("/nonexistent.so".into()), &bin).is_err());
        // --preload wins over everything.
        assert_eq!(
            locate_shim(Some(&env_path), Some("/x".into()), &bin).unwrap(),
            env_path
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn render_shows_ratio_and_stats() {
        let report = Report {
            command: "sort big".into(),
            shim: "/x/libblockmem_preload.so".into(),
            samples: vec![
                (
                    Config::Shim,
                    vec![Sample {
                        wall: ms(800),
                        cpu: ms(700),
                    }],
                ),
                (
                    Config::Libc,
                    vec![Sample {
                        wall: ms(1000),
                        cpu: ms(1000),
                    }],
                ),
            ],
            stats: vec![
                "blockmem: pid 1 calls/bytes: copy 5/50 move 0/0 set 0/0 zero 0/0; kernels:".into(),
            ],
            warmup: 1,
        };
        let text = render(&report);
        assert!(text.contains("shim / libc"), "{text}");
        assert!(text.contains("800.00 ms"), "{text}");
        assert!(text.contains("0.800"), "{text}");
        assert!(text.contains("0.700"), "{text}");
        assert!(text.contains("copy 5/50"), "{text}");
    }

    #[test]
    fn hint_maps_run_over_the_first_tables_and_compare_with_it() {
        let dir = std::env::temp_dir().join(format!("blockmem-run-hints-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("before.hints"), dir.join("after.hints"));
        std::fs::write(&a, "blockmem-hints 1\n").unwrap();
        std::fs::write(&b, "blockmem-hints 1\n").unwrap();
        let base = Config::ShimWith {
            profile: dir.join("builtin.profile"),
            label: "built-in table".into(),
            scratch: true,
        };
        let configs = hint_configs(&[a.clone(), b.clone()], Some(&base)).unwrap();
        let profiles: Vec<_> = configs
            .iter()
            .map(|c| match c {
                Config::ShimHints { profile, .. } => profile.clone(),
                _ => panic!("{c:?}"),
            })
            .collect();
        assert_eq!(profiles, vec![Some(dir.join("builtin.profile")); 2]);
        assert_eq!(configs[0].label(), "shim + hints before.hints");
        assert_eq!(configs[1].label(), "shim + hints after.hints");
        // One map over the shim's own table: no profile, the short label.
        let one = hint_configs(std::slice::from_ref(&a), Some(&Config::Shim)).unwrap();
        assert!(matches!(&one[0], Config::ShimHints { profile: None, .. }));
        assert_eq!(one[0].label(), "shim + hints");
        let err = hint_configs(&[dir.join("missing")], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("blockmem trace --advise"), "{err}");

        let sample = |wall| {
            vec![Sample {
                wall: ms(wall),
                cpu: ms(wall),
            }]
        };
        let report = Report {
            command: "prog".into(),
            shim: "/x/libblockmem_preload.so".into(),
            samples: vec![
                (base, sample(1000)),
                (configs[0].clone(), sample(1100)),
                (configs[1].clone(), sample(900)),
                (Config::Libc, sample(1200)),
            ],
            stats: Vec::new(),
            warmup: 0,
        };
        let text = render(&report);
        assert!(
            text.contains("hints before.hints / shim, built-in table       1.100"),
            "{text}"
        );
        assert!(
            text.contains("hints after.hints / shim, built-in table       0.900"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// End to end on a real shim: built here with a nested cargo into this test's target
    /// directory (as the shim's own tests do), then `sort` measured with and without it.
    #[test]
    fn measures_a_program_with_and_without_the_shim() {
        let exe = std::env::current_exe().unwrap();
        let target = exe
            .ancestors()
            .find(|d| d.join("CACHEDIR.TAG").is_file())
            .expect("target dir")
            .to_path_buf();
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["rustc", "--target-dir"])
            .arg(&target)
            .args([
                "--release",
                "-p",
                "blockmem-preload",
                "--",
                "-C",
                "panic=abort",
            ])
            .current_dir(&workspace)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        let shim = target.join("release").join(SHIM_NAME);
        let input = target.join("blockmem-run-test-input.txt");
        let text: String = (0..20_000)
            .map(|i| format!("{}\n", (i * 7919) % 10007))
            .collect();
        std::fs::write(&input, text).unwrap();
        let args = RunArgs {
            compare: true,
            runs: 2,
            warmup: 0,
            show_output: false,
            preload: Some(shim.clone()),
            profiles: vec![],
            hints: Vec::new(),
            command: vec!["sort".into(), input.clone().into()],
        };
        let report = measure(&args, &shim).unwrap();
        assert_eq!(report.samples.len(), 2);
        assert!(report.samples.iter().all(|(_, s)| s.len() == 2));
        assert!(
            report
                .stats
                .iter()
                .any(|l| stats_totals(l).is_some_and(|t| t.0 > 0)),
            "{:?}",
            report.stats
        );
        let text = render(&report);
        assert!(text.contains("shim / libc"), "{text}");
        // A failing program is an error that says so.
        let failing = RunArgs {
            command: vec!["false".into()],
            ..args
        };
        let err = measure(&failing, &shim).unwrap_err().to_string();
        assert!(err.contains("exit status 1"), "{err}");
        // One run per table: the built-in one (its scratch profile removed after) and
        // libc; a profile that is not a file is refused before anything runs.
        let tables = RunArgs {
            profiles: vec!["builtin".into()],
            ..failing.clone()
        };
        let tables = RunArgs {
            command: vec!["sort".into(), input.clone().into()],
            ..tables
        };
        let report = measure(&tables, &shim).unwrap();
        let labels: Vec<String> = report.samples.iter().map(|s| s.0.label()).collect();
        assert_eq!(labels, ["shim, built-in table", "libc"]);
        assert!(render(&report).contains("shim, built-in table / libc"));
        for (c, _) in &report.samples {
            if let Config::ShimWith { profile, .. } = c {
                assert!(!profile.exists(), "{}", profile.display());
            }
        }
        let missing = RunArgs {
            profiles: vec!["/nonexistent/profile".into()],
            ..tables
        };
        let err = measure(&missing, &shim).unwrap_err().to_string();
        assert!(
            err.contains("--profile /nonexistent/profile: not a file"),
            "{err}"
        );
        let _ = std::fs::remove_file(&input);
    }
}
