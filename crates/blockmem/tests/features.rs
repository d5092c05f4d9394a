//! Masking CPU features (what `BLOCKMEM_TEST_DISABLE` and the lab use) removes kernels
//! from the available set and from the policy's choices. Its own test binary: the mask
//! is process-wide.

use blockmem::cpu::{self, Features};
use blockmem::kernel::{self, Op};
use blockmem::policy::{Probed, Probes};
use blockmem::{dispatch, Hint};
use std::sync::Mutex;

/// The tests here change process-wide state (feature mask, forced kernel, profile):
/// each holds this lock so they never observe one another mid-change.
static GLOBAL: Mutex<()> = Mutex::new(());

/// The profile the variants below start from: the defaults of a fixed synthetic host
/// (96 KiB L2, so a probe that finds the destination cold streams from 48 KiB; 32 MiB
/// LLC), never the profile of the machine running the tests, whose
/// cache sizes would move every threshold the assertions name.
fn synthetic_base() -> blockmem::profile::Profile {
    use blockmem::cpu::{SizeSource, UsedCaches, UsedSize};
    let size = |size| UsedSize {
        size,
        source: SizeSource::PerLevelLeaf,
    };
    blockmem::profile::Profile::from_caches(&UsedCaches {
        l1d: size(48 << 10),
        l2: size(96 << 10),
        llc: size(32 << 20),
        line: 64,
    })
}

#[test]
fn masking_avx_removes_avx2_kernels_and_decisions() {
    let _guard = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = cpu::features();
    cpu::disable(Features::AVX);
    let now = cpu::features();
    assert!(
        !now.contains(Features::AVX)
            && !now.contains(Features::AVX2)
            && !now.contains(Features::AVX512F)
    );
    for k in kernel::available() {
        assert!(
            !k.kernel().requires.contains(Features::AVX2),
            "{} still available",
            k.name()
        );
    }
    for op in Op::ALL {
        for hint in Hint::ALL {
            for n in [200, 1 << 20, 1 << 30] {
                let k = dispatch::choose(op, n, hint, false);
                let entry = k.kernel().expect("chosen kernel exists");
                assert!(
                    entry.is_available() && entry.supports(op),
                    "{op:?} {n} {hint:?} -> {}",
                    k.name()
                );
            }
        }
    }
    // The masked path still copies correctly through the public API.
    let src: Vec<u8> = (0..3_000_000u32).map(|i| (i ^ (i >> 8)) as u8).collect();
    let mut dst = vec![0u8; src.len()];
    blockmem::copy_with(&mut dst, &src, Hint::NoReuse);
    assert_eq!(dst, src);
    cpu::enable_all();
    assert_eq!(cpu::features(), before);
    assert!(cpu::detected_features().contains(before));
}

#[test]
fn forcing_a_kernel_applies_only_where_it_can_run() {
    let _guard = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    dispatch::force(Some(blockmem::KernelId::RepMovsb));
    assert_eq!(
        dispatch::choose(Op::Copy, 1 << 20, Hint::Auto, false),
        blockmem::KernelId::RepMovsb
    );
    // rep_movsb has no set: the policy decides.
    assert_ne!(
        dispatch::choose(Op::Set, 1 << 20, Hint::Auto, false),
        blockmem::KernelId::RepMovsb
    );
    let src = vec![7u8; 100_000];
    let mut dst = vec![0u8; 100_000];
    blockmem::copy(&mut dst, &src);
    assert_eq!(dst, src);
    dispatch::force(None);
    assert_eq!(dispatch::forced(), None);
}

