//! The methods the lab measures: every available kernel, `libc` (the C library's own
//! `memcpy`/`memmove`/`memset`, resolved with `dlopen("libc.so.6")` + `dlsym` so an
//! `LD_PRELOAD` shim cannot stand in for it) and `auto` (blockmem's entry points with
//! `Hint::Auto`: the size ladder plus the policy).

use std::ffi::{c_void, CStr};
use std::fmt;
use std::sync::OnceLock;

use blockmem::kernel::{self, CopyFn, Op, SetFn, ZeroFn};
use blockmem::Hint;

/// C `memcpy`/`memmove`.
pub type CCopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void;
/// C `memset`.
pub type CSetFn = unsafe extern "C" fn(*mut c_void, libc::c_int, usize) -> *mut c_void;

/// One callable entry point. The enum is matched inside the timed region; the branch is
/// perfectly predicted and costs well under a nanosecond.
#[derive(Clone, Copy)]
pub enum Entry {
    /// A Rust-ABI copy or move (kernels, `auto`).
    Copy(CopyFn),
    /// A Rust-ABI set.
    Set(SetFn),
    /// A Rust-ABI zero.
    Zero(ZeroFn),
    /// The C library's `memcpy` or `memmove`.
    CCopy(CCopyFn),
    /// The C library's `memset`.
    CSet(CSetFn),
}

impl Entry {
    /// Runs the operation: `src` is ignored by set/zero, `byte` by copy/move/zero.
    ///
    /// # Safety
    /// The pointer contract of the op (C's `memcpy`/`memmove`/`memset`).
    #[inline(always)]
    pub unsafe fn call(self, dst: *mut u8, src: *const u8, byte: u8, n: usize) {
        // SAFETY: forwarded contract.
        unsafe {
            match self {
                Entry::Copy(f) => {
                    f(dst, src, n);
                }
                Entry::Set(f) => {
                    f(dst, byte, n);
                }
                Entry::Zero(f) => {
                    f(dst, n);
                }
                Entry::CCopy(f) => {
                    f(dst.cast(), src.cast(), n);
                }
                Entry::CSet(f) => {
                    f(dst.cast(), byte as libc::c_int, n);
                }
            }
        }
    }
}

/// What a method is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A blockmem kernel, called directly.
    Kernel,
    /// The system C library.
    Libc,
    /// blockmem's own entry points (policy).
    Auto,
    /// A deliberately wrong method, for testing verification.
    Broken,
}

/// The name of [`Method::auto_alone`].
pub const AUTO_ALONE: &str = "auto-alone";

/// A named method with its entry point per op.
#[derive(Clone)]
pub struct Method {
    name: String,
    kind: Kind,
    /// Whether its long path uses non-temporal stores (for plots and summaries).
    pub streams: bool,
    entries: [Option<Entry>; 4],
    /// For blockmem's entry points: whether the contention input is on while it runs
    /// (`blockmem::dispatch::sense_contention`; the runner switches it between calls).
    pub senses_contention: Option<bool>,
}

impl fmt::Debug for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Method")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish()
    }
}

fn op_index(op: Op) -> usize {
    match op {
        Op::Copy => 0,
        Op::Move => 1,
        Op::Set => 2,
        Op::Zero => 3,
    }
}

// --- auto: blockmem's public raw entry points ------------------------------------

/// # Safety
/// As `memcpy`.
unsafe extern "C" fn auto_copy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::copy_raw(d, s, n, Hint::Auto) }
}
/// # Safety
/// As `memmove`.
unsafe extern "C" fn auto_move(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::move_raw(d, s, n, Hint::Auto) }
}
/// # Safety
/// As `memset`.
unsafe extern "C" fn auto_set(d: *mut u8, b: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::set_raw(d, b, n, Hint::Auto) }
}
/// # Safety
/// As `bzero`.
unsafe extern "C" fn auto_zero(d: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::zero_raw(d, n, Hint::Auto) }
}

// --- auto with a fixed hint (const generics give one plain fn per hint) ---------------

const fn hint_of(h: u8) -> Hint {
    match h {
        1 => Hint::Reuse,
        2 => Hint::NoReuse,
        _ => Hint::Auto,
    }
}
/// # Safety
/// As `memcpy`.
unsafe extern "C" fn hinted_copy<const H: u8>(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::copy_raw(d, s, n, hint_of(H)) }
}
/// # Safety
/// As `memmove`.
unsafe extern "C" fn hinted_move<const H: u8>(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::move_raw(d, s, n, hint_of(H)) }
}
/// # Safety
/// As `memset`.
unsafe extern "C" fn hinted_set<const H: u8>(d: *mut u8, b: u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::set_raw(d, b, n, hint_of(H)) }
}
/// # Safety
/// As `bzero`.
unsafe extern "C" fn hinted_zero<const H: u8>(d: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { blockmem::zero_raw(d, n, hint_of(H)) }
}

