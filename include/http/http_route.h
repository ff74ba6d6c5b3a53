/* http_route.h - route tables and the routing decision: a request's method
 * and path matched against a table of patterns ("/order/{order_no}/ship"),
 * with 400, 404, 405 (+Allow) and 414 answered here. The service's table
 * is the router's (app/router.c); this module knows no route. Pure and
 * thread-safe. */
#ifndef PAYCALLBACK_HTTP_ROUTE_H
#define PAYCALLBACK_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

#define HTTP_PATH_MAX_BYTES 1024

/* Where a route's handler runs. The polling threads must never block, or
 * every connection they serve (a /healthz probe among them) waits too. */
enum http_lane {
    HTTP_LANE_INLINE, /* no I/O: on the polling thread */
    HTTP_LANE_OPS,    /* bounded MySQL probe (/readyz, /metrics): the ops pool */
    HTTP_LANE_WORK    /* MySQL and Redis: the work pool */
};

struct http_route;

/* Runs on the polling thread before a route's handler is queued, with the
 * route it guards: 0 lets the request through, -1 after replying (the
 * handler never runs). May fill req->caller. Must not block. */
typedef int (*http_guard)(const struct http_route *route, struct http_req *req,
                          struct http_resp *resp);

/* Runs on the polling thread before a work route's handler is queued,
 * when http.replays_inline is on: true after answering the request
 * without any I/O (from memory), so the handler is not queued; false to
 * queue it as usual (whatever it may have put in resp is replaced). Must
 * not block, log or touch a database. */
typedef bool (*http_first)(struct server *srv, const struct http_req *req, struct http_resp *resp);

/* ---- a route's non-blocking form (http.event_loop) ----------------------
 * Run on the event loop that read the request, in steps that never block:
 * the first call has events 0 and a zeroed state of state_size bytes, kept
 * until the request ends. A step that must wait says on what in *w (a
 * socket, the HTTP_IO_* events, a bound in ms or -1 for none); the loop
 * calls it again with the events that happened (HTTP_IO_TIMEOUT when the
 * bound ran out). HTTP_STEP_BUSY asks to be called again with events 0
 * when the loop has a moment (a shared resource was taken); past
 * http.queue_wait_ms of that, and on HTTP_STEP_QUEUE, the route's
 * handler runs on the work pool as without the switch. */
#define HTTP_IO_READ 1
#define HTTP_IO_WRITE 2
#define HTTP_IO_EXCEPT 4
#define HTTP_IO_TIMEOUT 8

enum http_step {
    HTTP_STEP_DONE,  /* resp holds the answer */
    HTTP_STEP_WAIT,  /* wait as *w says, then call again */
    HTTP_STEP_BUSY,  /* call again later with events 0 */
    HTTP_STEP_QUEUE, /* run the handler on the work pool instead */
};

struct http_wait {
    int fd;
    int events;     /* HTTP_IO_* */
    int timeout_ms; /* with HTTP_IO_TIMEOUT; -1: no bound */
};

typedef enum http_step (*http_step_fn)(struct server *srv, const struct http_req *req,
                                       struct http_resp *resp, void *state, int events,
                                       struct http_wait *w);

struct http_async {
    size_t state_size;
    http_step_fn step;
};

#define HTTP_ROUTE_QUOTA_TOKEN (1u << 0) /* counted in the client's quota.token_* bucket */
#define HTTP_ROUTE_QUOTA_ORDER (1u << 1) /* counted in the client's quota.order_* bucket */
#define HTTP_ROUTE_NO_HEAD (1u << 2)     /* a GET that writes: HEAD is not GET without a body */
/* The flags from this bit up are the guard's own (the router's operator
 * key scopes); the HTTP layer does not read them. */
#define HTTP_ROUTE_GUARD_SHIFT 8

/* One entry of a route table. */
struct http_route {
    const char *method;
    const char *pattern; /* "/order/{order_no}/ship": {x} is one segment */
    http_handler fn;
    enum http_lane lane;
    http_guard guard;               /* NULL: the route takes any caller */
    unsigned flags;                 /* HTTP_ROUTE_* */
    http_first first;               /* NULL, or an answer from memory tried before queueing */
    const struct http_async *async; /* NULL, or its form for http.event_loop */
};

/* The index of the route of routes[0..n) for method and a decoded path,
 * or n when none takes it. A path spelt out by a route without a {param}
 * ("/order/create") never falls through to a {param} route; HEAD takes a
 * GET route unless it is HTTP_ROUTE_NO_HEAD. */
size_t http_route_find(const struct http_route *routes, size_t n, const char *method,
                       const char *path);

/* http_route_find with the {param} segment copied to param; on a miss
 * replies 404, or 405 with the path's methods in allow ("GET, HEAD"), and
 * returns n. */
size_t http_route_dispatch(const struct http_route *routes, size_t n, const char *method,
                           const char *path, char *param, struct http_resp *resp, char *allow,
                           size_t allow_sz);

/* Percent-decodes the raw path into out (at least strlen(raw) + 1 bytes).
 * Routing works on the decoded path, so a segment must not decode to a
 * '/' (it would become two segments: "X%2Fcancel" is not "X/cancel") or
 * hold a NUL (it would cut the path short). Returns 0, or -1 for such a
 * path or a malformed escape. */
int http_path_decode(const char *raw, char *out);

/* The routing decision for a request path as received (percent-escapes
 * and all), without a connection: the index of the route in routes with
 * its {param} segment copied to param, or -1 with resp set (400 for a
 * malformed path, 414 for an over-long one, 404, or 405 with the methods
 * in allow). The fuzzers and tests call it. */
int http_route_lookup(const struct http_route *routes, size_t n, const char *method,
                      const char *raw_path, char param[HTTP_PARAM_MAX], struct http_resp *resp,
                      char *allow, size_t allow_sz);

#endif
