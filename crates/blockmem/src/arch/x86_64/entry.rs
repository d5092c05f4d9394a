//! C entry points written whole in assembly: the preload shim's `memcpy`, `memmove`
//! and `memset` and the C ABI's `blockmem_copy`, `blockmem_move`, `blockmem_set` and
//! their memcpy-shaped twins, each defined by its crate with
//! [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry).
//!
//! A program calling one size in a loop is bound by the micro-ops and taken branches of
//! each call, so each size class ends in its own straight-line block, found by a short
//! search (evidence: `docs/results/epyc-zen4-2vcpu/doors/entry-notes.md`, and each host's `doors`):
//!
//! 1. Every entry starts a 4 KiB page (`.p2align 12`) and every size class's block, from
//!    where a branch reaches it to its `ret`, lies within one 64-byte line and out of a
//!    page's last two lines; no jump (or fused compare and jump) crosses or ends on a
//!    32-byte boundary, which on Intel's Skylake family keeps its window out of the
//!    decoded-instruction cache (`blockmem-preload/tests/disasm.rs` checks both).
//! 2. AVX-512 copies: `n < 64` first, then `n > 128`. 64–128 bytes: two 64-byte loads
//!    from both ends, then the stores, no taken branch. 1–15 bytes: one masked 16-byte
//!    access (`n == 0` returns first: a masked load of an inaccessible page costs a
//!    fault-suppression assist); branch-free where sizes vary, it may reach into the
//!    next line, which glibc's scalar pairs would not, at a cost on mixed sizes
//!    (`docs/results/xeon-clx-2vcpu/neighbour`). 16–31 and 32–63: two 16- or 32-byte accesses from both
//!    ends. 129–256 and 257–512: four or eight 64-byte loads, then the stores.
//! 3. 513–2112 bytes (copies of disjoint ranges, up to glibc's `rep movsb` threshold
//!    with FSRM): the first 64 and last 256 bytes loaded first, 256-byte blocks to
//!    64-byte-aligned destinations, the ends stored last. Overlapping ranges go on.
//! 4. AVX-512 sets: broadcast once; `n > 128` first, then `n < 64`. 1–63 bytes: one
//!    masked 64-byte store whose window lies in the lines the bytes lie in. Above 128
//!    each block stores its head before it tests for the next class (as glibc's
//!    memset). 513–2048: the first 256 bytes, then one store per line, the last line's
//!    bytes masked.
//! 5. Every load precedes every store up to 512 bytes (AVX-512) or 256 (AVX2), so
//!    overlapping ranges are copied as a move; the loops take disjoint ranges only.
//! 6. AVX2 bodies (a CPU without AVX-512BW): glibc's ladder below 32 bytes in general
//!    registers and xmm, ymm pairs from both ends up to 256, then a 128-byte loop to
//!    32-byte-aligned destinations up to 2112 (copies) or 2048 (sets); each path ends
//!    in `vzeroupper`.
//! 7. Above those sizes (and overlapping copies above the straight-line sizes) the
//!    entry jumps on with its stack untouched: AVX-512 bodies to `above` (the plan,
//!    with the C hint in ecx), AVX2 bodies to `general` (through `vzeroupper`).
//! 8. The AVX-512 bodies write only zmm16–24 and k1 (and rcx, r8–r10): the upper
//!    halves of ymm0–15 stay clean and need no `vzeroupper` (as glibc's evex code).
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
//!   program's output). Its first size compare reads its bound from memory: `cmp rdx,
//!   [route]` against a word the constructor sets once (`usize::MAX` where the AVX-512
//!   bodies may run, else 0), one fused compare and branch before the AVX-512 bodies;
//!   with the route closed every call goes to label 19, a test of the level byte,
//!   then the AVX2 bodies or `general`. Before the constructor has run the route is
//!   closed and the level 0: every call takes `general`, which works at any time.

use core::sync::atomic::{AtomicU8, Ordering};

use crate::cpu::Features;

