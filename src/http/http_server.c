/* http_server.c - the libmicrohttpd server: daemon start and stop, the
 * acceptor and connection guard, body accumulation with a size cap,
 * dispatch through the caller's route table to the route's lane and
 * quota, request ids, the per-request log line and metrics. Handlers see
 * struct http_req and struct http_resp, never MHD's types. */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier): accept4 needs it */
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api_error.h"
#include "array.h"
#include "config.h"
#include "connguard.h"
#include "framing.h"
#include "http_route.h"
#include "hex.h"
#include "keyring.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "netaddr.h"
#include "unitquota.h"
#include "quota.h"
#include "server.h"
#include "validate.h"
#include "workq.h"

#define HTTP_BODY_INIT_BYTES 1024
#define HTTP_HEADER_MAX_BYTES \
    8192                          /* request line and headers; the library's own
                                         limit (its 32 KiB memory pool) is above it */
#define HTTP_IO_THREADS_MAX 4     /* libmicrohttpd polling threads */
#define HTTP_OPS_THREADS 2        /* the /readyz and /metrics lane */
#define HTTP_FD_RESERVE 64        /* descriptors for logs, listeners, the ITC, spare */
#define HTTP_ACCEPT_POLL_MS 100   /* the acceptor checks for a stop this often */
#define HTTP_ACCEPT_BACKOFF_MS 50 /* pause after running out of descriptors */

struct http_loop;

struct http_state {
    struct MHD_Daemon *d; /* the library's own polling threads; NULL with loops */
    /* http.event_loop: each loop thread drives a daemon of its own */
    struct http_loop *loops;
    size_t nloops;
    int loop_share;          /* mysql.pool_size over the loops, rounded up */
    atomic_size_t next_loop; /* round robin of accepted connections */
    int listen_fd;           /* ours: the acceptor hands connections to the daemon */
    pthread_t acceptor;
    bool acceptor_running;
    atomic_bool accept_stop; /* quiesced: the acceptor returns */
    /* Guard handles of connections accepted and handed to the library,
     * by descriptor, until its polling thread takes them (connection_cb). */
    struct connguard_conn *_Atomic *pending;
    size_t npending;
    atomic_bool stopping;  /* quiesced: replies close their connection */
    atomic_bool abandoned; /* the grace period ran out: no reply goes out any more */
    uint64_t req_id_key;   /* random at start, so ids differ between runs */
    atomic_uint_fast64_t req_id_seq;
    struct connguard *guard; /* connection caps and deadlines */
    struct workq *work;      /* runs the handlers, off the polling threads */
    struct workq *ops;       /* runs /readyz and /metrics, never behind a business request */
    struct quota *quota;     /* per-client rates of the anonymous write routes */
    struct unitquota *units; /* per-client units reserved by orders */
    const struct http_route *routes;
    size_t nroutes;
};

enum req_phase {
    RS_READING, /* headers or body arriving */
    RS_QUEUED,  /* connection suspended, handler queued or running */
    RS_DONE,    /* resp is ready to send */
};

/* Per-request state, born in the URI callback and freed in the completed
 * callback. While RS_QUEUED, a pool thread owns req and resp. */
struct req_state {
    struct workq_job job; /* first: the job is the state */
    struct server *srv;
    struct MHD_Connection *conn;
    struct connguard_conn *guard;
    char *body;
    size_t len, cap;
    size_t body_hint; /* Content-Length, when sent and within the cap */
    bool started;     /* the access callback has seen the headers */
    bool too_large;
    bool replied;
    bool close;        /* reply with Connection: close */
    _Atomic int phase; /* enum req_phase */
    struct timespec start;
    char *path;  /* raw path, before percent-decoding: in paths */
    char *dpath; /* decoded path, what req.path points at: in paths */
    bool path_too_long;
    struct http_req req;
    struct http_resp resp;
    size_t route;
    char allow[64];
    /* On an event loop, while the route's non-blocking form runs: */
    struct http_loop *loop;
    void *astate;                    /* its state (http_async.state_size) */
    struct req_state *lprev, *lnext; /* in the loop's waiting or busy list */
    int lwhere;                      /* LW_* */
    int wfd;                         /* the socket registered in the loop's epoll; -1 none */
    long long deadline_ms;           /* of the wait (0: none), or when it first was busy */
    char paths[];                    /* path and dpath, each as long as this request's path */
};

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
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    unsigned char b[8];
    uint64_t r;

    if (v != NULL && validate_id(v)) {
        snprintf(out, HTTP_REQ_ID_MAX, "%s", v);
        return;
    }
    r = mix64(hs->req_id_key + atomic_fetch_add_explicit(&hs->req_id_seq, 1, memory_order_relaxed));
    for (int i = 7; i >= 0; i--, r >>= 8)
        b[i] = (unsigned char)(r & 0xff);
    hex_encode(b, sizeof(b), out);
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
                  (unsigned char)s[i] == 0x7f)
                     ? '_'
                     : s[i];
    out[i] = '\0';
    return out;
}

static enum MHD_Result send_reply(struct server *srv, struct MHD_Connection *conn,
                                  struct req_state *rs)
{
    const struct http_req *req = &rs->req;
    struct http_resp *resp = &rs->resp;
    struct MHD_Response *r;
    enum MHD_Result ret;
    char num[16], safe_path[128];
    uint64_t us;

    if (atomic_load(&srv->http->abandoned)) {
        /* Its transaction was cut and rolls back: the client must see no
         * answer (which it would take for the outcome), only a closed
         * connection, and retry. */
        free(resp->body);
        resp->body = NULL;
        return MHD_NO;
    }
    if (resp->body == NULL)
        http_reply_error(resp, 500, "INTERNAL", "handler produced no reply");
    r = MHD_create_response_from_buffer_with_free_callback(strlen(resp->body), resp->body, free);
    if (r == NULL) {
        free(resp->body);
        resp->body = NULL;
        return MHD_NO;
    }
    resp->body = NULL; /* owned by r now */
    MHD_add_response_header(r, "Content-Type",
                            resp->content_type ? resp->content_type
                                               : "application/json; charset=utf-8");
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    MHD_add_response_header(r, "Cache-Control",
                            resp->cache_control ? resp->cache_control : "no-store");
    if (resp->etag != NULL)
        MHD_add_response_header(r, "ETag", resp->etag);
    /* Every answer, the console's documents and the API's JSON alike: no
     * framing, no sniffing a type, no Referer leaking a path. */
    MHD_add_response_header(r, "Content-Security-Policy", resp->csp ? resp->csp : HTTP_CSP_API);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    if (rs->allow[0] != '\0')
        MHD_add_response_header(r, "Allow", rs->allow);
    if (rs->close || atomic_load(&srv->http->stopping)) /* keep-alive clients go elsewhere */
        MHD_add_response_header(r, "Connection", "close");
    if (resp->replayed)
        MHD_add_response_header(r, "Idempotent-Replayed", "true");
    if (resp->retry_after_s > 0) {
        snprintf(num, sizeof(num), "%d", resp->retry_after_s);
        MHD_add_response_header(r, "Retry-After", num);
    }
    if (resp->www_authenticate != NULL)
        MHD_add_response_header(r, "WWW-Authenticate", resp->www_authenticate);
    if (resp->shard_outage[0] != '\0')
        MHD_add_response_header(r, "X-Shard-Outage", resp->shard_outage);
    ret = MHD_queue_response(conn, (unsigned int)resp->status, r);
    MHD_destroy_response(r);
    rs->replied = true;
    us = elapsed_us(&rs->start);
    metrics_observe(srv->m, rs->route, resp->status, us);
    log_write(resp->status >= 500 ? LOG_WARN : LOG_INFO, "request",
              "method=%s path=\"%s\" status=%d duration_us=%llu request_id=%s%s%s%s%s", req->method,
              log_safe(req->path, safe_path, sizeof(safe_path)), resp->status,
              (unsigned long long)us, req->request_id, resp->code ? " code=" : "",
              resp->code ? resp->code : "", req->caller[0] ? " caller=" : "", req->caller);
    return ret;
}

