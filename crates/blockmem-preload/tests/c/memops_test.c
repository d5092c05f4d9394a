/* memops_test: differential test of block memory operations against ref.c.
 *
 * Built with -O2 -D_FORTIFY_SOURCE=2, in one of two flavours:
 *   - default: the C library names the shim exports (memcpy, memmove, memset, bzero,
 *     mempcpy, __memcpy_chk, __memmove_chk, __memset_chk, __mempcpy_chk), called both
 *     through volatile function pointers (so every symbol is reached whatever the
 *     compiler inlines) and as plain calls into fixed-size global arrays (so the
 *     compiler emits its own fortified calls). Run it with and without
 *     LD_PRELOAD=libblockmem_preload.so.
 *   - -DUSE_BLOCKMEM_API: blockmem_copy/move/set/zero with every hint and
 *     blockmem_memcpy/memmove/memset, linked against the static library, plus the
 *     introspection API.
 *
 * usage: memops_test [--expect-shim] [--overlap-copy] [--force-each] MODE...
 *   grid      sizes 0..=1024 x destination alignments 0..63 x source alignments (all
 *             64 for a set of sizes, two per alignment otherwise), every op, and
 *             overlapping moves in both directions
 *   quick     a thinner grid (for running once per forced kernel)
 *   large     sizes from 2 KiB to 160 MiB, misaligned, overlapping
 *   medium    three sizes from 64 KiB to 2 MiB, once per op
 *   threaded  start and join a thread: the modes after it run as in a process that has
 *             had a second thread (the entries' 1-15 byte copies keep to the bytes' lines)
 *   preinit   check that calls made from .preinit_array (before any shared object's
 *             constructor, so before the shim's) were correct
 *   chkfail=NAME   call NAME (a _chk function) with dstlen < n: must abort
 *   api       (API flavour) introspection: version, kernels, decisions, forcing,
 *             the decision table
 *   profile=DIR   (API flavour) profile loading, with files written into DIR
 *   --expect-shim   fail unless every symbol resolves into libblockmem_preload
 *   --overlap-copy  also feed overlapping ranges to the memcpy family (the shim
 *                   promises memmove semantics for them; C does not)
 *   --force-each    (API flavour) run the modes once per available kernel
 *
 * Exit status 0 when everything matched; the first mismatches are printed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ref.h"
#ifdef USE_BLOCKMEM_API
#include "blockmem.h"
#endif

enum kind { K_COPY, K_MOVE, K_SET, K_ZERO };
enum ret { R_DST, R_END, R_VOID };

typedef void *(*op_fn)(void *dst, const void *src, size_t n, int byte, size_t dstcap);

struct op {
    const char *name;   /* what failures print */
    const char *symbol; /* dynamic symbol it reaches, for --expect-shim (or NULL) */
    enum kind kind;
    enum ret ret;
    op_fn call;
    int repeat; /* 1: reaches a symbol another entry covers: skip the all-pairs pass */
};

static int failures;
static int opt_overlap_copy;

#define MAX_REPORTED 10

static void fail(const char *what, const struct op *op, size_t n, size_t dal, long sal, long at,
                 int want, int got) {
    failures++;
    if (failures <= MAX_REPORTED)
        fprintf(stderr,
                "FAIL %s %s: n=%zu dst_align=%zu src_align/shift=%ld at byte %ld: want %d got %d\n",
                op->name, what, n, dal, sal, at, want, got);
}

/* ---- the operations under test --------------------------------------------------- */

#ifndef USE_BLOCKMEM_API
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memset_chk(void *dst, int c, size_t n, size_t dstlen);
void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);

/* Volatile pointers: the compiler cannot see through them, so each call reaches the
 * symbol the dynamic linker bound (the shim's, when preloaded). */
static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;
static void (*volatile p_bzero)(void *, size_t) = bzero;
static void *(*volatile p_mempcpy)(void *, const void *, size_t) = mempcpy;
static void *(*volatile p_memcpy_chk)(void *, const void *, size_t, size_t) = __memcpy_chk;
static void *(*volatile p_memmove_chk)(void *, const void *, size_t, size_t) = __memmove_chk;
static void *(*volatile p_memset_chk)(void *, int, size_t, size_t) = __memset_chk;
static void *(*volatile p_mempcpy_chk)(void *, const void *, size_t, size_t) = __mempcpy_chk;

static void *w_memcpy(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return p_memcpy(d, s, n);
}
static void *w_memmove(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return p_memmove(d, s, n);
}
static void *w_memset(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)s, (void)cap;
    return p_memset(d, c, n);
}
static void *w_bzero(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)s, (void)c, (void)cap;
    p_bzero(d, n);
    return NULL;
}
static void *w_mempcpy(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return p_mempcpy(d, s, n);
}
static void *w_memcpy_chk(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c;
    return p_memcpy_chk(d, s, n, cap);
}
static void *w_memmove_chk(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c;
    return p_memmove_chk(d, s, n, cap);
}
static void *w_memset_chk(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)s;
    return p_memset_chk(d, c, n, cap);
}
static void *w_mempcpy_chk(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c;
    return p_mempcpy_chk(d, s, n, cap);
}
#endif

