//! The kernel table: every kernel with its stable name, the operations it implements
//! and the CPU features it needs.
//!
//! Every kernel is declared once, one entry in `kernel/list.rs`: id, stable name,
//! module, ops, CPU features, narrower stand-in, store class and summary. From it come
//! [`KernelId`] (with [`KernelId::ALL`], [`KernelId::name`], [`KernelId::narrower`],
//! [`KernelId::store_class`]), the kernel [`table`] and [`entry_for`]; the build script
//! checks the built-in tables against the same entry, and every list of kernels in the
//! workspace (the lab's, `blockmem info`'s, the kernel tables of `README.md` and the
//! crate docs, which `tests/docs.rs` checks) iterates [`KernelId::ALL`] or the table.
//!
//! Adding a kernel therefore takes:
//! 1. its module under `arch/` (`arch/x86_64/NAME.rs` with `copy` and `move_`, or `set`
//!    and `zero`, or all four, in the shape of [`CopyFn`], [`SetFn`], [`ZeroFn`]) and its
//!    `pub mod NAME;` line in that directory's `mod.rs`;
//! 2. its entry at the end of `kernel/list.rs`;
//! 3. `BLOCKMEM_BLESS=1 cargo test -p blockmem --test docs`, which writes its line into
//!    the kernel tables of `README.md` and `src/lib.rs`.
//!
//! A kernel is only ever called through [`Available`], which can only be built by
//! [`Kernel::available`] after the feature check, so the `target_feature` obligation of
//! the kernel functions holds by construction.

mod op;

pub use op::{Hint, Op};

use crate::arch;
use crate::cpu::{features, Features};

/// A copy or move kernel: `(dst, src, n)`, returning `dst`.
///
/// Every kernel returns `dst`, so that a C entry handing a call to one (`dispatch`'s
/// `copy_above_c` and `set_above_c`) ends in a jump to it and has nothing left to do
/// after it: a call would restore saved registers after the kernel, loads that wait for
/// a `rep stosb` or `rep movsb` to finish (`docs/results/epyc-zen5-2vcpu/copy-2112`).
pub type CopyFn = unsafe extern "C" fn(*mut u8, *const u8, usize) -> *mut u8;
/// A set kernel: `(dst, byte, n)`, returning `dst`.
pub type SetFn = unsafe extern "C" fn(*mut u8, u8, usize) -> *mut u8;
/// A zero kernel: `(dst, n)`, returning `dst`.
pub type ZeroFn = unsafe extern "C" fn(*mut u8, usize) -> *mut u8;

/// A kernel's store class: where its long path leaves the destination.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StoreClass {
    /// Regular stores: the destination ends up in cache.
    Temporal,
    /// Non-temporal stores (or `clzero`): the destination goes to memory, past the cache.
    Streaming,
}

/// The ops of a kernel module `$m`, by the op set the declaration names (`all`, `copy`,
/// `set`, `zero`). Zero-only modules get a set-shaped zero entry (the byte ignored), so
/// that the dispatcher calls every zero kernel the same way.
macro_rules! ops {
    (all, $m:path) => {{
        use $m as m;
        Ops {
            copy: Some(m::copy as CopyFn),
            move_: Some(m::move_ as CopyFn),
            set: Some(m::set as SetFn),
            zero: Some(m::zero as ZeroFn),
            zero_as_set: Some(m::set as SetFn),
        }
    }};
    (copy, $m:path) => {{
        use $m as m;
        Ops {
            copy: Some(m::copy as CopyFn),
            move_: Some(m::move_ as CopyFn),
            set: None,
            zero: None,
            zero_as_set: None,
        }
    }};
    (set, $m:path) => {{
        use $m as m;
        Ops {
            copy: None,
            move_: None,
            set: Some(m::set as SetFn),
            zero: Some(m::zero as ZeroFn),
            zero_as_set: Some(m::set as SetFn),
        }
    }};
    (zero, $m:path) => {{
        use $m as m;
        /// The module's `zero` behind a set-shaped entry point (the byte is ignored).
        ///
        /// # Safety
        /// As the module's `zero`.
        unsafe extern "C" fn zero_as_set(dst: *mut u8, _byte: u8, n: usize) -> *mut u8 {
            // SAFETY: forwarded contract.
            unsafe { m::zero(dst, n) }
        }
        Ops {
            copy: None,
            move_: None,
            set: None,
            zero: Some(m::zero as ZeroFn),
            zero_as_set: Some(zero_as_set as SetFn),
        }
    }};
}

