/* Workload of the tools tests: waits for a line on stdin, then makes a known number of
 * system calls: 3000 getppid() and 700 failing openat() of a missing file. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;
    for (int i = 0; i < 3000; i++) syscall(SYS_getppid);
    for (int i = 0; i < 700; i++) syscall(SYS_openat, AT_FDCWD, "/nonexistent/sonde-syscount", O_RDONLY);
    return 0;
}
