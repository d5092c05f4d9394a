/* The driver of the lab's `doors` experiment: replays the calls of a job file
 * through one door, the way a C program meets a memcpy.
 *
 *   doors JOBS DOOR IMPL SAMPLES EVICT_BYTES CHECK LAYOUT
 *
 * DOOR   plain   direct calls to memcpy/memmove/memset (built with -fno-builtin, so
 *                every one is a real call through the PLT): the implementation is the
 *                one the dynamic linker bound, glibc's or, under LD_PRELOAD, the shim's
 *        plain-mt  plain in a process that has started and joined a thread first, as
 *                every multithreaded program is: glibc's __libc_single_threaded is
 *                false, and the shim's 1-15-byte copies keep to their bytes' lines
 *        fnptr   the same functions called through volatile function pointers
 *        cabi    blockmem_copy/_move/_set with BLOCKMEM_HINT_AUTO, in a process
 *                without the shim. The names are parenthesised: the functions with
 *                their hint argument, as a caller passing a hint meets them (with the
 *                constant AUTO, the header's macros call the cmem functions instead)
 *        cmem    the same with blockmem_memcpy/_memmove/_memset, the C ABI in the C
 *                functions' own shape (no hint argument)
 *                For IMPL libc the lab preloads doors_libc.c's library, which binds
 *                these names to the system library's memcpy/memmove/memset: every
 *                door runs one binary and the same loops on both sides, and only the
 *                call's target differs
 * IMPL   libc | blockmem: what the door must reach. The driver checks with dladdr
 *        which object defines the bound memcpy (plain, fnptr) or blockmem_memcpy
 *        (cabi, cmem), and fails if it is not the one named (a missing or ignored
 *        LD_PRELOAD must not pass for glibc, nor for blockmem).
 *
 * The job file (written by `blockmem lab doors`, little-endian):
 *   "BMDOORS1" u32 version=1 u32 njobs u64 arena_bytes
 *   per job: char name[32] u32 op (0 copy, 1 move, 2 set) u32 cold u32 reps_per_sample
 *            u32 chain u64 ncalls, then ncalls x { u64 n, u64 src, u64 dst }
 *   chain 1: each call's addresses depend on the first and the last byte the call
 *   before wrote (read back and masked to zero through a value the compiler cannot
 *   see), so a call starts only once the previous one's stores can be read: a program
 *   that copies or sets bytes and then uses them, where a call's latency counts, not
 *   its throughput.
 *   Offsets are into the source and destination arenas; bit 63 of src set means the
 *   source lies in the destination arena (an overlapping move).
 *
 * For each job the driver first runs every call once, untimed, and with CHECK 1 checks
 * it against a byte loop (the bytes written and 32 guard bytes on each side, each call
 * through the next copy of the loop, so that every copy is checked; the lab asks for it
 * in the first round of each door and implementation, the same code on the same calls
 * as every later round); then it takes SAMPLES timed samples, each replaying the whole
 * sequence reps_per_sample times, sample s with copy LAYOUT + s of the loop (see
 * LAYOUTS below, taken modulo LAYOUTS). Before each sample of a cold job every line the
 * calls touch is flushed (clflush, then mfence) and the cache is filled by a read sweep
 * of EVICT_BYTES: the lab's `clean` state. The sweep alone, sized from the measured
 * effective LLC, left part of the calls' lines in an LLC that could hold more than a
 * core's measured share (docs/results/epyc-zen4-2vcpu/doors).
 * It prints one line per job:
 *   name <TAB> op <TAB> hot|cold <TAB> verified 0|1 (- unchecked) <TAB> ns per call,
 *   comma-separated
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "blockmem.h"

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*set_fn)(void *, int, size_t);

struct call { uint64_t n, src, dst; };
struct job {
    char name[33];
    uint32_t op, cold, reps, chain;
    uint64_t ncalls;
    struct call *calls;
};

#define SRC_IN_DST (1ull << 63)
#define GUARD 32
/* The byte a set call stores: another for each call (from the call's address), as a
 * program's sets vary it, so that no path is measured only with one value. */