/* Every buffer the grid uses: [guard | 0..63 alignment | up to 1024 + shifts | guard]. */
#define GUARD 64
/* Every size to MAXN_FULL with every alignment; on to MAXN (past the 2 KiB of the
 * assembly entries' inline loops) with a few. */
#define MAXN_FULL 1024
#define MAXN 2176
#define SHIFT_MAX 1024
#define SPAN (GUARD + SHIFT_MAX + 64 + MAXN + SHIFT_MAX + GUARD)
static unsigned char g_dst[SPAN] __attribute__((aligned(64)));
static unsigned char g_src[SPAN] __attribute__((aligned(64)));
static unsigned char g_exp[SPAN] __attribute__((aligned(64)));

#ifndef USE_BLOCKMEM_API
/* Plain calls into the fixed-size globals: with _FORTIFY_SOURCE=2 the compiler knows
 * the object size and emits its own __memcpy_chk & co. (or plain calls), as real
 * fortified programs do. The pointer arithmetic keeps the object visible. */
static void *f_memcpy(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return memcpy(g_dst + ((unsigned char *)d - g_dst), s, n);
}
static void *f_memmove(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return memmove(g_dst + ((unsigned char *)d - g_dst), s, n);
}
static void *f_memset(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)s, (void)cap;
    return memset(g_dst + ((unsigned char *)d - g_dst), c, n);
}
static void *f_mempcpy(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return mempcpy(g_dst + ((unsigned char *)d - g_dst), s, n);
}

static const struct op OPS[] = {
    {"memcpy", "memcpy", K_COPY, R_DST, w_memcpy, 0},
    {"memmove", "memmove", K_MOVE, R_DST, w_memmove, 0},
    {"memset", "memset", K_SET, R_DST, w_memset, 0},
    {"bzero", "bzero", K_ZERO, R_VOID, w_bzero, 0},
    {"mempcpy", "mempcpy", K_COPY, R_END, w_mempcpy, 0},
    {"__memcpy_chk", "__memcpy_chk", K_COPY, R_DST, w_memcpy_chk, 0},
    {"__memmove_chk", "__memmove_chk", K_MOVE, R_DST, w_memmove_chk, 0},
    {"__memset_chk", "__memset_chk", K_SET, R_DST, w_memset_chk, 0},
    {"__mempcpy_chk", "__mempcpy_chk", K_COPY, R_END, w_mempcpy_chk, 0},
    {"fortified memcpy", NULL, K_COPY, R_DST, f_memcpy, 1},
    {"fortified memmove", NULL, K_MOVE, R_DST, f_memmove, 1},
    {"fortified memset", NULL, K_SET, R_DST, f_memset, 1},
    {"fortified mempcpy", NULL, K_COPY, R_END, f_mempcpy, 1},
};
#else
/* The functions themselves, parenthesised: with the constant hint AUTO the header's
 * macros would call the memcpy-shaped entries instead, which are tested below. */
#define API_WRAPPERS(h, H)                                                               \
    static void *a_copy_##h(void *d, const void *s, size_t n, int c, size_t cap) {      \
        (void)c, (void)cap;                                                               \
        return (blockmem_copy)(d, s, n, H);                                               \
    }                                                                                     \
    static void *a_move_##h(void *d, const void *s, size_t n, int c, size_t cap) {      \
        (void)c, (void)cap;                                                               \
        return (blockmem_move)(d, s, n, H);                                               \
    }                                                                                     \
    static void *a_set_##h(void *d, const void *s, size_t n, int c, size_t cap) {       \
        (void)s, (void)cap;                                                               \
        return (blockmem_set)(d, c, n, H);                                                \
    }                                                                                     \
    static void *a_zero_##h(void *d, const void *s, size_t n, int c, size_t cap) {      \
        (void)s, (void)c, (void)cap;                                                      \
        return blockmem_zero(d, n, H);                                                    \
    }
/* The memcpy-shaped functions: entries of their own (no hint argument). */
static void *a_memcpy(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return blockmem_memcpy(d, s, n);
}
static void *a_memmove(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)c, (void)cap;
    return blockmem_memmove(d, s, n);
}
static void *a_memset(void *d, const void *s, size_t n, int c, size_t cap) {
    (void)s, (void)cap;
    return blockmem_memset(d, c, n);
}
API_WRAPPERS(auto, BLOCKMEM_HINT_AUTO)
API_WRAPPERS(reuse, BLOCKMEM_HINT_REUSE)
API_WRAPPERS(noreuse, BLOCKMEM_HINT_NO_REUSE)

