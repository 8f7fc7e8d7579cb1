// allocpattern [--wait] [--threads N]: a deterministic, fragmenting sequence of malloc-family
// calls made by N threads (default 3, the main thread included), for allocrecord's and
// allocreplay's tests.
//
// With --wait it writes `ready PID\n` on stdout and waits for SIGUSR1 before it starts its
// threads (a tracer attaches meanwhile). Every thread runs the same phases on its own blocks,
// one thread at a time: phase P of thread 0, then of thread 1, ..., then phase P+1 (turns
// between barriers). So the counts and the live bytes at every moment are the same in every
// run, peak_live included.
//
// The phases, per thread (sizes from a fixed pseudo-random sequence seeded by the thread's
// index):
//   0. 20000 blocks of 16..2063 bytes (every 8th by calloc, every 1000th 64 KiB..1 MiB);
//   1. every other block freed (the odd ones): holes of every size;
//   2. 2000 blocks of 4 KiB..20 KiB, too big for most holes; every 4th grown by realloc to
//      twice its size, every 4th (offset 2) shrunk to half; 50 realloc(NULL, n);
//   3. 100 each of posix_memalign (align 64), aligned_alloc (align 256, size a multiple of
//      it), memalign (align 128) and valloc;
//   4. everything freed but the first 10 blocks of phase 0 (indices 0, 2, ..., 18): their
//      bytes are end_live.
// Around the phases the main thread makes two marker calls, which count as its own:
// malloc(3) then free of it before phase 0 (the threads exist and wait), and
// malloc(5) then free of it after phase 4 (no phase asks for
// fewer than 16 bytes) (before any thread exits). Calls outside the
// markers are libc's own (thread creation, exit): a recording's calls between the markers
// are exactly the program's.
//
// At the end it writes one line (stdio is not used before: it allocates its buffers):
//   allocpattern calls malloc=N calloc=N realloc=N free=N posix_memalign=N aligned_alloc=N
//   memalign=N valloc=N peak_live=BYTES end_live=BYTES vmhwm_kb=N
// counts summed over threads; peak_live and end_live the most and the last bytes live
// (requested sizes); vmhwm_kb the process's VmHWM.
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 20000
#define BIG 2000
#define ALIGNED 100
#define KEPT 10
#define PHASES 5
#define MAX_THREADS 64
#define START_MARK 3
#define END_MARK 5

enum { MALLOC, CALLOC, REALLOC, FREE, POSIX_MEMALIGN, ALIGNED_ALLOC, MEMALIGN, VALLOC, NCALLS };
static const char *NAMES[NCALLS] = {"malloc", "calloc", "realloc", "free",
                                    "posix_memalign", "aligned_alloc", "memalign", "valloc"};

struct block {
	void *p;
	size_t size;
};

struct thread {
	int index;
	unsigned long long calls[NCALLS];
	unsigned long long rng;
	struct block small[BLOCKS];
	struct block big[BIG + 50];
	struct block aligned[4 * ALIGNED];
};

static struct thread threads[MAX_THREADS];
static int nthreads = 3;
static pthread_barrier_t turns;
static atomic_llong live, peak;
// The markers go through it: a malloc whose block is only freed is no call for the compiler.
static void *volatile mark;
// realloc(NULL, n) through it: the compiler would make it malloc(n).
static void *volatile no_block;

static void add_live(long long delta)
{
	long long now = atomic_fetch_add(&live, delta) + delta;
	long long p = atomic_load(&peak);
	while (now > p && !atomic_compare_exchange_weak(&peak, &p, now)) {
	}
}

static unsigned long long next(struct thread *t)
{
	t->rng = t->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return t->rng >> 33;
}

static void keep(struct thread *t, struct block *b, void *p, size_t size, int call)
{
	t->calls[call]++;
	b->p = p;
	b->size = p ? size : 0;
	add_live((long long)b->size);
}

static void release(struct thread *t, struct block *b)
{
	t->calls[FREE]++;
	free(b->p);
	add_live(-(long long)b->size);
	b->p = NULL;
	b->size = 0;
}