/// The level of bodies a CPU runs: AVX-512BW, VL and BMI2 with ZMM state enabled.
pub const LEVEL_AVX512: u8 = 1;
/// The level of bodies a CPU runs: AVX2 with YMM state enabled.
pub const LEVEL_AVX2: u8 = 2;

/// The overlap test before a copy loop (`disjoint`: none). Uses r8, so that rcx (the C
/// ABI's hint) reaches `above` or `general` intact.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_overlap_check {
    (disjoint, $out:literal) => {
        ""
    };
    (possible, $out:literal) => {
        concat!(
            "mov r8, rdi\nsub r8, rsi\ncmp r8, rdx\njb ",
            $out,
            "\n",
            "mov r8, rsi\nsub r8, rdi\ncmp r8, rdx\njb ",
            $out,
            "\n"
        )
    };
}

/// The first block of `entry_copy_avx512_head!`: the first size tests and the class that needs no
/// taken branch, ending in `ret`.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_copy_avx512_head_first {
    () => {
        concat!(
            "cmp rdx, 64\n",
            "jb 1f\n",
            "cmp rdx, 128\n",
            "ja 4f\n",
            "vmovdqu64 zmm16, zmmword ptr [rsi]\n",
            "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17\n",
            "ret\n",
        )
    };
}

/// AVX-512 copy bodies up to 512 bytes, then the test for the loop's sizes (rax = dst).
#[doc(hidden)]
#[macro_export]
macro_rules! entry_copy_avx512_head {
    () => {
        concat!(
            ".p2align 6\n",
            "1:\n",
            "cmp edx, 32\n",
            "jae 2f\n",
            "cmp edx, 16\n",
            "jae 12f\n",
            "test edx, edx\n",
            "je 3f\n",
            "mov r9d, -1\n",
            "bzhi r9d, r9d, edx\n",
            "kmovw k1, r9d\n",
            "vmovdqu8 xmm16 {{k1}}{{z}}, xmmword ptr [rsi]\n",
            "vmovdqu8 xmmword ptr [rdi] {{k1}}, xmm16\n",
            "3:\n",
            "ret\n",
            // 32..=63 and 16..=31 share a line.
            ".p2align 6\n",
            "2:\n",
            "vmovdqu64 ymm16, ymmword ptr [rsi]\n",
            "vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]\n",
            "vmovdqu64 ymmword ptr [rdi], ymm16\n",
            "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17\n",
            "ret\n",
            "12:\n",
            "vmovdqu64 xmm16, xmmword ptr [rsi]\n",
            "vmovdqu64 xmm17, xmmword ptr [rsi + rdx - 16]\n",
            "vmovdqu64 xmmword ptr [rdi], xmm16\n",
            "vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm17\n",
            "ret\n",
            ".p2align 6\n",
            "4:\n",
            "cmp rdx, 256\n",
            "ja 5f\n",
            "vmovdqu64 zmm16, zmmword ptr [rsi]\n",
            "vmovdqu64 zmm17, zmmword ptr [rsi + 64]\n",
            "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 128]\n",
            "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 64]\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + 64], zmm17\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm18\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm19\n",
            "ret\n",
            ".p2align 6\n",
            "5:\n",
            "cmp rdx, 512\n",
            "ja 6f\n",
            "vmovdqu64 zmm16, zmmword ptr [rsi]\n",
            "vmovdqu64 zmm17, zmmword ptr [rsi + 64]\n",
            "vmovdqu64 zmm18, zmmword ptr [rsi + 128]\n",
            "vmovdqu64 zmm19, zmmword ptr [rsi + 192]\n",
            "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 256]\n",
            "vmovdqu64 zmm21, zmmword ptr [rsi + rdx - 192]\n",
            "vmovdqu64 zmm22, zmmword ptr [rsi + rdx - 128]\n",
            "vmovdqu64 zmm23, zmmword ptr [rsi + rdx - 64]\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + 64], zmm17\n",
            "vmovdqu64 zmmword ptr [rdi + 128], zmm18\n",
            "vmovdqu64 zmmword ptr [rdi + 192], zmm19\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm20\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm21\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm22\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm23\n",
            "ret\n",
            ".p2align 6\n",
            "6:\n",
            "cmp rdx, 2112\n",
            "ja 8f\n",
        )
    };
}