static const struct op OPS[] = {
    {"blockmem_copy/auto", NULL, K_COPY, R_DST, a_copy_auto, 0},
    {"blockmem_copy/reuse", NULL, K_COPY, R_DST, a_copy_reuse, 1},
    {"blockmem_copy/noreuse", NULL, K_COPY, R_DST, a_copy_noreuse, 1},
    {"blockmem_move/auto", NULL, K_MOVE, R_DST, a_move_auto, 0},
    {"blockmem_move/reuse", NULL, K_MOVE, R_DST, a_move_reuse, 1},
    {"blockmem_move/noreuse", NULL, K_MOVE, R_DST, a_move_noreuse, 1},
    {"blockmem_set/auto", NULL, K_SET, R_DST, a_set_auto, 0},
    {"blockmem_set/reuse", NULL, K_SET, R_DST, a_set_reuse, 1},
    {"blockmem_set/noreuse", NULL, K_SET, R_DST, a_set_noreuse, 1},
    {"blockmem_zero/auto", NULL, K_ZERO, R_DST, a_zero_auto, 0},
    {"blockmem_zero/reuse", NULL, K_ZERO, R_DST, a_zero_reuse, 1},
    {"blockmem_zero/noreuse", NULL, K_ZERO, R_DST, a_zero_noreuse, 1},
    {"blockmem_memcpy", NULL, K_COPY, R_DST, a_memcpy, 0},
    {"blockmem_memmove", NULL, K_MOVE, R_DST, a_memmove, 0},
    {"blockmem_memset", NULL, K_SET, R_DST, a_memset, 0},
};
#endif

#define NOPS (sizeof OPS / sizeof OPS[0])

/* ---- one checked call -------------------------------------------------------------- */

/* The byte a set op writes for a given size (varies, never the pattern's). */
static int set_byte(size_t n) { return (int)(0x100 | ((n * 37u + 0xA5u) & 0xff)); }

static void check_return(const struct op *op, void *got, unsigned char *d, size_t n,
                         size_t dal, long sal) {
    void *want = op->ret == R_DST ? (void *)d : op->ret == R_END ? (void *)(d + n) : NULL;
    if (op->ret != R_VOID && got != want)
        fail("return value", op, n, dal, sal, (long)((unsigned char *)got - d), 0, 0);
}

/* Writes into e what op, given s, n and c, must write at its destination (the ranges
 * disjoint). */
static void expect_disjoint(const struct op *op, unsigned char *e, const unsigned char *s,
                            size_t n, int c) {
    switch (op->kind) {
    case K_COPY:
    case K_MOVE: ref_copy(e, s, n); break;
    case K_SET: ref_set(e, (unsigned char)c, n); break;
    case K_ZERO: ref_set(e, 0, n); break;
    }
}

/* Disjoint operation: dst = g_dst + GUARD + dal, src = g_src + GUARD + sal. */
static void check_disjoint(const struct op *op, size_t n, size_t dal, size_t sal) {
    size_t span = GUARD + dal + n + GUARD;
    unsigned char *d = g_dst + GUARD + dal;
    const unsigned char *s = g_src + GUARD + sal;
    unsigned char *e = g_exp + GUARD + dal;
    int c = set_byte(n);
    ref_fill(g_dst, span, 1);
    ref_fill(g_exp, span, 1);
    expect_disjoint(op, e, s, n, c);
    void *got = op->call(d, s, n, c, (size_t)(g_dst + SPAN - d));
    check_return(op, got, d, n, dal, (long)sal);
    long at = ref_first_diff(g_dst, g_exp, span);
    if (at >= 0)
        fail("bytes", op, n, dal, (long)sal, at - GUARD - (long)dal, g_exp[at], g_dst[at]);
}

/* Overlapping operation inside g_dst: src = base, dst = base + shift (shift may be
 * negative). */
static void check_overlap(const struct op *op, size_t n, size_t base_al, long shift) {
    size_t base = GUARD + SHIFT_MAX + base_al;
    unsigned char *s = g_dst + base;
    unsigned char *d = g_dst + (long)base + shift;
    size_t span = SPAN;
    size_t lo = GUARD, hi = base + n + (shift > 0 ? (size_t)shift : 0) + GUARD;
    if (hi > span || (long)base + shift < (long)lo)
        return;
    ref_fill(g_dst, hi, 2);
    ref_fill(g_exp, hi, 2);
    ref_move(g_exp + (long)base + shift, g_exp + base, n);
    void *got = op->call(d, s, n, 0, (size_t)(g_dst + SPAN - d));
    check_return(op, got, d, n, base_al, shift);
    long at = ref_first_diff(g_dst, g_exp, hi);
    if (at >= 0)
        fail("overlap bytes", op, n, base_al, shift, at - (long)base - shift, g_exp[at],
             g_dst[at]);
}

static int overlap_applies(const struct op *op) {
    return op->kind == K_MOVE || (op->kind == K_COPY && opt_overlap_copy);
}

static const size_t FULL_PAIR_SIZES[] = {0,  1,   3,   7,   8,   15,  16,  17,  31,  32,  33,
                                         63, 64,  65,  127, 128, 129, 255, 256, 257, 1023, 1024};

