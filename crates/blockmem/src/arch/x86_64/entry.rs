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
//! 128, two up to 512; a ladder from the smallest class took one more per class), each
//! ending in its own straight-line block:
//!
//! ```text
//!   flag clear (other CPU, or a mode set)   -> `general`, arguments untouched
//!   copy  n <= 32   one masked 32-byte load and store; n == 0 returns (a branch,
//!                   where `masked::copy_le64` redirects the access to the stack
//!                   branch-free: two instructions instead of five for every call)
//!         n <= 64   two 32-byte loads from both ends, then the stores
//!         n <= 128, 256, 512
//!                   2, 4 or 8 64-byte loads from both ends, then the stores
//!   set   broadcast once; n < 64 one masked 64-byte store (n == 0 stores nothing; a
//!                   store that would straddle a page goes to `above`, which takes
//!                   the ladder)
//!         n <= 128, 256, 512   2, 4 or 8 64-byte stores from both ends
//!   above 512       `above` (the rest of `dispatch::wide`: the 256-byte loop, then
//!                   the plan), with the hint in ecx: the C ABI's own, or zero (Auto)
//! ```
//!
//! Every load precedes every store in each block, so overlapping ranges are copied as
//! a move. Only zmm16-23, ymm16-17 and k1 are written: the upper halves of ymm0-15
//! stay clean and no `vzeroupper` is needed (glibc's evex functions do the same).
//! These are the same accesses, block for block, as `masked::copy_le512` and
//! `masked::set_le512`, which the Rust API inlines; the differential tests run every
//! size through the C entries too.

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, src, n[, hint]) -> dst` for
/// copies and moves of up to 512 bytes (see the module docs).
///
/// * `flag`: a static byte (an `AtomicU8`) that is nonzero only where the CPU has
///   AVX-512F/BW/VL and BMI2 (`dispatch::wide::available`) and the entry may take
///   its fast path;
/// * `general`: `extern "C" fn` with the entry's own signature, for a clear flag;
/// * `above`: `extern "C" fn(dst, src, n, hint: u32) -> dst` for sizes above 512
///   (`dispatch::wide::copy_above` and friends);
/// * `hint`: `"xor ecx, ecx"` for an entry without a hint argument (the hint is then
///   `Auto`), `""` for one whose fourth argument is the C ABI hint.
#[macro_export]
macro_rules! copy_entry {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        flag = $flag:path, general = $general:path, above = $above:path, hint = $hint:literal
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                "cmp byte ptr [rip + {flag}], 0",
                "je {general}",
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
                "2:",
                "vmovdqu64 ymm16, ymmword ptr [rsi]",
                "vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu64 ymmword ptr [rdi], ymm16",
                "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17",
                "ret",
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
                "6:",
                $hint,
                "jmp {above}",
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
        }
    };
}

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, c, n[, hint]) -> dst` for
/// sets of up to 512 bytes; arguments as for [`copy_entry!`](crate::copy_entry), with
/// `above: extern "C" fn(dst, c: c_int, n, hint: u32) -> dst`.
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
                "cmp byte ptr [rip + {flag}], 0",
                "je {general}",
                "vpbroadcastb zmm16, esi",
                "mov rax, rdi",
                "cmp rdx, 64",
                "jae 2f",
                "and edi, 4095",
                "cmp edi, 4032",
                "ja 7f",
                "mov r8, -1",
                "bzhi r8, r8, rdx",
                "kmovq k1, r8",
                "vmovdqu8 zmmword ptr [rax] {{k1}}, zmm16",
                "ret",
                "7:",
                "mov rdi, rax",
                "jmp 6f",
                "2:",
                "cmp rdx, 128",
                "ja 3f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                "3:",
                "cmp rdx, 256",
                "ja 4f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                "4:",
                "cmp rdx, 512",
                "ja 6f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                "6:",
                $hint,
                "jmp {above}",
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
        }
    };
}
