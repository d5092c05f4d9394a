/* Sets of one size at 4,000 addresses scattered over 64 MiB, every line they touch
 * flushed and 32 MiB of other data read before each sample (the lab's `doors` cold
 * fixed sizes, in one process): the C library's memset, blockmem's (`blockmem_memset`
 * from the C ABI library named on the command line), and a set storing each line the
 * bytes lie in exactly once (a masked store for the first line's bytes, one whole-line
 * store per line between, a masked store for the last line's; a loop, so its line
 * count may vary call to call). Prints the median ticks per call over 25 samples and
 * the C library's time over each one's (above 1: faster than the C library).
 *
 * On lines in memory a set's time follows the number of stores it issues more than the
 * number of lines: blockmem's sets of 513-2048 bytes store each line once past their
 * first 256 bytes (`arch::x86_64::entry`'s docs).
 *
 * build: cc -O2 -fno-builtin -mavx512f -mavx512bw -o cold_sets scripts/workloads/cold_sets.c -ldl
 * usage: cold_sets LIBBLOCKMEM_FFI_SO SIZE...   (needs AVX-512F and BW) */
#include <dlfcn.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "timing.h"

typedef void *(*set_fn)(void *, int, size_t);

/* n >= 65: each line once */
__attribute__((noinline)) static void *line_set(void *d, int c, size_t n) {
    __m512i v = _mm512_set1_epi8((char)c);
    uintptr_t s = (uintptr_t)d, l = s + n - 1, first = s & ~63ul, last = l & ~63ul;
    _mm512_mask_storeu_epi8((void *)first, (__mmask64)(~0ull << (s & 63)), v);
    for (uintptr_t a = first + 64; a < last; a += 64) _mm512_store_si512((void *)a, v);
    _mm512_mask_storeu_epi8((void *)last, (__mmask64)(~0ull >> (63 - (l & 63))), v);
    return d;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBBLOCKMEM_FFI_SO SIZE...\n", argv[0]);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
        fprintf(stderr, "%s: this CPU lacks AVX-512F/BW\n", argv[0]);
        return 1;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    set_fn bm = lib ? (set_fn)dlsym(lib, "blockmem_memset") : NULL;
    if (!bm) {
        fprintf(stderr, "%s: no blockmem_memset in %s: %s\n", argv[0], argv[1], dlerror());
        return 1;
    }
    enum { CALLS = 4000, SAMPLES = 25, M = 3 };
    const set_fn fns[M] = {memset, bm, line_set};
    const char *names[M] = {"libc", "blockmem", "each line once"};
    const size_t span = 64 << 20, other = 32 << 20;
    char *arena = aligned_alloc(4096, span + 8192), *sweep = aligned_alloc(4096, other);
    size_t *at = malloc(CALLS * sizeof *at);
    if (!arena || !sweep || !at) return 1;
    memset(arena, 1, span + 8192);
    memset(sweep, 2, other);
    printf("ticks per call (median of %d samples), and libc's time / each's\n", SAMPLES);
    printf("%8s", "size");
    for (int k = 0; k < M; k++) printf(" %22s", names[k]);
    printf("\n");
    for (int a = 2; a < argc; a++) {
        size_t n = strtoul(argv[a], NULL, 0);
        if (n < 65 || n > 8192) {
            fprintf(stderr, "%s: sizes from 65 to 8192 bytes\n", argv[0]);
            return 2;
        }
        srand(7);
        for (int i = 0; i < CALLS; i++) at[i] = ((size_t)rand() * 7919u) % (span - n);
        /* Every method sets the right bytes and nothing around them. */
        for (int k = 0; k < M; k++) {
            long i = set_wrong_at(fns[k], arena, n, 70);
            if (i >= 0) {
                fprintf(stderr, "%s: %s wrong at byte %ld of %zu\n", argv[0], names[k], i, n);
                return 1;
            }
        }
        double t[M][SAMPLES];
        for (int r = 0; r < SAMPLES; r++)
            for (int j = 0; j < M; j++) {
                int k = (j + r) % M; /* each method first in turn */
                evict(arena, at, CALLS, n, sweep, other);
                _mm_mfence();
                uint64_t t0 = __rdtsc();
                for (int i = 0; i < CALLS; i++) fns[k](arena + at[i], i, n);
                _mm_mfence();
                t[k][r] = (double)(__rdtsc() - t0) / CALLS;
            }
        printf("%6zu B", n);
        for (int k = 0; k < M; k++) qsort(t[k], SAMPLES, sizeof t[k][0], by_value);
        for (int k = 0; k < M; k++)
            printf(" %14.0f (%5.3f)", t[k][SAMPLES / 2], t[0][SAMPLES / 2] / t[k][SAMPLES / 2]);
        printf("\n");
    }
    return 0;
}
