/* Workload of tests/tools_bpftrace_output.rs: what bpftrace's shipped tools trace, done once
 * by a process with a distinctive comm (the binary's name, bt_tools_load).
 *
 * Usage: bt_tools_load DIR MODE
 *   Waits for a line on stdin (the go signal), then does MODE; DIR is a directory of the test
 *   holding a file named `file` (created here when missing).
 *
 * Modes (the tool that shows them in brackets):
 *   exec     execs a missing program, then /bin/true with a marker argument [execsnoop]
 *   open     opens DIR/file (fd 3) and a missing path [opensnoop]
 *   kill     kill(self, 0), kill(a missing pid, 0) and kill(0, 0) [killsnoop]
 *   setuid   setuid, setfsuid and setresuid to its own ids [setuids]
 *   stat     stat, lstat, statfs and statx of DIR/file and of a missing path [statsnoop]
 *   sync     fsync, fdatasync, syncfs, sync_file_range, msync and sync [syncsnoop, writeback]
 *   sleep    nanosleep(0.020 s), then nanosleep(0) which naptime's predicate skips [naptime]
 *   resolve  getaddrinfo("localhost") then gethostbyname("localhost") [gethostlatency]
 *   fork     five children that exit at once [pidpersec]
 *   syscalls 20000 getppid() [syscount]
 *   io       four 16 KiB O_DIRECT writes to DIR/file, each followed by fdatasync [bitesize]
 *   spin     burns 400 ms of CPU in two processes [cpuwalk, runqlat]
 *   bash     an interactive bash on a pseudo-terminal reads `echo sonde-bt-readline` [bashreadline]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netdb.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char file[4096];

static void spin(long ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static int bash(void)
{
    int fd;
    pid_t child = forkpty(&fd, NULL, NULL, NULL);
    if (child < 0) return 1;
    if (child == 0) {
        execl("/bin/bash", "bash", "--norc", "--noprofile", "-i", (char *)NULL);
        _exit(127);
    }
    const char *input = "echo sonde-bt-readline\nexit\n";
    if (write(fd, input, strlen(input)) < 0) return 1;
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    int status;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    snprintf(file, sizeof file, "%s/file", argv[1]);
    const char *mode = argv[2];
    const char *missing = "/nonexistent/sonde-bt-missing";
    int fd = open(file, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || write(fd, "sonde\n", 6) != 6) return 1;
    close(fd);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;

    if (!strcmp(mode, "exec")) {
        char *args[] = {"true", "--sonde-bt-marker", NULL};
        execv(missing, args);
        execv("/bin/true", args);
        return 1;
    } else if (!strcmp(mode, "open")) {
        if (open(file, O_RDONLY) != 3) return 1;
        if (open(missing, O_RDONLY) != -1) return 1;
    } else if (!strcmp(mode, "kill")) {
        kill(getpid(), 0);
        kill(0x7ffffff0, 0);
        kill(0, 0);
    } else if (!strcmp(mode, "setuid")) {
        if (setuid(getuid()) || setresuid(-1, -1, -1)) return 1;
        setfsuid(getuid());
    } else if (!strcmp(mode, "stat")) {
        struct stat st;
        struct statfs sf;
        struct statx sx;
        syscall(SYS_stat, file, &st);
        syscall(SYS_lstat, missing, &st);
        statfs(file, &sf);
        statx(AT_FDCWD, missing, 0, STATX_BASIC_STATS, &sx);
    } else if (!strcmp(mode, "sync")) {
        fd = open(file, O_RDWR);
        if (fd < 0) return 1;
        fsync(fd);
        fdatasync(fd);
        syncfs(fd);
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return 1;
        p[0] = 'S';
        msync(p, 4096, MS_SYNC);
        sync();
    } else if (!strcmp(mode, "sleep")) {
        struct timespec ts = {0, 20 * 1000 * 1000}, zero = {0, 0};
        syscall(SYS_nanosleep, &ts, NULL);
        syscall(SYS_nanosleep, &zero, NULL);
    } else if (!strcmp(mode, "resolve")) {
        struct addrinfo *res;
        if (getaddrinfo("localhost", NULL, NULL, &res) == 0) freeaddrinfo(res);
        gethostbyname("localhost");
    } else if (!strcmp(mode, "fork")) {
        for (int i = 0; i < 5; i++)
            if (fork() == 0) _exit(0);
        while (wait(NULL) > 0) {
        }
    } else if (!strcmp(mode, "syscalls")) {
        for (int i = 0; i < 20000; i++) syscall(SYS_getppid);
    } else if (!strcmp(mode, "io")) {
        fd = open(file, O_WRONLY | O_DIRECT);
        if (fd < 0) return 1;
        void *buf;
        if (posix_memalign(&buf, 4096, 16384)) return 1;
        memset(buf, 's', 16384);
        for (int i = 0; i < 4; i++) {
            if (pwrite(fd, buf, 16384, (off_t)i * 16384) != 16384) return 1;
            fdatasync(fd);
        }
    } else if (!strcmp(mode, "spin")) {
        pid_t c = fork();
        spin(400);
        if (c == 0) _exit(0);
        waitpid(c, NULL, 0);
    } else if (!strcmp(mode, "bash")) {
        return bash();
    } else {
        return 2;
    }
    return 0;
}
