/* The reference: naive byte loops, compiled apart from the code under test with
 * -O2 -fno-builtin -fno-tree-loop-distribute-patterns, so that the compiler can neither
 * call memcpy/memset nor turn these loops into such calls. Every test program computes
 * its expected bytes here and compares them here.
 */
#include "ref.h"

void ref_fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7u + (i >> 8) * 13u + seed * 31u + 1u);
}

void ref_copy(unsigned char *dst, const unsigned char *src, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

void ref_move(unsigned char *dst, const unsigned char *src, size_t n) {
    if (dst < src) {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    } else {
        for (size_t i = n; i > 0; i--)
            dst[i - 1] = src[i - 1];
    }
}

void ref_set(unsigned char *dst, unsigned char byte, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = byte;
}

long ref_first_diff(const unsigned char *a, const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

int ref_contains(const char *haystack, const char *needle) {
    for (const char *h = haystack; *h; h++) {
        const char *a = h, *b = needle;
        while (*b && *a == *b) {
            a++;
            b++;
        }
        if (!*b)
            return 1;
    }
    return 0;
}
