/* Workload of the profile, offcputime, funclatency, gethostlatency and memusage tool tests.
 * Build it with `gcc -O0 -fno-omit-frame-pointer` so that every function below keeps its
 * frame and its name in user stacks.
 *
 * Usage: tools_work wait|now MODE [N]
 *   wait: read one line from stdin (the go signal) first; now: start at once.
 *
 * Modes:
 *   spin N     burn CPU in user space for N ms inside spin_outer -> spin_hot_function
 *   sleep N    sleep 20 ms at a time for N ms inside sleep_outer -> sleep_wait_function
 *   timed N    call timed_work(us) N times: 1000 us, then 20 us, alternately
 *              (timed_work busy-waits that long), then 3 calls of quick_return()
 *   resolve N  getaddrinfo("localhost", "80") N times, then gethostbyname("localhost") once
 *   alloc      a fixed sequence of malloc/calloc/realloc/free calls (see do_allocs)
 *   churn N    malloc(32)+free until a line arrives on stdin (the go line: use `now`), then
 *              N times malloc(777)+free: tracing that starts during the churn counts N
 *              blocks of 768-783 bytes exactly
 *   deep N     malloc(100)+free at a recursion depth of N frames of 1000 bytes, then the
 *              same at depth 5 in a second thread
 *   peek       exit with the number of malloc, calloc, realloc and free whose first
 *              instruction is a breakpoint (0xcc: a uprobe is placed in this process)
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

long spin_hot_function(long ms)
{
    volatile long x = 0;
    long end = now_us() + ms * 1000;
    while (now_us() < end)
        for (long i = 0; i < 100000; i++)
            x += i;
    return x;
}

long spin_outer(long ms) { return spin_hot_function(ms) + 1; }

void sleep_wait_function(long ms)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (long t = 0; t < ms; t += 20)
        nanosleep(&ts, NULL);
}

void sleep_outer(long ms) { sleep_wait_function(ms); }

long timed_work(long us)
{
    long end = now_us() + us;
    long n = 0;
    while (now_us() < end)
        n++;
    return n;
}

int quick_return(int x) { return x + 1; }

int resolve(long n)
{
    int ok = 0;
    for (long i = 0; i < n; i++) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo("localhost", "80", &hints, &res) == 0) {
            ok++;
            freeaddrinfo(res);
        }
    }
    if (gethostbyname("localhost") != NULL)
        ok++;
    return ok;
}

/* Known allocations: the sizes and the order are what the memusage test compares with
 * glibc's memusage. `nothing` and `huge` are volatile so that the compiler keeps
 * realloc(NULL, n), free(NULL) and the failing malloc as written. */
int do_allocs(void)
{
    void *volatile nothing = NULL;
    volatile size_t huge = (size_t)-1 / 2;
    void *a = malloc(100);              /* 96-111 */
    void *b = malloc(1000);             /* 992-1007 */
    void *c = calloc(10, 20);           /* 192-207 */
    void *d = malloc(40);               /* 32-47 */
    d = realloc(d, 4000);               /* grows in place (top of the heap): 4000-4015 */
    d = realloc(d, 30);                 /* shrinks: dec, 16-31 */
    void *e = realloc(nothing, 64);     /* realloc(NULL, n): a realloc that moves */
    void *f = malloc(48);               /* 48-63 */
    f = realloc(f, 0);                  /* frees f: realloc free */
    void *g = malloc(huge);             /* fails */
    void *small[3];
    for (int i = 0; i < 3; i++)
        small[i] = malloc(24);          /* 16-31, three more */
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(f);                            /* NULL after realloc(f, 0) */
    free(nothing);
    for (int i = 0; i < 3; i++)
        free(small[i]);
    void *big = malloc(70000);          /* large */
    free(big);
    return g == NULL ? 0 : 1;
}

/* Mallocs and frees until stdin has a line, then N blocks of 777 bytes. */
long churn(long n)
{
    struct pollfd in = { .fd = 0, .events = POLLIN };
    for (;;) {
        for (int i = 0; i < 1000; i++)
            free(malloc(32));
        if (poll(&in, 1, 0) > 0)
            break;
    }
    for (long i = 0; i < n; i++)
        free(malloc(777));
    return 0;
}

/* An allocation under N frames of 1000 bytes each. */
__attribute__((noinline)) long deep(long n)
{
    volatile char pad[1000];
    memset((char *)pad, (int)n, sizeof(pad));
    if (n == 0) {
        free(malloc(100));
        return pad[1];
    }
    return deep(n - 1) + pad[2];
}

static void *deep_thread(void *arg)
{
    (void)arg;
    deep(5);
    return NULL;
}

/* How many of the allocation functions carry a breakpoint in this process. */
int peek(void)
{
    const char *names[] = { "malloc", "calloc", "realloc", "free" };
    int hooked = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned char *code = dlsym(RTLD_DEFAULT, names[i]);
        if (code != NULL && code[0] == 0xcc)
            hooked++;
    }
    return hooked;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    if (strcmp(argv[1], "wait") == 0) {
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
            return 3;
    }
    const char *mode = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 1000;
    long acc = 0;
    if (strcmp(mode, "spin") == 0) {
        acc += spin_outer(n);
    } else if (strcmp(mode, "sleep") == 0) {
        sleep_outer(n);
    } else if (strcmp(mode, "timed") == 0) {
        for (long i = 0; i < n; i++)
            acc += timed_work(i % 2 == 0 ? 1000 : 20);
        for (int i = 0; i < 3; i++)
            acc += quick_return(i);
    } else if (strcmp(mode, "resolve") == 0) {
        acc += resolve(n);
    } else if (strcmp(mode, "alloc") == 0) {
        acc += do_allocs();
    } else if (strcmp(mode, "churn") == 0) {
        acc += churn(n);
    } else if (strcmp(mode, "deep") == 0) {
        pthread_t t;
        acc += deep(n);
        pthread_create(&t, NULL, deep_thread, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(mode, "peek") == 0) {
        return peek();
    } else {
        return 2;
    }
    return acc == -1 ? 1 : 0;
}
