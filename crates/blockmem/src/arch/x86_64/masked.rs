//! Small and medium copies and sets with AVX-512 registers, inline in the caller.
//!
//! 1. Up to 64 bytes, two accesses from both ends, each inside the bytes: scalar pairs
//!    below 16 bytes (8+8, 4+4, 2+2, one byte: glibc's ladder), 16- or 32-byte vectors
//!    above. No access leaves `[p, p + n)`, so a call touches only the lines its bytes
//!    lie in: a masked window from `p` would still fetch (load) or take (store) the next
//!    line, which another core may be writing, even with its bytes masked out
//!    (`docs/results/xeon-clx-2vcpu/neighbour`).
//! 2. The C entries (`entry`) keep masked accesses where sizes vary call to call: a
//!    set of 1-63 bytes is one masked 64-byte store placed in the lines the bytes lie
//!    in, a copy of 1-15 bytes one masked 16-byte access from the first byte (which may
//!    reach the next line) while the process has one thread, else windows placed in the
//!    bytes' lines. The last line of a set above 512 bytes is one masked store
//!    of that line's bytes ([`set_le2k`]).
//! 3. Above 64 bytes, unmasked 64-byte blocks from both ends, every load first.
//! 4. Every path up to 512 bytes is inline assembly on zmm16-23/ymm16-17/xmm16-17 and k1
//!    only (the 16- and 32-byte EVEX forms need AVX-512VL, part of the `AVX512BW`
//!    feature). EVEX-only registers leave the upper halves of ymm0-15 clean, so the
//!    paths return without `vzeroupper`; and with no `#[target_feature]` they inline
//!    into any function, so the C entry points hold them in their own body after one
//!    test of a flag. The compiler never allocates those registers in code built without
//!    AVX-512, so clobbering them is sound there; the caller's contract is that the CPU
//!    has the features.
//!
//! Used by the dispatcher's inline path when the CPU has AVX-512BW and BMI2; not a
//! kernel of its own (every kernel keeps the portable ladder).

use core::arch::x86_64::{
    __m512i, _mm512_loadu_epi8, _mm512_mask_storeu_epi8, _mm512_set1_epi8, _mm512_storeu_epi8,
};

/// Largest size [`copy_le64`] and [`set_le64`] handle.
pub const MAX: usize = 64;

/// Largest size [`copy_le512`] handles.
pub const WIDE_MAX: usize = 512;

/// Largest size [`copy_le2k`] handles: 2,112 bytes, where glibc's memmove switches
/// to `rep movsb` on CPUs with fast short `rep movsb` (FSRM), which is slower than a
/// vector loop just above 2 KiB (`docs/results/epyc-zen5-2vcpu/copy-2112`).
pub const COPY_WIDE_MAX: usize = 2112;

/// Largest size [`set_le2k`] handles.
pub const SET_WIDE_MAX: usize = 2048;

/// Copies `[src, src + n)` to `dst` as two `$w`-byte accesses in `$reg`16/17 from both
/// ends, both loads first: `$w <= n <= 2 * $w`. An `unsafe` expression (the caller
/// states why the accesses are valid).
macro_rules! head_tail {
    ($reg:literal, $ptr:literal, $w:literal, $dst:expr, $src:expr, $n:expr) => {
        core::arch::asm!(
            concat!("vmovdqu64 ", $reg, "16, ", $ptr, " ptr [{s}]"),
            concat!("vmovdqu64 ", $reg, "17, ", $ptr, " ptr [{s} + {n} - ", $w, "]"),
            concat!("vmovdqu64 ", $ptr, " ptr [{d}], ", $reg, "16"),
            concat!("vmovdqu64 ", $ptr, " ptr [{d} + {n} - ", $w, "], ", $reg, "17"),
            s = in(reg) $src,
            d = in(reg) $dst,
            n = in(reg) $n,
            out("zmm16") _,
            out("zmm17") _,
            options(nostack, preserves_flags)
        )
    };
}

