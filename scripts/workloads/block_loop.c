/* Writes one heap block again and again: a copy into it, a set of it to a new byte, or
 * a zeroing, ITERATIONS times, as a program reusing an output buffer does. Each call
 * finds the block where the last one left it: cached if that call wrote it with
 * temporal stores, in memory if it streamed it. The dispatcher remembers the blocks it
 * streamed and writes one met again soon with temporal stores, up to the profile's
 * `copy.loop_temporal_max` / `set.loop_temporal_max` (zeroing takes the sets').
 *
 * build: cc -O2 -fno-builtin -o block_loop scripts/workloads/block_loop.c
 * usage: block_loop BYTES ITERATIONS copy|set|zero
 * Run it under the shim with `blockmem run --compare --profile P [--profile Q] -- ./block_loop ...`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s BYTES ITERATIONS copy|set|zero\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 0);
    long iterations = strtol(argv[2], NULL, 0);
    const char *op = argv[3];
    int mode = !strcmp(op, "copy") ? 0 : !strcmp(op, "set") ? 1 : !strcmp(op, "zero") ? 2 : -1;
    if (n == 0 || iterations <= 0 || mode < 0) {
        fprintf(stderr, "%s: BYTES and ITERATIONS must be positive, the op copy, set or zero\n", argv[0]);
        return 2;
    }
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) {
        fprintf(stderr, "%s: cannot allocate two blocks of %zu bytes\n", argv[0], n);
        return 1;
    }
    memset(src, 3, n);
    unsigned long check = 0;
    for (long i = 0; i < iterations; i++) {
        src[(size_t)i % n] = (unsigned char)i;
        if (mode == 0)
            memcpy(dst, src, n);
        else if (mode == 1)
            memset(dst, (int)(i | 1) & 0xff, n);
        else
            memset(dst, 0, n);
        check += dst[(size_t)i * 4099 % n];
    }
    printf("%lu\n", check);
    return 0;
}
