/* One size copied or set again and again, around the sizes where blockmem's C entries
 * hand a call to the decision table (copies above 2,112 bytes, sets above 2,048): the C
 * library's memcpy/memset and blockmem's blockmem_memcpy/_memset (from the C ABI
 * library named on the command line), side by side in one process, each size timed in
 * turn (each implementation first in turn). Two patterns: one destination again and
 * again (in the L1 cache), and 64 destinations 8 KiB apart in turn (512 KiB: in the L2
 * cache, and more pages than blockmem's memory of pages written lately keeps per
 * thread). Sources 64 bytes past a page start; destinations at page starts. Prints
 * the median TSC ticks per call over 9 samples of 20,000 calls and the C library's
 * time over blockmem's (above 1: blockmem faster).
 *
 * On CPUs with fast short `rep movsb` (FSRM) glibc's memmove runs its vector loop up
 * to 2,112 bytes and `rep movsb` above; blockmem's C entries copy inline to 2,112
 * bytes for that reason (`arch::x86_64::masked::COPY_WIDE_MAX`).
 *
 * build: cc -O2 -fno-builtin -o edge_loops scripts/workloads/edge_loops.c -ldl
 * usage: edge_loops LIBBLOCKMEM_FFI_SO SIZE... */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "timing.h"

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*set_fn)(void *, int, size_t);

enum { CALLS = 20000, SAMPLES = 9, STRIDE = 8192 };

/* Ticks per call: k 0/1 = libc/blockmem copy, 2/3 = libc/blockmem set. */
static double run(int k, copy_fn bc, set_fn bs, char *dst, const char *src, size_t n,
                  int buffers) {
    uint64_t t0 = __rdtsc();
    for (int r = 0; r < CALLS; r++) {
        char *d = dst + (size_t)(r % buffers) * STRIDE;
        switch (k) {
        case 0: memcpy(d, src, n); break;
        case 1: bc(d, src, n); break;
        case 2: memset(d, r, n); break;
        default: bs(d, r, n); break;
        }
    }
    return (double)(__rdtsc() - t0) / CALLS;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBBLOCKMEM_FFI_SO SIZE...\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    copy_fn bc = lib ? (copy_fn)dlsym(lib, "blockmem_memcpy") : NULL;
    set_fn bs = lib ? (set_fn)dlsym(lib, "blockmem_memset") : NULL;
    if (!bc || !bs) {
        fprintf(stderr, "%s: no blockmem_memcpy/_memset in %s: %s\n", argv[0], argv[1],
                dlerror());
        return 1;
    }
    char *dst = aligned_alloc(4096, 64 * STRIDE + 8192), *src = aligned_alloc(4096, 16384);
    if (!dst || !src) return 1;
    memset(dst, 1, 64 * STRIDE + 8192);
    for (int i = 0; i < 16384; i++) src[i] = (char)(i * 7 + 1);
    printf("TSC ticks per call (median of %d samples of %d calls), and libc's time / blockmem's\n",
           SAMPLES, CALLS);
    printf("%8s %9s %22s %22s\n", "size", "buffers", "copy libc / blockmem", "set libc / blockmem");
    for (int a = 2; a < argc; a++) {
        size_t n = strtoul(argv[a], NULL, 0);
        if (n < 1 || n > 8192) {
            fprintf(stderr, "%s: sizes from 1 to 8192 bytes\n", argv[0]);
            return 2;
        }
        /* Both copy the right bytes and set nothing around them. */
        for (int k = 0; k < 4; k++) {
            memset(dst, 0, n + 128);
            if (k == 0) memcpy(dst + 64, src + 64, n);
            if (k == 1) bc(dst + 64, src + 64, n);
            if (k == 2) memset(dst + 64, 0x5a, n);
            if (k == 3) bs(dst + 64, 0x5a, n);
            for (size_t i = 0; i < n + 128; i++) {
                int want = i < 64 || i >= 64 + n ? 0 : k < 2 ? src[i] : 0x5a;
                if ((unsigned char)dst[i] != (unsigned char)want) {
                    fprintf(stderr, "%s: implementation %d wrong at byte %zu of %zu\n", argv[0],
                            k, i, n);
                    return 1;
                }
            }
        }
        for (int buffers = 1; buffers <= 64; buffers *= 64) {
            double t[4][SAMPLES];
            for (int s = 0; s < SAMPLES; s++)
                for (int j = 0; j < 4; j++) {
                    int k = (j + s) % 4;
                    t[k][s] = run(k, bc, bs, dst, src + 64, n, buffers);
                }
            for (int k = 0; k < 4; k++) qsort(t[k], SAMPLES, sizeof t[k][0], by_value);
            double m[4];
            for (int k = 0; k < 4; k++) m[k] = t[k][SAMPLES / 2];
            printf("%6zu B %9d %6.1f / %5.1f (%5.3f) %6.1f / %5.1f (%5.3f)\n", n, buffers, m[0],
                   m[1], m[0] / m[1], m[2], m[3], m[2] / m[3]);
        }
    }
    return 0;
}
