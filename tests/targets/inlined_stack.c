/* Target of the `show_debug_info` tests (tests/stacks_debuginfo.rs): a USDT probe in a
 * function inlined into a function inlined into `work`, which is not inlined. Build it with
 * `-O2 -g -fno-omit-frame-pointer` (frame pointers let the kernel walk the stack; needs <sys/sdt.h> from systemtap-sdt-dev).
 *
 * Usage: inlined_stack [N]   calls work(i) for i in 0..N (default 3); each call fires
 *                            sondeinl:hit(i * 2 + 2) in leaf_step.
 *
 * The tests find the lines they expect by the LINE: markers below.
 */
#include <stdlib.h>
#include <sys/sdt.h>

static volatile long sink;

static inline __attribute__((always_inline)) void leaf_step(long v)
{
	sink += v;
	DTRACE_PROBE1(sondeinl, hit, v); /* LINE:probe */
	sink ^= v;
}

static inline __attribute__((always_inline)) void middle_step(long v)
{
	sink += 3;
	leaf_step(v * 2); /* LINE:leaf_call */
	sink -= 1;
}

/* Called by `work` (not as a tail call), so that `work` is no leaf function and keeps
 * its frame pointer: the kernel walks the stack through it to `main`. */
__attribute__((noinline)) long settle(long v)
{
	__asm__ volatile("" ::: "memory");
	return v + 1;
}

__attribute__((noinline)) void work(long v)
{
	sink += v;
	middle_step(v + 1); /* LINE:middle_call */
	sink += settle(v);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	for (int i = 0; i < n; i++)
		work(i); /* LINE:work_call */
	return (int)(sink & 0);
}
