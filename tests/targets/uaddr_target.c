/* Target of sonde's uaddr() and ustack(build_id) tests: global variables of each integer
 * size, a string and a pointer to one, read through uaddr() from a probe on tick().
 * Built as a PIE (gcc's default) and with -no-pie; run directly under -c.
 *
 * Usage: uaddr_target [N]   call tick(1) .. tick(N) (default 3), then exit
 */
#include <stdlib.h>

unsigned char g_u8 = 0xab;
unsigned short g_u16 = 0xbeef;
int g_i32 = -5;
long g_i64 = 1234567890123L;
char g_name[16] = "sonde-global";
const char *g_ptr = "hello pointer";
int counter;

__attribute__((noinline)) int tick(int n)
{
    counter += n;
    __asm__ volatile("" ::: "memory");
    return counter;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    int acc = g_ptr[0]; /* the string's page is resident when the probe reads it */
    for (int i = 1; i <= n; i++)
        acc += tick(i);
    return acc == -1;
}