#define SET_BYTE(c) ((int)((uintptr_t)(c) >> 3) & 0xff)

enum door { PLAIN, FNPTR, CABI, CMEM };
static enum door door;
static int use_blockmem;
static copy_fn volatile fp_memcpy = memcpy;
static copy_fn volatile fp_memmove = memmove;
static set_fn volatile fp_memset = memset;

static void die(const char *what) {
    fprintf(stderr, "doors: %s\n", what);
    exit(2);
}

static void *map(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("cannot map the arenas");
    return p;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One replay of a job's calls. The door, the implementation and the op are fixed for a
 * whole replay, so each is its own loop, with nothing tested per call but the source
 * arena: the tight loop a program would run. (One loop testing the door per call gave
 * each door a different path through the caller; the C ABI's had two taken branches
 * more than glibc's.)
 *
 * Where a loop lies moves a tight loop's time either way, for glibc's functions and
 * blockmem's alike and not at the same placements (a tight loop that crosses a 64-byte
 * line costs a cycle a call more than one within a line: its op-cache entries are per
 * line; docs/results/epyc-zen4-2vcpu/doors-page-start). A comparison at one placement,
 * or a few, measures that luck. So every loop exists LAYOUTS
 * times, each copy its own function starting a 64-byte line with 4 x k bytes of
 * padding before the loop (k = 0 .. LAYOUTS-1: every 4-byte position in a line, each
 * copy at another address), and each timed sample runs the next copy: a cell's samples
 * cover the placements a program's loop could have, and both sides of a door meet the
 * same ones in the same order. */
#define LAYOUTS 16
/* A call's source: in the source arena, or (an overlapping move) in the destination's. */
static inline const unsigned char *call_src(const struct call *c, const unsigned char *src,
                                            unsigned char *dst) {
    return (c->src & SRC_IN_DST) ? dst + (c->src & ~SRC_IN_DST) : src + c->src;
}
typedef void (*loop_fn)(const struct call *, const struct call *, const unsigned char *,
                        unsigned char *);
#define LOOP_AT(NAME, K, CALL)                                                                    \
    __attribute__((noinline, aligned(64))) static void NAME##_##K(                                \
        const struct call *c, const struct call *e, const unsigned char *src, unsigned char *dst) { \
        __asm__ volatile(".fill 4 * " #K ", 1, 0x90");                                            \
        for (; c < e; c++) {                                                                      \
            const unsigned char *s __attribute__((unused)) = call_src(c, src, dst);               \
            CALL;                                                                                 \
        }                                                                                         \
    }
/* LAYOUTS copies of a loop, AT(NAME, K, CALL) defining copy K, and the table of them. */
#define COPIES(AT, NAME, CALL)                                                                   \
    AT(NAME, 0, CALL) AT(NAME, 1, CALL) AT(NAME, 2, CALL) AT(NAME, 3, CALL) AT(NAME, 4, CALL)    \
    AT(NAME, 5, CALL) AT(NAME, 6, CALL) AT(NAME, 7, CALL) AT(NAME, 8, CALL) AT(NAME, 9, CALL)    \
    AT(NAME, 10, CALL) AT(NAME, 11, CALL) AT(NAME, 12, CALL) AT(NAME, 13, CALL)                  \
    AT(NAME, 14, CALL) AT(NAME, 15, CALL)                                                        \
    static const loop_fn NAME[LAYOUTS] = {                                                       \
        NAME##_0,  NAME##_1,  NAME##_2,  NAME##_3,  NAME##_4,  NAME##_5,  NAME##_6,  NAME##_7,  \
        NAME##_8,  NAME##_9,  NAME##_10, NAME##_11, NAME##_12, NAME##_13, NAME##_14, NAME##_15, \
    };
#define LOOP(NAME, CALL) COPIES(LOOP_AT, NAME, CALL)
LOOP(set_fnptr, fp_memset(dst + c->dst, SET_BYTE(c), c->n))
LOOP(set_cabi, (blockmem_set)(dst + c->dst, SET_BYTE(c), c->n, BLOCKMEM_HINT_AUTO))
LOOP(set_cmem, blockmem_memset(dst + c->dst, SET_BYTE(c), c->n))
LOOP(set_plain, memset(dst + c->dst, SET_BYTE(c), c->n))
LOOP(move_fnptr, fp_memmove(dst + c->dst, s, c->n))
LOOP(move_cabi, (blockmem_move)(dst + c->dst, s, c->n, BLOCKMEM_HINT_AUTO))
LOOP(move_cmem, blockmem_memmove(dst + c->dst, s, c->n))
LOOP(move_plain, memmove(dst + c->dst, s, c->n))
LOOP(copy_fnptr, fp_memcpy(dst + c->dst, s, c->n))
LOOP(copy_cabi, (blockmem_copy)(dst + c->dst, s, c->n, BLOCKMEM_HINT_AUTO))
LOOP(copy_cmem, blockmem_memcpy(dst + c->dst, s, c->n))
LOOP(copy_plain, memcpy(dst + c->dst, s, c->n))

/* The loops of `chain` jobs: the same calls, each one's addresses offset by a value that
 * is zero but depends on the first and the last byte the call before wrote (read back
 * after it returns: whichever of its stores comes last, the next call waits for it).
 * n == 0 reads the byte before the destination and the one at it. */
static volatile uint64_t chain_zero = 0;
#define CHAIN_AT(NAME, K, CALL)                                                                   \
    __attribute__((noinline, aligned(64))) static void NAME##_##K(                                \
        const struct call *c, const struct call *e, const unsigned char *src, unsigned char *dst) { \
        __asm__ volatile(".fill 4 * " #K ", 1, 0x90");                                            \
        uint64_t z = chain_zero;                                                                  \
        for (; c < e; c++) {                                                                      \
            unsigned char *d = dst + c->dst + z;                                                  \
            const unsigned char *s __attribute__((unused)) = call_src(c, src, dst) + z;           \
            CALL;                                                                                 \
            z &= d[0] & d[(int64_t)c->n - 1];                                                     \
        }                                                                                         \
    }
#define CHAIN(NAME, CALL) COPIES(CHAIN_AT, NAME, CALL)
CHAIN(set_fnptr_chain, fp_memset(d, SET_BYTE(c), c->n))
CHAIN(set_cabi_chain, (blockmem_set)(d, SET_BYTE(c), c->n, BLOCKMEM_HINT_AUTO))
CHAIN(set_cmem_chain, blockmem_memset(d, SET_BYTE(c), c->n))
CHAIN(set_plain_chain, memset(d, SET_BYTE(c), c->n))
CHAIN(move_fnptr_chain, fp_memmove(d, s, c->n))
CHAIN(move_cabi_chain, (blockmem_move)(d, s, c->n, BLOCKMEM_HINT_AUTO))
CHAIN(move_cmem_chain, blockmem_memmove(d, s, c->n))
CHAIN(move_plain_chain, memmove(d, s, c->n))
CHAIN(copy_fnptr_chain, fp_memcpy(d, s, c->n))
CHAIN(copy_cabi_chain, (blockmem_copy)(d, s, c->n, BLOCKMEM_HINT_AUTO))
CHAIN(copy_cmem_chain, blockmem_memcpy(d, s, c->n))
CHAIN(copy_plain_chain, memcpy(d, s, c->n))

/* The copies of the loop for op (0 copy, 1 move, 2 set) through this process's door,
 * chained (see CHAIN_AT) or not. */
static const loop_fn *loops_for(uint32_t op, uint32_t chain) {
    static const loop_fn *const loops[2][3][4] = {
        {
            {copy_fnptr, copy_cabi, copy_cmem, copy_plain},
            {move_fnptr, move_cabi, move_cmem, move_plain},
            {set_fnptr, set_cabi, set_cmem, set_plain},
        },
        {
            {copy_fnptr_chain, copy_cabi_chain, copy_cmem_chain, copy_plain_chain},
            {move_fnptr_chain, move_cabi_chain, move_cmem_chain, move_plain_chain},
            {set_fnptr_chain, set_cabi_chain, set_cmem_chain, set_plain_chain},
        },
    };
    return loops[chain != 0][op][door == FNPTR ? 0 : door == CABI ? 1 : door == CMEM ? 2 : 3];
}

/* One replay of a job's calls with the loop's copy number `layout` (mod LAYOUTS). */
static void replay(const struct job *j, unsigned char *src, unsigned char *dst, unsigned layout) {
    loops_for(j->op, j->chain)[layout % LAYOUTS](j->calls, j->calls + j->ncalls, src, dst);
}

/* Runs each call alone against a byte-loop reference; returns 1 if all were right. */
static int verify(const struct job *j, unsigned char *src, unsigned char *dst, unsigned char *want) {
    for (uint64_t i = 0; i < j->ncalls; i++) {
        struct job one = *j;
        const struct call *c = &j->calls[i];
        one.ncalls = 1;
        one.calls = (struct call *)c;
        uint64_t lo = c->dst >= GUARD ? c->dst - GUARD : 0, hi = c->dst + c->n + GUARD;
        for (uint64_t k = lo; k < hi; k++) dst[k] = (unsigned char)(k * 131 + i);
        for (uint64_t k = lo; k < hi; k++) want[k - lo] = dst[k];
        /* Expected bytes from memory as it is before the call: memmove's semantics. */
        const unsigned char *s = call_src(c, src, dst);
        for (uint64_t k = 0; k < c->n; k++) want[c->dst - lo + k] = j->op == 2 ? (unsigned char)SET_BYTE(c) : s[k];
        replay(&one, src, dst, (unsigned)i); /* every copy of the loop, in turn */
        for (uint64_t k = lo; k < hi; k++)
            if (dst[k] != want[k - lo]) return 0;
    }
    return 1;
}

/* Flushes every line a job's calls touch (sources and destinations), so that a cold
 * sample starts with none of them in any cache, whatever the sweep leaves. */
static void flush_calls(const struct job *j, unsigned char *src, unsigned char *dst) {
#if defined(__x86_64__) || defined(__i386__)
    for (uint64_t i = 0; i < j->ncalls; i++) {
        const struct call *c = &j->calls[i];
        const unsigned char *ranges[2] = {call_src(c, src, dst), dst + c->dst};
        for (int r = 0; r < 2; r++) {
            uintptr_t a = (uintptr_t)ranges[r] & ~(uintptr_t)63, end = (uintptr_t)ranges[r] + c->n;
            for (; a < end; a += 64) __builtin_ia32_clflush((const void *)a);
        }
    }
    __builtin_ia32_mfence();
#else
    (void)j, (void)src, (void)dst;
#endif
}

static void evict(unsigned char *buf, size_t len) {
    static volatile unsigned char sink __attribute__((unused));
    unsigned char x = 0;
    for (size_t k = 0; k < len; k += 64) x ^= buf[k];
    sink = x;
}

/* Fails unless `name`, as this process bound it, is defined by an object whose path
 * contains `blockmem_object` (want 1) or by another one (want 0). */
static void expect_binding(const char *name, const char *blockmem_object, int want) {
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f || !dladdr(f, &info) || !info.dli_fname) {
        fprintf(stderr, "doors: cannot tell which object defines %s\n", name);
        exit(2);
    }
    if ((strstr(info.dli_fname, blockmem_object) != NULL) != want) {
        fprintf(stderr, "doors: %s is bound to %s, not to %s: check LD_PRELOAD\n", name,
                info.dli_fname, want ? "blockmem" : "the system library");
        exit(2);
    }
}

