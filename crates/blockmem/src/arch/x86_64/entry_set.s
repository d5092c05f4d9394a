# Set entries (blockmem::set_entry!): their size classes and their three forms.
# Layout, way on and route: entry_common.s.
#
# 1. AVX-512: the byte broadcast once, after the first compares; n > 128 first, then
#    n < 64 (fewer mispredicted tests where sizes come at random). 64-128 bytes: two
#    64-byte stores from both ends, no taken branch.
# 2. 1-63 bytes: one masked 64-byte store whose window lies in the lines the bytes lie
#    in: the later of dst's line and dst + n - 64, the mask shifted by dst - window.
# 3. Above 128 bytes each block stores its head before it tests for the next class (as
#    glibc's memset): the stores are on the path whichever way the test goes, so a
#    mispredicted test does not delay them. 513-2048: the first 256 bytes, then one
#    store per line, the last line's bytes masked.
# 4. AVX2 (a CPU without AVX-512BW): glibc's ladder below 32 bytes, ymm pairs from both
#    ends up to 256, then a 128-byte loop to 32-byte-aligned destinations up to 2048;
#    each path ends in vzeroupper.

# The first AVX-512 tests and the class that needs no taken branch.
.macro SET_AVX512_FIRST p
    cmp rdx, 128
    ja .L\p\()_avx512_above_128
    cmp rdx, 64
    jb .L\p\()_avx512_below_64
    vpbroadcastb zmm16, esi
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16
    ret
.endm

# SET_AVX512_FIRST with its bound read from the route words (entry_common.s).
.macro SET_AVX512_FIRST_ROUTED p, route
    cmp rdx, qword ptr [rip + \route + 8]
    jae .L\p\()_avx512_above_128
    cmp rdx, 64
    jb .L\p\()_avx512_below_64
    vpbroadcastb zmm16, esi
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16
    ret
.endm

# The other AVX-512 classes up to 2048 bytes; a routed entry (`route` not `none`)
# tests its route first above 128 bytes.
.macro SET_AVX512_CLASSES p, route
    # 0..63 bytes: the window is the later of dst's line and dst + n - 64 (a signed
    # compare: user addresses are below 2^47, and the second is negative only for a dst
    # in the first line, where the line wins); rax holds dst.
    .p2align 6
.L\p\()_avx512_below_64:
    vpbroadcastb zmm16, esi
    lea rcx, [rdi + rdx - 64]
    and rdi, -64
    cmp rdi, rcx
    cmovl rdi, rcx
    mov ecx, eax
    sub ecx, edi
    mov r8, -1
    bzhi r8, r8, rdx
    shlx r8, r8, rcx
    kmovq k1, r8
    vmovdqu8 zmmword ptr [rdi] {k1}, zmm16
    ret
    .p2align 6
.L\p\()_avx512_above_128:
.ifnc \route,none
    ROUTE_ABOVE_128 \p, \route
.endif
    cmp rdx, 2048
    ja .L\p\()_avx512_above
    vpbroadcastb zmm16, esi
    vmovdqu64 zmmword ptr [rdi], zmm16
    vmovdqu64 zmmword ptr [rdi + 64], zmm16
    cmp rdx, 256
    ja .L\p\()_avx512_above_256
    vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16
    ret
    .p2align 6
.L\p\()_avx512_above_256:
    vmovdqu64 zmmword ptr [rdi + 128], zmm16
    vmovdqu64 zmmword ptr [rdi + 192], zmm16
    cmp rdx, 512
    ja .L\p\()_avx512_513_2048
    vmovdqu64 zmmword ptr [rdi + rdx - 256], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 192], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 128], zmm16
    vmovdqu64 zmmword ptr [rdi + rdx - 64], zmm16
    ret
    # The first 256 bytes are stored. Whole lines from the one holding byte 256 (r8),
    # two a step (at least one step: the last line, r9, is 192 bytes or more past r8),
    # then the line before the last (a line the steps may have stored), then the last
    # line's bytes with one masked store.
    .p2align 6
.L\p\()_avx512_513_2048:
    lea rcx, [rdi + rdx - 1]
    lea r8, [rdi + 256]
    and r8, -64
    mov r9, rcx
    and r9, -64
    lea r10, [r9 - 128]
