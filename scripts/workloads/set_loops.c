/* Sets one block again and again with four methods, side by side in one process: the C
 * library's memset, `rep stosb`, 32-byte stores and 64-byte stores (the last two in the
 * shape of blockmem's `avx2` and `avx512` set loops: unaligned head and tail, aligned
 * blocks of four vectors between). Prints the median time-stamp-counter ticks per call.
 *
 *   hot:   the block set 2,000 to 40 million bytes' worth of times in a row (a program
 *          setting one buffer again and again: the block stays in the L1 or L2 cache);
 *          median of 21 samples per size.
 *   after: one set of the block timed after reading MiB of other data (the block then
 *          in the L3, or in memory), median of 15 for each amount read.
 *
 * It is what blockmem's memory of written pages rests on (`dispatch::WRITTEN`): a set
 * of a block in cache runs faster with vector stores than with `rep stosb` on some
 * CPUs, and slower once the block has left the L2.
 *
 * build: cc -O2 -fno-builtin -mavx2 -mavx512f -mavx512bw -o set_loops scripts/workloads/set_loops.c
 * usage: set_loops hot|after   (needs AVX-512F and BW) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "timing.h"

typedef void (*set_fn)(void *, int, size_t);

static void libc_set(void *d, int c, size_t n) { memset(d, c, n); }

__attribute__((noinline)) static void rep_set(void *d, int c, size_t n) {
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
}

/* n >= 256 */
__attribute__((noinline)) static void v32_set(void *d, int c, size_t n) {
    __m256i v = _mm256_set1_epi8((char)c);
    char *p = d, *e = p + n - 128;
    for (int i = 0; i < 4; i++) _mm256_storeu_si256((__m256i *)(p + 32 * i), v);
    for (char *a = (char *)(((uintptr_t)p & ~31ul) + 128); a < e; a += 128)
        for (int i = 0; i < 4; i++) _mm256_store_si256((__m256i *)(a + 32 * i), v);
    for (int i = 0; i < 4; i++) _mm256_storeu_si256((__m256i *)(e + 32 * i), v);
    _mm256_zeroupper();
}

/* n >= 512 */
__attribute__((noinline)) static void v64_set(void *d, int c, size_t n) {
    __m512i v = _mm512_set1_epi8((char)c);
    char *p = d, *e = p + n - 256;
    for (int i = 0; i < 4; i++) _mm512_storeu_si512(p + 64 * i, v);
    for (char *a = (char *)(((uintptr_t)p & ~63ul) + 256); a < e; a += 256)
        for (int i = 0; i < 4; i++) _mm512_store_si512(a + 64 * i, v);
    for (int i = 0; i < 4; i++) _mm512_storeu_si512(e + 64 * i, v);
}


static void read_through(const char *b, size_t len) {
    uint64_t x = 0;
    for (size_t i = 0; i < len; i += 64) x += (unsigned char)b[i];
    sink = x;
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "hot") && strcmp(argv[1], "after"))) {
        fprintf(stderr, "usage: %s hot|after\n", argv[0]);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
        fprintf(stderr, "%s: this CPU lacks AVX-512F/BW\n", argv[0]);
        return 1;
    }
    const set_fn fns[] = {libc_set, rep_set, v32_set, v64_set};
    const char *names[] = {"libc", "rep stosb", "32-byte", "64-byte"};
    char *buf = aligned_alloc(4096, 2 << 20);
    size_t big_len = 64 << 20;
    char *big = aligned_alloc(4096, big_len);
    if (!buf || !big) return 1;
    memset(buf, 1, 2 << 20);
    memset(big, 2, big_len);
    char *d = buf + 192;
    printf("ticks per call (median)%16s", "");
    for (int k = 0; k < 4; k++) printf(" %10s", names[k]);
    printf("\n");
    if (!strcmp(argv[1], "hot")) {
        for (size_t n = 2048; n <= (1 << 20); n *= 2) {
            long iters = 40000000 / (long)(n + 256);
            if (iters < 200) iters = 200;
            printf("%8zu B, set again and again:     ", n);
            for (int k = 0; k < 4; k++) {
                double t[21];
                for (int r = 0; r < 21; r++) {
                    fns[k](d, 1, n);
                    uint64_t t0 = __rdtsc();
                    for (long i = 0; i < iters; i++) fns[k](d, (int)i & 255, n);
                    t[r] = (double)(__rdtsc() - t0) / (double)iters;
                }
                qsort(t, 21, sizeof t[0], by_value);
                printf(" %10.1f", t[10]);
            }
            printf("\n");
        }
    } else {
        const size_t sizes[] = {4096, 16384, 65536, 262144};
        const size_t reads[] = {0, 2, 4, 8, 16, 64};
        for (int s = 0; s < 4; s++)
            for (int w = 0; w < 6; w++) {
                size_t n = sizes[s];
                printf("%8zu B, after reading %2zu MiB:  ", n, reads[w]);
                for (int k = 0; k < 4; k++) {
                    double t[15];
                    for (int r = 0; r < 15; r++) {
                        fns[k](d, 1, n);
                        read_through(big, reads[w] << 20);
                        _mm_mfence();
                        uint64_t t0 = __rdtsc();
                        fns[k](d, r, n);
                        _mm_mfence();
                        t[r] = (double)(__rdtsc() - t0);
                    }
                    qsort(t, 15, sizeof t[0], by_value);
                    printf(" %10.0f", t[7]);
                }
                printf("\n");
            }
    }
    return 0;
}
