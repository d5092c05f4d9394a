/* Two call sites for the tracer's fate: `copy_then_read` copies 8 MiB and then reads
 * every line of the destination with ordinary loads; `copy_never_read` copies 8 MiB
 * into buffers it never touches again. Prints a checksum (the same with and without
 * the shim). Usage: two_sites [rounds [gap_us]]: gap_us microseconds of sleep before
 * each call (the tracer arms at most one watch a millisecond, so on a fast host a call
 * that always follows the other within 1 ms would never be watched). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (8u << 20)
#define KEEP 8

__attribute__((noinline)) static uint64_t copy_then_read(unsigned char *dst, const unsigned char *src) {
    memcpy(dst, src, SIZE);
    uint64_t sum = 0;
    for (size_t i = 0; i < SIZE; i += 64) sum += dst[i];
    return sum;
}

__attribute__((noinline)) static void copy_never_read(unsigned char *dst, const unsigned char *src) {
    memcpy(dst, src, SIZE);
    __asm__ volatile("" ::: "memory"); /* no tail call: the site is this function */
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 8;
    unsigned gap_us = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    unsigned char *src = malloc(SIZE), *read_dst = malloc(SIZE);
    unsigned char *unread[KEEP];
    if (!src || !read_dst) return 2;
    for (int k = 0; k < KEEP; k++)
        if (!(unread[k] = malloc(SIZE))) return 2;
    for (size_t i = 0; i < SIZE; i++) src[i] = (unsigned char)(i * 7 + 3);
    uint64_t sum = 0;
    for (int r = 0; r < rounds; r++) {
        if (gap_us) usleep(gap_us);
        sum += copy_then_read(read_dst, src);
        if (gap_us) usleep(gap_us);
        copy_never_read(unread[r % KEEP], src);
    }
    printf("two_sites: checksum %llu\n", (unsigned long long)sum);
    return 0;
}
