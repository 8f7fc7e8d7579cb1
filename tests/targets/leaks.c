/* Workload of the memleak tool tests: leaks of known sizes and counts from known functions,
 * among blocks that are freed. Build it with `gcc -O0 -fno-omit-frame-pointer` so that
 * every function below keeps its frame and its name in user stacks. It uses no stdio (whose
 * buffers would be allocations of their own).
 *
 * Usage: leaks wait|now SECONDS
 *   wait: read one line from stdin (the go signal) first; now: start at once.
 * Then it makes the calls below and sleeps SECONDS before exiting. Outstanding at the end:
 *   leak_malloc    7 x malloc(1234)                  8638 bytes in 7 allocations
 *   leak_calloc    3 x calloc(1, 5000)              15000 bytes in 3 allocations
 *   leak_aligned   2 x posix_memalign(64, 4096)      8192 bytes in 2 allocations
 *   leak_realloc   1 x realloc(malloc(10), 3000)     3000 bytes in 1 allocation
 * and every other block freed: 100 x malloc(100), calloc(10, 50), realloc chains,
 * posix_memalign, aligned_alloc, memalign, valloc, all freed.
 */
#include <malloc.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep[16];

__attribute__((noinline)) void leak_malloc(void)
{
    for (int i = 0; i < 7; i++)
        keep[i] = malloc(1234);
}

__attribute__((noinline)) void leak_calloc(void)
{
    for (int i = 0; i < 3; i++)
        keep[7 + i] = calloc(1, 5000);
}

__attribute__((noinline)) void leak_aligned(void)
{
    for (int i = 0; i < 2; i++) {
        void *p = NULL;
        if (posix_memalign(&p, 64, 4096) == 0)
            keep[10 + i] = p;
    }
}

__attribute__((noinline)) void leak_realloc(void)
{
    void *p = malloc(10);
    keep[12] = realloc(p, 3000);
}

__attribute__((noinline)) void churn(void)
{
    for (int i = 0; i < 100; i++)
        free(malloc(100));
    free(calloc(10, 50));
    void *p = realloc(NULL, 20);
    p = realloc(p, 200);
    p = realloc(p, 50000);
    free(p);
    void *a = NULL;
    if (posix_memalign(&a, 128, 300) == 0)
        free(a);
    free(aligned_alloc(64, 640));
    free(memalign(32, 320));
    free(valloc(100));
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    if (argv[1][0] == 'w') {
        char c;
        while (read(0, &c, 1) == 1 && c != '\n')
            ;
    }
    churn();
    leak_malloc();
    leak_calloc();
    leak_aligned();
    leak_realloc();
    churn();
    struct timespec ts = {atoi(argv[2]), 0};
    nanosleep(&ts, NULL);
    return 0;
}
