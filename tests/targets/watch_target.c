/* Target of the watchpoint tests (tests/probes_self_watch.rs), built with -no-pie so that
 * `nm` gives the run-time addresses of `watched` and `watched_fn`.
 *
 * Usage:
 *   watch_target wait   read one line from stdin (the go signal), then act
 *   watch_target now    act at once (for -c, where the tracer holds the child)
 *
 * Acting: 5 stores to `watched` (one `mov` each), 3 loads of it, 3 calls of `watched_fn`,
 * then exit 0. Nothing else touches `watched` (in .data: `-c` watches the child from before
 * its exec, and the kernel clears .bss at exec, byte by byte).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile long watched = -1; /* in .data: exec does not clear it */
volatile long sink;

__attribute__((noinline)) long watched_fn(long x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "wait") == 0) {
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            return 3;
    }
    for (long i = 1; i <= 5; i++)
        watched = i;
    for (int i = 0; i < 3; i++)
        sink += watched;
    for (long i = 0; i < 3; i++)
        sink += watched_fn(i);
    return 0;
}
