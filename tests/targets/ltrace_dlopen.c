/* Workload of the ltrace tool tests: loads a library with dlopen() when told, then calls
 * its functions: tiny_add(i, -7) for i = 0..4, then tiny_name("hello world", 6).
 *
 * Usage: ltrace_dlopen wait|now LIBRARY
 *   wait: read one line from stdin (the go signal) first; now: start at once.
 * Exits 0, or 3 when the library cannot be loaded.
 */
#include <dlfcn.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    if (argv[1][0] == 'w') {
        char c;
        while (read(0, &c, 1) == 1 && c != '\n')
            ;
    }
    void *h = dlopen(argv[2], RTLD_NOW);
    if (!h)
        return 3;
    int (*add)(int, int) = (int (*)(int, int))dlsym(h, "tiny_add");
    const char *(*name)(const char *, unsigned long) =
        (const char *(*)(const char *, unsigned long))dlsym(h, "tiny_name");
    int s = 0;
    for (int i = 0; i < 5; i++)
        s += add(i, -7);
    name("hello world", 6);
    return s == -25 ? 0 : 1;
}