/* Remembers the last X-Forwarded-For header's value: the one the
 * nearest proxy wrote, if it appended to an earlier header. */
static enum MHD_Result last_xff(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    if (strcasecmp(key, "X-Forwarded-For") == 0)
        *(const char **)cls = value;
    return MHD_YES;
}

/* The client a request counts against: the peer's address, or, on a
 * connection from a trusted proxy, the client its X-Forwarded-For names
 * (the proxy itself when it names none); an IPv6 one by its prefix. */
static void request_client(const struct config *cfg, struct MHD_Connection *conn,
                           struct netaddr *out)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
    struct netaddr peer, fwd;
    const char *xff = NULL;

    netaddr_from_sockaddr(sa,
                          sa == NULL                  ? 0
                          : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                      : sizeof(struct sockaddr_in),
                          &peer);
    if (cfg->http_trusted.n > 0 && netaddr_list_contains(&cfg->http_trusted, &peer)) {
        MHD_get_connection_values(conn, MHD_HEADER_KIND, last_xff, &xff);
        if (netaddr_forwarded_client(xff, &cfg->http_trusted, &fwd) == 0)
            peer = fwd;
    }
    netaddr_key(&peer, cfg->http_ipv6_prefix, out);
}

/* Takes a request of a quota'd route from its client's bucket; past the
 * rate, answers 429 RATE_LIMITED with Retry-After. 0, or -1 with the
 * reply set. */
static int quota_or_reply(struct req_state *rs)
{
    unsigned flags = rs->srv->http->routes[rs->route].flags;
    enum quota_class cls;
    int wait_s;

    if (!(flags & (HTTP_ROUTE_QUOTA_TOKEN | HTTP_ROUTE_QUOTA_ORDER)))
        return 0;
    cls = (flags & HTTP_ROUTE_QUOTA_TOKEN) ? QUOTA_TOKEN : QUOTA_ORDER;
    wait_s = quota_take(rs->srv->http->quota, cls, &rs->req.client, monotime_ms());
    if (wait_s == 0)
        return 0;
    metrics_inc(rs->srv->m, cls == QUOTA_TOKEN ? M_QUOTA_REFUSED_TOKEN : M_QUOTA_REFUSED_ORDER);
    http_reply_rate_limited(&rs->resp, api_error_code(API_RATE_LIMITED),
                            cls == QUOTA_TOKEN ? "too many token requests from this client: "
                                                 "quota.token_rate; retry after Retry-After"
                                               : "too many orders from this client: "
                                                 "quota.order_rate; retry after Retry-After",
                            wait_s);
    return -1;
}

/* Fills rs->req from the connection and decides the route. Returns the
 * lane to run the handler in, or -1 when rs->resp already holds the
 * answer (404, 405, 400 for a bad path, 413). */
static int prepare_request(struct req_state *rs, const char *method)
{
    struct http_req *req = &rs->req;

    req->method = method;
    req->conn = rs->conn;
    req->path = rs->dpath;
    req->body = rs->body ? rs->body : "";
    req->body_len = rs->len;
    const struct http_state *hs = rs->srv->http;
    const struct http_route *r;

    request_id(rs->srv->http, rs->conn, req->request_id);
    request_client(rs->srv->cfg, rs->conn, &req->client);
    req->units = hs->units;
    rs->route = hs->nroutes;
    if (http_path_decode(rs->path, rs->dpath) != 0) {
        strcpy(rs->dpath, rs->path); /* the same size */
        http_reply_error(&rs->resp, 400, "BAD_REQUEST",
                         "malformed path: bad percent-escape, or an escaped '/' or NUL");
        return -1;
    }
    if (rs->too_large) {
        http_reply_error(&rs->resp, 413, "PAYLOAD_TOO_LARGE",
                         "request body exceeds body_max_bytes");
        rs->route = http_route_find(hs->routes, hs->nroutes, method, rs->dpath);
        return -1;
    }
    rs->route = http_route_dispatch(hs->routes, hs->nroutes, method, rs->dpath, req->param,
                                    &rs->resp, rs->allow, sizeof(rs->allow));
    if (rs->route == hs->nroutes)
        return -1;
    r = &hs->routes[rs->route];
    if (r->guard != NULL && r->guard(r, req, &rs->resp) != 0)
        return -1; /* refused; the handler never runs */
    if (quota_or_reply(rs) != 0)
        return -1; /* 429 set */
    return (int)r->lane;
}

static void loop_wake(struct http_loop *L);

/* Hands a connection back to its polling thread from another thread. The
 * library wakes its own polling threads; an event loop (whose daemon runs
 * in external mode, where a resume writes to no descriptor) is woken
 * here. */
static void resume_from_pool(struct req_state *rs)
{
    struct http_loop *L = rs->loop;

    MHD_resume_connection(rs->conn);
    if (L != NULL)
        loop_wake(L);
}

/* Pool thread: runs the handler, then hands the connection back to its
 * polling thread, which calls the access callback again to send. */
static void job_run(struct workq_job *job)
{
    struct req_state *rs = (struct req_state *)job;

    rs->srv->http->routes[rs->route].fn(rs->srv, &rs->req, &rs->resp);
    atomic_store(&rs->phase, RS_DONE);
    resume_from_pool(rs);
}

/* Pool or watchdog thread: the request waited past http.queue_wait_ms for
 * a handler thread (every one is busy, typically blocked on a frozen
 * database). It is answered 503 rather than left to wait. */
static void job_expire(struct workq_job *job)
{
    struct req_state *rs = (struct req_state *)job;

    metrics_inc(rs->srv->m, M_HTTP_QUEUE_EXPIRED);
    http_reply_unavailable(&rs->resp, "server busy: no handler free within http.queue_wait_ms");
    atomic_store(&rs->phase, RS_DONE);
    resume_from_pool(rs);
}

static bool loop_begin(struct server *srv, struct req_state *rs, enum MHD_Result *ret);
static struct http_loop *loop_of(const struct http_state *hs, struct MHD_Connection *conn);
static bool loop_hand(struct http_state *hs, int fd, const struct sockaddr_storage *ss,
                      socklen_t len);

static enum MHD_Result handle_request(struct server *srv, struct MHD_Connection *conn,
                                      struct req_state *rs, const char *method)
{
    struct workq *q;
    int lane = prepare_request(rs, method);
    enum MHD_Result ret;

