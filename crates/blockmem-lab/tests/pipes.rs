//! A reader of `blockmem`'s stdout that goes away early (`blockmem info | head -1`)
//! ends the command quietly: status 0, nothing on stderr about it, no panic.
//!
//! Two readers per command: one that closed its end before the command wrote anything
//! (every write fails, deterministically), and one that takes the first line and then
//! closes, as `head -1` does (the command may or may not write after that, depending on
//! how much the pipe holds; either way the end must be clean).

#[path = "../../blockmem-preload/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::Command;

/// The `blockmem` binary, hermetic (see `common::plain`).
fn blockmem(args: &[&str]) -> Command {
    let mut c = common::plain(env!("CARGO_BIN_EXE_blockmem"));
    c.args(args);
    c
}

/// Runs `c` with stdout into a pipe whose reader reads `lines` lines and closes;
/// panics unless it ends with status 0 and a stderr free of panics and pipe errors.
fn ends_quietly(mut c: Command, lines: usize) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    let mut reader = Some(reader);
    if lines == 0 {
        reader = None;
    }
    c.stdout(writer).stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("spawn blockmem");
    // The test's copy of the write end goes with the command, so the reader sees only the
    // child's.
    drop(c);
    if let Some(r) = reader {
        let mut r = BufReader::new(r);
        for _ in 0..lines {
            let mut line = String::new();
            r.read_line(&mut line).expect("read a line");
            assert!(!line.is_empty(), "no output");
        }
    }
    let out = child.wait_with_output().expect("wait for blockmem");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ended with {} after {lines} line(s) read:\n{err}",
        out.status
    );
    for bad in ["panicked", "Broken pipe", "error"] {
        assert!(!err.contains(bad), "{bad} on stderr: {err}");
    }
}

#[test]
fn info_ends_quietly_when_its_reader_goes_away() {
    for lines in [0, 1] {
        ends_quietly(blockmem(&["info"]), lines);
        ends_quietly(blockmem(&["info", "--json"]), lines);
    }
}

#[test]
fn run_ends_quietly_when_its_reader_goes_away() {
    common::have("true")
        .then_some(())
        .expect("true is not installed: run scripts/deps.sh");
    for lines in [0, 1] {
        let mut c = blockmem(&["run", "--runs", "1", "--", "true"]);
        c.env("BLOCKMEM_PRELOAD_PATH", common::shim());
        ends_quietly(c, lines);
    }
}

#[test]
fn help_ends_quietly_when_its_reader_goes_away() {
    for lines in [0, 1] {
        ends_quietly(blockmem(&["--help"]), lines);
    }
}
