/* Calls getppid(2) in a loop until killed: a busy sys_enter_getppid tracepoint. */
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	for (;;)
		syscall(SYS_getppid);
	return 0;
}
