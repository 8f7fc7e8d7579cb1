/* Workload of the long-string tests: opens the path given as its argument (a missing file:
 * the open fails), then exits. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    syscall(SYS_openat, AT_FDCWD, argv[1], O_RDONLY);
    return 0;
}
