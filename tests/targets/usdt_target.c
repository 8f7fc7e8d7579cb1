/* Target of sonde's USDT end-to-end tests. Build it with `gcc -O0` (a PIE); it needs
 * <sys/sdt.h> from systemtap-sdt-dev.
 *
 * Usage:
 *   usdt_target now [N]    fire the probes at once (for -c, where the tracer holds the child)
 *   usdt_target wait [N]   read one line from stdin (the go signal), then fire them
 *
 * Probes, in firing order for i in 0..N (default 3):
 *   sondetest:work   (i, "hello")           an int in a register or on the stack, a string
 *   sondetest:mixed  (-i - 1, total, 7)     a negative int, a long in memory, a constant
 * and once at the end:
 *   sondetest:done   (N)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

static long total;

static void run(int n)
{
	const char *msg = "hello";
	for (int i = 0; i < n; i++) {
		DTRACE_PROBE2(sondetest, work, i, msg);
		total += 100 * (i + 1);
		int neg = -i - 1;
		DTRACE_PROBE3(sondetest, mixed, neg, total, 7);
	}
	DTRACE_PROBE1(sondetest, done, n);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: usdt_target now|wait [N]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 3;
	if (strcmp(argv[1], "wait") == 0) {
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	run(n);
	return 0;
}
