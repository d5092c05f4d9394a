//! Built-in decision tables: what blockmem runs before the host is calibrated, one per
//! CPU class, each written from lab runs on a host of its class (`docs/METHOD.md`,
//! "Built-in tables", says how to measure one on a host).
//!
//! Their goal is modest and strict: never meaningfully slower than the system's C
//! library, on any host of the class, without having measured it. So they use only
//! what held on every run they come from:
//!
//! * the widest temporal kernel for cached data (the inline sizes below are handled
//!   before the table is read);
//! * a probe of the destination from 1 MiB (16 KiB with `NoReuse`), which tells a
//!   cached destination (updated in place) from a cold or fresh one (streamed from
//!   8 MiB, or from 16 KiB with `NoReuse`): the probe's hit threshold is the default,
//!   which sits between the LLC-hit and DRAM latencies of every host measured;
//! * `rep stosb` for sets from 2 KiB where the CPU has fast strings (glibc's window
//!   too), and no `rep movsb` on AMD before Zen 5: glibc turned it off on Zen 3 and 4
//!   after finding it up to 20 times slower for some destination alignments, and a
//!   table written without measuring the host cannot rule that out. (The `rep_movsb`
//!   kernel copies with vectors at the distances where a Zen 4 was measured slow, and
//!   is not faster elsewhere there: 2-64 KiB copies at random offsets in cache ran
//!   0.94-0.99× glibc's speed with it, 1.14-1.19× with `avx2`, on a 2-vCPU EPYC Zen 4
//!   guest.)
//! * on AMD Zen 5 (CPUID family 0x1a), the string instructions from 2 KiB for copies
//!   and sets alike, about where glibc 2.36 runs them on AMD (`rep stosb` from 2,049
//!   bytes; `rep movsb` from 2,113 with FSRM, up to which the C entries and the Rust
//!   API copy inline, as glibc does: `arch::x86_64::masked::COPY_WIDE_MAX`). Zen 5's microcode
//!   runs as if it wrote whole lines without reading them first (the guest measured
//!   has no hardware counters to tell), and its vector loops fall behind, in cache as
//!   well as out of it. On a 2-vCPU EPYC 9005 (Zen 5) KVM guest, with this table
//!   against `amd-zen`'s (`docs/results`, the Zen 5 host's `builtin-zen5`): copies
//!   of 2-64 KiB at any offset, through every door of the lab's `doors`, ran
//!   0.98-1.02× glibc's speed in cache and 0.94-1.03× on evicted lines, against
//!   0.76-0.82× and 0.83-0.88× with `avx2`; the memset distributions on evicted lines
//!   0.99-1.03× against 0.75-1.00×, and in cache 1.02-1.10× against 1.06-1.17×; the
//!   policy grid's copies 1.08× (no cell below 0.95×) against 1.01× (14 cells, down
//!   to 0.57× for 64 KiB into an evicted destination). Copies into fresh pages (the
//!   probe's `fresh`) keep `avx2`, which won there on Zen 4 and ties on Zen 5. A set
//!   repeated on one block in cache is where `rep stosb` loses (a 4 KiB one in a C loop
//!   took 1.01-1.03× glibc's time with it, 0.55-0.57× with `avx2`), so the cached rows
//!   of sets keep `avx2` below 1 MiB; below the probe's sizes they serve the blocks the
//!   dispatcher remembers writing lately (`dispatch::written_lately`). With them that
//!   loop (`scripts/workloads/block_loop.c`, `blockmem run --compare`, 11 runs) took
//!   0.70-0.72× glibc's time at 4 KiB, 0.68× at 8 and 16 KiB, 0.91× at 64 KiB and
//!   0.87-0.88× at 256 KiB, against 1.01-1.03× with `rep stosb` in those rows.
//!
//! The effective LLC, which only moves where a probe looks, comes from
//! [`crate::cpu::llc_estimate`]: CPUID's size, but never more than a core can really
//! use.