/// Copies (or moves: every load completes before the first store) `n <= 64` bytes
/// with two accesses from both ends, each inside the bytes, so that only the cache
/// lines the bytes lie in are touched (none when `n == 0`).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= 64`; the CPU supports
/// AVX-512F, AVX-512BW, AVX-512VL and BMI2 with OS-enabled ZMM state.
#[inline(always)]
pub unsafe fn copy_le64(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= MAX);
    if n < 16 {
        // 0..=15: the portable ladder's scalar pairs (8+8, 4+4, 2+2, one byte).
        // SAFETY: n < 16 <= SMALL_MAX; forwarded contract.
        unsafe { crate::arch::all::small::copy_le32(dst, src, n) }
    } else if n < 32 {
        // 16..=31: [0, 16) and [n-16, n), both loads before either store (a move's
        // ranges may overlap).
        // SAFETY: both accesses lie in [0, n), valid per the contract.
        unsafe { head_tail!("xmm", "xmmword", 16, dst, src, n) }
    } else {
        // 32..=64: [0, 32) and [n-32, n), as the 16..=31 pair.
        // SAFETY: as above.
        unsafe { head_tail!("ymm", "ymmword", 32, dst, src, n) }
    }
}

/// Sets `n <= 64` bytes to `byte` with stores inside the bytes: scalar pairs below 16
/// bytes (as [`copy_le64`]), else two 16- or 32-byte stores from both ends of a
/// broadcast in xmm16/ymm16 (EVEX-only: no `vzeroupper`). Nothing is stored when
/// `n == 0`.
///
/// # Safety
/// `dst` valid for `n` writes, `n <= 64`; CPU features as for [`copy_le64`].
#[inline(always)]
pub unsafe fn set_le64(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= MAX);
    // SAFETY: every store lies in [0, n), valid per the contract.
    unsafe {
        if n < 16 {
            crate::arch::all::small::set_le32(dst, byte, n)
        } else if n < 32 {
            core::arch::asm!(
                "vpbroadcastb xmm16, {b:e}",
                "vmovdqu64 xmmword ptr [{d}], xmm16",
                "vmovdqu64 xmmword ptr [{d} + {n} - 16], xmm16",
                b = in(reg) byte as u32, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _,
                options(nostack, preserves_flags)
            );
        } else {
            core::arch::asm!(
                "vpbroadcastb ymm16, {b:e}",
                "vmovdqu64 ymmword ptr [{d}], ymm16",
                "vmovdqu64 ymmword ptr [{d} + {n} - 32], ymm16",
                b = in(reg) byte as u32, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _,
                options(nostack, preserves_flags)
            );
        }
    }
}

#[inline(always)]
unsafe fn ld(p: *const u8) -> __m512i {
    // SAFETY: the caller guarantees 64 readable bytes at `p`.
    unsafe { _mm512_loadu_epi8(p as *const i8) }
}

#[inline(always)]
unsafe fn st(p: *mut u8, v: __m512i) {
    // SAFETY: the caller guarantees 64 writable bytes at `p`.
    unsafe { _mm512_storeu_epi8(p as *mut i8, v) }
}

/// Copies (or moves) `n <= 512` bytes: up to 64 bytes as [`copy_le64`], else two,
/// four or eight 64-byte accesses from both ends (overlapping in the middle). Every
/// load is issued before the first store, so overlapping ranges are handled like a
/// move. Sizes split into three classes (65-128, 129-256, 257-512): one shape for all
/// would store redundant, line-splitting blocks at the small end.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `n <= 512`; CPU features as for
/// [`copy_le64`].
#[inline(always)]
pub unsafe fn copy_le512(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= WIDE_MAX);
    // SAFETY: every access lies in [0, n) of its range (n > 64 for the unmasked ones:
    // offsets 0..=n-64); all loads precede all stores; only zmm16-23 are written.
    unsafe {
        if n <= 64 {
            return copy_le64(dst, src, n);
        }
        copy_65_512(dst, src, n)
    }
}

