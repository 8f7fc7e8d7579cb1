/* Target of sonde's DWARF tests (tests/probes_dwarf.rs, and the unit tests of
 * runtime/system/src/kernel_info/dwarf): functions whose parameters `args` reads by name, built
 * with `-g`. Run with no arguments, it calls each function once, at once (sonde's -c holds
 * the child until the probes are attached):
 *
 *   func(42, "hello dwarf", &settings, 99, GREEN, 'x')
 *       settings = { .field = 7, .label = "lbl", .flag = 5, .mode = 17,
 *                    .as_long = 0x1234, .chain = &one, .pair = { -3, 4 } },
 *       one = { .depth = 1, .next = &two }, two = { .depth = 2, .next = 0 }
 *   mixed(2.5, 11, (struct small){ 5, 6 }, big, 77)
 *   make_big(13)
 *   many(1, 2, 3, 4, 5, 6, 7)
 *   noargs()
 */
#include <string.h>

enum color { RED = 1, GREEN = 2 };

struct inner {
    int depth;
    struct inner *next;
};

struct settings {
    int field;
    char label[8];
    unsigned flag : 3;
    unsigned mode : 5;
    union {
        long as_long;
        char as_bytes[8];
    };
    struct inner *chain;
    short pair[2];
};

typedef unsigned long counter_t;

/* 8 bytes: passed in one integer register. */
struct small {
    int a;
    int b;
};

/* 24 bytes: passed on the stack (and returned through a hidden pointer). */
struct big {
    long x[3];
};

volatile long sink;

__attribute__((noinline, noipa)) int func(int n, const char *name, struct settings *s,
                                          counter_t c, enum color col, unsigned char ch)
{
    sink = n + (long)strlen(name) + s->field + (long)c + col + ch;
    return (int)sink;
}

__attribute__((noinline, noipa)) long mixed(double d, int after, struct small sm,
                                            struct big bg, long last)
{
    sink = (long)d + after + sm.a + sm.b + bg.x[0] + last;
    return sink;
}

__attribute__((noinline, noipa)) struct big make_big(int seed)
{
    struct big b = { { seed, seed + 1, seed + 2 } };
    return b;
}

__attribute__((noinline, noipa)) int many(int a, int b, int c, int d, int e, int f, int g)
{
    sink = a + b + c + d + e + f + g;
    return (int)sink;
}

__attribute__((noinline, noipa)) int noargs(void)
{
    return (int)sink;
}

int main(void)
{
    struct inner two = { 2, 0 };
    struct inner one = { 1, &two };
    struct settings s;
    memset(&s, 0, sizeof(s));
    s.field = 7;
    strcpy(s.label, "lbl");
    s.flag = 5;
    s.mode = 17;
    s.as_long = 0x1234;
    s.chain = &one;
    s.pair[0] = -3;
    s.pair[1] = 4;
    /* On the stack: a string literal's page may not be faulted in yet when the probe
     * reads it. */
    char name[16];
    strcpy(name, "hello dwarf");
    func(42, name, &s, 99, GREEN, 'x');
    struct small sm = { 5, 6 };
    struct big bg = { { 8, 9, 10 } };
    mixed(2.5, 11, sm, bg, 77);
    sink += make_big(13).x[1];
    many(1, 2, 3, 4, 5, 6, 7);
    noargs();
    return 0;
}
