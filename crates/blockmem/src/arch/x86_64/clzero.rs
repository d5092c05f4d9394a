//! `clzero` (AMD, zero only): `CLZERO` writes zeros to a whole cache line without
//! reading it first, like a non-temporal store that needs no data register: the fastest
//! way to clear large cold memory on Zen (`docs/results/epyc-zen4-2vcpu/zero-loop`).
//! The unaligned edges use SSE2 stores; every full line in between gets one `clzero`;
//! an `sfence` orders them before return.
//!
//! Every CPU with CLZERO has 64-byte lines, which [`LINE`] assumes.

use crate::arch::all::small::SMALL_MAX;
use crate::arch::generic::{Stores, Vector};
use core::arch::x86_64::__m128i;

/// Bytes cleared by one `clzero`.
pub const LINE: usize = 64;

/// Below this many bytes there is at most one whole line: plain SSE2 stores.
const MIN_CLZERO: usize = 2 * LINE;

/// Zeroes `n` bytes.
///
/// # Safety
/// `dst` valid for `n` writes; the CPU supports CLZERO (CPUID 0x80000008, EBX bit 0).
pub unsafe extern "C" fn zero(dst: *mut u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded contract; `clear_line` receives 64-aligned addresses of lines
    // inside [dst, dst+n) (see `zero_lines`), and CLZERO is available per the contract.
    unsafe {
        zero_lines(dst, n, |line| {
            // CLZERO is encoded by bytes: older assemblers lack the mnemonic.
            core::arch::asm!(".byte 0x0f, 0x01, 0xfc", in("rax") line, options(nostack, preserves_flags));
        })
    };
    dst
}

/// The `clzero` kernel with each `CLZERO` replaced by a faithful emulation (eight
/// 8-byte zero stores to the 64-byte line containing the address). Lets the test suite
/// check the edge and line arithmetic on CPUs without CLZERO; never used for real work.
///
/// # Safety
/// `dst` valid for `n` writes.
#[doc(hidden)]
pub unsafe fn zero_emulated(dst: *mut u8, n: usize) {
    // SAFETY: as `zero`; the emulation writes exactly the line CLZERO would.
    unsafe {
        zero_lines(dst, n, |line| {
            let p = (line & !(LINE - 1)) as *mut u64;
            for i in 0..LINE / 8 {
                core::ptr::write_volatile(p.add(i), 0);
            }
        })
    }
}

/// SSE2 edges plus one `clear_line(addr)` per whole 64-byte line in between.
///
/// # Safety
/// `dst` valid for `n` writes; `clear_line(a)` must zero exactly the 64-byte line at
/// the 64-aligned address `a` and may be called only for lines inside [dst, dst+n).
#[inline(always)]
unsafe fn zero_lines(dst: *mut u8, n: usize, clear_line: impl Fn(usize)) {
    // SAFETY: below MIN_CLZERO the SSE2 ladder writes exactly [dst, dst+n). Above it,
    // n >= 128, so the two 64-byte edge stores lie inside [dst, dst+n); each line
    // cleared is 64-aligned [l, l+64) with dst <= l and l+64 <= dst+n.
    unsafe {
        if n <= SMALL_MAX || n < MIN_CLZERO {
            return super::sse2::set_with(dst, 0, n, Stores::Temporal);
        }
        let z = <__m128i as Vector>::splat(0);
        for i in 0..4 {
            z.store(dst.add(i * 16));
            z.store(dst.add(n - LINE + i * 16));
        }
        let start = (dst as usize + LINE - 1) & !(LINE - 1);
        let end = (dst as usize + n) & !(LINE - 1);
        let mut line = start;
        while line < end {
            clear_line(line);
            line += LINE;
        }
        <__m128i as Vector>::fence();
    }
}
