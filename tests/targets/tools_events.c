/* Workload of the event tools' tests (exitsnoop, sigsnoop, killsnoop, statsnoop, syncsnoop):
 * waits for a line on stdin, then makes a known set of events, chosen by argv[1]:
 *   exit: 3 children exit (code 0, code 3, killed by SIGTERM), and 2 threads of a child
 *         exit before it does (code 0);
 *   kill: kill(getpid(), SIGUSR1) (ignored), kill(child, SIGTERM), tgkill(getpid(),
 *         gettid(), SIGUSR2) (ignored), kill(<no such pid>, SIGHUP) failing with ESRCH;
 *   stat: 5 stat() and 1 lstat() of "/", 3 failing stat() of a missing file, 1 statfs("/");
 *   sync: 2 fsync(), 1 fdatasync(), 1 syncfs(), 1 sync_file_range(), 1 msync() on argv[2];
 *   bio:  40 writes of 16 KiB with O_DIRECT to argv[2], each followed by fdatasync(). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *thread_main(void *arg) { return arg; }

static pid_t child(int code, int threads) {
    pid_t p = fork();
    if (p == 0) {
        for (int i = 0; i < threads; i++) {
            pthread_t t;
            pthread_create(&t, NULL, thread_main, NULL);
            pthread_join(t, NULL);
        }
        if (code < 0) pause();
        _exit(code);
    }
    return p;
}

static int exits(void) {
    int st;
    waitpid(child(0, 2), &st, 0);
    waitpid(child(3, 0), &st, 0);
    pid_t p = child(-1, 0);
    usleep(100000);
    kill(p, SIGTERM);
    waitpid(p, &st, 0);
    return 0;
}

static int kills(void) {
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    pid_t p = child(-1, 0);
    usleep(100000);
    kill(getpid(), SIGUSR1);
    kill(p, SIGTERM);
    syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2);
    kill(4194303, SIGHUP); /* above pid_max's largest value: ESRCH */
    int st;
    waitpid(p, &st, 0);
    return 0;
}

static int stats(void) {
    struct stat s;
    struct statfs f;
    for (int i = 0; i < 5; i++) stat("/", &s);
    lstat("/", &s);
    for (int i = 0; i < 3; i++) stat("/nonexistent/sonde-statsnoop", &s);
    statfs("/", &f);
    return 0;
}

static int syncs(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, "sonde\n", 6) != 6) return 1;
    fsync(fd);
    fsync(fd);
    fdatasync(fd);
    syncfs(fd);
    sync_file_range(fd, 0, 6, SYNC_FILE_RANGE_WRITE);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 1;
    msync(m, 4096, MS_SYNC);
    munmap(m, 4096);
    close(fd);
    return 0;
}

static int bios(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
    void *buf;
    if (fd < 0 || posix_memalign(&buf, 4096, 16384)) return 1;
    memset(buf, 's', 16384);
    for (int i = 0; i < 40; i++) {
        if (pwrite(fd, buf, 16384, (off_t)i * 16384) != 16384) return 1;
        fdatasync(fd);
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    char line[16];
    if (argc < 2 || !fgets(line, sizeof line, stdin)) return 1;
    if (!strcmp(argv[1], "exit")) return exits();
    if (!strcmp(argv[1], "kill")) return kills();
    if (!strcmp(argv[1], "stat")) return stats();
    if (!strcmp(argv[1], "sync") && argc > 2) return syncs(argv[2]);
    if (!strcmp(argv[1], "bio") && argc > 2) return bios(argv[2]);
    return 1;
}
