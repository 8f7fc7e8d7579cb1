/* Shared library of the uprobe test target (see uprobe_target.c): functions with known
 * names and arguments, probed by path (`uprobe:/path/libsondetest.so:lib_work`). */

/* Sums 0..n-1; not inlined so that the uprobe on it fires once per call. */
__attribute__((noinline)) long lib_work(long n)
{
    long acc = 0;
    for (long i = 0; i < n; i++) {
        __asm__ volatile("" ::: "memory");
        acc += i;
    }
    return acc;
}

/* Calls back into the program: gives ustack a frame from the library between two
 * frames from the program. */
__attribute__((noinline)) int lib_call(int (*cb)(int), int x)
{
    int r = cb(x);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}
