//! C entry points for CPUs with AVX-512BW, VL and BMI2, written whole in assembly: the
//! preload shim's `memcpy`, `memmove` and `memset` and the C ABI's `blockmem_copy`,
//! `blockmem_move` and `blockmem_set` are each one of these, defined by its crate with
//! [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry).
//!
//! A program calling one size in a loop is bound by the micro-ops and the taken
//! branches of each call (glibc's `__memmove_avx512_unaligned_erms` copies 64–128
//! bytes in eight instructions, none a taken branch); in such a loop one micro-op more
//! than glibc is 5–10% of the call. An entry written in Rust pays for the compiler's
//! choices: a test of its flag, a jump into a function compiled for AVX-512 (a function
//! without `#[target_feature]` cannot inline one with it), the register moves of its
//! other paths; 16–128-byte copies and sets in a tight loop ran at 0.6–0.9× glibc's
//! speed that way on a 2-vCPU Intel Xeon KVM guest. Here each size class is found by
//! a binary search ending in its own straight-line block. Copies test for less than 64
//! bytes first, then for more than 128, as glibc's functions do; sets test for more
//! than 128 first (see the trades below). Copies: 64–128 bytes with two compares and
//! no taken branch, 1–63 with one compare and one taken branch (1–15 bytes: one
//! masked access; 16–63: two taken branches), 129–256 with three compares and one
//! taken branch, 257–512 with two taken branches, 513–2112 (a loop) with three. Sets:
//! 64–128 bytes with two compares and no taken branch, 129–256 with one compare and
//! one taken branch, 1–63 with two compares and one taken branch (one masked store).
//!
//! ## Binding: the flag test leaves the call
//!
//! Which bodies may run is known only at load time (the CPU, `BLOCKMEM_MASK_FEATURES`,
//! a mode of the shim), and a test of a flag on every call (a compare of a byte in
//! memory and a branch: two micro-ops that cannot fuse) cost 16–128-byte copies in a
//! tight loop of plain calls 0.80–0.94× glibc's speed, 0.1 ns a call. An IFUNC would
//! let the dynamic linker choose once, but a preloaded library's IFUNC is resolved
//! while the libraries linked with `-z now` are relocated, before the preloaded library
//! itself, and the dynamic linker then prints "Relink ... for IFUNC symbol" into the
//! program's output (bash, through libtinfo, does this on Debian 12).
//!
//! So each entry's first instruction is a slot of one aligned qword that the
//! constructor rewrites once ([`bind`]), as a text relocation would. As assembled it is
//! a `jmp` to the entry's flag test, the offset of its AVX2 bodies and an `int3`; bound
//! to AVX-512 it becomes `lea rax, [rdi]` (the return value, one instruction of eight
//! bytes) and the call falls straight into the size search. Bound to AVX2, the entry
//! starts with its AVX2 bodies: the constructor copies them over the AVX-512 bodies
//! (which a CPU bound for AVX2 never runs), moving the `rel32` of their one jump to
//! `general` by the distance they move (a descriptor beside each entry, `NAME_avx2`,
//! gives their place, length and that jump), and writes the slot last. A `jmp` from
//! the slot to the bodies would cost every call a taken branch: a 64-byte copy in a C
//! loop took 2.44 ns that way against 2.17 with the same body at the entry and glibc's
//! AVX2 function's 2.16 (2-vCPU EPYC Zen 4 KVM guest, AVX-512 masked on both sides).
//! Unbound (before the constructor, with a mode set, where the kernel refuses to make
//! code writable, or with `BLOCKMEM_BIND=0`) the entry works as before: flag test,
//! then the bodies or `general`. One atomic store per slot, so a thread inside the
//! entry meanwhile runs one version or the other, both right.
//!
//! Where the code lies matters as much as what it is. Each entry starts a 4 KiB page
//! (its first directive, `.p2align 12`, sets its section's alignment, so the symbol
//! itself is aligned and nothing is executed as padding), and each size class's block,
//! from where a branch reaches it to its `ret`, lies within one 64-byte line (a longer
//! one starts a line; a test on the disassembly checks every entry). Unaligned, the
//! same instructions took 7 cycles a call for 33–128-byte copies against glibc's 4–6 (a
//! C loop calling through a function pointer, 2-vCPU Intel Xeon KVM guest); at 16-byte
//! boundaries, 4–5. AMD Zen 4 also counts lines: its op cache keeps one line's
//! instructions per entry, and a block that crosses into the next line costs a cycle
//! more per call. On a 2-vCPU EPYC KVM guest, sets of 1–63 bytes in a tight loop took
//! 2.44 ns with the block 48 bytes into a line against glibc's 2.16, and 2.17 once it
//! started the line; with blocks at 16-byte boundaries the shim's memset ran the fleet
//! distributions at 0.90–0.96× glibc's speed there, within lines at 0.97–1.00×
//! (`docs/results`, the EPYC's `doors`).
//!
//! And it counts pages. Aligned to lines only, an entry lay wherever the linker put
//! it, and `blockmem_memcpy` once began 64 bytes before the end of a page, its small
//! classes on the next: in the lab's `doors` (one size in a tight loop, the C ABI in
//! `memcpy`'s shape, 11 rounds, two runs) it copied 1–16 bytes at 1.00× glibc's speed
//! and 32 bytes at 0.92× (interval 0.91–0.92), where `blockmem_copy`, the same code
//! at 0xac0 into its page, ran 1.08–1.09× and 1.00×; moved to a page's start it ran
//! 1.08–1.09× and 1.00× too. The same code placed at eleven offsets in a page and
//! called in a C loop took 0.7 TSC ticks more per 1–32-byte copy (5.6 -> 6.3, 6.3 ->
//! 7.0) at the last two lines (0xf80, 0xfc0) in every one of six processes, and never
//! ran at the faster speed (3.5–4.3) that the other placements reached in some
//! processes and not in others (2-vCPU EPYC Zen 4 KVM guest). So no entry is left to
//! the linker's placement: a page each costs about 3 KiB of padding per entry in the
//! file and none in what runs. (Each at a 1 KiB boundary would also keep the bodies
//! off a page's end and the entries at four page offsets; its runs were no better, and
//! page starts give every build the same offset. The disassembly test also checks
//! that no block runs in a page's last two lines.)
//!
//! The trades, measured on that guest in tight loops of plain calls through the PLT
//! and with the lab's `doors` experiment:
//! * copies take one masked 16-byte access below 16 bytes and two overlapping 16-byte
//!   ones from 16 to 31, not one masked 32-byte access for all of 1–31: a masked
//!   access fetches every line its window spans, and a 32-byte window at a random
//!   address reaches into a line the bytes do not for about half of the small calls
//!   (see `masked`). With the lab's `doors` (21 rounds, two runs of each build,
//!   alternated) the fleet distributions on cold lines went from 0.98–0.99× glibc's
//!   speed (copies, geometric mean) and 0.96–0.99× (moves) to 1.03–1.06× and
//!   1.03–1.05×; hot, the test at 16 bytes mispredicts where sizes straddle it, and
//!   copies fell from 1.75× to 1.53–1.54×, moves from 1.80× to 1.53× (still far ahead:
//!   a glibc-like ladder below 64 bytes lost the random sizes, the shim's fleet
//!   geometric mean falling from 1.7× to 1.3×). Fixed sizes in a loop did not move.
//!   Exactly 32 bytes goes with the 32–63-byte pair of 32-byte accesses.
//! * copies below 16 bytes keep that one masked access although it costs them on cold
//!   lines. In `doors`' cold fixed sizes (4,000 calls at random offsets over 64 MiB,
//!   every line flushed first) copies of 1–8 bytes ran at 0.89–1.01× glibc's speed,
//!   through function pointers at 0.91–0.96×: there glibc's 1–15-byte calls run 3–7%
//!   faster on cold lines than through the PLT and ours do not (random 1–15-byte
//!   copies and moves 0.96–0.99× of glibc through the PLT either way; not explained),
//!   while from 16 bytes on both sides tie through both doors. Two costs add up,
//!   measured apart with the lab's driver: the window's stray line (1- and 4-byte
//!   copies at line offsets 52–60 ran at 0.75×, at offsets 0–40 at 0.98–1.00×; see
//!   `masked`), and the path's micro-ops, since a run of independent cold calls
//!   overlaps as many misses as its calls fit in the reorder window: testing `n < 16`
//!   first, three fused compares fewer on this path, took random 1–15-byte copies cold
//!   from 0.99× to 1.06×. Every remedy cost the hot calls more (fleet distributions
//!   replayed hot through the shim, 10 rounds, the shipped entries in the same runs):
//!   glibc's exact ladder (8–15, 4–7 and 1–3 bytes in general registers) took them
//!   from 1.14–1.96× to 1.05–1.64× (Memmove_5 1.85 -> 1.09) and 1–8-byte copies in a
//!   loop from 1.10× to 1.00×, and was no faster cold at 1–3 bytes (0.89×); `n < 16`
//!   first took Memcpy_Fleet from 1.76× to 1.48× and Memmove_Fleet from 1.73× to
//!   1.45×, and 32–128-byte copies in a loop to 0.91×; both windows placed in the
//!   bytes' lines by conditional moves (both start- or both end-aligned, twelve
//!   instructions more) cost 0–7% hot and were slower cold (0.85–0.90× where no window
//!   crossed a line, 0.87× where every one did); a `prefetchw` of the destination
//!   before the masked access, to start its line's fetch for ownership early, made them
//!   slower cold, not faster (random 1–15-byte copies at cold random addresses, the
//!   masked block alone in a C loop: 0.99× glibc's speed without it, 0.93× with it,
//!   and 1.05× for a block of glibc's ladder in the same loop, 41 rounds). And a load
//!   takes a masked store's bytes later than a plain store's: read back right after the call (`doors`'
//!   read-back table), copies of 1–8 bytes ran at 0.56–0.86× glibc's speed.
//!   2-vCPU EPYC Zen 4 KVM guest.
//! * 64–128-byte copies are the fall-through and the masked path is one taken branch
//!   away. With the masked path as the fall-through instead (1–31 bytes with no taken
//!   branch, 65–128 with two) the fleet distributions ran 1.84× glibc's speed through
//!   the shim and 1.82× through the C ABI, against 1.66× and 1.64× in this order; but
//!   128-byte copies in a tight loop ran at 0.92× (shim) and 0.86× (C ABI), and through
//!   function pointers, which is how programs built with `-fno-plt` call `memcpy`,
//!   64- and 128-byte copies at 0.76× and 0.63×. In this order every copy of 16–128
//!   bytes through the shim runs at 1.02–1.04×, through function pointers at
//!   0.86–1.37×: no size falls off a cliff, and the random sizes keep most of their
//!   lead.
//! * copies return on `n == 0` before the masked load: a masked load from an
//!   inaccessible page costs a fault-suppression assist of hundreds of cycles even
//!   with every byte masked out, and `memcpy(d, NULL, 0)` is common.
//! * a set below 64 bytes stores one masked 64-byte window placed in the lines its
//!   bytes lie in (`masked::set_masked`): the destination's own line when the bytes
//!   fit in it, else the 64 bytes ending with the last one. glibc's memset stores its
//!   window at the destination, which reaches into the next line for most small sets.
//!   With `doors` as above, the memset distributions on cold lines went from 0.95–1.00×
//!   to 1.02–1.03× (geometric mean), hot stayed at 0.98–1.00×, and 1–32-byte sets in a
//!   loop through the shim went from 0.91× to 1.00× (the page test they no longer
//!   need: the window crosses a page only where the bytes do). The cost: the window's
//!   conditional move delays the store's address and mask, and a load that reads the
//!   bytes right after the call waits for them: in `doors`' read-back table 1–63-byte
//!   sets ran at 0.79–0.83× glibc's speed (in a C loop, 9.3–9.7 ns a set and read
//!   against 7.1–7.5 with the window at the destination and 7.9 with the line alone,
//!   no conditional move, wrong where the bytes cross a line).
//! * sets test for more than 128 bytes before they test for less than 64, the reverse
//!   of glibc's functions (copies did too; see the next point). Where sizes come at
//!   random, each test mispredicts about as often as its rarer side comes, so a search
//!   pays, per call, the sum over its tests of the share of calls reaching the test
//!   times the rarer side's share among them. With the small sets the common class (S,
//!   below 64 bytes), then the middle (M, 64–128) and the rest (L), glibc's order pays
//!   (M + L) + min(M, L), this one L + M: min(M, L) fewer mispredictions a call, 0.07
//!   for Memset_0, 0.09 for Memset_Fleet, 0.21 for Memset_4 (the repository's
//!   distributions, assuming a predictor that learns only each test's bias). A small
//!   set pays a not-taken compare more, a set above 128 bytes one less. With `doors`
//!   (21 rounds, two runs of each order alternated, 2-vCPU EPYC Zen 4 KVM guest) the
//!   memset distributions hot went from 0.96–1.05× glibc's speed (geometric mean
//!   1.00–1.01 in every door) to 1.02–1.11× (1.06–1.07), and one size in a tight loop
//!   stayed at 0.98–1.03× from 1 byte to 4 KiB. The copy and move distributions, the
//!   same way: hot 1.11–1.97× -> 1.12–2.03× (geometric mean 1.49–1.54 -> 1.54–1.58),
//!   every one faster but Memcpy_0 (half its calls at 513–2048 bytes, where the model
//!   loses 0.04 a call: 1.45–1.48× -> 1.40–1.47×); one size in a loop 0.95× or above
//!   either way.
//! * copies test for less than 64 bytes first, as glibc's functions do, and give up
//!   that gain: on a 2-vCPU AMD EPYC Zen 5 (family 0x1a) KVM guest, copies of 64 and
//!   128 bytes in a tight loop ran at 0.87-0.97× glibc's speed through every door (most
//!   0.87-0.91×) with the other order and at 0.99-1.01× with this one (`doors`, 21
//!   rounds, two runs of each alternated; the same in twelve more runs of four builds),
//!   with the same two loads and two stores behind either order (glibc's path; in a C
//!   loop at sixteen placements both orders tied with it: not explained). The fleet
//!   distributions' geometric mean went from 1.33-1.38× to 1.30-1.34× glibc's speed hot
//!   per door, and from 1.04-1.07× to 1.06-1.09× cold; 256-byte copies in a loop stayed
//!   at 1.05-1.20×. Sets show no such cliff there (64 and 128 bytes at 0.99-1.01× in
//!   every run).
//! * sets of 513-2048 bytes store each line past the first 256 bytes once: whole
//!   lines two a step, the line before the last, the last line's bytes with one masked
//!   store, where the 256-byte blocks and four unaligned stores of the last 256 bytes
//!   before them stored up to four lines twice and split four across two lines. On
//!   lines in memory a call costs about one store-queue entry per store, whatever line
//!   it falls on (a second store to a line already on its way costs as much as another
//!   line; so does a masked store with no byte selected): on a 2-vCPU AMD EPYC Zen 5
//!   KVM guest, sets at 4,000 random addresses over 64 MiB of flushed lines
//!   (`scripts/workloads/cold_sets.c`, medians of 25) ran at 1.03-1.25x glibc's speed
//!   from 513 bytes to 2 KiB this way, at 0.96-1.02x the old way; with `doors` (five
//!   runs of each build), 1 and 2 KiB sets scattered cold went from 0.97-1.01x to
//!   1.02-1.09x, and the memset distributions cold from 0.98-1.05x to 0.97-1.12x
//!   through the shim and from 0.98-1.04x to 0.99-1.07x through the C ABI (their lowest
//!   cells now those whose sets are mostly of 129-512 bytes; below). In cache, in a C
//!   loop, 520 bytes to 2 KiB took 6.7-21.5 TSC ticks a call, glibc 7.9-22.5, the old
//!   way 6.6-21.2. Below 513 bytes the same scheme needs a branch or a loop per line
//!   (the line count varies with the offset), and it was faster cold (`cold_sets.c`'s
//!   loop storing each line once: 1.06-1.38x glibc at 140-400 bytes, but 0.90-0.93x at
//!   256 and 512) but not in cache (a set of 512 bytes in a loop: 7.3 ticks, glibc
//!   5.5; 200-256 bytes 0.86x): the 129-512-byte blocks keep their straight-line
//!   stores, as many as glibc's, and tie it cold. Measured and dropped: one store fewer
//!   where the bytes allow (129-192 bytes in three stores, 257-384 in six, a test
//!   more each): the memset distributions cold at 1.00-1.06x through the shim, but hot
//!   Memset_2 at 0.99x and 256-byte sets in a loop at 0.89x.
//! * sets below 64 bytes do not test for zero, as glibc's do not: an empty masked
//!   store costs the assist only where the page is not writable (`memset(NULL, c, 0)`
//!   or an untouched zero page: 78 ns, as glibc's; 0.9 ns on a written page), while the
//!   test cost every small set a micro-op (8% in a loop of random 1–32-byte sets) and
//!   a misprediction where zeros come at random (0.68× glibc's speed for 0–32 bytes).
//!   A zero-byte set's window is the destination's line, in its page.
//!
//! ```text
//!   unbound slot: flag 1 -> after the slot; flag 2 -> AVX2 bodies; else `general`
//!   copy  n < 64 first, then n > 128;
//!         64 <= n <= 128  two 64-byte loads from both ends, then the stores
//!         n < 16    n == 0 returns; one masked 16-byte load and store
//!         n < 32    two 16-byte loads from both ends, then the stores
//!         n < 64    two 32-byte loads from both ends, then the stores
//!         n <= 256, 512
//!                   4 or 8 64-byte loads from both ends, then the stores
//!   set   broadcast once; n > 128 first, then n < 64;
//!         64 <= n <= 128  two 64-byte stores from both ends
//!         n < 64    one masked 64-byte store, its window in the bytes' lines
//!         n <= 256, 512   4 or 8 64-byte stores from both ends, the first 2 or 4 stored
//!                   before the test for the next class (as glibc's memset)
//!   513..=2112      copy: the first 64 and last 256 bytes loaded first, 256-byte blocks
//!                   to 64-byte-aligned destinations, the ends stored last (ranges
//!                   that share a byte go to `above`); up to glibc's `rep movsb`
//!                   threshold on CPUs with FSRM (`masked::COPY_WIDE_MAX`)
//!   513..=2048      set: the first 256 bytes, then one store per line, the last line's
//!                   bytes masked; as `masked::copy_le2k`/`set_le2k`
//!   above those     `above` (the rest of `dispatch::wide`: the plan), with the hint
//!                   in ecx: the C ABI's own, or zero (Auto)
//! ```
//!
//! The AVX2 bodies (a CPU without AVX-512BW) are overlapping head/tail pairs (1–3,
//! 4–7, 8–15 bytes in general registers, 16–31 in xmm, up to 256 in ymm), then up to
//! 2,112 bytes (copies) or 2 KiB (sets) a loop of 128-byte blocks to 32-byte-aligned
//! destinations between the ends (sets: 128 bytes at each end), each ending in
//! `vzeroupper`; above those sizes, and copies
//! of overlapping ranges above 256 bytes, the general path (through a `vzeroupper`).
//! Before the loop was there, every call above 256 bytes paid the general path's
//! dispatch (139 instructions for a 300-byte copy) and ran at 0.27–0.5× glibc's AVX2
//! speed from 512 bytes to 1 KiB (AVX-512 masked on a 2-vCPU Intel Xeon KVM guest).
//!
//! Their search follows glibc's AVX2 functions: 32–64 bytes with no taken branch,
//! 65–128 and 257–2112 with two, 129–256 with one (sets: 65–128 with one, 129–256 with
//! two, as glibc's memset), and below 32 bytes glibc's ladder (two taken branches, one
//! for 1–3 bytes). The trade, measured with the lab's `doors` (AVX-512 masked on both
//! sides, 2-vCPU EPYC Zen 4 KVM guest, 11 rounds, two runs each, ratio glibc / blockmem
//! through the shim): with sizes up to 32 bytes as the fall-through instead (each with
//! at most one taken branch), the fleet distributions ran at 1.13× (geometric mean,
//! hot) and the memset ones at 0.98–1.08×, but one size in a tight loop at 0.85–0.92×
//! from 32 to 256 bytes (a taken branch more than glibc at 32–64 bytes, two at 256).
//! In this order the fleet runs at 1.11×, the memset distributions at 0.97–1.03×, and
//! one size in a loop at 1.00× or above from 1 byte to 4 KiB but for single cells of
//! a cycle. Measured and dropped: 16–31 bytes with one taken branch and 4–15 with three
//! (fleet 1.11–1.12×, but 4- and 8-byte sizes in a loop at 0.92×, 0.85–0.87× on a
//! 16-vCPU Intel Xeon KVM guest), and a balanced search below 32 bytes (fleet 1.09×,
//! memsets down to 0.94×).
//!
//! Every load precedes every store in each block up to 512 bytes (AVX-512) or 256
//! (AVX2), so overlapping ranges are copied as a move; the loops take disjoint ranges
//! only. The AVX-512 bodies write only zmm16-24, ymm16-17, xmm16-17 and k1 (and rcx,
//! r8-r10): the upper halves of ymm0-15 stay clean and no `vzeroupper` is needed
//! (glibc's evex functions do the same). The copies are the same accesses, block for
//! block, as `masked::copy_le512`, which the Rust API inlines; the order of the tests
//! differs, and the sets' test of zero. The
//! differential tests run every size through the C entries too, and every size to 160
//! bytes against an inaccessible page (`pagedge`).

