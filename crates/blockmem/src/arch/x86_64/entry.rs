//! C entry points written whole in assembly: the preload shim's `memcpy`, `memmove`
//! and `memset` and the C ABI's `blockmem_copy`, `blockmem_move`, `blockmem_set` and
//! their memcpy-shaped twins, each defined by its crate with
//! [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry).
//!
//! The assembly and the strategy it follows, a numbered list atop each file, live
//! beside this module: `entry_common.s` (the layout every entry keeps, its way on
//! above its bodies' sizes, the routed form's route), `entry_copy.s` and `entry_set.s`
//! (the size classes of each level's bodies and the three forms). Each entry is a naked
//! function that defines those files' assembler macros, invokes its form once with its
//! own name as the prefix of its labels, and purges them (`entry_common.s` says why).
//!
//! ## Choosing the bodies for the CPU without writing code
//!
//! No page of blockmem is ever writable and executable, and no code is written at run
//! time. Each entry comes in one of three forms (`bodies = ...`):
//! * `avx512` and `avx2`: that level's bodies alone. The C ABI library exports each
//!   function as an IFUNC ([`ifunc!`](crate::ifunc)) whose resolver, run by the dynamic
//!   linker once, picks the `avx512` form, the `avx2` form or the general Rust path for
//!   this CPU ([`resolve`]): no test on any call.
//! * `routed`: the preload shim's, whose `memcpy` cannot be an IFUNC (a preloaded
//!   library's IFUNC is resolved while other libraries are relocated, before the shim
//!   itself, and the dynamic linker prints "Relink ... for IFUNC symbol" into the
//!   program's output). Its first size compares read their bounds from three route
//!   words the constructor opens once ([`open_route`]) where the AVX-512 bodies may
//!   run: calls up to 128 bytes pay no compare for the route, larger ones one. With
//!   the route closed every call goes to a test of the level byte, then the AVX2
//!   bodies or `general`. Before the constructor has run the route is closed and the
//!   level 0: every call takes `general`, which works at any time.

use core::sync::atomic::{AtomicU8, Ordering};

use crate::cpu::Features;

/// The level of bodies a CPU runs: AVX-512BW, VL and BMI2 with ZMM state enabled.
pub const LEVEL_AVX512: u8 = 1;
/// The level of bodies a CPU runs: AVX2 with YMM state enabled.
pub const LEVEL_AVX2: u8 = 2;

/// The largest move the AVX-512 bodies finish themselves (every load before the first
/// store); larger moves of overlapping ranges go on to `above`.
pub const WIDE_MAX: usize = 512;

/// The largest move the AVX2 bodies finish themselves (every load before the first
/// store); larger moves of overlapping ranges go on to `general`.
pub const AVX2_WIDE_MAX: usize = 256;

/// The largest copy of disjoint ranges the AVX-512 bodies finish themselves: 2,112
/// bytes, where glibc's memmove switches to `rep movsb` on CPUs with fast short `rep
/// movsb` (FSRM), which is slower than a vector loop just above 2 KiB
/// (`docs/results/epyc-zen5-2vcpu/copy-2112`).
pub const COPY_WIDE_MAX: usize = 2112;

/// The largest set the AVX-512 bodies finish themselves.
pub const SET_WIDE_MAX: usize = 2048;

/// The route words of a `routed` entry before its route opens (`entry_common.s`,
/// `ROUTE_ABOVE_128`): every call goes on to the level test.
pub const ROUTE_CLOSED: [usize; 3] = [0, 0, usize::MAX];

/// A `routed` entry's route words: the bounds of its AVX-512 bodies' first classes.
#[allow(clippy::declare_interior_mutable_const)] // a template for the statics
pub const ROUTE_INIT: [core::sync::atomic::AtomicUsize; 3] = [
    core::sync::atomic::AtomicUsize::new(ROUTE_CLOSED[0]),
    core::sync::atomic::AtomicUsize::new(ROUTE_CLOSED[1]),
    core::sync::atomic::AtomicUsize::new(ROUTE_CLOSED[2]),
];