    connguard_phase(rs->guard, CONNGUARD_BUSY);
    if (lane < 0)
        return send_reply(srv, conn, rs);
    if (lane == HTTP_LANE_INLINE) {
        srv->http->routes[rs->route].fn(srv, &rs->req, &rs->resp);
        return send_reply(srv, conn, rs);
    }
    /* An answer from memory needs no pool thread: no hand-off, no wake-up. */
    if (srv->cfg->http_replays_inline && srv->http->routes[rs->route].first != NULL &&
        srv->http->routes[rs->route].first(srv, &rs->req, &rs->resp))
        return send_reply(srv, conn, rs);
    if (loop_begin(srv, rs, &ret))
        return ret;
    q = lane == HTTP_LANE_OPS ? srv->http->ops : srv->http->work;
    rs->job.run = job_run;
    rs->job.expire = job_expire;
    atomic_store(&rs->phase, RS_QUEUED);
    MHD_suspend_connection(conn); /* before the push: a pool thread resumes */
    if (workq_push(q, &rs->job) != 0) {
        http_reply_unavailable(&rs->resp, "server stopping");
        atomic_store(&rs->phase, RS_DONE);
        MHD_resume_connection(conn);
    }
    return MHD_YES;
}

/* Answers right away with an error, before or instead of reading the body;
 * the connection is closed after the reply when close is set (the rest of
 * the request cannot be trusted to be framed right). */
static enum MHD_Result reply_early(struct server *srv, struct MHD_Connection *conn,
                                   struct req_state *rs, const char *method, int status,
                                   const char *code, const char *message, bool close)
{
    rs->req.method = method;
    rs->req.conn = conn;
    rs->req.path = rs->dpath;
    request_id(srv->http, conn, rs->req.request_id);
    if (http_path_decode(rs->path, rs->dpath) != 0)
        strcpy(rs->dpath, rs->path); /* the same size */
    rs->route = srv->http->nroutes;
    rs->close = close;
    http_reply_error(&rs->resp, status, code, message);
    connguard_phase(rs->guard, CONNGUARD_BUSY);
    return send_reply(srv, conn, rs);
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
        size_t ncap = rs->cap ? rs->cap : rs->body_hint ? rs->body_hint + 1 : HTTP_BODY_INIT_BYTES;
        while (ncap < rs->len + n + 1)
            ncap *= 2;
        char *nb = realloc(rs->body, ncap);
        if (nb == NULL) {
            rs->too_large = true; /* cannot hold it: refuse it */
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
 * "X/cancel" and "A%00junk" as "A") and the start time. It is one
 * allocation sized to the path, small enough for the allocator's
 * per-thread cache for every route's path. The return value becomes
 * *req_cls; the completed callback frees it. */
static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
    size_t n = strcspn(uri, "?");
    size_t keep = n > HTTP_PATH_MAX_BYTES ? HTTP_PATH_MAX_BYTES : n;
    struct req_state *rs = calloc(1, sizeof(*rs) + 2 * (keep + 1));
    const union MHD_ConnectionInfo *ci;

    if (rs == NULL)
        return NULL;
    rs->path = rs->paths;
    rs->dpath = rs->paths + keep + 1;
    rs->srv = cls;
    rs->conn = conn;
    rs->route = rs->srv->http->nroutes;
    rs->resp.status = 500;
    rs->wfd = -1;
    rs->loop = loop_of(rs->srv->http, conn);
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    rs->guard = ci != NULL ? ci->socket_context : NULL;
    clock_gettime(CLOCK_MONOTONIC, &rs->start);
    if (n > HTTP_PATH_MAX_BYTES) {
        rs->path_too_long = true;
        n = HTTP_PATH_MAX_BYTES;
    }
    memcpy(rs->path, uri, n);
    rs->path[n] = '\0';
    return rs;
}

/* Counts the request headers called name (case-insensitive). */
struct header_count {
    const char *name;
    int n;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    struct header_count *hc = cls;

    (void)kind;
    (void)value;
    if (strcasecmp(key, hc->name) == 0)
        hc->n++;
    return MHD_YES;
}

static int header_count(struct MHD_Connection *conn, const char *name)
{
    struct header_count hc = { name, 0 };

    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &hc);
    return hc.n;
}

/* The first header line two parsers could read differently, or
 * FRAMING_OK (see framing.h). */
static enum MHD_Result check_line(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    enum framing_status *st = cls;

    (void)kind;
    *st = framing_check(key, key_size, value, value_size);
    return *st == FRAMING_OK ? MHD_YES : MHD_NO;
}

/* Passes one header line to the reading of the header block. */
static enum MHD_Result block_line(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    struct framing_block *b = cls;

    (void)kind;
    framing_block_line(b, key, key_size, value, value_size);
    return b->st == FRAMING_OK ? MHD_YES : MHD_NO;
}

/* FRAMING_HIDDEN when a NUL byte cut a header name or value: the library
 * hands over the part before it, so the handler would see a header other
 * than the one sent. method points at the start of the header block the
 * library keeps (framing.h). */
static enum framing_status hidden_bytes(struct MHD_Connection *conn, const char *method,
                                        size_t header_size)
{
    struct framing_block b;

    framing_block_begin(&b, method, header_size);
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, block_line, &b);
    return framing_block_end(&b);
}

/* The header block is complete: checks the request's framing and size
 * before any body is read. Request smuggling rides on framing that two
 * parsers read differently, so anything ambiguous is refused and the
 * connection closed. */
static enum MHD_Result on_headers(struct server *srv, struct MHD_Connection *conn,
                                  struct req_state *rs, const char *method)
{
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    int ncl = header_count(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    enum framing_status line = FRAMING_OK;
    unsigned long long cl_bytes;
    const char *cl;

    if (ci != NULL && ci->header_size > HTTP_HEADER_MAX_BYTES)
        return reply_early(srv, conn, rs, method, 431, "HEADER_TOO_LARGE",
                           "request headers exceed 8192 bytes", true);
    if (rs->path_too_long)
        return reply_early(srv, conn, rs, method, 414, "URI_TOO_LONG",
                           "request path exceeds 1024 bytes", false);
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_line, &line);
    if (line == FRAMING_OK && ci != NULL)
        line = hidden_bytes(conn, method, ci->header_size);
    if (line != FRAMING_OK)
        return reply_early(srv, conn, rs, method, 400, "BAD_REQUEST", framing_message(line), true);
    if (te != NULL && ncl > 0)
        return reply_early(srv, conn, rs, method, 400, "BAD_REQUEST",
                           "Content-Length and Transfer-Encoding together", true);
    if (ncl > 1)
        return reply_early(srv, conn, rs, method, 400, "BAD_REQUEST",
                           "more than one Content-Length", true);
    if (te != NULL && (header_count(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) > 1 ||
                       strcasecmp(te, "chunked") != 0))
        return reply_early(srv, conn, rs, method, 501, "NOT_IMPLEMENTED",
                           "transfer coding not supported: only chunked", true);
    cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    cl_bytes = cl != NULL ? strtoull(cl, NULL, 10) : 0;
    if (cl_bytes > (size_t)srv->cfg->body_max_bytes) {
        rs->too_large = true; /* answer now, never read it */
        return handle_request(srv, conn, rs, method);
    }
    rs->body_hint = (size_t)cl_bytes; /* the body gets one allocation */
    connguard_phase(rs->guard, CONNGUARD_BODY);
    return MHD_YES;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    struct server *srv = cls;
    struct req_state *rs = *req_cls;

