//! `blockmem`: host info, calibration and the cache-temperature lab.

use std::process::ExitCode;

fn main() -> ExitCode {
    match blockmem_lab::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("blockmem: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