/// Opens a `routed` entry's route: its AVX-512 bodies run from the next call. The words
/// are stored in an order whose every intermediate state sends each size to bodies that
/// hold it (the first classes' bounds before the word that lets calls above 128 bytes
/// through), so a call racing the opening is correct either way.
pub fn open_route(route: &[core::sync::atomic::AtomicUsize; 3]) {
    use core::sync::atomic::Ordering::Release;
    route[0].store(64, Release);
    route[1].store(129, Release);
    route[2].store(0, Release);
}

/// Closes a `routed` entry's route: from the next call every size goes on to the level
/// test. The reverse of [`open_route`]'s order, so that every intermediate state again
/// sends each size to bodies that hold it.
pub fn close_route(route: &[core::sync::atomic::AtomicUsize; 3]) {
    use core::sync::atomic::Ordering::Release;
    route[2].store(ROUTE_CLOSED[2], Release);
    route[1].store(ROUTE_CLOSED[1], Release);
    route[0].store(ROUTE_CLOSED[0], Release);
}

// `entry_asm!`: the text of `entry_*.s` for `naked_asm!`, made by build.rs. Named
// without a path where the entries are defined (a macro defined by `include!` cannot be
// named by path in its own crate): in this crate by textual scope (`#[macro_use]` from
// here to the crate root), elsewhere through `use blockmem::entry_asm;`.
include!(concat!(env!("OUT_DIR"), "/entry_asm.rs"));

/// A naked C entry whose assembly is `LINE`, an invocation of a form of `entry_OP.s`
/// with the operands given; the files' macros are defined before and purged after.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_fn {
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        $op:ident, $line:expr, $($operands:tt)*
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                entry_asm!(define, common),
                entry_asm!(define, $op),
                $line,
                entry_asm!(purge, $op),
                entry_asm!(purge, common),
                $($operands)*
            )
        }
    };
}

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, src, n[, hint]) -> dst` for
/// copies and moves (see the module docs).
///
/// * `bodies = avx512, above = A`: the AVX-512 bodies; above their sizes a jump to `A`,
///   an `extern "C" fn(dst, src, n, hint: u32) -> dst` (`dispatch::wide::copy_above`
///   and friends).
/// * `bodies = avx2, general = G`: the AVX2 bodies; above their sizes a jump to `G`,
///   an `extern "C" fn` with the entry's own signature.
/// * `bodies = routed, route = R, flag = F, general = G, above = A`: both, chosen by
///   `R` (`[AtomicUsize; 3]`, [`ROUTE_INIT`], opened by [`open_route`]) and then `F` (an
///   `AtomicU8`: [`LEVEL_AVX2`] for the AVX2 bodies, anything else for `G`).
/// * `hint`: `"xor ecx, ecx"` for an entry without a hint argument (the hint is then
///   `Auto`), `""` for one whose fourth argument is the C ABI hint;
/// * `overlap`: `disjoint` where the caller promises the ranges share no byte (the C
///   ABI's copy), `possible` otherwise (memmove, and the shim's forgiving memcpy).
#[macro_export]
macro_rules! copy_entry {
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx512, above = $above:path, hint = $hint:literal, overlap = $overlap:ident
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            copy,
            concat!(
                "COPY_ENTRY_AVX512 ", stringify!($name), ", ", stringify!($overlap),
                ", {above}, ", $hint
            ),
            above = sym $above,
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx2, general = $general:path, overlap = $overlap:ident
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            copy,
            concat!(
                "COPY_ENTRY_AVX2 ", stringify!($name), ", ", stringify!($overlap),
                ", {general}"
            ),
            general = sym $general,
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = routed, route = $route:path, flag = $flag:path, general = $general:path,
        above = $above:path, hint = $hint:literal, overlap = $overlap:ident
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            copy,
            concat!(
                "COPY_ENTRY_ROUTED ", stringify!($name), ", ", stringify!($overlap),
                ", {route}, {flag}, {general}, {above}, ", $hint
            ),
            route = sym $route,
            flag = sym $flag,
            general = sym $general,
            above = sym $above,
        }
    };
}

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, c, n[, hint]) -> dst` for
/// sets; forms and arguments as for [`copy_entry!`](crate::copy_entry) (without
/// `overlap`), with `above: extern "C" fn(dst, c: c_int, n, hint: u32) -> dst`.
#[macro_export]
macro_rules! set_entry {
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx512, above = $above:path, hint = $hint:literal
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            set,
            concat!("SET_ENTRY_AVX512 ", stringify!($name), ", {above}, ", $hint),
            above = sym $above,
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx2, general = $general:path
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            set,
            concat!("SET_ENTRY_AVX2 ", stringify!($name), ", {general}"),
            general = sym $general,
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = routed, route = $route:path, flag = $flag:path, general = $general:path,
        above = $above:path, hint = $hint:literal
    ) => {
        $crate::entry_fn! {
            $(#[$meta])* $vis fn $name($($arg: $ty),*);
            set,
            concat!(
                "SET_ENTRY_ROUTED ", stringify!($name),
                ", {route}, {flag}, {general}, {above}, ", $hint
            ),
            route = sym $route,
            flag = sym $flag,
            general = sym $general,
            above = sym $above,
        }
    };
}