/// AVX-512 copy loop for 513..=2112 bytes of disjoint ranges; label 8 follows it.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_copy_avx512_loop {
    () => {
        concat!(
            "vmovdqu64 zmm16, zmmword ptr [rsi]\n",
            "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 256]\n",
            "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 192]\n",
            "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 128]\n",
            "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 64]\n",
            "lea r9, [rdi + rdx - 256]\n",
            "mov r8d, edi\n",
            "and r8d, 63\n",
            "neg r8\n",
            "add r8, 64\n",
            "lea rcx, [rdi + r8]\n",
            "lea r10, [rsi + r8]\n",
            // n > 512: rcx <= dst + 64 < r9, so the loop runs at least once.
            "7:\n",
            "vmovdqu64 zmm21, zmmword ptr [r10]\n",
            "vmovdqu64 zmm22, zmmword ptr [r10 + 64]\n",
            "vmovdqu64 zmm23, zmmword ptr [r10 + 128]\n",
            "vmovdqu64 zmm24, zmmword ptr [r10 + 192]\n",
            "vmovdqa64 zmmword ptr [rcx], zmm21\n",
            "vmovdqa64 zmmword ptr [rcx + 64], zmm22\n",
            "vmovdqa64 zmmword ptr [rcx + 128], zmm23\n",
            "vmovdqa64 zmmword ptr [rcx + 192], zmm24\n",
            "add rcx, 256\n",
            "add r10, 256\n",
            "cmp rcx, r9\n",
            "jb 7b\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [r9], zmm17\n",
            "vmovdqu64 zmmword ptr [r9 + 64], zmm18\n",
            "vmovdqu64 zmmword ptr [r9 + 128], zmm19\n",
            "vmovdqu64 zmmword ptr [r9 + 192], zmm20\n",
            "ret\n",
        )
    };
}

