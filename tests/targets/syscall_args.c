/* Workload of the syscall-tracepoint tests: makes system calls with known arguments and
 * results, then exits. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char buf[8];
    /* On the stack, so that its page is present when the probe reads it. */
    char path[] = "/nonexistent/sonde-syscall-args";
    for (int i = 0; i < 5; i++) syscall(SYS_getppid);
    /* read(-5, buf, 123) fails with EBADF (-9). */
    syscall(SYS_read, -5, buf, 123);
    /* openat of a missing file fails with ENOENT (-2). */
    syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0640);
    /* Six arguments: they come from di, si, dx, r10, r8, r9. */
    syscall(SYS_mmap, (void *)0x7000, 4096UL, 3UL, 0x22UL, -1L, 8192UL);
    syscall(SYS_close, -77);
    return 0;
}