use crate::cpu::Features;
use crate::kernel::KernelId;
use crate::profile::{
    Action, Row, Table, DEFAULT_LOOP_TEMPORAL_MAX, DEFAULT_PROBE_FAULT_MIN, DEFAULT_PROBE_HIT_MAX,
    ROWS,
};

/// A CPU class with its own built-in table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    /// Intel with AVX-512 (byte/word) and fast short `rep movsb`.
    IntelAvx512,
    /// AMD Zen (the CPUs with `clzero`) before Zen 5, AVX2 and possibly AVX-512.
    AmdZen,
    /// AMD Zen 5 and later (family 0x1a on), AVX2 and possibly AVX-512.
    AmdZen5,
    /// AVX2 without the above (Intel or AMD).
    Avx2,
    /// SSE2 only (the x86-64 baseline), or not x86-64.
    Baseline,
}

impl Class {
    /// Every class.
    pub const ALL: [Class; 5] = [
        Class::IntelAvx512,
        Class::AmdZen,
        Class::AmdZen5,
        Class::Avx2,
        Class::Baseline,
    ];

    /// The class of a CPU with features `f` and CPUID family `family` (CLZERO marks AMD
    /// Zen, which may also have AVX-512 and FSRM; Zen 5 is family 0x1a, and the string
    /// instructions it runs differ from Zen 4's: see the module docs).
    pub const fn of(f: Features, family: u32) -> Class {
        if f.contains(Features::CLZERO) && f.contains(Features::AVX2) {
            if family >= ZEN5_FAMILY {
                Class::AmdZen5
            } else {
                Class::AmdZen
            }
        } else if f.contains(Features::AVX512BW.union(Features::FSRM)) {
            Class::IntelAvx512
        } else if f.contains(Features::AVX2) {
            Class::Avx2
        } else {
            Class::Baseline
        }
    }

    /// The stable name (`intel-avx512`, `amd-zen`, `amd-zen5`, `avx2`, `baseline`).
    pub const fn name(self) -> &'static str {
        match self {
            Class::IntelAvx512 => "intel-avx512",
            Class::AmdZen => "amd-zen",
            Class::AmdZen5 => "amd-zen5",
            Class::Avx2 => "avx2",
            Class::Baseline => "baseline",
        }
    }

    /// The class's table (its `llc_effective` is 0: the dispatcher fills in the
    /// estimate of the host it runs on).
    pub const fn table(self) -> &'static Table {
        match self {
            Class::IntelAvx512 => &INTEL_AVX512,
            Class::AmdZen => &AMD_ZEN,
            Class::AmdZen5 => &AMD_ZEN5,
            Class::Avx2 => &AVX2,
            Class::Baseline => &BASELINE,
        }
    }
}

const fn run(k: KernelId) -> Action {
    Action::Run(k)
}

/// The CPUID family of AMD Zen 5 (EPYC 9005, Ryzen 9000).
pub const ZEN5_FAMILY: u32 = 0x1a;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// One row from `(from, action)` pairs (checked at compile time).
const fn row(bands: &[(usize, Action)]) -> Row {
    let mut r = Row::always(bands[0].1);
    assert!(bands[0].0 == 0, "a row starts at 0");
    let mut i = 1;
    while i < bands.len() {
        r = match r.with(bands[i].0, bands[i].1) {
            Some(r) => r,
            None => panic!("bands must start above the one before"),
        };
        i += 1;
    }
    r
}

/// The rows of a family: for each hint (auto, reuse, noreuse), the unknown, cached,
/// cold and fresh rows.
type FamilyRows = [[Row; 4]; 3];

