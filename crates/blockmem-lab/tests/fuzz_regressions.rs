//! Replays every input that once made a fuzz target fail
//! (`tests/fuzz_regressions/<target>/`, see `scripts/fuzz.sh`) and the fuzzers' seeds
//! (`fuzz/seeds/<target>/`) through the same entry points, on stable Rust: each must
//! return within 5 s without panicking. Trace inputs also go through the timed libc
//! estimate with its default limits (the replay that once crashed on them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blockmem_lab::fuzzing;
use blockmem_lab::lab::timer::Timer;
use blockmem_lab::trace::estimate::ReplayLimits;

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        root.join("tests/fuzz_regressions").join(target),
        root.join("../../fuzz/seeds").join(target),
    ] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    files.sort();
    files
}

/// Runs `f` on every input of `target`; fails naming each input that panicked or took
/// over 5 s.
fn replay(target: &str, f: impl Fn(&[u8])) -> usize {
    let files = inputs(target);
    let mut failures = Vec::new();
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let t = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&data)));
        let took = t.elapsed();
        if result.is_err() {
            failures.push(format!("{}: panicked", path.display()));
        } else if took > Duration::from_secs(5) {
            failures.push(format!("{}: took {took:?}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{target}: {failures:#?}");
    files.len()
}

#[test]
fn every_target_survives_its_regressions_and_seeds() {
    for target in fuzzing::TARGETS {
        let n = replay(target, |data| fuzzing::run(target, data));
        assert!(n > 0, "no inputs for {target}");
    }
}

#[test]
fn traces_survive_the_timed_replay() {
    let timer = Timer::calibrate(Duration::from_millis(5));
    let n = replay("trace_reader", |data| {
        let _ = fuzzing::trace_report(data, Some((&timer, ReplayLimits::default())));
    });
    assert!(n >= 7);
}
