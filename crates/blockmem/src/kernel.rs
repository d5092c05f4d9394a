//! The kernel table: every kernel with its stable name, the operations it implements
//! and the CPU features it needs.
//!
//! Adding a kernel is one module under `arch/` plus one [`KernelId`] variant and one
//! table entry here. A kernel is only ever called through [`Available`], which can only
//! be built by [`Kernel::available`] after the feature check, so the `target_feature`
//! obligation of the kernel functions holds by construction.

use crate::arch;
use crate::cpu::{features, Features};

/// A copy or move kernel: `(dst, src, n)`, returning `dst`.
///
/// Every kernel returns `dst`, so that a C entry handing a call to one (`dispatch`'s
/// `copy_above_c` and `set_above_c`) ends in a jump to it and has nothing left to do
/// after it. A call instead kept `dst` in a saved register and restored the registers
/// from the stack after the kernel: loads that waited for a `rep stosb` or `rep movsb`
/// to finish. On a 2-vCPU AMD EPYC Zen 5 KVM guest, 2,049-byte sets through `rep stosb`
/// in a loop over 64 buffers took 47-52 TSC ticks that way against glibc's 40
/// (`scripts/workloads/edge_loops.c`), 44 with the jump.
pub type CopyFn = unsafe extern "C" fn(*mut u8, *const u8, usize) -> *mut u8;
/// A set kernel: `(dst, byte, n)`, returning `dst`.
pub type SetFn = unsafe extern "C" fn(*mut u8, u8, usize) -> *mut u8;
/// A zero kernel: `(dst, n)`, returning `dst`.
pub type ZeroFn = unsafe extern "C" fn(*mut u8, usize) -> *mut u8;

/// A block memory operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Op {
    /// `memcpy`: non-overlapping copy.
    Copy,
    /// `memmove`: copy that allows overlap.
    Move,
    /// `memset`: fill with a byte.
    Set,
    /// `bzero`: fill with zero.
    Zero,
}

impl Op {
    /// Every op, in a fixed order.
    pub const ALL: [Op; 4] = [Op::Copy, Op::Move, Op::Set, Op::Zero];
    /// The stable lowercase name (`copy`, `move`, `set`, `zero`).
    pub const fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Move => "move",
            Op::Set => "set",
            Op::Zero => "zero",
        }
    }
    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// What the caller knows about the destination's future.
///
/// Mirrors madvise-style meta-interfaces (seed 000, docs/SEEDS.md) and PMDK's per-call flags. Each
/// hint has its own rows in the decision table ([`crate::profile`]), so what a hint
/// does on a host is what calibration measured there: `blockmem info` prints it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Hint {
    /// Nothing known: blockmem predicts from the size and, where the table says a
    /// probe pays, from the destination's cache state (a destination that probes cached
    /// is updated in place; one that probes cold or fresh gets the kernel measured best
    /// for it, streaming past the cache where that wins even if the data is read back).
    /// The default; right for most calls.
    #[default]
    Auto,
    /// The destination will be read soon (a buffer about to be parsed, hashed or
    /// sent): the kernel that makes the call and the read after it fastest, which keeps
    /// it in cache unless the block cannot stay there anyway.
    Reuse,
    /// The destination will not be read soon (page clearing, log or I/O buffers, bulk
    /// moves): stream it past the cache (non-temporal stores) from a modest size on, so
    /// it does not evict the caller's working set (seed 004).
    NoReuse,
}

impl Hint {
    /// The hint of a C ABI value (`BLOCKMEM_HINT_*`: 1 reuse, 2 no reuse); any other
    /// value means auto.
    #[inline(always)]
    pub const fn from_c(v: u32) -> Hint {
        match v {
            1 => Hint::Reuse,
            2 => Hint::NoReuse,
            _ => Hint::Auto,
        }
    }

    /// The C ABI value of [`Hint::Auto`] (`BLOCKMEM_HINT_AUTO`), the one the preload
    /// shim passes.
    pub const C_AUTO: u32 = 0;

