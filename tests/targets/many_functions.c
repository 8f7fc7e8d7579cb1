/* Target of the detach tests: 24 functions sonde_many_f0..f23, each called once after the
 * go line arrives on stdin. */
#include <stdio.h>

#define F(n) __attribute__((noinline)) int sonde_many_f##n(int x) { return x * n + 1; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
F(12) F(13) F(14) F(15) F(16) F(17) F(18) F(19) F(20) F(21) F(22) F(23)

#define C(n) s = sonde_many_f##n(s);

int main(void) {
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;
    volatile int s = 0;
    C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11)
    C(12) C(13) C(14) C(15) C(16) C(17) C(18) C(19) C(20) C(21) C(22) C(23)
    return s == 12345;
}