static void overlap_sizes(const struct op *op, size_t n, int quick) {
    static const long shifts[] = {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    size_t nsh = sizeof shifts / sizeof shifts[0];
    for (size_t i = 0; i < nsh; i++) {
        if (quick && i % 3)
            continue;
        for (int sign = -1; sign <= 1; sign += 2) {
            check_overlap(op, n, n % 64, sign * shifts[i]);
            if (!quick)
                check_overlap(op, n, (n * 13 + 5) % 64, sign * shifts[i]);
        }
    }
    if (n > 1) {
        check_overlap(op, n, 0, (long)(n / 2));
        check_overlap(op, n, 0, -(long)(n / 2));
        check_overlap(op, n, 7, (long)(n - 1));
        check_overlap(op, n, 7, -(long)(n - 1));
    }
    check_overlap(op, n, 3, 0); /* dst == src */
}

static void run_grid(int quick) {
    ref_fill(g_src, SPAN, 7);
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        for (size_t n = 0; n <= MAXN; n++) {
            int few = quick || n > MAXN_FULL;
            for (size_t dal = 0; dal < 64; dal++) {
                if (few && dal % 16 != 1 && dal != 0)
                    continue;
                if (op->kind == K_SET || op->kind == K_ZERO) {
                    check_disjoint(op, n, dal, 0);
                    continue;
                }
                check_disjoint(op, n, dal, dal);
                if (!few && !op->repeat)
                    check_disjoint(op, n, dal, (dal * 7 + 3) % 64);
            }
            if (overlap_applies(op))
                overlap_sizes(op, n, few || op->repeat);
        }
        if (quick || op->kind == K_SET || op->kind == K_ZERO || op->repeat)
            continue;
        /* Every (destination, source) alignment pair for the sizes where the kernels
         * change strategy. */
        for (size_t i = 0; i < sizeof FULL_PAIR_SIZES / sizeof FULL_PAIR_SIZES[0]; i++)
            for (size_t dal = 0; dal < 64; dal++)
                for (size_t sal = 0; sal < 64; sal++)
                    check_disjoint(op, FULL_PAIR_SIZES[i], dal, sal);
    }
}

/* ---- at a page's end ------------------------------------------------------------- */

/* One call of op at d (from s, n bytes) whose page-sized region holds d: afterwards the
 * region must hold exactly what the call writes. */
static void check_in_region(const struct op *op, unsigned char *region, long page,
                            unsigned char *d, const unsigned char *s, size_t n, size_t slack,
                            int src_flag, const char *what) {
    static unsigned char want[4096];
    int c = set_byte(n);
    ref_copy(want, region, (size_t)page);
    expect_disjoint(op, want + (d - region), s, n, c);
    void *got = op->call(d, s, n, c, n);
    check_return(op, got, d, n, slack, src_flag);
    long at = ref_first_diff(region, want, (size_t)page);
    if (at >= 0)
        fail(what, op, n, slack, src_flag, at - (d - region), want[at], region[at]);
}

/* Sizes up to 160 bytes whose destination (or source) ends 0..64 bytes before an
 * inaccessible page, then whose destination starts 0..64 bytes after one: a masked
 * access may select no byte beyond the range (masked-out bytes cannot fault, so the
 * bytes themselves are checked), and a set's window, which may start below its
 * destination, must stay in the destination's lines. Any byte written past either
 * end, or read or written in the inaccessible page, fails or faults. */
static void run_pagestart(long page) {
    unsigned char *m = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, (size_t)page, PROT_NONE)) {
        fprintf(stderr, "cannot map the page-start buffers\n");
        exit(2);
    }
    unsigned char *start = m + page, *other = m + 2 * page + 100;
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        if (op->repeat)
            continue;
        for (size_t n = 0; n <= 160; n++)
            for (size_t slack = 0; slack <= 64; slack++)
                for (int src_at_start = 0; src_at_start < 2; src_at_start++) {
                    if (src_at_start && (op->kind == K_SET || op->kind == K_ZERO))
                        continue;
                    /* The destination (or the source) starts slack bytes into the page. */
                    unsigned char *d = src_at_start ? other : start + slack;
                    const unsigned char *s = src_at_start ? start + slack : other;
                    ref_fill(start, (size_t)page, 7);
                    ref_fill(m + 2 * page, (size_t)page, 8);
                    check_in_region(op, src_at_start ? m + 2 * page : start, page, d, s, n,
                                    slack, src_at_start, "bytes at a page's start");
                }
    }
    munmap(m, 3 * (size_t)page);
}

