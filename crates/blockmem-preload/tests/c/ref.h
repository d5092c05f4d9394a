/* Reference byte loops (ref.c), shared by the C test programs. */
#ifndef BLOCKMEM_TEST_REF_H
#define BLOCKMEM_TEST_REF_H

#include <stddef.h>

/* Fills p[0..n) with a pattern that depends on the index and the seed. */
void ref_fill(unsigned char *p, size_t n, unsigned seed);
/* Byte-at-a-time copy, forward (for disjoint ranges). */
void ref_copy(unsigned char *dst, const unsigned char *src, size_t n);
/* Byte-at-a-time move, in the direction overlap requires. */
void ref_move(unsigned char *dst, const unsigned char *src, size_t n);
/* Byte-at-a-time fill. */
void ref_set(unsigned char *dst, unsigned char byte, size_t n);
/* Index of the first differing byte, or -1 if equal. */
long ref_first_diff(const unsigned char *a, const unsigned char *b, size_t n);
/* 1 if needle occurs in the NUL-terminated haystack. */
int ref_contains(const char *haystack, const char *needle);

#endif