/// The stand-in of a declaration line: `None`, or a kernel id.
macro_rules! narrower {
    (None) => {
        None
    };
    ($k:ident) => {
        Some(KernelId::$k)
    };
}

/// Turns the declaration (`kernel/list.rs`) into [`KernelId`], its names, stand-ins and
/// store classes, and the kernel table.
macro_rules! kernels {
    ($(
        $(#[$cfg:meta])*
        $id:ident $name:literal $($m:ident)::+ : $ops:ident, [$($f:ident),*], $narrower:ident,
        $stores:ident, $summary:literal;
    )*) => {
        /// Identifies a kernel; the order is the table order.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum KernelId {
            $(#[doc = $summary] $id,)*
        }

        impl KernelId {
            /// Every id, in table order.
            pub const ALL: [KernelId; [$(KernelId::$id),*].len()] = [$(KernelId::$id),*];
            /// The stable name used in JSON, on the command line and in `BLOCKMEM_FORCE`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(KernelId::$id => $name,)*
                }
            }
            /// The kernel that stands in for this one where the CPU cannot run it (or it
            /// lacks the op): the next narrower kernel of the same store class, ending at
            /// `portable`. `None` for `portable` and `naive`, which every CPU runs.
            pub const fn narrower(self) -> Option<KernelId> {
                match self {
                    $(KernelId::$id => narrower!($narrower),)*
                }
            }
            /// Where the kernel's long path leaves the destination.
            pub const fn store_class(self) -> StoreClass {
                match self {
                    $(KernelId::$id => store_class!($stores),)*
                }
            }
        }

        /// Every kernel this target has, in table order.
        static TABLE: &[Kernel] = &[$(
            $(#[$cfg])*
            Kernel::new(
                KernelId::$id,
                $summary,
                Features::NONE$(.union(Features::$f))*,
                ops!($ops, arch::$($m)::+),
            ),
        )*];
    };
}

/// The store class of a declaration line.
macro_rules! store_class {
    (temporal) => {
        StoreClass::Temporal
    };
    (streaming) => {
        StoreClass::Streaming
    };
}

include!("kernel/list.rs");

impl KernelId {
    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<KernelId> {
        KernelId::ALL.into_iter().find(|k| k.name() == s)
    }
    /// The table entry, if this target has the kernel at all.
    pub fn kernel(self) -> Option<&'static Kernel> {
        table().iter().find(|k| k.id == self)
    }
    /// True if non-temporal stores (or `clzero`) are part of this kernel's long path.
    pub const fn streams(self) -> bool {
        matches!(self.store_class(), StoreClass::Streaming)
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
    zero_as_set: Option<SetFn>,
}

/// The entry points of one kernel module, by op.
struct Ops {
    copy: Option<CopyFn>,
    move_: Option<CopyFn>,
    set: Option<SetFn>,
    zero: Option<ZeroFn>,
    /// The zero entry in a set's shape, for the dispatcher (see [`entry_for`]).
    zero_as_set: Option<SetFn>,
}

impl Kernel {
    const fn new(id: KernelId, summary: &'static str, requires: Features, ops: Ops) -> Kernel {
        Kernel {
            id,
            summary,
            requires,
            copy: ops.copy,
            move_: ops.move_,
            set: ops.set,
            zero: ops.zero,
            zero_as_set: ops.zero_as_set,
        }
    }
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

/// The entry point of kernel `k` for `op`, type-erased: a [`CopyFn`] for copy and move,
/// a [`SetFn`] for set and for zero (called with byte 0). `None` if `k` lacks the op.
/// No feature check: the caller (the policy's compile step) runs only usable kernels.
pub fn entry_for(k: KernelId, op: Op) -> Option<*mut ()> {
    let e = k.kernel()?;
    match op {
        Op::Copy => e.copy.map(|f| f as *mut ()),
        Op::Move => e.move_.map(|f| f as *mut ()),
        Op::Set => e.set.map(|f| f as *mut ()),
        Op::Zero => e.zero_as_set.map(|f| f as *mut ()),
    }
}

/// Every kernel this target has, available or not, in table order.
pub fn table() -> &'static [Kernel] {
    TABLE
}

/// Looks a kernel up by its stable name.
pub fn by_name(name: &str) -> Option<&'static Kernel> {
    table().iter().find(|k| k.name() == name)
}

/// The kernels this CPU can run, in table order.
pub fn available() -> impl Iterator<Item = Available> {
    table().iter().filter_map(Kernel::available)
}