/// The first lines of every entry's assembly: the page alignment (see the module
/// docs), the entry's own address under a hidden name (for
/// [`entry_address!`](crate::entry_address): the exported name may be interposed, and
/// taking its address would need a GOT entry), and the binding slot, one aligned qword (see [`bind`]): `jmp rel32` to the flag test
/// at local label 19, the offset of the AVX2 bodies at label 30, `int3`. The bodies
/// for AVX-512 follow at label 40.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_head {
    ($name:ident) => {
        concat!(
            ".p2align 12\n.globl ",
            stringify!($name),
            "_slot\n.hidden ",
            stringify!($name),
            "_slot\n",
            stringify!($name),
            "_slot:\n98:\n.byte 0xe9\n.long 19f - . - 4\n",
            ".short 30f - 98b\n.byte 0xcc\n40:"
        )
    };
}

/// Where an unbound slot jumps (local label 19): flag 1 goes to the AVX-512 bodies
/// (label 40) and flag 2 falls into the AVX2 bodies (label 30), each with the return
/// value in rax; any other value takes `{general}`. Uses the entry's `{flag}` and
/// `{general}` operands.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_flag_test {
    () => {
        concat!(
            ".p2align 4\n19:\ncmp byte ptr [rip + {flag}], 1\njne 20f\nmov rax, rdi\n",
            "jmp 40b\n20:\ncmp byte ptr [rip + {flag}], 2\njne {general}\n.p2align 6\n30:\n",
            // `mov rax, rdi` in its 8B form, which marks a slot bound to AVX2.
            ".byte 0x48, 0x8b, 0xc7"
        )
    };
}