/// Defines `NAME` as an IFUNC: an exported symbol the dynamic linker (or, in a static
/// program, libc's start-up code) binds once to the `avx512` entry, the `avx2` entry or
/// `general`, as [`resolve`] chooses for this CPU. Every call then lands on the chosen
/// body directly. The three are functions of this module with the signature given.
#[macro_export]
macro_rules! ifunc {
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        avx512 = $a:ident, avx2 = $b:ident, general = $g:ident
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            // The symbol's code is its resolver (it is typed an IFUNC below): called by
            // the loader, never by a program.
            ::core::arch::naked_asm!("jmp {resolve}", resolve = sym $name::resolve)
        }

        #[doc(hidden)]
        mod $name {
            /// The resolver of the IFUNC of the same name.
            pub(super) extern "C" fn resolve() -> *const () {
                $crate::arch::x86_64::entry::resolve(
                    super::$a as *const (),
                    super::$b as *const (),
                    super::$g as *const (),
                )
            }
        }

        ::core::arch::global_asm!(concat!(".type ", stringify!($name), ", @gnu_indirect_function"));
    };
}

/// Which bodies an IFUNC binds to: the `avx512` entry, the `avx2` one, or `general`,
/// for [`load_level`]. Async-signal-safe, allocation-free; runs before libc has
/// initialised.
pub fn resolve(avx512: *const (), avx2: *const (), general: *const ()) -> *const () {
    match load_level() {
        LEVEL_AVX512 => avx512,
        LEVEL_AVX2 => avx2,
        _ => general,
    }
}

/// [`load_level`], once worked out (`u8::MAX`: not yet).
static LOAD_LEVEL: AtomicU8 = AtomicU8::new(u8::MAX);

/// The level of entry bodies this process runs: the CPU's ([`level_of`] its detected
/// features), less what `BLOCKMEM_MASK_FEATURES` masks off (ignored under AT_SECURE).
/// Reads no profile and needs no initialised libc: IFUNC resolvers call it while the
/// program is relocated, when `environ` may still be null; the environment is then
/// read from `/proc/self/environ`.
pub fn load_level() -> u8 {
    let l = LOAD_LEVEL.load(Ordering::Relaxed);
    if l != u8::MAX {
        return l;
    }
    let mut buf = core::mem::MaybeUninit::<[u8; MASK_VALUE_MAX]>::uninit();
    let p = buf.as_mut_ptr() as *mut u8;
    // SAFETY: `p` is valid for MASK_VALUE_MAX writes, and the first `len` bytes are
    // written before they are read.
    let mask =
        match unsafe { crate::autoload::env_at_load(b"BLOCKMEM_MASK_FEATURES", p, MASK_VALUE_MAX) }
        {
            Some(len) => mask_of(unsafe { core::slice::from_raw_parts(p, len) }),
            None => Features::NONE,
        };
    let l = level_of(crate::cpu::detected_features().without(mask.with_dependents()));
    LOAD_LEVEL.store(l, Ordering::Relaxed);
    l
}