    /// Every hint, in a fixed order.
    pub const ALL: [Hint; 3] = [Hint::Auto, Hint::Reuse, Hint::NoReuse];
    /// The stable lowercase name (`auto`, `reuse`, `noreuse`).
    pub const fn name(self) -> &'static str {
        match self {
            Hint::Auto => "auto",
            Hint::Reuse => "reuse",
            Hint::NoReuse => "noreuse",
        }
    }
    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// Identifies a kernel; the order is the table order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum KernelId {
    /// Byte at a time; the reference.
    Naive,
    /// `u64` words; any target.
    Portable,
    /// 16-byte SSE2 vectors, temporal stores.
    Sse2,
    /// 32-byte AVX2 vectors, temporal stores.
    Avx2,
    /// AVX2 with non-temporal stores + sfence.
    Avx2Nt,
    /// Seed 003 Fig. 1 block-prefetch copy, temporal stores.
    Avx2Pf,
    /// Seed 003 Fig. 1 block-prefetch copy, non-temporal stores.
    Avx2PfNt,
    /// 64-byte AVX-512 vectors, temporal stores.
    Avx512,
    /// AVX-512 with non-temporal stores + sfence.
    Avx512Nt,
    /// `rep movsb`.
    RepMovsb,
    /// `rep stosb`.
    RepStosb,
    /// AMD `clzero` (zero only).
    Clzero,
    /// AVX2 with the destination prefetched for ownership a step ahead (copy, move).
    Avx2Pw,
    /// AVX-512 with the destination prefetched for ownership a step ahead (copy, move).
    Avx512Pw,
}

impl KernelId {
    /// Every id, in table order.
    pub const ALL: [KernelId; 14] = [
        KernelId::Naive,
        KernelId::Portable,
        KernelId::Sse2,
        KernelId::Avx2,
        KernelId::Avx2Nt,
        KernelId::Avx2Pf,
        KernelId::Avx2PfNt,
        KernelId::Avx512,
        KernelId::Avx512Nt,
        KernelId::RepMovsb,
        KernelId::RepStosb,
        KernelId::Clzero,
        KernelId::Avx2Pw,
        KernelId::Avx512Pw,
    ];
    /// The stable name used in JSON, on the command line and in `BLOCKMEM_FORCE`.
    pub const fn name(self) -> &'static str {
        match self {
            KernelId::Naive => "naive",
            KernelId::Portable => "portable",
            KernelId::Sse2 => "sse2",
            KernelId::Avx2 => "avx2",
            KernelId::Avx2Nt => "avx2_nt",
            KernelId::Avx2Pf => "avx2_pf",
            KernelId::Avx2PfNt => "avx2_pf_nt",
            KernelId::Avx512 => "avx512",
            KernelId::Avx512Nt => "avx512_nt",
            KernelId::RepMovsb => "rep_movsb",
            KernelId::RepStosb => "rep_stosb",
            KernelId::Clzero => "clzero",
            KernelId::Avx2Pw => "avx2_pw",
            KernelId::Avx512Pw => "avx512_pw",
        }
    }
    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<KernelId> {
        KernelId::ALL.into_iter().find(|k| k.name() == s)
    }
    /// The table entry, if this target has the kernel at all.
    pub fn kernel(self) -> Option<&'static Kernel> {
        table().iter().find(|k| k.id == self)
    }
    /// The kernel that stands in for this one where the CPU cannot run it (or it lacks
    /// the op): the next narrower kernel of the same store class, ending at
    /// `portable`. `None` for `portable` and `naive`, which every CPU runs.
    pub const fn narrower(self) -> Option<KernelId> {
        Some(match self {
            KernelId::Avx512 | KernelId::Avx2Pw | KernelId::Avx2Pf => KernelId::Avx2,
            KernelId::Avx512Nt | KernelId::Avx2PfNt => KernelId::Avx2Nt,
            KernelId::Avx512Pw => KernelId::Avx2Pw,
            KernelId::Avx2 | KernelId::Avx2Nt => KernelId::Sse2,
            KernelId::Sse2 => KernelId::Portable,
            KernelId::Clzero => KernelId::Avx512Nt,
            KernelId::RepMovsb | KernelId::RepStosb => KernelId::Avx512,
            KernelId::Portable | KernelId::Naive => return None,
        })
    }
    /// True if non-temporal stores (or `clzero`) are part of this kernel's long path.
    pub const fn streams(self) -> bool {
        matches!(
            self,
            KernelId::Avx2Nt | KernelId::Avx2PfNt | KernelId::Avx512Nt | KernelId::Clzero
        )
    }
}

