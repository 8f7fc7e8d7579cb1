/* libifunc: a library whose `ifunc_pick` is a GNU IFUNC, as glibc's string functions are:
 * the symbol is a resolver, run once when the library is relocated, that returns the
 * implementation (here always `pick_impl`; built stripped, so that, as in the system libc,
 * no symbol names the implementation). Its constructor appends the command line of the
 * process that loaded it, one line, to the file named by $SONDE_CTOR_LOG. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static int pick_impl(int x) {
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static void *pick_resolver(void) { return (void *)pick_impl; }

int ifunc_pick(int x) __attribute__((ifunc("pick_resolver")));

__attribute__((constructor)) static void log_loader(void) {
    const char *log = getenv("SONDE_CTOR_LOG");
    if (!log)
        return;
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
    buf[n] = '\n';
    fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0)
        return;
    (void)!write(fd, buf, (size_t)n + 1);
    close(fd);
}