/// AVX2 copy bodies up to 256 bytes, then the test for the loop's sizes (rax = dst).
#[doc(hidden)]
#[macro_export]
macro_rules! entry_copy_avx2_head {
    () => {
        concat!(
            "cmp rdx, 32\n",
            "jb 21f\n",
            "vmovdqu ymm0, ymmword ptr [rsi]\n",
            "cmp rdx, 64\n",
            "ja 25f\n",
            "vmovdqu ymm1, ymmword ptr [rsi + rdx - 32]\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm1\n",
            "vzeroupper\n",
            "ret\n",
            // n < 32: glibc's ladder (32-bit compares, whose shorter encodings keep
            // this block within one line).
            ".p2align 6\n",
            "21:\n",
            "cmp edx, 16\n",
            "jae 24f\n",
            "cmp edx, 8\n",
            "jae 23f\n",
            "cmp edx, 4\n",
            "jae 22f\n",
            "test edx, edx\n",
            "je 28f\n",
            "mov r9, rdx\n",
            "shr r9, 1\n",
            "movzx r8d, byte ptr [rsi]\n",
            "movzx r10d, byte ptr [rsi + r9]\n",
            "movzx r11d, byte ptr [rsi + rdx - 1]\n",
            "mov byte ptr [rdi], r8b\n",
            "mov byte ptr [rdi + r9], r10b\n",
            "mov byte ptr [rdi + rdx - 1], r11b\n",
            "28:\n",
            "ret\n",
            ".p2align 6\n",
            "22:\n",
            "mov r8d, dword ptr [rsi]\n",
            "mov r9d, dword ptr [rsi + rdx - 4]\n",
            "mov dword ptr [rdi], r8d\n",
            "mov dword ptr [rdi + rdx - 4], r9d\n",
            "ret\n",
            "23:\n",
            "mov r8, qword ptr [rsi]\n",
            "mov r9, qword ptr [rsi + rdx - 8]\n",
            "mov qword ptr [rdi], r8\n",
            "mov qword ptr [rdi + rdx - 8], r9\n",
            "ret\n",
            "24:\n",
            "vmovdqu xmm0, xmmword ptr [rsi]\n",
            "vmovdqu xmm1, xmmword ptr [rsi + rdx - 16]\n",
            "vmovdqu xmmword ptr [rdi], xmm0\n",
            "vmovdqu xmmword ptr [rdi + rdx - 16], xmm1\n",
            "ret\n",
            // Above 64 bytes; ymm0 holds the first 32.
            ".p2align 6\n",
            "25:\n",
            "cmp rdx, 256\n",
            "ja 32f\n",
            "vmovdqu ymm1, ymmword ptr [rsi + 32]\n",
            "cmp rdx, 128\n",
            "jbe 26f\n",
            "vmovdqu ymm2, ymmword ptr [rsi + 64]\n",
            "vmovdqu ymm3, ymmword ptr [rsi + 96]\n",
            "vmovdqu ymm4, ymmword ptr [rsi + rdx - 128]\n",
            "vmovdqu ymm5, ymmword ptr [rsi + rdx - 96]\n",
            "vmovdqu ymm6, ymmword ptr [rsi + rdx - 64]\n",
            "vmovdqu ymm7, ymmword ptr [rsi + rdx - 32]\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [rdi + 32], ymm1\n",
            "vmovdqu ymmword ptr [rdi + 64], ymm2\n",
            "vmovdqu ymmword ptr [rdi + 96], ymm3\n",
            "vmovdqu ymmword ptr [rdi + rdx - 128], ymm4\n",
            "vmovdqu ymmword ptr [rdi + rdx - 96], ymm5\n",
            "vmovdqu ymmword ptr [rdi + rdx - 64], ymm6\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm7\n",
            "vzeroupper\n",
            "ret\n",
            ".p2align 6\n",
            "26:\n",
            "vmovdqu ymm2, ymmword ptr [rsi + rdx - 64]\n",
            "vmovdqu ymm3, ymmword ptr [rsi + rdx - 32]\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [rdi + 32], ymm1\n",
            "vmovdqu ymmword ptr [rdi + rdx - 64], ymm2\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm3\n",
            "vzeroupper\n",
            "ret\n",
            ".p2align 6\n",
            "32:\n",
            "cmp rdx, 2112\n",
            "ja 35f\n",
        )
    };
}

/// AVX2 copy loop for 257..=2112 bytes of disjoint ranges; label 35 follows it.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_copy_avx2_loop {
    () => {
        concat!(
            "vmovdqu ymm8, ymmword ptr [rsi + rdx - 128]\n",
            "vmovdqu ymm9, ymmword ptr [rsi + rdx - 96]\n",
            "vmovdqu ymm10, ymmword ptr [rsi + rdx - 64]\n",
            "vmovdqu ymm11, ymmword ptr [rsi + rdx - 32]\n",
            "lea r9, [rdi + rdx - 128]\n",
            // rcx: the first 32-byte boundary past dst; r10: the source byte for it.
            "lea rcx, [rdi + 32]\n",
            "and rcx, -32\n",
            "mov r10, rsi\n",
            "sub r10, rdi\n",
            "add r10, rcx\n",
            // n > 256: rcx <= dst + 32 < r9, so the loop runs at least once.
            "33:\n",
            "vmovdqu ymm1, ymmword ptr [r10]\n",
            "vmovdqu ymm2, ymmword ptr [r10 + 32]\n",
            "vmovdqu ymm3, ymmword ptr [r10 + 64]\n",
            "vmovdqu ymm4, ymmword ptr [r10 + 96]\n",
            "vmovdqa ymmword ptr [rcx], ymm1\n",
            "vmovdqa ymmword ptr [rcx + 32], ymm2\n",
            "vmovdqa ymmword ptr [rcx + 64], ymm3\n",
            "vmovdqa ymmword ptr [rcx + 96], ymm4\n",
            "sub rcx, -128\n",
            "sub r10, -128\n",
            "cmp rcx, r9\n",
            "jb 33b\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [r9 + 0], ymm8\n",
            "vmovdqu ymmword ptr [r9 + 32], ymm9\n",
            "vmovdqu ymmword ptr [r9 + 64], ymm10\n",
            "vmovdqu ymmword ptr [r9 + 96], ymm11\n",
            "vzeroupper\n",
            "ret\n",
        )
    };
}

