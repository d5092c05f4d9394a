//! A real trace (`tests/data/perl.trace`: `blockmem trace -- perl -e …`, 20 KB) mutated
//! 10,000 times with a fixed seed — bit flips, truncations, insertions, deletions, and
//! changes aimed at the fields a reader trusts (header sizes and counts, block lengths,
//! record counts and buffer indexes, the varints of sizes, addresses and deltas) — must
//! never crash, panic, map without bound or stall the report: each mutation goes
//! through what `blockmem trace report` does (parse, analyse, the timed libc replay,
//! tables, JSON) in this process, and the first 200 also through the `blockmem`
//! binary, which must exit 0 or 2 (with a message), never by a signal, within 5 s.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use blockmem_lab::fuzzing;
use blockmem_lab::lab::timer::Timer;
use blockmem_lab::trace::estimate::ReplayLimits;

const FIXTURE: &[u8] = include_bytes!("data/perl.trace");
const MUTATIONS: usize = 10_000;
const THROUGH_BINARY: usize = 200;
const LIMIT: Duration = Duration::from_secs(5);

/// splitmix64: a fixed seed gives the same 10,000 files on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A value of random magnitude: small, near a power of two, or anything.
    fn value(&mut self) -> u64 {
        match self.below(4) {
            0 => self.next() % 256,
            1 => 1u64 << self.below(64),
            2 => (1u64 << self.below(64)).wrapping_sub(1),
            _ => self.next(),
        }
    }
}

/// The blocks of the fixture: (start of the framing, payload length).
fn blocks(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= data.len() {
        let len = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((at, len));
        at += 12 + len;
    }
    out
}

fn put(data: &mut [u8], at: usize, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        if let Some(slot) = data.get_mut(at + i) {
            *slot = *b;
        }
    }
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// One mutation of `d` (in place; the length may change).
fn mutate_once(rng: &mut Rng, d: &mut Vec<u8>, layout: &[(usize, usize)]) {
    let (at, len) = layout[rng.below(layout.len())];
    let inside = at + 12 + rng.below(len.max(1));
    match rng.below(8) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let p = rng.below(d.len());
                d[p] ^= 1 << rng.below(8);
            }
        }
        1 => d.truncate(rng.below(d.len())),
        2 => {
            let p = rng.below(d.len() + 1);
            let junk: Vec<u8> = (0..1 + rng.below(64)).map(|_| rng.next() as u8).collect();
            d.splice(p..p, junk);
        }
        3 => {
            let p = rng.below(d.len());
            let end = (p + 1 + rng.below(256)).min(d.len());
            d.drain(p..end);
        }
        // A block's length, a record block's buffer index or record count.
        4 => {
            let field = at + [8, 12, 16][rng.below(3)];
            put(d, field, &(rng.value() as u32).to_le_bytes());
        }
        // A header field (sizes, counts, clocks) or any u32/u64 in a payload.
        5 => {
            let v = rng.value();
            let bytes = v.to_le_bytes();
            put(d, inside, &bytes[..[4, 8][rng.below(2)]]);
        }
        // A varint inside a record: a size, an address delta, a TSC delta.
        _ => put(d, inside, &varint(rng.value())),
    }
}

/// Mutation `i` of the fixture (1 to 3 changes).
fn mutation(rng: &mut Rng, layout: &[(usize, usize)]) -> Vec<u8> {
    let mut d = FIXTURE.to_vec();
    for _ in 0..1 + rng.below(3) {
        if d.is_empty() {
            break;
        }
        mutate_once(rng, &mut d, layout);
    }
    d
}

fn all_mutations() -> Vec<Vec<u8>> {
    let layout = blocks(FIXTURE);
    assert!(
        layout.len() >= 3,
        "the fixture has a header, records and a trailer"
    );
    let mut rng = Rng(28);
    (0..MUTATIONS)
        .map(|_| mutation(&mut rng, &layout))
        .collect()
}

#[test]
fn ten_thousand_mutated_traces_report_or_fail_cleanly_in_process() {
    // The unmutated fixture reads without warnings.
    let (text, a) = fuzzing::trace_report(FIXTURE, None).unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert!(text.contains("perl"), "{text}");
    let timer = Timer::calibrate(Duration::from_millis(5));
    let limits = ReplayLimits {
        max_call: 1 << 20,
        map_budget: 64 << 20,
        copy_budget: 256 << 20,
        reps: 1,
    };
    let (mut failed, mut errors, mut slowest) = (Vec::new(), 0, Duration::ZERO);
    for (i, m) in all_mutations().iter().enumerate() {
        let t = Instant::now();
        let r = std::panic::catch_unwind(|| fuzzing::trace_report(m, Some((&timer, limits))));
        let took = t.elapsed();
        slowest = slowest.max(took);
        match r {
            Err(_) => failed.push(format!("mutation {i}: panicked")),
            Ok(Err(e)) if e.to_string().is_empty() => {
                failed.push(format!("mutation {i}: an error without a message"))
            }
            Ok(Err(_)) => errors += 1,
            Ok(Ok(_)) => {}
        }
        if took > LIMIT {
            failed.push(format!("mutation {i}: took {took:?}"));
        }
    }
    eprintln!(
        "{MUTATIONS} mutated traces: {errors} refused with an error, the rest reported; slowest {slowest:?}"
    );
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Runs `blockmem trace report FILE`; returns (exit code or None for a signal, stderr,
/// time), killing it past the limit.
fn report(file: &std::path::Path) -> (Option<i32>, String, Duration) {
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_blockmem"))
        .args(["trace", "report"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run blockmem");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err, t.elapsed());
        }
        if t.elapsed() > LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            return (None, "killed after 5 s".into(), t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn mutated_traces_through_the_binary_exit_0_or_2() {
    through_the_binary(THROUGH_BINARY);
}

/// All 10,000 through the binary (about 15 minutes on 2 cores):
/// `cargo test --release -p blockmem-lab --test trace_mutations -- --ignored`.
#[test]
#[ignore]
fn all_mutated_traces_through_the_binary_exit_0_or_2() {
    through_the_binary(MUTATIONS);
}

fn through_the_binary(count: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut failed, mut codes, mut slowest) = (Vec::new(), [0usize; 3], Duration::ZERO);
    for (i, m) in all_mutations().iter().take(count).enumerate() {
        let file = dir.path().join(format!("m{i}"));
        std::fs::write(&file, m).unwrap();
        let (code, err, took) = report(&file);
        let clean = match code {
            Some(0) => true,
            Some(2) => err.contains("blockmem: error: "),
            _ => false,
        };
        if !clean || took > LIMIT {
            failed.push(format!("mutation {i}: exit {code:?} after {took:?}: {err}"));
        }
        codes[match code {
            Some(0) => 0,
            Some(2) => 1,
            _ => 2,
        }] += 1;
        slowest = slowest.max(took);
    }
    eprintln!(
        "{count} mutated traces through the binary: {} exit 0, {} exit 2, {} otherwise; slowest {slowest:?}",
        codes[0], codes[1], codes[2]
    );
    assert!(failed.is_empty(), "{failed:#?}");
}
