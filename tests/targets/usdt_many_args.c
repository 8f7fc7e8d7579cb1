/* Target of sonde's USDT test of `arg10`/`arg11`: one probe with the twelve arguments
 * <sys/sdt.h> allows, sondetest:twelve(0, 1, ..., 11 + 100 * i), fired twice. Build it with
 * `gcc -O0`; it needs <sys/sdt.h> from systemtap-sdt-dev. */
#include <sys/sdt.h>

static volatile long base;

int main(void)
{
	for (long i = 0; i < 2; i++) {
		long b = base + 100 * i;
		DTRACE_PROBE12(sondetest, twelve, b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6,
			       b + 7, b + 8, b + 9, b + 10, b + 11);
	}
	return 0;
}
