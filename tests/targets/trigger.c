/* Test target for sonde's end-to-end tests.
 *
 * Usage:
 *   trigger wait N [PATH]   read one line from stdin (the go signal), then call getppid()
 *                           N times, call target_work(i) for i in 0..N, open PATH if given
 *   trigger now N [PATH]    the same without waiting (for -c, where the tracer holds the child)
 *   trigger exec PROG       read the go line, then execv(PROG)
 *
 * The go signal lets a test start the tracer, wait until its probes are attached, and only
 * then let the target fire its events.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A function for uprobe tests: not inlined, not optimized away. */
__attribute__((noinline)) int target_work(int x)
{
    __asm__ volatile("" ::: "memory");
    return x * 2;
}

/* A second function so that listing shows more than one probe-able symbol. */
__attribute__((noinline)) int target_other(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static void wait_go(void)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        exit(3);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: trigger wait|now N [PATH] | trigger exec PROG\n");
        return 2;
    }
    if (strcmp(argv[1], "exec") == 0) {
        wait_go();
        char *child_argv[] = {argv[2], NULL};
        execv(argv[2], child_argv);
        perror("execv");
        return 4;
    }
    if (strcmp(argv[1], "wait") == 0)
        wait_go();
    long n = atol(argv[2]);
    int acc = 0;
    for (long i = 0; i < n; i++)
        acc += (int)getppid() & 1;
    for (long i = 0; i < n; i++)
        acc += target_work((int)i);
    acc += target_other(acc);
    if (argc > 3) {
        int fd = open(argv[3], O_RDONLY);
        if (fd >= 0)
            close(fd);
    }
    return acc == -1 ? 1 : 0;
}
