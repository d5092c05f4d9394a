//! Built-in decision tables: what blockmem runs before the host is calibrated, one per
//! CPU class. Each is a file in the profile's own format, `crates/blockmem/tables/
//! CLASS.profile`, whose comments point to the lab runs it was written from
//! (`docs/results/<host>/<dir>`); `build.rs` parses it with [`crate::profile`]'s parser
//! and compiles it in as a `static` table. `docs/METHOD.md`, "Built-in tables", says how
//! to measure one on a host.
//!
//! Their goal is modest and strict: never meaningfully slower than the system's C
//! library, on any host of the class, without having measured it. So they use only
//! what held on every run they come from:
//!
//! * the widest temporal kernel for cached data (the inline sizes are handled before
//!   the table is read);
//! * a probe of the destination from 1 MiB (16 KiB with `NoReuse`), which tells a
//!   cached destination (updated in place) from a cold or fresh one (streamed from
//!   8 MiB, or from 16 KiB with `NoReuse`, never when fresh): the probe's hit threshold
//!   is the default, which sits between the LLC-hit and DRAM latencies of every host
//!   measured;
//! * `rep stosb` for sets from 2 KiB where the CPU has fast strings (glibc's window
//!   too), and no `rep movsb` on AMD before Zen 5, where glibc turned it off after
//!   finding it far slower for some destination alignments;
//! * on AMD Zen 5 (CPUID family 0x1a), the string instructions from 2 KiB for copies
//!   and sets alike, about where glibc runs them on AMD, but vectors for copies into
//!   fresh pages and for sets below 1 MiB into blocks the dispatcher remembers writing
//!   lately (`dispatch::written_lately`).
//!
//! * no contended rows (`FAMILY.HINT.STATE.contended`) unless a lab run beside a
//!   load on a host of the class showed them beating the rows there: on the AVX2
//!   class's host, streaming cold copies and sets from 1 MiB under load lost to the
//!   rows (`docs/results/xeon-clx-2vcpu/contention`), so every class's rows serve
//!   contended calls too, and no call counts the calls in flight until a calibration
//!   measures the host's.
//!
//! The effective LLC, which only moves where a probe looks, comes from
//! [`crate::cpu::llc_estimate`]: CPUID's size, but never more than a core can really
//! use.

use crate::cpu::Features;
use crate::profile::Table;

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

    /// The class's table, `tables/NAME.profile` compiled in (its `llc_effective` is 0:
    /// the dispatcher fills in the estimate of the host it runs on).
    pub const fn table(self) -> &'static Table {
        match self {
            Class::IntelAvx512 => &generated::INTEL_AVX512,
            Class::AmdZen => &generated::AMD_ZEN,
            Class::AmdZen5 => &generated::AMD_ZEN5,
            Class::Avx2 => &generated::AVX2,
            Class::Baseline => &generated::BASELINE,
        }
    }

    /// The text of `tables/NAME.profile`, evidence comments included (what `blockmem
    /// info --builtin` prints).
    pub const fn text(self) -> &'static str {
        match self {
            Class::IntelAvx512 => generated::INTEL_AVX512_TEXT,
            Class::AmdZen => generated::AMD_ZEN_TEXT,
            Class::AmdZen5 => generated::AMD_ZEN5_TEXT,
            Class::Avx2 => generated::AVX2_TEXT,
            Class::Baseline => generated::BASELINE_TEXT,
        }
    }
}

/// The CPUID family of AMD Zen 5 (EPYC 9005, Ryzen 9000).
pub const ZEN5_FAMILY: u32 = 0x1a;

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
mod tests {
    use super::*;
    use crate::kernel::KernelId;
    use crate::profile::{Action, Family, State};
    use crate::Hint;

    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;

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
