/* secure_test: linked against libblockmem_preload.so as an ordinary dependency (the
 * dynamic linker ignores LD_PRELOAD paths in AT_SECURE processes). Prints
 * "at_secure=N", checks that memcpy is the shim's and that copies are right. The test
 * runs it once normally and once set-user-ID, where the shim must ignore BLOCKMEM_*.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "ref.h"

static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;

int main(void) {
    printf("at_secure=%lu\n", getauxval(AT_SECURE));
    Dl_info info;
    if (!dladdr((void *)p_memcpy, &info) || !info.dli_fname ||
        !ref_contains(info.dli_fname, "blockmem_preload")) {
        fprintf(stderr, "FAIL memcpy is not the shim's\n");
        return 1;
    }
    static unsigned char a[1 << 20], b[1 << 20], e[1 << 20];
    ref_fill(b, sizeof b, 3);
    ref_fill(a, sizeof a, 4);
    ref_fill(e, sizeof e, 4);
    ref_copy(e + 1, b, 500000);
    p_memcpy(a + 1, b, 500000);
    if (ref_first_diff(a, e, sizeof a) >= 0) {
        fprintf(stderr, "FAIL copy mismatch\n");
        return 1;
    }
    return 0;
}