/// The end of an entry's AVX2 bodies: their one jump out (label 35: `vzeroupper`, then
/// `{general}`, with the upper halves clean for the general path's SSE code), and the
/// descriptor of the bodies, [`Avx2Bodies`], under the hidden name `NAME_avx2` in a
/// read-only section: their offset from the entry (label 30), their length (to label
/// 39, after the jump out) and the end of that jump (label 81). Every value is a
/// difference of two labels of the entry, so it needs no relocation; `bind` moves the
/// jump with the bodies.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_avx2_bodies {
    ($name:ident) => {
        concat!(
            "35:\nvzeroupper\njmp {general}\n81:\n39:\n.pushsection .rodata.",
            stringify!($name),
            "_avx2,\"a\",@progbits\n.p2align 1\n.globl ",
            stringify!($name),
            "_avx2\n.hidden ",
            stringify!($name),
            "_avx2\n",
            stringify!($name),
            "_avx2:\n.short 30b - 98b, 39b - 30b, 81b - 30b\n.popsection"
        )
    };
}

/// Defines a naked C entry `unsafe extern "C" fn NAME(dst, src, n[, hint]) -> dst` for
/// copies and moves of up to 2112 bytes (see the module docs).
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
            $flag, $general, $above, $hint, $crate::copy_entry!(@check $overlap),
            $crate::copy_entry!(@check_avx2 $overlap));
    };
    (@check disjoint) => { "" };
    (@check_avx2 disjoint) => { "" };
    (@check_avx2 possible) => {
        // As `@check possible`, for the AVX2 loop: overlapping ranges take `general`
        // (through label 35, which cleans the upper halves first).
        "mov rcx, rdi\nsub rcx, rsi\ncmp rcx, rdx\njb 35f\nmov rcx, rsi\nsub rcx, rdi\ncmp rcx, rdx\njb 35f"
    };
    (@check possible) => {
        // 513..=2112 bytes stay here only when the ranges share no byte (the loop
        // interleaves loads and stores); overlapping ones go to `above`, a move.
        "mov rcx, rdi\nsub rcx, rsi\ncmp rcx, rdx\njb 8f\nmov rcx, rsi\nsub rcx, rdi\ncmp rcx, rdx\njb 8f"
    };
    (
        @ $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),*);
        $flag:path, $general:path, $above:path, $hint:literal, $overlap_check:expr,
        $overlap_check_avx2:expr
    ) => {
        $(#[$meta])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($arg: $ty),*) -> *mut ::core::ffi::c_void {
            ::core::arch::naked_asm!(
                $crate::entry_head!($name),
                // Below 64 first, then above 128 (see the module docs).
                "cmp rdx, 64",
                "jb 1f",
                "cmp rdx, 128",
                "ja 4f",
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17",
                "ret",
                ".p2align 6",
                "1:",
                "cmp edx, 32",
                "jae 2f",
                "cmp edx, 16",
                "jae 12f",
                "test edx, edx",
                "je 3f",
                "mov r9d, -1",
                "bzhi r9d, r9d, edx",
                "kmovw k1, r9d",
                "vmovdqu8 xmm16 {{k1}}{{z}}, xmmword ptr [rsi]",
                "vmovdqu8 xmmword ptr [rdi] {{k1}}, xmm16",
                "3:",
                "ret",
                // 32..=63 and 16..=31 share a line.
                ".p2align 6",
                "2:",
                "vmovdqu64 ymm16, ymmword ptr [rsi]",
                "vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu64 ymmword ptr [rdi], ymm16",
                "vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17",
                "ret",
                "12:",
                "vmovdqu64 xmm16, xmmword ptr [rsi]",
                "vmovdqu64 xmm17, xmmword ptr [rsi + rdx - 16]",
                "vmovdqu64 xmmword ptr [rdi], xmm16",
                "vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm17",
                "ret",
                ".p2align 6",
                "4:",
                "cmp rdx, 256",
                "ja 5f",
                "vmovdqu64 zmm16, zmmword ptr [rsi]",
                "vmovdqu64 zmm17, zmmword ptr [rsi + 64]",
                "vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 128]",
                "vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 64]",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm17",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm18",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm19",
                "ret",
                ".p2align 6",
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
                ".p2align 6",
                "6:",
                "cmp rdx, 2112",
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
                // Unbound: the flag test. AVX-512 continues after the slot, AVX2 at 30
                // (see the module docs for the order): every load before the first store
                // up to 256 bytes; a loop to 2,112 bytes for disjoint ranges; else `general`.
                $crate::entry_flag_test!(),
                "cmp rdx, 32",
                "jb 21f",
                "vmovdqu ymm0, ymmword ptr [rsi]",
                "cmp rdx, 64",
                "ja 25f",
                "vmovdqu ymm1, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm1",
                "vzeroupper",
                "ret",
                // n < 32: glibc's ladder (32-bit compares, whose shorter encodings keep
                // this block within one line).
                ".p2align 6",
                "21:",
                "cmp edx, 16",
                "jae 24f",
                "cmp edx, 8",
                "jae 23f",
                "cmp edx, 4",
                "jae 22f",
                "test edx, edx",
                "je 28f",
                "mov r9, rdx",
                "shr r9, 1",
                "movzx r8d, byte ptr [rsi]",
                "movzx r10d, byte ptr [rsi + r9]",
                "movzx r11d, byte ptr [rsi + rdx - 1]",
                "mov byte ptr [rdi], r8b",
                "mov byte ptr [rdi + r9], r10b",
                "mov byte ptr [rdi + rdx - 1], r11b",
                "28:",
                "ret",
                ".p2align 6",
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
                // Above 64 bytes; ymm0 holds the first 32.
                ".p2align 6",
                "25:",
                "cmp rdx, 256",
                "ja 32f",
                "vmovdqu ymm1, ymmword ptr [rsi + 32]",
                "cmp rdx, 128",
                "jbe 26f",
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
                ".p2align 6",
                "26:",
                "vmovdqu ymm2, ymmword ptr [rsi + rdx - 64]",
                "vmovdqu ymm3, ymmword ptr [rsi + rdx - 32]",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm1",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm2",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm3",
                "vzeroupper",
                "ret",
                ".p2align 6",
                "32:",
                "cmp rdx, 2112",
                "ja 35f",
                $overlap_check_avx2,
                "vmovdqu ymm8, ymmword ptr [rsi + rdx - 128]",
                "vmovdqu ymm9, ymmword ptr [rsi + rdx - 96]",
                "vmovdqu ymm10, ymmword ptr [rsi + rdx - 64]",
                "vmovdqu ymm11, ymmword ptr [rsi + rdx - 32]",
                "lea r9, [rdi + rdx - 128]",
                "mov r8d, edi",
                "and r8d, 31",
                "neg r8",
                "add r8, 32",
                "lea rcx, [rdi + r8]",
                "lea r10, [rsi + r8]",
                "cmp rcx, r9",
                "jae 34f",
                "33:",
                "vmovdqu ymm1, ymmword ptr [r10]",
                "vmovdqu ymm2, ymmword ptr [r10 + 32]",
                "vmovdqu ymm3, ymmword ptr [r10 + 64]",
                "vmovdqu ymm4, ymmword ptr [r10 + 96]",
                "vmovdqa ymmword ptr [rcx], ymm1",
                "vmovdqa ymmword ptr [rcx + 32], ymm2",
                "vmovdqa ymmword ptr [rcx + 64], ymm3",
                "vmovdqa ymmword ptr [rcx + 96], ymm4",
                "add rcx, 128",
                "add r10, 128",
                "cmp rcx, r9",
                "jb 33b",
                "34:",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [r9 + 0], ymm8",
                "vmovdqu ymmword ptr [r9 + 32], ymm9",
                "vmovdqu ymmword ptr [r9 + 64], ymm10",
                "vmovdqu ymmword ptr [r9 + 96], ymm11",
                "vzeroupper",
                "ret",
                // Out (label 35) above 2,112 bytes and for overlapping ranges above 256 bytes.
                $crate::entry_avx2_bodies!($name),
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
                $crate::entry_head!($name),
                "vpbroadcastb zmm16, esi",
                // Above 128 first, then below 64: fewer mispredicted tests where sizes
                // come at random (see the module docs).
                "cmp rdx, 128",
                "ja 3f",
                "cmp rdx, 64",
                "jb 1f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                // 1..=63 bytes: one masked store whose window lies in the lines the
                // bytes lie in (see `masked::set_masked`): the later of dst's line and
                // dst + n - 64 (a signed compare: user addresses are below 2^47, and
                // the second is negative only for a dst in the first line, where the
                // line wins), the mask shifted by dst - window; rax holds dst.
                ".p2align 6",
                "1:",
                "lea rcx, [rdi + rdx - 64]",
                "and rdi, -64",
                "cmp rdi, rcx",
                "cmovl rdi, rcx",
                "mov ecx, eax",
                "sub ecx, edi",
                "mov r8, -1",
                "bzhi r8, r8, rdx",
                "shlx r8, r8, rcx",
                "kmovq k1, r8",
                "vmovdqu8 zmmword ptr [rdi] {{k1}}, zmm16",
                "ret",
                // Above 128 bytes each block stores its head before it tests for the
                // next size class, as glibc's memset does: the stores are on the path
                // whichever way the test goes, so a mispredicted test (random sizes)
                // does not delay them.
                ".p2align 6",
                "3:",
                "cmp rdx, 2048",
                "ja 6f",
                "vmovdqu64 zmmword ptr [rdi], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 64], zmm16",
                "cmp rdx, 256",
                "ja 4f",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                ".p2align 6",
                "4:",
                "vmovdqu64 zmmword ptr [rdi + 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + 192], zmm16",
                "cmp rdx, 512",
                "ja 5f",
                "vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16",
                "vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16",
                "ret",
                // 513..=2048: the first 256 bytes are stored. The rest with one store
                // per line (see the module docs): whole lines from the one holding
                // byte 256 (r8), two a step (at least one step: the last line, r9, is
                // 192 bytes or more past r8), then the line before the last (a line
                // the steps may have stored), then the last line's bytes with one
                // masked store.
                ".p2align 6",
                "5:",
                "lea rcx, [rdi + rdx - 1]",
                "lea r8, [rdi + 256]",
                "and r8, -64",
                "mov r9, rcx",
                "and r9, -64",
                "lea r10, [r9 - 128]",
                "8:",
                "vmovdqa64 zmmword ptr [r8], zmm16",
                "vmovdqa64 zmmword ptr [r8 + 64], zmm16",
                "add r8, 128",
                "cmp r8, r10",
                "jbe 8b",
                "vmovdqa64 zmmword ptr [r9 - 64], zmm16",
                // ~last & 63 = 63 - (last & 63): the mask of the last line's bytes.
                "not ecx",
                "mov r10, -1",
                "shrx r10, r10, rcx",
                "kmovq k1, r10",
                "vmovdqu8 zmmword ptr [r9] {{k1}}, zmm16",
                "ret",
                "6:",
                $hint,
                "jmp {above}",
                // Room: binding to AVX2 copies the AVX2 bodies over the AVX-512 ones,
                // which must be at least as long (`bind` checks; never executed).
                ".skip 64, 0xcc",
                // Unbound: the flag test. AVX-512 continues after the slot, AVX2 at 30
                // (the order of the copy's, the broadcast to ymm only from 32 bytes); a
                // loop to 2 KiB.
                $crate::entry_flag_test!(),
                "vmovd xmm0, esi",
                "cmp rdx, 32",
                "jb 21f",
                "vpbroadcastb ymm0, xmm0",
                "cmp rdx, 64",
                "ja 25f",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                // n < 32, as the copy's.
                ".p2align 6",
                "21:",
                "vpbroadcastb xmm0, xmm0",
                "cmp edx, 16",
                "jae 24f",
                "cmp edx, 8",
                "jae 23f",
                "cmp edx, 4",
                "jae 22f",
                "test edx, edx",
                "je 28f",
                "mov r9, rdx",
                "shr r9, 1",
                "mov byte ptr [rdi], sil",
                "mov byte ptr [rdi + r9], sil",
                "mov byte ptr [rdi + rdx - 1], sil",
                "28:",
                "ret",
                ".p2align 6",
                "22:",
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
                // Above 64 bytes each block stores its head before it tests for the next class.
                ".p2align 6",
                "25:",
                "cmp rdx, 2048",
                "ja 35f",
                "vmovdqu ymmword ptr [rdi], ymm0",
                "vmovdqu ymmword ptr [rdi + 32], ymm0",
                "cmp rdx, 128",
                "ja 26f",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                ".p2align 6",
                "26:",
                "vmovdqu ymmword ptr [rdi + 64], ymm0",
                "vmovdqu ymmword ptr [rdi + 96], ymm0",
                "cmp rdx, 256",
                "ja 32f",
                "vmovdqu ymmword ptr [rdi + rdx - 128], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 96], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 64], ymm0",
                "vmovdqu ymmword ptr [rdi + rdx - 32], ymm0",
                "vzeroupper",
                "ret",
                // 257..=2048 bytes (larger ones left at 25): the first 128 are stored;
                // the last 128 and aligned 128-byte blocks between.
                ".p2align 6",
                "32:",
                "lea rcx, [rdi + rdx - 128]",
                "mov r8, rdi",
                "and r8, -32",
                "add r8, 128",
                "cmp r8, rcx",
                "jae 34f",
                "33:",
                "vmovdqa ymmword ptr [r8], ymm0",
                "vmovdqa ymmword ptr [r8 + 32], ymm0",
                "vmovdqa ymmword ptr [r8 + 64], ymm0",
                "vmovdqa ymmword ptr [r8 + 96], ymm0",
                "add r8, 128",
                "cmp r8, rcx",
                "jb 33b",
                "34:",
                "vmovdqu ymmword ptr [rcx], ymm0",
                "vmovdqu ymmword ptr [rcx + 32], ymm0",
                "vmovdqu ymmword ptr [rcx + 64], ymm0",
                "vmovdqu ymmword ptr [rcx + 96], ymm0",
                "vzeroupper",
                "ret",
                // Out (label 35) above 2 KiB.
                $crate::entry_avx2_bodies!($name),
                flag = sym $flag,
                general = sym $general,
                above = sym $above,
            )
        }
    };
}

