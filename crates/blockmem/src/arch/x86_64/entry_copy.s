# Copy and move entries (blockmem::copy_entry!): their size classes and their three
# forms. Layout, way on and route: entry_common.s.
#
# 1. AVX-512: n < 64 first, then n > 128. 64-128 bytes: two 64-byte loads from both
#    ends, then the stores, no taken branch. 1-15 bytes (n == 0 returns first),
#    branch-free where sizes vary: in a process that has never had a second thread
#    (glibc's __libc_single_threaded), one masked 16-byte access from the first byte,
#    which may reach into the next line; otherwise, where another core may be writing
#    that line, one 16-byte window per side placed in the lines the bytes lie in and
#    a shuffle between them (docs/results/xeon-clx-2vcpu/neighbour). 16-31 and 32-63:
#    two 16- or 32-byte accesses from both ends. 129-256 and 257-512: four or eight
#    64-byte loads, then the stores.
# 2. 513-2112 bytes of disjoint ranges (up to glibc's rep movsb threshold with FSRM):
#    the first 64 and last 256 bytes loaded first, 256-byte blocks to 64-byte-aligned
#    destinations, the ends stored last. Overlapping ranges go on.
# 3. Every load precedes every store up to 512 bytes (AVX-512) or 256 (AVX2), so
#    overlapping ranges are copied as a move; the loops take disjoint ranges only
#    (overlap = disjoint where the caller promises it, else possible: tested first).
# 4. AVX2 (a CPU without AVX-512BW): glibc's ladder below 32 bytes in general registers
#    and xmm, ymm pairs from both ends up to 256, then a 128-byte loop to 32-byte-aligned
#    destinations up to 2112; each path ends in vzeroupper.

# The overlap test before a copy loop (disjoint: none). Uses r8, so that rcx (the C
# ABI's hint) reaches `above` or `general` intact.
.macro COPY_OVERLAP overlap, out
.ifc \overlap,possible
    mov r8, rdi
    sub r8, rsi
    cmp r8, rdx
    jb \out
    mov r8, rsi
    sub r8, rdi
    cmp r8, rdx
    jb \out
.else
.ifnc \overlap,disjoint
    .error "overlap is disjoint or possible"
.endif
.endif
.endm

# The first AVX-512 tests and the class that needs no taken branch.
.macro COPY_AVX512_FIRST p
    cmp rdx, 64
    jb .L\p\()_avx512_below_64
    cmp rdx, 128
    ja .L\p\()_avx512_above_128
    vmovdqu64 zmm16, zmmword ptr [rsi]
    vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17
    ret
.endm

# COPY_AVX512_FIRST with its bounds read from the route words (entry_common.s).
.macro COPY_AVX512_FIRST_ROUTED p, route
    cmp rdx, qword ptr [rip + \route]
    jb .L\p\()_avx512_below_64
    cmp rdx, qword ptr [rip + \route + 8]
    jae .L\p\()_avx512_above_128
    vmovdqu64 zmm16, zmmword ptr [rsi]
    vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 64]
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm17
    ret
.endm

# The other AVX-512 classes up to 512 bytes, then the test for the loop's sizes; a
# routed entry (`route` not `none`) tests its route first above 128 bytes.
.macro COPY_AVX512_CLASSES p, route
    .weak __libc_single_threaded
    .p2align 6
.L\p\()_avx512_below_64:
    cmp edx, 32
    jae .L\p\()_avx512_32_63
    cmp edx, 16
    jae .L\p\()_avx512_16_31
    test edx, edx
    je .L\p\()_avx512_none
    # 1..15 bytes in a process that has never had a second thread (glibc's
    # __libc_single_threaded, absent elsewhere): one masked 16-byte access from the
    # first byte, which may reach into the next line.
    mov r8, qword ptr [rip + __libc_single_threaded@GOTPCREL]
    test r8, r8
    jz .L\p\()_avx512_confined
    cmp byte ptr [r8], 0
    je .L\p\()_avx512_confined
    mov r9d, -1
    bzhi r9d, r9d, edx
    kmovw k1, r9d
    vmovdqu8 xmm16 {k1}{z}, xmmword ptr [rsi]
    vmovdqu8 xmmword ptr [rdi] {k1}, xmm16
    ret
    .p2align 6