    (void)url; /* decoded by libmicrohttpd: see uri_cb */
    (void)version;
    if (rs == NULL)
        return MHD_NO;  /* out of memory in uri_cb */
    if (!rs->started) { /* headers complete: a request in flight */
        rs->started = true;
        rs->req.keys = keyslot_acquire(srv->keys);
        metrics_add_gauge(srv->m, G_HTTP_IN_FLIGHT, 1);
        return on_headers(srv, conn, rs, method);
    }
    if (rs->replied) {
        *upload_data_size = 0; /* discard the rest */
        return MHD_YES;
    }
    if (atomic_load(&rs->phase) == RS_DONE) /* resumed after the handler ran */
        return send_reply(srv, conn, rs);
    if (*upload_data_size > 0) {
        connguard_progress(rs->guard, *upload_data_size);
        append_body(rs, upload_data, *upload_data_size, (size_t)srv->cfg->body_max_bytes);
        *upload_data_size = 0;
        if (connguard_expired(rs->guard)) /* a trickled body: the deadline is total */
            return reply_early(srv, conn, rs, method, 408, "REQUEST_TIMEOUT",
                               "request body not received within http.body_timeout_ms", true);
        return MHD_YES;
    }
    return handle_request(srv, conn, rs, method);
}

/* Ends a request. A request the library answered itself (a malformed
 * request line or header, 431 past its own buffer) never reached the
 * access callback; it is counted and logged here with the status the
 * library sent. The connection's next request gets a fresh header
 * deadline. */
static void completed_cb(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct server *srv = cls;
    struct req_state *rs = *req_cls;
    const union MHD_ConnectionInfo *ci;
    char safe_path[128];
    unsigned int status;

    if (rs == NULL)
        return;
    if (!rs->replied) {
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        status = ci != NULL ? ci->http_status : 0;
        if (status != 0)
            metrics_observe(srv->m, srv->http->nroutes, (int)status, elapsed_us(&rs->start));
        log_write(status != 0 ? LOG_WARN : LOG_INFO, "request",
                  "path=\"%s\" status=%u termination=%d code=%s",
                  log_safe(rs->path, safe_path, sizeof(safe_path)), status, (int)toe,
                  status != 0 ? "LIBRARY_REPLY" : "NO_REPLY");
    }
    if (rs->started) {
        keyring_release((struct keyring *)rs->req.keys);
        metrics_add_gauge(srv->m, G_HTTP_IN_FLIGHT, -1);
    }
    connguard_phase(rs->guard, CONNGUARD_HEADERS);
    free(rs->astate);
    free(rs->resp.body);
    free(rs->body);
    free(rs);
    *req_cls = NULL;
}

/* The library started a connection the acceptor handed it, or is about to
 * close one: takes the guard's handle (caps, deadlines) the acceptor left
 * under its descriptor, or forgets it before its socket closes. */
static void connection_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct server *srv = cls;
    const union MHD_ConnectionInfo *fd;

    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        connguard_close(srv->http->guard, *socket_context);
        *socket_context = NULL;
        return;
    }
    fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (fd == NULL || fd->connect_fd < 0 || (size_t)fd->connect_fd >= srv->http->npending)
        return;
    *socket_context = atomic_exchange(&srv->http->pending[fd->connect_fd], NULL);
}

/* The acceptor thread: takes every connection the kernel has queued as
 * fast as accept() returns them, closes at once those the guard refuses,
 * and hands the rest to the library. The library's own accepting takes
 * one connection per pass over all its sockets, so under a flood of
 * connections from a few addresses the kernel's accept queue stayed full
 * and a legitimate client waited behind the whole queue; drained here,
 * the queue stays short and the caps decide who is served. */
static void *acceptor_main(void *arg)
{
    struct server *srv = arg;
    struct http_state *hs = srv->http;
    struct pollfd p = { .fd = hs->listen_fd, .events = POLLIN };
    struct sockaddr_storage ss;
    struct connguard_conn *c;
    socklen_t len;
    int fd;

    while (!atomic_load(&hs->accept_stop)) {
        if (poll(&p, 1, HTTP_ACCEPT_POLL_MS) <= 0)
            continue;
        for (;;) {
            len = sizeof(ss);
            fd = accept4(hs->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                    poll(NULL, 0, HTTP_ACCEPT_BACKOFF_MS); /* the kernel keeps it queued */
                break;                                     /* EAGAIN, or shut down */
            }
            if ((size_t)fd >= hs->npending ||
                (c = connguard_accept(hs->guard, fd, (const struct sockaddr *)&ss, len)) == NULL) {
                close(fd); /* over a cap: closed, never queued */
                continue;
            }
            /* A handle left under this descriptor belonged to a connection
             * the library closed before it ever started: forget it. */
            connguard_close(hs->guard, atomic_exchange(&hs->pending[fd], c));
            if (hs->nloops > 0) {
                if (!loop_hand(hs, fd, &ss, len)) {
                    connguard_close(hs->guard, atomic_exchange(&hs->pending[fd], NULL));
                    close(fd);
                }
            } else if (MHD_add_connection(hs->d, fd, (const struct sockaddr *)&ss, len) != MHD_YES)
                connguard_close(hs->guard, atomic_exchange(&hs->pending[fd], NULL));
            /* (the library closed the socket) */
        }
    }
    return NULL;
}

/* Binds and listens on sa (SO_REUSEADDR always, so a restart after a
 * crash binds past the old connections' TIME_WAIT; SO_REUSEPORT only when
 * listen.reuse_port shares the port on purpose), and learns the port.
 * The socket, or -1 (logged). */
