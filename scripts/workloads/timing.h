/* What the C workloads here share: the median's sort order, the eviction of a cold
 * sample's lines, and the byte check of a set. Included by each program; nothing to
 * build on its own. */
#ifndef BLOCKMEM_WORKLOADS_TIMING_H
#define BLOCKMEM_WORKLOADS_TIMING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <x86intrin.h>

/* qsort's order for doubles. */
static inline int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static volatile uint64_t sink;

/* Before a cold sample: every line the calls at `at` (n bytes each) touch flushed, then
 * `other` bytes of other data read, so that the cache holds none of them. */
static inline void evict(char *arena, const size_t *at, int calls, size_t n, const char *sweep,
                  size_t other) {
    for (int i = 0; i < calls; i++)
        for (size_t b = at[i] & ~63ul; b < at[i] + n; b += 64) _mm_clflush(arena + b);
    uint64_t x = 0;
    for (size_t i = 0; i < other; i += 64) x += (unsigned char)sweep[i];
    sink = x;
}

/* Sets n bytes 5 bytes into a zeroed `buf` with `f` and checks them and the `around`
 * bytes after; returns the first wrong byte's index, or -1. `buf` holds n + around
 * bytes. */
static inline long set_wrong_at(void *(*f)(void *, int, size_t), char *buf, size_t n, size_t around) {
    memset(buf, 0, n + around);
    f(buf + 5, 0x5a, n);
    for (size_t i = 0; i < n + around; i++)
        if (buf[i] != ((i >= 5 && i < 5 + n) ? 0x5a : 0)) return (long)i;
    return -1;
}

#endif
