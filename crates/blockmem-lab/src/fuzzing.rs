//! Entry points for the fuzz targets in `fuzz/` and for the tests that replay the
//! inputs they found (`tests/fuzz_regressions/<target>/`): each takes arbitrary bytes
//! and must return — an `Err` is a fine answer — never panic, crash, allocate without
//! bound or stall. Not a stable interface.

use std::path::Path;

use anyhow::Result;
use clap::Parser;

use crate::lab::timer::Timer;
use crate::trace::analysis::{Analysis, Options};
use crate::trace::estimate::{self, From, ReplayLimits};
use crate::trace::format::TraceFile;
use crate::trace::render;

/// The fuzz targets, by the names `fuzz/` and the regression corpus use.
pub const TARGETS: [&str; 4] = ["trace_reader", "profile", "cli_args", "compare_json"];

/// Runs target `name` on `data`.
///
/// # Panics
/// If `name` is not one of [`TARGETS`].
pub fn run(name: &str, data: &[u8]) {
    match name {
        "trace_reader" => drop(trace_reader(data)),
        "profile" => profile(data),
        "cli_args" => cli_args(data),
        "compare_json" => drop(compare_json(data)),
        other => panic!("no fuzz target {other:?} (targets: {TARGETS:?})"),
    }
}

/// A trace file's bytes through `blockmem trace report` without the timed replay:
/// parse, analyse, plan every class's replay (checking each placed range against its
/// buffer), render the tables and the JSON. Returns the tables' text.
pub fn trace_reader(data: &[u8]) -> Result<String> {
    let (text, a) = trace_report(data, None)?;
    for (key, samples) in a.samples.iter().enumerate() {
        if samples.is_empty() {
            continue;
        }
        let Some(plan) = estimate::plan(samples, ReplayLimits::default().max_call) else {
            continue;
        };
        for c in &plan.calls {
            let src = match c.from {
                From::Src(o) | From::Dst(o) => o,
            };
            assert!(
                c.dst + c.n <= plan.len && src + c.n <= plan.len,
                "class {key}: a replayed call leaves its {}-byte buffer: {c:?}",
                plan.len
            );
        }
    }
    Ok(text)
}

/// What `blockmem trace report FILE` does with one file's bytes, in process: parse,
/// analyse, estimate (when `estimate` gives the timer and limits; the replay runs),
/// render the tables and the JSON. Returns the tables' text and the analysis.
pub fn trace_report(
    data: &[u8],
    estimate: Option<(&Timer, ReplayLimits)>,
) -> Result<(String, Analysis)> {
    let file = TraceFile::parse(Path::new("trace"), data.to_vec())?;
    let a = Analysis::run(std::slice::from_ref(&file), Options { window: None })?;
    let e = estimate.map(|(timer, lim)| estimate::estimate_with(&a, timer, lim));
    let r = render::Report {
        title: "trace report: trace".into(),
        analysis: &a,
        estimate: e.as_ref(),
        stats: None,
        wall_seconds: None,
        advice: None,
    };
    let mut text = String::new();
    for t in r.tables() {
        text.push_str(&t.to_text());
    }
    serde_json::to_string(&r.json())?;
    Ok((text, a))
}

/// A profile's text: parsed over the built-in baseline table and, if accepted,
/// compiled into a plan.
pub fn profile(data: &[u8]) {
    use blockmem::builtin::Class;
    use blockmem::policy::{compile, Plan};
    if let Ok((table, _)) = blockmem::profile::parse(data, Class::Baseline.table()) {
        let plan = Plan::UNCOMPILED;
        compile(&table, blockmem::cpu::Features::NONE, None, 8 << 20, &plan);
    }
}

/// Command-line arguments (the bytes split at NUL and newline) through the
/// `blockmem` parser, then the flags' own validation where a subcommand has one;
/// every argument also through the size parser.
pub fn cli_args(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let args: Vec<&str> = text.split(['\0', '\n']).collect();
    for a in &args {
        let _ = crate::lab::parse_size(a);
    }
    let _ = crate::lab::parse_features(&text);
    if let Ok(cli) = crate::Cli::try_parse_from(std::iter::once("blockmem").chain(args)) {
        cli.validate_only();
    }
}

/// Two lab JSON files (the bytes split at the first NUL) through `blockmem lab
/// --compare`: matched, summarised, and their worst cells listed.
pub fn compare_json(data: &[u8]) -> Result<String> {
    use crate::lab::compare::compare_texts;
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let a = String::from_utf8_lossy(&data[..split]);
    let b = String::from_utf8_lossy(data.get(split + 1..).unwrap_or_default());
    let c = compare_texts((Path::new("a.json"), &a), (Path::new("b.json"), &b))?;
    let sent = c.sentinel_table().map(|t| t.to_text()).unwrap_or_default();
    Ok(format!(
        "{}{sent}{}{}",
        c.summary(0.1).to_text(),
        c.worst(10).to_text(),
        c.within(0.1)
    ))
}
