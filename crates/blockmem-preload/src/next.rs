//! The definitions the shim hides: libc's `memcpy`, `memmove`, `memset` and `bzero`,
//! found with `dlsym(RTLD_NEXT, …)` for `BLOCKMEM_DISABLE=1`.
//!
//! Resolution happens once, in the constructor, and only when pass-through was asked
//! for. `dlsym` may itself call `memcpy` or `malloc` (which may call `memset`); those
//! calls land in this shim while [`crate::MODE`] is still zero, so they run on
//! blockmem's kernels and never come back here. The pointers are published before the
//! `MODE_DISABLE` bit that makes the copy path read them, and a pointer into the shim
//! itself (possible if it is loaded twice) is refused, so pass-through can never
//! recurse.

use core::ffi::{c_int, c_void, CStr};
use core::sync::atomic::{AtomicPtr, Ordering};

use crate::MODE_DISABLE;

/// `memcpy`/`memmove` signature.
pub(crate) type CopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void;
/// `memset` signature.
pub(crate) type SetFn = unsafe extern "C" fn(*mut c_void, c_int, usize) -> *mut c_void;
/// `bzero` signature.
pub(crate) type ZeroFn = unsafe extern "C" fn(*mut c_void, usize);

/// One function the shim can pass through to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Memcpy,
    Memmove,
    Memset,
    Bzero,
}

static MEMCPY: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static MEMMOVE: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static MEMSET: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static BZERO: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

impl Next {
    const ALL: [Next; 4] = [Next::Memcpy, Next::Memmove, Next::Memset, Next::Bzero];

    fn slot(self) -> &'static AtomicPtr<c_void> {
        match self {
            Next::Memcpy => &MEMCPY,
            Next::Memmove => &MEMMOVE,
            Next::Memset => &MEMSET,
            Next::Bzero => &BZERO,
        }
    }

    fn symbol(self) -> &'static CStr {
        match self {
            Next::Memcpy => c"memcpy",
            Next::Memmove => c"memmove",
            Next::Memset => c"memset",
            Next::Bzero => c"bzero",
        }
    }

    /// The resolved pointer, if pass-through is on in `mode` and it was resolved.
    fn get(self, mode: u8) -> *mut c_void {
        if mode & MODE_DISABLE == 0 {
            return core::ptr::null_mut();
        }
        self.slot().load(Ordering::Acquire)
    }

    /// libc's `memcpy`/`memmove` when passing through.
    pub(crate) fn copy_fn(self, mode: u8) -> Option<CopyFn> {
        let p = self.get(mode);
        // SAFETY: a non-null pointer in a `memcpy`/`memmove` slot came from `dlsym` for
        // that very name, whose C signature is `CopyFn`; only those two slots are read
        // through this method.
        (!p.is_null() && matches!(self, Next::Memcpy | Next::Memmove))
            .then(|| unsafe { core::mem::transmute::<*mut c_void, CopyFn>(p) })
    }

    /// libc's `memset` when passing through.
    pub(crate) fn set_fn(self, mode: u8) -> Option<SetFn> {
        let p = self.get(mode);
        // SAFETY: as `copy_fn`, for the `memset` slot and its signature.
        (!p.is_null() && self == Next::Memset)
            .then(|| unsafe { core::mem::transmute::<*mut c_void, SetFn>(p) })
    }

    /// libc's `bzero` when passing through.
    pub(crate) fn zero_fn(self, mode: u8) -> Option<ZeroFn> {
        let p = self.get(mode);
        // SAFETY: as `copy_fn`, for the `bzero` slot and its signature.
        (!p.is_null() && self == Next::Bzero)
            .then(|| unsafe { core::mem::transmute::<*mut c_void, ZeroFn>(p) })
    }
}

/// True if `p` lies inside this shared object (the shim loaded twice, or linked in a
/// way that makes `RTLD_NEXT` find it again). Compares the load bases `dladdr`
/// reports, rather than the addresses of the exported functions, which would have to
/// be loaded through the GOT entries of `memcpy` & co.
fn in_this_object(p: *mut c_void) -> bool {
    let base = |addr: *const c_void| {
        let mut info = core::mem::MaybeUninit::<libc::Dl_info>::uninit();
        // SAFETY: dladdr only reads `addr` as a number and fills `info` on success.
        match unsafe { libc::dladdr(addr, info.as_mut_ptr()) } {
            // SAFETY: a non-zero return means `info` was filled in.
            0 => core::ptr::null_mut(),
            _ => unsafe { info.assume_init() }.dli_fbase,
        }
    };
    let ours = base(core::ptr::addr_of!(crate::MODE).cast());
    !ours.is_null() && base(p) == ours
}

/// Resolves every pass-through target. Returns true if `memcpy`, `memmove` and `memset`
/// were all found (`bzero` is optional: `memset(p, 0, n)` stands in for it).
pub(crate) fn resolve() -> bool {
    let mut complete = true;
    for next in Next::ALL {
        // SAFETY: RTLD_NEXT with a NUL-terminated name is dlsym's documented use; it may
        // call memcpy/malloc, which are served by this shim's kernels (MODE is still 0).
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, next.symbol().as_ptr()) };
        if p.is_null() || in_this_object(p) {
            complete &= next == Next::Bzero;
            continue;
        }
        next.slot().store(p, Ordering::Release);
    }
    complete
}
