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
        Pair::with_offsets_to(MAX_ALIGN, max_n, seed)
    }

    /// As [`Pair::new`], with room for source and destination offsets below `max_off`.
    fn with_offsets_to(max_off: usize, max_n: usize, seed: u64) -> Pair {
        let len = Self::BASE + max_off + max_n + Self::BASE;
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

/// The destination 1-31 bytes past the source modulo 4 KiB, where `rep_movsb` hands
/// the copy to a vector kernel (`rep movsb` is many times slower there): every method,
/// copies and disjoint moves, at every distance from 0 to 40 bytes and within 40 bytes
/// of one and two pages (both buffers page-aligned, so the offsets' difference is the
/// distance modulo 4 KiB), sizes on both sides of the kernels' thresholds.
#[test]
fn every_distance_around_the_short_alias_band() {
    let near = |page: usize| (page.saturating_sub(40)..=page + 40).collect::<Vec<_>>();
    let mut dists: Vec<usize> = (0..=40).collect();
    dists.extend(near(4096));
    dists.extend(near(8192));
    dists.sort_unstable();
    dists.dedup();
    let sizes = [33, 100, 2049, 4096 + 5, (64 << 10) + 3];
    let max_n = *sizes.iter().max().unwrap();
    let src_off = 17;
    let mut pair = Pair::with_offsets_to(src_off + 8192 + 41, max_n, 4);
    for op in [Op::Copy, Op::Move] {
        let ms = methods(op);
        let mut cases = 0;
        for m in &ms {
            for &n in &sizes {
                for &d in &dists {
                    assert!(pair.check(m, op, n, src_off, src_off + d));
                    // The source past the destination by the same distance.
                    if d > src_off {
                        assert!(pair.check(m, op, n, d, src_off));
                        cases += 1;
                    }
                    cases += 1;
                }
            }
        }
        report("distances around 0, 4 KiB and 8 KiB", op, &ms, cases);
    }
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

/// A decision table with band edges at sizes cheap to test and odd ones (so a kernel's
/// own block steps do not line up with them), every kernel in some band, and probes in
/// every unknown row of some hint.
const EDGES_TABLE: &str = "version = 2
llc_effective = 256KiB
copy.auto.unknown = from 0: sse2; from 3000: rep_movsb; from 6000: avx2_pf; from 9000: probe
copy.auto.cached = from 0: avx512; from 20000: rep_movsb
copy.auto.cold = from 0: avx2_pw; from 12000: avx512_pw; from 70001: avx2_pf_nt; from 300000: avx512_nt
copy.reuse.unknown = from 0: avx2; from 4KiB: probe; from 1000003: avx2_nt
copy.reuse.cached = from 0: avx2_pf
copy.reuse.cold = from 0: avx2_nt
copy.noreuse.unknown = from 0: avx2_nt; from 20000: probe
copy.noreuse.cold = from 0: avx2_pf_nt
set.auto.unknown = from 0: sse2; from 3000: rep_stosb; from 5000: avx512; from 9000: probe
set.auto.cached = from 0: avx2; from 50000: rep_stosb
set.auto.cold = from 0: avx512_nt; from 70001: clzero
set.reuse.unknown = from 0: rep_stosb; from 300000: avx2_nt
set.noreuse.unknown = from 0: avx2_nt; from 4096: probe
set.noreuse.cold = from 0: clzero
";

/// The public entry points across every band edge of an installed table ±1, with every
/// probe forced to find the destination cached and then cold (through the table's hit
/// threshold), every hint, copy, move, set and zero.
#[test]
fn auto_across_every_band_edge_plus_minus_one() {
    use blockmem::profile::{self, State};
    let _state = common::lock_global();
    let (t, _) = profile::parse(
        EDGES_TABLE.as_bytes(),
        blockmem::builtin::Class::Baseline.table(),
    )
    .unwrap();
    let edges = common::band_edges(&t);
    let mut pair = Pair::new(edges.iter().max().unwrap() + 2, 5);
    let ms: Vec<Method> = blockmem::Hint::ALL.into_iter().map(Method::Auto).collect();
    let mut cases = 0;
    for finds in [State::Cached, State::Cold, State::Fresh] {
        let mut v = t.clone();
        v.probe_hit_max = if finds == State::Cold { 0 } else { u32::MAX };
        v.probe_fault_min = if finds == State::Fresh { 0 } else { u32::MAX };
        blockmem::dispatch::install(&v);
        for m in &ms {
            for &at in &edges {
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
        "auto across every band edge ±1, probes finding cached and cold",
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
