/* hinted: three call sites that copy the same size, for the test that a hint map
 * changes the kernel of the sites it names and of no other
 * (crates/blockmem-lab/tests/trace_cli.rs). Built with -g -O1 -fno-builtin as a
 * position-independent executable (the compiler's default where it is one), so that
 * every memcpy is a call through the PLT from the line marked for it, at an address
 * that moves with each run.
 *
 *   noreuse, reuse, plain: ROUNDS copies of SIZE bytes each, from three functions
 *   into three buffers. The test's map names the first two sites only.
 */
#include <stdlib.h>
#include <string.h>

#define SIZE (64 << 10)
#define ROUNDS 8

__attribute__((noinline)) static void copy_noreuse(unsigned char *d, const unsigned char *s) {
    memcpy(d, s, SIZE); /* site: noreuse */
}

__attribute__((noinline)) static void copy_reuse(unsigned char *d, const unsigned char *s) {
    memcpy(d, s, SIZE); /* site: reuse */
}

__attribute__((noinline)) static void copy_plain(unsigned char *d, const unsigned char *s) {
    memcpy(d, s, SIZE); /* site: plain */
}

int main(void) {
    unsigned char *src = malloc(SIZE);
    unsigned char *dst[3] = {malloc(SIZE), malloc(SIZE), malloc(SIZE)};
    if (!src || !dst[0] || !dst[1] || !dst[2])
        return 1;
    for (size_t i = 0; i < SIZE; i++)
        src[i] = (unsigned char)(i * 7 + (i >> 12));
    for (int round = 0; round < ROUNDS; round++) {
        copy_noreuse(dst[0], src);
        copy_reuse(dst[1], src);
        copy_plain(dst[2], src);
    }
    for (int k = 0; k < 3; k++)
        if (memcmp(dst[k], src, SIZE) != 0)
            return 2;
    return 0;
}
