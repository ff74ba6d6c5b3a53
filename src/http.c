/* http.c - the libmicrohttpd glue: daemon start/stop, body accumulation
 * with a size cap, the route table, request ids, the per-request log line
 * and metrics, and the JSON reply helpers. The only file that includes
 * <microhttpd.h>; handlers see struct http_req and struct http_resp. */
#include "http.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "handlers.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "validate.h"

#define HTTP_CONN_TIMEOUT_S   30
#define HTTP_CONN_LIMIT       4096
#define HTTP_BODY_INIT_BYTES  1024
#define HTTP_PATH_MAX_BYTES   1024

struct route {
    const char *method;
    const char *pattern;          /* "/order/{order_no}/ship": {x} is one segment */
    http_handler fn;
};

static const struct route routes[] = {
    { "POST", "/pay/callback", handle_pay_callback },
    { "GET", "/healthz", handle_healthz },
    { "GET", "/readyz", handle_readyz },
    { "GET", "/metrics", handle_metrics },
    { "GET", "/token/apply", handle_token_apply },
    { "POST", "/token/apply", handle_token_apply },
    { "POST", "/order/create", handle_order_create },
    { "GET", "/order/{order_no}", handle_order_get },
    { "POST", "/order/{order_no}/ship", handle_order_ship },
    { "POST", "/order/{order_no}/finish", handle_order_finish },
    { "POST", "/order/{order_no}/cancel", handle_order_cancel },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static struct http_route_info route_info[NROUTES];

struct http_state {
    struct MHD_Daemon *d;
    atomic_int inflight;
    atomic_bool stopping;         /* quiesced: replies close their connection */
    uint64_t req_id_key;          /* random at start, so ids differ between runs */
    atomic_uint_fast64_t req_id_seq;
};

/* Per-request state, born on the first access callback and freed in the
 * completed callback. */
struct req_state {
    char *body;
    size_t len, cap;
    bool started;                 /* the access callback has seen the headers */
    bool too_large;
    bool replied;
    struct timespec start;
    char path[HTTP_PATH_MAX_BYTES + 1]; /* raw path, before percent-decoding */
    bool path_too_long;
};

const struct http_route_info *http_routes(size_t *count)
{
    for (size_t i = 0; i < NROUTES; i++) {
        route_info[i].method = routes[i].method;
        route_info[i].pattern = routes[i].pattern;
    }
    *count = NROUTES;
    return route_info;
}

/* Matches path against pattern segment by segment. A {name} segment takes
 * any non-empty segment, copied to param (at most HTTP_PARAM_MAX - 1 bytes,
 * so an over-long value stays over-long and fails validation). */
static bool route_match(const char *pattern, const char *path, char *param)
{
    const char *p = pattern, *s = path;

    while (*p != '\0' && *s != '\0') {
        if (*p == '{') {
            size_t n = strcspn(s, "/");
            if (n == 0)
                return false;
            if (param != NULL) {
                size_t c = n < HTTP_PARAM_MAX - 1 ? n : HTTP_PARAM_MAX - 1;
                memcpy(param, s, c);
                param[c] = '\0';
            }
            s += n;
            p += strcspn(p, "}");
            if (*p == '}')
                p++;
            continue;
        }
        if (*p != *s)
            return false;
        p++;
        s++;
    }
    return *p == '\0' && *s == '\0';
}

const char *http_req_header(const struct http_req *req, const char *name)
{
    return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_HEADER_KIND, name);
}

/* Every reply helper ends here: a reply replaces whatever was set before,
 * and is a definite answer unless the helper says otherwise after. */
static void set_body(struct http_resp *resp, int status, char *body)
{
    free(resp->body);
    resp->status = status;
    resp->body = body;
    resp->content_type = NULL;
    resp->code = NULL;
    resp->retry_after_s = 0;
    resp->replayed = 0;
    resp->outcome = HTTP_OUT_DEFINITE;
}

void http_reply_json(struct http_resp *resp, int status, const struct cJSON *obj)
{
    char *text = cJSON_PrintUnformatted(obj);
    char *copy = text ? strdup(text) : NULL;

    cJSON_free(text);
    if (copy == NULL) {
        set_body(resp, 500, strdup("{\"code\":\"INTERNAL\",\"message\":\"out of memory\"}"));
        return;
    }
    set_body(resp, status, copy);
}

