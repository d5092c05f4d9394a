# What every C entry shares: its layout, its way on above its bodies' sizes, and the
# route of the shim's entries (blockmem::arch::x86_64::entry; the bodies are in
# entry_copy.s and entry_set.s). A call of one size in a loop is bound by the micro-ops
# and taken branches of each call, so each size class ends in its own straight-line
# block, found by a short search (docs/results/epyc-zen4-2vcpu/doors/entry-notes.md,
# and each host's doors).
#
# 1. Every entry starts a 4 KiB page and every size class's block, from where a branch
#    reaches it to its ret, lies within one 64-byte line and out of a page's last two
#    lines; no jump (or fused compare and jump) crosses or ends on a 32-byte boundary,
#    which on Intel's Skylake family keeps its window out of the decoded-instruction
#    cache (blockmem-preload/tests/disasm.rs checks both).
# 2. rax holds dst from the first instruction on: every ret returns it.
# 3. Above its bodies' sizes an entry jumps on with its stack untouched: the AVX-512
#    bodies to `above` (the plan, with the C hint in ecx), the AVX2 bodies to `general`
#    (through vzeroupper).
# 4. The AVX-512 bodies write only zmm16-24 and k1 (and rcx, r8-r11): the upper halves
#    of ymm0-15 stay clean and need no vzeroupper (as glibc's evex code).
# 5. A routed entry (the shim's) holds both levels' bodies. Its first size compares
#    read their bounds from the `route` words (ROUTE_ABOVE_128): open, they are the
#    AVX-512 bodies' own bounds; closed, every call reaches the class above 128 bytes,
#    whose first compare sends it to the level test of the `flag` byte, then the AVX2
#    bodies (flag 2, LEVEL_AVX2) or `general`. Calls up to 128 bytes pay nothing for
#    the route; larger ones one fused compare and branch.
#
# How these files become entries: each entry is one naked function whose asm defines
# the macros of this file and of its op's file, invokes its form once with the
# function's name as prefix p (its labels are .L<p>_...), then purges the macros.
# Entries of one crate may share an assembler run (a codegen unit), where a macro is
# defined once at a time and a label once at all; the prefix keeps each entry's labels
# apart. blockmem's build.rs doubles these files' braces ({k1}) for naked_asm!'s
# template and makes their text the macro entry_asm!, which the entry crates expand.

# The first bytes of every entry (blockmem's bodies_of reads them).
.macro ENTRY_START
    .p2align 12
    mov rax, rdi
.endm

# The route words of a routed entry (the shim's `ROUTE`, three words): the bound below
# which a copy takes the AVX-512 bodies' first classes (64 open, 0 closed), the bound
# from which a call takes the classes above 128 bytes (129 open, 0 closed: every call),
# and the bound below which a call there goes on to the level test (0 open, usize::MAX
# closed). The sizes up to 128 bytes pay no compare beyond the bodies' own.
.macro ROUTE_ABOVE_128 p, route
    cmp rdx, qword ptr [rip + \route + 16]
    jb .L\p\()_route_closed
.endm

# A closed route's way on, in a 32-byte window of its own.
.macro ROUTE_CLOSED p
    .p2align 5
.L\p\()_route_closed:
    jmp .L\p\()_level
.endm

# The level test ends a line, so that the AVX2 bodies start the next.
.macro ROUTE_LEVEL p, flag, general
    .p2align 6
    .skip 50, 0xcc
.L\p\()_level:
    cmp byte ptr [rip + \flag], 2
    jne \general
    nop
.endm

# Above the AVX-512 bodies' sizes: the hint instruction (none where the hint is the
# fourth argument, in ecx already), then `above`.
.macro WAY_ON_AVX512 p, above, hint:vararg
    .p2align 5
.L\p\()_avx512_above:
    \hint
    jmp \above
.endm

# Above the AVX2 bodies' sizes: `general`, with clean upper halves.
.macro WAY_ON_AVX2 p, general
    .p2align 5
.L\p\()_avx2_general:
    vzeroupper
    jmp \general
.endm
