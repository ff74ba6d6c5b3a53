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
    http_guard guard; /* NULL: the route takes any caller */
    unsigned flags;   /* HTTP_ROUTE_* */
    http_first first; /* NULL, or an answer from memory tried before queueing */
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