void http_reply_error(struct http_resp *resp, int status, const char *code, const char *message)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "code", code);
    cJSON_AddStringToObject(o, "message", message);
    http_reply_json(resp, status, o);
    cJSON_Delete(o);
    resp->code = code;
}

void http_reply_text(struct http_resp *resp, int status, const char *ctype, const char *text,
                     size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    set_body(resp, status, copy);
    resp->content_type = ctype;
}

/* Marks the reply just set (status want) as retryable, with its
 * Retry-After. */
static void set_retryable(struct http_resp *resp, int want, const char *code, int retry_after_s)
{
    if (resp->status != want)
        return;                               /* out of memory turned it into a 500 */
    resp->code = code;
    resp->retry_after_s = retry_after_s > 0 ? retry_after_s : 1;
    resp->outcome = HTTP_OUT_RETRYABLE;
}

void http_reply_retry(struct http_resp *resp, const char *code, const char *message,
                      int retry_after_s)
{
    http_reply_error(resp, 503, code, message);
    set_retryable(resp, 503, code, retry_after_s);
}

void http_reply_unavailable(struct http_resp *resp, const char *message)
{
    http_reply_retry(resp, "UNAVAILABLE", message, 1);
}

void http_reply_json_unavailable(struct http_resp *resp, const struct cJSON *obj)
{
    http_reply_json(resp, 503, obj);
    set_retryable(resp, 503, "UNAVAILABLE", 1);
}

void http_reply_in_progress(struct http_resp *resp, const char *code, const char *message,
                            int retry_after_s)
{
    http_reply_error(resp, 409, code, message);
    set_retryable(resp, 409, code, retry_after_s);
}

void http_reply_replay(struct http_resp *resp, int status, const char *body, size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    memcpy(copy, body, len);
    copy[len] = '\0';
    set_body(resp, status, copy);
    resp->replayed = 1;
}

int http_resp_retryable(const struct http_resp *resp)
{
    return resp->outcome == HTTP_OUT_RETRYABLE;
}

/* splitmix64's finalizer: a bijection of 64-bit values that looks random. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The X-Request-Id to use: the client's when it is a valid identifier,
 * else 16 hex digits. Ours are a counter under a random key, mixed: unique
 * within a run, unlike each other to the eye, and no system call per
 * request (they are labels for logs, not secrets). */
static void request_id(struct http_state *hs, struct MHD_Connection *conn,
                       char out[HTTP_REQ_ID_MAX])
{
    static const char hex[] = "0123456789abcdef";
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    uint64_t r;

    if (v != NULL && validate_id(v)) {
        snprintf(out, HTTP_REQ_ID_MAX, "%s", v);
        return;
    }
    r = mix64(hs->req_id_key + atomic_fetch_add_explicit(&hs->req_id_seq, 1,
                                                          memory_order_relaxed));
    for (int i = 15; i >= 0; i--, r >>= 4)
        out[i] = hex[r & 0xf];
    out[16] = '\0';
}

/* 1 when a request with method may take route r: HEAD is GET without a
 * body (libmicrohttpd leaves the body out of a HEAD reply itself). */