static void run_pagedge(void) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *m = mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + page, (size_t)page, PROT_NONE) ||
        mprotect(m + 3 * page, (size_t)page, PROT_NONE)) {
        fprintf(stderr, "cannot map the page-edge buffers\n");
        exit(2);
    }
    unsigned char *dend = m + page, *send = m + 3 * page;
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        if (op->repeat)
            continue;
        for (size_t n = 0; n <= 160; n++)
            for (size_t slack = 0; slack <= 64; slack++)
                for (int src_at_edge = 0; src_at_edge < 2; src_at_edge++) {
                    if (src_at_edge && (op->kind == K_SET || op->kind == K_ZERO))
                        continue;
                    unsigned char *d = dend - n - slack - (src_at_edge ? 7 : 0);
                    const unsigned char *s = src_at_edge ? send - n - slack : send - n - 2 * 64 - 5;
                    ref_fill(m, (size_t)page, 5);
                    ref_fill(send - page, (size_t)page, 6);
                    check_in_region(op, m, page, d, s, n, slack, src_at_edge,
                                    "bytes at a page's end");
                }
    }
    munmap(m, 4 * (size_t)page);
    run_pagestart(page);
}

/* ---- large sizes ------------------------------------------------------------------- */

/* Three buffers, allocated once for the largest case (fresh allocations per check would
 * spend most of the time in page faults). */
#define LARGE_MAX ((160u << 20) + 5)
#define LARGE_SPAN (LARGE_MAX + (64u << 20) + 3 * 4096)
static unsigned char *large_a, *large_b, *large_e;

static unsigned char *xalloc(size_t n) {
    unsigned char *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static void check_large(const struct op *op, size_t n, size_t dal, size_t sal, long shift) {
    size_t span = n + 2 * 4096 + (shift < 0 ? (size_t)-shift : (size_t)shift);
    unsigned char *a = large_a, *b = large_b, *e = large_e;
    int c = set_byte(n);
    ref_fill(a, span, 3);
    ref_fill(e, span, 3);
    unsigned char *d, *de;
    const unsigned char *s;
    if (shift == 0) { /* disjoint: src in b */
        ref_fill(b, n + 2 * 4096, 4);
        d = a + 4096 + dal;
        de = e + 4096 + dal;
        s = b + 4096 + sal;
        expect_disjoint(op, de, s, n, c);
    } else { /* overlapping, inside a */
        size_t base = 4096 + dal + (shift < 0 ? (size_t)-shift : 0);
        s = a + base;
        d = a + (long)base + shift;
        de = e + (long)base + shift;
        ref_move(de, e + base, n);
    }
    void *got = op->call(d, s, n, c, (size_t)(a + span - d));
    check_return(op, got, d, n, dal, shift ? shift : (long)sal);
    long at = ref_first_diff(a, e, span);
    if (at >= 0)
        fail(shift ? "large overlap bytes" : "large bytes", op, n, dal, shift ? shift : (long)sal,
             at - (long)(d - a), e[at], a[at]);
}

static void alloc_large(void) {
    if (!large_a) {
        large_a = xalloc(LARGE_SPAN);
        large_b = xalloc(LARGE_SPAN);
        large_e = xalloc(LARGE_SPAN);
    }
}

/* A few sizes between 64 KiB and 2 MiB, once per op: quick, and above the thresholds a
 * small test profile sets. */
static void run_medium(void) {
    static const size_t sizes[] = {65536 + 1, 300000, (2u << 20) + 7};
    alloc_large();
    for (size_t o = 0; o < NOPS; o++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            check_large(&OPS[o], sizes[i], 3, 5, 0);
}

static void run_large(void) {
    static const size_t sizes[] = {2047, 4096, 4097, 65539, (1u << 20) + 1, (16u << 20) + 3};
    alloc_large();
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = sizes[i];
            if (op->repeat && n > (1u << 20))
                continue;
            check_large(op, n, 0, 0, 0);
            check_large(op, n, 5, 33, 0);
            if (overlap_applies(op)) {
                check_large(op, n, 3, 0, 1);
                check_large(op, n, 3, 0, -1);
                check_large(op, n, 0, 0, 4096);
                check_large(op, n, 0, 0, -4096);
                check_large(op, n, 0, 0, (long)(n / 2));
                check_large(op, n, 0, 0, -(long)(n / 2));
            }
        }
    }
    /* Above the default streaming threshold for Auto on most hosts (half the LLC). Once
     * per kind, with the first op of that kind. */
    int done[4] = {0, 0, 0, 0};
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        if (done[op->kind])
            continue;
        done[op->kind] = 1;
        check_large(op, LARGE_MAX, 3, 5, 0);
        if (op->kind == K_MOVE)
            check_large(op, LARGE_MAX, 3, 0, -(long)(64u << 20));
    }
}

/* ---- before any constructor -------------------------------------------------------- */

static int preinit_result = -1;
static unsigned char pre_a[1 << 17], pre_b[1 << 17], pre_e[1 << 17];

/* Runs from .preinit_array: after relocation, before the constructors of every shared
 * object, so before the shim's (glibc's _dl_init runs the executable's preinit array
 * first). */
static void preinit_check(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    static const size_t sizes[] = {1, 100, 300, 5000, 70000, 1 << 17};
    int ok = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (size_t o = 0; o < NOPS; o++) {
            const struct op *op = &OPS[o];
            ref_fill(pre_a, n, 5);
            ref_fill(pre_b, n, 6);
            ref_fill(pre_e, n, 5);
            switch (op->kind) {
            case K_COPY:
            case K_MOVE: ref_copy(pre_e, pre_b, n); break;
            case K_SET: ref_set(pre_e, 0x5a, n); break;
            case K_ZERO: ref_set(pre_e, 0, n); break;
            }
            op->call(pre_a, pre_b, n, 0x5a, n);
            if (ref_first_diff(pre_a, pre_e, n) >= 0)
                ok = 0;
        }
    }
    preinit_result = ok;
}

