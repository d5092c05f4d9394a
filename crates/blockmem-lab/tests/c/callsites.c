/* callsites: three call sites with known fates, for the per-site report and --advise
 * (crates/blockmem-lab/tests/trace_cli.rs). Built with -g -O1 -fno-builtin, so that
 * every memcpy is a call through the PLT, made from the line marked for it.
 *
 *   reused:  copy_then_read copies 256 KiB into `work`, which the next loop reads
 *            right after (by the small copies: block operations the trace sees)
 *   small:   the loop's 64-byte copies, 4096 per round, into one small buffer
 *   discard: copy_and_discard copies 4 MiB into a buffer it then only writes to
 *            /dev/null: never read again (by block operations)
 *
 * Four rounds: 4, 16384 and 4 calls. The input is filled by a loop, not memset.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REUSED (256 << 10)
#define DISCARD (4 << 20)
#define SMALL 64

__attribute__((noinline)) static unsigned copy_then_read(unsigned char *work,
                                                         const unsigned char *input,
                                                         unsigned char *small) {
    memcpy(work, input, REUSED); /* site: reused */
    unsigned sum = 0;
    for (size_t i = 0; i < REUSED; i += SMALL) {
        memcpy(small, work + i, SMALL); /* site: small */
        sum += small[i % SMALL];
    }
    return sum;
}

__attribute__((noinline)) static int copy_and_discard(int fd, unsigned char *big,
                                                      const unsigned char *input) {
    memcpy(big, input, DISCARD); /* site: discard */
    return write(fd, big, DISCARD) == DISCARD ? 0 : 1;
}

int main(void) {
    unsigned char *input = malloc(DISCARD);
    unsigned char *work = malloc(REUSED);
    unsigned char *big = malloc(DISCARD);
    unsigned char small[SMALL];
    int fd = open("/dev/null", O_WRONLY);
    if (!input || !work || !big || fd < 0)
        return 1;
    for (size_t i = 0; i < DISCARD; i++) {
        input[i] = (unsigned char)(i * 7 + (i >> 12));
        big[i] = (unsigned char)i;
    }
    unsigned sum = 0;
    int bad = 0;
    for (int round = 0; round < 4; round++) {
        sum += copy_then_read(work, input, small);
        bad |= copy_and_discard(fd, big, input);
    }
    return bad || sum == 0xdeadbeef;
}
