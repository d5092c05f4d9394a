//! The synthetic host matrix: the CPU-dependent logic (cache-size sanity checks, the
//! defaults derived from them, the policy over every op, hint, size and probe result)
//! run for hosts described here, never for whatever CPUID says about the machine
//! running the tests. Each host's ops then run for real with the machine's features
//! masked down to the host's (a host can only be emulated where the machine has its
//! features; the rest is checked on the logic alone). Its own test binary: the feature
//! mask and the installed profile are process-wide.

use blockmem::cpu::{self, CacheKind, CacheLevel, Features, SizeSource, Vendor};
use blockmem::kernel::{KernelId, Op};
use blockmem::policy::{self, Probed, Probes};
use blockmem::profile::Profile;
use blockmem::{dispatch, Hint};

/// A host as CPUID would describe it.
struct Host {
    name: &'static str,
    vendor: Vendor,
    features: Features,
    /// (level, kind, size) as the per-level leaf reports them.
    caches: &'static [(u8, CacheKind, usize)],
}

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

const BASE: Features = Features::SSE2
    .union(Features::CLFLUSH)
    .union(Features::RDTSCP)
    .union(Features::INVARIANT_TSC);
const AVX2: Features = BASE
    .union(Features::AVX)
    .union(Features::AVX2)
    .union(Features::BMI2)
    .union(Features::ERMS)
    .union(Features::PREFETCHW);

const HOSTS: &[Host] = &[
    Host {
        name: "intel-avx512-fsrm-480MiB-l3",
        vendor: Vendor::Intel,
        features: AVX2
            .union(Features::AVX512F)
            .union(Features::AVX512BW)
            .union(Features::FSRM)
            .union(Features::CLFLUSHOPT),
        caches: &[
            (1, CacheKind::Data, 48 * KIB),
            (1, CacheKind::Instruction, 32 * KIB),
            (2, CacheKind::Unified, 2 * MIB),
            (3, CacheKind::Unified, 480 * MIB),
        ],
    },
    Host {
        name: "amd-zen3-clzero-32MiB-l3",
        vendor: Vendor::Amd,
        features: AVX2
            .union(Features::FSRM)
            .union(Features::CLFLUSHOPT)
            .union(Features::CLZERO),
        caches: &[
            (1, CacheKind::Data, 32 * KIB),
            (1, CacheKind::Instruction, 32 * KIB),
            (2, CacheKind::Unified, 512 * KIB),
            (3, CacheKind::Unified, 32 * MIB),
        ],
    },
    Host {
        name: "avx2-only",
        vendor: Vendor::Intel,
        features: AVX2,
        caches: &[
            (1, CacheKind::Data, 32 * KIB),
            (2, CacheKind::Unified, 256 * KIB),
            (3, CacheKind::Unified, 8 * MIB),
        ],
    },
    Host {
        name: "sse2-only",
        vendor: Vendor::Other,
        features: BASE,
        caches: &[
            (1, CacheKind::Data, 32 * KIB),
            (2, CacheKind::Unified, 512 * KIB),
            (3, CacheKind::Unified, 4 * MIB),
        ],
    },
    Host {
        name: "small-2MiB-llc",
        vendor: Vendor::Intel,
        features: AVX2,
        caches: &[
            (1, CacheKind::Data, 32 * KIB),
            (2, CacheKind::Unified, 256 * KIB),
            (3, CacheKind::Unified, 2 * MIB),
        ],
    },
];

impl Host {
    fn levels(&self) -> [Option<CacheLevel>; cpu::MAX_LEVELS] {
        let mut out = [None; cpu::MAX_LEVELS];
        for (slot, &(level, kind, size)) in out.iter_mut().zip(self.caches) {
            *slot = Some(CacheLevel {
                level,
                kind,
                size,
                line: 64,
                ways: 16,
                sets: (size / 64 / 16) as u32,
                shared_by: 2,
            });
        }
        out
    }

    fn defaults(&self) -> Profile {
        Profile::from_caches(&cpu::choose_used(&self.levels(), 0, 0))
    }
}