const fn table(copy: FamilyRows, set: FamilyRows) -> Table {
    let mut rows = [Row::always(Action::Run(KernelId::Portable)); ROWS];
    let mut h = 0;
    while h < 3 {
        let mut s = 0;
        while s < 4 {
            rows[h * 4 + s] = copy[h][s];
            rows[ROWS / 2 + h * 4 + s] = set[h][s];
            s += 1;
        }
        h += 1;
    }
    Table {
        rows,
        llc_effective: 0,
        probe_hit_max: DEFAULT_PROBE_HIT_MAX,
        probe_fault_min: DEFAULT_PROBE_FAULT_MIN,
        loop_temporal_max: DEFAULT_LOOP_TEMPORAL_MAX,
    }
}

/// A family's rows from its kernels: `cached` for data in cache, then `rep` from its
/// size if given (a fast-strings kernel that serves every state), else `robust` from
/// 4 KiB (on Intel it prefetches the destination for ownership, which won in cache
/// too); `stream` past the cache for a destination probed cold, never for a fresh one.
/// `warm`, if given, replaces the kernel from its size where the destination may be
/// cached (the cached row, and the unknown row below its probe): a fast-strings kernel
/// that wins in cache but not on evicted or fresh pages.
const fn family(
    cached: KernelId,
    robust: KernelId,
    rep: Option<(usize, KernelId)>,
    stream: KernelId,
    warm: Option<(usize, KernelId)>,
) -> FamilyRows {
    let small = match rep {
        Some((from, k)) => row(&[(0, run(cached)), (from, run(k))]),
        None => row(&[(0, run(cached)), (4 * KIB, run(robust))]),
    };
    let warm = match warm {
        Some((from, k)) => row(&[(0, run(cached)), (from, run(k))]),
        None => small,
    };
    let unknown = then(warm, MIB, Action::Probe);
    let cold = then(small, 8 * MIB, run(stream));
    // A fresh destination (the kernel clears each page through the cache just before
    // the copy's stores reach it) keeps the small sizes' kernels.
    let fresh = small;
    [
        [unknown, warm, cold, fresh],
        [unknown, warm, cold, fresh],
        [
            then(warm, 16 * KIB, Action::Probe),
            warm,
            then(small, 16 * KIB, run(stream)),
            fresh,
        ],
    ]
}

/// `r` up to `from`, then `action`: bands of `r` starting at or above `from` give way.
const fn then(r: Row, from: usize, action: Action) -> Row {
    let bands = r.bands_const();
    let mut out = Row::always(bands[0].action);
    let mut i = 1;
    while i < bands.len() && bands[i].from < from {
        out = match out.with(bands[i].from, bands[i].action) {
            Some(o) => o,
            None => panic!("bands are sorted"),
        };
        i += 1;
    }
    match out.with(from, action) {
        Some(r) => r,
        None => panic!("a band must start above the one before"),
    }
}

/// Intel with AVX-512 and FSRM. Copies: `avx512` in cache, `avx512_pw` from 4 KiB
/// where the destination may be cold; sets: `rep stosb` from 2 KiB; streaming with
/// `avx512_nt`.
static INTEL_AVX512: Table = table(
    family(
        KernelId::Avx512,
        KernelId::Avx512Pw,
        None,
        KernelId::Avx512Nt,
        None,
    ),
    family(
        KernelId::Avx512,
        KernelId::Avx512,
        Some((2 * KIB, KernelId::RepStosb)),
        KernelId::Avx512Nt,
        None,
    ),
);

/// AMD Zen: `avx2` (prefetching the destination for ownership lost to it on cold
/// destinations of 4 KiB–1 MiB), no `rep movsb`; sets `rep stosb` from 64 KiB;
/// streaming copies `avx2_nt`, streaming zeroes `clzero` (sets run its stand-in,
/// `avx2_nt`).
static AMD_ZEN: Table = table(
    family(KernelId::Avx2, KernelId::Avx2, None, KernelId::Avx2Nt, None),
    family(
        KernelId::Avx2,
        KernelId::Avx2,
        Some((64 * KIB, KernelId::RepStosb)),
        KernelId::Clzero,
        None,
    ),
);