/// The first block of `entry_set_avx512!`: the first size tests and the class that needs no
/// taken branch, ending in `ret`.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_set_avx512_first {
    () => {
        concat!(
            // Above 128 first, then below 64: fewer mispredicted tests where sizes
            // come at random (see the module docs). Each path broadcasts the byte once,
            // after the compares, which keeps them in the first 32 bytes.
            "cmp rdx, 128\n",
            "ja 3f\n",
            "cmp rdx, 64\n",
            "jb 1f\n",
            "vpbroadcastb zmm16, esi\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16\n",
            "ret\n",
        )
    };
}

/// AVX-512 set bodies up to 2048 bytes (rax = dst); label 6 follows them.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_set_avx512 {
    () => {
        concat!(
            // 1..=63 bytes: one masked store whose window lies in the lines the
            // bytes lie in (a store from dst would take the next line for most
            // small sets): the later of dst's line and
            // dst + n - 64 (a signed compare: user addresses are below 2^47, and
            // the second is negative only for a dst in the first line, where the
            // line wins), the mask shifted by dst - window; rax holds dst.
            ".p2align 6\n",
            "1:\n",
            "vpbroadcastb zmm16, esi\n",
            "lea rcx, [rdi + rdx - 64]\n",
            "and rdi, -64\n",
            "cmp rdi, rcx\n",
            "cmovl rdi, rcx\n",
            "mov ecx, eax\n",
            "sub ecx, edi\n",
            "mov r8, -1\n",
            "bzhi r8, r8, rdx\n",
            "shlx r8, r8, rcx\n",
            "kmovq k1, r8\n",
            "vmovdqu8 zmmword ptr [rdi] {{k1}}, zmm16\n",
            "ret\n",
            // Above 128 bytes each block stores its head before it tests for the
            // next size class, as glibc's memset does: the stores are on the path
            // whichever way the test goes, so a mispredicted test (random sizes)
            // does not delay them.
            ".p2align 6\n",
            "3:\n",
            "cmp rdx, 2048\n",
            "ja 6f\n",
            "vpbroadcastb zmm16, esi\n",
            "vmovdqu64 zmmword ptr [rdi], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + 64], zmm16\n",
            "cmp rdx, 256\n",
            "ja 4f\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16\n",
            "ret\n",
            ".p2align 6\n",
            "4:\n",
            "vmovdqu64 zmmword ptr [rdi + 128], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + 192], zmm16\n",
            "cmp rdx, 512\n",
            "ja 5f\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16\n",
            "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16\n",
            "ret\n",
            // 513..=2048: the first 256 bytes are stored. The rest with one store
            // per line (see the module docs): whole lines from the one holding
            // byte 256 (r8), two a step (at least one step: the last line, r9, is
            // 192 bytes or more past r8), then the line before the last (a line
            // the steps may have stored), then the last line's bytes with one
            // masked store.
            ".p2align 6\n",
            "5:\n",
            "lea rcx, [rdi + rdx - 1]\n",
            "lea r8, [rdi + 256]\n",
            "and r8, -64\n",
            "mov r9, rcx\n",
            "and r9, -64\n",
            "lea r10, [r9 - 128]\n",
            "8:\n",
            "vmovdqa64 zmmword ptr [r8], zmm16\n",
            "vmovdqa64 zmmword ptr [r8 + 64], zmm16\n",
            "sub r8, -128\n",
            "cmp r8, r10\n",
            "jbe 8b\n",
            "vmovdqa64 zmmword ptr [r9 - 64], zmm16\n",
            // ~last & 63 = 63 - (last & 63): the mask of the last line's bytes.
            "not ecx\n",
            "mov r10, -1\n",
            "shrx r10, r10, rcx\n",
            "kmovq k1, r10\n",
            "vmovdqu8 zmmword ptr [r9] {{k1}}, zmm16\n",
            "ret\n",
        )
    };
}