static bool method_fits(const struct route *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

static bool has_param(const struct route *r)
{
    return strchr(r->pattern, '{') != NULL;
}

/* 1 when path is spelt out by a route without a {param} ("/order/create"):
 * such a path never falls through to a {param} route. */
static bool literal_path(const char *path)
{
    for (size_t i = 0; i < NROUTES; i++)
        if (!has_param(&routes[i]) && route_match(routes[i].pattern, path, NULL))
            return true;
    return false;
}

/* The index of the route for method and path, or NROUTES. */
static size_t find_route(const char *method, const char *path)
{
    bool literal = literal_path(path);

    for (size_t i = 0; i < NROUTES; i++)
        if (!(literal && has_param(&routes[i])) && method_fits(&routes[i], method) &&
            route_match(routes[i].pattern, path, NULL))
            return i;
    return NROUTES;
}

/* Appends method to the comma-separated allow list unless it is there. */
static void allow_add(char *allow, size_t allow_sz, const char *method)
{
    size_t n = strlen(allow);

    if (strstr(allow, method) != NULL)        /* GET, HEAD, POST: none is in another */
        return;
    snprintf(allow + n, allow_sz - n, "%s%s", n ? ", " : "", method);
}

/* Finds the route; on a miss fills resp with 404 or 405 (+Allow). Returns
 * the route index, or NROUTES on a miss. */
static size_t dispatch_route(const char *method, const char *path, char *param,
                             struct http_resp *resp, char *allow, size_t allow_sz)
{
    bool literal = literal_path(path), known = false;
    size_t i;

    allow[0] = '\0';
    for (i = 0; i < NROUTES; i++) {
        if ((literal && has_param(&routes[i])) || !route_match(routes[i].pattern, path, param))
            continue;
        if (method_fits(&routes[i], method))
            return i;
        allow_add(allow, allow_sz, routes[i].method);
        if (strcmp(routes[i].method, "GET") == 0)
            allow_add(allow, allow_sz, "HEAD");
        known = true;
    }
    if (!known)
        http_reply_error(resp, 404, "NOT_FOUND", "no such route");
    else
        http_reply_error(resp, 405, "METHOD_NOT_ALLOWED", "method not allowed on this route");
    return NROUTES;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes the raw path into out (at least strlen(raw) + 1 bytes).
 * Routing works on the decoded path, so a segment must not decode to a
 * '/' (it would become two segments: "X%2Fcancel" is not "X/cancel") or
 * hold a NUL (it would cut the path short). Returns 0, or -1 for such a
 * path or a malformed escape. */
static int path_decode(const char *raw, char *out)
{
    size_t o = 0;
    int hi, lo;

    for (size_t i = 0; raw[i] != '\0'; i++) {
        if (raw[i] != '%') {
            out[o++] = raw[i];
            continue;
        }
        if ((hi = hex_digit(raw[i + 1])) < 0 || (lo = hex_digit(raw[i + 2])) < 0)
            return -1;
        if (hi * 16 + lo == '/' || hi * 16 + lo == 0)
            return -1;
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    return 0;
}

int http_route_lookup(const char *method, const char *raw_path, char param[HTTP_PARAM_MAX],
                      struct http_resp *resp, char *allow, size_t allow_sz)
{
    char path[HTTP_PATH_MAX_BYTES + 1];
    size_t route;

    allow[0] = '\0';
    if (strlen(raw_path) > HTTP_PATH_MAX_BYTES) {
        http_reply_error(resp, 414, "URI_TOO_LONG", "request path exceeds 1024 bytes");
        return -1;
    }
    if (path_decode(raw_path, path) != 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "malformed path");
        return -1;
    }
    route = dispatch_route(method, path, param, resp, allow, allow_sz);
    return route < NROUTES ? (int)route : -1;
}

static uint64_t elapsed_us(const struct timespec *start)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)(now.tv_sec - start->tv_sec) * 1000000u +
           (uint64_t)((now.tv_nsec - start->tv_nsec) / 1000);
}

/* Copies s into out for a logfmt value: quotes, backslashes and control
 * characters become '_' so a client cannot forge log fields. */
static const char *log_safe(const char *s, char *out, size_t n)
{
    size_t i;

    for (i = 0; s[i] != '\0' && i + 1 < n; i++)
        out[i] = (s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] < 0x20 ||
                  (unsigned char)s[i] == 0x7f) ? '_' : s[i];
    out[i] = '\0';
    return out;
}

static enum MHD_Result send_reply(struct server *srv, struct MHD_Connection *conn,
                                  struct req_state *rs, const struct http_req *req,
                                  struct http_resp *resp, size_t route, const char *allow)
{
    struct MHD_Response *r;
    enum MHD_Result ret;
    char num[16], safe_path[128];
    uint64_t us;