__attribute__((used, section(".preinit_array"))) static void (*const preinit_entry)(int, char **,
                                                                                    char **) =
    preinit_check;

/* ---- fortify failure --------------------------------------------------------------- */

#ifndef USE_BLOCKMEM_API
static int chkfail(const char *name) {
    static unsigned char a[64], b[64];
    for (size_t o = 0; o < NOPS; o++) {
        const struct op *op = &OPS[o];
        if (op->symbol && !strcmp(op->symbol, name)) {
            /* dstcap 9 < n 10: must abort before returning. */
            op->call(a, b, 10, 1, 9);
            fprintf(stderr, "%s returned despite dstlen < n\n", name);
            return 1;
        }
    }
    fprintf(stderr, "unknown symbol %s\n", name);
    return 2;
}

static int expect_shim(void) {
    int bad = 0;
    for (size_t o = 0; o < NOPS; o++) {
        const char *sym = OPS[o].symbol;
        if (!sym)
            continue;
        Dl_info info;
        void *p = dlsym(RTLD_DEFAULT, sym);
        if (!p || !dladdr(p, &info) || !info.dli_fname ||
            !ref_contains(info.dli_fname, "blockmem_preload")) {
            fprintf(stderr, "FAIL %s resolves to %s, not the shim\n", sym,
                    p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "(nothing)");
            bad++;
        }
    }
    /* The pointers this program took must be the same definitions. */
    if ((void *)p_memcpy != dlsym(RTLD_DEFAULT, "memcpy") ||
        (void *)p_memset != dlsym(RTLD_DEFAULT, "memset")) {
        fprintf(stderr, "FAIL the program's memcpy/memset are not the shim's\n");
        bad++;
    }
    return bad;
}
#endif

/* ---- the C API (static library flavour) -------------------------------------------- */

#ifdef USE_BLOCKMEM_API
static int check_api(void) {
    int bad = 0;
    const char *v = blockmem_version();
    if (!v || !*v) {
        fprintf(stderr, "FAIL blockmem_version\n");
        bad++;
    }
    size_t count = blockmem_kernel_count();
    if (count < 2) {
        fprintf(stderr, "FAIL blockmem_kernel_count = %zu\n", count);
        bad++;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = blockmem_kernel_name(i);
        if (!name || blockmem_kernel_index(name) != (int)i) {
            fprintf(stderr, "FAIL kernel %zu name/index round trip\n", i);
            bad++;
        }
    }
    if (blockmem_kernel_name(count) != NULL || blockmem_kernel_index("no-such-kernel") != -1) {
        fprintf(stderr, "FAIL out-of-range kernel lookups\n");
        bad++;
    }
    if (!blockmem_kernel_available(blockmem_kernel_index("naive")) ||
        !blockmem_kernel_supports(blockmem_kernel_index("naive"), BLOCKMEM_OP_MOVE)) {
        fprintf(stderr, "FAIL naive must be available and move\n");
        bad++;
    }
    /* Overlapping moves never stream. */
    int k = blockmem_choose(BLOCKMEM_OP_MOVE, (size_t)1 << 30, BLOCKMEM_HINT_NO_REUSE, 1);
    const char *kn = blockmem_kernel_name((size_t)k);
    if (k < 0 || !kn || ref_contains(kn, "_nt") || !strcmp(kn, "clzero")) {
        fprintf(stderr, "FAIL overlapping move chose %s\n", kn ? kn : "(none)");
        bad++;
    }
    /* The decision table in use prints, in the profile format. */
    size_t table_len = blockmem_table(NULL, 0);
    char table_head[64];
    blockmem_table(table_head, sizeof table_head);
    if (table_len < 100 || strncmp(table_head, "# blockmem profile", 18) != 0) {
        fprintf(stderr, "FAIL decision table text (%zu bytes)\n", table_len);
        bad++;
    }
    /* A known state always has a kernel; an unknown one may ask for a probe. */
    for (unsigned st = 1; st <= 2; st++) {
        int ks = blockmem_choose_state(BLOCKMEM_OP_COPY, (size_t)64 << 20, BLOCKMEM_HINT_AUTO, 0, st);
        if (ks < 0) {
            fprintf(stderr, "FAIL no kernel for a destination in state %u\n", st);
            bad++;
        }
    }
    int ku = blockmem_choose(BLOCKMEM_OP_COPY, (size_t)64 << 20, BLOCKMEM_HINT_AUTO, 0);
    if (ku < 0 && ku != BLOCKMEM_CHOICE_PROBES) {
        fprintf(stderr, "FAIL unknown-state choice %d\n", ku);
        bad++;
    }
    if (blockmem_choose_state(BLOCKMEM_OP_COPY, 100, BLOCKMEM_HINT_AUTO, 0, BLOCKMEM_STATE_FRESH + 1) != -1) {
        fprintf(stderr, "FAIL out-of-range state accepted\n");
        bad++;
    }
    /* Forcing: a known kernel sticks, an unknown one is refused, NULL restores. */
    if (blockmem_force("portable") != 0 || blockmem_forced() != blockmem_kernel_index("portable") ||
        blockmem_choose(BLOCKMEM_OP_COPY, 4096, BLOCKMEM_HINT_AUTO, 0) !=
            blockmem_kernel_index("portable")) {
        fprintf(stderr, "FAIL forcing portable\n");
        bad++;
    }
    if (blockmem_force("no-such-kernel") != BLOCKMEM_ERR_UNKNOWN_KERNEL ||
        blockmem_forced() != blockmem_kernel_index("portable")) {
        fprintf(stderr, "FAIL forcing an unknown kernel\n");
        bad++;
    }
    if (blockmem_force(NULL) != 0 || blockmem_forced() != -1) {
        fprintf(stderr, "FAIL restoring the policy\n");
        bad++;
    }
    return bad;
}