static int open_listener(const struct config *cfg, const struct sockaddr *sa, int *port)
{
    socklen_t len =
        sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    struct sockaddr_storage bound;
    int fd, on = 1;

    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (cfg->listen_reuse_port &&
         setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
        (sa->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) ||
        bind(fd, sa, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        log_error("cannot start http daemon: address in use or not available; "
                  "listen.reuse_port shares a port on purpose",
                  "address=%s port=%d error=\"%s\"", cfg->listen_address, cfg->listen_port,
                  strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    len = sizeof(bound);
    if (getsockname(fd, (struct sockaddr *)&bound, &len) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    else
        *port = cfg->listen_port;
    return fd;
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

/* ---- event loops (http.event_loop) ----------------------------------------
 * Each loop thread drives one daemon in the library's external mode: it
 * waits in one epoll on the daemon's descriptor, its own eventfd (new
 * connections from the acceptor, a stop) and the database sockets its
 * requests wait on, so a request whose route has a non-blocking form is
 * read, run and answered by one thread that sleeps only when nothing is
 * ready. Handlers of every other route run on the work pool as before:
 * their resume wakes the loop through the daemon's descriptor. A loop
 * never blocks: a frozen database leaves its requests waiting on their
 * sockets (each bounded by mysql.io_timeout_s), never the loop. */

#define HTTP_LOOP_EVENTS 64
#define HTTP_LOOP_IDLE_MS 1000 /* the longest sleep: the stop flag is also signalled */
#define HTTP_LOOP_BUSY_MS \
    20 /* a request waiting for a connection looks again at least \
                                this often (a release wakes it sooner) */

enum loop_where {
    LW_NONE,
    LW_WAIT, /* waiting on its socket */
    LW_BUSY  /* waiting for a connection */
};

struct loop_conn {
    int fd;
    struct sockaddr_storage ss;
    socklen_t len;
};

struct http_loop {
    struct server *srv;
    struct MHD_Daemon *d;
    pthread_t th;
    bool running;
    int ep;  /* epoll */
    int efd; /* eventfd: connections in the inbox, or stop */
    char tag_efd, tag_mhd;
    pthread_mutex_t mu; /* the inbox */
    struct loop_conn *inbox;
    size_t ninbox, capinbox;
    atomic_bool stop;
    atomic_bool waiting; /* requests wait for a connection: a release wakes the loop */
    atomic_int held;     /* requests waiting on the database, each holding a connection */
    /* this loop's thread only: */
    struct req_state *wait_head, *busy_head, *busy_tail;
    bool kick; /* a connection was resumed here: run the daemon before sleeping */
    bool cede; /* a connection released here went to a loop short of its share */
};

/* The loop whose thread this is; NULL on every other thread. */
static _Thread_local struct http_loop *this_loop;

static void loop_unlink(struct http_loop *L, struct req_state *rs)
{
    if (rs->lwhere == LW_NONE)
        return;
    if (rs->lprev != NULL)
        rs->lprev->lnext = rs->lnext;
    else if (rs->lwhere == LW_WAIT)
        L->wait_head = rs->lnext;
    else
        L->busy_head = rs->lnext;
    if (rs->lnext != NULL)
        rs->lnext->lprev = rs->lprev;
    else if (rs->lwhere == LW_BUSY)
        L->busy_tail = rs->lprev;
    if (rs->lwhere == LW_WAIT)
        atomic_fetch_sub(&L->held, 1);
    rs->lprev = rs->lnext = NULL;
    rs->lwhere = LW_NONE;
}

static void loop_unwatch(struct http_loop *L, struct req_state *rs)
{
    if (rs->wfd >= 0)
        epoll_ctl(L->ep, EPOLL_CTL_DEL, rs->wfd, NULL); /* gone with a closed link: fine */
    rs->wfd = -1;
}

static void loop_watch(struct http_loop *L, struct req_state *rs, const struct http_wait *w)
{
    struct epoll_event ev = { 0 };

    ev.events = ((w->events & HTTP_IO_READ) ? EPOLLIN : 0) |
                ((w->events & HTTP_IO_WRITE) ? EPOLLOUT : 0) |
                ((w->events & HTTP_IO_EXCEPT) ? EPOLLPRI : 0);
    ev.data.ptr = rs;
    if (rs->wfd >= 0 && rs->wfd != w->fd)
        loop_unwatch(L, rs);
    if (epoll_ctl(L->ep, rs->wfd == w->fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, w->fd, &ev) != 0 &&
        errno == EEXIST)
        epoll_ctl(L->ep, EPOLL_CTL_MOD, w->fd, &ev);
    rs->wfd = w->fd;
    loop_unlink(L, rs);
    rs->deadline_ms =
        (w->events & HTTP_IO_TIMEOUT) && w->timeout_ms >= 0 ? monotime_ms() + w->timeout_ms : 0;
    rs->lwhere = LW_WAIT;
    rs->lnext = L->wait_head;
    if (L->wait_head != NULL)
        L->wait_head->lprev = rs;
    L->wait_head = rs;
    atomic_fetch_add(&L->held, 1);
}

/* The answer is in rs->resp: the library sends it on its next run. */
static void loop_answer(struct req_state *rs)
{
    atomic_store(&rs->phase, RS_DONE);
    MHD_resume_connection(rs->conn);
    rs->loop->kick = true;
}

/* The route's handler on the work pool, as without the switch. */
static void loop_queue(struct server *srv, struct req_state *rs)
{
    rs->job.run = job_run;
    rs->job.expire = job_expire;
    if (workq_push(srv->http->work, &rs->job) != 0) {
        http_reply_unavailable(&rs->resp, "server stopping");
        loop_answer(rs);
    }
}

/* Runs one step of rs's non-blocking form (suspended) and files it by
 * the step's answer. */
static void loop_step(struct http_loop *L, struct req_state *rs, int events)
{
    struct server *srv = L->srv;
    struct http_wait w = { -1, 0, -1 };
    enum http_step st =
        srv->http->routes[rs->route].async->step(srv, &rs->req, &rs->resp, rs->astate, events, &w);

    if (st == HTTP_STEP_WAIT) {
        loop_watch(L, rs, &w);
        return;
    }
    loop_unwatch(L, rs);
    if (st == HTTP_STEP_BUSY) {
        if (rs->lwhere == LW_BUSY)
            return; /* stays first in line */
        loop_unlink(L, rs);
        rs->deadline_ms = monotime_ms() + srv->cfg->http_queue_wait_ms;
        rs->lwhere = LW_BUSY;
        rs->lprev = L->busy_tail;
        if (L->busy_tail != NULL)
            L->busy_tail->lnext = rs;
        else
            L->busy_head = rs;
        L->busy_tail = rs;
        return;
    }
    loop_unlink(L, rs);
    metrics_inc(srv->m, st == HTTP_STEP_QUEUE ? M_LOOP_HANDED : M_LOOP_ANSWERED);
    if (st == HTTP_STEP_QUEUE)
        loop_queue(srv, rs);
    else
        loop_answer(rs);
}

/* The loop whose daemon serves conn, or NULL. */
static struct http_loop *loop_of(const struct http_state *hs, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);

    for (size_t i = 0; ci != NULL && i < hs->nloops; i++)
        if (hs->loops[i].d == ci->daemon)
            return &hs->loops[i];
    return NULL;
}

/* A request of a route with a non-blocking form, on a loop: its first
 * step runs now. True with *ret when the request is taken care of
 * (answered, waiting, or queued); false to queue it as usual. */
static bool loop_begin(struct server *srv, struct req_state *rs, enum MHD_Result *ret)
{
    const struct http_route *r = &srv->http->routes[rs->route];
    struct http_loop *L;
    struct http_wait w = { -1, 0, -1 };
    enum http_step st;

    if (r->async == NULL || (L = rs->loop) == NULL)
        return false;
    if (rs->astate == NULL && (rs->astate = calloc(1, r->async->state_size)) == NULL)
        return false;
    st = r->async->step(srv, &rs->req, &rs->resp, rs->astate, 0, &w);
    if (st == HTTP_STEP_DONE || st == HTTP_STEP_QUEUE)
        metrics_inc(srv->m, st == HTTP_STEP_QUEUE ? M_LOOP_HANDED : M_LOOP_ANSWERED);
    if (st == HTTP_STEP_DONE) {
        *ret = send_reply(srv, rs->conn, rs);
        return true;
    }
    if (st == HTTP_STEP_QUEUE)
        return false;
    atomic_store(&rs->phase, RS_QUEUED);
    MHD_suspend_connection(rs->conn);
    if (st == HTTP_STEP_WAIT) {
        loop_watch(L, rs, &w);
    } else { /* busy: in line */
        rs->deadline_ms = monotime_ms() + srv->cfg->http_queue_wait_ms;
        rs->lwhere = LW_BUSY;
        rs->lprev = L->busy_tail;
        if (L->busy_tail != NULL)
            L->busy_tail->lnext = rs;
        else
            L->busy_head = rs;
        L->busy_tail = rs;
    }
    *ret = MHD_YES;
    return true;
}

/* Hands the accepted connections of the inbox to the daemon. */
static void loop_take_inbox(struct http_loop *L)
{
    struct http_state *hs = L->srv->http;
    uint64_t n;
    size_t i;

    if (read(L->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        return;
    pthread_mutex_lock(&L->mu);
    for (i = 0; i < L->ninbox; i++) {
        struct loop_conn *c = &L->inbox[i];

        if (MHD_add_connection(L->d, c->fd, (const struct sockaddr *)&c->ss, c->len) != MHD_YES)
            connguard_close(hs->guard, atomic_exchange(&hs->pending[c->fd], NULL));
    }
    L->ninbox = 0;
    pthread_mutex_unlock(&L->mu);
}

/* Requests in line for a connection try again in order; one still busy
 * keeps the rest behind it. Past http.queue_wait_ms a request goes to
 * the work pool, whose handler waits for a connection as usual. */
static void loop_retry_busy(struct http_loop *L, long long now)
{
    struct req_state *rs;

    /* Before looking: a connection released from now on wakes the loop. */
    atomic_store(&L->waiting, L->busy_head != NULL);
    if (L->cede) { /* what this loop released is another loop's to take */
        L->cede = false;
        return;
    }
    while ((rs = L->busy_head) != NULL) {
        if (now >= rs->deadline_ms || atomic_load(&L->stop)) {
            loop_unlink(L, rs);
            metrics_inc(L->srv->m, M_LOOP_HANDED);
            loop_queue(L->srv, rs);
            continue;
        }
        loop_step(L, rs, 0);
        if (rs->lwhere == LW_BUSY)
            return;
    }
    atomic_store(&L->waiting, false);
}

/* A pooled connection was released (any thread, under the pool's mutex).
 * A loop whose requests wait for a connection while it holds fewer than
 * its share of the pool (mysql.pool_size over the loops) is woken first,
 * and a loop that released it leaves it to that one; otherwise the loop
 * that released it keeps it for its own line (it looks again before it
 * sleeps: no wake-up, no other thread); otherwise the first loop with a
 * line is woken. So loops that each hold their share pass no connection
 * between threads, and none waits on another's for long. */
static void loops_conn_freed(void *arg)
{
    struct http_state *hs = arg;
    struct http_loop *self = this_loop;

    for (size_t i = 0; i < hs->nloops; i++) {
        struct http_loop *M = &hs->loops[i];

        if (M != self && atomic_load(&M->held) < hs->loop_share &&
            atomic_exchange(&M->waiting, false)) {
            loop_wake(M);
            if (self != NULL)
                self->cede = true;
            return;
        }
    }
    if (self != NULL && self->busy_head != NULL)
        return;
    for (size_t i = 0; i < hs->nloops; i++)
        if (atomic_exchange(&hs->loops[i].waiting, false)) {
            loop_wake(&hs->loops[i]);
            return;
        }
}

/* Waits whose bound ran out continue with HTTP_IO_TIMEOUT. */
static void loop_expire(struct http_loop *L, long long now)
{
    struct req_state *rs, *next;

    for (rs = L->wait_head; rs != NULL; rs = next) {
        next = rs->lnext;
        if (rs->deadline_ms > 0 && now >= rs->deadline_ms)
            loop_step(L, rs, HTTP_IO_TIMEOUT);
    }
}

/* How long the loop may sleep. */
static int loop_timeout(struct http_loop *L, long long now)
{
    MHD_UNSIGNED_LONG_LONG mhd = 0;
    long long t = HTTP_LOOP_IDLE_MS;

    if (L->kick)
        return 0;
    if (MHD_get_timeout(L->d, &mhd) == MHD_YES && (long long)mhd < t)
        t = (long long)mhd;
    if (L->busy_head != NULL && t > HTTP_LOOP_BUSY_MS)
        t = HTTP_LOOP_BUSY_MS;
    for (struct req_state *rs = L->wait_head; rs != NULL; rs = rs->lnext)
        if (rs->deadline_ms > 0 && rs->deadline_ms - now < t)
            t = rs->deadline_ms - now;
    return t < 0 ? 0 : (int)t;
}

static int from_epoll(uint32_t e)
{
    int ev = ((e & EPOLLIN) ? HTTP_IO_READ : 0) | ((e & EPOLLOUT) ? HTTP_IO_WRITE : 0) |
             ((e & EPOLLPRI) ? HTTP_IO_EXCEPT : 0);

    /* An error or hang-up: the library reads it and says what happened. */
    return (e & (EPOLLERR | EPOLLHUP)) ? ev | HTTP_IO_READ | HTTP_IO_WRITE : ev;
}

/* The loop thread. On a stop it goes on until its requests on the
 * database are answered (each bounded by mysql.io_timeout_s). */
static void *loop_main(void *arg)
{
    struct http_loop *L = arg;
    struct epoll_event ev[HTTP_LOOP_EVENTS];
    long long now;
    int n;

    this_loop = L;
    for (;;) {
        if (atomic_load(&L->stop) && L->wait_head == NULL && L->busy_head == NULL)
            break;
        n = epoll_wait(L->ep, ev, HTTP_LOOP_EVENTS, loop_timeout(L, monotime_ms()));
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &L->tag_efd)
                loop_take_inbox(L);
            else if (ev[i].data.ptr != &L->tag_mhd)
                loop_step(L, ev[i].data.ptr, from_epoll(ev[i].events));
        }
        now = monotime_ms();
        loop_expire(L, now);
        loop_retry_busy(L, now);
        L->kick = false;
        MHD_run(L->d);
    }
    return NULL;
}

/* Starts loop L's daemon (external mode, epoll) and thread. 0 or -1. */
static int loop_start(struct server *srv, struct http_loop *L, unsigned int flags,
                      unsigned int idle_s, long lib_limit)
{
    const union MHD_DaemonInfo *di;
    struct epoll_event ev = { .events = EPOLLIN };

    L->srv = srv;
    L->ep = L->efd = -1;
    pthread_mutex_init(&L->mu, NULL);
    L->d = MHD_start_daemon(
        flags, 0, NULL, NULL, access_cb, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)lib_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed_cb, srv, MHD_OPTION_NOTIFY_CONNECTION, connection_cb,
        srv, MHD_OPTION_URI_LOG_CALLBACK, uri_cb, srv, MHD_OPTION_END);
    if (L->d == NULL || (di = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_EPOLL_FD)) == NULL ||
        (L->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (L->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return -1;
    ev.data.ptr = &L->tag_mhd;
    if (epoll_ctl(L->ep, EPOLL_CTL_ADD, di->epoll_fd, &ev) != 0)
        return -1;
    ev.data.ptr = &L->tag_efd;
    if (epoll_ctl(L->ep, EPOLL_CTL_ADD, L->efd, &ev) != 0)
        return -1;
    if (pthread_create(&L->th, NULL, loop_main, L) != 0)
        return -1;
    L->running = true;
    return 0;
}

static void loop_wake(struct http_loop *L)
{
    uint64_t one = 1;

    if (write(L->efd, &one, sizeof(one)) < 0) {
        /* the counter is already set: the loop wakes anyway */
    }
}

/* Hands an accepted connection to the next loop. False when it could not
 * (out of memory): the caller closes it. */
static bool loop_hand(struct http_state *hs, int fd, const struct sockaddr_storage *ss,
                      socklen_t len)
{
    struct http_loop *L = &hs->loops[atomic_fetch_add(&hs->next_loop, 1) % hs->nloops];
    bool ok = true;

    pthread_mutex_lock(&L->mu);
    if (L->ninbox == L->capinbox) {
        size_t ncap = L->capinbox ? L->capinbox * 2 : 64;
        struct loop_conn *n = realloc(L->inbox, ncap * sizeof(*n));

        if (n == NULL)
            ok = false;
        else {
            L->inbox = n;
            L->capinbox = ncap;
        }
    }
    if (ok) {
        L->inbox[L->ninbox].fd = fd;
        L->inbox[L->ninbox].ss = *ss;
        L->inbox[L->ninbox].len = len;
        L->ninbox++;
    }
    pthread_mutex_unlock(&L->mu);
    if (ok)
        loop_wake(L);
    return ok;
}

/* Stops every loop (each finishes its requests on the database first). */
static void loops_stop(struct server *srv, struct http_state *hs)
{
    for (size_t i = 0; hs->nloops > 0 && i < srv->shards.n; i++)
        db_pool_on_release(srv->shards.s[i].pool, NULL, NULL);
    for (size_t i = 0; i < hs->nloops; i++) {
        atomic_store(&hs->loops[i].stop, true);
        if (hs->loops[i].efd >= 0)
            loop_wake(&hs->loops[i]);
    }
    for (size_t i = 0; i < hs->nloops; i++)
        if (hs->loops[i].running) {
            pthread_join(hs->loops[i].th, NULL);
            hs->loops[i].running = false;
        }
}

/* Frees the loops' daemons (after the pools: a handler still running
 * resumes its connection on one) and descriptors. */
static void loops_free(struct http_state *hs)
{
    for (size_t i = 0; i < hs->nloops; i++) {
        struct http_loop *L = &hs->loops[i];

        if (L->d != NULL)
            MHD_stop_daemon(L->d);
        for (size_t j = 0; j < L->ninbox; j++) { /* handed over, never added */
            close(L->inbox[j].fd);
            connguard_close(hs->guard, atomic_exchange(&hs->pending[L->inbox[j].fd], NULL));
        }
        free(L->inbox);
        if (L->ep >= 0)
            close(L->ep);
        if (L->efd >= 0)
            close(L->efd);
        pthread_mutex_destroy(&L->mu);
    }
    free(hs->loops);
    hs->loops = NULL;
    hs->nloops = 0;
}

/* Descriptors the process needs besides client connections. */
static long fd_reserve(const struct config *cfg, int io_threads)
{
    return HTTP_FD_RESERVE + cfg->mysql_pool_size + cfg->redis_pool_size + 4L * io_threads;
}

/* Makes sure the open-file limit holds http.max_connections plus the
 * reserve, raising the soft limit up to the hard one if it must. Returns
 * the number of client connections the library may hold, or -1 (logged). */
static long check_fd_limit(const struct config *cfg, int io_threads)
{
    long need = cfg->http_max_connections + fd_reserve(cfg, io_threads);
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        log_error("cannot read the open-file limit", "%s", "");
        return -1;
    }
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need &&
        (rl.rlim_max == RLIM_INFINITY || (long)rl.rlim_max >= need)) {
        rl.rlim_cur = (rlim_t)need;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need) {
        log_error("http.max_connections does not fit the open-file limit",
                  "max_connections=%d reserve=%ld nofile=%ld hint=\"lower "
                  "http.max_connections or raise ulimit -n\"",
                  cfg->http_max_connections, fd_reserve(cfg, io_threads), (long)rl.rlim_cur);
        return -1;
    }
    return rl.rlim_cur == RLIM_INFINITY ? need : (long)rl.rlim_cur - fd_reserve(cfg, io_threads);
}

/* How long a client address's reserved units count: the payment window
 * (an unpaid order holds its stock that long), a day when orders never
 * expire. */
#define UNITS_WINDOW_NO_EXPIRY_S 86400

static long long units_window_ms(const struct config *cfg)
{
    int s = cfg->reconcile_payment_window_s;

    return (long long)(s > 0 ? s : UNITS_WINDOW_NO_EXPIRY_S) * 1000;
}

/* The connection guard, the client quotas and the two handler pools. 0, or -1 (logged). */
static int start_pools(struct server *srv)
{
    const struct config *cfg = srv->cfg;
    struct connguard_limits lim = {
        .max_conns = cfg->http_max_connections,
        .max_per_addr = cfg->http_max_connections_per_ip,
        .reserved = (int)((long)cfg->http_max_connections * cfg->http_reserved_percent / 100),
        .reserved_below = cfg->http_reserved_below,
        .v6_prefix = cfg->http_ipv6_prefix,
        .trusted = cfg->http_trusted,
        .header_ms = cfg->http_header_timeout_ms,
        .body_ms = cfg->http_body_timeout_ms,
        .min_body_bps = cfg->http_min_body_rate_bps,
        .body_grace_ms = cfg->http_body_rate_grace_ms,
        .evict_idle_ms = cfg->http_evict_idle_ms,
        .max_per_v6_56 = cfg->http_max_connections_per_v6_56,
        .max_per_v6_48 = cfg->http_max_connections_per_v6_48,
    };

    const struct quota_limit quota[QUOTA_CLASSES] = {
        [QUOTA_TOKEN] = { cfg->quota_token_rate, cfg->quota_token_burst },
        [QUOTA_ORDER] = { cfg->quota_order_rate, cfg->quota_order_burst },
    };

    if ((srv->http->guard = connguard_create(&lim, srv->m)) == NULL ||
        (srv->http->quota = quota_create(quota)) == NULL ||
        (srv->http->units = unitquota_create(units_window_ms(cfg))) == NULL ||
        (srv->http->work = workq_create(cfg->workers, cfg->http_queue_wait_ms)) == NULL ||
        (srv->http->ops = workq_create(HTTP_OPS_THREADS, cfg->http_queue_wait_ms)) == NULL) {
        log_error("cannot start the http threads", "%s", "");
        return -1;
    }
    return 0;
}

/* The listening address of cfg in a6 or a4. Returns it, or NULL (logged). */
static const struct sockaddr *listen_addr(const struct config *cfg, struct sockaddr_in6 *a6,
                                          struct sockaddr_in *a4, unsigned int *flags)
{
    if (inet_pton(AF_INET, cfg->listen_address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)cfg->listen_port);
        return (const struct sockaddr *)a4;
    }
    if (inet_pton(AF_INET6, cfg->listen_address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)cfg->listen_port);
        *flags |= MHD_USE_IPv6;
        return (const struct sockaddr *)a6;
    }
    log_error("listen.address is not an IP address", "address=%s", cfg->listen_address);
    return NULL;
}

/* The library's polling threads: at most HTTP_IO_THREADS_MAX, no more
 * than workers, and no more than the CPUs online. They never block, so a
 * thread beyond the CPUs adds no throughput, only wake-ups: each thread
 * sleeps in its own poll, and more of them means fewer ready connections
 * per wake-up. */
static int polling_threads(const struct config *cfg)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cfg->workers < HTTP_IO_THREADS_MAX ? cfg->workers : HTTP_IO_THREADS_MAX;

    /* cppcheck-suppress knownConditionTrueFalse ; sysconf's answer is not known statically */
    return cpus >= 1 && cpus < n ? (int)cpus : n;
}