.L\p\()_avx512_loop_2048:
    vmovdqa64 zmmword ptr [r8], zmm16
    vmovdqa64 zmmword ptr [r8 + 64], zmm16
    sub r8, -128
    cmp r8, r10
    jbe .L\p\()_avx512_loop_2048
    vmovdqa64 zmmword ptr [r9 - 64], zmm16
    # ~last & 63 = 63 - (last & 63): the mask of the last line's bytes.
    not ecx
    mov r10, -1
    shrx r10, r10, rcx
    kmovq k1, r10
    vmovdqu8 zmmword ptr [r9] {k1}, zmm16
    ret
.endm

# The AVX2 classes up to 2048 bytes.
.macro SET_AVX2_CLASSES p
    vmovd xmm0, esi
    cmp rdx, 32
    jb .L\p\()_avx2_below_32
    vpbroadcastb ymm0, xmm0
    cmp rdx, 64
    ja .L\p\()_avx2_above_64
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm0
    vzeroupper
    ret
    # n < 32, as the copy's.
    .p2align 6
.L\p\()_avx2_below_32:
    vpbroadcastb xmm0, xmm0
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
    mov byte ptr [rdi], sil
    mov byte ptr [rdi + r9], sil
    mov byte ptr [rdi + rdx - 1], sil
.L\p\()_avx2_none:
    ret
    .p2align 6
.L\p\()_avx2_4_7:
    vmovd dword ptr [rdi], xmm0
    vmovd dword ptr [rdi + rdx - 4], xmm0
    ret
.L\p\()_avx2_8_15:
    vmovq qword ptr [rdi], xmm0
    vmovq qword ptr [rdi + rdx - 8], xmm0
    ret
.L\p\()_avx2_16_31:
    vmovdqu xmmword ptr [rdi], xmm0
    vmovdqu xmmword ptr [rdi + rdx - 16], xmm0
    ret
    .p2align 6
.L\p\()_avx2_above_64:
    cmp rdx, 2048
    ja .L\p\()_avx2_general
    vmovdqu ymmword ptr [rdi], ymm0
    vmovdqu ymmword ptr [rdi + 32], ymm0
    cmp rdx, 128
    ja .L\p\()_avx2_above_128
    vmovdqu ymmword ptr [rdi + rdx - 64], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm0
    vzeroupper
    ret
    .p2align 6
.L\p\()_avx2_above_128:
    vmovdqu ymmword ptr [rdi + 64], ymm0
    vmovdqu ymmword ptr [rdi + 96], ymm0
    cmp rdx, 256
    ja .L\p\()_avx2_257_2048
    vmovdqu ymmword ptr [rdi + rdx - 128], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 96], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 64], ymm0
    vmovdqu ymmword ptr [rdi + rdx - 32], ymm0
    vzeroupper
    ret
    # The first 128 bytes are stored; the last 128 and aligned 128-byte blocks between.
    .p2align 6
.L\p\()_avx2_257_2048:
    lea rcx, [rdi + rdx - 128]
    mov r8, rdi
    and r8, -32
    sub r8, -128
    # n > 256: r8 <= dst + 128 < rcx, so the loop runs at least once.
.L\p\()_avx2_loop_2048:
    vmovdqa ymmword ptr [r8], ymm0
    vmovdqa ymmword ptr [r8 + 32], ymm0
    vmovdqa ymmword ptr [r8 + 64], ymm0
    vmovdqa ymmword ptr [r8 + 96], ymm0
    sub r8, -128
    cmp r8, rcx
    jb .L\p\()_avx2_loop_2048
    vmovdqu ymmword ptr [rcx], ymm0
    vmovdqu ymmword ptr [rcx + 32], ymm0
    vmovdqu ymmword ptr [rcx + 64], ymm0
    vmovdqu ymmword ptr [rcx + 96], ymm0
    vzeroupper
    ret
.endm

# The three forms of an entry (blockmem::set_entry!'s `bodies`).
.macro SET_ENTRY_AVX512 p, above, hint:vararg
    ENTRY_START
    SET_AVX512_FIRST \p
    SET_AVX512_CLASSES \p, none
    WAY_ON_AVX512 \p, \above, \hint
.endm

.macro SET_ENTRY_AVX2 p, general
    ENTRY_START
    SET_AVX2_CLASSES \p
    WAY_ON_AVX2 \p, \general
.endm

.macro SET_ENTRY_ROUTED p, route, flag, general, above, hint:vararg
    ENTRY_START
    SET_AVX512_FIRST_ROUTED \p, \route
    ROUTE_CLOSED \p
    SET_AVX512_CLASSES \p, \route
    WAY_ON_AVX512 \p, \above, \hint
    ROUTE_LEVEL \p, \flag, \general
    SET_AVX2_CLASSES \p
    WAY_ON_AVX2 \p, \general
.endm