/* Profile loading through the API: a good file is installed, a malformed one is
 * rejected with its line, a missing one with its name. `dir` is a writable directory. */
static int check_profile(const char *dir) {
    int bad = 0;
    char good[4096], broken[4096], missing[4096], msg[256];
    snprintf(good, sizeof good, "%s/good.profile", dir);
    snprintf(broken, sizeof broken, "%s/broken.profile", dir);
    snprintf(missing, sizeof missing, "%s/missing.profile", dir);
    FILE *f = fopen(good, "w");
    if (!f || fputs("version = 2\ncopy.noreuse.unknown = from 0: portable\n", f) < 0 || fclose(f))
        return 1;
    f = fopen(broken, "w");
    if (!f || fputs("version = 2\ncopy.noreuse.unknown = from 0: lots\n", f) < 0 || fclose(f))
        return 1;
    int portable = blockmem_kernel_index("portable");
    if (blockmem_profile_load(good) != BLOCKMEM_OK || blockmem_profile_error(msg, sizeof msg) != 0) {
        fprintf(stderr, "FAIL loading a good profile\n");
        bad++;
    }
    int k = blockmem_choose(BLOCKMEM_OP_COPY, 1 << 20, BLOCKMEM_HINT_NO_REUSE, 0);
    if (k != portable || strcmp(blockmem_profile_source(), "installed") != 0) {
        fprintf(stderr, "FAIL good profile not in force (%d, %s)\n", k, blockmem_profile_source());
        bad++;
    }
    if (blockmem_profile_load(broken) != BLOCKMEM_ERR_PROFILE ||
        blockmem_profile_error(msg, sizeof msg) == 0 || !ref_contains(msg, "line 2")) {
        fprintf(stderr, "FAIL malformed profile: %s\n", msg);
        bad++;
    }
    if (blockmem_choose(BLOCKMEM_OP_COPY, 1 << 20, BLOCKMEM_HINT_NO_REUSE, 0) != portable) {
        fprintf(stderr, "FAIL a rejected profile replaced the one in force\n");
        bad++;
    }
    if (blockmem_profile_load(missing) != BLOCKMEM_ERR_PROFILE ||
        blockmem_profile_error(NULL, 0) == 0) {
        fprintf(stderr, "FAIL missing profile\n");
        bad++;
    }
    /* Back to what the environment says. */
    blockmem_profile_load(NULL);
    return bad;
}
#endif

/* ---- entry forms ------------------------------------------------------------------ */

/* Fails if any mapping is writable and executable, or if an executable mapping of a file
 * holds anonymous pages: pages copied on a write to them, code written at run time. */
static void check_code_unwritten(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) {
        fprintf(stderr, "FAIL cannot read /proc/self/maps\n");
        failures++;
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, maps)) {
        char perms[5] = "";
        if (sscanf(line, "%*s %4s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x') {
            fprintf(stderr, "FAIL writable code: %s", line);
            failures++;
        }
    }
    fclose(maps);
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (!smaps) {
        fprintf(stderr, "FAIL cannot read /proc/self/smaps\n");
        failures++;
        return;
    }
    char mapping[512] = "";
    int code = 0;
    while (fgets(line, sizeof line, smaps)) {
        char perms[5] = "", path[256] = "";
        unsigned long kb;
        if (sscanf(line, "%*s %4s %*s %*s %*s %255s", perms, path) >= 1 && strchr(line, '-') &&
            strlen(perms) == 4 && (perms[3] == 'p' || perms[3] == 's')) {
            code = perms[2] == 'x' && path[0] == '/';
            snprintf(mapping, sizeof mapping, "%s", line);
        } else if (code && sscanf(line, "Anonymous: %lu kB", &kb) == 1 && kb != 0) {
            fprintf(stderr, "FAIL code written at run time (%lu kB copied): %s", kb, mapping);
            failures++;
        }
    }
    fclose(smaps);
}

