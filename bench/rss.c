/* rss OUT CMD [ARGS...]: runs CMD, forwarding SIGINT and SIGTERM to it, and writes its peak
 * RSS in KiB (ru_maxrss of its wait4) to the file OUT; exits with CMD's status.
 *
 * Why: Linux folds the pre-exec address space's high-water mark into the child's ru_maxrss,
 * so a tracer started straight from the Python harness would be charged the harness's own
 * pages. This small program is what forks here, so the figure is the tracer's. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void forward(int sig) {
    if (child > 0)
        kill(child, sig);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rss OUT CMD [ARGS...]\n");
        return 2;
    }
    struct sigaction sa = {0};
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(argv[2], argv + 2);
        perror("exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(child, &status, 0, &ru) < 0)
        ;
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fprintf(f, "%ld\n", ru.ru_maxrss);
    fclose(f);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