.L\p\()_avx512_confined:
    # 1..15 bytes otherwise: per side the window is the earlier of its first byte and
    # the last 16 bytes of its last byte's line, so it lies in the lines the bytes lie
    # in; one shuffle moves the source's bytes to the destination window's offset.
    lea r8, [rsi + rdx - 1]
    or r8, 63
    sub r8, 15
    cmp rsi, r8
    cmovb r8, rsi
    lea r9, [rdi + rdx - 1]
    or r9, 63
    sub r9, 15
    cmp rdi, r9
    cmovb r9, rdi
    vmovdqu64 xmm16, xmmword ptr [r8]
    mov ecx, esi
    sub ecx, r8d
    mov r10d, edi
    sub r10d, r9d
    sub ecx, r10d
    and ecx, 15
    lea r11, [rip + .L\p\()_rotate]
    vmovdqu64 xmm17, xmmword ptr [r11 + rcx]
    vpshufb xmm16, xmm16, xmm17
    mov r11d, -1
    bzhi r11d, r11d, edx
    shlx r11d, r11d, r10d
    kmovw k1, r11d
    vmovdqu8 xmmword ptr [r9] {k1}, xmm16
.L\p\()_avx512_none:
    ret
    # Shuffle controls: from byte d, lane j takes byte (d + j) mod 16.
    .pushsection .rodata, "a"
    .p2align 5
.L\p\()_rotate:
    .byte 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
    .byte 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
    .popsection
    # 32..63 and 16..31 share a line.
    .p2align 6
.L\p\()_avx512_32_63:
    vmovdqu64 ymm16, ymmword ptr [rsi]
    vmovdqu64 ymm17, ymmword ptr [rsi + rdx - 32]
    vmovdqu64 ymmword ptr [rdi], ymm16
    vmovdqu64 ymmword ptr [rdi + rdx - 32], ymm17
    ret
.L\p\()_avx512_16_31:
    vmovdqu64 xmm16, xmmword ptr [rsi]
    vmovdqu64 xmm17, xmmword ptr [rsi + rdx - 16]
    vmovdqu64 xmmword ptr [rdi], xmm16
    vmovdqu64 xmmword ptr [rdi + rdx - 16], xmm17
    ret
    .p2align 6
.L\p\()_avx512_above_128:
.ifnc \route,none
    ROUTE_ABOVE_128 \p, \route
.endif
    cmp rdx, 256
    ja .L\p\()_avx512_above_256
    vmovdqu64 zmm16, zmmword ptr [rsi]
    vmovdqu64 zmm17, zmmword ptr [rsi + 64]
    vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 128]
    vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 64]
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + 64], zmm17
    vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm18
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm19
    ret
    .p2align 6
.L\p\()_avx512_above_256:
    cmp rdx, 512
    ja .L\p\()_avx512_above_512
    vmovdqu64 zmm16, zmmword ptr [rsi]
    vmovdqu64 zmm17, zmmword ptr [rsi + 64]
    vmovdqu64 zmm18, zmmword ptr [rsi + 128]
    vmovdqu64 zmm19, zmmword ptr [rsi + 192]
    vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 256]
    vmovdqu64 zmm21, zmmword ptr [rsi + rdx - 192]
    vmovdqu64 zmm22, zmmword ptr [rsi + rdx - 128]
    vmovdqu64 zmm23, zmmword ptr [rsi + rdx - 64]
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + 64], zmm17
    vmovdqu64 zmmword ptr [rdi + 128], zmm18
    vmovdqu64 zmmword ptr [rdi + 192], zmm19
    vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm20
    vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm21
    vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm22
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm23
    ret
    .p2align 6
.L\p\()_avx512_above_512:
    cmp rdx, 2112
    ja .L\p\()_avx512_above
.endm

# The AVX-512 loop for 513..2112 bytes of disjoint ranges.
.macro COPY_AVX512_LOOP p
    vmovdqu64 zmm16, zmmword ptr [rsi]
    vmovdqu64 zmm17, zmmword ptr [rsi + rdx - 256]
    vmovdqu64 zmm18, zmmword ptr [rsi + rdx - 192]
    vmovdqu64 zmm19, zmmword ptr [rsi + rdx - 128]
    vmovdqu64 zmm20, zmmword ptr [rsi + rdx - 64]
    lea r9, [rdi + rdx - 256]
    mov r8d, edi
    and r8d, 63
    neg r8
    add r8, 64
    lea rcx, [rdi + r8]
    lea r10, [rsi + r8]
    # n > 512: rcx <= dst + 64 < r9, so the loop runs at least once.
