//! Differential tests: every available kernel and every op, plus the public entry points
//! under each hint, against a byte-by-byte model.
//!
//! * every size 0..=1024 at every source and destination misalignment 0..63;
//! * every internal threshold ±1 and powers of two ±1 up to 16 MiB;
//! * moves with overlap in both directions: every distance 1..=64, then doubling;
//! * 64 canary bytes on each side of every destination, checked after every call, and
//!   the source checked unmodified.
//!
//! Run with `BLOCKMEM_TEST_DISABLE=avx` to prove the suite passes on the portable/SSE2
//! path alone (scripts/test.sh does).

mod common;

use blockmem::kernel::Op;
use blockmem::KernelId;
use common::{first_diff, interesting_sizes, methods, report, Aligned, Method, Rng};

const CANARY: usize = 64;
const MAX_ALIGN: usize = 64;
const SMALL_MAX_N: usize = 1024;
const LARGE_MAX_N: usize = 16 << 20;

/// A source and a destination buffer with room for `max_n` bytes at any misalignment,
/// with canaries on both sides. The source is random and never changes.
struct Pair {
    src: Aligned,
    pristine: Vec<u8>,
    dst: Aligned,
    fill: u8,
}

impl Pair {
    const BASE: usize = 4096;

    fn new(max_n: usize, seed: u64) -> Pair {
        let len = Self::BASE + MAX_ALIGN + max_n + Self::BASE;
        let mut src = Aligned::new(len);
        Rng::new(seed).fill(src.slice_mut());
        let pristine = src.slice().to_vec();
        Pair {
            src,
            pristine,
            dst: Aligned::new(len),
            fill: 0,
        }
    }

    /// Runs `op` with `n` bytes at the given misalignments and checks every byte of the
    /// destination window and of the source window. Returns false if unsupported.
    fn check(&mut self, m: &Method, op: Op, n: usize, src_off: usize, dst_off: usize) -> bool {
        let d0 = Self::BASE + dst_off;
        let s0 = Self::BASE + src_off;
        // A fill value that changes every call, so a kernel that skips a byte cannot be
        // hidden by the previous call having written the right value there.
        self.fill = self.fill.wrapping_add(101);
        let fill = self.fill;
        let byte = fill ^ 0x5a;
        self.dst.slice_mut()[d0 - CANARY..d0 + n + CANARY].fill(fill);
        let dst = self.dst.as_ptr().wrapping_add(d0);
        let src = self.src.as_ptr().wrapping_add(s0) as *const u8;
        // SAFETY: both windows lie inside their own allocations (BASE + 64 + n fits).
        if !unsafe { m.run(op, dst, src, byte, n) } {
            return false;
        }
        let d = self.dst.slice();
        let ctx = || {
            format!(
                "{} {} n={n} src_off={src_off} dst_off={dst_off}",
                m.name(),
                op.name()
            )
        };
        let want: &[u8] = match op {
            Op::Copy | Op::Move => &self.pristine[s0..s0 + n],
            Op::Set => &vec![byte; n],
            Op::Zero => &vec![0; n],
        };
        if let Some(i) = first_diff(&d[d0..d0 + n], want) {
            panic!(
                "{}: wrong byte at {i}: got {:#04x}, want {:#04x}",
                ctx(),
                d[d0 + i],
                want[i]
            );
        }
        for (side, range) in [
            ("before", d0 - CANARY..d0),
            ("after", d0 + n..d0 + n + CANARY),
        ] {
            if let Some(i) = d[range.clone()].iter().position(|&b| b != fill) {
                panic!(
                    "{}: canary {side} the destination overwritten at {}",
                    ctx(),
                    range.start + i
                );
            }
        }
        if matches!(op, Op::Copy | Op::Move) {
            let w = s0 - CANARY..s0 + n + CANARY;
            if let Some(i) = first_diff(&self.src.slice()[w.clone()], &self.pristine[w.clone()]) {
                panic!("{}: source modified at {}", ctx(), w.start + i);
            }
        }
        true
    }
}

/// Every size 0..=1024 × every src misalignment × every dst misalignment.
fn all_small_sizes_and_alignments(op: Op) {
    let ms = methods(op);
    let mut pair = Pair::new(SMALL_MAX_N, 1);
    let mut cases = 0;
    let src_offsets: Vec<usize> = if matches!(op, Op::Copy | Op::Move) {
        (0..MAX_ALIGN).collect()
    } else {
        vec![0]
    };
    for m in &ms {
        for n in 0..=SMALL_MAX_N {
            for &so in &src_offsets {
                for d_off in 0..MAX_ALIGN {
                    assert!(pair.check(m, op, n, so, d_off));
                    cases += 1;
                }
            }
        }
    }
    report("all sizes 0..=1024 x alignments", op, &ms, cases);
}

