/* Target of sonde's uprobe, profile and BTF end-to-end tests. Build it with
 * `gcc -O0 -fno-omit-frame-pointer` (a PIE) and link it to libsondetest.so.
 *
 * Usage:
 *   uprobe_target wait MODE [N]   read one line from stdin (the go signal), then run MODE
 *   uprobe_target now MODE [N]    run MODE at once (for -c, where the tracer holds the child)
 *
 * Modes:
 *   calls      getpid() 3 times, then add(i, i + 10) for i in 0..N (default 3), then
 *              lib_work(100) twice, add_three(1, 2, 3),
 *              then greet("hello sonde"), then chain: outer -> middle -> inner (leaf) once,
 *              then via_lib: lib_call(cb_square, 7), then recurse(4), then call_fp(add)
 *   busy       call getppid() in a loop for N milliseconds (default 1500), inside busy_loop
 *   spin       burn CPU in user space for N milliseconds inside spin_user
 *   touch      touch N fresh pages (default 256) of a new mapping
 *   sleep      sleep N milliseconds (a process with a known parent for BTF tests)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

long lib_work(long n);
int lib_call(int (*cb)(int), int x);

int add(int a, int b) { return a + b; }
int add_three(int a, int b, int c) { return a + b + c; }
int greet(const char *who) { return (int)strlen(who); }
int leaf(int x) { return x * 3; }
int inner(int x) { return leaf(x) + 1; }
int middle(int x) { return inner(x) + 1; }
int outer(int x) { return middle(x) + 1; }
int cb_square(int x) { return leaf(x) * x; }
int recurse(int depth) { return depth <= 0 ? leaf(0) : recurse(depth - 1) + 1; }
int call_fp(int (*fp)(int, int)) { return fp(20, 22); }

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

long busy_loop(long ms)
{
    long n = 0, end = now_ms() + ms;
    while (now_ms() < end)
        for (int i = 0; i < 1000; i++)
            n += getppid() & 1;
    return n;
}

long spin_user(long ms)
{
    volatile long x = 0;
    long end = now_ms() + ms;
    while (now_ms() < end)
        for (long i = 0; i < 1000000; i++)
            x += i;
    return x;
}

long touch_pages(long n)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    for (long i = 0; i < n; i++)
        p[i * page] = 1;
    munmap(p, (size_t)(n * page));
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: uprobe_target wait|now MODE [N]\n");
        return 2;
    }
    if (strcmp(argv[1], "wait") == 0) {
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            return 3;
    }
    const char *mode = argv[2];
    long n = argc > 3 ? atol(argv[3]) : -1;
    long acc = 0;
    if (strcmp(mode, "calls") == 0) {
        if (n < 0)
            n = 3;
        for (int i = 0; i < 3; i++)
            acc += getpid() & 1;
        for (int i = 0; i < n; i++)
            acc += add(i, i + 10);
        acc += lib_work(100);
        acc += lib_work(100);
        acc += add_three(1, 2, 3);
        acc += greet("hello sonde");
        acc += outer(5);
        acc += lib_call(cb_square, 7);
        acc += recurse(4);
        acc += call_fp(add);
    } else if (strcmp(mode, "busy") == 0) {
        acc += busy_loop(n < 0 ? 1500 : n);
    } else if (strcmp(mode, "spin") == 0) {
        acc += spin_user(n < 0 ? 1500 : n);
    } else if (strcmp(mode, "touch") == 0) {
        acc += touch_pages(n < 0 ? 256 : n);
    } else if (strcmp(mode, "sleep") == 0) {
        usleep((useconds_t)((n < 0 ? 1000 : n) * 1000));
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return acc == -12345 ? 1 : 0;
}
