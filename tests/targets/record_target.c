/* Target of sonde's record/replay end-to-end tests (tests/engine_record/). Build it with
 * `gcc -O0 -fno-omit-frame-pointer`.
 *
 * Usage: record_target [wait] HOLD_MS
 *   wait     read one line from stdin (the go signal) first
 *   then:    step(i, 10 * i) for i in 0..5; name("alpha"), name("beta"), name("alpha");
 *            outer(5) -> middle -> leaf; 3 getppid() system calls; pick(step), which calls
 *            step(1, 2) through the pointer; done(); then sleep HOLD_MS milliseconds (so that
 *            the process is alive while the tracer prints its stacks) and exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) long step(long i, long v) { return i + v; }
__attribute__((noinline)) int name(const char *s) { return (int)strlen(s); }
__attribute__((noinline)) int leaf(int x) { return x * 3; }
__attribute__((noinline)) int middle(int x) { return leaf(x) + 1; }
__attribute__((noinline)) int outer(int x) { return middle(x) + 1; }
__attribute__((noinline)) long pick(long (*fp)(long, long)) { return fp(1, 2); }
__attribute__((noinline)) void done(void) { __asm__ volatile(""); }

int main(int argc, char **argv)
{
    int a = 1;
    if (argc > a && strcmp(argv[a], "wait") == 0) {
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            return 3;
        a++;
    }
    long hold = argc > a ? atol(argv[a]) : 0;
    long acc = 0;
    for (long i = 0; i < 5; i++)
        acc += step(i, 10 * i);
    acc += name("alpha");
    acc += name("beta");
    acc += name("alpha");
    acc += outer(5);
    for (int i = 0; i < 3; i++)
        acc += syscall(SYS_getppid) & 1;
    acc += pick(step);
    done();
    struct timespec ts = {hold / 1000, (hold % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return acc == -12345 ? 1 : 0;
}
