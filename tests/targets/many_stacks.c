/* Target of the stack-drop test: at once, reaches `sonde_leaf` through
 * 2^13 different call paths (each bit of i picks `sonde_a` or `sonde_b` at one depth), so a
 * stack map of 4096 buckets cannot hold every distinct stack. */
__attribute__((noinline)) int sonde_leaf(int x) { return x + 1; }
int sonde_a(int i, int depth);
int sonde_b(int i, int depth);

__attribute__((noinline)) static int next(int i, int depth) {
    if (depth == 0) return sonde_leaf(i);
    return (i >> depth) & 1 ? sonde_a(i, depth - 1) : sonde_b(i, depth - 1);
}
__attribute__((noinline)) int sonde_a(int i, int depth) { return next(i, depth) + 1; }
__attribute__((noinline)) int sonde_b(int i, int depth) { return next(i, depth) + 2; }

int main(void) {
    volatile int sum = 0;
    for (int i = 0; i < (1 << 13); i++) sum += next(i << 1, 13);
    return sum == 0;
}