/// AVX2 set bodies up to 2048 bytes (rax = dst); label 35 follows them.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_set_avx2 {
    () => {
        concat!(
            "vmovd xmm0, esi\n",
            "cmp rdx, 32\n",
            "jb 21f\n",
            "vpbroadcastb ymm0, xmm0\n",
            "cmp rdx, 64\n",
            "ja 25f\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0\n",
            "vzeroupper\n",
            "ret\n",
            // n < 32, as the copy's.
            ".p2align 6\n",
            "21:\n",
            "vpbroadcastb xmm0, xmm0\n",
            "cmp edx, 16\n",
            "jae 24f\n",
            "cmp edx, 8\n",
            "jae 23f\n",
            "cmp edx, 4\n",
            "jae 22f\n",
            "test edx, edx\n",
            "je 28f\n",
            "mov r9, rdx\n",
            "shr r9, 1\n",
            "mov byte ptr [rdi], sil\n",
            "mov byte ptr [rdi + r9], sil\n",
            "mov byte ptr [rdi + rdx - 1], sil\n",
            "28:\n",
            "ret\n",
            ".p2align 6\n",
            "22:\n",
            "vmovd dword ptr [rdi], xmm0\n",
            "vmovd dword ptr [rdi + rdx - 4], xmm0\n",
            "ret\n",
            "23:\n",
            "vmovq qword ptr [rdi], xmm0\n",
            "vmovq qword ptr [rdi + rdx - 8], xmm0\n",
            "ret\n",
            "24:\n",
            "vmovdqu xmmword ptr [rdi], xmm0\n",
            "vmovdqu xmmword ptr [rdi + rdx - 16], xmm0\n",
            "ret\n",
            // Above 64 bytes each block stores its head before it tests for the next class.
            ".p2align 6\n",
            "25:\n",
            "cmp rdx, 2048\n",
            "ja 35f\n",
            "vmovdqu ymmword ptr [rdi], ymm0\n",
            "vmovdqu ymmword ptr [rdi + 32], ymm0\n",
            "cmp rdx, 128\n",
            "ja 26f\n",
            "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0\n",
            "vzeroupper\n",
            "ret\n",
            ".p2align 6\n",
            "26:\n",
            "vmovdqu ymmword ptr [rdi + 64], ymm0\n",
            "vmovdqu ymmword ptr [rdi + 96], ymm0\n",
            "cmp rdx, 256\n",
            "ja 32f\n",
            "vmovdqu ymmword ptr [rdi + rdx - 128], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 96], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0\n",
            "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0\n",
            "vzeroupper\n",
            "ret\n",
            // 257..=2048 bytes (larger ones left at 25): the first 128 are stored;
            // the last 128 and aligned 128-byte blocks between.
            ".p2align 6\n",
            "32:\n",
            "lea rcx, [rdi + rdx - 128]\n",
            "mov r8, rdi\n",
            "and r8, -32\n",
            "sub r8, -128\n",
            // n > 256: r8 <= dst + 128 < rcx, so the loop runs at least once.
            "33:\n",
            "vmovdqa ymmword ptr [r8], ymm0\n",
            "vmovdqa ymmword ptr [r8 + 32], ymm0\n",
            "vmovdqa ymmword ptr [r8 + 64], ymm0\n",
            "vmovdqa ymmword ptr [r8 + 96], ymm0\n",
            "sub r8, -128\n",
            "cmp r8, rcx\n",
            "jb 33b\n",
            "vmovdqu ymmword ptr [rcx], ymm0\n",
            "vmovdqu ymmword ptr [rcx + 32], ymm0\n",
            "vmovdqu ymmword ptr [rcx + 64], ymm0\n",
            "vmovdqu ymmword ptr [rcx + 96], ymm0\n",
            "vzeroupper\n",
            "ret\n",
        )
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
///   `R` (an `AtomicUsize`: `usize::MAX` for the AVX-512 bodies) and then `F` (an
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
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                $crate::entry_copy_avx512_head_first!(),
                $crate::entry_copy_avx512_head!(),
                $crate::entry_overlap_check!($overlap, "8f"),
                $crate::entry_copy_avx512_loop!(),
                ".p2align 5",
                "8:",
                $hint,
                "jmp {above}",
                above = sym $above,
            )
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx2, general = $general:path, overlap = $overlap:ident
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                $crate::entry_copy_avx2_head!(),
                $crate::entry_overlap_check!($overlap, "35f"),
                $crate::entry_copy_avx2_loop!(),
                ".p2align 5",
                "35:",
                "vzeroupper",
                "jmp {general}",
                general = sym $general,
            )
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = routed, route = $route:path, flag = $flag:path, general = $general:path,
        above = $above:path, hint = $hint:literal, overlap = $overlap:ident
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                "cmp rdx, qword ptr [rip + {route}]",
                "jae 18f",
                $crate::entry_copy_avx512_head_first!(),
                // A closed route's way on, in a 32-byte window of its own.
                ".p2align 5",
                "18:",
                "jmp 19f",
                $crate::entry_copy_avx512_head!(),
                $crate::entry_overlap_check!($overlap, "8f"),
                $crate::entry_copy_avx512_loop!(),
                ".p2align 5",
                "8:",
                $hint,
                "jmp {above}",
                // The level test ends a line, so that the AVX2 bodies start the next.
                ".p2align 6",
                ".skip 50, 0xcc",
                "19:",
                "cmp byte ptr [rip + {flag}], 2",
                "jne {general}",
                "nop",
                $crate::entry_copy_avx2_head!(),
                $crate::entry_overlap_check!($overlap, "35f"),
                $crate::entry_copy_avx2_loop!(),
                ".p2align 5",
                "35:",
                "vzeroupper",
                "jmp {general}",
                route = sym $route,
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
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
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                $crate::entry_set_avx512_first!(),
                $crate::entry_set_avx512!(),
                ".p2align 5",
                "6:",
                $hint,
                "jmp {above}",
                above = sym $above,
            )
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = avx2, general = $general:path
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                $crate::entry_set_avx2!(),
                ".p2align 5",
                "35:",
                "vzeroupper",
                "jmp {general}",
                general = sym $general,
            )
        }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        bodies = routed, route = $route:path, flag = $flag:path, general = $general:path,
        above = $above:path, hint = $hint:literal
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 12",
                "mov rax, rdi",
                "cmp rdx, qword ptr [rip + {route}]",
                "jae 18f",
                $crate::entry_set_avx512_first!(),
                // A closed route's way on, in a 32-byte window of its own.
                ".p2align 5",
                "18:",
                "jmp 19f",
                $crate::entry_set_avx512!(),
                ".p2align 5",
                "6:",
                $hint,
                "jmp {above}",
                // The level test ends a line, so that the AVX2 bodies start the next.
                ".p2align 6",
                ".skip 50, 0xcc",
                "19:",
                "cmp byte ptr [rip + {flag}], 2",
                "jne {general}",
                "nop",
                $crate::entry_set_avx2!(),
                ".p2align 5",
                "35:",
                "vzeroupper",
                "jmp {general}",
                route = sym $route,
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
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
    /// A `routed` entry; its route word is at the address [`bodies_of`] returns.
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
    use super::*;

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
