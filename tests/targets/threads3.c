/* Workload of the runqlat tests: waits for a line on stdin, then runs three threads (the
 * main one and two more), each sleeping 1 ms 200 times: 200 wakeups each, all of them
 * waiting in the run queue before they run again. Built with -pthread. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *sleeper(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) usleep(1000);
    return NULL;
}

int main(void) {
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, sleeper, NULL);
    sleeper(NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