static void check_binding(void) {
    if (door == PLAIN || door == FNPTR) {
        expect_binding("memcpy", "blockmem_preload", use_blockmem);
    } else {
        /* The C ABI library is libblockmem.so.0, a link to libblockmem_ffi.so; the
         * shim is in neither process. */
        expect_binding("blockmem_memcpy", "libblockmem", use_blockmem);
        expect_binding("memcpy", "blockmem_preload", 0);
    }
}

static void read_exact(FILE *f, void *p, size_t len) {
    if (fread(p, 1, len, f) != len) die("job file truncated");
}

static void *thread_body(void *arg) { return arg; }

int main(int argc, char **argv) {
    if (argc != 8)
        die("usage: doors JOBS plain|plain-mt|fnptr|cabi|cmem libc|blockmem SAMPLES EVICT_BYTES 0|1 LAYOUT");
    if (!strcmp(argv[2], "plain-mt")) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_body, NULL) || pthread_join(t, NULL))
            die("cannot start a thread");
        argv[2] = "plain";
    }
    door = !strcmp(argv[2], "plain") ? PLAIN : !strcmp(argv[2], "fnptr") ? FNPTR
         : !strcmp(argv[2], "cabi") ? CABI : !strcmp(argv[2], "cmem") ? CMEM
         : (die("unknown door"), PLAIN);
    use_blockmem = !strcmp(argv[3], "blockmem");
    if (!use_blockmem && strcmp(argv[3], "libc")) die("unknown implementation");
    int samples = atoi(argv[4]), check = atoi(argv[6]);
    size_t evict_len = strtoull(argv[5], NULL, 10);
    unsigned layout = (unsigned)strtoul(argv[7], NULL, 10);
    if (samples < 1) die("SAMPLES must be at least 1");
    check_binding();

    FILE *f = fopen(argv[1], "rb");
    if (!f) die("cannot open the job file");
    char magic[8];
    uint32_t version, njobs;
    uint64_t arena;
    read_exact(f, magic, 8);
    read_exact(f, &version, 4);
    read_exact(f, &njobs, 4);
    read_exact(f, &arena, 8);
    if (memcmp(magic, "BMDOORS1", 8) || version != 1) die("not a doors job file");
    struct job *jobs = calloc(njobs, sizeof *jobs);
    if (!jobs) die("out of memory");
    for (uint32_t i = 0; i < njobs; i++) {
        struct job *j = &jobs[i];
        read_exact(f, j->name, 32);
        read_exact(f, &j->op, 4);
        read_exact(f, &j->cold, 4);
        read_exact(f, &j->reps, 4);
        read_exact(f, &j->chain, 4);
        read_exact(f, &j->ncalls, 8);
        j->calls = malloc(j->ncalls * sizeof *j->calls + 1);
        if (!j->calls) die("out of memory");
        read_exact(f, j->calls, j->ncalls * sizeof *j->calls);
        for (uint64_t k = 0; k < j->ncalls; k++) {
            const struct call *c = &j->calls[k];
            if (c->dst + c->n + GUARD > arena || (c->src & ~SRC_IN_DST) + c->n > arena || c->dst < GUARD)
                die("a call lies outside the arenas");
        }
    }
    fclose(f);

    unsigned char *src = map(arena), *dst = map(arena), *want = map(arena + 2 * GUARD);
    unsigned char *ev = evict_len ? map(evict_len) : NULL;
    for (size_t k = 0; k < arena; k++) src[k] = (unsigned char)(k * 7 + (k >> 12));
    memset(dst, 1, arena);
    if (ev) memset(ev, 2, evict_len);

    for (uint32_t i = 0; i < njobs; i++) {
        struct job *j = &jobs[i];
        const char *ok = !check ? "-" : verify(j, src, dst, want) ? "1" : "0";
        replay(j, src, dst, layout); /* warm-up (and page faults) */
        printf("%s\t%s\t%s\t%s\t", j->name, j->op == 0 ? "copy" : j->op == 1 ? "move" : "set",
               j->cold ? "cold" : "hot", ok);
        for (int s = 0; s < samples; s++) {
            if (j->cold) {
                flush_calls(j, src, dst);
                if (ev) evict(ev, evict_len);
            }
            uint64_t t0 = now_ns();
            for (uint32_t r = 0; r < j->reps; r++) replay(j, src, dst, layout + (unsigned)s);
            uint64_t t1 = now_ns();
            printf("%s%.4f", s ? "," : "", (double)(t1 - t0) / ((double)j->ncalls * j->reps));
        }
        printf("\n");
    }
    return 0;
}