    if (resp->body == NULL)
        http_reply_error(resp, 500, "INTERNAL", "handler produced no reply");
    r = MHD_create_response_from_buffer_with_free_callback(strlen(resp->body), resp->body, free);
    if (r == NULL) {
        free(resp->body);
        return MHD_NO;
    }
    resp->body = NULL;                                /* owned by r now */
    MHD_add_response_header(r, "Content-Type",
                            resp->content_type ? resp->content_type
                                               : "application/json; charset=utf-8");
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (allow != NULL && allow[0] != '\0')
        MHD_add_response_header(r, "Allow", allow);
    if (atomic_load(&srv->http->stopping))        /* keep-alive clients go elsewhere */
        MHD_add_response_header(r, "Connection", "close");
    if (resp->replayed)
        MHD_add_response_header(r, "Idempotent-Replayed", "true");
    if (resp->retry_after_s > 0) {
        snprintf(num, sizeof(num), "%d", resp->retry_after_s);
        MHD_add_response_header(r, "Retry-After", num);
    }
    ret = MHD_queue_response(conn, (unsigned int)resp->status, r);
    MHD_destroy_response(r);
    rs->replied = true;
    us = elapsed_us(&rs->start);
    metrics_observe(srv->m, route, resp->status, us);
    log_write(resp->status >= 500 ? LOG_WARN : LOG_INFO, "request",
              "method=%s path=\"%s\" status=%d duration_us=%llu request_id=%s%s%s",
              req->method, log_safe(req->path, safe_path, sizeof(safe_path)), resp->status,
              (unsigned long long)us, req->request_id, resp->code ? " code=" : "",
              resp->code ? resp->code : "");
    return ret;
}

static enum MHD_Result handle_request(struct server *srv, struct MHD_Connection *conn,
                                      struct req_state *rs, const char *method)
{
    struct http_req req = { .method = method, .conn = conn };
    struct http_resp resp = { .status = 500 };
    char path[HTTP_PATH_MAX_BYTES + 1];
    char allow[64];
    size_t route = NROUTES;

    request_id(srv->http, conn, req.request_id);
    req.body = rs->body ? rs->body : "";
    req.body_len = rs->len;
    req.path = path;
    allow[0] = '\0';
    if (rs->path_too_long) {
        snprintf(path, sizeof(path), "%.64s...", rs->path);
        http_reply_error(&resp, 414, "URI_TOO_LONG", "request path exceeds 1024 bytes");
    } else if (path_decode(rs->path, path) != 0) {
        snprintf(path, sizeof(path), "%s", rs->path);
        http_reply_error(&resp, 400, "BAD_REQUEST",
                         "malformed path: bad percent-escape, or an escaped '/' or NUL");
    } else if (rs->too_large) {
        http_reply_error(&resp, 413, "PAYLOAD_TOO_LARGE", "request body exceeds body_max_bytes");
        route = find_route(method, path);
    } else if ((route = dispatch_route(method, path, req.param, &resp, allow,
                                       sizeof(allow))) < NROUTES) {
        routes[route].fn(srv, &req, &resp);
    }
    return send_reply(srv, conn, rs, &req, &resp, route, allow);
}

/* Appends an upload chunk, or marks the request too large past the cap. */
static void append_body(struct req_state *rs, const char *data, size_t n, size_t cap)
{
    if (rs->too_large)
        return;
    if (rs->len + n > cap) {
        rs->too_large = true;
        return;
    }
    if (rs->len + n + 1 > rs->cap) {
        size_t ncap = rs->cap ? rs->cap : HTTP_BODY_INIT_BYTES;
        while (ncap < rs->len + n + 1)
            ncap *= 2;
        char *nb = realloc(rs->body, ncap);
        if (nb == NULL) {
            rs->too_large = true;                 /* cannot hold it: refuse it */
            return;
        }
        rs->body = nb;
        rs->cap = ncap;
    }
    memcpy(rs->body + rs->len, data, n);
    rs->len += n;
    rs->body[rs->len] = '\0';
}

/* Called by libmicrohttpd once the request line is read, before the
 * headers: the request state is born here, with the raw path (before
 * libmicrohttpd's percent-decoding, which would let "X%2Fcancel" route as
 * "X/cancel" and "A%00junk" as "A") and the start time. The return value
 * becomes *req_cls; the completed callback frees it. */
