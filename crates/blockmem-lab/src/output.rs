//! Standard output for every subcommand, and what a closed pipe means.
//!
//! Rust starts a program with SIGPIPE ignored, so a write to a pipe whose reader has
//! gone (`blockmem info | head -1`) fails with `BrokenPipe` instead of killing the
//! process, and `print!`/`println!` turn that failure into a panic: a message on
//! stderr and exit status 101. The crate therefore never prints with them; every write
//! to stdout goes through this module, which returns the error:
//!
//! * [`print`](fn@print), for commands whose output is their result (`info`, `run`,
//!   `calibrate`): they return the error, and `main` ends quietly with status 0 when
//!   [`is_broken_pipe`] says that is what it was, as ripgrep does. The reader asked for
//!   no more; that is not a failure.
//! * [`print_lossy`], for commands whose results are files (`lab`, `trace report`):
//!   the first failed write silences the rest and the command goes on to write its
//!   files.
//!
//! Restoring SIGPIPE's default action instead (C's convention: killed by the signal,
//! status 141) needs no care at each write, but would kill `blockmem lab --out DIR |
//! head` at its first table, before it writes DIR.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes all of `text` to stdout and flushes it; a closed pipe is an `Err` of kind
/// `BrokenPipe` (see the module docs).
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text` to stdout; after a write fails (a closed pipe), writes nothing more.
pub fn print_lossy(text: &str) {
    static CLOSED: AtomicBool = AtomicBool::new(false);
    if !CLOSED.load(Ordering::Relaxed) && print(text).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// True if `err`, or any error it wraps, is an I/O error of kind `BrokenPipe`.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_found_under_context() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("printing the report");
        assert!(is_broken_pipe(&e));
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::NotFound));
        assert!(!is_broken_pipe(&e));
        assert!(!is_broken_pipe(&anyhow::anyhow!("broken pipe")));
    }
}
