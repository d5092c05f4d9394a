//! CPU feature and cache-topology detection, without `std` and without allocation.
//!
//! Two kinds of answer live here:
//!
//! * [`features()`]: the feature bits the kernels and the policy need, detected once with
//!   CPUID/XGETBV and published in an atomic (detection is idempotent, so a race between
//!   two first callers is harmless: both store the same value). Features can be masked
//!   off with `dispatch::mask_features` (tests use it to prove the portable path and to
//!   emulate smaller hosts; the lab uses it for runs without AVX).
//! * [`detect()`]: the full report (vendor, brand string, every cache level as each CPUID
//!   leaf describes it) for `blockmem info` and for deriving default thresholds.
//!
//! Cache sizes come from the deterministic per-level leaves: leaf 4 on Intel, leaf
//! 0x8000001D on AMD (with TOPOEXT). The legacy AMD leaf 0x80000006 is read as well and
//! reported beside them, because a hypervisor may fill it with nonsense (an L3 many
//! times the real one, which moves glibc's non-temporal threshold as far). Even the
//! per-level leaf passes a
//! host's whole L3 to a small guest: [`llc_estimate`] caps what blockmem believes. The sizes blockmem *uses*
//! ([`CacheInfo::used`]) are the per-level values after sanity checks, with the source of
//! each recorded.

use core::sync::atomic::{AtomicU32, Ordering};

/// A set of CPU features relevant to block memory operations.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Features(u32);

impl Features {
    /// No features (what a non-x86_64 target reports).
    pub const NONE: Features = Features(0);
    /// SSE2 (architectural on x86_64).
    pub const SSE2: Features = Features(1 << 0);
    /// AVX, with the OS saving YMM state (XGETBV checked).
    pub const AVX: Features = Features(1 << 1);
    /// AVX2, with the OS saving YMM state (XGETBV checked).
    pub const AVX2: Features = Features(1 << 2);
    /// AVX-512 Foundation, with the OS saving ZMM/opmask state (XGETBV checked).
    pub const AVX512F: Features = Features(1 << 3);
    /// Enhanced REP MOVSB/STOSB.
    pub const ERMS: Features = Features(1 << 4);
    /// Fast short REP MOVSB.
    pub const FSRM: Features = Features(1 << 5);
    /// CLFLUSHOPT.
    pub const CLFLUSHOPT: Features = Features(1 << 6);
    /// CLZERO (AMD): zero a whole cache line without reading it.
    pub const CLZERO: Features = Features(1 << 7);
    /// PREFETCHW.
    pub const PREFETCHW: Features = Features(1 << 8);
    /// CLFLUSH (architectural on x86_64).
    pub const CLFLUSH: Features = Features(1 << 9);
    /// RDTSCP.
    pub const RDTSCP: Features = Features(1 << 10);
    /// Invariant TSC (constant rate across P-/C-states).
    pub const INVARIANT_TSC: Features = Features(1 << 11);
    /// AVX-512 byte/word instructions (masked byte loads and stores) and their 128-
    /// and 256-bit forms (AVX-512VL, present on every CPU with BW), with the OS saving
    /// ZMM/opmask state.
    pub const AVX512BW: Features = Features(1 << 12);
    /// BMI2 (`bzhi`, used to build byte masks without a branch).
    pub const BMI2: Features = Features(1 << 13);

    /// Every named feature with its stable name, in a fixed order.
    pub const ALL_NAMED: [(Features, &'static str); 14] = [
        (Features::SSE2, "sse2"),
        (Features::AVX, "avx"),
        (Features::AVX2, "avx2"),
        (Features::AVX512F, "avx512f"),
        (Features::AVX512BW, "avx512bw"),
        (Features::BMI2, "bmi2"),
        (Features::ERMS, "erms"),
        (Features::FSRM, "fsrm"),
        (Features::CLFLUSH, "clflush"),
        (Features::CLFLUSHOPT, "clflushopt"),
        (Features::CLZERO, "clzero"),
        (Features::PREFETCHW, "prefetchw"),
        (Features::RDTSCP, "rdtscp"),
        (Features::INVARIANT_TSC, "invariant_tsc"),
    ];

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }
    /// Builds a set from raw bits (unknown bits are kept, and mean nothing).
    pub const fn from_bits(bits: u32) -> Features {
        Features(bits)
    }
    /// True if every feature of `other` is in `self`.
    pub const fn contains(self, other: Features) -> bool {
        self.0 & other.0 == other.0
    }
    /// The union of two sets.
    pub const fn union(self, other: Features) -> Features {
        Features(self.0 | other.0)
    }
    /// `self` without the features of `other`.
    pub const fn without(self, other: Features) -> Features {
        Features(self.0 & !other.0)
    }
    /// The set as a mask: masking AVX off masks AVX2 and AVX-512 too, and AVX-512F
    /// masks AVX-512BW (they depend on it).
    pub const fn with_dependents(self) -> Features {
        let mut f = self;
        if f.contains(Features::AVX) {
            f = f.union(Features::AVX2).union(Features::AVX512F);
        }
        if f.contains(Features::AVX512F) {
            f = f.union(Features::AVX512BW);
        }
        f
    }
    /// True if the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The stable lowercase names of the features in the set, in a fixed order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Features::ALL_NAMED
            .iter()
            .filter(move |(f, _)| self.contains(*f) && !f.is_empty())
            .map(|(_, n)| *n)
    }
    /// Parses one stable feature name (as printed by [`Features::names`]).
    pub fn from_name(name: &str) -> Option<Features> {
        Features::ALL_NAMED
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }
}