/// AMD Zen 5: `rep movsb` for copies and `rep stosb` for sets from 2 KiB (glibc's
/// window on AMD, from 2,112 bytes), where the destination is cold, cached or not
/// probed; a fresh destination keeps `avx2`; streaming as [`AMD_ZEN`]. Sets below 1
/// MiB into a destination known to be cached (written lately: the dispatcher's
/// memory, [`crate::dispatch::written_lately`]) keep `avx2` (`Auto` and `Reuse`).
static AMD_ZEN5: Table = table(
    fresh_keeps(
        family(
            KernelId::Avx2,
            KernelId::Avx2,
            Some((2 * KIB, KernelId::RepMovsb)),
            KernelId::Avx2Nt,
            None,
        ),
        KernelId::Avx2,
    ),
    cached_keeps(
        family(
            KernelId::Avx2,
            KernelId::Avx2,
            Some((2 * KIB, KernelId::RepStosb)),
            KernelId::Clzero,
            None,
        ),
        KernelId::Avx2,
        MIB,
    ),
);

/// `rows` with the cached rows of `Auto` and `Reuse` calls running `k` below `to`.
/// Below the probe's sizes they serve only destinations the dispatcher remembers
/// writing lately (in the L1 or L2 cache: see [`crate::dispatch::written_window`]);
/// `NoReuse` calls probe from 16 KiB, and a probe's hit may be an L3 one.
const fn cached_keeps(rows: FamilyRows, k: KernelId, to: usize) -> FamilyRows {
    let mut rows = rows;
    let mut h = 0;
    while h < 2 {
        let old = rows[h][1].bands_const();
        let mut r = Row::always(run(k));
        let mut i = 0;
        while i < old.len() {
            // The old row's band holding `to` starts there; later ones follow.
            let next = if i + 1 < old.len() {
                old[i + 1].from
            } else {
                usize::MAX
            };
            if next > to {
                let from = if old[i].from > to { old[i].from } else { to };
                r = match r.with(from, old[i].action) {
                    Some(r) => r,
                    None => panic!("bands are sorted"),
                };
            }
            i += 1;
        }
        rows[h][1] = r;
        h += 1;
    }
    rows
}

/// `rows` with every fresh row running `k` whatever the size.
const fn fresh_keeps(rows: FamilyRows, k: KernelId) -> FamilyRows {
    let mut rows = rows;
    let mut h = 0;
    while h < 3 {
        rows[h][3] = Row::always(run(k));
        h += 1;
    }
    rows
}

/// AVX2 without AVX-512 or CLZERO (Intel, in practice: every AMD Zen has CLZERO).
/// Copies: `rep movsb` from 4 KiB where the destination may be cached (glibc's AVX2
/// path does the same, and on an Intel Xeon with AVX-512 and glibc masked to AVX2 it
/// copied 4 KiB in cache in 19-21 ns against `avx2`'s 32), `avx2_pw` from 4 KiB to a
/// destination probed cold or fresh; zeroes streamed with `avx2_nt`.
static AVX2: Table = table(
    family(
        KernelId::Avx2,
        KernelId::Avx2Pw,
        None,
        KernelId::Avx2Nt,
        Some((4 * KIB, KernelId::RepMovsb)),
    ),
    family(
        KernelId::Avx2,
        KernelId::Avx2,
        Some((64 * KIB, KernelId::RepStosb)),
        KernelId::Avx2Nt,
        None,
    ),
);

