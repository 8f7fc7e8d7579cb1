/* Workload of the `delta` tests (tests/run_delta.rs). Each mode reads one line from stdin
 * (the go signal) first, then makes failing system calls at known times, from one thread:
 *
 *   delta_target interval N MS   getppid() N times, sleeping MS ms between two calls
 *   delta_target keys N MS       N ticks MS ms apart; each tick close(-100), every fourth
 *                                tick also close(-101): two keys, 1 and 4 ticks apart
 *   delta_target lru N           close(-1000 - k) twice in a row for k in 0..N, then
 *                                dup(-1000 - k) for k in 0..N, twice over
 *   delta_target tcp N           N TCP connections on 127.0.0.1: connect, accept, a byte
 *                                each way, close both ends
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void wait_go(void)
{
	char line[64];
	if (!fgets(line, sizeof line, stdin))
		exit(3);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int tcp(long n)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 16) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) != 0)
		return 5;
	for (long i = 0; i < n; i++) {
		char b = 'x';
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
			return 6;
		int s = accept(l, NULL, NULL);
		if (s < 0 || write(c, &b, 1) != 1 || read(s, &b, 1) != 1 || write(s, &b, 1) != 1 ||
		    read(c, &b, 1) != 1)
			return 7;
		sleep_ms(2);
		close(c);
		sleep_ms(2);
		close(s);
	}
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: delta_target interval|keys|lru|tcp N [MS]\n");
		return 2;
	}
	long n = atol(argv[2]);
	long ms = argc > 3 ? atol(argv[3]) : 0;
	wait_go();
	if (strcmp(argv[1], "interval") == 0) {
		for (long i = 0; i < n; i++) {
			if (i > 0)
				sleep_ms(ms);
			syscall(SYS_getppid);
		}
	} else if (strcmp(argv[1], "keys") == 0) {
		for (long i = 0; i < n; i++) {
			if (i > 0)
				sleep_ms(ms);
			syscall(SYS_close, -100);
			if (i % 4 == 0)
				syscall(SYS_close, -101);
		}
	} else if (strcmp(argv[1], "lru") == 0) {
		for (long k = 0; k < n; k++) {
			syscall(SYS_close, -1000 - k);
			syscall(SYS_close, -1000 - k);
		}
		for (int round = 0; round < 2; round++)
			for (long k = 0; k < n; k++)
				syscall(SYS_dup, -1000 - k);
	} else if (strcmp(argv[1], "tcp") == 0) {
		return tcp(n);
	} else {
		return 2;
	}
	return 0;
}