impl core::fmt::Debug for Features {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Bit 31 of `DETECTED` marks "detection has run".
const INIT_BIT: u32 = 1 << 31;
static DETECTED: AtomicU32 = AtomicU32::new(0);
static DISABLED: AtomicU32 = AtomicU32::new(0);

/// The features available to blockmem: detected once, minus those masked off (see
/// `crate::dispatch::mask_features`).
///
/// Async-signal-safe and lock-free; safe to call before any initialisation.
#[inline]
pub fn features() -> Features {
    let mut bits = DETECTED.load(Ordering::Relaxed);
    if bits & INIT_BIT == 0 {
        bits = detect_features().0 | INIT_BIT;
        DETECTED.store(bits, Ordering::Relaxed);
    }
    Features((bits & !INIT_BIT) & !DISABLED.load(Ordering::Relaxed))
}

/// The features the hardware and OS offer, ignoring any mask.
pub fn detected_features() -> Features {
    features();
    Features(DETECTED.load(Ordering::Relaxed) & !INIT_BIT)
}

static FAMILY: AtomicU32 = AtomicU32::new(0);

/// The CPU's family, extended family folded in (as [`CpuInfo::family`]): read once, 0
/// off x86-64. The built-in table of an AMD Zen depends on it
/// ([`crate::builtin::Class::of`]).
pub fn family() -> u32 {
    let f = FAMILY.load(Ordering::Relaxed);
    if f & INIT_BIT != 0 {
        return f & !INIT_BIT;
    }
    #[cfg(target_arch = "x86_64")]
    let f = family_of_leaf1(x86::cpuid(1, 0).eax);
    #[cfg(not(target_arch = "x86_64"))]
    let f = 0;
    FAMILY.store(f | INIT_BIT, Ordering::Relaxed);
    f
}

/// The family in CPUID leaf 1's EAX: the base family, plus the extended family where
/// the base is 0xf.
pub const fn family_of_leaf1(eax: u32) -> u32 {
    let base = (eax >> 8) & 0xf;
    if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    }
}

/// CPUID leaves as another party already read them, for [`detect_from`]: EAX, EBX,
/// ECX, EDX of leaf 1, leaf 7 (subleaf 0), 0x8000_0001, 0x8000_0007 and 0x8000_0008;
/// all zeros for a leaf the CPU lacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leaves {
    /// Leaf 1.
    pub l1: [u32; 4],
    /// Leaf 7, subleaf 0.
    pub l7: [u32; 4],
    /// Leaf 0x8000_0001.
    pub e1: [u32; 4],
    /// Leaf 0x8000_0007.
    pub e7: [u32; 4],
    /// Leaf 0x8000_0008.
    pub e8: [u32; 4],
}