/// The address of the entry `$name` defined in this crate with
/// [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry), for
/// [`bind`]: read from its hidden alias, so that no GOT entry or dynamic relocation
/// names the exported function (which another object could also define).
#[macro_export]
macro_rules! entry_address {
    ($name:ident) => {
        $crate::entry_symbol!(concat!(stringify!($name), "_slot"), u8)
    };
}

/// The entry `$name` (see [`entry_address!`](crate::entry_address)) with the
/// descriptor of its AVX2 bodies, as [`bind`] takes it.
#[macro_export]
macro_rules! entry {
    ($name:ident) => {
        $crate::arch::x86_64::entry::Entry {
            code: $crate::entry_address!($name),
            avx2: $crate::entry_symbol!(
                concat!(stringify!($name), "_avx2"),
                $crate::arch::x86_64::entry::Avx2Bodies
            ),
        }
    };
}

/// The address of a hidden symbol of this object, as `*const $ty`.
#[doc(hidden)]
#[macro_export]
macro_rules! entry_symbol {
    ($sym:expr, $ty:ty) => {{
        let p: *const $ty;
        // SAFETY: computes an address; reads and writes nothing.
        unsafe {
            ::core::arch::asm!(
                concat!("lea {0}, [rip + ", $sym, "]"),
                out(reg) p,
                options(pure, nomem, nostack, preserves_flags),
            )
        };
        p
    }};
}

