/* The system library under the C ABI's names, for the lab's `doors` experiment.
 *
 * Preloaded into the driver when it measures glibc through the `cabi` and `cmem`
 * doors, this library defines blockmem_copy/_move/_set and blockmem_memcpy/_memmove/
 * _memset as IFUNCs whose resolvers return the system library's memcpy, memmove and
 * memset. The dynamic linker writes those functions' addresses into the driver's
 * GOT slots for the blockmem names, so the driver's C ABI loops, unchanged and at
 * the same addresses, call glibc with no extra instruction: both sides of a door run
 * the same binary, the same loops and the same PLT stubs, and differ only in where
 * the stubs jump. (A second driver with the names defined to glibc's by the
 * preprocessor would lay its loops elsewhere in the file, and a loop's placement moves
 * its time: docs/results/epyc-zen4-2vcpu/doors-page-start.)
 *
 * The hint-taking names resolve to functions of three arguments: on x86-64 (and every
 * ABI passing the first arguments in registers) the fourth, the hint, is a register
 * the callee ignores. The resolvers run while the dynamic linker relocates the
 * driver, after this library and the system library are relocated, so the addresses
 * they read from this library's GOT are final. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*set_fn)(void *, int, size_t);
typedef void *(*copy_hint_fn)(void *, const void *, size_t, uint32_t);
typedef void *(*set_hint_fn)(void *, int, size_t, uint32_t);

static copy_fn pick_memcpy(void) { return memcpy; }
static copy_fn pick_memmove(void) { return memmove; }
static set_fn pick_memset(void) { return memset; }
static copy_hint_fn pick_copy(void) { return (copy_hint_fn)(void (*)(void))memcpy; }
static copy_hint_fn pick_move(void) { return (copy_hint_fn)(void (*)(void))memmove; }
static set_hint_fn pick_set(void) { return (set_hint_fn)(void (*)(void))memset; }

void *blockmem_copy(void *, const void *, size_t, uint32_t) __attribute__((ifunc("pick_copy")));
void *blockmem_move(void *, const void *, size_t, uint32_t) __attribute__((ifunc("pick_move")));
void *blockmem_set(void *, int, size_t, uint32_t) __attribute__((ifunc("pick_set")));
void *blockmem_memcpy(void *, const void *, size_t) __attribute__((ifunc("pick_memcpy")));
void *blockmem_memmove(void *, const void *, size_t) __attribute__((ifunc("pick_memmove")));
void *blockmem_memset(void *, int, size_t) __attribute__((ifunc("pick_memset")));