/// [`copy_le512`] for `64 < n <= 512`.
///
/// # Safety
/// As [`copy_le512`], and `n > 64`.
#[inline(always)]
pub unsafe fn copy_65_512(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n > MAX && n <= WIDE_MAX);
    // SAFETY: as in `copy_le512`.
    unsafe {
        if n <= 128 {
            core::arch::asm!(
                "vmovdqu64 zmm16, zmmword ptr [{s}]",
                "vmovdqu64 zmm17, zmmword ptr [{s} + {n} - 64]",
                "vmovdqu64 zmmword ptr [{d}], zmm16",
                "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm17",
                s = in(reg) src, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _, out("zmm17") _,
                options(nostack, preserves_flags)
            );
            return;
        }
        if n <= 256 {
            core::arch::asm!(
                "vmovdqu64 zmm16, zmmword ptr [{s}]",
                "vmovdqu64 zmm17, zmmword ptr [{s} + 64]",
                "vmovdqu64 zmm18, zmmword ptr [{s} + {n} - 128]",
                "vmovdqu64 zmm19, zmmword ptr [{s} + {n} - 64]",
                "vmovdqu64 zmmword ptr [{d}], zmm16",
                "vmovdqu64 zmmword ptr [{d} + 64], zmm17",
                "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm18",
                "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm19",
                s = in(reg) src, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
                options(nostack, preserves_flags)
            );
            return;
        }
        // 257..=512: the first four and the last four blocks.
        core::arch::asm!(
            "vmovdqu64 zmm16, zmmword ptr [{s}]",
            "vmovdqu64 zmm17, zmmword ptr [{s} + 64]",
            "vmovdqu64 zmm18, zmmword ptr [{s} + 128]",
            "vmovdqu64 zmm19, zmmword ptr [{s} + 192]",
            "vmovdqu64 zmm20, zmmword ptr [{s} + {n} - 256]",
            "vmovdqu64 zmm21, zmmword ptr [{s} + {n} - 192]",
            "vmovdqu64 zmm22, zmmword ptr [{s} + {n} - 128]",
            "vmovdqu64 zmm23, zmmword ptr [{s} + {n} - 64]",
            "vmovdqu64 zmmword ptr [{d}], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 64], zmm17",
            "vmovdqu64 zmmword ptr [{d} + 128], zmm18",
            "vmovdqu64 zmmword ptr [{d} + 192], zmm19",
            "vmovdqu64 zmmword ptr [{d} + {n} - 256], zmm20",
            "vmovdqu64 zmmword ptr [{d} + {n} - 192], zmm21",
            "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm22",
            "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm23",
            s = in(reg) src, d = in(reg) dst, n = in(reg) n,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            options(nostack, preserves_flags)
        );
    }
}

/// Sets `n <= 512` bytes to `byte`: one masked store up to 64 bytes, else two, four or
/// eight 64-byte stores from both ends, from zmm16 (no `vzeroupper` on return).
/// One shape for every size (no size branch) would repeat stores at 65-128 bytes,
/// where store throughput bounds a loop.
///
/// # Safety
/// `dst` valid for `n` writes, `n <= 512`; CPU features as for [`copy_le64`].
#[inline(always)]
pub unsafe fn set_le512(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= WIDE_MAX);
    // SAFETY: every store lies in [0, n) (n > 64 for the unmasked ones).
    unsafe {
        if n <= 64 {
            return set_le64(dst, byte, n);
        }
        set_65_512(dst, byte, n)
    }
}

/// [`set_le512`] for `64 < n <= 512`.
///
/// # Safety
/// As [`set_le512`], and `n > 64`.
#[inline(always)]
pub unsafe fn set_65_512(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n > MAX && n <= WIDE_MAX);
    // SAFETY: every store lies in [0, n), n > 64.
    unsafe {
        if n <= 128 {
            core::arch::asm!(
                "vpbroadcastb zmm16, {b:e}",
                "vmovdqu64 zmmword ptr [{d}], zmm16",
                "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm16",
                b = in(reg) byte as u32, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _,
                options(nostack, preserves_flags)
            );
            return;
        }
        if n <= 256 {
            core::arch::asm!(
                "vpbroadcastb zmm16, {b:e}",
                "vmovdqu64 zmmword ptr [{d}], zmm16",
                "vmovdqu64 zmmword ptr [{d} + 64], zmm16",
                "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm16",
                "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm16",
                b = in(reg) byte as u32, d = in(reg) dst, n = in(reg) n,
                out("zmm16") _,
                options(nostack, preserves_flags)
            );
            return;
        }
        core::arch::asm!(
            "vpbroadcastb zmm16, {b:e}",
            "vmovdqu64 zmmword ptr [{d}], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 64], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 128], zmm16",
            "vmovdqu64 zmmword ptr [{d} + 192], zmm16",
            "vmovdqu64 zmmword ptr [{d} + {n} - 256], zmm16",
            "vmovdqu64 zmmword ptr [{d} + {n} - 192], zmm16",
            "vmovdqu64 zmmword ptr [{d} + {n} - 128], zmm16",
            "vmovdqu64 zmmword ptr [{d} + {n} - 64], zmm16",
            b = in(reg) byte as u32, d = in(reg) dst, n = in(reg) n,
            out("zmm16") _,
            options(nostack, preserves_flags)
        );
    }
}

