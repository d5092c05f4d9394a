/* Hands copied destinations (whose pages may be the tracer's traps) to the kernel
 * through the calls beside read/write: pwritev/preadv and their v2 forms to a file,
 * sendmmsg/recvmmsg over a socket pair, vmsplice into a pipe, process_vm_writev and
 * process_vm_readv on this process. Prints what came back; traced and untraced output
 * must be equal. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIZE (1u << 20)
#define MSG (16u << 10)

static unsigned char *src, *zero;

/* The call site the tracer watches: `out` gets the pattern to hand to the kernel,
 * `back` zeros that the kernel's copy must replace. */
__attribute__((noinline)) static void fill(unsigned char *dst, const unsigned char *from) {
    memcpy(dst, from, SIZE);
    __asm__ volatile("" ::: "memory");
}

static const char *same(const unsigned char *p, size_t n) {
    return memcmp(p, src, n) == 0 ? "equal" : "DIFFERENT";
}

static void result(const char *what, ssize_t r, size_t want, const unsigned char *back) {
    if (r < 0)
        printf("%s: -1 errno %s\n", what, strerror(errno));
    else
        printf("%s: %zd of %zu bytes, %s\n", what, r, want, same(back, (size_t)r));
}

int main(void) {
    src = malloc(SIZE);
    zero = calloc(1, SIZE);
    unsigned char *out = malloc(SIZE), *back = malloc(SIZE);
    if (!src || !zero || !out || !back) return 2;
    for (size_t i = 0; i < SIZE; i++) src[i] = (unsigned char)(i * 13 + 7);
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/vector_io_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return 3;
    unlink(path);
    for (int round = 0; round < 3; round++) {
        struct iovec o[2] = {{out, SIZE / 2}, {out + SIZE / 2, SIZE / 2}};
        struct iovec b[2] = {{back, SIZE / 2}, {back + SIZE / 2, SIZE / 2}};
        fill(out, src);
        result("pwritev", pwritev(fd, o, 2, 0), SIZE, out);
        fill(back, zero);
        result("preadv", preadv(fd, b, 2, 0), SIZE, back);
        fill(out, src);
        result("pwritev2", pwritev2(fd, o, 2, 0, 0), SIZE, out);
        fill(back, zero);
        result("preadv2", preadv2(fd, b, 2, 0, 0), SIZE, back);

        int sv[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0) return 4;
        fill(out, src);
        struct mmsghdr sm[4], rm[4];
        struct iovec siov[4], riov[4];
        memset(sm, 0, sizeof sm);
        memset(rm, 0, sizeof rm);
        for (int k = 0; k < 4; k++) {
            siov[k] = (struct iovec){out + k * MSG, MSG};
            riov[k] = (struct iovec){back + k * MSG, MSG};
            sm[k].msg_hdr.msg_iov = &siov[k];
            sm[k].msg_hdr.msg_iovlen = 1;
            rm[k].msg_hdr.msg_iov = &riov[k];
            rm[k].msg_hdr.msg_iovlen = 1;
        }
        int sent = sendmmsg(sv[0], sm, 4, 0);
        fill(back, zero);
        int got = recvmmsg(sv[1], rm, 4, MSG_DONTWAIT, NULL);
        printf("sendmmsg %d, recvmmsg %d, %s\n", sent, got, same(back, 4 * MSG));
        close(sv[0]);
        close(sv[1]);

        int p[2];
        if (pipe(p) != 0) return 5;
        fill(out, src);
        fill(back, zero);
        size_t moved = 0;
        while (moved < SIZE) {
            struct iovec v = {out + moved, MSG};
            ssize_t w = vmsplice(p[1], &v, 1, 0);
            if (w <= 0) break;
            size_t drained = 0;
            while (drained < (size_t)w) {
                ssize_t k = read(p[0], back + moved + drained, (size_t)w - drained);
                if (k <= 0) break;
                drained += (size_t)k;
            }
            moved += (size_t)w;
        }
        printf("vmsplice: %zu of %u bytes, %s\n", moved, SIZE, same(back, moved));
        close(p[0]);
        close(p[1]);

        fill(out, src);
        fill(back, zero);
        struct iovec l = {out, SIZE}, rem = {back, SIZE};
        result("process_vm_writev", process_vm_writev(getpid(), &l, 1, &rem, 1, 0), SIZE, back);
        fill(back, zero);
        struct iovec l2 = {back, SIZE}, rem2 = {out, SIZE};
        result("process_vm_readv", process_vm_readv(getpid(), &l2, 1, &rem2, 1, 0), SIZE, back);
    }
    close(fd);
    return 0;
}