/* Prints the first sixteen bytes of each assembly entry, "slot NAME xx xx ...", for the
 * tests to decode (`blockmem::arch::x86_64::entry::bodies_of`), and for a routed entry
 * (the shim's) "route NAME open|closed": whether its AVX-512 bodies run. Then checks
 * that no code was written (`check_code_unwritten`). */
static void print_slots(void) {
#ifdef USE_BLOCKMEM_API
    const char *names[] = {"blockmem_copy",   "blockmem_move",    "blockmem_set",
                           "blockmem_memcpy", "blockmem_memmove", "blockmem_memset"};
    const unsigned char *fns[] = {(const unsigned char *)(uintptr_t)blockmem_copy,
                                  (const unsigned char *)(uintptr_t)blockmem_move,
                                  (const unsigned char *)(uintptr_t)blockmem_set,
                                  (const unsigned char *)(uintptr_t)blockmem_memcpy,
                                  (const unsigned char *)(uintptr_t)blockmem_memmove,
                                  (const unsigned char *)(uintptr_t)blockmem_memset};
#else
    const char *names[] = {"memcpy", "memmove", "memset"};
    const unsigned char *fns[] = {dlsym(RTLD_DEFAULT, "memcpy"), dlsym(RTLD_DEFAULT, "memmove"),
                                  dlsym(RTLD_DEFAULT, "memset")};
#endif
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const unsigned char *f = fns[i];
        if (!f) {
            fprintf(stderr, "FAIL no %s\n", names[i]);
            failures++;
            continue;
        }
        printf("slot %s", names[i]);
        for (int k = 0; k < 16; k++)
            printf(" %02x", f[k]);
        printf("\n");
        /* mov rax, rdi; cmp rdx, qword ptr [rip + disp32] */
        static const unsigned char routed[] = {0x48, 0x89, 0xf8, 0x48, 0x3b, 0x15};
        if (!memcmp(f, routed, sizeof routed)) {
            int32_t disp;
            memcpy(&disp, f + 6, sizeof disp);
            /* The first route word the entry reads is a size bound: 0 while closed. */
            uint64_t route = *(const volatile uint64_t *)(f + 10 + disp);
            printf("route %s %s\n", names[i], route != 0 ? "open" : "closed");
        }
    }
    check_code_unwritten();
}

/* ---- main -------------------------------------------------------------------------- */

static void *thread_body(void *arg) { return arg; }

/* One thread started and joined: glibc's __libc_single_threaded is false from here on. */
static void start_a_thread(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_body, NULL) || pthread_join(t, NULL)) {
        fprintf(stderr, "FAIL cannot start a thread\n");
        failures++;
    }
}

static void run_modes(int argc, char **argv, int *rc) {
    for (int i = 1; i < argc; i++) {
        const char *m = argv[i];
        if (!strcmp(m, "grid"))
            run_grid(0);
        else if (!strcmp(m, "quick"))
            run_grid(1);
        else if (!strcmp(m, "large"))
            run_large();
        else if (!strcmp(m, "medium"))
            run_medium();
        else if (!strcmp(m, "pagedge"))
            run_pagedge();
        else if (!strcmp(m, "slots"))
            print_slots();
        else if (!strcmp(m, "threaded"))
            start_a_thread();
        else if (!strcmp(m, "preinit")) {
            if (preinit_result != 1) {
                fprintf(stderr, "FAIL calls from .preinit_array (result %d)\n", preinit_result);
                failures++;
            }
        }
#ifndef USE_BLOCKMEM_API
        else if (!strncmp(m, "chkfail=", 8))
            *rc = chkfail(m + 8);
#else
        else if (!strcmp(m, "api"))
            failures += check_api();
        else if (!strncmp(m, "profile=", 8))
            failures += check_profile(m + 8);
#endif
        else if (m[0] != '-') {
            fprintf(stderr, "unknown mode %s\n", m);
            *rc = 2;
        }
    }
}

int main(int argc, char **argv) {
    int rc = 0, force_each = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--overlap-copy"))
            opt_overlap_copy = 1;
        else if (!strcmp(argv[i], "--force-each"))
            force_each = 1;
#ifndef USE_BLOCKMEM_API
        else if (!strcmp(argv[i], "--expect-shim"))
            failures += expect_shim();
#endif
    }
#ifdef USE_BLOCKMEM_API
    if (force_each) {
        for (size_t k = 0; k < blockmem_kernel_count(); k++) {
            if (!blockmem_kernel_available(k))
                continue;
            blockmem_force(blockmem_kernel_name(k));
            run_modes(argc, argv, &rc);
            printf("forced %s: %d failures so far\n", blockmem_kernel_name(k), failures);
        }
        blockmem_force(NULL);
    }
#else
    (void)force_each;
#endif
    run_modes(argc, argv, &rc);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    else
        printf("memops_test: all checks passed\n");
    return failures ? 1 : rc;
}