/// Longest `BLOCKMEM_MASK_FEATURES` value [`load_level`] reads.
const MASK_VALUE_MAX: usize = 256;

/// The features named in a comma-separated list (unknown names ignored).
pub fn mask_of(list: &[u8]) -> Features {
    let mut mask = Features::NONE;
    for name in list.split(|&b| b == b',') {
        let name = core::str::from_utf8(name).unwrap_or("").trim();
        if let Some(f) = Features::from_name(name) {
            mask = mask.union(f);
        }
    }
    mask
}

/// The level of bodies a CPU with features `f` runs: [`LEVEL_AVX512`], [`LEVEL_AVX2`]
/// or 0 (neither: the general path).
pub const fn level_of(f: Features) -> u8 {
    let wide = Features::AVX512BW.union(Features::BMI2);
    if f.contains(wide) {
        LEVEL_AVX512
    } else if f.contains(Features::AVX2) {
        LEVEL_AVX2
    } else {
        0
    }
}

/// Which bodies an entry's first instructions show it runs, for tests that read an
/// exported function's first bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bodies {
    /// An `avx512` entry.
    Avx512,
    /// An `avx2` entry.
    Avx2,
    /// A `routed` entry; the route word its first compare reads is at the address
    /// [`bodies_of`] returns (a size bound: 0 while the route is closed).
    Routed,
}

