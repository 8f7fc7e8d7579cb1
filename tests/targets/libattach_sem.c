/* The semaphore-guarded probe of libattach.c (a translation unit of its own: <sys/sdt.h>
 * gives every probe of a unit compiled with _SDT_HAS_SEMAPHORES a semaphore).
 *   attachlib:guarded (a)   fires only while a tracer holds the semaphore up; the number of
 *                           times it did is attach_lib_guarded_hits().
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short attachlib_guarded_semaphore __attribute__((section(".probes"))) = 0;
static int hits;

__attribute__((noinline)) void attach_lib_guarded(long a)
{
	if (attachlib_guarded_semaphore) {
		STAP_PROBE1(attachlib, guarded, a);
		hits++;
	}
}

int attach_lib_guarded_hits(void)
{
	return hits;
}
