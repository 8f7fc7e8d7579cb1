/* Names itself after its first argument (prctl PR_SET_NAME: the task's comm), then waits
 * for a line on stdin and exits: a process of a known comm for `comm(pid)`. */
#include <stdio.h>
#include <sys/prctl.h>

int main(int argc, char **argv)
{
	char line[16];

	if (argc < 2)
		return 2;
	if (prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0)
		return 3;
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return 0;
}