/// Takes the features from CPUID leaves already read, where detection has not run
/// yet, instead of executing CPUID: glibc reads these leaves when a process starts and
/// keeps them (`__x86_get_cpuid_feature_leaf`), and in a virtual machine every CPUID
/// is an exit to the hypervisor (microseconds each, at every process start under the
/// preload shim).
/// Returns false where detection had already run (its result stays). The vector
/// registers' OS support is read here (XGETBV), as detection reads it.
#[cfg(target_arch = "x86_64")]
pub fn detect_from(leaves: &Leaves) -> bool {
    let bits = x86::features_of(leaves).0 | INIT_BIT;
    DETECTED
        .compare_exchange(0, bits, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}

/// The features `leaves` report, with this OS's support for the vector registers:
/// what [`detect_from`] would take from them.
#[cfg(target_arch = "x86_64")]
pub fn features_of_leaves(leaves: &Leaves) -> Features {
    x86::features_of(leaves)
}

/// The features CPUID reports (seven CPUID instructions, run on every call), whatever
/// detection took: what leaves given to [`detect_from`] must agree with.
#[cfg(target_arch = "x86_64")]
pub fn features_by_cpuid() -> Features {
    x86::features()
}

/// Sets the mask of features that [`features`] leaves out (what
/// `crate::dispatch::mask_features` sets, then recompiles its plan). Disabling AVX also
/// disables AVX2 and AVX-512 (they depend on it).
pub(crate) fn set_masked(f: Features) {
    DISABLED.store(f.with_dependents().0, Ordering::Relaxed);
}

/// The features masked off ([`crate::dispatch::mask_features`] sets them).
pub fn masked() -> Features {
    Features(DISABLED.load(Ordering::Relaxed))
}

/// The most last-level cache one core can use on any CPU made so far: 12 MiB (AMD's
/// stacked-cache parts, 768 MiB over 64 cores and 1152 MiB over 96). A CPUID L3 larger
/// than this many times the CPUs the process may run on is a hypervisor passing its
/// host's whole cache (as on the 2-vCPU hosts under `docs/results`, whose measured
/// effective LLC was a fraction of what CPUID reported).
pub const LLC_PER_CPU_MAX: usize = 12 << 20;

/// The LLC size blockmem believes without measuring: CPUID's (`reported`), but at most
/// [`LLC_PER_CPU_MAX`] per CPU the process may run on (`cpus`, at least 1).
pub const fn llc_estimate(reported: usize, cpus: usize) -> usize {
    let cpus = if cpus == 0 { 1 } else { cpus };
    let cap = LLC_PER_CPU_MAX.saturating_mul(cpus);
    if reported < cap {
        reported
    } else {
        cap
    }
}

/// The LLC size a table without a measured one (a built-in table) runs with: the
/// [`llc_estimate`] of the CPUID cache sizes for the CPUs this process may run on.
/// `policy::Plan::llc_effective` asks for it on the first call that needs it.
pub fn llc_default() -> usize {
    llc_estimate(used_caches().llc.size, crate::sys::cpus_available())
}

/// The CPU vendor, as far as blockmem cares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Vendor {
    /// GenuineIntel.
    Intel,
    /// AuthenticAMD or HygonGenuine (same cache leaves).
    Amd,
    /// Anything else, or not x86.
    Other,
}

/// What kind of cache a level is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
}

/// One cache as a per-level CPUID leaf describes it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CacheLevel {
    /// 1, 2, 3, …
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// Total bytes.
    pub size: usize,
    /// Line size in bytes.
    pub line: u32,
    /// Associativity.
    pub ways: u32,
    /// Number of sets.
    pub sets: u32,
    /// Maximum number of logical processors sharing this cache.
    pub shared_by: u32,
}

/// Where a cache size in [`UsedCaches`] came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SizeSource {
    /// The deterministic per-level leaf (4 on Intel, 0x8000001D on AMD).
    PerLevelLeaf,
    /// The legacy AMD leaf 0x80000006 (used only when no per-level leaf answered).
    LegacyLeaf,
    /// A built-in default: CPUID gave nothing usable.
    Default,
}

impl SizeSource {
    /// A short stable name (`cpuid-leaf-4`, `cpuid-0x8000001d`, …) for reports.
    pub fn describe(self, vendor: Vendor) -> &'static str {
        match (self, vendor) {
            (SizeSource::PerLevelLeaf, Vendor::Amd) => "cpuid 0x8000001d",
            (SizeSource::PerLevelLeaf, _) => "cpuid 4",
            (SizeSource::LegacyLeaf, _) => "cpuid 0x80000006",
            (SizeSource::Default, _) => "default",
        }
    }
}

/// One cache size blockmem uses, with its provenance.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UsedSize {
    /// Bytes.
    pub size: usize,
    /// Where it came from.
    pub source: SizeSource,
}

/// The cache sizes blockmem derives thresholds from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UsedCaches {
    /// L1 data cache, per core.
    pub l1d: UsedSize,
    /// L2, per core (or per cluster).
    pub l2: UsedSize,
    /// Last-level cache (the whole cache as the leaf reports it).
    pub llc: UsedSize,
    /// Cache line size.
    pub line: usize,
}

/// Maximum number of cache levels recorded.
pub const MAX_LEVELS: usize = 8;

