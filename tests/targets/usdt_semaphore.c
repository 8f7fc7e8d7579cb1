/* Target of sonde's USDT semaphore test: a probe guarded by its semaphore, as programs that
 * compute expensive probe arguments only while a tracer listens (`*_ENABLED()`).
 *
 * Usage: usdt_semaphore N   fire `sondetest:guarded(i)` for i in 0..N, but only when the
 * semaphore says a tracer is attached; prints how many times the guarded code ran.
 *        usdt_semaphore N wait   the same, after reading a line from stdin (a tracer can
 *                                attach to the running process first).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

unsigned short sondetest_guarded_semaphore __attribute__((section(".probes"))) = 0;

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int hits = 0;
	if (argc > 2) {
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	for (int i = 0; i < n; i++) {
		if (sondetest_guarded_semaphore) {
			STAP_PROBE1(sondetest, guarded, i);
			hits++;
		}
	}
	fprintf(stderr, "hits %d\n", hits);
	return 0;
}
