/* Shared library of sonde's attach point tests (tests/probes_attach_points.rs): a function
 * and USDT probes in a library, probed through the process that loads it (`-p PID`,
 * `uprobe:*:attach_lib_add`, `usdt:*:attachlib:add`). Build with -shared -fPIC -O2, with
 * libattach_sem.c; needs <sys/sdt.h> from systemtap-sdt-dev.
 *
 * Probes, each time attach_lib_add(a, b) runs:
 *   attachlib:add     (a, b)                          two longs in registers
 *   attachlib:consts  ((int8)-16, (uint16)61936, (int64)-579005069656919568)
 *                                                     constants in the note (`-1@$-16`)
 * and attachlib:guarded(a), behind its semaphore (libattach_sem.c).
 */
#include <sys/sdt.h>

void attach_lib_guarded(long a);

__attribute__((noinline)) long attach_lib_add(long a, long b)
{
	DTRACE_PROBE2(attachlib, add, a, b);
	DTRACE_PROBE3(attachlib, consts, (signed char)-16, (unsigned short)61936,
		      -579005069656919568LL);
	attach_lib_guarded(a);
	__asm__ volatile("" ::: "memory");
	return a + b;
}
