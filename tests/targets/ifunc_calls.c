/* ifunc_calls N: calls libifunc's IFUNC `ifunc_pick` N times, then exits. */
#include <stdlib.h>

int ifunc_pick(int x);

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    volatile int acc = 0;
    for (long i = 0; i < n; i++)
        acc = ifunc_pick(acc);
    return acc == n ? 0 : 1;
}