static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct req_state *rs = calloc(1, sizeof(*rs));
    size_t n = strcspn(uri, "?");

    (void)cls;
    (void)conn;
    if (rs == NULL)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &rs->start);
    if (n > HTTP_PATH_MAX_BYTES) {
        rs->path_too_long = true;
        n = HTTP_PATH_MAX_BYTES;
    }
    memcpy(rs->path, uri, n);
    rs->path[n] = '\0';
    return rs;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **req_cls)
{
    struct server *srv = cls;
    struct req_state *rs = *req_cls;
    size_t cap = (size_t)srv->cfg->body_max_bytes;
    const char *cl;

    (void)url;                                    /* decoded by libmicrohttpd: see uri_cb */
    (void)version;
    if (rs == NULL)
        return MHD_NO;                            /* out of memory in uri_cb */
    if (!rs->started) {                           /* headers complete: a request in flight */
        rs->started = true;
        atomic_fetch_add(&srv->http->inflight, 1);
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl != NULL && strtoull(cl, NULL, 10) > cap) {
            rs->too_large = true;                 /* answer now, never read it */
            return handle_request(srv, conn, rs, method);
        }
        if (rs->path_too_long)
            return handle_request(srv, conn, rs, method);
        return MHD_YES;
    }
    if (rs->replied) {
        *upload_data_size = 0;                    /* discard the rest */
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        append_body(rs, upload_data, *upload_data_size, cap);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return handle_request(srv, conn, rs, method);
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct server *srv = cls;
    struct req_state *rs = *req_cls;

    (void)conn;
    (void)toe;
    if (rs == NULL)
        return;
    if (rs->started)
        atomic_fetch_sub(&srv->http->inflight, 1);
    free(rs->body);
    free(rs);
    *req_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    char safe[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("microhttpd", "detail=\"%s\"", log_safe(msg, safe, sizeof(safe)));
}

int http_start(struct server *srv, int *port)
{
    const struct config *cfg = srv->cfg;
    struct sockaddr_in6 a6 = { 0 };
    struct sockaddr_in a4 = { 0 };
    const struct sockaddr *sa;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                         MHD_USE_ERROR_LOG;
    const union MHD_DaemonInfo *info;

    if ((srv->http = calloc(1, sizeof(*srv->http))) == NULL)
        return -1;
    if (getrandom(&srv->http->req_id_key, sizeof(srv->http->req_id_key), 0) !=
        (ssize_t)sizeof(srv->http->req_id_key))
        srv->http->req_id_key = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (inet_pton(AF_INET, cfg->listen_address, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)cfg->listen_port);
        sa = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, cfg->listen_address, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)cfg->listen_port);
        sa = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        log_error("listen.address is not an IP address", "address=%s", cfg->listen_address);
        return -1;
    }
    srv->http->d = MHD_start_daemon(
        flags, (uint16_t)cfg->listen_port, NULL, NULL, access_cb, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->workers,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_CONN_TIMEOUT_S,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_CONN_LIMIT,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
        MHD_OPTION_NOTIFY_COMPLETED, completed_cb, srv,
        MHD_OPTION_URI_LOG_CALLBACK, uri_cb, srv,
        MHD_OPTION_END);
    if (srv->http->d == NULL) {
        log_error("cannot start http daemon", "address=%s port=%d", cfg->listen_address,
                  cfg->listen_port);
        return -1;
    }
    info = MHD_get_daemon_info(srv->http->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : cfg->listen_port;
    return 0;
}

void http_quiesce(struct server *srv)
{
    MHD_socket fd;

    if (srv->http == NULL || srv->http->d == NULL)
        return;
    atomic_store(&srv->http->stopping, true);
    fd = MHD_quiesce_daemon(srv->http->d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

int http_inflight(const struct server *srv)
{
    return srv->http ? atomic_load(&srv->http->inflight) : 0;
}

void http_stop(struct server *srv)
{
    if (srv->http == NULL)
        return;
    if (srv->http->d != NULL)
        MHD_stop_daemon(srv->http->d);
    free(srv->http);
    srv->http = NULL;
}
