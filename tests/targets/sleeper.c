// Sleeps as its arguments say, for latency tests: each COUNT:USECS argument sleeps USECS
// microseconds COUNT times (nanosleep, which glibc makes a clock_nanosleep syscall), in
// order.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		char *rest;
		long count = strtol(argv[i], &rest, 10);
		if (*rest != ':') {
			fprintf(stderr, "usage: sleeper COUNT:USECS...\n");
			return 2;
		}
		long usecs = strtol(rest + 1, NULL, 10);
		struct timespec ts = { usecs / 1000000, (usecs % 1000000) * 1000 };
		for (long n = 0; n < count; n++)
			nanosleep(&ts, NULL);
	}
	return 0;
}
