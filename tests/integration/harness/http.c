/* harness/http.c - the HTTP/1.1 client over a raw socket, and the reply parser. */
#include "../harness.h"
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#define H_RESP_MAX_BYTES (16u << 20)

/* A connected, blocking socket to 127.0.0.1:port with send and receive
 * timeouts, or -1 with the reason in err. */
static int connect_local(int port, char *err, size_t errsz)
{
    struct timeval tv = { H_RECV_TIMEOUT_S, 0 };
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        snprintf(err, errsz, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        snprintf(err, errsz, "connect to port %d: %s", port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends all of buf. A peer that closes early (EPIPE, ECONNRESET) is not an
 * error: it may have answered already, e.g. 413. 0 or -1. */
static int send_all(int fd, const char *buf, size_t len, char *err, size_t errsz)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
            return 0;
        if (n < 0) {
            snprintf(err, errsz, "send: %s", strerror(errno));
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until EOF into a malloc'd buffer (*out, NUL-terminated). A reset
 * after some data counts as EOF. 0 or -1. */
static int recv_all(int fd, char **out, size_t *outlen, char *err, size_t errsz)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap + 1);

    if (buf == NULL) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    for (;;) {
        ssize_t n;

        if (len == cap) {
            char *nb = cap < H_RESP_MAX_BYTES ? realloc(buf, cap * 2 + 1) : NULL;

            if (nb == NULL) {
                snprintf(err, errsz, "reply larger than %u bytes", H_RESP_MAX_BYTES);
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        n = recv(fd, buf + len, cap - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET && len > 0))
            break;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                snprintf(err, errsz, "no reply within %d s", H_RECV_TIMEOUT_S);
            else
                snprintf(err, errsz, "recv: %s", strerror(errno));
            free(buf);
            return -1;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* Decodes a chunked body of len bytes into a malloc'd NUL-terminated
 * buffer. 0 or -1 when malformed or truncated. */
static int dechunk(const char *p, size_t len, char **out, size_t *outlen)
{
    char *buf = malloc(len + 1);
    size_t pos = 0, n = 0;

    if (buf == NULL)
        return -1;
    for (;;) {
        const char *eol = NULL;
        unsigned long size;
        char *end;

        for (size_t i = pos; i + 1 < len; i++) {
            if (p[i] == '\r' && p[i + 1] == '\n') {
                eol = p + i;
                break;
            }
        }
        if (eol == NULL)
            goto bad;
        size = strtoul(p + pos, &end, 16);
        if (end == p + pos || (end != eol && *end != ';'))
            goto bad;
        pos = (size_t)(eol - p) + 2;
        if (size == 0)
            break; /* trailers, if any, are ignored */
        if (size > len - pos || len - pos - size < 2 || memcmp(p + pos + size, "\r\n", 2) != 0)
            goto bad;
        memcpy(buf + n, p + pos, size);
        n += size;
        pos += size + 2;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
bad:
    free(buf);
    return -1;
}

/* Splits the header block in place into r->hname/hvalue. */
static void split_headers(struct h_resp *r, char *lines)
{
    char *save = NULL;

    for (char *line = strtok_r(lines, "\r\n", &save); line != NULL;
         line = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(line, ':');
        char *v, *e;

        if (colon == NULL || r->nheaders == H_HEADERS_MAX)
            continue;
        *colon = '\0';
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
            e[-1] = '\0';
        r->hname[r->nheaders] = line;
        r->hvalue[r->nheaders] = v;
        r->nheaders++;
    }
}

/* 1 when the comma-separated header value list contains token (any case). */
static int has_token_ci(const char *list, const char *token)
{
    size_t n = strlen(token);

    for (const char *p = list; *p != '\0'; p++)
        if (strncasecmp(p, token, n) == 0 && (p == list || p[-1] == ' ' || p[-1] == ',') &&
            (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == ';'))
            return 1;
    return 0;
}

/* Parses a whole reply (raw, len bytes) into r. 0 or -1 with r->err set. */
static int parse_reply(const char *raw, size_t len, struct h_resp *r)
{
    const char *end = NULL, *rest;
    const char *te, *cl;
    size_t hlen, avail;
    char *eol;
    int status;

    for (size_t i = 0; i + 3 < len; i++) {
        if (memcmp(raw + i, "\r\n\r\n", 4) == 0) {
            end = raw + i;
            break;
        }
    }
    if (end == NULL) {
        snprintf(r->err, sizeof r->err, "reply without a header end (%zu bytes)", len);
        return -1;
    }
    hlen = (size_t)(end - raw);
    if ((r->head = malloc(hlen + 1)) == NULL)
        goto nomem;
    memcpy(r->head, raw, hlen);
    r->head[hlen] = '\0';
    if (sscanf(r->head, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100) {
        snprintf(r->err, sizeof r->err, "bad status line");
        return -1;
    }
    if ((eol = strstr(r->head, "\r\n")) != NULL)
        split_headers(r, eol + 2);
    rest = end + 4;
    avail = len - (size_t)(rest - raw);
    te = h_resp_header(r, "Transfer-Encoding");
    cl = h_resp_header(r, "Content-Length");
    if (te != NULL && has_token_ci(te, "chunked")) {
        if (dechunk(rest, avail, &r->body, &r->body_len) != 0) {
            snprintf(r->err, sizeof r->err, "malformed chunked body");
            return -1;
        }
    } else {
        size_t want = avail;

        if (cl != NULL) {
            want = (size_t)strtoull(cl, NULL, 10);
            if (want > avail) {
                snprintf(r->err, sizeof r->err, "body truncated: %zu of %zu bytes", avail, want);
                return -1;
            }
        }
        if ((r->body = malloc(want + 1)) == NULL)
            goto nomem;
        memcpy(r->body, rest, want);
        r->body[want] = '\0';
        r->body_len = want;
    }
    r->status = status;
    return 0;
nomem:
    snprintf(r->err, sizeof r->err, "out of memory");
    return -1;
}

/* Resets out so that body is "" and status 0, keeping err. */
static int fail_reply(struct h_resp *out)
{
    char err[sizeof out->err];

    memcpy(err, out->err, sizeof err);
    h_resp_free(out);
    memcpy(out->err, err, sizeof err);
    out->body = calloc(1, 1);
    return -1;
}

int h_http_raw(int port, const char *req, size_t len, struct h_resp *out)
{
    char *raw = NULL;
    size_t rawlen = 0;
    int fd, rc = -1;

    memset(out, 0, sizeof *out);
    if ((fd = connect_local(port, out->err, sizeof out->err)) < 0)
        return fail_reply(out);
    if (send_all(fd, req, len, out->err, sizeof out->err) == 0 &&
        recv_all(fd, &raw, &rawlen, out->err, sizeof out->err) == 0)
        rc = parse_reply(raw, rawlen, out);
    close(fd);
    free(raw);
    return rc == 0 ? 0 : fail_reply(out);
}

/* 1 when headers already carry an Authorization header. */
static int has_authorization(const char *const *headers)
{
    size_t n = strlen("Authorization:");

    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        if (strncasecmp(headers[i], "Authorization:", n) == 0)
            return 1;
    return 0;
}

int h_http(int port, const char *method, const char *path, const char *const *headers,
           const char *body, size_t body_len, struct h_resp *out)
{
    return h_http_key(port, has_authorization(headers) ? NULL : H_OPERATOR_KEY, method, path,
                      headers, body, body_len, out);
}

int h_http_key(int port, const char *key, const char *method, const char *path,
               const char *const *headers, const char *body, size_t body_len, struct h_resp *out)
{
    size_t hlen = 256 + strlen(method) + strlen(path) + (key != NULL ? strlen(key) : 0);
    int with_length = body != NULL || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0);
    char *req;
    size_t n;
    int rc;

    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        hlen += strlen(headers[i]) + 2;
    if ((req = malloc(hlen + body_len)) == NULL) {
        memset(out, 0, sizeof *out);
        snprintf(out->err, sizeof out->err, "out of memory");
        return fail_reply(out);
    }
    n = (size_t)snprintf(req, hlen,
                         "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Connection: close\r\n",
                         method, path, port);
    if (key != NULL)
        n += (size_t)snprintf(req + n, hlen - n, "Authorization: Bearer %s\r\n", key);
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        n += (size_t)snprintf(req + n, hlen - n, "%s\r\n", headers[i]);
    if (with_length)
        n += (size_t)snprintf(req + n, hlen - n, "Content-Length: %zu\r\n", body_len);
    n += (size_t)snprintf(req + n, hlen - n, "\r\n");
    if (body != NULL && body_len > 0)
        memcpy(req + n, body, body_len);
    rc = h_http_raw(port, req, n + (body != NULL ? body_len : 0), out);
    free(req);
    return rc;
}

const char *h_resp_header(const struct h_resp *r, const char *name)
{
    for (size_t i = 0; r != NULL && i < r->nheaders; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            return r->hvalue[i];
    return NULL;
}

int h_resp_is_json(const struct h_resp *r)
{
    const char *ct = h_resp_header(r, "Content-Type");
    size_t n = strlen("application/json");

    return ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

void h_resp_free(struct h_resp *r)
{
    if (r == NULL)
        return;
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}
