//! The synthetic host matrix: the CPU-dependent logic (cache-size sanity checks, the
//! LLC estimate, every built-in table compiled for the host, the policy over every op,
//! hint, size, state and forced kernel) run for hosts described in this file, never for
//! whatever CPUID says about the machine running the tests. Each host's ops then run
//! for real through the dispatcher with the machine's features masked down to the
//! host's, under every built-in table (a host can only be emulated where the machine
//! has its features; the rest is checked on the logic alone). Its own test binary:
//! the feature mask and the installed table are process-wide.

mod common;

use blockmem::builtin::Class;
use blockmem::cpu::{self, CacheKind, CacheLevel, Features, SizeSource, Vendor};
use blockmem::kernel::{self, KernelId, Op};
use blockmem::policy::{self, Plan, Step};
use blockmem::profile::{Family, State, Table, PROBE_MIN_BYTES};
use blockmem::{dispatch, Hint};
use common::{lock_global, model_decide, Aligned, Rng};

/// A host as CPUID would describe it.
struct Host {
    name: &'static str,
    vendor: Vendor,
    features: Features,
    /// (level, kind, size) as the per-level leaf reports them.
    caches: &'static [(u8, CacheKind, usize)],
    /// CPUs the process may run on.
    cpus: usize,
    /// The effective LLC blockmem should believe without measuring.
    llc_estimate: usize,
    /// CPUID family (extended family folded in).
    family: u32,
    /// The CPU class whose built-in table the host gets.
    class: Class,
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

/// The features some kernel or the inline ladder needs: a machine emulates a host
/// when it has the host's features among these.
const KERNEL_FEATURES: Features = Features::SSE2
    .union(Features::AVX)
    .union(Features::AVX2)
    .union(Features::AVX512F)
    .union(Features::AVX512BW)
    .union(Features::BMI2)
    .union(Features::ERMS)
    .union(Features::FSRM)
    .union(Features::CLZERO)
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
        cpus: 2,
        llc_estimate: 24 * MIB,
        family: 6,
        class: Class::IntelAvx512,
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
        cpus: 8,
        llc_estimate: 32 * MIB,
        family: 0x19,
        class: Class::AmdZen,
    },
    Host {
        name: "amd-zen5-avx512-32MiB-l3",
        vendor: Vendor::Amd,
        features: AVX2
            .union(Features::AVX512F)
            .union(Features::AVX512BW)
            .union(Features::FSRM)
            .union(Features::CLFLUSHOPT)
            .union(Features::CLZERO),
        caches: &[
            (1, CacheKind::Data, 48 * KIB),
            (1, CacheKind::Instruction, 32 * KIB),
            (2, CacheKind::Unified, MIB),
            (3, CacheKind::Unified, 32 * MIB),
        ],
        cpus: 2,
        llc_estimate: 24 * MIB,
        family: 0x1a,
        class: Class::AmdZen5,
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
        cpus: 4,
        llc_estimate: 8 * MIB,
        family: 6,
        class: Class::Avx2,
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
        cpus: 1,
        llc_estimate: 4 * MIB,
        family: 6,
        class: Class::Baseline,
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
        cpus: 1,
        llc_estimate: 2 * MIB,
        family: 6,
        class: Class::Avx2,
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

    /// The effective LLC as the dispatcher would estimate it on this host.
    fn llc(&self) -> usize {
        cpu::llc_estimate(cpu::choose_used(&self.levels(), 0, 0).llc.size, self.cpus)
    }

    /// The built-in tables to run on the host: every class, its own marked.
    fn tables(&self) -> impl Iterator<Item = (Class, bool)> + '_ {
        Class::ALL.into_iter().map(|c| (c, c == self.class))
    }
}

/// Every size where a band of a compiled plan starts, ±1, plus `extra` ±1 and the
/// smallest sizes above the inline ladder.
fn edge_sizes(plan: &Plan, extra: &[usize]) -> Vec<usize> {
    let mut edges = plan_edges(plan, &State::ALL);
    edges.extend(extra);
    edge_sizes_of(&edges, &[0, 1, 33, 129, 513, 2049])
}