.L\p\()_avx512_loop_2112:
    vmovdqu64 zmm21, zmmword ptr [r10]
    vmovdqu64 zmm22, zmmword ptr [r10 + 64]
    vmovdqu64 zmm23, zmmword ptr [r10 + 128]
    vmovdqu64 zmm24, zmmword ptr [r10 + 192]
    vmovdqa64 zmmword ptr [rcx], zmm21
    vmovdqa64 zmmword ptr [rcx + 64], zmm22
    vmovdqa64 zmmword ptr [rcx + 128], zmm23
    vmovdqa64 zmmword ptr [rcx + 192], zmm24
    add rcx, 256
    add r10, 256
    cmp rcx, r9
    jb .L\p\()_avx512_loop_2112
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [r9], zmm17
    vmovdqu64 zmmword ptr [r9 + 64], zmm18
    vmovdqu64 zmmword ptr [r9 + 128], zmm19
    vmovdqu64 zmmword ptr [r9 + 192], zmm20
    ret
.endm

# The AVX2 classes up to 256 bytes, then the test for the loop's sizes.
.macro COPY_AVX2_CLASSES p
    cmp rdx, 32
    jb .L\p\()_avx2_below_32
    vmovdqu ymm0, ymmword ptr [rsi]
    cmp rdx, 64
    ja .L\p\()_avx2_above_64
    vmovdqu ymm1, ymmword ptr [rsi + rdx - 32]
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm1
    vzeroupper
    ret
    # n < 32: glibc's ladder (32-bit compares, whose shorter encodings keep this block
    # within one line).
    .p2align 6
.L\p\()_avx2_below_32:
    cmp edx, 16
    jae .L\p\()_avx2_16_31
    cmp edx, 8
    jae .L\p\()_avx2_8_15
    cmp edx, 4
    jae .L\p\()_avx2_4_7
    test edx, edx
    je .L\p\()_avx2_none
    mov r9, rdx
    shr r9, 1
    movzx r8d, byte ptr [rsi]
    movzx r10d, byte ptr [rsi + r9]
    movzx r11d, byte ptr [rsi + rdx - 1]
    mov byte ptr [rdi], r8b
    mov byte ptr [rdi + r9], r10b
    mov byte ptr [rdi + rdx - 1], r11b
.L\p\()_avx2_none:
    ret
    .p2align 6
.L\p\()_avx2_4_7:
    mov r8d, dword ptr [rsi]
    mov r9d, dword ptr [rsi + rdx - 4]
    mov dword ptr [rdi], r8d
    mov dword ptr [rdi + rdx - 4], r9d
    ret
.L\p\()_avx2_8_15:
    mov r8, qword ptr [rsi]
    mov r9, qword ptr [rsi + rdx - 8]
    mov qword ptr [rdi], r8
    mov qword ptr [rdi + rdx - 8], r9
    ret
.L\p\()_avx2_16_31:
    vmovdqu xmm0, xmmword ptr [rsi]
    vmovdqu xmm1, xmmword ptr [rsi + rdx - 16]
    vmovdqu xmmword ptr [rdi], xmm0
    vmovdqu xmmword ptr [rdi + rdx - 16], xmm1
    ret
    # Above 64 bytes; ymm0 holds the first 32.
    .p2align 6
.L\p\()_avx2_above_64:
    cmp rdx, 256
    ja .L\p\()_avx2_above_256
    vmovdqu ymm1, ymmword ptr [rsi + 32]
    cmp rdx, 128
    jbe .L\p\()_avx2_65_128
    vmovdqu ymm2, ymmword ptr [rsi + 64]
    vmovdqu ymm3, ymmword ptr [rsi + 96]
    vmovdqu ymm4, ymmword ptr [rsi + rdx - 128]
    vmovdqu ymm5, ymmword ptr [rsi + rdx - 96]
    vmovdqu ymm6, ymmword ptr [rsi + rdx - 64]
    vmovdqu ymm7, ymmword ptr [rsi + rdx - 32]
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [rdi + 32], ymm1
    vmovdqu ymmword ptr [rdi + 64], ymm2
    vmovdqu ymmword ptr [rdi + 96], ymm3
    vmovdqu ymmword ptr [rdi + rdx - 128], ymm4
    vmovdqu ymmword ptr [rdi + rdx - 96], ymm5
    vmovdqu ymmword ptr [rdi + rdx - 64], ymm6
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm7
    vzeroupper
    ret
    .p2align 6
