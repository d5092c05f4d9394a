//! The operations and the caller's hint: the vocabulary the kernel table, the profile
//! and the entries share. No dependency on the rest of the crate, so that the build
//! script (`build.rs`) compiles it too, to parse the built-in tables.

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

    /// The C ABI value of a hint (`BLOCKMEM_HINT_*`), as [`Hint::from_c`] reads it.
    #[inline(always)]
    pub const fn to_c(self) -> u32 {
        match self {
            Hint::Auto => 0,
            Hint::Reuse => 1,
            Hint::NoReuse => 2,
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