#[test]
fn copy_every_small_size_and_alignment() {
    all_small_sizes_and_alignments(Op::Copy);
}

#[test]
fn move_disjoint_every_small_size_and_alignment() {
    all_small_sizes_and_alignments(Op::Move);
}

#[test]
fn set_every_small_size_and_alignment() {
    all_small_sizes_and_alignments(Op::Set);
}

#[test]
fn zero_every_small_size_and_alignment() {
    all_small_sizes_and_alignments(Op::Zero);
}

/// Misalignment pairs used for the large sizes (the full 64×64 grid is for ≤ 1024).
const LARGE_OFFSETS: [(usize, usize); 6] = [(0, 0), (1, 0), (0, 1), (33, 7), (63, 63), (17, 48)];

fn large_sizes(op: Op) {
    let ms = methods(op);
    let mut pair = Pair::new(LARGE_MAX_N + 1, 2);
    let mut cases = 0;
    for m in &ms {
        for n in interesting_sizes(LARGE_MAX_N) {
            // The naive kernel is the slow reference: keep its large runs short.
            if matches!(m, Method::Kernel(k) if k.name() == "naive") && n > (1 << 20) + 1 {
                continue;
            }
            let offsets: &[(usize, usize)] = if n > (1 << 20) + 1 {
                &LARGE_OFFSETS[..3]
            } else {
                &LARGE_OFFSETS
            };
            for &(so, d_off) in offsets {
                assert!(pair.check(m, op, n, so, d_off));
                cases += 1;
            }
        }
    }
    report(
        "thresholds ±1 and powers of two ±1 to 16 MiB",
        op,
        &ms,
        cases,
    );
}

#[test]
fn copy_thresholds_and_powers_of_two() {
    large_sizes(Op::Copy);
}

#[test]
fn move_disjoint_thresholds_and_powers_of_two() {
    large_sizes(Op::Move);
}

#[test]
fn set_thresholds_and_powers_of_two() {
    large_sizes(Op::Set);
}

#[test]
fn zero_thresholds_and_powers_of_two() {
    large_sizes(Op::Zero);
}

/// Distances for overlapping moves: dense up to 64 for sizes up to 1024 (sparse around
/// vector widths above that), then doubling up to `n`.
fn distances(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = if n <= SMALL_MAX_N {
        (1..=64).collect()
    } else {
        vec![1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65]
    };
    let mut d = 128;
    while d < n {
        v.extend([d - 1, d, d + 1]);
        d *= 2;
    }
    if n > 1 {
        v.extend([n - 1, n / 2]);
    }
    v.retain(|&d| d >= 1 && d < n.max(2));
    v.sort_unstable();
    v.dedup();
    v
}

/// One overlapping move of `n` bytes within one buffer, checked against the model.
fn check_overlap(m: &Method, buf: &mut Aligned, rng: &mut Rng, n: usize, from: usize, to: usize) {
    let lo = from.min(to) - CANARY;
    let hi = from.max(to) + n + CANARY;
    rng.fill(&mut buf.slice_mut()[lo..hi]);
    let before = buf.slice()[lo..hi].to_vec();
    let mut want = before.clone();
    want.copy_within(from - lo..from - lo + n, to - lo);
    let p = buf.as_ptr();
    // SAFETY: both ranges lie inside `buf`; move allows overlap.
    assert!(unsafe { m.run(Op::Move, p.wrapping_add(to), p.wrapping_add(from), 0, n) });
    if let Some(i) = first_diff(&buf.slice()[lo..hi], &want) {
        panic!(
            "{} move n={n} from={from} to={to} (distance {}): wrong byte at window offset {i} (dst offset {})",
            m.name(),
            to as isize - from as isize,
            lo as isize + i as isize - to as isize
        );
    }
}

fn overlapping_moves(sizes: &[usize], bases: &[usize], label: &str) {
    let ms = methods(Op::Move);
    let max_n = *sizes.iter().max().unwrap();
    let mut buf = Aligned::new(4096 + 2 * max_n + 2 * 4096);
    let mut rng = Rng::new(3);
    let mut cases = 0;
    for m in &ms {
        for &n in sizes {
            if matches!(m, Method::Kernel(k) if k.name() == "naive") && n > (1 << 20) + 1 {
                continue;
            }
            for d in distances(n) {
                for &base in bases {
                    let low = 4096 + base;
                    // dst below src (forward-safe) and dst above src (needs backward).
                    check_overlap(m, &mut buf, &mut rng, n, low + d, low);
                    check_overlap(m, &mut buf, &mut rng, n, low, low + d);
                    cases += 2;
                }
            }
        }
    }
    report(label, Op::Move, &ms, cases);
}

