//! The `blockmem` command as a library: argument parsing, then one module per
//! subcommand. `main` only calls [`run`] and prints the error.

pub mod info;

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
}

/// Parses the command line and runs the subcommand.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Info(args) => info::run(&args),
    }
}
