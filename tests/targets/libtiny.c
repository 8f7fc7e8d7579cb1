/* The library the ltrace tool tests load with dlopen() (tests/targets/ltrace_dlopen.c). */
int tiny_add(int a, int b) { return a + b; }
const char *tiny_name(const char *s, unsigned long n) { return s + n; }