/// One kernel: name, summary, required features and entry points.
#[derive(Debug)]
pub struct Kernel {
    /// Identity (and stable name via [`KernelId::name`]).
    pub id: KernelId,
    /// One line: what it does and where it wins.
    pub summary: &'static str,
    /// CPU features without which it must not run.
    pub requires: Features,
    copy: Option<CopyFn>,
    move_: Option<CopyFn>,
    set: Option<SetFn>,
    zero: Option<ZeroFn>,
}

/// The ops of one kernel as the table lists them.
struct Ops {
    copy: Option<CopyFn>,
    move_: Option<CopyFn>,
    set: Option<SetFn>,
    zero: Option<ZeroFn>,
}

/// The ops of a kernel module `$m` with `copy` and `move_` only.
macro_rules! copy_ops {
    ($m:path) => {{
        use $m as m;
        Ops {
            copy: Some(m::copy as CopyFn),
            move_: Some(m::move_ as CopyFn),
            set: None,
            zero: None,
        }
    }};
}

/// The ops of a kernel module `$m` with `set` and `zero` only.
macro_rules! set_ops {
    ($m:path) => {{
        use $m as m;
        Ops {
            copy: None,
            move_: None,
            set: Some(m::set as SetFn),
            zero: Some(m::zero as ZeroFn),
        }
    }};
}

impl Kernel {
    /// The stable name.
    pub const fn name(&self) -> &'static str {
        self.id.name()
    }
    /// True if the kernel implements `op`.
    pub const fn supports(&self, op: Op) -> bool {
        match op {
            Op::Copy => self.copy.is_some(),
            Op::Move => self.move_.is_some(),
            Op::Set => self.set.is_some(),
            Op::Zero => self.zero.is_some(),
        }
    }
    /// The ops it implements, in [`Op::ALL`] order.
    pub fn ops(&self) -> impl Iterator<Item = Op> + '_ {
        Op::ALL.into_iter().filter(move |&op| self.supports(op))
    }
    /// True if this CPU (minus masked features) can run it.
    pub fn is_available(&self) -> bool {
        features().contains(self.requires)
    }
    /// The callable kernel, if this CPU can run it.
    pub fn available(&'static self) -> Option<Available> {
        self.is_available().then_some(Available(self))
    }
}

/// A kernel whose CPU features have been checked. Its entry points still carry the
/// pointer contract of C's `memcpy`/`memmove`/`memset`.
#[derive(Clone, Copy, Debug)]
pub struct Available(&'static Kernel);

impl Available {
    /// The table entry.
    pub fn kernel(self) -> &'static Kernel {
        self.0
    }
    /// The stable name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
    /// The copy entry point: `(dst, src, n)`, ranges valid and disjoint.
    pub fn copy_fn(self) -> Option<CopyFn> {
        self.0.copy
    }
    /// The move entry point: `(dst, src, n)`, ranges valid, overlap allowed.
    pub fn move_fn(self) -> Option<CopyFn> {
        self.0.move_
    }
    /// The set entry point: `(dst, byte, n)`.
    pub fn set_fn(self) -> Option<SetFn> {
        self.0.set
    }
    /// The zero entry point: `(dst, n)`.
    pub fn zero_fn(self) -> Option<ZeroFn> {
        self.0.zero
    }
}

const fn entry(id: KernelId, summary: &'static str, requires: Features, ops: Ops) -> Kernel {
    Kernel {
        id,
        summary,
        requires,
        copy: ops.copy,
        move_: ops.move_,
        set: ops.set,
        zero: ops.zero,
    }
}

/// The ops of a kernel module `$m` with all four.
macro_rules! all_ops {
    ($m:path) => {{
        use $m as m;
        Ops {
            copy: Some(m::copy as CopyFn),
            move_: Some(m::move_ as CopyFn),
            set: Some(m::set as SetFn),
            zero: Some(m::zero as ZeroFn),
        }
    }};
}

const PORTABLE_KERNELS: [Kernel; 2] = [
    entry(
        KernelId::Naive,
        "one byte at a time; the reference",
        Features::NONE,
        all_ops!(arch::all::naive),
    ),
    entry(
        KernelId::Portable,
        "u64 words, aligned destination; any target",
        Features::NONE,
        all_ops!(arch::all::portable),
    ),
];