// --- libc: resolved from libc.so.6 itself -----------------------------------------

struct LibcFns {
    memcpy: CCopyFn,
    memmove: CCopyFn,
    memset: CSetFn,
    path: String,
}

static LIBC: OnceLock<Result<LibcFns, String>> = OnceLock::new();

fn dlerror_string() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl*
    // call on this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn resolve_libc() -> Result<LibcFns, String> {
    let name = c"libc.so.6";
    // SAFETY: a NUL-terminated library name; RTLD_NOLOAD first returns the C library
    // already mapped into this process (it is: std links it), else we load it.
    let mut h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        // SAFETY: as above.
        h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    }
    if h.is_null() {
        return Err(format!("dlopen(libc.so.6): {}", dlerror_string()));
    }
    let sym = |s: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: `h` is a live handle and `s` NUL-terminated. dlsym on a handle
        // searches that object (and its dependencies) only, so a preloaded shim's
        // definition does not shadow it; IFUNCs are resolved to the implementation
        // glibc selected for this CPU.
        let p = unsafe { libc::dlsym(h, s.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "dlsym({}): {}",
                s.to_string_lossy(),
                dlerror_string()
            ))
        } else {
            Ok(p)
        }
    };
    let (c, m, s) = (sym(c"memcpy")?, sym(c"memmove")?, sym(c"memset")?);
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `c` is an address inside a loaded object; `info` is a valid out-pointer.
    let path = if unsafe { libc::dladdr(c, &mut info) } != 0 && !info.dli_fname.is_null() {
        // SAFETY: dladdr filled a NUL-terminated path that lives as long as the object.
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned()
    } else {
        "libc.so.6".into()
    };
    // SAFETY: the symbols are the C library's memcpy/memmove/memset, whose C types are
    // exactly these function-pointer types.
    unsafe {
        Ok(LibcFns {
            memcpy: std::mem::transmute::<*mut c_void, CCopyFn>(c),
            memmove: std::mem::transmute::<*mut c_void, CCopyFn>(m),
            memset: std::mem::transmute::<*mut c_void, CSetFn>(s),
            path,
        })
    }
}

/// Where the `libc` method's functions come from (the object path), or why it is
/// unavailable.
pub fn libc_origin() -> Result<String, String> {
    match LIBC.get_or_init(resolve_libc) {
        Ok(f) => Ok(f.path.clone()),
        Err(e) => Err(e.clone()),
    }
}

// --- broken: for the verification test ----------------------------------------------

/// Copies all but the last byte.
///
/// # Safety
/// As `memcpy`.
unsafe extern "C" fn broken_copy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    if n > 1 {
        // SAFETY: forwarded contract, one byte shorter.
        unsafe { std::ptr::copy_nonoverlapping(s, d, n - 1) };
    }
    d
}

impl Method {
    /// The stable name (`avx2`, `libc`, `auto`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Its entry point for `op`, if it implements it.
    pub fn entry(&self, op: Op) -> Option<Entry> {
        self.entries[op_index(op)]
    }

    /// True if it implements `op`.
    pub fn supports(&self, op: Op) -> bool {
        self.entry(op).is_some()
    }

    /// A kernel from the table, if this CPU can run it.
    pub fn kernel(name: &str) -> Option<Method> {
        let a = kernel::by_name(name)?.available()?;
        Some(Method {
            name: a.name().into(),
            kind: Kind::Kernel,
            streams: a.kernel().id.streams(),
            senses_contention: None,
            entries: [
                a.copy_fn().map(Entry::Copy),
                a.move_fn().map(Entry::Copy),
                a.set_fn().map(Entry::Set),
                a.zero_fn().map(Entry::Zero),
            ],
        })
    }

    /// The system C library (zero is `memset(p, 0, n)`).
    pub fn libc() -> Result<Method, String> {
        let f = LIBC
            .get_or_init(resolve_libc)
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(Method {
            name: "libc".into(),
            kind: Kind::Libc,
            streams: false,
            senses_contention: None,
            entries: [
                Some(Entry::CCopy(f.memcpy)),
                Some(Entry::CCopy(f.memmove)),
                Some(Entry::CSet(f.memset)),
                Some(Entry::CSet(f.memset)),
            ],
        })
    }

