/* ltrace_calls: calls strlen exactly 1000 times and malloc exactly 300 times (each freed),
 * through libc, then exits. Built with -fno-builtin, and the arguments are volatile, so that
 * the compiler neither inlines nor folds a call. No stdio: it would allocate. */
#include <stdlib.h>
#include <string.h>

int main(void) {
    static char text[] = "sonde";
    char *volatile s = text;
    volatile int n_strlen = 1000, n_malloc = 300;
    size_t total = 0;
    for (int i = 0; i < n_strlen; i++)
        total += strlen(s);
    for (int i = 0; i < n_malloc; i++) {
        void *volatile p = malloc(16 + (size_t)i);
        free(p);
    }
    return total == 5 * (size_t)n_strlen ? 0 : 1;
}
