/* Sets of one size above 2 KiB, the sizes where glibc's memset and blockmem's tables
 * run `rep stosb`, done six ways side by side in one process: the C library's memset,
 * `rep stosb`, 64-byte vector stores (aligned between an unaligned head and tail),
 * the same with each line prefetched for ownership 1 KiB ahead, a vector head and tail
 * with `rep stosb` over the aligned lines between, and non-temporal stores (then
 * `sfence`). Two patterns: `cold`, calls at scattered addresses over 256 MiB whose
 * lines are all flushed and 64 MiB of other data read before each sample (up to 4,000
 * calls, 8 MiB in all); `hot`, 64 blocks within 512 KiB set again and again. Prints
 * the median TSC ticks per call over 15 samples and the C library's time over each
 * one's (above 1: faster than the C library).
 *
 * It asks whether anything stores a few KiB to lines in memory faster than `rep
 * stosb`: on a 2-vCPU AMD EPYC Zen 5 KVM guest nothing did but non-temporal stores
 * from 16 KiB, which a block in cache pays for many times over (docs/results, the Zen
 * 5 host's `copy-2112/big_sets.txt`).
 *
 * build: cc -O2 -fno-builtin -mavx512f -mavx512bw -mprfchw -o big_sets scripts/workloads/big_sets.c
 * usage: big_sets cold|hot SIZE...   (needs AVX-512F and BW) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "timing.h"

typedef void *(*set_fn)(void *, int, size_t);

__attribute__((noinline)) static void *rep_set(void *d, int c, size_t n) {
    void *r = d;
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return r;
}

/* n >= 128 for every way below. */
__attribute__((noinline)) static void *vec_set(void *d, int c, size_t n) {
    __m512i v = _mm512_set1_epi8((char)c);
    char *p = d, *a = (char *)(((uintptr_t)p + 64) & ~63ul), *e = p + n - 64;
    _mm512_storeu_si512(p, v);
    for (; a < e; a += 64) _mm512_store_si512(a, v);
    _mm512_storeu_si512(e, v);
    return d;
}

__attribute__((noinline)) static void *prefetchw_set(void *d, int c, size_t n) {
    __m512i v = _mm512_set1_epi8((char)c);
    char *p = d, *a = (char *)(((uintptr_t)p + 64) & ~63ul), *e = p + n - 64;
    for (char *q = a; q < a + 1024 && q < e; q += 64) _m_prefetchw(q);
    _mm512_storeu_si512(p, v);
    for (; a < e; a += 64) {
        _m_prefetchw(a + 1024);
        _mm512_store_si512(a, v);
    }
    _mm512_storeu_si512(e, v);
    return d;
}

__attribute__((noinline)) static void *aligned_rep_set(void *d, int c, size_t n) {
    __m512i v = _mm512_set1_epi8((char)c);
    char *p = d, *a = (char *)(((uintptr_t)p + 64) & ~63ul);
    size_t m = (((uintptr_t)(p + n)) & ~63ul) - (uintptr_t)a; /* the tail store covers the rest */
    _mm512_storeu_si512(p, v);
    _mm512_storeu_si512(p + n - 64, v);
    __asm__ volatile("rep stosb" : "+D"(a), "+c"(m) : "a"(c) : "memory");
    return d;
}

__attribute__((noinline)) static void *nt_set(void *d, int c, size_t n) {
    /* Whole lines non-temporal; the partial lines at the ends with masked temporal
     * stores of their bytes only (a temporal store into a line with a non-temporal one
     * in flight costs the line's write-combining flush). */
    __m512i v = _mm512_set1_epi8((char)c);
    uintptr_t p = (uintptr_t)d, a = (p + 63) & ~63ul, e = (p + n) & ~63ul;
    if (a > p) _mm512_mask_storeu_epi8((void *)(a - 64), ~0ull << (p & 63), v);
    for (; a < e; a += 64) _mm512_stream_si512((void *)a, v);
    _mm_sfence();
    if (e < p + n) _mm512_mask_storeu_epi8((void *)e, ~0ull >> (64 - ((p + n) & 63)), v);
    return d;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "cold") && strcmp(argv[1], "hot"))) {
        fprintf(stderr, "usage: %s cold|hot SIZE...\n", argv[0]);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
        fprintf(stderr, "%s: this CPU lacks AVX-512F/BW\n", argv[0]);
        return 1;
    }
    enum { M = 6, SAMPLES = 15, MAX_CALLS = 4000 };
    const set_fn fns[M] = {memset, rep_set, vec_set, prefetchw_set, aligned_rep_set, nt_set};
    const char *names[M] = {"libc", "rep stosb", "vectors", "prefetchw", "head+rep", "nt"};
    const int hot = !strcmp(argv[1], "hot");
    const size_t span = 256ul << 20, other = 64ul << 20;
    char *arena = aligned_alloc(4096, span + 65536), *sweep = aligned_alloc(4096, other);
    size_t *at = malloc(MAX_CALLS * sizeof *at);
    if (!arena || !sweep || !at) return 1;
    memset(arena, 1, span + 65536);
    memset(sweep, 2, other);
    printf("%s: TSC ticks per call (median of %d samples), and libc's time / each's\n",
           argv[1], SAMPLES);
    printf("%8s", "size");
    for (int k = 0; k < M; k++) printf(" %17s", names[k]);
    printf("\n");
    for (int a = 2; a < argc; a++) {
        size_t n = strtoul(argv[a], NULL, 0);
        if (n < 128 || n > 65536) {
            fprintf(stderr, "%s: sizes from 128 to 65536 bytes\n", argv[0]);
            return 2;
        }
        int calls = hot ? 64 : (int)((8ul << 20) / n);
        if (calls > MAX_CALLS) calls = MAX_CALLS;
        srand(7);
        for (int i = 0; i < calls; i++)
            at[i] = hot ? (size_t)i * (n + 64) % (512 << 10)
                        : ((size_t)rand() * 7919u) % (span - n);
        /* Every way sets the right bytes and nothing around them. */
        for (int k = 0; k < M; k++) {
            long i = set_wrong_at(fns[k], arena, n, 256);
            if (i >= 0) {
                fprintf(stderr, "%s: %s wrong at byte %ld of %zu\n", argv[0], names[k], i, n);
                return 1;
            }
        }
        double t[M][SAMPLES];
        for (int r = 0; r < SAMPLES; r++)
            for (int j = 0; j < M; j++) {
                int k = (j + r) % M; /* each way first in turn */
                if (hot) {
                    for (int i = 0; i < calls; i++) fns[k](arena + at[i], 0, n);
                } else {
                    evict(arena, at, calls, n, sweep, other);
                }
                _mm_mfence();
                uint64_t t0 = __rdtsc();
                for (int i = 0; i < calls; i++) fns[k](arena + at[i], i, n);
                _mm_mfence();
                t[k][r] = (double)(__rdtsc() - t0) / calls;
            }
        for (int k = 0; k < M; k++) qsort(t[k], SAMPLES, sizeof t[k][0], by_value);
        printf("%6zu B", n);
        for (int k = 0; k < M; k++)
            printf(" %9.0f (%5.3f)", t[k][SAMPLES / 2], t[0][SAMPLES / 2] / t[k][SAMPLES / 2]);
        printf("\n");
    }
    return 0;
}
