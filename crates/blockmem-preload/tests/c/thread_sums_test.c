/* thread_sums_test [THREADS [LOG2]]: THREADS threads (default 10), each copying
 * (memcpy), moving (overlapping memmove, both directions) and setting (memset) every
 * power-of-two size 2^k for k = 0..LOG2 (default 23: 8 MiB) and the size between each
 * two classes, 3 * 2^(k-1) + 1 for k = 2..LOG2 (up to 12 MiB + 1: past the built-in
 * tables' streaming thresholds, so large kernels, probes and non-temporal stores run),
 * over data drawn from a seed per thread. Each thread folds every result into a
 * checksum; stdout holds the checksums in thread order and nothing else, so it is
 * byte-identical with and without the shim. stderr gets, per thread, its kernel tid
 * and the calls and bytes it made (to compare with BLOCKMEM_STATS and traces).
 * Exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_THREADS 400
#define SHIFT_MAX 4096

static size_t buf_bytes; /* the largest size, two shifts and an offset */

/* Called through pointers so that the compiler neither inlines nor fortifies them. */
static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;

struct worker {
    unsigned id;
    pid_t tid;
    unsigned long long calls, bytes;
    uint64_t sum;
};

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A word-at-a-time FNV-style fold of n bytes. The fixed 8-byte memcpy is a load the
 * compiler emits inline, never a call. */
static uint64_t fold(uint64_t h, const unsigned char *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (h ^ n) * 0x100000001b3ull;
}

static void fill(unsigned char *p, size_t n, uint64_t *seed) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t r = next_random(seed);
        memcpy(p + i, &r, 8);
    }
}

static size_t sizes[64];
static unsigned nsizes;

static void *work(void *arg) {
    struct worker *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    uint64_t seed = 0x9E3779B97F4A7C15ull * (w->id + 1);
    unsigned char *src = malloc(buf_bytes), *dst = malloc(buf_bytes);
    if (!src || !dst)
        abort();
    fill(src, buf_bytes, &seed);
    fill(dst, buf_bytes, &seed);
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < nsizes; i++) {
        size_t n = sizes[i];
        size_t so = next_random(&seed) % 64, doff = next_random(&seed) % 64;
        size_t shift = 1 + next_random(&seed) % (SHIFT_MAX - 1);
        unsigned char *d = dst + SHIFT_MAX + doff;

        p_memcpy(d, src + so, n);
        h = fold(h, d, n);
        /* Overlapping moves: forward (to a higher address), then back. */
        p_memmove(d + shift, d, n);
        h = fold(h, d + shift, n);
        p_memmove(d - shift, d, n);
        h = fold(h, d - shift, n);
        p_memset(d, (int)(next_random(&seed) & 0xff), n);
        h = fold(h, d - shift, n + 2 * shift);
        w->calls += 4;
        w->bytes += 4 * (unsigned long long)n;
    }
    w->sum = h;
    free(src);
    free(dst);
    return NULL;
}

int main(int argc, char **argv) {
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
    unsigned log2 = argc > 2 ? (unsigned)atoi(argv[2]) : 23;
    if (threads < 1 || threads > MAX_THREADS || log2 < 2 || log2 > 26)
        return 2;
    for (unsigned k = 0; k <= log2; k++) {
        sizes[nsizes++] = (size_t)1 << k;
        if (k >= 2)
            sizes[nsizes++] = ((size_t)3 << (k - 1)) + 1; /* between two classes */
    }
    buf_bytes = ((size_t)3 << (log2 - 1)) + 8 + 2 * SHIFT_MAX + 64;
    static pthread_t t[MAX_THREADS];
    static struct worker w[MAX_THREADS];
    for (unsigned i = 0; i < threads; i++) {
        w[i] = (struct worker){.id = i};
        if (pthread_create(&t[i], NULL, work, &w[i]))
            return 2;
    }
    for (unsigned i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < threads; i++) {
        printf("thread %u checksum %016llx\n", i, (unsigned long long)w[i].sum);
        fprintf(stderr, "thread_sums_test: thread %u tid %d calls %llu bytes %llu\n", i,
                (int)w[i].tid, w[i].calls, w[i].bytes);
    }
    return 0;
}