    /// blockmem's entry points with `Hint::Auto`.
    pub fn auto() -> Method {
        Method {
            name: "auto".into(),
            kind: Kind::Auto,
            streams: false,
            senses_contention: Some(true),
            entries: [
                Some(Entry::Copy(auto_copy)),
                Some(Entry::Copy(auto_move)),
                Some(Entry::Set(auto_set)),
                Some(Entry::Zero(auto_zero)),
            ],
        }
    }

    /// [`Method::auto`] with the contention input off (`auto-alone`): every call reads
    /// the rows of a call alone, none counts the calls in flight. Beside `auto` it
    /// shows what the input costs alone and buys under load.
    pub fn auto_alone() -> Method {
        Method {
            name: AUTO_ALONE.into(),
            senses_contention: Some(false),
            ..Method::auto()
        }
    }

    /// The same method under another name: the `policy` experiment measures `libc`
    /// twice in every cell (`libc_again`), so the tables show how far two runs of the
    /// same code differ there.
    pub fn renamed(mut self, name: &str) -> Method {
        self.name = name.into();
        self
    }

    /// blockmem's entry points with a fixed `hint`, under the given method name (the
    /// `policy` experiment names the hint that matches each cell `auto_hinted`).
    pub fn auto_with_hint(hint: Hint, name: &str) -> Method {
        fn entries<const H: u8>() -> [Option<Entry>; 4] {
            [
                Some(Entry::Copy(hinted_copy::<H>)),
                Some(Entry::Copy(hinted_move::<H>)),
                Some(Entry::Set(hinted_set::<H>)),
                Some(Entry::Zero(hinted_zero::<H>)),
            ]
        }
        let entries = match hint {
            Hint::Auto => entries::<0>(),
            Hint::Reuse => entries::<1>(),
            Hint::NoReuse => entries::<2>(),
        };
        Method {
            name: name.into(),
            kind: Kind::Auto,
            streams: false,
            senses_contention: Some(true),
            entries,
        }
    }

    /// A copy that drops the last byte: verification must catch it. Not reachable from
    /// the command line.
    pub fn broken() -> Method {
        Method {
            name: "broken".into(),
            kind: Kind::Broken,
            streams: false,
            senses_contention: None,
            entries: [Some(Entry::Copy(broken_copy)), None, None, None],
        }
    }

    /// Every method this host has, in order: kernels (table order), `libc`, `auto`.
    pub fn all() -> Vec<Method> {
        let mut v: Vec<Method> = kernel::available()
            .filter_map(|a| Method::kernel(a.name()))
            .collect();
        if let Ok(l) = Method::libc() {
            v.push(l);
        }
        v.push(Method::auto());
        v
    }

    /// Resolves a name given on the command line.
    pub fn by_name(name: &str) -> Result<Method, String> {
        match name {
            "libc" => Method::libc(),
            "auto" => Ok(Method::auto()),
            AUTO_ALONE => Ok(Method::auto_alone()),
            _ => match kernel::by_name(name) {
                Some(k) if !k.is_available() => Err(format!(
                    "method '{name}' is a kernel this CPU cannot run (needs {})",
                    k.requires.names().collect::<Vec<_>>().join(",")
                )),
                Some(_) => {
                    Method::kernel(name).ok_or_else(|| format!("method '{name}' unavailable"))
                }
                None => Err(format!(
                    "unknown method '{name}'; known: {}, libc, auto, auto-alone",
                    kernel::table()
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_resolves_and_copies() {
        let m = Method::libc().expect("libc.so.6 resolves");
        let src: Vec<u8> = (0..200u8).collect();
        let mut dst = vec![0u8; 200];
        // SAFETY: both buffers are 200 bytes and disjoint.
        unsafe {
            m.entry(Op::Copy)
                .unwrap()
                .call(dst.as_mut_ptr(), src.as_ptr(), 0, 200)
        };
        assert_eq!(dst, src);
        // SAFETY: dst is 200 bytes.
        unsafe {
            m.entry(Op::Zero)
                .unwrap()
                .call(dst.as_mut_ptr(), std::ptr::null(), 0, 200)
        };
        assert!(dst.iter().all(|&b| b == 0));
        assert!(libc_origin().unwrap().contains("libc"));
    }

    #[test]
    fn all_has_libc_auto_and_naive() {
        let names: Vec<String> = Method::all().iter().map(|m| m.name().to_string()).collect();
        for n in ["naive", "libc", "auto"] {
            assert!(names.iter().any(|x| x == n), "{names:?}");
        }
    }

    #[test]
    fn unknown_method_is_a_clear_error() {
        let e = Method::by_name("nope").unwrap_err();
        assert!(
            e.contains("unknown method 'nope'") && e.contains("avx2"),
            "{e}"
        );
    }
}