/// SSE2 only: `sse2` everywhere (no streaming kernel without AVX2), still probing so a
/// cold destination of a set gets `rep stosb`.
static BASELINE: Table = table(
    family(KernelId::Sse2, KernelId::Sse2, None, KernelId::Sse2, None),
    family(
        KernelId::Sse2,
        KernelId::Sse2,
        Some((64 * KIB, KernelId::RepStosb)),
        KernelId::Sse2,
        None,
    ),
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Family, State};
    use crate::Hint;

    #[test]
    fn every_builtin_table_keeps_the_format_rules() {
        for c in Class::ALL {
            assert!(c.table().check().is_ok(), "{}", c.name());
            for (fam, hint, st, r) in c.table().keyed_rows() {
                let probes = r.probe_from().is_some();
                assert_eq!(
                    probes,
                    st == State::Unknown,
                    "{} {fam:?} {hint:?} {st:?}",
                    c.name()
                );
            }
        }
        let t = Class::AmdZen.table();
        let cold = t.row(Family::Set, Hint::NoReuse, State::Cold);
        assert_eq!(cold.at(1 << 20), Action::Run(KernelId::Clzero));
    }

    #[test]
    fn no_builtin_table_streams_into_fresh_or_cached_destinations() {
        // Streaming past the cache into pages the kernel has just cleared through it ran
        // at half libc's speed; into a cached destination it throws the cache away.
        for c in Class::ALL {
            for (fam, hint, st, r) in c.table().keyed_rows() {
                if matches!(st, State::Fresh | State::Cached) {
                    for b in r.bands() {
                        let streams = matches!(b.action, Action::Run(k) if k.streams());
                        assert!(!streams, "{} {fam:?} {hint:?} {st:?}: {r}", c.name());
                    }
                }
            }
        }
    }

    #[test]
    fn classes_follow_the_features() {
        let zen4 = 0x19;
        let avx2 = Features::SSE2.union(Features::AVX).union(Features::AVX2);
        assert_eq!(Class::of(avx2, 6), Class::Avx2);
        assert_eq!(Class::of(avx2, ZEN5_FAMILY), Class::Avx2);
        assert_eq!(Class::of(avx2.union(Features::CLZERO), zen4), Class::AmdZen);
        assert_eq!(Class::of(avx2.union(Features::CLZERO), 0x17), Class::AmdZen);
        let zen5 = avx2.union(Features::CLZERO).union(Features::FSRM);
        assert_eq!(Class::of(zen5, ZEN5_FAMILY), Class::AmdZen5);
        assert_eq!(Class::of(zen5, ZEN5_FAMILY + 1), Class::AmdZen5);
        let skx = avx2
            .union(Features::AVX512F)
            .union(Features::AVX512BW)
            .union(Features::FSRM);
        assert_eq!(Class::of(skx, 6), Class::IntelAvx512);
        assert_eq!(Class::of(skx.union(Features::CLZERO), zen4), Class::AmdZen);
        assert_eq!(
            Class::of(skx.union(Features::CLZERO), ZEN5_FAMILY),
            Class::AmdZen5
        );
        assert_eq!(Class::of(Features::SSE2, ZEN5_FAMILY), Class::Baseline);
    }

    #[test]
    fn zen5_runs_the_string_instructions_from_2_kib_but_copies_into_fresh_pages() {
        let t = Class::AmdZen5.table();
        for hint in [Hint::Auto, Hint::Reuse, Hint::NoReuse] {
            for (fam, k) in [
                (Family::Copy, KernelId::RepMovsb),
                (Family::Set, KernelId::RepStosb),
            ] {
                for st in [State::Unknown, State::Cached, State::Cold] {
                    // Sets known to be cached below 1 MiB: next test.
                    if fam == Family::Set && st == State::Cached && hint != Hint::NoReuse {
                        continue;
                    }
                    let r = t.row(fam, hint, st);
                    assert_eq!(
                        r.at(2 * KIB - 1),
                        Action::Run(KernelId::Avx2),
                        "{fam:?} {hint:?} {st:?}"
                    );
                    assert_eq!(r.at(2 * KIB), Action::Run(k), "{fam:?} {hint:?} {st:?}");
                }
                assert_eq!(t.row(fam, hint, State::Cached).at(64 * MIB), Action::Run(k));
            }
            // Copies into fresh pages keep vectors; sets take `rep stosb` there too.
            for n in [0, 2 * KIB, MIB, 64 * MIB] {
                let r = t.row(Family::Copy, hint, State::Fresh);
                assert_eq!(r.at(n), Action::Run(KernelId::Avx2));
            }
        }
        // Zen 4 and earlier keep vectors in cache.
        let t = Class::AmdZen.table();
        let unknown = t.row(Family::Copy, Hint::Auto, State::Unknown);
        assert_eq!(unknown.at(64 * KIB), Action::Run(KernelId::Avx2));
    }

    #[test]
    fn zen5_sets_a_block_known_cached_with_vectors_below_1_mib() {
        let t = Class::AmdZen5.table();
        for hint in [Hint::Auto, Hint::Reuse] {
            let cached = t.row(Family::Set, hint, State::Cached);
            for n in [0, 2 * KIB, 4 * KIB, MIB - 1] {
                assert_eq!(cached.at(n), Action::Run(KernelId::Avx2), "{hint:?} {n}");
            }
            for n in [MIB, 64 * MIB] {
                assert_eq!(
                    cached.at(n),
                    Action::Run(KernelId::RepStosb),
                    "{hint:?} {n}"
                );
            }
            // Not probed below 1 MiB: the cached row is met only through the
            // dispatcher's memory of pages written lately.
            let unknown = t.row(Family::Set, hint, State::Unknown);
            assert_eq!(unknown.at(4 * KIB), Action::Run(KernelId::RepStosb));
            assert_eq!(unknown.at(MIB), Action::Probe);
        }
        // `NoReuse` probes from 16 KiB, and its probe's hits include the L3's.
        let cached = t.row(Family::Set, Hint::NoReuse, State::Cached);
        assert_eq!(cached.at(16 * KIB), Action::Run(KernelId::RepStosb));
        // Copies are unchanged: `rep movsb` in cache too.
        let cached = t.row(Family::Copy, Hint::Auto, State::Cached);
        assert_eq!(cached.at(4 * KIB), Action::Run(KernelId::RepMovsb));
    }
}

