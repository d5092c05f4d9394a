//! The contention input through the dispatcher: calls large enough count themselves
//! among the large calls in flight, a call that finds enough of them reads the
//! contended rows, the count returns to zero, and switching the input off leaves every
//! call on the rows of a call alone. Its own test binary: the installed table and the
//! switch are process-wide.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use blockmem::kernel::{KernelId, Op};
use blockmem::profile::{self, Table};
use blockmem::{dispatch, Hint};

/// Copies from 1 MiB run `sse2` alone and `portable` when contended, whether or not
/// the destination was written lately; sets never differ.
const TABLE: &str = "version = 2
contended_calls = 2
copy.auto.unknown = from 0: sse2
copy.auto.unknown.contended = from 0: sse2; from 1MiB: portable
copy.auto.cached = from 0: sse2
copy.auto.cached.contended = from 0: sse2; from 1MiB: portable
set.auto.unknown = from 0: sse2
";

/// Held by each test: the table, the switch and the count are the process's.
static GLOBAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn table() -> Table {
    profile::parse(TABLE.as_bytes(), blockmem::builtin::Class::Baseline.table())
        .expect("the test table parses")
        .0
}

/// A thread copying 32 MiB blocks with the policy until told to stop; returns whether
/// every copy was right.
fn background(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let n = 32 << 20;
        let src: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; n];
        let mut ok = true;
        while !stop.load(Ordering::Relaxed) {
            blockmem::copy_with(&mut dst, &src, Hint::Auto);
            ok &= dst == src;
            dst[n / 2] ^= 1;
        }
        ok
    })
}

/// Decisions for a 2 MiB copy taken while the background copy was in flight both
/// before and after: (contended ones, alone ones).
fn decisions_while_busy(rounds: usize) -> (usize, usize) {
    let (src, dst) = (vec![1u8; 2 << 20], vec![0u8; 2 << 20]);
    let (mut contended, mut alone) = (0, 0);
    for _ in 0..rounds {
        let before = dispatch::in_flight();
        // SAFETY: both buffers hold the 2 MiB the decision may probe.
        let k = unsafe {
            dispatch::decide_for_call(Op::Copy, dst.as_ptr(), src.as_ptr(), 2 << 20, Hint::Auto)
        };
        if before >= 1 && dispatch::in_flight() >= 1 {
            match k {
                Some(KernelId::Portable) => contended += 1,
                _ => alone += 1,
            }
        }
    }
    (contended, alone)
}

#[test]
fn a_call_beside_another_large_call_reads_the_contended_rows() {
    let _g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    dispatch::install(&table());
    let plan = dispatch::plan();
    assert_eq!(
        plan.contend_from(profile::Family::Copy, Hint::Auto),
        1 << 20
    );
    assert_eq!(
        plan.contend_from(profile::Family::Set, Hint::Auto),
        usize::MAX
    );
    let alone_kernel = dispatch::choose(Op::Copy, 2 << 20, Hint::Auto, false);
    let contended = blockmem::policy::Load::Contended;
    assert_eq!(plan.contended_calls(), 2);
    assert_eq!(
        plan.decide_under(
            contended,
            Op::Copy,
            2 << 20,
            Hint::Auto,
            false,
            profile::State::Unknown
        ),
        Some(KernelId::Portable)
    );

    // Alone: the rows.
    assert_eq!(dispatch::in_flight(), 0);
    let (src, dst) = (vec![1u8; 2 << 20], vec![0u8; 2 << 20]);
    // SAFETY: as in `decisions_while_busy`.
    let k = unsafe {
        dispatch::decide_for_call(Op::Copy, dst.as_ptr(), src.as_ptr(), 2 << 20, Hint::Auto)
    };
    assert_eq!(k, alone_kernel);

    // Beside a thread copying: the contended rows (every decision taken while the
    // other call was in flight, bar a rare one that raced its end).
    let stop = Arc::new(AtomicBool::new(false));
    let bg = background(stop.clone());
    while dispatch::in_flight() == 0 {
        std::hint::spin_loop();
    }
    let (contended, alone) = decisions_while_busy(2000);
    stop.store(true, Ordering::Relaxed);
    assert!(bg.join().unwrap(), "the background copies were wrong");
    assert!(
        contended > 0 && contended >= 10 * alone,
        "contended {contended}, alone {alone}"
    );
    assert_eq!(
        dispatch::in_flight(),
        0,
        "every counted call took itself off"
    );

    // The input switched off: nothing counts, every call reads the rows.
    dispatch::sense_contention(false);
    assert_eq!(
        dispatch::plan().contend_from(profile::Family::Copy, Hint::Auto),
        usize::MAX
    );
    let stop = Arc::new(AtomicBool::new(false));
    let bg = background(stop.clone());
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(dispatch::in_flight(), 0);
    // SAFETY: as above.
    let k = unsafe {
        dispatch::decide_for_call(Op::Copy, dst.as_ptr(), src.as_ptr(), 2 << 20, Hint::Auto)
    };
    assert_eq!(k, alone_kernel);
    stop.store(true, Ordering::Relaxed);
    assert!(bg.join().unwrap());
    dispatch::sense_contention(true);
    assert_eq!(
        dispatch::plan().contend_from(profile::Family::Copy, Hint::Auto),
        1 << 20
    );
}

/// Many threads copying, moving and setting large and small blocks at once under a
/// table with contended rows: every byte right, and the count back at zero.
#[test]
fn calls_under_contention_stay_correct() {
    let _g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    dispatch::install(&table());
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng: usize = t * 7919 + 1;
                for round in 0..12 {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let n = [100, 5000, 300 << 10, 1 << 20, 3 << 20][(rng >> 33) % 5] + round;
                    let src: Vec<u8> = (0..n).map(|i| (i ^ (t * 31) ^ round) as u8).collect();
                    let mut dst = vec![0u8; n];
                    blockmem::copy(&mut dst, &src);
                    assert_eq!(dst, src, "copy of {n}");
                    blockmem::set(&mut dst, t as u8);
                    assert!(dst.iter().all(|&b| b == t as u8), "set of {n}");
                    let mut buf = src.clone();
                    buf.extend_from_slice(&[0u8; 64]);
                    blockmem::move_within(&mut buf, 0..n, 64);
                    assert_eq!(&buf[64..], &src[..], "move of {n}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(dispatch::in_flight(), 0);
}
