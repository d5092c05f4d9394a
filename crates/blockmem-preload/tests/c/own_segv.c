/* A program with its own SIGSEGV handler, which it triggers on purpose: it touches a
 * PROT_NONE page of its own and the handler makes the page writable again. The
 * handler is installed with sigaction before large copies and again with signal()
 * after them, between copies whose destinations the program then reads (the tracer's
 * traps). Prints what it saw; the output and exit code must be the same traced and
 * untraced. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE (4u << 20)

static volatile sig_atomic_t hits;
static volatile uintptr_t fault_addr;
static unsigned char *guard;
static long page;

static void on_segv_info(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)ctx;
    hits++;
    fault_addr = (uintptr_t)info->si_addr;
    mprotect(guard, page, PROT_READ | PROT_WRITE);
}

static void on_segv_plain(int sig) {
    (void)sig;
    hits += 100;
    mprotect(guard, page, PROT_READ | PROT_WRITE);
}

/* Protects the guard page and writes to it: the handler must run exactly once. */
static void trigger(int value) {
    mprotect(guard, page, PROT_NONE);
    ((volatile unsigned char *)guard)[17] = (unsigned char)value;
}

static uint64_t copy_and_read(unsigned char *dst, const unsigned char *src) {
    memcpy(dst, src, SIZE);
    uint64_t sum = 0;
    for (size_t i = 0; i < SIZE; i += 64) sum += dst[i];
    return sum;
}

int main(void) {
    page = sysconf(_SC_PAGESIZE);
    guard = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *src = malloc(SIZE), *dst = malloc(SIZE);
    if (guard == MAP_FAILED || !src || !dst) return 2;
    for (size_t i = 0; i < SIZE; i++) src[i] = (unsigned char)(i * 13 + 1);

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv_info;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) return 3;
    if (sigaction(SIGSEGV, NULL, &old) != 0) return 3;
    printf("installed handler reported back: %s\n",
           old.sa_sigaction == on_segv_info && (old.sa_flags & SA_SIGINFO) ? "yes" : "no");

    uint64_t sum = 0;
    for (int r = 0; r < 6; r++) {
        sum += copy_and_read(dst, src);
        trigger(r);
    }
    printf("sigaction handler: hits %d, address is the guard page: %s\n", (int)hits,
           fault_addr == (uintptr_t)guard + 17 ? "yes" : "no");

    hits = 0;
    void (*prev)(int) = signal(SIGSEGV, on_segv_plain);
    printf("signal() returned the previous handler: %s\n",
           (uintptr_t)prev == (uintptr_t)on_segv_info ? "yes" : "no");
    for (int r = 0; r < 6; r++) {
        trigger(r);
        sum += copy_and_read(dst, src);
    }
    printf("signal handler: hits %d, guard byte %d\n", (int)hits, guard[17]);
    printf("checksum %llu\n", (unsigned long long)sum);
    /* Back to the default action: the next fault kills the process with SIGSEGV. */
    signal(SIGSEGV, SIG_DFL);
    fflush(stdout);
    if (getenv("OWN_SEGV_DIE")) {
        mprotect(guard, page, PROT_NONE);
        guard[1] = 1;
    }
    return 7;
}