/// Where an entry's AVX2 bodies lie (emitted beside each entry by its macro, in a
/// read-only section): what [`bind`] needs to copy them to the entry's start.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2Bodies {
    /// Their offset from the entry (label 30, a 64-byte line's start, after the flag
    /// test).
    pub at: u16,
    /// Their length, to the end of their jump out.
    pub len: u16,
    /// The end of the `rel32` of their one jump out (to `general`), from the bodies.
    pub exit: u16,
}

/// An assembly entry, for [`bind`]: made by [`entry!`](crate::entry).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The entry's first byte (its binding slot).
    pub code: *const u8,
    /// The descriptor of its AVX2 bodies.
    pub avx2: *const Avx2Bodies,
}

/// How an entry's first instruction, its binding slot, leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A jump to the flag test: as the assembler wrote it (before the constructor, with
    /// a mode set, on a CPU without AVX2, or where binding was refused or turned off).
    Flag,
    /// `lea rax, [rdi]`: the AVX-512 bodies run with no test.
    Avx512,
    /// The AVX2 bodies, copied to the entry's start: they run with no test and no jump.
    Avx2,
}

/// Why [`bind`] left the entries as they were, or how it left them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// A slot is not an entry's slot whose flag test reads the given flag, or an
    /// entry's AVX2 descriptor does not describe its code (the pointer is not one of
    /// these entries, or another object defines the symbol).
    Unrecognised,
    /// `mprotect` refused to make a page of code writable (errno): a kernel or
    /// security policy that forbids writable code. The entries keep their flag test.
    Protect(i32),
    /// The entries are bound, but `mprotect` refused to make their pages read-only
    /// again (errno): they stay writable.
    Writable(i32),
}