/// `edges` ±1 (0 left out) and `more`, sorted and deduplicated.
fn edge_sizes_of(edges: &[usize], more: &[usize]) -> Vec<usize> {
    let mut v = more.to_vec();
    for &e in edges.iter().filter(|&&e| e > 0) {
        v.extend([e - 1, e, e + 1]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Where a band starts in the plan's rows of the given states.
fn plan_edges(plan: &Plan, states: &[State]) -> Vec<usize> {
    let mut edges = vec![];
    for fam in Family::ALL {
        for hint in Hint::ALL {
            for &st in states {
                edges.extend(plan.row(fam, hint, st).bands().map(|(from, _)| from));
            }
        }
    }
    edges
}

#[test]
fn cache_sizes_and_the_llc_estimate_are_sane_on_every_host() {
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
        // A hypervisor's 480 MiB L3 on 2 CPUs is believed as 24 MiB; real ones as is.
        assert_eq!(h.llc(), h.llc_estimate, "{}", h.name);
        assert!(h.llc() <= used.llc.size, "{}", h.name);
        assert!(h.llc() <= cpu::LLC_PER_CPU_MAX * h.cpus, "{}", h.name);
        assert_eq!(Class::of(h.features, h.family), h.class, "{}", h.name);
        // The probe reads inside the block, its page mate too, at every probed size.
        for n in [PROBE_MIN_BYTES, 16 * KIB, MIB, 8 * MIB, 64 * MIB, 1 << 30] {
            let o = policy::probe_offset(n, h.llc());
            assert!(o >= 2048 && o < n, "{}: {n} {o}", h.name);
            assert!(o + 2048 < n || n == PROBE_MIN_BYTES, "{}: {n} {o}", h.name);
        }
        let _ = h.vendor;
    }
    assert_eq!(cpu::llc_estimate(480 * MIB, 2), 24 * MIB);
    assert_eq!(cpu::llc_estimate(480 * MIB, 0), 12 * MIB);
}

/// Checks one compiled plan band by band: every band runs a kernel the host can run
/// for each op of its family, through that kernel's entry point, or probes (only in an
/// `unknown` row, never below the smallest probed size). Returns the checks made.
fn check_bands(h: &Host, class: Class, plan: &Plan) -> usize {
    let mut checks = 0;
    for fam in Family::ALL {
        let [a, b] = fam.ops();
        for hint in Hint::ALL {
            for st in State::ALL {
                let row = plan.row(fam, hint, st);
                let ctx = format!("{} {}: {fam:?} {hint:?} {st:?}", h.name, class.name());
                for (from, ks) in row.bands() {
                    match ks {
                        Some((ka, kb)) => {
                            // The byte-at-a-time reference is never a built-in choice.
                            assert!(ka != KernelId::Naive && kb != KernelId::Naive, "{ctx}");
                            assert!(policy::usable(ka, a, h.features), "{ctx} {from}: {ka:?}");
                            assert!(policy::usable(kb, b, h.features), "{ctx} {from}: {kb:?}");
                            for (op, k, second) in [(a, ka, false), (b, kb, true)] {
                                // A recalling band (only an unknown row's) leaves the
                                // hot path for its own kernel or the cached row's.
                                let unknown = plan.row(fam, hint, State::Unknown);
                                let (own, hot) =
                                    plan.recalls(fam, hint).entries(unknown, from, second);
                                if let Step::Recall(r) = row.step(from, second) {
                                    assert_eq!(st, State::Unknown, "{ctx} {from}: recall");
                                    assert_eq!(r, k, "{ctx} {from}");
                                    assert!(row.entry(from, second).is_null(), "{ctx} {from}");
                                    assert_eq!(Some(own), kernel::entry_for(k, op), "{ctx} {from}");
                                    let cached = plan.row(fam, hint, State::Cached);
                                    assert_eq!(hot, cached.entry(from, second), "{ctx} {from}");
                                    assert!(!hot.is_null() && hot != own, "{ctx} {from}");
                                    continue;
                                }
                                if st == State::Unknown {
                                    assert!(own.is_null() && hot.is_null(), "{ctx} {from}");
                                }
                                assert_eq!(
                                    Some(row.entry(from, second)),
                                    kernel::entry_for(k, op),
                                    "{ctx} {from}: the hot path calls {k:?}"
                                );
                            }
                        }
                        None => {
                            assert_eq!(st, State::Unknown, "{ctx} {from}: probe");
                            assert!(from >= PROBE_MIN_BYTES, "{ctx} {from}: probe");
                            assert!(row.entry(from, false).is_null(), "{ctx} {from}");
                        }
                    }
                    // The built-in tables stream only where a probe found the
                    // destination cold: in-cache data is never streamed.
                    if st != State::Cold {
                        assert!(
                            !ks.is_some_and(|(ka, kb)| ka.streams() || kb.streams()),
                            "{ctx} {from}: {ks:?} streams"
                        );
                    }
                    checks += 1;
                }
            }
        }
    }
    checks
}

/// On every host, every built-in table keeps the format rules and compiles into bands
/// the host can run; for every op, hint, state, overlap, forced kernel and size around
/// every band edge, the compiled plan decides what the table says (see
/// `common::model_decide`), never streams an overlapping move and only asks for a
/// probe in a probe band.
#[test]
fn every_builtin_table_compiles_for_every_host() {
    let mut checks = 0usize;
    let mut tables = 0;
    let forced_choices: Vec<Option<KernelId>> = std::iter::once(None)
        .chain(KernelId::ALL.into_iter().map(Some))
        .collect();
    for h in HOSTS {
        for (class, native) in h.tables() {
            let t: &Table = class.table();
            assert!(t.check().is_ok(), "{}: {:?}", class.name(), t.check());
            tables += 1;
            for &forced in &forced_choices {
                let plan = Plan::UNCOMPILED;
                policy::compile(t, h.features, forced, h.llc(), &plan);
                assert_eq!(plan.llc_effective(), h.llc_estimate, "{}", h.name);
                assert_eq!(plan.features(), h.features);
                if forced.is_none() {
                    checks += check_bands(h, class, &plan);
                    if native {
                        // The host's own table probes cold destinations of large copies.
                        assert!(plan.probe_from(Family::Copy, Hint::Auto) < usize::MAX);
                    }
                }
                for n in edge_sizes(&plan, &common::band_edges(t)) {
                    for op in Op::ALL {
                        for hint in Hint::ALL {
                            for overlap in [false, op == Op::Move] {
                                for dst in State::ALL {
                                    let k = plan.decide(op, n, hint, overlap, dst);
                                    let want = model_decide(
                                        t, h.features, forced, op, n, hint, overlap, dst,
                                    );
                                    let ctx = format!(
                                        "{} {} forced {forced:?}: {op:?} {n} {hint:?} overlap {overlap} {dst:?}",
                                        h.name,
                                        class.name()
                                    );
                                    assert_eq!(k, want, "{ctx}");
                                    match k {
                                        Some(k) => {
                                            assert!(
                                                policy::usable(k, op, h.features),
                                                "{ctx}: {k:?}"
                                            );
                                            assert!(!(overlap && k.streams()), "{ctx}: {k:?}");
                                        }
                                        None => assert!(
                                            dst == State::Unknown
                                                && !overlap
                                                && n >= plan.probe_from(Family::of(op), hint),
                                            "{ctx}"
                                        ),
                                    }
                                    checks += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "host matrix (logic): {} hosts x {} built-in tables ({tables} compiled host tables), {checks} checks",
        HOSTS.len(),
        Class::ALL.len()
    );
    assert!(checks > 100_000, "{checks}");
}

/// Buffers for the real ops, large enough for every size of the matrix.
struct Bufs {
    /// Random bytes, never written: the source of copies and the pattern of moves.
    src: Aligned,
    dst: Aligned,
    /// The buffer overlapping moves run in.
    mv: Aligned,
    fill: u8,
    calls: u64,
}

const PAD: usize = 4096;
const CANARY: usize = 64;

impl Bufs {
    fn new(max_n: usize) -> Bufs {
        let len = max_n + max_n / 2 + 2 * PAD + 256;
        let mut src = Aligned::new(len);
        Rng::new(7).fill(src.slice_mut());
        Bufs {
            src,
            dst: Aligned::new(len),
            mv: Aligned::new(len),
            fill: 0,
            calls: 0,
        }
    }

    fn next_fill(&mut self) -> u8 {
        self.fill = self.fill.wrapping_add(101) | 1;
        self.fill
    }

    /// Copy, disjoint move, set or zero of `n` bytes at `dst + PAD + d_off` (from
    /// `src + PAD + s_off`), checked against the model and the canaries around it.
    fn run_one(&mut self, ctx: &str, op: Op, n: usize, hint: Hint, (s_off, d_off): (usize, usize)) {
        let fill = self.next_fill();
        let byte = fill ^ 0x5a;
        let (s0, d0) = (PAD + s_off, PAD + d_off);
        self.dst.slice_mut()[d0 - CANARY..d0 + n + CANARY].fill(fill);
        let d = self.dst.as_ptr().wrapping_add(d0);
        let s = self.src.as_ptr().wrapping_add(s0) as *const u8;
        // SAFETY: both windows lie inside their buffers (len > PAD + 64 + n); the
        // source and destination are different allocations.
        let ret = unsafe {
            match op {
                Op::Copy => blockmem::copy_raw(d, s, n, hint),
                Op::Move => blockmem::move_raw(d, s, n, hint),
                Op::Set => blockmem::set_raw(d, byte, n, hint),
                Op::Zero => blockmem::zero_raw(d, n, hint),
            }
        };
        assert_eq!(ret, d, "{ctx}: {op:?} returns dst");
        let out = &self.dst.slice()[d0 - CANARY..d0 + n + CANARY];
        let body = &out[CANARY..CANARY + n];
        let right = match op {
            Op::Copy | Op::Move => body == &self.src.slice()[s0..s0 + n],
            Op::Set => body.iter().all(|&b| b == byte),
            Op::Zero => body.iter().all(|&b| b == 0),
        };
        assert!(
            right,
            "{ctx}: {op:?} n={n} {hint:?} {s_off}/{d_off}: wrong bytes"
        );
        let canaries = out[..CANARY]
            .iter()
            .chain(&out[CANARY + n..])
            .all(|&b| b == fill);
        assert!(
            canaries,
            "{ctx}: {op:?} n={n} {hint:?}: a byte outside dst written"
        );
        self.calls += 1;
    }

    /// An overlapping move of `n` bytes by `dist`, the destination below the source
    /// (`down`) or above it.
    fn run_overlap(
        &mut self,
        ctx: &str,
        n: usize,
        dist: usize,
        down: bool,
        hint: Hint,
        off: usize,
    ) {
        let lo = PAD + off;
        let (from, to) = if down {
            (lo + dist, lo)
        } else {
            (lo, lo + dist)
        };
        let w = lo - CANARY..lo + dist + n + CANARY;
        self.mv.slice_mut()[w.clone()].copy_from_slice(&self.src.slice()[w.clone()]);
        let base = self.mv.as_ptr();
        // SAFETY: both ranges lie inside `mv`; move allows overlap.
        let ret =
            unsafe { blockmem::move_raw(base.wrapping_add(to), base.wrapping_add(from), n, hint) };
        assert_eq!(ret, base.wrapping_add(to), "{ctx}: move returns dst");
        let (got, pattern) = (self.mv.slice(), self.src.slice());
        assert!(
            got[to..to + n] == pattern[from..from + n],
            "{ctx}: overlapping move n={n} by {dist} {}: wrong bytes",
            if down { "down" } else { "up" }
        );
        let outside_kept = got[w.start..to] == pattern[w.start..to]
            && got[to + n..w.end] == pattern[to + n..w.end];
        assert!(
            outside_kept,
            "{ctx}: overlapping move n={n} by {dist}: a byte outside dst written"
        );
        self.calls += 1;
    }
}

/// A built-in table as the host would run it (with the host's effective LLC, which
/// moves where a probe reads) and with the probe outcome forced: `None` leaves the
/// probe to the hardware; `Some(state)` sets the hit threshold so every probe finds
/// `state`.
fn host_variant(t: &Table, llc: usize, outcome: Option<State>) -> Table {
    let mut v = t.clone();
    v.llc_effective = llc;
    match outcome {
        Some(State::Cached) => (v.probe_hit_max, v.probe_fault_min) = (u32::MAX, u32::MAX),
        Some(State::Cold) => (v.probe_hit_max, v.probe_fault_min) = (0, u32::MAX),
        Some(State::Fresh) => (v.probe_hit_max, v.probe_fault_min) = (u32::MAX, 0),
        _ => {}
    }
    v
}

/// Runs every op of the matrix for one installed table: copy, disjoint move, moves
/// overlapping down and up, set and zero, every hint, at each size.
fn run_sizes(b: &mut Bufs, ctx: &str, sizes: &[usize], t: &Table, outcome: Option<State>) {
    let f = cpu::features();
    let offsets = [(0, 0), (3, 61), (17, 45)];
    for &n in sizes {
        for (hi, hint) in Hint::ALL.into_iter().enumerate() {
            // Every alignment pair for blocks up to 64 KiB; one, rotating, above.
            let aligns: &[(usize, usize)] = if n <= 64 * KIB {
                &offsets
            } else {
                std::slice::from_ref(&offsets[hi])
            };
            for &al in aligns {
                for op in Op::ALL {
                    b.run_one(ctx, op, n, hint, al);
                }
                b.run_overlap(ctx, n, n / 2 + 3, true, hint, al.1);
                b.run_overlap(ctx, n, 61.min(n + 1), false, hint, al.0);
            }
            // What the dispatcher runs is what the table says for the state found.
            for op in Op::ALL {
                let d = b.dst.as_ptr().wrapping_add(PAD);
                let s = b.src.as_ptr().wrapping_add(PAD) as *const u8;
                let s = if matches!(op, Op::Set | Op::Zero) {
                    std::ptr::null()
                } else {
                    s
                };
                // The calls above may have streamed this destination; what a call
                // meeting it again runs is tested in features.rs.
                dispatch::forget_streamed();
                dispatch::forget_written();
                // SAFETY: both hold more than n bytes past PAD.
                let ran = unsafe { dispatch::decide_for_call(op, d, s, n, hint) };
                // A move of disjoint ranges (these two buffers) stays inline up to the
                // copy's inline size.
                let inline = n <= dispatch::inline_max(op)
                    || (op == Op::Move && n <= dispatch::inline_max(Op::Copy));
                if inline {
                    assert_eq!(ran, None, "{ctx}: {op:?} {n} runs inline");
                    continue;
                }
                let k = ran.unwrap_or_else(|| panic!("{ctx}: {op:?} {n}: no kernel"));
                assert!(
                    policy::usable(k, op, f),
                    "{ctx}: {op:?} {n} {hint:?} ran {k:?}"
                );
                let probes = matches!(
                    dispatch::plan()
                        .row(Family::of(op), hint, State::Unknown)
                        .step(n, false),
                    Step::Probe
                );
                let states: &[State] = match (probes, outcome) {
                    (false, _) => &[State::Unknown],
                    (true, _) if n < PROBE_MIN_BYTES => &[State::Cached],
                    (true, Some(st)) => std::slice::from_ref(match st {
                        State::Cached => &State::Cached,
                        State::Fresh => &State::Fresh,
                        _ => &State::Cold,
                    }),
                    (true, None) => &[State::Cached, State::Cold, State::Fresh],
                };
                let want: Vec<_> = states
                    .iter()
                    .map(|&st| model_decide(t, f, dispatch::forced(), op, n, hint, false, st))
                    .collect();
                assert!(
                    want.contains(&Some(k)),
                    "{ctx}: {op:?} {n} {hint:?} ran {k:?}, the table says {want:?}"
                );
                b.calls += 1;
            }
        }
    }
}

/// Each host emulated on this machine (its features masked down to the host's), under
/// every built-in table: every op through the public API is byte-correct at sizes
/// straddling every band edge of the compiled plan, for every hint, with the probe
/// left to the hardware and forced to find the destination cached and cold, and the
/// dispatcher runs only kernels the host has.
#[test]
fn every_host_runs_every_builtin_table_correctly() {
    let _state = lock_global();
    let machine = cpu::features();
    let mut emulated = vec![];
    let mut skipped = vec![];
    let max_n = Class::ALL
        .into_iter()
        .flat_map(|c| common::band_edges(c.table()))
        .max()
        .unwrap()
        + 1;
    let mut b = Bufs::new(max_n);
    for h in HOSTS {
        let needed = Features::from_bits(h.features.bits() & KERNEL_FEATURES.bits());
        if !machine.contains(needed) {
            eprintln!(
                "{}: skipped, the features in force (this machine's, less any masked) lack {:?}",
                h.name,
                needed.without(machine)
            );
            skipped.push(h.name);
            continue;
        }
        emulated.push(h.name);
        dispatch::mask_features(
            common::env_mask().union(cpu::detected_features().without(h.features)),
        );
        for k in kernel::available() {
            assert!(
                h.features.contains(k.kernel().requires),
                "{}: {} still available",
                h.name,
                k.name()
            );
        }
        for (class, native) in h.tables() {
            for outcome in [
                None,
                Some(State::Cached),
                Some(State::Cold),
                Some(State::Fresh),
            ] {
                let t = host_variant(class.table(), h.llc(), outcome);
                dispatch::install(&t);
                let plan = dispatch::plan();
                assert_eq!(plan.llc_effective(), h.llc());
                let probe_starts: Vec<usize> = Family::ALL
                    .into_iter()
                    .flat_map(|fam| Hint::ALL.map(|hint| plan.probe_from(fam, hint)))
                    .filter(|&n| n < usize::MAX)
                    .collect();
                // The edges of the rows each outcome reaches, and where probing starts:
                // with the probe left to the hardware (which mostly finds the block
                // just written cached) the unknown rows and the small sizes; with the
                // outcome forced, its own rows from the first probed size on.
                let sizes: Vec<usize> = match outcome {
                    None => {
                        let mut e = plan_edges(plan, &[State::Unknown]);
                        e.extend([
                            dispatch::inline_max(Op::Copy),
                            dispatch::inline_max(Op::Set),
                        ]);
                        edge_sizes_of(&e, &[0, 1, 33, 129, 513, 2049])
                    }
                    Some(st) => {
                        let first = probe_starts.iter().copied().min().unwrap_or(usize::MAX);
                        let mut e = plan_edges(plan, &[st]);
                        e.extend(&probe_starts);
                        e.retain(|&n| n >= first);
                        edge_sizes_of(&e, &[])
                    }
                };
                let ctx = format!(
                    "{} under {}{} (probe {:?})",
                    h.name,
                    class.name(),
                    if native { " (its own)" } else { "" },
                    outcome
                );
                run_sizes(&mut b, &ctx, &sizes, &t, outcome);
            }
        }
    }
    eprintln!(
        "host matrix (real ops): {} of {} hosts emulated {emulated:?}, skipped {skipped:?}; {} checked calls under {} built-in tables each",
        emulated.len(),
        HOSTS.len(),
        b.calls,
        Class::ALL.len()
    );
    assert!(
        emulated.contains(&"sse2-only") || !cfg!(target_arch = "x86_64"),
        "the sse2-only host runs on any x86-64 machine"
    );
}
