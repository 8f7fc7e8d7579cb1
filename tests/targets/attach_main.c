/* Program of sonde's attach point tests (tests/probes_attach_points.rs), linked to
 * libattach.so (rpath $ORIGIN: the two are copied together, also into a mount namespace).
 *
 * Usage: attach_main wait N   read one line from stdin (the go signal), then for i in 0..N
 *                             call attach_main_tick(i) and attach_lib_add(i, 2 * i); print
 *                             how many times the library's guarded probe ran, and exit.
 *
 * Probes of the program: attachmain:tick (i), and attachmain:"quoted" (i) whose name holds
 * quotes (bpftrace attaches it as `usdt:BIN:attachmain:"\"quoted\""`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

long attach_lib_add(long a, long b);
int attach_lib_guarded_hits(void);

__attribute__((noinline)) int attach_main_tick(int i)
{
	DTRACE_PROBE1(attachmain, tick, i);
	DTRACE_PROBE1(attachmain, "quoted", i);
	__asm__ volatile("" ::: "memory");
	return i;
}

int main(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "wait") != 0) {
		fprintf(stderr, "usage: attach_main wait N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		attach_main_tick(i);
		sum += attach_lib_add(i, 2 * i);
	}
	printf("sum %ld guarded %d\n", sum, attach_lib_guarded_hits());
	return 0;
}
