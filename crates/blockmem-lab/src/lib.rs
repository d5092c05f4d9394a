//! The `blockmem` command as a library: argument parsing, then one module per
//! subcommand. `main` only calls [`run`] and prints the error. How the lab and
//! calibration measure is described in `docs/METHOD.md`; the experiments cite the seed
//! documents summarised in `docs/SEEDS.md`.
//!
//! Where a comment rests on a measured figure it points to the results directory that
//! holds it (`docs/results/<host>/<dir>`).
#![deny(unsafe_op_in_unsafe_fn)]

pub mod calibrate;
#[doc(hidden)]
pub mod fuzzing;
pub mod info;
pub mod input;
pub mod lab;
pub mod output;
pub mod run_cmd;
pub mod trace;

use clap::{Parser, Subcommand};

/// blockmem: cache-aware block memory operations and the lab that measures them.
#[derive(Parser, Debug)]
#[command(name = "blockmem", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// CPU, caches (as each CPUID leaf reports them and as blockmem uses them), kernels.
    Info(info::InfoArgs),
    /// Measure copies, moves and sets under controlled cache states (the seed experiments).
    Lab(lab::LabArgs),
    /// Write the HTML report (and its summary) of a saved lab run:
    /// `blockmem report results.json [--out DIR]`.
    Report(lab::ReportArgs),
    /// Measure the kernels on this host and write the profile the library loads.
    Calibrate(calibrate::CalibrateArgs),
    /// Run a program under the LD_PRELOAD shim (and with --compare, also without it),
    /// timing both: `blockmem run [--compare] [--runs N] -- CMD ARGS...`.
    Run(run_cmd::RunArgs),
    /// Trace a program's memcpy/memmove/memset calls and report them:
    /// `blockmem trace [--sample N] [--out DIR] -- CMD ARGS...`, or
    /// `blockmem trace report FILE...`.
    Trace(trace::TraceArgs),
}

impl Cli {
    /// Checks the flags as the subcommand would before running (`lab`: its
    /// validation into options), without running anything.
    pub fn validate_only(&self) {
        if let Command::Lab(args) = &self.command {
            let _ = args.validate();
        }
    }
}

/// Parses the command line and runs the subcommand.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Lab(args) => lab::run(&args),
        Command::Report(args) => lab::report_from_json(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Run(args) => run_cmd::run(&args),
        Command::Trace(args) => trace::run(&args),
    }
}
