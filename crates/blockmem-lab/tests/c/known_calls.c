/* known_calls: six block operations with known sizes, alignments and reuse, for the
 * trace report's exact numbers (crates/blockmem-lab/tests/trace_cli.rs).
 *
 *   1. memcpy(A, B, 4096)          page-aligned full page; A is read by call 2
 *   2. memcpy(C + 8, A, 4096)      A used as a source; (dst - src) mod 4096 = 8
 *   3. memset(D + 3, 0x11, 1000)   overwritten by call 4
 *   4. memmove(D + 3, E + 1, 1000) (dst - src) mod 4096 = 2
 *   5. bzero(E + 64, 512)          a page fragment, line-aligned
 *   6. memcpy(B + 100, B + 2000, 10)  inline size
 *
 * With "fork", the parent then forks a child that makes one more memcpy of 100 bytes
 * and exits through exit(); the parent waits for it. No stdio and no heap: nothing
 * else in the program calls the block operations.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char A[8192] __attribute__((aligned(4096)));
static unsigned char B[8192] __attribute__((aligned(4096)));
static unsigned char C[8192] __attribute__((aligned(4096)));
static unsigned char D[8192] __attribute__((aligned(4096)));
static unsigned char E[8192] __attribute__((aligned(4096)));

/* Called through volatile pointers so that the compiler keeps every call. */
static void *(*volatile p_memcpy)(void *, const void *, size_t) = memcpy;
static void *(*volatile p_memmove)(void *, const void *, size_t) = memmove;
static void *(*volatile p_memset)(void *, int, size_t) = memset;
static void (*volatile p_bzero)(void *, size_t) = bzero;

int main(int argc, char **argv) {
    p_memcpy(A, B, 4096);
    p_memcpy(C + 8, A, 4096);
    p_memset(D + 3, 0x11, 1000);
    p_memmove(D + 3, E + 1, 1000);
    p_bzero(E + 64, 512);
    p_memcpy(B + 100, B + 2000, 10);
    if (argc > 1 && argv[1][0] == 'f') {
        pid_t pid = fork();
        if (pid == 0) {
            p_memcpy(E + 4096, A + 64, 100);
            exit(0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}