#[cfg(target_arch = "x86_64")]
static TABLE: [Kernel; 14] = {
    use arch::x86_64 as x;
    let [naive, portable] = PORTABLE_KERNELS;
    [
        naive,
        portable,
        entry(
            KernelId::Sse2,
            "16-byte vectors, temporal stores; x86-64 baseline",
            Features::SSE2,
            all_ops!(x::sse2),
        ),
        entry(
            KernelId::Avx2,
            "32-byte vectors, temporal stores; best when dst is or should be cached",
            Features::AVX2,
            all_ops!(x::avx2),
        ),
        entry(
            KernelId::Avx2Nt,
            "32-byte vectors, non-temporal stores + sfence; best when dst is cold and not reused",
            Features::AVX2,
            all_ops!(x::avx2_nt),
        ),
        entry(
            KernelId::Avx2Pf,
            "seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, temporal stores",
            Features::AVX2,
            copy_ops!(x::avx2_pf),
        ),
        entry(
            KernelId::Avx2PfNt,
            "seed 003 Fig. 1: prefetch an 8 KiB source block, copy it, non-temporal stores",
            Features::AVX2,
            copy_ops!(x::avx2_pf_nt),
        ),
        entry(
            KernelId::Avx512,
            "64-byte AVX-512 vectors, temporal stores; half the instructions of avx2 for cached data",
            Features::AVX512F.union(Features::AVX2),
            all_ops!(x::avx512),
        ),
        entry(
            KernelId::Avx512Nt,
            "64-byte AVX-512 vectors, one non-temporal store per line + sfence",
            Features::AVX512F.union(Features::AVX2),
            all_ops!(x::avx512_nt),
        ),
        entry(
            KernelId::RepMovsb,
            "rep movsb microcode (fast with ERMS/FSRM); vectors where dst is 1-31 bytes past src mod 4 KiB",
            Features::NONE,
            copy_ops!(x::rep_movsb),
        ),
        entry(
            KernelId::RepStosb,
            "rep stosb microcode (fast with ERMS)",
            Features::NONE,
            set_ops!(x::rep_stosb),
        ),
        entry(
            KernelId::Clzero,
            "AMD clzero: zero whole lines without reading them",
            Features::CLZERO,
            Ops {
                copy: None,
                move_: None,
                set: None,
                zero: Some(x::clzero::zero as ZeroFn),
            },
        ),
        entry(
            KernelId::Avx2Pw,
            "avx2 with the destination prefetched for ownership a step ahead; cold or L2 destinations",
            Features::AVX2.union(Features::PREFETCHW),
            copy_ops!(x::avx2_pw),
        ),
        entry(
            KernelId::Avx512Pw,
            "avx512 with the destination prefetched for ownership a step ahead; cold or L2 destinations",
            Features::AVX512F.union(Features::AVX2).union(Features::PREFETCHW),
            copy_ops!(x::avx512_pw),
        ),
    ]
};

#[cfg(not(target_arch = "x86_64"))]
static TABLE: [Kernel; 2] = PORTABLE_KERNELS;

/// `clzero` behind a set-shaped entry point, so that every zero kernel is called the
/// same way (the dispatcher passes byte 0).
///
/// # Safety
/// As [`arch::x86_64::clzero::zero`].
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn clzero_as_set(dst: *mut u8, _byte: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { arch::x86_64::clzero::zero(dst, n) }
}

/// The entry point of kernel `k` for `op`, type-erased: a [`CopyFn`] for copy and move,
/// a [`SetFn`] for set and for zero (called with byte 0). `None` if `k` lacks the op.
/// No feature check: the caller (the policy's compile step) runs only usable kernels.
pub fn entry_for(k: KernelId, op: Op) -> Option<*mut ()> {
    let e = k.kernel()?;
    match op {
        Op::Copy => e.copy.map(|f| f as *mut ()),
        Op::Move => e.move_.map(|f| f as *mut ()),
        Op::Set => e.set.map(|f| f as *mut ()),
        Op::Zero => match (e.set, e.zero) {
            (Some(f), Some(_)) => Some(f as *mut ()),
            #[cfg(target_arch = "x86_64")]
            (None, Some(_)) if k == KernelId::Clzero => Some(clzero_as_set as SetFn as *mut ()),
            _ => None,
        },
    }
}

/// Every kernel this target has, available or not, in table order.
pub fn table() -> &'static [Kernel] {
    &TABLE
}

/// Looks a kernel up by its stable name.
pub fn by_name(name: &str) -> Option<&'static Kernel> {
    table().iter().find(|k| k.name() == name)
}

/// The kernels this CPU can run, in table order.
pub fn available() -> impl Iterator<Item = Available> {
    table().iter().filter_map(Kernel::available)
}