/// The fast path (one atomic load instead of the policy, below the smallest size where
/// anything could differ for `Hint::Auto`) must agree with the full policy, probes
/// included, for every size below its limit.
#[test]
fn fast_path_agrees_with_the_policy() {
    let _guard = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    let host = dispatch::profile();
    let base = synthetic_base();
    let mut variants = vec![base];
    let mut p = base;
    p.probe_min = 8192;
    p.rep_movsb_min = 3000;
    p.rep_movsb_max = 5000;
    p.copy_temporal = blockmem::KernelId::Sse2;
    variants.push(p);
    p.stream_no_reuse = 100;
    p.stream_auto_cold_dst = 200;
    variants.push(p);
    // rep windows starting below the probe size: run as segments after the fast path.
    let mut r = base;
    r.probe_min = 60_000;
    r.stream_auto = 1 << 20;
    r.rep_movsb_min = 3000;
    r.rep_movsb_max = 5000;
    r.rep_stosb_min = 2500;
    r.rep_stosb_max = usize::MAX;
    variants.push(r);
    // A set window that ends below the probe size: the fast kernel again after it.
    let mut t = r;
    t.rep_stosb_max = 7000;
    variants.push(t);
    // rep windows that also serve cold destinations: no probe can change an Auto
    // call's kernel below the cold-destination streaming size, so the rep segments run
    // up to it.
    let mut c = base;
    c.probe_min = 60_000;
    c.stream_auto = 4 << 20;
    c.stream_auto_cold_dst = 1 << 20;
    c.rep_movsb_min = 3000;
    c.rep_movsb_max = usize::MAX;
    c.rep_stosb_min = 2500;
    c.rep_stosb_max = usize::MAX;
    c.copy_cold_dst = blockmem::KernelId::RepMovsb;
    c.set_cold_dst = blockmem::KernelId::RepStosb;
    c.copy_cold_src = c.copy_temporal;
    variants.push(c);
    let all = [Probed::Unknown, Probed::Cached, Probed::Cold];
    let mut segments_seen = (false, false);
    for p in variants {
        dispatch::install(&p);
        let (copy_below, copy_k, set_below, set_k) = dispatch::fast_path();
        let (copy_rep, set_rep) = dispatch::rep_segments();
        let (copy_tail, set_tail) = dispatch::fast_tails();
        let probe_from = dispatch::probe_from(Hint::Auto);
        assert_eq!(
            probe_from,
            blockmem::policy::probe_from(&p, Hint::Auto, blockmem::cpu::features())
        );
        if cfg!(target_arch = "x86_64")
            && p.stream_auto_cold_dst == 1 << 20
            && p.probe_min == 60_000
        {
            assert_eq!(probe_from, 1 << 20, "{p:?}");
            assert_eq!((copy_below, copy_rep), (3000, 1 << 20), "{p:?}");
            assert_eq!((set_below, set_rep), (2500, 1 << 20), "{p:?}");
        }
        if cfg!(target_arch = "x86_64") && p.probe_min == 60_000 && p.rep_movsb_max == 5000 {
            assert_eq!(copy_tail, 60_000, "after the 3000..5000 window: {p:?}");
            let want = if p.rep_stosb_max == 7000 { 60_000 } else { 0 };
            assert_eq!(set_tail, want, "{p:?}");
        }
        for (lo, hi, copies) in [(copy_rep, copy_tail, true), (set_rep, set_tail, false)] {
            for n in [lo, lo + 1, hi.saturating_sub(1)] {
                if n >= lo && n < hi {
                    let ops: &[(Op, bool)] = if copies {
                        &[(Op::Copy, false), (Op::Move, false), (Op::Move, true)]
                    } else {
                        &[(Op::Set, false), (Op::Zero, false)]
                    };
                    for &(op, overlap) in ops {
                        let k = dispatch::choose_probed(op, n, Hint::Auto, overlap, Probes::NONE);
                        let want = if copies { copy_k } else { set_k };
                        assert_eq!(k, want, "tail {op:?} {n} {p:?}");
                    }
                }
            }
        }
        if cfg!(target_arch = "x86_64") && p.rep_movsb_max == 5000 && p.probe_min == 60_000 {
            assert_eq!((copy_below, copy_rep), (3000, 5000), "{p:?}");
            let set_end = if p.rep_stosb_max == 7000 {
                7000
            } else {
                60_000
            };
            assert_eq!((set_below, set_rep), (2500, set_end), "{p:?}");
        }
        for n in [copy_below, copy_rep.saturating_sub(1)] {
            if n >= copy_below && n < copy_rep {
                segments_seen.0 = true;
                for (op, overlap) in [(Op::Copy, false), (Op::Move, false), (Op::Move, true)] {
                    let k = dispatch::choose_probed(op, n, Hint::Auto, overlap, Probes::NONE);
                    assert_eq!(k, blockmem::KernelId::RepMovsb, "{op:?} {n} {p:?}");
                }
            }
        }
        for n in [set_below, set_rep.saturating_sub(1)] {
            if n >= set_below && n < set_rep {
                segments_seen.1 = true;
                for op in [Op::Set, Op::Zero] {
                    let k = dispatch::choose_probed(op, n, Hint::Auto, false, Probes::NONE);
                    assert_eq!(k, blockmem::KernelId::RepStosb, "{op:?} {n} {p:?}");
                }
            }
        }
        for n in [
            129,
            130,
            1000,
            2999,
            3000,
            4096,
            8191,
            copy_below.saturating_sub(1),
        ] {
            for (src, dst) in all.iter().flat_map(|&s| all.iter().map(move |&d| (s, d))) {
                // Probes only happen from probe_from, which the fast path stays below.
                let probing = n >= probe_from;
                let probes = if probing {
                    Probes { src, dst }
                } else {
                    Probes::NONE
                };
                if n > 128 && n < copy_below {
                    for (op, overlap) in [(Op::Copy, false), (Op::Move, false), (Op::Move, true)] {
                        let k = dispatch::choose_probed(op, n, Hint::Auto, overlap, probes);
                        assert_eq!(k, copy_k, "{op:?} {n} {p:?}");
                    }
                }
                if n > 128 && n < set_below {
                    for op in [Op::Set, Op::Zero] {
                        let k = dispatch::choose_probed(op, n, Hint::Auto, false, probes);
                        assert_eq!(k, set_k, "{op:?} {n}");
                    }
                }
            }
        }
        // Copies through the fast path are correct.
        let src: Vec<u8> = (0..10_000u32).map(|i| (i * 13) as u8).collect();
        let mut dst = vec![0u8; 10_000];
        blockmem::copy(&mut dst, &src);
        assert_eq!(dst, src);
    }
    assert!(
        !cfg!(target_arch = "x86_64") || segments_seen == (true, true),
        "the rep segments were published and checked"
    );
    dispatch::force(Some(blockmem::KernelId::Naive));
    assert_eq!(
        dispatch::fast_path().0,
        0,
        "forcing a kernel disables the fast path"
    );
    dispatch::force(None);
    dispatch::install(&host);
}