/// Cache topology from every leaf blockmem reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CacheInfo {
    /// The per-level leaf this CPU answers (4 or 0x8000001D), if any. The levels are
    /// re-read from it by [`CacheInfo::levels`] rather than stored, which keeps this
    /// report small enough to return without a `memcpy` call.
    pub per_level_leaf: Option<u32>,
    /// L2 size in bytes from legacy leaf 0x80000006 ECX (0 if absent).
    pub legacy_l2: usize,
    /// L3 size in bytes from legacy leaf 0x80000006 EDX (0 if absent).
    pub legacy_l3: usize,
    /// The sizes blockmem uses, after sanity checks.
    pub used: UsedCaches,
}

impl CacheInfo {
    /// The caches the per-level leaf enumerates, in CPUID order.
    pub fn levels(&self) -> impl Iterator<Item = CacheLevel> {
        let leaf = self.per_level_leaf;
        (0..MAX_LEVELS as u32).map_while(move |i| leaf.and_then(|l| subleaf(l, i)))
    }
}

/// The full detection report.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CpuInfo {
    /// Vendor.
    pub vendor: Vendor,
    /// The 12-byte vendor string (`GenuineIntel`, `AuthenticAMD`, …).
    pub vendor_string: [u8; 12],
    /// The 48-byte brand string, NUL padded.
    pub brand: [u8; 48],
    /// Family (with extended family folded in).
    pub family: u32,
    /// Model (with extended model folded in).
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
    /// True when CPUID says a hypervisor is present.
    pub hypervisor: bool,
    /// Features the hardware and OS offer (before any mask).
    pub features: Features,
    /// Cache topology.
    pub caches: CacheInfo,
}

impl CpuInfo {
    /// The brand string, trimmed (empty when CPUID has none).
    pub fn brand_str(&self) -> &str {
        trim_ascii(&self.brand)
    }
    /// The vendor string.
    pub fn vendor_str(&self) -> &str {
        trim_ascii(&self.vendor_string)
    }
}

fn trim_ascii(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..end]).unwrap_or("?").trim()
}

/// Defaults when CPUID gives nothing plausible: a conservative small machine.
pub const DEFAULT_L1D: usize = 32 << 10;
/// See [`DEFAULT_L1D`].
pub const DEFAULT_L2: usize = 256 << 10;
/// See [`DEFAULT_L1D`].
pub const DEFAULT_LLC: usize = 8 << 20;
/// See [`DEFAULT_L1D`].
pub const DEFAULT_LINE: usize = 64;

/// Plausible ranges for each level; a value outside is treated as a hypervisor's lie.
const L1D_RANGE: (usize, usize) = (4 << 10, 2 << 20);
const L2_RANGE: (usize, usize) = (64 << 10, 64 << 20);
const LLC_RANGE: (usize, usize) = (256 << 10, 4 << 30);

