#include <stdlib.h>
#include <string.h>
#define BIG (256u << 20)
#define N (64 << 10)
int main(int argc, char **argv) {
    unsigned char *src = malloc(N), *big = malloc(BIG);
    if (argc > 1) memset(big, 1, BIG); /* pre-touch: cold, not fresh */
    for (size_t i = 0; i < N; i++) src[i] = i;
    for (size_t off = 0; off + N <= BIG; off += N) memcpy(big + off, src, N);
    return big[12345] == 99;
}
