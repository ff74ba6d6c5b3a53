/* harness/raw.c - raw connections: a socket from a chosen source address, and
 * reading or probing it without the HTTP client. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

int h_raw_connect(int port, const char *src_ip, int recv_timeout_ms)
{
    struct timeval tv = { recv_timeout_ms / 1000, (recv_timeout_ms % 1000) * 1000 };
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct sockaddr_in src = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (src_ip != NULL && (inet_pton(AF_INET, src_ip, &src.sin_addr) != 1 ||
                           bind(fd, (struct sockaddr *)&src, sizeof src) != 0)) {
        close(fd);
        return -1;
    }
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        close(fd);
        return -1;
    }
    return fd;
}

size_t h_raw_read_all(int fd, char *buf, size_t sz, int *eof)
{
    size_t len = 0;
    ssize_t n;

    *eof = 0;
    while (len + 1 < sz) {
        n = recv(fd, buf + len, sz - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            *eof = 1;
            break;
        }
        if (n < 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return len;
}

int h_raw_closed(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