/// The tables of `tables/*.profile`, compiled in by `build.rs`.
mod generated {
    use crate::kernel::KernelId;
    use crate::profile::{Action, Band, Row, Table};

    /// A row from its bands (the build script wrote them from a parsed row).
    const fn row(bands: &[Band]) -> Row {
        match Row::new(bands) {
            Some(r) => r,
            None => panic!("build.rs wrote a malformed row"),
        }
    }

    include!(concat!(env!("OUT_DIR"), "/builtin_tables.rs"));
}

#[cfg(test)]
mod same_tables {
    use super::*;

    #[test]
    fn the_files_hold_exactly_the_const_fn_tables() {
        let pairs: [(&Table, &Table, &str); 5] = [
            (&INTEL_AVX512, &generated::INTEL_AVX512, "intel-avx512"),
            (&AMD_ZEN, &generated::AMD_ZEN, "amd-zen"),
            (&AMD_ZEN5, &generated::AMD_ZEN5, "amd-zen5"),
            (&AVX2, &generated::AVX2, "avx2"),
            (&BASELINE, &generated::BASELINE, "baseline"),
        ];
        for (old, new, name) in pairs {
            for i in 0..ROWS {
                let (a, b) = (old.rows[i].bands_const(), new.rows[i].bands_const());
                assert_eq!(a.len(), b.len(), "{name} row {i}");
                for j in 0..a.len() {
                    assert_eq!(a[j].from, b[j].from, "{name} row {i} band {j}");
                    assert_eq!(a[j].action, b[j].action, "{name} row {i} band {j}");
                }
            }
            assert_eq!(old.llc_effective, new.llc_effective, "{name}");
            assert_eq!(old.probe_hit_max, new.probe_hit_max, "{name}");
            assert_eq!(old.probe_fault_min, new.probe_fault_min, "{name}");
            assert_eq!(old.loop_temporal_max, new.loop_temporal_max, "{name}");
            assert_eq!(old, new, "{name}");
            assert!(!generated::AMD_ZEN5_TEXT.is_empty());
        }
    }
}
