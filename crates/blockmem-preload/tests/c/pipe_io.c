/* Writes a copied destination to a pipe (its pages may be the tracer's traps), reads
 * it back through readv into another, and checks the I/O calls' results and errno:
 * a write to a closed descriptor (EBADF), a read from an empty non-blocking pipe
 * (EAGAIN), a partial write to a full non-blocking pipe, send on a non-socket
 * (ENOTSOCK). Prints what it saw; traced and untraced output must be equal. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE (1u << 20)

static uint64_t sum_of(const unsigned char *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s = s * 31 + p[i];
    return s;
}

__attribute__((noinline)) static void copy_for_output(unsigned char *dst, const unsigned char *src) {
    memcpy(dst, src, SIZE);
    __asm__ volatile("" ::: "memory");
}

int main(void) {
    unsigned char *src = malloc(SIZE), *out = malloc(SIZE), *back = malloc(SIZE);
    if (!src || !out || !back) return 2;
    for (size_t i = 0; i < SIZE; i++) src[i] = (unsigned char)(i * 5 + 11);
    int fds[2];
    for (int round = 0; round < 4; round++) {
        copy_for_output(out, src);
        if (pipe(fds) != 0) return 3;
        pid_t child = fork();
        if (child == 0) {
            close(fds[0]);
            size_t done = 0;
            while (done < SIZE) {
                ssize_t w = write(fds[1], out + done, SIZE - done);
                if (w <= 0) _exit(9);
                done += (size_t)w;
            }
            _exit(0);
        }
        close(fds[1]);
        size_t got = 0;
        while (got < SIZE) {
            struct iovec v[2] = {{back + got, (SIZE - got) / 2}, {back + got + (SIZE - got) / 2, SIZE - got - (SIZE - got) / 2}};
            ssize_t r = readv(fds[0], v, 2);
            if (r <= 0) break;
            got += (size_t)r;
        }
        close(fds[0]);
        int status = 0;
        waitpid(child, &status, 0);
        printf("round %d: read back %zu bytes, equal %s, writer exit %d\n", round, got,
               sum_of(back, SIZE) == sum_of(src, SIZE) ? "yes" : "no", WEXITSTATUS(status));
    }
    /* Straight from the destination, in this process (2 ms after the last round's
     * copy, so that the tracer, which arms at most one watch a millisecond, may watch
     * it on any host). */
    usleep(2000);
    copy_for_output(out, src);
    if (pipe(fds) != 0) return 3;
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    errno = 0;
    ssize_t r = read(fds[0], back, 100);
    printf("read empty non-blocking pipe: %zd errno %s\n", r, errno == EAGAIN ? "EAGAIN" : strerror(errno));
    ssize_t w = write(fds[1], out, SIZE);
    printf("write 1 MiB to a non-blocking pipe: partial %s\n", w > 0 && w < (ssize_t)SIZE ? "yes" : "no");
    errno = 0;
    ssize_t full = write(fds[1], out, SIZE);
    printf("write to a full pipe: %zd errno %s\n", full, errno == EAGAIN ? "EAGAIN" : strerror(errno));
    ssize_t drained = 0, k;
    while ((k = read(fds[0], back, SIZE)) > 0) drained += k;
    printf("drained %s\n", drained == w ? "all" : "not all");
    close(fds[0]);
    close(fds[1]);
    errno = 0;
    r = write(fds[1], out, 10);
    printf("write to a closed fd: %zd errno %s\n", r, errno == EBADF ? "EBADF" : strerror(errno));
    errno = 0;
    r = send(1, out, 10, 0);
    printf("send on a non-socket: %zd errno %s\n", r, errno == ENOTSOCK ? "ENOTSOCK" : strerror(errno));
    errno = 0;
    r = pwrite(fds[1], out, 10, 0);
    printf("pwrite to a closed fd: %zd errno %s\n", r, errno == EBADF ? "EBADF" : strerror(errno));
    return 0;
}
