/* Copies a source into the same heap block again and again, as a program that reuses
 * an output buffer does (CPython's `bytes + bytes` in a loop, for one), and checks every
 * copy. Usage: reuse_test BYTES ITERATIONS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reuse_test BYTES ITERATIONS\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 0);
    int iterations = atoi(argv[2]);
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) return 2;
    for (int i = 0; i < iterations; i++) {
        for (size_t k = 0; k < n; k += 64) src[k] = (unsigned char)(k / 64 * 7 + i);
        memcpy(dst, src, n);
        if (memcmp(dst, src, n) != 0) {
            fprintf(stderr, "reuse_test: copy %d differs\n", i);
            return 1;
        }
    }
    return 0;
}
