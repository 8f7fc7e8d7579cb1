/* The allocation load of bench/tools.py.
 *
 *   allocs N          N times malloc(64)+free, then print the loop's time in ns
 *   allocs N wait     the same after a line arrives on stdin
 *   allocs 0          sleep until killed (a process for a tool's -p to trace)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (n == 0) {
        for (;;)
            pause();
    }
    if (argc > 2 && strcmp(argv[2], "wait") == 0) {
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
            return 3;
    }
    long long t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *volatile p = malloc(64);
        free(p);
    }
    printf("%lld\n", now_ns() - t0);
    return 0;
}