.L\p\()_avx2_65_128:
    vmovdqu ymm2, ymmword ptr [rsi + rdx - 64]
    vmovdqu ymm3, ymmword ptr [rsi + rdx - 32]
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [rdi + 32], ymm1
    vmovdqu ymmword ptr [rdi + rdx - 64], ymm2
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm3
    vzeroupper
    ret
    .p2align 6
.L\p\()_avx2_above_256:
    cmp rdx, 2112
    ja .L\p\()_avx2_general
.endm

# The AVX2 loop for 257..2112 bytes of disjoint ranges.
.macro COPY_AVX2_LOOP p
    vmovdqu ymm8, ymmword ptr [rsi + rdx - 128]
    vmovdqu ymm9, ymmword ptr [rsi + rdx - 96]
    vmovdqu ymm10, ymmword ptr [rsi + rdx - 64]
    vmovdqu ymm11, ymmword ptr [rsi + rdx - 32]
    lea r9, [rdi + rdx - 128]
    # rcx: the first 32-byte boundary past dst; r10: the source byte for it.
    lea rcx, [rdi + 32]
    and rcx, -32
    mov r10, rsi
    sub r10, rdi
    add r10, rcx
    # n > 256: rcx <= dst + 32 < r9, so the loop runs at least once.
.L\p\()_avx2_loop_2112:
    vmovdqu ymm1, ymmword ptr [r10]
    vmovdqu ymm2, ymmword ptr [r10 + 32]
    vmovdqu ymm3, ymmword ptr [r10 + 64]
    vmovdqu ymm4, ymmword ptr [r10 + 96]
    vmovdqa ymmword ptr [rcx], ymm1
    vmovdqa ymmword ptr [rcx + 32], ymm2
    vmovdqa ymmword ptr [rcx + 64], ymm3
    vmovdqa ymmword ptr [rcx + 96], ymm4
    sub rcx, -128
    sub r10, -128
    cmp rcx, r9
    jb .L\p\()_avx2_loop_2112
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [r9 + 0], ymm8
    vmovdqu ymmword ptr [r9 + 32], ymm9
    vmovdqu ymmword ptr [r9 + 64], ymm10
    vmovdqu ymmword ptr [r9 + 96], ymm11
    vzeroupper
    ret
.endm

# The AVX-512 bodies past the first block, with their way on.
.macro COPY_AVX512_REST p, overlap, route, above, hint:vararg
    COPY_AVX512_CLASSES \p, \route
    COPY_OVERLAP \overlap, .L\p\()_avx512_above
    COPY_AVX512_LOOP \p
    WAY_ON_AVX512 \p, \above, \hint
.endm

# The AVX2 bodies with their way on.
.macro COPY_AVX2 p, overlap, general
    COPY_AVX2_CLASSES \p
    COPY_OVERLAP \overlap, .L\p\()_avx2_general
    COPY_AVX2_LOOP \p
    WAY_ON_AVX2 \p, \general
.endm

# The three forms of an entry (blockmem::copy_entry!'s `bodies`).
.macro COPY_ENTRY_AVX512 p, overlap, above, hint:vararg
    ENTRY_START
    COPY_AVX512_FIRST \p
    COPY_AVX512_REST \p, \overlap, none, \above, \hint
.endm

.macro COPY_ENTRY_AVX2 p, overlap, general
    ENTRY_START
    COPY_AVX2 \p, \overlap, \general
.endm

.macro COPY_ENTRY_ROUTED p, overlap, route, flag, general, above, hint:vararg
    ENTRY_START
    COPY_AVX512_FIRST_ROUTED \p, \route
    ROUTE_CLOSED \p
    COPY_AVX512_REST \p, \overlap, \route, \above, \hint
    ROUTE_LEVEL \p, \flag, \general
    COPY_AVX2 \p, \overlap, \general
.endm