/// Copies `512 < n <= 2112` bytes between disjoint ranges: the first 64 and the last
/// 256 bytes are loaded first, then 256-byte blocks go from the first 64-byte
/// boundary of the destination to aligned stores (a store that splits two lines costs
/// a second cycle of the store port), and the saved ends are stored last. glibc's
/// `__memmove_avx512_unaligned_erms` runs the same shape (its 4×VEC loop) from 512
/// bytes to its `rep movsb` threshold; an indirect call into a kernel costs more at
/// these sizes (`docs/results/xeon-avx512-2vcpu/doors`).
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, `512 < n <= 2112`, the ranges do
/// not overlap; CPU features as for [`copy_le64`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
#[inline]
pub unsafe fn copy_le2k(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n > WIDE_MAX && n <= COPY_WIDE_MAX);
    // SAFETY: n > 512, so every offset below lies in [0, n - 64]; the loop's blocks
    // start at or after dst + 1 and before dst + n - 256, so they end before dst + n.
    // The ranges are disjoint, so loads and stores may interleave.
    unsafe {
        let head = ld(src);
        let tail = dst.add(n - 256);
        let (w, x, y, z) = (
            ld(src.add(n - 256)),
            ld(src.add(n - 192)),
            ld(src.add(n - 128)),
            ld(src.add(n - 64)),
        );
        let skip = 64 - (dst as usize & 63);
        let (mut d, mut s) = (dst.add(skip), src.add(skip));
        while d < tail {
            // Stores addressed from `d` alone (see `generic::steady`).
            (d, s) = crate::arch::generic::steady(d, s);
            let (a, b, c, e) = (ld(s), ld(s.add(64)), ld(s.add(128)), ld(s.add(192)));
            st(d, a);
            st(d.add(64), b);
            st(d.add(128), c);
            st(d.add(192), e);
            d = d.add(256);
            s = s.add(256);
        }
        st(dst, head);
        st(tail, w);
        st(tail.add(64), x);
        st(tail.add(128), y);
        st(tail.add(192), z);
    }
}

/// Sets `n <= 2048` bytes to `byte`: up to 512 as [`set_le512`], above it the first
/// 256 bytes, then one store per line: the whole lines from the one holding byte 256
/// to the one before the last, and the last line's bytes with one masked store (the
/// C entries' `set_entry!` block, store for store; see `entry`'s docs for why). A set
/// has no overlap to respect, so it keeps the inline path up to glibc's `rep stosb`
/// threshold, 2 KiB, where an indirect call into a kernel costs more
/// (`docs/results/xeon-avx512-2vcpu/doors`).
///
/// # Safety
/// `dst` valid for `n` writes, `n <= 2048`; CPU features as for [`copy_le64`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,bmi2")]
#[inline]
pub unsafe fn set_le2k(dst: *mut u8, byte: u8, n: usize) {
    debug_assert!(n <= SET_WIDE_MAX);
    // SAFETY: up to 512 as `set_le512`. Above: [0, 256) unaligned; `line` runs over
    // whole lines from the one holding byte 256 (at or after dst, as 256 >= 63) while
    // it and the next lie before the last line (`last`, which holds byte n - 1, so
    // every whole line before it is in range); the line before the last is in range
    // (n > 512 puts it past dst); the masked store writes [last, dst + n) only.
    unsafe {
        if n <= WIDE_MAX {
            return set_le512(dst, byte, n);
        }
        let v = _mm512_set1_epi8(byte as i8);
        st(dst, v);
        st(dst.add(64), v);
        st(dst.add(128), v);
        st(dst.add(192), v);
        let end = dst as usize + n;
        let last = dst.add(((end - 1) & !63) - dst as usize);
        let mut line = dst.add(((dst as usize + 256) & !63) - dst as usize);
        // At least one step: `last` lies 192 bytes or more past `line`.
        loop {
            st(line, v);
            st(line.add(64), v);
            line = line.add(128);
            if line as usize > last as usize - 128 {
                break;
            }
        }
        st(last.sub(64), v);
        let mask = u64::MAX >> (63 - ((end - 1) & 63));
        _mm512_mask_storeu_epi8(last as *mut i8, mask, v);
    }
}