/// Picks the sizes to use from what the leaves reported. Pure, so it is unit-tested.
///
/// Per-level values win when plausible; the legacy leaf only fills gaps; a level that is
/// not larger than the one below it is rejected.
pub fn choose_used(
    per_level: &[Option<CacheLevel>],
    legacy_l2: usize,
    legacy_l3: usize,
) -> UsedCaches {
    // Plain index loops, no iterator adapters: this runs on the first large operation,
    // and unoptimised adapters copy themselves with `memcpy` (see the disassembly test).
    let in_range = |v: usize, r: (usize, usize)| v >= r.0 && v <= r.1;
    let find = |level: u8, data: bool| -> Option<CacheLevel> {
        let mut i = 0;
        while i < per_level.len() {
            if let Some(c) = per_level[i] {
                if c.level == level
                    && (c.kind == CacheKind::Unified || (data && c.kind == CacheKind::Data))
                {
                    return Some(c);
                }
            }
            i += 1;
        }
        None
    };
    let mut line = DEFAULT_LINE;
    let mut top: Option<CacheLevel> = None;
    let mut i = 0;
    while i < per_level.len() {
        if let Some(c) = per_level[i] {
            let l = c.line as usize;
            if c.kind != CacheKind::Instruction
                && line == DEFAULT_LINE
                && l.is_power_of_two()
                && (16..=1024).contains(&l)
            {
                line = l;
            }
            if c.level >= 3 && c.kind == CacheKind::Unified && top.is_none_or(|t| c.level > t.level)
            {
                top = Some(c);
            }
        }
        i += 1;
    }

    let l1d = match find(1, true) {
        Some(c) if in_range(c.size, L1D_RANGE) => UsedSize {
            size: c.size,
            source: SizeSource::PerLevelLeaf,
        },
        _ => UsedSize {
            size: DEFAULT_L1D,
            source: SizeSource::Default,
        },
    };
    let l2 = match find(2, false) {
        Some(c) if in_range(c.size, L2_RANGE) && c.size > l1d.size => UsedSize {
            size: c.size,
            source: SizeSource::PerLevelLeaf,
        },
        _ if in_range(legacy_l2, L2_RANGE) && legacy_l2 > l1d.size => UsedSize {
            size: legacy_l2,
            source: SizeSource::LegacyLeaf,
        },
        _ => UsedSize {
            size: DEFAULT_L2.max(l1d.size * 2),
            source: SizeSource::Default,
        },
    };
    let llc = match top {
        Some(c) if in_range(c.size, LLC_RANGE) && c.size > l2.size => UsedSize {
            size: c.size,
            source: SizeSource::PerLevelLeaf,
        },
        _ if in_range(legacy_l3, LLC_RANGE) && legacy_l3 > l2.size => UsedSize {
            size: legacy_l3,
            source: SizeSource::LegacyLeaf,
        },
        // No L3 at all: the L2 is the last level.
        None if l2.source != SizeSource::Default => l2,
        _ => UsedSize {
            size: DEFAULT_LLC.max(l2.size * 2),
            source: SizeSource::Default,
        },
    };
    UsedCaches { l1d, l2, llc, line }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use core::arch::x86_64::{__cpuid_count, CpuidResult};

    #[inline]
    pub(super) fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
        // CPUID is architectural on x86_64 and has no side effects (a safe function
        // in recent toolchains; the allow keeps older ones, where it is unsafe, happy).
        #[allow(unused_unsafe)]
        // SAFETY: CPUID is always available on x86_64.
        unsafe {
            __cpuid_count(leaf, sub)
        }
    }

    /// XCR0, if the OS enabled XSAVE (CPUID.1:ECX.OSXSAVE); else 0.
    fn xcr0(osxsave: bool) -> u64 {
        if !osxsave {
            return 0;
        }
        let (lo, hi): (u32, u32);
        // SAFETY: XGETBV with ECX=0 is valid whenever CR4.OSXSAVE is set, which
        // CPUID.1:ECX[27] reports; it reads a register and touches no memory.
        unsafe {
            core::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi,
                options(nomem, nostack, preserves_flags));
        }
        ((hi as u64) << 32) | lo as u64
    }

    pub(super) fn features() -> Features {
        // Register by register, no arrays: in an unoptimised build an array or a
        // struct of them is set or copied with a call to `memset`/`memcpy`, which the
        // shim would serve with this very detection.
        let max = cpuid(0, 0).eax;
        let emax = cpuid(0x8000_0000, 0).eax;
        let l1 = cpuid(1, 0);
        let (l7_ebx, l7_edx) = if max >= 7 {
            let l7 = cpuid(7, 0);
            (l7.ebx, l7.edx)
        } else {
            (0, 0)
        };
        let (e1_ecx, e1_edx) = if emax >= 0x8000_0001 {
            let e1 = cpuid(0x8000_0001, 0);
            (e1.ecx, e1.edx)
        } else {
            (0, 0)
        };
        let e7_edx = if emax >= 0x8000_0007 {
            cpuid(0x8000_0007, 0).edx
        } else {
            0
        };
        let e8_ebx = if emax >= 0x8000_0008 {
            cpuid(0x8000_0008, 0).ebx
        } else {
            0
        };
        features_of_regs(l1.ecx, l7_ebx, l7_edx, e1_ecx, e1_edx, e7_edx, e8_ebx)
    }

    /// The features `leaves` report (see [`features_of_regs`]).
    pub(super) fn features_of(leaves: &Leaves) -> Features {
        features_of_regs(
            leaves.l1[2],
            leaves.l7[1],
            leaves.l7[3],
            leaves.e1[2],
            leaves.e1[3],
            leaves.e7[3],
            leaves.e8[1],
        )
    }

    /// The features the registers that carry them report (a leaf the CPU lacks: 0),
    /// with the OS's XSAVE state (XGETBV: no exit to a hypervisor) for the vector
    /// registers.
    fn features_of_regs(
        l1_ecx: u32,
        l7_ebx: u32,
        l7_edx: u32,
        e1_ecx: u32,
        e1_edx: u32,
        e7_edx: u32,
        e8_ebx: u32,
    ) -> Features {
        let mut f = Features::SSE2.union(Features::CLFLUSH);
        let osxsave = l1_ecx & (1 << 27) != 0;
        let xcr0 = xcr0(osxsave);
        let ymm_saved = xcr0 & 0b110 == 0b110;
        let zmm_saved = ymm_saved && xcr0 & 0xe0 == 0xe0;
        if l1_ecx & (1 << 28) != 0 && ymm_saved {
            f = f.union(Features::AVX);
        }
        if l7_ebx & (1 << 5) != 0 && f.contains(Features::AVX) {
            f = f.union(Features::AVX2);
        }
        if l7_ebx & (1 << 16) != 0 && zmm_saved {
            f = f.union(Features::AVX512F);
            // BW together with VL (bit 31): the masked paths use 32-byte EVEX forms.
            // Every CPU with BW has VL.
            if l7_ebx & (1 << 30) != 0 && l7_ebx & (1 << 31) != 0 {
                f = f.union(Features::AVX512BW);
            }
        }
        if l7_ebx & (1 << 8) != 0 {
            f = f.union(Features::BMI2);
        }
        if l7_ebx & (1 << 9) != 0 {
            f = f.union(Features::ERMS);
        }
        if l7_ebx & (1 << 23) != 0 {
            f = f.union(Features::CLFLUSHOPT);
        }
        if l7_edx & (1 << 4) != 0 {
            f = f.union(Features::FSRM);
        }
        if e1_ecx & (1 << 8) != 0 {
            f = f.union(Features::PREFETCHW);
        }
        if e1_edx & (1 << 27) != 0 {
            f = f.union(Features::RDTSCP);
        }
        if e7_edx & (1 << 8) != 0 {
            f = f.union(Features::INVARIANT_TSC);
        }
        if e8_ebx & 1 != 0 {
            f = f.union(Features::CLZERO);
        }
        f
    }

    fn vendor_of(s: &[u8; 12]) -> Vendor {
        match s {
            b"GenuineIntel" => Vendor::Intel,
            b"AuthenticAMD" | b"HygonGenuine" => Vendor::Amd,
            _ => Vendor::Other,
        }
    }

    /// Reads subleaf `i` of a leaf-4-shaped leaf (4 or 0x8000001D); `None` at the end.
    pub(super) fn cache_subleaf(leaf: u32, i: u32) -> Option<CacheLevel> {
        let r = cpuid(leaf, i);
        let kind = match r.eax & 0x1f {
            1 => CacheKind::Data,
            2 => CacheKind::Instruction,
            3 => CacheKind::Unified,
            _ => return None,
        };
        let line = (r.ebx & 0xfff) + 1;
        let parts = ((r.ebx >> 12) & 0x3ff) + 1;
        let ways = ((r.ebx >> 22) & 0x3ff) + 1;
        let sets = r.ecx.wrapping_add(1);
        Some(CacheLevel {
            level: ((r.eax >> 5) & 0x7) as u8,
            kind,
            size: line as usize * parts as usize * ways as usize * sets as usize,
            line,
            ways,
            sets,
            shared_by: ((r.eax >> 14) & 0xfff) + 1,
        })
    }

    /// Which per-level leaf this CPU has, and the legacy leaf's (L2, L3) sizes.
    pub(super) fn cache_leaves() -> (Option<u32>, usize, usize) {
        let l0 = cpuid(0, 0);
        let amd = (l0.ebx, l0.edx, l0.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163) // "AuthenticAMD"
            || (l0.ebx, l0.edx, l0.ecx) == (0x6f67_7948, 0x6e65_476e, 0x656e_6975); // "HygonGenuine"
        let emax = cpuid(0x8000_0000, 0).eax;
        let topoext = emax >= 0x8000_0001 && cpuid(0x8000_0001, 0).ecx & (1 << 22) != 0;
        let leaf = if amd && topoext && emax >= 0x8000_001d {
            Some(0x8000_001d)
        } else if l0.eax >= 4 {
            Some(4)
        } else {
            None
        };
        let (mut l2, mut l3) = (0, 0);
        if emax >= 0x8000_0006 {
            let r = cpuid(0x8000_0006, 0);
            l2 = ((r.ecx >> 16) as usize) << 10;
            l3 = ((r.edx >> 18) as usize) * (512 << 10);
        }
        (leaf, l2, l3)
    }

    /// Fills `levels` from the per-level leaf, element by element (no array moves: this
    /// runs on the first large operation, where a compiler-inserted `memcpy` would
    /// recurse through the shim).
    pub(super) fn fill_levels(leaf: Option<u32>, levels: &mut [Option<CacheLevel>; MAX_LEVELS]) {
        let Some(leaf) = leaf else { return };
        let mut i = 0;
        while i < MAX_LEVELS {
            levels[i] = cache_subleaf(leaf, i as u32);
            if levels[i].is_none() {
                break;
            }
            i += 1;
        }
    }

    /// Fills the report in place (see `fill_levels` for why in place).
    pub(super) fn detect_into(info: &mut CpuInfo) {
        let l0 = cpuid(0, 0);
        let regs = [l0.ebx, l0.edx, l0.ecx];
        let mut k = 0;
        while k < 12 {
            info.vendor_string[k] = (regs[k / 4] >> (8 * (k % 4))) as u8;
            k += 1;
        }
        info.vendor = vendor_of(&info.vendor_string);
        let l1 = cpuid(1, 0);
        let base_family = (l1.eax >> 8) & 0xf;
        info.family = family_of_leaf1(l1.eax);
        info.model = (l1.eax >> 4) & 0xf;
        if base_family == 0x6 || base_family == 0xf {
            info.model |= ((l1.eax >> 16) & 0xf) << 4;
        }
        info.stepping = l1.eax & 0xf;
        info.hypervisor = l1.ecx & (1 << 31) != 0;
        let emax = cpuid(0x8000_0000, 0).eax;
        if emax >= 0x8000_0004 {
            let mut leaf = 0x8000_0002u32;
            while leaf <= 0x8000_0004 {
                let r = cpuid(leaf, 0);
                let regs = [r.eax, r.ebx, r.ecx, r.edx];
                let base = (leaf - 0x8000_0002) as usize * 16;
                let mut k = 0;
                while k < 16 {
                    info.brand[base + k] = (regs[k / 4] >> (8 * (k % 4))) as u8;
                    k += 1;
                }
                leaf += 1;
            }
        }
        let (leaf, l2, l3) = cache_leaves();
        info.caches.per_level_leaf = leaf;
        info.caches.legacy_l2 = l2;
        info.caches.legacy_l3 = l3;
        info.caches.used = super::used_caches();
        info.features = detected_features();
    }
}