/// Every size where a threshold of `p` sits, ±1, and a ladder of powers of two.
fn sizes(p: &Profile) -> Vec<usize> {
    let mut v: Vec<usize> = (7..=31).map(|s| 1usize << s).collect();
    for t in [
        p.stream_auto,
        p.stream_auto_cold_dst,
        p.stream_no_reuse,
        p.stream_reuse,
        p.probe_min,
        p.rep_movsb_min,
        p.rep_movsb_max,
        p.rep_stosb_min,
        p.rep_stosb_max,
        p.copy_robust_min,
        p.copy_robust_max,
    ] {
        if t > 129 && t < 1 << 40 {
            v.extend([t - 1, t, t + 1]);
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn cache_sizes_are_read_and_sane_on_every_host() {
    for h in HOSTS {
        let used = cpu::choose_used(&h.levels(), 0, 0);
        let reported = |level: u8| {
            h.caches
                .iter()
                .find(|c| c.0 == level && c.1 != CacheKind::Instruction)
                .unwrap()
                .2
        };
        assert_eq!(used.l1d.size, reported(1), "{}", h.name);
        assert_eq!(used.l2.size, reported(2), "{}", h.name);
        assert_eq!(used.llc.size, reported(3), "{}", h.name);
        assert_eq!(used.llc.source, SizeSource::PerLevelLeaf, "{}", h.name);
        let p = h.defaults();
        assert!(
            p.stream_no_reuse <= p.stream_auto && p.stream_auto < p.stream_reuse,
            "{}: {p:?}",
            h.name
        );
        assert!(p.stream_auto_cold_dst <= p.stream_auto, "{}", h.name);
        let _ = h.vendor;
    }
}

/// On every host, for every op, hint, size and probe result, the policy picks a kernel
/// the host can run, never streams an overlapping move, and (unprobed, with no hint)
/// never streams below the profile's `Auto` streaming size.
#[test]
fn the_policy_picks_a_runnable_kernel_on_every_host() {
    let outcomes = [Probed::Unknown, Probed::Cached, Probed::Cold];
    let mut checked = 0usize;
    for h in HOSTS {
        let p = h.defaults();
        let f = h.features;
        for op in Op::ALL {
            for hint in Hint::ALL {
                for n in sizes(&p) {
                    for overlap in [false, op == Op::Move] {
                        for dst in outcomes {
                            for src in outcomes {
                                let probes = Probes { src, dst };
                                let k = policy::decide(op, n, hint, overlap, probes, &p, f);
                                assert!(
                                    policy::usable(k, op, f),
                                    "{}: {op:?} {n} {hint:?} {probes:?} -> {} needs {:?}",
                                    h.name,
                                    k.name(),
                                    k.kernel().map(|e| e.requires)
                                );
                                assert!(!(overlap && k.streams()), "{}: {op:?} {n}", h.name);
                                if hint == Hint::Auto && probes == Probes::NONE && n < p.stream_auto
                                {
                                    assert!(!k.streams(), "{}: {op:?} {n}", h.name);
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        let probe_from = policy::probe_from(&p, Hint::Auto, f);
        assert_eq!(probe_from, usize::MAX, "{}: defaults never probe", h.name);
    }
    assert!(checked > 10_000, "{checked}");
}

/// Each host's defaults installed with the machine's features masked down to the
/// host's: every op through the public API is right over a ladder of sizes, and the
/// dispatcher only reports kernels the host can run.
#[test]
fn every_host_copies_correctly_with_its_defaults() {
    let machine = cpu::features();
    let installed = dispatch::profile();
    let mut emulated = 0;
    for h in HOSTS {
        if !machine.contains(h.features.without(Features::INVARIANT_TSC)) {
            continue; // the machine cannot run this host's kernels
        }
        emulated += 1;
        cpu::disable(machine.without(h.features));
        let p = h.defaults();
        dispatch::install(&p);
        let len = 3 * MIB + 4096;
        let src: Vec<u8> = (0..len as u32).map(|i| (i ^ (i >> 9)) as u8).collect();
        let mut dst = vec![0u8; len];
        for n in [0, 1, 31, 129, 4095, 4096, 65_537, 600 * KIB + 3, 3 * MIB] {
            for hint in Hint::ALL {
                dst.fill(0);
                blockmem::copy_with(&mut dst[1..1 + n], &src[3..3 + n], hint);
                assert!(
                    dst[1..1 + n] == src[3..3 + n] && dst[0] == 0,
                    "{} {n}",
                    h.name
                );
                assert!(dst[1 + n] == 0, "{} {n}: byte past the copy", h.name);
                let mut buf = src[..n + 64].to_vec();
                blockmem::move_within_with(&mut buf, 0..n, 37.min(n + 63), hint);
                assert!(buf[37.min(n + 63)..][..n] == src[..n], "{} {n}", h.name);
                blockmem::set_with(&mut dst[..n], 0xa5, hint);
                assert!(dst[..n].iter().all(|&b| b == 0xa5), "{} {n}", h.name);
                blockmem::zero_with(&mut dst[..n], hint);
                assert!(dst[..n].iter().all(|&b| b == 0), "{} {n}", h.name);
            }
            for op in Op::ALL {
                let k = dispatch::choose(op, n.max(129), Hint::Auto, false);
                assert!(policy::usable(k, op, h.features), "{} {op:?}", h.name);
                assert_ne!(k, KernelId::Naive, "{}", h.name);
            }
        }
        cpu::enable_all();
    }
    dispatch::install(&installed);
    assert!(
        emulated >= 1,
        "the sse2-only host runs on any x86-64 machine"
    );
}
