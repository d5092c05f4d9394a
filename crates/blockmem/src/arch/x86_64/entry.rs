//! C entry points for CPUs with AVX-512BW, VL and BMI2, written whole in assembly: the
//! preload shim's `memcpy`, `memmove` and `memset` and the C ABI's `blockmem_copy`,
//! `blockmem_move` and `blockmem_set` are each one of these, defined by its crate with
//! [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry).
//!
//! A program calling one size in a loop is bound by the instructions and the taken
//! branches of each call (glibc's `__memmove_avx512_unaligned_erms` copies 64–128
//! bytes in eight instructions, none a taken branch). An entry written in Rust pays for
//! the compiler's choices: a test of its flag, a jump into a function compiled for
//! AVX-512 (a function without `#[target_feature]` cannot inline one with it), the
//! register moves of its other paths; 16–128-byte copies and sets in a tight loop ran
//! at 0.6–0.9× glibc's speed that way on a 2-vCPU Intel Xeon KVM guest. Here the flag
//! test is one compare of a byte, and the size classes are found by a binary search
//! (copies: two compares and no taken branch up to 32 bytes, one taken branch up to
//! 128, two up to 512, three to 2 KiB; sets: none from 64 to 128 bytes, one below 64,
//! two to 512; a ladder from the smallest class took one more per class), each ending
//! in its own straight-line block.
//!
//! Where the code lies matters as much as what it is. Each entry starts a 64-byte line
//! (its first directive, `.p2align 6`, sets its section's alignment, so the symbol
//! itself is aligned and nothing is executed as padding) and each block a 16-byte
//! boundary. Unaligned, the same instructions took 7 cycles a call for 33–128-byte
//! copies against glibc's 4–6 (a C loop calling through a function pointer, 2-vCPU
//! Intel Xeon KVM guest); aligned, 4–5. One taken branch costs about a cycle of a call
//! that takes four, which is why the class each entry reaches without one is chosen
//! with care: for copies the masked path up to 32 bytes (the most frequent sizes in
//! every fleet distribution), for sets 64–128 bytes (below 64 the masked store needs
//! its page test and a test of zero anyway).
//!
//! The trade measured on that guest with the lab's `doors` experiment (plain calls
//! through the PLT): masking everything below 64 bytes in one path, with 64–128 bytes
//! reached without a taken branch (glibc's layout), brought 64–128-byte copies level
//! with glibc but cost 16- and 32-byte copies 0.75–0.81× (from 0.85–0.91×); a
//! glibc-like ladder below 64 bytes lost the random sizes (the shim's fleet geometric
//! mean fell from 1.7× to 1.3×, the C ABI's from 1.56× to 1.21×). The random sizes
//! won: the masked path up to 32 bytes stays the fall-through.
//!
//! A masked store whose every byte is masked out is not free: glibc's
//! `memset(p, c, 0)` repeated on one address took 78–80 ns a call on that guest, so
//! the set entry returns on `n == 0` before building the mask (1.7 ns).
//!
//! ```text
//!   flag clear (other CPU, or a mode set)   -> `general`, arguments untouched
//!   copy  n <= 32   one masked 32-byte load and store; n == 0 returns (a branch,
//!                   where `masked::copy_le64` redirects the access to the stack
//!                   branch-free: two instructions instead of five for every call)
//!         n <= 64   two 32-byte loads from both ends, then the stores
//!         n <= 128, 256, 512
//!                   2, 4 or 8 64-byte loads from both ends, then the stores
//!   set   broadcast once; 64 <= n <= 128 two 64-byte stores from both ends;
//!         n < 64    n == 0 returns; one masked 64-byte store, or, where that store
//!                   would straddle a page, unmasked stores from both ends (1–3
//!                   bytes, 4, 8, 16 or 32 at each end)
//!         n <= 256, 512   4 or 8 64-byte stores from both ends
//!   513..=2048      copy: the first 64 and last 256 bytes loaded first, 256-byte blocks
//!                   to 64-byte-aligned destinations, the ends stored last (ranges
//!                   that share a byte go to `above`); set: 256 bytes at each end and
//!                   aligned blocks between, as `masked::copy_le2k`/`set_le2k`
//!   above 2048      `above` (the rest of `dispatch::wide`: the plan), with the hint
//!                   in ecx: the C ABI's own, or zero (Auto)
//! ```
//!
//! The flag test itself cannot go: an IFUNC would let the dynamic linker bind each
//! caller to the body for its CPU, but a preloaded library's IFUNC is resolved while
//! libraries linked with `-z now` are relocated, before the preloaded library itself,
//! and the dynamic linker then prints "Relink ... for IFUNC symbol" into the program's
//! output (bash, through libtinfo, does this on Debian 12).
//!
//! Flag 2 selects the AVX2 bodies (a CPU without AVX-512BW): a ladder of overlapping
//! head/tail pairs (1–3, 4–7, 8–15 bytes in general registers, 16–32 in xmm, up to
//! 256 in ymm, with `vzeroupper`), and the general path above 256 bytes.
//!
//! Every load precedes every store in each block, so overlapping ranges are copied as
//! a move. Only zmm16-24, ymm16-17, xmm16 and k1 are written (and rcx, r8-r10): the
//! upper halves of ymm0-15 stay clean and no `vzeroupper` is needed (glibc's evex
//! functions do the same). The copies are the same accesses, block for block, as
//! `masked::copy_le512`, which the Rust API inlines; the sets differ only in the order
//! of their tests. The differential tests run every size through the C entries too,
//! and every size to 160 bytes against an inaccessible page (`pagedge`).

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, src, n[, hint]) -> dst` for
/// copies and moves of up to 2048 bytes (see the module docs).
///
/// * `flag`: a static byte (an `AtomicU8`): 1 where the CPU has AVX-512F/BW/VL and
///   BMI2 and the entry may take its AVX-512 path, 2 for its AVX2 path, anything else
///   for `general` (`dispatch::wide::level` says which the CPU allows);
/// * `general`: `extern "C" fn` with the entry's own signature, for a clear flag;
/// * `above`: `extern "C" fn(dst, src, n, hint: u32) -> dst` for sizes above 512
///   (`dispatch::wide::copy_above` and friends);
/// * `hint`: `"xor ecx, ecx"` for an entry without a hint argument (the hint is then
///   `Auto`), `""` for one whose fourth argument is the C ABI hint;
/// * `overlap`: `disjoint` where the caller promises the ranges share no byte (the C
///   ABI's copy), `possible` otherwise (memmove, and the shim's forgiving memcpy).
#[macro_export]
macro_rules! copy_entry {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        flag = $flag:path, general = $general:path, above = $above:path, hint = $hint:literal,
        overlap = $overlap:ident
    ) => {
        $crate::copy_entry!(@ $(#[$meta])* $vis fn $name($($arg: $ty),*);
            $flag, $general, $above, $hint, $crate::copy_entry!(@check $overlap));
    };
    (@check disjoint) => { "" };
    (@check possible) => {
        // 513..=2048 bytes stay here only when the ranges share no byte (the loop
        // interleaves loads and stores); overlapping ones go to `above`, a move.
        "mov rcx, rdi\nsub rcx, rsi\ncmp rcx, rdx\njb 8f\nmov rcx, rsi\nsub rcx, rdi\ncmp rcx, rdx\njb 8f"
    };
    (
        @ $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        $flag:path, $general:path, $above:path, $hint:literal, $overlap_check:expr
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 6",
                "cmp byte ptr [rip + {flag}], 1",
                "jne 20f",
                "mov rax, rdi",
                "cmp rdx, 64",
                "ja 3f",
                "cmp rdx, 32",
                "ja 2f",
                "test rdx, rdx",
                "je 1f",
                "mov r9d, -1",
                "bzhi r9d, r9d, edx",
                "kmovd k1, r9d",
                "vmovdqu8 ymm16 {{k1}}{{z}}, ymmword ptr [rsi]",
                "vmovdqu8 ymmword ptr [rdi] {{k1}}, ymm16",
                "1:",
                "ret",
                ".p2align 4",
                "2:",
                "vmovdqu64 ymm16, ymmword ptr [rsi]",
                "vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu64 ymmword ptr [rdi], ymm16",
                "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17",
                "ret",
                ".p2align 4",
                "3:",
                "cmp rdx, 256",
                "ja 5f",
                "cmp rdx, 128",
                "ja 4f",
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17",
                "ret",
                ".p2align 4",
                "4:",
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
                "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 128]",
                "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 64]",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm18",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm19",
                "ret",
                ".p2align 4",
                "5:",
                "cmp rdx, 512",
                "ja 6f",
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
                "vmovdqu64 zmm18, zmmword ptr [rsi + 128]",
                "vmovdqu64 zmm19, zmmword ptr [rsi + 192]",
                "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 256]",
                "vmovdqu64 zmm21, zmmword ptr [rsi + rdx - 192]",
                "vmovdqu64 zmm22, zmmword ptr [rsi + rdx - 128]",
                "vmovdqu64 zmm23, zmmword ptr [rsi + rdx - 64]",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
                "vmovdqu64 zmmword ptr [rdi + 128], zmm18",
                "vmovdqu64 zmmword ptr [rdi + 192], zmm19",
                "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm20",
                "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm21",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm22",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm23",
                "ret",
                ".p2align 4",
                "6:",
                "cmp rdx, 2048",
                "ja 8f",
                $overlap_check,
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 256]",
                "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 192]",
                "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 128]",
                "vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 64]",
                "lea r9, [rdi + rdx - 256]",
                "mov r8d, edi",
                "and r8d, 63",
                "neg r8",
                "add r8, 64",
                "lea rcx, [rdi + r8]",
                "lea r10, [rsi + r8]",
                "cmp rcx, r9",
                "jae 9f",
                "7:",
                "vmovdqu64 zmm21, zmmword ptr [r10]",
                "vmovdqu64 zmm22, zmmword ptr [r10 + 64]",
                "vmovdqu64 zmm23, zmmword ptr [r10 + 128]",
                "vmovdqu64 zmm24, zmmword ptr [r10 + 192]",
                "vmovdqa64 zmmword ptr [rcx], zmm21",
                "vmovdqa64 zmmword ptr [rcx + 64], zmm22",
                "vmovdqa64 zmmword ptr [rcx + 128], zmm23",
                "vmovdqa64 zmmword ptr [rcx + 192], zmm24",
                "add rcx, 256",
                "add r10, 256",
                "cmp rcx, r9",
                "jb 7b",
                "9:",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [r9], zmm17",
                "vmovdqu64 zmmword ptr [r9 + 64], zmm18",
                "vmovdqu64 zmmword ptr [r9 + 128], zmm19",
                "vmovdqu64 zmmword ptr [r9 + 192], zmm20",
                "ret",
                "8:",
                $hint,
                "jmp {above}",
                // AVX2 (flag 2): overlapping head/tail pairs up to 256 bytes, every
                // load before the first store; above, the general path.
                ".p2align 4",
                "20:",
                "cmp byte ptr [rip + {flag}], 2",
                "jne {general}",
                "mov rax, rdi",
                "cmp rdx, 32",
                "ja 25f",
                "cmp rdx, 16",
                "jae 24f",
                "cmp rdx, 8",
                "jae 23f",
                "cmp rdx, 4",
                "jae 22f",
                "test rdx, rdx",
                "je 21f",
                "mov r9, rdx",
                "shr r9, 1",
                "movzx r8d, byte ptr [rsi]",
                "movzx r10d, byte ptr [rsi + r9]",
                "movzx r11d, byte ptr [rsi + rdx - 1]",
                "mov byte ptr [rdi], r8b",
                "mov byte ptr [rdi + r9], r10b",
                "mov byte ptr [rdi + rdx - 1], r11b",
                "21:",
                "ret",
                "22:",
                "mov r8d, dword ptr [rsi]",
                "mov r9d, dword ptr [rsi + rdx - 4]",
                "mov dword ptr [rdi], r8d",
                "mov dword ptr [rdi + rdx - 4], r9d",
                "ret",
                "23:",
                "mov r8, qword ptr [rsi]",
                "mov r9, qword ptr [rsi + rdx - 8]",
                "mov qword ptr [rdi], r8",
                "mov qword ptr [rdi + rdx - 8], r9",
                "ret",
                "24:",
                "vmovdqu xmm0, xmmword ptr [rsi]",
                "vmovdqu xmm1, xmmword ptr [rsi + rdx - 16]",
                "vmovdqu xmmword ptr [rdi], xmm0",
                "vmovdqu xmmword ptr [rdi + rdx - 16], xmm1",
                "ret",
                "25:",
                "cmp rdx, 64",
                "ja 26f",
                "vmovdqu ymm0, ymmword ptr [rsi]",
                "vmovdqu ymm1, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm1",
                "vzeroupper",
                "ret",
                "26:",
                "cmp rdx, 128",
                "ja 27f",
                "vmovdqu ymm0, ymmword ptr [rsi]",
                "vmovdqu ymm1, ymmword ptr [rsi + 32]",
                "vmovdqu ymm2, ymmword ptr [rsi + rdx - 64]",
                "vmovdqu ymm3, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm1",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm2",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm3",
                "vzeroupper",
                "ret",
                "27:",
                "cmp rdx, 256",
                "ja {general}",
                "vmovdqu ymm0, ymmword ptr [rsi]",
                "vmovdqu ymm1, ymmword ptr [rsi + 32]",
                "vmovdqu ymm2, ymmword ptr [rsi + 64]",
                "vmovdqu ymm3, ymmword ptr [rsi + 96]",
                "vmovdqu ymm4, ymmword ptr [rsi + rdx - 128]",
                "vmovdqu ymm5, ymmword ptr [rsi + rdx - 96]",
                "vmovdqu ymm6, ymmword ptr [rsi + rdx - 64]",
                "vmovdqu ymm7, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm1",
                "vmovdqu ymmword ptr [rdi + 64], ymm2",
                "vmovdqu ymmword ptr [rdi + 96], ymm3",
                "vmovdqu ymmword ptr [rdi + rdx - 128], ymm4",
                "vmovdqu ymmword ptr [rdi + rdx - 96], ymm5",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm6",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm7",
                "vzeroupper",
                "ret",
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
        }
    };
}

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, c, n[, hint]) -> dst` for
/// sets of up to 2048 bytes; arguments as for [`copy_entry!`](crate::copy_entry)
/// (without `overlap`), with `above: extern "C" fn(dst, c: c_int, n, hint: u32) -> dst`.
#[macro_export]
macro_rules! set_entry {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        flag = $flag:path, general = $general:path, above = $above:path, hint = $hint:literal
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                ".p2align 6",
                "cmp byte ptr [rip + {flag}], 1",
                "jne 20f",
                "vpbroadcastb zmm16, esi",
                "mov rax, rdi",
                "cmp rdx, 64",
                "jb 1f",
                "cmp rdx, 128",
                "ja 3f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                ".p2align 4",
                "1:",
                "test rdx, rdx",
                "je 10f",
                "and edi, 4095",
                "cmp edi, 4032",
                "ja 11f",
                "mov r8, -1",
                "bzhi r8, r8, rdx",
                "kmovq k1, r8",
                "vmovdqu8 zmmword ptr [rax] {{k1}}, zmm16",
                "10:",
                "ret",
                // 1..=63 bytes whose 64-byte store would straddle a page: unmasked
                // stores from both ends.
                "11:",
                "mov rdi, rax",
                "cmp rdx, 32",
                "jae 12f",
                "cmp rdx, 16",
                "jae 13f",
                "vmovq rcx, xmm16",
                "cmp rdx, 8",
                "jae 14f",
                "cmp rdx, 4",
                "jae 15f",
                "mov r9, rdx",
                "shr r9, 1",
                "mov byte ptr [rdi], cl",
                "mov byte ptr [rdi + r9], cl",
                "mov byte ptr [rdi + rdx - 1], cl",
                "ret",
                "12:",
                "vmovdqu64 ymmword ptr [rdi], ymm16",
                "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm16",
                "ret",
                "13:",
                "vmovdqu64 xmmword ptr [rdi], xmm16",
                "vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm16",
                "ret",
                "14:",
                "mov qword ptr [rdi], rcx",
                "mov qword ptr [rdi + rdx - 8], rcx",
                "ret",
                "15:",
                "mov dword ptr [rdi], ecx",
                "mov dword ptr [rdi + rdx - 4], ecx",
                "ret",
                ".p2align 4",
                "3:",
                "cmp rdx, 256",
                "ja 4f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                ".p2align 4",
                "4:",
                "cmp rdx, 512",
                "ja 5f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                ".p2align 4",
                "5:",
                "cmp rdx, 2048",
                "ja 6f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
                "lea rcx, [rdi + rdx - 256]",
                "mov r8, rdi",
                "and r8, -64",
                "add r8, 256",
                "cmp r8, rcx",
                "jae 9f",
                ".p2align 4",
                "8:",
                "vmovdqa64 zmmword ptr [r8], zmm16",
                "vmovdqa64 zmmword ptr [r8 + 64], zmm16",
                "vmovdqa64 zmmword ptr [r8 + 128], zmm16",
                "vmovdqa64 zmmword ptr [r8 + 192], zmm16",
                "add r8, 256",
                "cmp r8, rcx",
                "jb 8b",
                "9:",
                "vmovdqu64 zmmword ptr [rcx], zmm16",
                "vmovdqu64 zmmword ptr [rcx + 64], zmm16",
                "vmovdqu64 zmmword ptr [rcx + 128], zmm16",
                "vmovdqu64 zmmword ptr [rcx + 192], zmm16",
                "ret",
                "6:",
                $hint,
                "jmp {above}",
                // AVX2 (flag 2): overlapping head/tail stores up to 256 bytes.
                ".p2align 4",
                "20:",
                "cmp byte ptr [rip + {flag}], 2",
                "jne {general}",
                "mov rax, rdi",
                "cmp rdx, 32",
                "ja 25f",
                "cmp rdx, 4",
                "jae 22f",
                "test rdx, rdx",
                "je 21f",
                "mov r9, rdx",
                "shr r9, 1",
                "mov byte ptr [rdi], sil",
                "mov byte ptr [rdi + r9], sil",
                "mov byte ptr [rdi + rdx - 1], sil",
                "21:",
                "ret",
                "22:",
                "vmovd xmm0, esi",
                "vpbroadcastb xmm0, xmm0",
                "cmp rdx, 16",
                "jae 24f",
                "cmp rdx, 8",
                "jae 23f",
                "vmovd dword ptr [rdi], xmm0",
                "vmovd dword ptr [rdi + rdx - 4], xmm0",
                "ret",
                "23:",
                "vmovq qword ptr [rdi], xmm0",
                "vmovq qword ptr [rdi + rdx - 8], xmm0",
                "ret",
                "24:",
                "vmovdqu xmmword ptr [rdi], xmm0",
                "vmovdqu xmmword ptr [rdi + rdx - 16], xmm0",
                "ret",
                "25:",
                "cmp rdx, 256",
                "ja {general}",
                "vmovd xmm0, esi",
                "vpbroadcastb ymm0, xmm0",
                "cmp rdx, 64",
                "ja 26f",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                "26:",
                "cmp rdx, 128",
                "ja 27f",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                "27:",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm0",
                "vmovdqu ymmword ptr [rdi + 64], ymm0",
                "vmovdqu ymmword ptr [rdi + 96], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 128], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 96], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
        }
    };
}