#[cfg(target_arch = "x86_64")]
fn detect_features() -> Features {
    x86::features()
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_features() -> Features {
    Features::NONE
}

/// Runs the full detection (about twenty CPUID instructions; each may trap to the
/// hypervisor, so call it once, not per operation). For reports; the operations
/// themselves only need [`features`] and [`used_caches`].
#[cfg(target_arch = "x86_64")]
pub fn detect() -> CpuInfo {
    let mut info = CpuInfo {
        vendor: Vendor::Other,
        vendor_string: [0; 12],
        brand: [0; 48],
        family: 0,
        model: 0,
        stepping: 0,
        hypervisor: false,
        features: Features::NONE,
        caches: CacheInfo {
            per_level_leaf: None,
            legacy_l2: 0,
            legacy_l3: 0,
            used: choose_used(&[None; MAX_LEVELS], 0, 0),
        },
    };
    x86::detect_into(&mut info);
    info
}

#[cfg(target_arch = "x86_64")]
fn subleaf(leaf: u32, i: u32) -> Option<CacheLevel> {
    x86::cache_subleaf(leaf, i)
}

#[cfg(not(target_arch = "x86_64"))]
fn subleaf(_leaf: u32, _i: u32) -> Option<CacheLevel> {
    None
}

/// The cache sizes blockmem uses ([`CacheInfo::used`]) without the rest of the report:
/// what the dispatcher derives its default thresholds from on the first large operation.
#[cfg(target_arch = "x86_64")]
pub fn used_caches() -> UsedCaches {
    let mut levels = [None; MAX_LEVELS];
    let (leaf, l2, l3) = x86::cache_leaves();
    x86::fill_levels(leaf, &mut levels);
    choose_used(&levels, l2, l3)
}

/// The cache sizes blockmem uses: defaults on this target.
#[cfg(not(target_arch = "x86_64"))]
pub fn used_caches() -> UsedCaches {
    choose_used(&[None; MAX_LEVELS], 0, 0)
}

/// Runs the full detection: on this target there is no CPUID, so everything is default.
#[cfg(not(target_arch = "x86_64"))]
pub fn detect() -> CpuInfo {
    CpuInfo {
        vendor: Vendor::Other,
        vendor_string: *b"unknown     ",
        brand: [0; 48],
        family: 0,
        model: 0,
        stepping: 0,
        hypervisor: false,
        features: Features::NONE,
        caches: CacheInfo {
            levels,
            legacy_l2: 0,
            legacy_l3: 0,
            used: choose_used(&levels, 0, 0),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn leaves_give_their_feature_bits() {
        let none = Leaves::default();
        assert_eq!(
            features_of_leaves(&none),
            Features::SSE2.union(Features::CLFLUSH)
        );
        let mut l = Leaves {
            l7: [0, (1 << 8) | (1 << 9) | (1 << 23), 0, 1 << 4],
            e1: [0, 0, 1 << 8, 1 << 27],
            e7: [0, 0, 0, 1 << 8],
            e8: [0, 1, 0, 0],
            ..Leaves::default()
        };
        let f = features_of_leaves(&l);
        for want in [
            Features::BMI2,
            Features::ERMS,
            Features::CLFLUSHOPT,
            Features::FSRM,
            Features::PREFETCHW,
            Features::RDTSCP,
            Features::INVARIANT_TSC,
            Features::CLZERO,
        ] {
            assert!(f.contains(want), "{want:?} missing from {f:?}");
        }
        // AVX2 and AVX-512 need AVX (leaf 1) and the OS's saved state, whatever leaf 7
        // says.
        l.l7[1] |= (1 << 5) | (1 << 16) | (1 << 30) | (1 << 31);
        let f = features_of_leaves(&l);
        assert!(!f.contains(Features::AVX2) && !f.contains(Features::AVX512F));
    }

    #[test]
    fn the_llc_estimate_caps_a_hypervisors_l3_per_cpu() {
        assert_eq!(llc_estimate(480 << 20, 2), 24 << 20);
        assert_eq!(llc_estimate(32 << 20, 4), 32 << 20);
        assert_eq!(llc_estimate(32 << 20, 2), 24 << 20);
        assert_eq!(llc_estimate(300 << 20, 16), 192 << 20);
        assert_eq!(llc_estimate(2 << 20, 0), 2 << 20);
        assert_eq!(llc_estimate(64 << 20, 0), 12 << 20);
    }

    fn lvl(level: u8, kind: CacheKind, size: usize) -> Option<CacheLevel> {
        Some(CacheLevel {
            level,
            kind,
            size,
            line: 64,
            ways: 8,
            sets: (size / 512) as u32,
            shared_by: 1,
        })
    }

    #[test]
    fn per_level_wins_over_legacy() {
        // A Zen 3 guest: leaf 0x8000001D says 32 MiB, the legacy leaf says 256 MiB.
        let levels = [
            lvl(1, CacheKind::Data, 32 << 10),
            lvl(1, CacheKind::Instruction, 32 << 10),
            lvl(2, CacheKind::Unified, 512 << 10),
            lvl(3, CacheKind::Unified, 32 << 20),
            None,
            None,
            None,
            None,
        ];
        let u = choose_used(&levels, 512 << 10, 256 << 20);
        assert_eq!(
            u.llc,
            UsedSize {
                size: 32 << 20,
                source: SizeSource::PerLevelLeaf
            }
        );
        assert_eq!(u.l2.size, 512 << 10);
        assert_eq!(u.l1d.size, 32 << 10);
        assert_eq!(u.line, 64);
    }

    #[test]
    fn legacy_fills_gaps_and_defaults_last() {
        let none = [None; MAX_LEVELS];
        let u = choose_used(&none, 1 << 20, 16 << 20);
        assert_eq!(u.l1d.source, SizeSource::Default);
        assert_eq!(
            u.l2,
            UsedSize {
                size: 1 << 20,
                source: SizeSource::LegacyLeaf
            }
        );
        assert_eq!(
            u.llc,
            UsedSize {
                size: 16 << 20,
                source: SizeSource::LegacyLeaf
            }
        );
        let u = choose_used(&none, 0, 0);
        assert_eq!(u.llc.source, SizeSource::Default);
        assert!(u.llc.size > u.l2.size && u.l2.size > u.l1d.size);
    }

    #[test]
    fn implausible_values_are_rejected() {
        // An L3 smaller than L2 and an absurd L1 are both lies.
        let levels = [
            lvl(1, CacheKind::Data, 64 << 20),
            lvl(2, CacheKind::Unified, 2 << 20),
            lvl(3, CacheKind::Unified, 1 << 20),
            None,
            None,
            None,
            None,
            None,
        ];
        let u = choose_used(&levels, 0, 0);
        assert_eq!(u.l1d.source, SizeSource::Default);
        assert_eq!(u.l2.size, 2 << 20);
        assert_eq!(u.llc.source, SizeSource::Default);
        assert!(u.llc.size > u.l2.size);
    }

    #[test]
    fn names_round_trip() {
        for (f, n) in Features::ALL_NAMED {
            assert_eq!(Features::from_name(n), Some(f));
        }
    }
}