/// The slot bound to the AVX-512 bodies: `lea rax, [rdi + riz*1 + 0]`, one instruction
/// of eight bytes, which sets the return value as the flag test's path does.
pub const SLOT_AVX512: [u8; 8] = [0x48, 0x8d, 0x84, 0x27, 0, 0, 0, 0];

/// The first instruction of the AVX2 bodies, and so of an entry bound to them:
/// `mov rax, rdi` in its 8B form, which assemblers do not choose for it (glibc's
/// functions start with the 89 form), so that a slot bound to AVX2 can be told from
/// other code.
pub const AVX2_FIRST: [u8; 3] = [0x48, 0x8b, 0xc7];

/// `jmp rel32`, the first byte of an unbound slot.
const JMP_REL32: u8 = 0xe9;
/// The last byte of an unbound slot (never executed).
const INT3: u8 = 0xcc;

/// What `slot` binds its entry to, or `None` for bytes that are no entry's slot.
pub fn binding_of(slot: [u8; 8]) -> Option<Binding> {
    if slot == SLOT_AVX512 {
        Some(Binding::Avx512)
    } else if slot[..3] == AVX2_FIRST {
        Some(Binding::Avx2)
    } else if slot[0] == JMP_REL32 && slot[7] == INT3 {
        Some(Binding::Flag)
    } else {
        None
    }
}

/// Reads an entry's slot.
///
/// # Safety
/// `entry` is the address of an assembly entry defined with
/// [`copy_entry!`](crate::copy_entry) or [`set_entry!`](crate::set_entry).
pub unsafe fn slot_of(entry: *const u8) -> [u8; 8] {
    // SAFETY: an entry starts a 64-byte line of code, readable; the caller's contract.
    unsafe { core::ptr::read_volatile(entry.cast::<u64>()) }.to_le_bytes()
}

/// Byte `k` of the AVX2 bodies `d` of the code at `entry` as they run from the entry's
/// start: their own bytes, with the `rel32` of their jump out moved by `d.at`, the
/// distance they move (a relative jump keeps its target from the new place).
///
/// # Safety
/// `entry + d.at .. entry + d.at + d.len` is readable, and the exit lies in
/// `4..=d.len`.
unsafe fn relocated(entry: *const u8, d: &Avx2Bodies, k: usize) -> u8 {
    // SAFETY: the caller's contract.
    let byte = |i: usize| unsafe { core::ptr::read_volatile(entry.add(usize::from(d.at) + i)) };
    let e = usize::from(d.exit);
    if (e - 4..e).contains(&k) {
        let rel = i32::from_le_bytes([byte(e - 4), byte(e - 3), byte(e - 2), byte(e - 1)]);
        return rel.wrapping_add(i32::from(d.at)).to_le_bytes()[k + 4 - e];
    }
    byte(k)
}

