//! Property tests: random sizes up to 64 MiB (log-uniform, so small and huge sizes are
//! both common), random misalignments and random overlaps, every available kernel and
//! entry point, each checked byte for byte against a model.

mod common;

use blockmem::kernel::Op;
use common::{first_diff, methods, Aligned, Rng};
use proptest::prelude::*;
use std::cell::RefCell;

const MAX_N: usize = 64 << 20;
const PAD: usize = 4096;

thread_local! {
    // One random source and one destination, allocated once per thread: 64 MiB cases
    // would otherwise spend their time in the allocator and in page faults.
    static BUFS: RefCell<(Aligned, Aligned)> = RefCell::new({
        let mut src = Aligned::new(2 * MAX_N + 2 * PAD);
        Rng::new(21).fill(src.slice_mut());
        (src, Aligned::new(2 * MAX_N + 2 * PAD))
    });
}

/// Log-uniform sizes in 0..=64 MiB.
fn size() -> impl Strategy<Value = usize> {
    (0u32..=26, any::<u64>()).prop_map(|(bits, r)| {
        let hi = 1usize << bits;
        (r as usize % hi + hi / 2).min(MAX_N)
    })
}

fn run_copy_like(op: Op, n: usize, so: usize, d_off: usize) -> Result<(), TestCaseError> {
    BUFS.with(|b| {
        let (src, dst) = &mut *b.borrow_mut();
        for m in methods(op) {
            if matches!(m, common::Method::Kernel(k) if k.name() == "naive") && n > 1 << 20 {
                continue;
            }
            let (s0, d0) = (PAD + so, PAD + d_off);
            dst.slice_mut()[d0 - 64..d0 + n + 64].fill(0xa7);
            let byte = 0x3c;
            // SAFETY: both windows lie inside their buffers.
            let ran = unsafe { m.run(op, dst.as_ptr().add(d0), src.as_ptr().add(s0), byte, n) };
            prop_assert!(ran, "method lacks op");
            let got = &dst.slice()[d0..d0 + n];
            let bad = match op {
                Op::Copy | Op::Move => first_diff(got, &src.slice()[s0..s0 + n]),
                Op::Set => got.iter().position(|&x| x != byte),
                Op::Zero => got.iter().position(|&x| x != 0),
            };
            prop_assert!(
                bad.is_none(),
                "{} {} n={n} so={so} do={d_off}: wrong byte at {:?}",
                m.name(),
                op.name(),
                bad
            );
            let canaries = dst.slice()[d0 - 64..d0]
                .iter()
                .chain(&dst.slice()[d0 + n..d0 + n + 64])
                .all(|&x| x == 0xa7);
            prop_assert!(
                canaries,
                "{} {} n={n}: canary overwritten",
                m.name(),
                op.name()
            );
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn copy_random(n in size(), so in 0usize..64, d_off in 0usize..64) {
        run_copy_like(Op::Copy, n, so, d_off)?;
    }

    #[test]
    fn set_and_zero_random(n in size(), d_off in 0usize..64) {
        run_copy_like(Op::Set, n, 0, d_off)?;
        run_copy_like(Op::Zero, n, 0, d_off)?;
    }

    #[test]
    fn move_random_overlap(n in size(), base in 0usize..64, dist_frac in 0.0f64..1.5, dst_above in any::<bool>()) {
        // dist_frac < 1 overlaps; >= 1 is disjoint (adjacent or apart).
        let dist = ((n as f64 * dist_frac) as usize).clamp(1, MAX_N);
        BUFS.with(|b| {
            let (_, buf) = &mut *b.borrow_mut();
            let lo = PAD + base;
            let (from, to) = if dst_above { (lo, lo + dist) } else { (lo + dist, lo) };
            let w = lo - 64..lo + dist + n + 64;
            let mut rng = Rng::new(n as u64 ^ dist as u64);
            for m in methods(Op::Move) {
                if matches!(m, common::Method::Kernel(k) if k.name() == "naive") && n > 1 << 20 {
                    continue;
                }
                rng.fill(&mut buf.slice_mut()[w.clone()]);
                let mut want = buf.slice()[w.clone()].to_vec();
                want.copy_within(from - w.start..from - w.start + n, to - w.start);
                // SAFETY: both ranges lie inside buf.
                let ran = unsafe { m.run(Op::Move, buf.as_ptr().add(to), buf.as_ptr().add(from), 0, n) };
                prop_assert!(ran, "method lacks move");
                let bad = first_diff(&buf.slice()[w.clone()], &want);
                prop_assert!(bad.is_none(), "{} move n={n} from={from} to={to}: wrong byte at {:?}", m.name(), bad);
            }
            Ok(())
        })?;
    }
}