int http_start(struct server *srv, const struct http_route *routes, size_t nroutes, int *port)
{
    const struct config *cfg = srv->cfg;
    struct sockaddr_in6 a6 = { 0 };
    struct sockaddr_in a4 = { 0 };
    const struct sockaddr *sa;
    /* poll, not epoll: libmicrohttpd 0.9.75 stops an epoll daemon that
     * runs its own threads racily; its poll side does not race. The
     * listening socket is ours (see acceptor_main). */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                         MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
    int io_threads = polling_threads(cfg);
    unsigned int idle_s;
    long lib_limit;

    if ((srv->http = calloc(1, sizeof(*srv->http))) == NULL)
        return -1;
    srv->http->listen_fd = -1;
    srv->http->routes = routes;
    srv->http->nroutes = nroutes;
    if (getrandom(&srv->http->req_id_key, sizeof(srv->http->req_id_key), 0) !=
        (ssize_t)sizeof(srv->http->req_id_key))
        srv->http->req_id_key = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if ((sa = listen_addr(cfg, &a6, &a4, &flags)) == NULL ||
        (lib_limit = check_fd_limit(cfg, io_threads)) < 0 || start_pools(srv) != 0 ||
        (srv->http->listen_fd = open_listener(cfg, sa, port)) < 0)
        return -1;
    /* Every descriptor a client connection can get is below the limit. */
    srv->http->npending = (size_t)(lib_limit + fd_reserve(cfg, io_threads));
    if ((srv->http->pending = calloc(srv->http->npending, sizeof(*srv->http->pending))) == NULL)
        return -1;
    flags &= ~(unsigned int)MHD_USE_IPv6; /* the library listens on nothing */
    /* The library's own idle timeout only backs up the guard's deadlines:
     * it catches a client that stops reading its reply. */
    idle_s = (unsigned int)((cfg->http_header_timeout_ms > cfg->http_body_timeout_ms
                                 ? cfg->http_header_timeout_ms
                                 : cfg->http_body_timeout_ms) +
                            999) /
                 1000 +
             1;
    if (cfg->http_event_loop) {
        flags &= ~(unsigned int)(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL);
        flags |= MHD_USE_EPOLL;
        if ((srv->http->loops = calloc((size_t)io_threads, sizeof(*srv->http->loops))) == NULL)
            return -1;
        for (int i = 0; i < io_threads; i++) {
            srv->http->nloops++;
            if (loop_start(srv, &srv->http->loops[i], flags, idle_s, lib_limit) != 0) {
                log_error("cannot start the http event loops (see the microhttpd line above)", "%s",
                          "");
                return -1;
            }
        }
        srv->http->loop_share =
            (cfg->mysql_pool_size + (int)srv->http->nloops - 1) / (int)srv->http->nloops;
        for (size_t i = 0; i < srv->shards.n; i++)
            db_pool_on_release(srv->shards.s[i].pool, loops_conn_freed, srv->http);
    } else
        srv->http->d = MHD_start_daemon(
            flags, 0, NULL, NULL, access_cb, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)io_threads, MHD_OPTION_CONNECTION_TIMEOUT,
            idle_s,
            /* Above our own cap, so the library never refuses what the guard
         * admitted: the guard decides. */
            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)lib_limit, MHD_OPTION_NOTIFY_COMPLETED,
            completed_cb, srv, MHD_OPTION_NOTIFY_CONNECTION, connection_cb, srv,
            MHD_OPTION_URI_LOG_CALLBACK, uri_cb, srv, MHD_OPTION_END);
    if (srv->http->d == NULL && srv->http->nloops == 0) {
        log_error("cannot start the http threads (see the microhttpd line above)", "%s", "");
        return -1;
    }
    if (pthread_create(&srv->http->acceptor, NULL, acceptor_main, srv) != 0) {
        log_error("cannot start the accepting thread", "%s", "");
        return -1;
    }
    srv->http->acceptor_running = true;
    return 0;
}