/// Rewrites the start of each of `entries` so that it runs the bodies for `level`
/// (`dispatch::wide::level()`, after `flag` holds it) instead of testing `flag` on
/// every call: the byte compare and branch cost two of the eight to twelve
/// instructions of a small call, which a program calling one size in a loop pays in
/// full. An IFUNC would do the same without writing code, but a preloaded library's
/// IFUNC cannot be bound without the dynamic linker's "Relink" message (see the module
/// docs); this is a text relocation, applied by the constructor.
///
/// For AVX-512 the slot becomes [`SLOT_AVX512`] and the call falls into the bodies
/// after it. For AVX2 the AVX2 bodies are copied over the AVX-512 bodies, which such
/// a CPU never runs (its flag sends every unbound call to the AVX2 bodies), their jump
/// out moved by the distance the code moves; the slot is written last. A jump from the
/// slot to the AVX2 bodies would cost every call a taken branch: in a C loop on a
/// 2-vCPU EPYC (Zen 4) KVM guest, with glibc and blockmem both on their AVX2
/// functions, a 64-byte copy took 2.44 ns through such a jump, 2.17 with the same body
/// at the entry, glibc 2.16.
///
/// Each slot is one aligned qword, replaced with one atomic store, so a thread running
/// the entry meanwhile executes either the flag test or the bound code, both right.
/// Pages are made writable (and stay executable) only around the writes. Before
/// anything is written, every slot must be an entry's slot whose flag test (decoded
/// from the jump) reads `flag`, and every AVX2 descriptor must describe its entry's
/// code and fit before its flag test; otherwise nothing is written.
///
/// Returns the binding every entry now has ([`Binding::Flag`] for a level without one).
///
/// # Safety
/// Each entry is one defined with `copy_entry!`/`set_entry!` (made by
/// [`entry!`](crate::entry)) whose `flag` is the static at `flag`, which holds
/// `level`; `level` is one the CPU can run (`dispatch::wide::level()`). Call it from a
/// constructor, before threads.
#[cfg(target_os = "linux")]
pub unsafe fn bind(entries: &[Entry], flag: *const u8, level: u8) -> Result<Binding, BindError> {
    use core::sync::atomic::{AtomicU64, Ordering};
    const PAGE: usize = 4096;
    const SYS_MPROTECT: usize = 10;
    const READ_EXEC: usize = 1 | 4;
    const READ_WRITE_EXEC: usize = 1 | 2 | 4;
    // Every entry is checked before anything is written (no buffer: the plan of an
    // entry is recomputed when it is written, from the same bytes).
    let mut result = Binding::Flag;
    for e in entries {
        // SAFETY: the caller's contract.
        match unsafe { plan(e, flag, level) }? {
            Plan::Write { binding, .. } | Plan::Bound(binding) => result = binding,
            Plan::Nothing => return Ok(Binding::Flag),
        }
    }
    // The bytes a binding to `level` writes from an entry's start, the slot or the AVX2
    // bodies: from the level and the descriptor alone, so that the pages opened are the
    // pages closed (the plan of an entry once written says it is bound, and writes
    // nothing).
    let written = |e: &Entry| {
        if level == crate::dispatch::wide::LEVEL_AVX2 {
            // SAFETY: the descriptor is a static beside the entry; checked by `plan`.
            usize::from(unsafe { (*e.avx2).len })
        } else {
            8
        }
    };
    // The first and the last page an entry's writes touch.
    let span = |e: &Entry| {
        let start = e.code as usize;
        let end = start + written(e).max(1) - 1;
        (start & !(PAGE - 1), end & !(PAGE - 1))
    };
    // Whether no entry before the i-th touches page `p`.
    let first = |i: usize, p: usize| {
        !(0..i).any(|k| {
            let (a, b) = span(&entries[k]);
            a <= p && p <= b
        })
    };
    // Calls `f` with each page the writes touch, once, numbered in order, while it
    // returns true. (Loops by hand: iterator adapters over pages here would be moved
    // with calls to `memcpy` in a debug build.)
    let visit = |f: &mut dyn FnMut(usize, usize) -> bool| {
        let mut n = 0;
        for (i, e) in entries.iter().enumerate() {
            let (mut p, last) = span(e);
            while p <= last {
                if first(i, p) {
                    if !f(n, p) {
                        return;
                    }
                    n += 1;
                }
                p += PAGE;
            }
        }
    };
    let protect = |a: usize, prot: usize| {
        // SAFETY: mprotect of one page of this object's code, which stays executable.
        let r = unsafe { crate::autoload::sys::syscall4(SYS_MPROTECT, a, PAGE, prot, 0) };
        if r < 0 {
            Err(-r as i32)
        } else {
            Ok(())
        }
    };
    let mut refused = None;
    visit(&mut |n, p| match protect(p, READ_WRITE_EXEC) {
        Ok(()) => true,
        Err(err) => {
            refused = Some((n, err));
            false
        }
    });
    if let Some((opened, err)) = refused {
        // Back to read-only: the pages opened before the one refused.
        visit(&mut |n, p| {
            if n < opened {
                let _ = protect(p, READ_EXEC);
            }
            n + 1 < opened
        });
        return Err(BindError::Protect(err));
    }
    for e in entries {
        // SAFETY: as above; the entry has not changed since it was checked.
        if let Ok(Plan::Write { old, len, binding }) = unsafe { plan(e, flag, level) } {
            let image = |k: usize| match binding {
                // SAFETY: plan checked the descriptor against the code.
                Binding::Avx2 => unsafe { relocated(e.code, &*e.avx2, k) },
                _ => SLOT_AVX512[k],
            };
            // The bodies after the slot first (byte by byte: a copy loop here could
            // become a call to `memcpy`, which may be one of these entries), then the
            // slot, whose store makes them reachable.
            for k in 8..usize::from(len) {
                // SAFETY: within the AVX-512 bodies, on a page now writable; no thread
                // runs them on a CPU bound for AVX2.
                unsafe { core::ptr::write_volatile(e.code.add(k).cast_mut(), image(k)) };
            }
            let new = u64::from_le_bytes(core::array::from_fn(image));
            // SAFETY: the slot is an aligned qword of a page now writable.
            let slot = unsafe { &*(e.code as *const AtomicU64) };
            let _ = slot.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
    let mut left = None;
    visit(&mut |_, p| {
        if let Err(err) = protect(p, READ_EXEC) {
            left = Some(err);
        }
        true
    });
    match left {
        Some(err) => Err(BindError::Writable(err)),
        None => Ok(result),
    }
}

/// What [`bind`] does to one entry.
#[cfg(target_os = "linux")]
enum Plan {
    /// Write `len` bytes from the entry's start, the slot last (it holds `old`): for
    /// [`Binding::Avx2`] the AVX2 bodies, relocated; for AVX-512 [`SLOT_AVX512`]. (Small,
    /// so that a debug build moves it without a call to `memcpy`.)
    Write {
        old: u64,
        len: u16,
        binding: Binding,
    },
    /// Nothing: it is bound to the level already.
    Bound(Binding),
    /// Nothing: the level has no binding.
    Nothing,
}

/// Checks `entry`'s slot, decodes its flag test, which must read `flag`, and for AVX2
/// checks the descriptor of the bodies against the code.
///
/// # Safety
/// As [`bind`].
#[cfg(target_os = "linux")]
unsafe fn plan(entry: &Entry, flag: *const u8, level: u8) -> Result<Plan, BindError> {
    use crate::dispatch::wide::{LEVEL_AVX2, LEVEL_AVX512};
    let code = entry.code;
    if !(code as usize).is_multiple_of(64) {
        return Err(BindError::Unrecognised);
    }
    // SAFETY: the caller's contract.
    let slot = unsafe { slot_of(code) };
    // SAFETY: the descriptor is a static beside the entry; the caller's contract.
    let d = unsafe { &*entry.avx2 };
    // Byte by byte: an array here would be zeroed with a call to `memset` in a debug
    // build, and the shim's own `memset` is what is being bound.
    // SAFETY: reads the entry's code, readable (offsets checked by the callers below).
    let byte = |k: usize| unsafe { core::ptr::read_volatile(code.add(k)) };
    let image = |k: usize| -> u8 {
        // SAFETY: called only once the descriptor is checked.
        unsafe { relocated(code, d, k) }
    };
    match (binding_of(slot), level) {
        (None, _) => return Err(BindError::Unrecognised),
        (Some(Binding::Flag), _) => {}
        (Some(Binding::Avx512), LEVEL_AVX512) => return Ok(Plan::Bound(Binding::Avx512)),
        (Some(Binding::Avx2), LEVEL_AVX2) => {
            // Bound before: its start must be the bodies it was bound to.
            return if avx2_fits(d, usize::MAX, &byte) && (0..8).all(|k| slot[k] == image(k)) {
                Ok(Plan::Bound(Binding::Avx2))
            } else {
                Err(BindError::Unrecognised)
            };
        }
        (Some(_), _) => return Err(BindError::Unrecognised),
    }
    // The flag test the slot jumps to: `cmp byte ptr [rip + disp32], 1`.
    let rel = i32::from_le_bytes([slot[1], slot[2], slot[3], slot[4]]);
    let Ok(test) = usize::try_from(5 + i64::from(rel)) else {
        return Err(BindError::Unrecognised);
    };
    let disp = i32::from_le_bytes([
        byte(test + 2),
        byte(test + 3),
        byte(test + 4),
        byte(test + 5),
    ]);
    if byte(test) != 0x80
        || byte(test + 1) != 0x3d
        || byte(test + 6) != 1
        || code.wrapping_add(test + 7).wrapping_offset(disp as isize) != flag
    {
        return Err(BindError::Unrecognised);
    }
    let old = u64::from_le_bytes(slot);
    match level {
        LEVEL_AVX512 => Ok(Plan::Write {
            old,
            len: 8,
            binding: Binding::Avx512,
        }),
        LEVEL_AVX2 => {
            // The slot names the bodies' offset as the descriptor does, and they fit
            // before the flag test, where the AVX-512 bodies lie.
            if usize::from(u16::from_le_bytes([slot[5], slot[6]])) != usize::from(d.at)
                || !avx2_fits(d, test, &byte)
            {
                return Err(BindError::Unrecognised);
            }
            Ok(Plan::Write {
                old,
                len: d.len,
                binding: Binding::Avx2,
            })
        }
        _ => Ok(Plan::Nothing),
    }
}

/// Whether `d` describes AVX2 bodies in the code `byte` reads (offsets from the
/// entry): they start with [`AVX2_FIRST`] after `room` bytes (the space before the
/// flag test, where they will be copied, which must hold them), and the exit ends a
/// `jmp rel32` or `jcc rel32` whose target lies outside them.
fn avx2_fits(d: &Avx2Bodies, room: usize, byte: &dyn Fn(usize) -> u8) -> bool {
    let (at, len, e) = (usize::from(d.at), usize::from(d.len), usize::from(d.exit));
    if len < 8 || len > room || at < len || (0..3).any(|k| byte(at + k) != AVX2_FIRST[k]) {
        return false;
    }
    if !(6..=len).contains(&e) {
        return false;
    }
    let b = |k: usize| byte(at + e - k);
    let jump = b(5) == JMP_REL32 || (b(6) == 0x0f && b(5) & 0xf0 == 0x80);
    let rel = i64::from(i32::from_le_bytes([b(4), b(3), b(2), b(1)]));
    let target = e as i64 + rel;
    jump && (target < 0 || target >= len as i64)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::dispatch::wide::{LEVEL_AVX2, LEVEL_AVX512};

    /// A synthetic entry, 64-byte aligned: the slot jumps to a flag test at 0x100 whose
    /// flag is the byte at 0x1f0; AVX2 bodies at 0x140: `mov rax, rdi` (8B form),
    /// `cmp rdx, 32`, `ja` 0x1000 bytes past the jump (out of the bodies), `ret`.
    #[repr(C, align(64))]
    struct Code([u8; 0x200]);

    const TEST: usize = 0x100;
    const FLAG: usize = 0x1f0;
    const AT: u16 = 0x140;
    const BODIES: [u8; 14] = [
        0x48, 0x8b, 0xc7, 0x48, 0x83, 0xfa, 0x20, 0x0f, 0x87, 0x00, 0x10, 0x00, 0x00, 0xc3,
    ];
    const DESC: Avx2Bodies = Avx2Bodies {
        at: AT,
        len: 14,
        exit: 13,
    };

    fn code() -> Code {
        let mut c = Code([0x90; 0x200]);
        let rel = (TEST as i32 - 5).to_le_bytes();
        let at = AT.to_le_bytes();
        c.0[..8].copy_from_slice(&[0xe9, rel[0], rel[1], rel[2], rel[3], at[0], at[1], 0xcc]);
        let disp = (FLAG as i32 - (TEST as i32 + 7)).to_le_bytes();
        c.0[TEST..TEST + 7].copy_from_slice(&[0x80, 0x3d, disp[0], disp[1], disp[2], disp[3], 1]);
        c.0[usize::from(AT)..usize::from(AT) + BODIES.len()].copy_from_slice(&BODIES);
        c
    }

    fn planned(c: &Code, d: &Avx2Bodies, level: u8) -> Result<Plan, BindError> {
        let e = Entry {
            code: c.0.as_ptr(),
            avx2: d,
        };
        // SAFETY: the synthetic entry is readable, its flag inside it.
        unsafe { plan(&e, c.0.as_ptr().wrapping_add(FLAG), level) }
    }

    /// The bytes the plan writes from the entry's start (at most 16 here), and how many.
    fn image(c: &Code, level: u8) -> ([u8; 16], usize) {
        let mut out = [0; 16];
        match planned(c, &DESC, level) {
            Ok(Plan::Write { len, binding, .. }) => {
                let len = usize::from(len);
                for (k, b) in out.iter_mut().enumerate().take(len) {
                    *b = match binding {
                        // SAFETY: as above; plan checked the descriptor.
                        Binding::Avx2 => unsafe { relocated(c.0.as_ptr(), &DESC, k) },
                        _ => SLOT_AVX512[k],
                    };
                }
                (out, len)
            }
            _ => panic!("no write planned for level {level}"),
        }
    }

    #[test]
    fn slots_decode_to_their_binding() {
        let c = code();
        let slot: [u8; 8] = c.0[..8].try_into().unwrap();
        assert_eq!(binding_of(slot), Some(Binding::Flag));
        assert_eq!(binding_of(SLOT_AVX512), Some(Binding::Avx512));
        assert_eq!(
            binding_of(BODIES[..8].try_into().unwrap()),
            Some(Binding::Avx2)
        );
    }

    #[test]
    fn avx2_bodies_move_to_the_entry_with_their_jumps_out_kept() {
        let c = code();
        let (img, len) = image(&c, LEVEL_AVX2);
        assert_eq!(len, BODIES.len());
        // The same bytes, but the `ja`'s rel32: 0x1000 + 0x140, the same target from
        // 0x140 bytes earlier.
        assert_eq!(img[..9], BODIES[..9]);
        assert_eq!(img[9..13], (0x1000 + i32::from(AT)).to_le_bytes());
        assert_eq!(img[13], 0xc3);
        let (slot, slot_len) = image(&c, LEVEL_AVX512);
        assert_eq!((&slot[..8], slot_len), (&SLOT_AVX512[..], 8));
        assert!(matches!(planned(&c, &DESC, 0), Ok(Plan::Nothing)));

        // Once written, the entry is bound for its level and for nothing else.
        for (start, binding, level, other) in [
            (&img[..len], Binding::Avx2, LEVEL_AVX2, LEVEL_AVX512),
            (&SLOT_AVX512[..], Binding::Avx512, LEVEL_AVX512, LEVEL_AVX2),
        ] {
            let mut bound = code();
            bound.0[..start.len()].copy_from_slice(start);
            assert!(
                matches!(planned(&bound, &DESC, level), Ok(Plan::Bound(b)) if b == binding),
                "{binding:?}"
            );
            assert_eq!(
                planned(&bound, &DESC, other).err(),
                Some(BindError::Unrecognised),
                "{binding:?}"
            );
        }
    }

    #[test]
    fn a_descriptor_that_does_not_describe_the_code_binds_nothing() {
        let c = code();
        let wrong = [
            // Not where the slot says the bodies are.
            Avx2Bodies {
                at: AT + 64,
                ..DESC
            },
            // Longer than the room before the flag test.
            Avx2Bodies {
                len: TEST as u16 + 1,
                ..DESC
            },
            // An exit that ends no jump.
            Avx2Bodies { exit: 12, ..DESC },
            // An exit past the bodies' end.
            Avx2Bodies { exit: 15, ..DESC },
        ];
        for d in wrong {
            assert_eq!(
                planned(&c, &d, LEVEL_AVX2).err(),
                Some(BindError::Unrecognised),
                "{d:?}"
            );
        }
        // A jump out that lands inside the bodies would be wrong once moved.
        let mut inside = code();
        let k = usize::from(AT) + 9;
        inside.0[k..k + 4].copy_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(
            planned(&inside, &DESC, LEVEL_AVX2).err(),
            Some(BindError::Unrecognised)
        );
        // A flag test reading another flag.
        let e = Entry {
            code: c.0.as_ptr(),
            avx2: &DESC,
        };
        // SAFETY: as in `planned`.
        let other = unsafe { plan(&e, c.0.as_ptr().wrapping_add(FLAG + 1), LEVEL_AVX2) };
        assert_eq!(other.err(), Some(BindError::Unrecognised));
    }

    #[test]
    fn other_code_is_no_slot() {
        // glibc's `__memmove_avx512_unaligned_erms` starts `mov rax, rdi; cmp rdx, 64`.
        assert_eq!(
            binding_of([0x48, 0x89, 0xf8, 0x48, 0x83, 0xfa, 0x40, 0x72]),
            None
        );
        assert_eq!(binding_of([0xe9, 0, 0, 0, 0, 0, 0, 0x90]), None);
        assert_eq!(
            binding_of([0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xf8, 0x48]),
            None
        );
    }
}