static void phase(struct thread *t, int n)
{
	switch (n) {
	case 0:
		for (int i = 0; i < BLOCKS; i++) {
			size_t size = 16 + next(t) % 2048;
			if (i % 1000 == 999)
				size = 65536 + next(t) % (1 << 20);
			if (i % 8 == 3)
				keep(t, &t->small[i], calloc(size / 16, 16), size / 16 * 16, CALLOC);
			else
				keep(t, &t->small[i], malloc(size), size, MALLOC);
		}
		break;
	case 1:
		for (int i = 1; i < BLOCKS; i += 2)
			release(t, &t->small[i]);
		break;
	case 2:
		for (int i = 0; i < BIG; i++) {
			size_t size = 4096 + next(t) % 16384;
			keep(t, &t->big[i], malloc(size), size, MALLOC);
			size_t to = i % 4 == 0 ? size * 2 : (i % 4 == 2 ? size / 2 : 0);
			if (to) {
				t->calls[REALLOC]++;
				void *p = realloc(t->big[i].p, to);
				add_live((long long)to - (long long)t->big[i].size);
				t->big[i].p = p;
				t->big[i].size = to;
			}
		}
		for (int i = BIG; i < BIG + 50; i++) {
			size_t size = 100 + next(t) % 1000;
			keep(t, &t->big[i], realloc(no_block, size), size, REALLOC);
		}
		break;
	case 3:
		for (int i = 0; i < ALIGNED; i++) {
			struct block *b = &t->aligned[4 * i];
			size_t size = 100 + next(t) % 3000;
			void *p = NULL;
			keep(t, b, posix_memalign(&p, 64, size) == 0 ? p : NULL, size, POSIX_MEMALIGN);
			size = 256 * (1 + next(t) % 16);
			keep(t, b + 1, aligned_alloc(256, size), size, ALIGNED_ALLOC);
			size = 100 + next(t) % 3000;
			keep(t, b + 2, memalign(128, size), size, MEMALIGN);
			size = 100 + next(t) % 8000;
			keep(t, b + 3, valloc(size), size, VALLOC);
		}
		break;
	case 4:
		for (int i = 2 * KEPT; i < BLOCKS; i += 2)
			release(t, &t->small[i]);
		for (int i = 0; i < BIG + 50; i++)
			release(t, &t->big[i]);
		for (int i = 0; i < 4 * ALIGNED; i++)
			release(t, &t->aligned[i]);
		break;
	}
}

// Phase by phase, thread by thread: thread `me` works in its turn, the others wait.
static void run_phases(struct thread *t)
{
	for (int p = 0; p < PHASES; p++) {
		for (int turn = 0; turn < nthreads; turn++) {
			if (turn == t->index)
				phase(t, p);
			pthread_barrier_wait(&turns);
		}
	}
}

static void *worker(void *arg)
{
	struct thread *t = arg;
	pthread_barrier_wait(&turns); // the start marker is made
	run_phases(t);
	pthread_barrier_wait(&turns); // the end marker is made
	return NULL;
}

static void say(const char *s)
{
	size_t len = strlen(s);
	while (len > 0) {
		ssize_t n = write(1, s, len);
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static long vmhwm_kb(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *at = strstr(buf, "VmHWM:");
	return at ? strtol(at + 6, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	int wait = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0)
			wait = 1;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else {
			say("usage: allocpattern [--wait] [--threads N]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		say("allocpattern: --threads must be 1 to 64\n");
		return 2;
	}
	if (wait) {
		sigset_t set;
		int sig;
		char line[64];
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		snprintf(line, sizeof line, "ready %d\n", (int)getpid());
		say(line);
		sigwait(&set, &sig);
	}
	pthread_barrier_init(&turns, NULL, (unsigned)nthreads);
	pthread_t ids[MAX_THREADS];
	for (int i = 0; i < nthreads; i++) {
		threads[i].index = i;
		threads[i].rng = 0x9e3779b97f4a7c15ULL * (unsigned long long)(i + 1);
	}
	for (int i = 1; i < nthreads; i++)
		pthread_create(&ids[i], NULL, worker, &threads[i]);
	mark = malloc(START_MARK);
	free(mark);
	threads[0].calls[MALLOC]++;
	threads[0].calls[FREE]++;
	pthread_barrier_wait(&turns);
	run_phases(&threads[0]);
	mark = malloc(END_MARK);
	free(mark);
	threads[0].calls[MALLOC]++;
	threads[0].calls[FREE]++;
	pthread_barrier_wait(&turns);
	for (int i = 1; i < nthreads; i++)
		pthread_join(ids[i], NULL);

	unsigned long long total[NCALLS] = {0};
	for (int i = 0; i < nthreads; i++)
		for (int c = 0; c < NCALLS; c++)
			total[c] += threads[i].calls[c];
	char line[512];
	int len = snprintf(line, sizeof line, "allocpattern calls");
	for (int c = 0; c < NCALLS; c++)
		len += snprintf(line + len, sizeof line - (size_t)len, " %s=%llu", NAMES[c], total[c]);
	snprintf(line + len, sizeof line - (size_t)len, " peak_live=%lld end_live=%lld vmhwm_kb=%ld\n",
		 (long long)atomic_load(&peak), (long long)atomic_load(&live), vmhwm_kb());
	say(line);
	return 0;
}
