//! `rep_movsb`: the string-copy microcode. Ladder up to 32 bytes, `rep movsb` above.
//! With ERMS/FSRM it is the vendor's own tuned copy (it may internally use
//! non-allocating stores for large sizes); without them it can be slow to start. The lab
//! measures where, if anywhere, it wins on the host. The kernel needs no CPU feature to
//! be correct, only to be fast, so it is always available on x86-64.
//!
//! Moves: `rep movsb` runs only where the ranges are disjoint; overlapping ones take
//! the widest temporal vector kernel the CPU runs: ascending `rep movsb` would be right
//! for a destination below the source but runs such moves slower than vectors
//! (`docs/results/epyc-zen5-2vcpu/lab-quick`), and descending `rep movsb` (with `std`)
//! runs without fast-string microcode.
//!
//! Where the destination lies 1–31 bytes past the source modulo 4 KiB the microcode
//! falls off a cliff, and the kernel copies with vectors instead ([`short_alias`]); a
//! source past the destination is not affected. The band's copies are rare but
//! systematic where they happen (page-aligned buffers at a small offset past each
//! other's). Evidence: `docs/results/epyc-zen4-2vcpu/alignment` (`blockmem lab alignment`).

use crate::arch::all::small::{copy_le32, SMALL_MAX};
use crate::arch::generic::disjoint;
use crate::kernel::Op;

/// Distances (`dst − src` modulo 4 KiB, in bytes, from 1) where `rep movsb` is slow.
pub const SHORT_ALIAS_MAX: usize = 31;

/// True where `dst` lies 1 to [`SHORT_ALIAS_MAX`] bytes past `src` modulo 4 KiB: the
/// distances at which `rep movsb` falls off a cliff (see the module docs). Only the
/// low 12 bits of each address matter, as for the CPU's own comparison of a load's
/// address with the stores still in its buffer.
#[inline(always)]
pub fn short_alias(dst: *const u8, src: *const u8) -> bool {
    ((dst as usize).wrapping_sub(src as usize) & 4095).wrapping_sub(1) < SHORT_ALIAS_MAX
}

/// `op` (copy or move) with the widest temporal vector kernel the CPU runs (features
/// masked off included), for the distances [`short_alias`] finds and for overlapping
/// moves.
///
/// # Safety
/// As the op's contract: `src` valid for `n` reads, `dst` for `n` writes; no overlap
/// for `Copy`.
#[cold]
#[inline(never)]
unsafe fn by_vectors(op: Op, dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    let k = crate::policy::best_temporal(crate::cpu::features(), op);
    // SAFETY: forwarded contract; `best_temporal` returns a kernel this CPU runs, with
    // the op (`sse2` at least on x86-64).
    unsafe { crate::dispatch::run_kernel(k, op, dst, src, 0, n) }
}

/// Runs `rep movsb` over `n` bytes, ascending.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes; `dst <= src` or disjoint.
#[inline(always)]
pub(crate) unsafe fn rep_movsb(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller guarantees the ranges; the SysV ABI guarantees DF = 0
    // (ascending) on function entry; the registers the instruction consumes are
    // declared clobbered.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
}

/// Copies `n` bytes.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes, no overlap.
#[inline]
pub unsafe extern "C" fn copy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; the ladder handles n <= SMALL_MAX. Each way returns
    // `dst` by itself, the vectors' by a jump: nothing is restored from the stack after
    // `rep movsb` (see `kernel::CopyFn`).
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n);
            dst
        } else if short_alias(dst, src) {
            by_vectors(Op::Copy, dst, src, n)
        } else {
            rep_movsb(dst, src, n);
            dst
        }
    }
}

/// Moves `n` bytes; overlap allowed.
///
/// # Safety
/// `src` valid for `n` reads, `dst` for `n` writes.
#[inline]
pub unsafe extern "C" fn move_(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: rep movsb only when the ranges are disjoint; otherwise a vector kernel's
    // move, which handles overlap both ways.
    unsafe {
        if n <= SMALL_MAX {
            copy_le32(dst, src, n);
            dst
        } else if disjoint(dst, src, n) && !short_alias(dst, src) {
            rep_movsb(dst, src, n);
            dst
        } else {
            by_vectors(Op::Move, dst, src, n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_is_one_to_thirty_one_bytes_past_modulo_four_kib() {
        let src = 0x7f00_0000_1000usize;
        for back in [0usize, 4096, 8192, 1 << 32] {
            for d in 0..4096usize {
                let dst = (src + d + back) as *const u8;
                let want = (1..=SHORT_ALIAS_MAX).contains(&d);
                assert_eq!(
                    short_alias(dst, src as *const u8),
                    want,
                    "distance {d} + {back}"
                );
            }
        }
        // Below the source by d: 4096 - d past it modulo 4 KiB.
        assert!(short_alias((src - 4095) as *const u8, src as *const u8));
        assert!(!short_alias((src - 1) as *const u8, src as *const u8));
    }
}