/* The acceptor returns within HTTP_ACCEPT_POLL_MS; the socket, shut
 * down, stops listening now (new connections are refused and a restart
 * can bind the port) and is closed by http_stop. */
void http_quiesce(struct server *srv)
{
    if (srv->http == NULL || (srv->http->d == NULL && srv->http->nloops == 0))
        return;
    atomic_store(&srv->http->stopping, true);
    atomic_store(&srv->http->accept_stop, true);
    if (srv->http->listen_fd >= 0)
        shutdown(srv->http->listen_fd, SHUT_RDWR);
    if (srv->http->acceptor_running) {
        pthread_join(srv->http->acceptor, NULL);
        srv->http->acceptor_running = false;
    }
}

void http_abandon(struct server *srv)
{
    if (srv->http != NULL)
        atomic_store(&srv->http->abandoned, true);
}

int http_inflight(const struct server *srv)
{
    return srv->http ? (int)metrics_gauge(srv->m, G_HTTP_IN_FLIGHT) : 0;
}

/* The pools go first, while the daemon can still resume what they hand
 * back; the guard goes last, after the daemon's close notifications. */
void http_stop(struct server *srv)
{
    if (srv->http == NULL)
        return;
    atomic_store(&srv->http->accept_stop, true);
    if (srv->http->acceptor_running) {
        pthread_join(srv->http->acceptor, NULL);
        srv->http->acceptor_running = false;
    }
    loops_stop(srv, srv->http);
    workq_destroy(srv->http->work);
    workq_destroy(srv->http->ops);
    if (srv->http->d != NULL)
        MHD_stop_daemon(srv->http->d);
    loops_free(srv->http);
    if (srv->http->listen_fd >= 0)
        close(srv->http->listen_fd);
    for (size_t i = 0; i < srv->http->npending; i++) /* handed over, never started */
        connguard_close(srv->http->guard, atomic_exchange(&srv->http->pending[i], NULL));
    free((void *)srv->http->pending);
    connguard_destroy(srv->http->guard);
    quota_destroy(srv->http->quota);
    unitquota_destroy(srv->http->units);
    free(srv->http);
    srv->http = NULL;
}