#[test]
fn move_overlapping_every_small_size() {
    let sizes: Vec<usize> = (0..=SMALL_MAX_N).collect();
    overlapping_moves(
        &sizes,
        &[0, 1, 31, 63],
        "overlapping moves, sizes 0..=1024, distances 1..=64 then doubling",
    );
}

#[test]
fn move_overlapping_large_sizes() {
    let sizes: Vec<usize> = interesting_sizes(4 << 20)
        .into_iter()
        .filter(|&n| n > SMALL_MAX_N)
        .collect();
    overlapping_moves(
        &sizes,
        &[7],
        "overlapping moves, thresholds and powers of two to 4 MiB",
    );
}

#[test]
fn move_to_itself_is_identity() {
    let ms = methods(Op::Move);
    let mut buf = Aligned::new(1 << 16);
    Rng::new(4).fill(buf.slice_mut());
    let before = buf.slice().to_vec();
    for m in &ms {
        for n in [0, 1, 33, 129, 4096, 60000] {
            let p = buf.as_ptr().wrapping_add(100);
            // SAFETY: [p, p+n) lies inside buf.
            assert!(unsafe { m.run(Op::Move, p, p, 0, n) });
            assert_eq!(
                buf.slice(),
                &before[..],
                "{} move onto itself changed bytes (n={n})",
                m.name()
            );
        }
    }
}

/// The public entry points across every threshold of the profile, with probing on
/// (so the probe path runs) and every hint: each threshold ±1, copy, move, set, zero.
/// The thresholds are set low enough to test cheaply.
#[test]
fn auto_policy_thresholds_plus_minus_one() {
    common::setup();
    let mut p = blockmem::dispatch::profile();
    p.stream_auto = 300_000;
    p.stream_auto_cold_dst = 70_001;
    p.stream_no_reuse = 20_000;
    p.stream_reuse = 1_000_003;
    p.probe_min = 4_096;
    p.rep_movsb_min = 6_000;
    p.rep_movsb_max = 9_000;
    p.copy_cold_src = KernelId::Avx2Pf;
    p.copy_stream = KernelId::Avx2PfNt;
    p.copy_cold_dst = KernelId::RepMovsb;
    p.set_cold_dst = KernelId::RepStosb;
    p.rep_stosb_min = 3_000;
    p.rep_stosb_max = 5_000;
    // The second profile probes only from 64 KiB, so both rep windows start below the
    // policy's path: the dispatcher runs them as direct segments after the fast path.
    let mut q = p;
    q.probe_min = 65_536;
    q.rep_stosb_max = 50_000;
    // ... and a copy window that ends below it, so the fast kernel runs again after.
    let mut r = q;
    r.rep_movsb_max = 7_000;
    r.rep_movsb_min = 5_000;
    let mut pair = Pair::new(p.stream_reuse + 2, 5);
    let ms: Vec<Method> = blockmem::Hint::ALL.into_iter().map(Method::Auto).collect();
    let mut cases = 0;
    for p in [p, q, r] {
        blockmem::dispatch::install(&p);
        for m in &ms {
            for at in [
                p.probe_min,
                p.rep_movsb_min,
                p.rep_movsb_max,
                p.rep_stosb_min,
                p.rep_stosb_max,
                p.stream_no_reuse,
                p.stream_auto_cold_dst,
                p.stream_auto,
                p.stream_reuse,
            ] {
                for n in [at - 1, at, at + 1] {
                    for op in [Op::Copy, Op::Move, Op::Set, Op::Zero] {
                        for (so, d_off) in [(0, 0), (3, 61)] {
                            assert!(pair.check(m, op, n, so, d_off));
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    report(
        "auto across every profile threshold ±1, probing on",
        Op::Copy,
        &ms,
        cases,
    );
}

/// The slice API: lengths, ranges and panics.
#[test]
fn slice_api() {
    common::setup();
    let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut dst = vec![0u8; 5000];
    blockmem::copy(&mut dst, &src);
    assert_eq!(dst, src);
    blockmem::set(&mut dst[10..4000], 0xee);
    assert!(dst[10..4000].iter().all(|&b| b == 0xee) && dst[9] == src[9] && dst[4000] == src[4000]);
    blockmem::zero(&mut dst);
    assert!(dst.iter().all(|&b| b == 0));
    let mut buf = src.clone();
    let mut want = src.clone();
    want.copy_within(100..3100, 50);
    blockmem::move_within(&mut buf, 100..3100, 50);
    assert_eq!(buf, want);
    assert!(std::panic::catch_unwind(|| blockmem::copy(&mut [0u8; 3], &[1u8; 4])).is_err());
    assert!(std::panic::catch_unwind(|| blockmem::move_within(&mut [0u8; 10], 5..11, 0)).is_err());
    assert!(std::panic::catch_unwind(|| blockmem::move_within(&mut [0u8; 10], 0..5, 6)).is_err());
}
