//! `blockmem calibrate`: measure the kernels on this host and write its decision table,
//! the profile the library loads (seed 000, docs/SEEDS.md: HP-UX timed its copy loops at boot and
//! patched in the fastest; blockmem times them once per host and keeps the answer in a
//! file).
//!
//! 1. [`measure`]: the effective LLC and the clock; every available kernel of each op
//!    family over a ladder of sizes, with the destination hot, evicted or fresh
//!    (mapped, never touched) and the source hot or evicted, alone and followed by a
//!    read of the destination; the cache probe's latency and its cost to a call; and
//!    one block copied into and set again and again with each kernel, for the largest
//!    block the dispatcher writes temporally when it meets again one it streamed
//!    (`copy.loop_temporal_max`, `set.loop_temporal_max`).
//! 2. [`derive`](mod@derive): one routine for every row of the table (see its docs).
//! 3. Write the table with each row's evidence as comments, and the raw medians beside
//!    it.

pub mod derive;
pub mod measure;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use blockmem::profile::{self, Size};

use crate::info::profile_path;

/// Flags of `blockmem calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Fewer sizes and repetitions (about half a minute on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// Where to write the profile (default: $BLOCKMEM_PROFILE, else
    /// $XDG_CACHE_HOME/blockmem/profile, else ~/.cache/blockmem/profile).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Print the profile instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// Effective LLC size to assume instead of measuring it (e.g. 32M).
    #[arg(long, value_name = "SIZE")]
    pub llc: Option<String>,
    /// Stop each call's clock at its last instruction, its stores possibly still
    /// buffered (as `blockmem lab --no-drain-stores`): a profile for programs that go
    /// on with work that does not store after their copies. By default every call is
    /// timed until its stores have drained, the cost a program that copies or stores
    /// again pays.
    #[arg(long = "no-drain-stores", action = clap::ArgAction::SetFalse)]
    pub drain_stores: bool,
    /// Time every call until its stores have drained: the default (the flag is kept
    /// for scripts written when it was not; the last of the two flags wins).
    #[arg(long = "drain-stores", overrides_with = "drain_stores")]
    pub drain_stores_default: bool,
}

/// Checks, before anything is measured, that `path` can be written: its directory is
/// created if missing, an existing `path` must be a regular file (a directory cannot
/// be written, a FIFO would block), and a scratch file beside it is created and
/// removed. `fix` ends each message: what to change (`choose another --out`).
pub fn check_writable(path: &Path, fix: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).with_context(|| {
        format!(
            "cannot create the directory {} for the profile {}; {fix}",
            dir.display(),
            path.display()
        )
    })?;
    if path.is_dir() {
        anyhow::bail!(
            "{} is a directory, not the profile file to write; {fix}",
            path.display()
        );
    }
    if path.exists() && !path.is_file() {
        anyhow::bail!(
            "{} is not a regular file (a device or FIFO?); {fix}",
            path.display()
        );
    }
    let scratch = dir.join(format!(".blockmem-calibrate-{}", std::process::id()));
    std::fs::write(&scratch, b"")
        .with_context(|| format!("cannot write the profile {}; {fix}", path.display()))?;
    let _ = std::fs::remove_file(&scratch);
    Ok(())
}

/// Runs `blockmem calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<()> {
    let start = Instant::now();
    let path = if args.print {
        None
    } else {
        let p = args.out.clone().or_else(profile_path).context(
            "no --out given and neither BLOCKMEM_PROFILE, XDG_CACHE_HOME nor HOME is set",
        )?;
        let fix = if args.out.is_some() {
            "choose another --out"
        } else {
            "pass --out PATH (or set BLOCKMEM_PROFILE) to a writable file"
        };
        check_writable(&p, fix)?;
        Some(p)
    };
    let llc = args
        .llc
        .as_deref()
        .map(crate::lab::parse_size)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("--llc")?;
    let measured = measure::measure(args.quick, llc, args.drain_stores)?;
    let mut derived = derive::derive(
        &measured.medians,
        &measured.libc,
        measured.probe_cost,
        measured.llc_effective,
        measured.probe_hit_max,
        measure::fallbacks(),
    );
    derived.table.probe_fault_min = measured.probe_fault_min;
    for op in profile::LOOP_OPS {
        if let (Some(max), _) = derive::loop_temporal_max(&measured.loops, op) {
            derived.table.loop_temporal_max[profile::loop_index(op)] = max;
        }
    }
    if let Some(c) = &measured.contended {
        derive_contended(&mut derived.table, &measured, c);
    }
    let elapsed = start.elapsed();
    let header = header(args, &measured, elapsed.as_secs_f64());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let notes = |fam, hint, st| {
        let i = profile::row_index(fam, hint, st);
        derived
            .notes
            .get(i)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    };
    let mut text = String::new();
    profile::render(&mut text, &derived.table, &header_refs, &notes).expect("render to a String");
    if text.len() > blockmem::autoload::MAX_PROFILE_BYTES {
        // The library reads at most this much: drop the evidence rather than fail.
        text.clear();
        profile::render(&mut text, &derived.table, &header_refs, &|_, _, _| None)
            .expect("render to a String");
    }
    let raw = measure::raw_text(&measured.medians, &measured.libc);
    let Some(path) = path else {
        crate::output::print(&text)?;
        crate::output::print(&raw)?;
        return Ok(());
    };
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    let raw_path = path.with_extension("measurements");
    std::fs::write(&raw_path, &raw).with_context(|| format!("writing {}", raw_path.display()))?;
    crate::output::print(&format!(
        "calibrate: wrote {} ({} bytes; raw medians in {}) in {:.1} s\n",
        path.display(),
        text.len(),
        raw_path.display(),
        elapsed.as_secs_f64()
    ))?;
    Ok(())
}

