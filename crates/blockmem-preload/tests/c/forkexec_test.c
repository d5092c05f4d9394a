/* forkexec_test: copies inside signal handlers, across fork and across exec.
 *
 *   1. A 200 us interval timer interrupts the main loop, which copies, moves and sets
 *      blocks of up to 8 MiB and checks them; the SIGALRM handler itself runs memcpy,
 *      memmove, memset and bzero on its own buffers and checks them (async-signal
 *      safety: the interrupted call and the handler's call share no state that could
 *      break either).
 *   2. A forked child copies and checks, then exits through exit() (so the shim prints
 *      its own statistics line).
 *   3. A forked child execs this program again ("child" mode), which checks that the
 *      shim is still underneath (--expect-shim) and copies and checks.
 *
 * usage: forkexec_test [--expect-shim] [child]
 * Built -O2 -D_FORTIFY_SOURCE=2; exit status 0 when everything matched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ref.h"

static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;
static void (*volatile p_bzero)(void *, size_t) = bzero;

/* ---- copies checked against the reference ------------------------------------------ */

/* One round of checked operations of size n on buffers a, b, e (each >= n + 8192 bytes).
 * Returns the number of mismatches. Uses only the reference loops and the four
 * operations under test, so it is async-signal-safe. */
static int checked_round(unsigned char *a, unsigned char *b, unsigned char *e, size_t n,
                         unsigned seed) {
    int bad = 0;
    size_t span = n + 8192;
    ref_fill(b, span, seed + 1);
    /* memcpy, misaligned */
    ref_fill(a, span, seed);
    ref_fill(e, span, seed);
    ref_copy(e + 3, b + 5, n);
    if (p_memcpy(a + 3, b + 5, n) != a + 3 || ref_first_diff(a, e, span) >= 0)
        bad++;
    /* memmove, overlapping backward (dst below src) and forward */
    ref_move(e + 1, e + 100, n);
    p_memmove(a + 1, a + 100, n);
    if (ref_first_diff(a, e, span) >= 0)
        bad++;
    ref_move(e + 4000, e + 7, n);
    p_memmove(a + 4000, a + 7, n);
    if (ref_first_diff(a, e, span) >= 0)
        bad++;
    /* memset and bzero */
    ref_set(e + 9, (unsigned char)seed, n);
    p_memset(a + 9, (int)seed, n);
    if (ref_first_diff(a, e, span) >= 0)
        bad++;
    ref_set(e + 2, 0, n);
    p_bzero(a + 2, n);
    if (ref_first_diff(a, e, span) >= 0)
        bad++;
    return bad;
}

/* ---- the signal handler -------------------------------------------------------------- */

#define SIG_MAX 70000
static unsigned char sig_a[SIG_MAX + 8192], sig_b[SIG_MAX + 8192], sig_e[SIG_MAX + 8192];
static volatile sig_atomic_t sig_runs, sig_failures;

static void on_alarm(int signo) {
    static const size_t sizes[] = {1, 33, 200, 4096, SIG_MAX};
    (void)signo;
    size_t n = sizes[sig_runs % 5];
    sig_failures += checked_round(sig_a, sig_b, sig_e, n, (unsigned)sig_runs);
    sig_runs++;
}

/* ---- helpers ------------------------------------------------------------------------- */

static int expect_shim(void) {
    Dl_info info;
    void *p = dlsym(RTLD_DEFAULT, "memcpy");
    if (!p || !dladdr(p, &info) || !info.dli_fname ||
        !ref_contains(info.dli_fname, "blockmem_preload")) {
        fprintf(stderr, "FAIL memcpy is not the shim's in pid %d\n", (int)getpid());
        return 1;
    }
    return 0;
}

static int copy_workload(unsigned rounds, unsigned seed) {
    static const size_t sizes[] = {0, 7, 129, 1000, 65536 + 3, (1u << 20) + 1, (8u << 20) + 5};
    size_t max = (8u << 20) + 5 + 8192;
    unsigned char *a = malloc(max), *b = malloc(max), *e = malloc(max);
    if (!a || !b || !e)
        return 1;
    int bad = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            bad += checked_round(a, b, e, sizes[i], seed + r);
    free(a);
    free(b);
    free(e);
    return bad;
}

static int wait_ok(pid_t pid, const char *what) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "FAIL %s child: status %d\n", what, status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int want_shim = 0, child = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-shim"))
            want_shim = 1;
        else if (!strcmp(argv[i], "child"))
            child = 1;
    }
    if (want_shim)
        failures += expect_shim();
    if (child) { /* the exec'd program */
        failures += copy_workload(2, 77);
        printf("exec'd child: %d failures\n", failures);
        return failures ? 1 : 0;
    }

    /* 1. signals interrupting copies, copies inside the handler */
    struct sigaction sa;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval tv = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &tv, NULL);
    failures += copy_workload(6, 1);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("signal handler copies: %d runs, %d failures\n", (int)sig_runs, (int)sig_failures);
    failures += sig_failures;
    if (sig_runs < 10) {
        fprintf(stderr, "FAIL the timer fired only %d times\n", (int)sig_runs);
        failures++;
    }

    /* 2. fork */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        exit(copy_workload(2, 33) ? 1 : 0);
    failures += wait_ok(pid, "forked");

    /* 3. fork + exec */
    pid = fork();
    if (pid == 0) {
        char *args[] = {argv[0], "child", want_shim ? "--expect-shim" : NULL, NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    failures += wait_ok(pid, "exec'd");

    printf("forkexec_test: %d failures\n", failures);
    return failures ? 1 : 0;
}