/// Decodes an entry's first bytes: which form it is and, for a `routed` one, the
/// address of its route word (`at` is the entry's address). `None` for other code
/// (the general path, or a function that is no entry).
pub fn bodies_of(first: [u8; 16], at: usize) -> Option<(Bodies, usize)> {
    // mov rax, rdi
    if first[..3] != [0x48, 0x89, 0xf8] {
        return None;
    }
    match first[3..] {
        // cmp rdx, qword ptr [rip + disp32]
        [0x48, 0x3b, 0x15, d0, d1, d2, d3, ..] => {
            let disp = i32::from_le_bytes([d0, d1, d2, d3]) as isize;
            Some((Bodies::Routed, (at + 10).wrapping_add_signed(disp)))
        }
        // cmp rdx, 64 (copies) / cmp rdx, 128 (sets)
        [0x48, 0x83, 0xfa, 0x40, ..] | [0x48, 0x81, 0xfa, 0x80, 0, 0, 0, ..] => {
            Some((Bodies::Avx512, 0))
        }
        // cmp rdx, 32 / vmovd xmm0, esi
        [0x48, 0x83, 0xfa, 0x20, ..] | [0xc5, 0xf9, 0x6e, 0xc6, ..] => Some((Bodies::Avx2, 0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};
    use std::{vec, vec::Vec};

    /// A routed copy entry of its own, with a `general` and an `above` that count their
    /// calls and copy byte by byte, to set its route words to any state.
    static ROUTE: [AtomicUsize; 3] = ROUTE_INIT;
    static LEVEL: AtomicU8 = AtomicU8::new(0);
    static PASSED_ON: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn bytewise(d: *mut u8, s: *const u8, n: usize, _h: u32) -> *mut u8 {
        PASSED_ON.fetch_add(1, Relaxed);
        // SAFETY: the test's buffers hold `n` bytes at both.
        unsafe { core::ptr::copy(s, d, n) };
        d
    }

    crate::copy_entry! {
        fn routed_copy(dst: *mut u8, src: *const u8, n: usize, hint: u32);
        bodies = routed, route = ROUTE, flag = LEVEL, general = bytewise, above = bytewise,
        hint = "", overlap = possible
    }

    /// Every state the route words pass through while [`open_route`] or [`close_route`]
    /// runs sends every size to bodies that hold it: each copy of 0-700 bytes (moves
    /// included) is right and writes nothing outside its destination, and a closed
    /// route passes every call on to the level test.
    #[test]
    fn every_state_of_an_opening_or_closing_route_copies_right() {
        if load_level() != LEVEL_AVX512 {
            return; // the intermediate states run AVX-512 bodies
        }
        let open = [64, 129, 0];
        let mut states = Vec::new();
        for k in 0..=3 {
            // `open_route` stores words 0, 1, 2 in turn; `close_route` 2, 1, 0.
            let opening: [usize; 3] =
                core::array::from_fn(|i| if i < k { open[i] } else { ROUTE_CLOSED[i] });
            let closing: [usize; 3] =
                core::array::from_fn(|i| if i + k < 3 { open[i] } else { ROUTE_CLOSED[i] });
            states.push(opening);
            states.push(closing);
        }
        let src: Vec<u8> = (0..2048u32).map(|i| (i * 7 + 3) as u8).collect();
        for state in states {
            for (w, v) in ROUTE.iter().zip(state) {
                w.store(v, Relaxed);
            }
            for level in [0, LEVEL_AVX2] {
                LEVEL.store(level, Relaxed);
                PASSED_ON.store(0, Relaxed);
                for n in 0..=700 {
                    let mut dst = vec![0xeeu8; n + 128];
                    // SAFETY: `src` holds 2048 bytes, `dst` n + 128.
                    let r =
                        unsafe { routed_copy(dst.as_mut_ptr().add(64), src.as_ptr().add(5), n, 0) };
                    assert_eq!(r.cast::<u8>(), dst[64..].as_mut_ptr(), "{state:?} {n}");
                    assert_eq!(
                        &dst[64..64 + n],
                        &src[5..5 + n],
                        "{state:?} level {level} n {n}"
                    );
                    assert!(
                        dst[..64].iter().chain(&dst[64 + n..]).all(|&b| b == 0xee),
                        "{state:?} {n}"
                    );
                    // A move within one buffer, 3 bytes on.
                    let mut buf = src[..n + 8].to_vec();
                    let mut want = buf.clone();
                    want.copy_within(0..n, 3);
                    // SAFETY: both ranges lie inside `buf`.
                    unsafe { routed_copy(buf.as_mut_ptr().add(3), buf.as_ptr(), n, 0) };
                    assert_eq!(buf, want, "{state:?} level {level} move {n}");
                }
                if state == ROUTE_CLOSED && level == 0 {
                    assert_eq!(
                        PASSED_ON.load(Relaxed),
                        2 * 701,
                        "a closed route passes every call on"
                    );
                }
            }
        }
        close_route(&ROUTE);
        assert_eq!(ROUTE.each_ref().map(|w| w.load(Relaxed)), ROUTE_CLOSED);
    }

    #[test]
    fn levels_follow_the_features() {
        let wide = Features::AVX512BW
            .union(Features::BMI2)
            .union(Features::AVX2);
        assert_eq!(level_of(wide), LEVEL_AVX512);
        assert_eq!(level_of(wide.without(Features::BMI2)), LEVEL_AVX2);
        assert_eq!(level_of(Features::AVX2), LEVEL_AVX2);
        assert_eq!(level_of(Features::NONE), 0);
    }

    #[test]
    fn masks_parse_names_and_skip_unknown_ones() {
        assert_eq!(
            mask_of(b"avx512f, avx2"),
            Features::AVX512F.union(Features::AVX2)
        );
        assert_eq!(mask_of(b"nonsense,,"), Features::NONE);
        assert_eq!(mask_of(b"\xff"), Features::NONE);
    }

    #[test]
    fn entry_forms_decode_from_their_first_bytes() {
        let mut routed = [0u8; 16];
        routed[..10].copy_from_slice(&[0x48, 0x89, 0xf8, 0x48, 0x3b, 0x15, 0xf0, 0xff, 0xff, 0xff]);
        assert_eq!(
            bodies_of(routed, 0x1000),
            Some((Bodies::Routed, 0x1000 + 10 - 16))
        );
        let mut copy = [0u8; 16];
        copy[..7].copy_from_slice(&[0x48, 0x89, 0xf8, 0x48, 0x83, 0xfa, 0x40]);
        assert_eq!(bodies_of(copy, 0), Some((Bodies::Avx512, 0)));
        copy[6] = 0x20;
        assert_eq!(bodies_of(copy, 0), Some((Bodies::Avx2, 0)));
        assert_eq!(bodies_of([0x55; 16], 0), None);
    }
}