/// The contended rows: the table derived again with the cells from
/// [`measure::CONTENDED_FROM`] up as measured under load, every row where it differs
/// from the table derived alone.
fn derive_contended(table: &mut profile::Table, m: &measure::Measured, c: &measure::Contended) {
    let mut medians = m.medians.clone();
    medians.retain(|k, _| k.2 < measure::CONTENDED_FROM);
    medians.extend(c.medians.iter().map(|(k, v)| (*k, *v)));
    let mut libc = m.libc.clone();
    libc.retain(|k, _| k.1 < measure::CONTENDED_FROM);
    libc.extend(c.libc.iter().map(|(k, v)| (*k, *v)));
    let under_load = derive::derive(
        &medians,
        &libc,
        m.probe_cost,
        m.llc_effective,
        m.probe_hit_max,
        measure::fallbacks(),
    );
    let rows: Vec<_> = under_load
        .table
        .keyed_rows()
        .map(|(f, h, s, r)| (f, h, s, *r))
        .collect();
    for (f, h, s, row) in rows {
        if *table.row(f, h, s) != row {
            table.contended_row_mut(f, h, s).copy_from(&row);
        }
    }
    table.contended_calls = c.calls.max(2);
}

/// The profile's header lines: host, how it was measured, what the probe costs.
fn header(args: &CalibrateArgs, m: &measure::Measured, secs: f64) -> Vec<String> {
    let cpu = blockmem::cpu::detect();
    let flags: String = [
        (args.quick, " --quick"),
        (!args.drain_stores, " --no-drain-stores"),
    ]
    .iter()
    .filter(|f| f.0)
    .map(|f| f.1)
    .collect();
    let mut h = vec![
        format!(
            "host: {} ({} CPUs available)",
            cpu.brand_str(),
            blockmem::autoload::cpus_available()
        ),
        format!(
            "written by `blockmem calibrate{flags}` at unix time {} in {secs:.1} s",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        ),
        format!(
            "effective LLC {} (CPUID per-level leaf says {})",
            Size(m.llc_effective),
            Size(cpu.caches.used.llc.size)
        ),
        format!(
            "probe: LLC hits {:.0} cycles, flushed lines {:.0}: a hit is <= {} cycles; a probe costs a call {:.0} ns (cached) / {:.0} ns (cold)",
            m.probe_cycles.0, m.probe_cycles.1, m.probe_hit_max, m.probe_cost.cached, m.probe_cost.cold
        ),
        format!(
            "page faults: the probe's confirming touch took at most {:.0} cycles in cold blocks (p99), at least {:.0} in fresh ones (p5, a second fault): touches over {} cycles took a fault; a probe costs a call to a fresh destination {:.0} ns",
            m.fault_cycles.0, m.fault_cycles.1, m.probe_fault_min, m.probe_cost.fresh
        ),
        format!(
            "timing: {}; destinations hot, evicted (clean) and fresh (never touched){}",
            if args.drain_stores {
                "each call timed until its stores drained"
            } else {
                "each call's clock stopped at its last instruction"
            },
            if m.fresh { "" } else { " (fresh not measured: this lab build lacks it)" }
        ),
        "each row's comments: at the sizes where its kernel changes, every candidate's regret (its worst time over the row's scenarios / the best kernel's there)".to_string(),
    ];
    let mut w = String::new();
    let _ = write!(
        w,
        "kernels measured: {}",
        measure::kernel_names(args.quick).join(", ")
    );
    h.push(w);
    h.extend(
        profile::LOOP_OPS
            .iter()
            .map(|&op| derive::loop_evidence(&m.loops, op)),
    );
    h.push(match &m.contended {
        Some(c) => format!(
            "contended rows: the cells from {} up measured again while {} ({:.1} GB/s), {} calls in flight",
            Size(measure::CONTENDED_FROM),
            c.load,
            c.load_gbps,
            c.calls
        ),
        None => "contended rows: not measured (one CPU allowed); they are the rows".to_string(),
    });
    h
}
