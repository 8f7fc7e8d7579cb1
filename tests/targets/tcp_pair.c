/* Workload of the TCP tools' tests (tcpstates, tcpconnect, tcpaccept): waits for a line on
 * stdin, then listens on the loopback address of family argv[1] (4: 127.0.0.1, 6: ::1) at
 * port argv[2], and makes argv[3] connections to it, one at a time: connect, accept, 100
 * bytes from the client to the server, then the client closes first and the server after
 * reading the end of the stream; the listener closes last. Exits 0 when all went well.
 * argv[4], if given, is the number of bytes each client sends (in 100-byte writes) instead,
 * from a child process when that is more than 100.
 * With argv[3] `syn`, the listener's accept queue (backlog 0) is filled by one connection
 * and a second one's SYN is dropped: its client retransmits the SYN once, after 1 s, before
 * the load exits at 1.5 s (tcpretrans' test). */
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static socklen_t address(int family, int port, struct sockaddr_storage *ss) {
    memset(ss, 0, sizeof *ss);
    if (family == 6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        a->sin6_addr = in6addr_loopback;
        return sizeof *a;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sizeof *a;
}

int main(int argc, char **argv) {
    char line[16], buf[100];
    if (argc < 4 || !fgets(line, sizeof line, stdin)) return 1;
    int family = atoi(argv[1]), port = atoi(argv[2]), n = atoi(argv[3]);
    size_t bytes = argc > 4 ? strtoul(argv[4], NULL, 10) : sizeof buf;
    int domain = family == 6 ? AF_INET6 : AF_INET, one = 1;
    struct sockaddr_storage ss;
    socklen_t len = address(family, port, &ss);
    int l = socket(domain, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int syn = !strcmp(argv[3], "syn");
    if (l < 0 || bind(l, (struct sockaddr *)&ss, len) || listen(l, syn ? 0 : 8)) return 2;
    if (syn) {
        int first = socket(domain, SOCK_STREAM, 0);
        if (first < 0 || connect(first, (struct sockaddr *)&ss, len)) return 3;
        usleep(100000);
        int second = socket(domain, SOCK_STREAM, 0);
        fcntl(second, F_SETFL, O_NONBLOCK);
        connect(second, (struct sockaddr *)&ss, len);
        usleep(1500000);
        return 0;
    }
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < n; i++) {
        int c = socket(domain, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&ss, len)) return 3;
        int a = accept(l, NULL, NULL);
        if (a < 0) return 4;
        /* More than the socket buffers hold: a child writes while this process reads. */
        pid_t writer = bytes > sizeof buf ? fork() : -1;
        if (writer <= 0) {
            for (size_t sent = 0; sent < bytes; sent += sizeof buf)
                if (write(c, buf, sizeof buf) != sizeof buf) return 4;
            if (writer == 0) _exit(0);
        }
        close(c);
        size_t got = 0;
        ssize_t r;
        while ((r = read(a, buf, sizeof buf)) > 0) got += r;
        int st = 0;
        if (writer > 0) waitpid(writer, &st, 0);
        if (got != bytes || st != 0) return 5;
        close(a);
    }
    close(l);
    usleep(100000);
    return 0;
}
