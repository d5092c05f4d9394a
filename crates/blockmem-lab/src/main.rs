//! `blockmem`: host info, calibration and the cache-temperature lab.

use std::process::ExitCode;

fn main() -> ExitCode {
    match blockmem_lab::run() {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`blockmem info | head -1`): it has what it
        // wanted, so end quietly (see `blockmem_lab::output`).
        Err(err) if blockmem_lab::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("blockmem: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
