// Target of tests/probes_iter.rs: names itself `sonde-iter-tgt`, holds the file argv[1] open
// at descriptor 42 and mapped (8 KiB, shared, read-only), runs a second thread named
// `iter-worker`, and then waits until its standard input closes.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *worker(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "iter-worker");
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: iter_target FILE\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 8192) != 0 || dup2(fd, 42) != 42)
		return 1;
	if (fd != 42)
		close(fd);
	if (mmap(NULL, 8192, PROT_READ, MAP_SHARED, 42, 0) == MAP_FAILED)
		return 1;
	prctl(PR_SET_NAME, "sonde-iter-tgt");
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
