/* threads_test: 8 threads, each running a random mix of memcpy, memmove (both
 * directions, overlapping), memset, bzero and mempcpy over sizes from 0 to 1 MiB at
 * random alignments, all reading a shared source, each checking every result against
 * ref.c. Built -O2 -D_FORTIFY_SOURCE=2 -pthread; exits 0 when everything matched.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ref.h"

#define THREADS 8
#define ITERATIONS 6000
#define MAX_SIZE (1u << 20)
#define BUF (MAX_SIZE + 8192)

static unsigned char *shared_src; /* read concurrently by every thread */

static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;
static void (*volatile p_bzero)(void *, size_t) = bzero;
static void *(*volatile p_mempcpy)(void *, const void *, size_t) = mempcpy;

struct worker {
    unsigned id;
    unsigned long long calls;
    int failures;
};

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Mostly small sizes, some large: the mix real programs have. */
static size_t random_size(uint64_t *s) {
    uint64_t r = next_random(s);
    unsigned bits = (unsigned)(r % 21); /* 0..20 */
    size_t max = (size_t)1 << bits;
    return (size_t)((r >> 8) % (max + 1));
}

static void *work(void *arg) {
    struct worker *w = arg;
    uint64_t seed = 0x9E3779B97F4A7C15ull * (w->id + 1);
    unsigned char *a = malloc(BUF), *e = malloc(BUF);
    if (!a || !e) {
        w->failures++;
        return NULL;
    }
    for (unsigned it = 0; it < ITERATIONS; it++) {
        size_t n = random_size(&seed);
        size_t dal = next_random(&seed) % 64, sal = next_random(&seed) % 64;
        unsigned op = (unsigned)(next_random(&seed) % 6);
        size_t span = n + 8192;
        ref_fill(a, span, w->id + it);
        ref_fill(e, span, w->id + it);
        unsigned char *d = a + dal, *de = e + dal;
        const unsigned char *s = shared_src + sal;
        void *ret = NULL, *want = d;
        switch (op) {
        case 0:
            ref_copy(de, s, n);
            ret = p_memcpy(d, s, n);
            break;
        case 1: { /* overlapping move, forward or backward by up to 4095 bytes */
            size_t shift = 1 + next_random(&seed) % 4095;
            int backward = (int)(next_random(&seed) & 1);
            size_t from = dal + (backward ? shift : 0), to = dal + (backward ? 0 : shift);
            ref_move(e + to, e + from, n);
            ret = p_memmove(a + to, a + from, n);
            want = a + to;
            break;
        }
        case 2:
            ref_set(de, (unsigned char)it, n);
            ret = p_memset(d, (int)it, n);
            break;
        case 3:
            ref_set(de, 0, n);
            p_bzero(d, n);
            ret = want;
            break;
        case 4:
            ref_copy(de, s, n);
            ret = p_mempcpy(d, s, n);
            want = d + n;
            break;
        default: /* memmove between disjoint ranges */
            ref_copy(de, s, n);
            ret = p_memmove(d, s, n);
            break;
        }
        w->calls++;
        if (ret != want || ref_first_diff(a, e, span) >= 0) {
            if (w->failures++ < 5)
                fprintf(stderr, "thread %u: op %u n=%zu dal=%zu sal=%zu mismatch\n", w->id, op, n,
                        dal, sal);
        }
    }
    free(a);
    free(e);
    return NULL;
}

int main(void) {
    shared_src = malloc(BUF);
    if (!shared_src)
        return 2;
    ref_fill(shared_src, BUF, 99);
    pthread_t t[THREADS];
    struct worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.id = i};
        if (pthread_create(&t[i], NULL, work, &w[i]))
            return 2;
    }
    int failures = 0;
    unsigned long long calls = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
        calls += w[i].calls;
    }
    printf("threads_test: %d threads, %llu checked calls, %d failures\n", THREADS, calls, failures);
    free(shared_src);
    return failures ? 1 : 0;
}