/// The robust segment (copies and moves from `copy_robust_min`, through one published
/// pointer instead of the policy's path) must run what the policy would, follow the
/// segments before it without a gap, stop where a probe could change the kernel, and
/// copy correctly.
#[test]
fn the_robust_segment_runs_what_the_policy_would() {
    use blockmem::KernelId;
    let _guard = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    let host = dispatch::profile();
    let base = synthetic_base();
    let f = cpu::features();
    let usable = |k: KernelId| {
        blockmem::policy::usable(k, Op::Copy, f) && blockmem::policy::usable(k, Op::Move, f)
    };
    let Some(robust) = [KernelId::Avx512Pw, KernelId::Avx2Pw, KernelId::Sse2]
        .into_iter()
        .find(|&k| usable(k))
    else {
        return; // no robust kernel on this target
    };
    let mut p = base;
    p.probe_min = 1 << 20;
    p.stream_auto = 16 << 20;
    p.stream_auto_cold_dst = 8 << 20;
    p.stream_no_reuse = 16 << 10;
    p.stream_reuse = 8 << 20;
    p.rep_movsb_min = 8 << 10;
    p.rep_movsb_max = usize::MAX;
    p.copy_cold_dst = KernelId::RepMovsb;
    p.copy_robust = robust;
    p.copy_robust_min = 64 << 10;
    p.copy_robust_max = 8 << 20;
    dispatch::install(&p);
    assert_eq!(
        dispatch::rep_segments().0,
        64 << 10,
        "the rep segment ends at it"
    );
    let (from, below, k) = dispatch::robust_segment();
    assert_eq!((from, below, k), (64 << 10, 8 << 20, robust), "{p:?}");
    assert!(dispatch::probe_from(Hint::Auto) >= below);
    let len = below + 4096;
    let src: Vec<u8> = (0..len as u32).map(|i| (i ^ (i >> 11)) as u8).collect();
    let mut dst = vec![0u8; len];
    for n in [from, from + 1, (from + below) / 2, below - 1] {
        for (op, overlap) in [(Op::Copy, false), (Op::Move, false), (Op::Move, true)] {
            let k = dispatch::choose_probed(op, n, Hint::Auto, overlap, Probes::NONE);
            assert_eq!(k, robust, "{op:?} {n}");
            // SAFETY: both buffers hold more than n bytes.
            let ran =
                unsafe { dispatch::decide_for_call(op, dst.as_ptr(), src.as_ptr(), n, Hint::Auto) };
            assert_eq!(ran, Some(robust), "{op:?} {n}: what a call runs");
        }
        // Through the segment: a copy, and overlapping moves both ways.
        dst.fill(0);
        blockmem::copy(&mut dst[3..3 + n], &src[5..5 + n]);
        assert!(dst[3..3 + n] == src[5..5 + n] && dst[..3] == [0; 3] && dst[3 + n] == 0);
        let mut buf = src.clone();
        blockmem::move_within(&mut buf, 0..n, 4095);
        assert!(
            buf[4095..4095 + n] == src[..n] && buf[..4095] == src[..4095],
            "{n}"
        );
        let mut buf = src.clone();
        blockmem::move_within(&mut buf, 4095..4095 + n, 0);
        assert!(buf[..n] == src[4095..4095 + n], "{n}");
    }
    // From where a probe can make a call stream, the policy's path again.
    let mut q = p;
    q.probe_min = 256 << 10;
    q.stream_auto_cold_dst = 512 << 10;
    dispatch::install(&q);
    assert_eq!(dispatch::robust_segment().1, 512 << 10, "{q:?}");
    // No segment: an empty range, a robust kernel the policy would not run (a streaming
    // one), streaming below the range, a forced kernel.
    let mut none = vec![];
    let mut q = p;
    q.copy_robust_max = 64 << 10;
    none.push(q);
    let mut q = p;
    q.copy_robust = KernelId::Avx2Nt;
    none.push(q);
    // The policy's path starts below the range: streaming from 32 KiB unprobed.
    let mut q = p;
    q.stream_auto = 32 << 10;
    none.push(q);
    for q in none {
        dispatch::install(&q);
        assert_eq!(dispatch::robust_segment().1, 0, "{q:?}");
        let mut d = vec![0u8; 100_000];
        blockmem::copy(&mut d, &src[..100_000]);
        assert!(d == src[..100_000]);
    }
    dispatch::install(&p);
    dispatch::force(Some(KernelId::Sse2));
    assert_eq!(
        dispatch::robust_segment().1,
        0,
        "forcing a kernel disables it"
    );
    dispatch::force(None);
    dispatch::install(&host);
}
