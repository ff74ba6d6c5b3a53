/* http.h - the HTTP layer: libmicrohttpd glue, body cap, route table and
 * JSON replies. Handlers see only the types here, never MHD's. */
#ifndef PAYCALLBACK_HTTP_H
#define PAYCALLBACK_HTTP_H

#include <stddef.h>

struct server;
struct cJSON;

#define HTTP_PARAM_MAX 66         /* one {param} segment: 64 chars, one more so that a
                                     longer one stays too long, and the NUL */
#define HTTP_REQ_ID_MAX 65

/* One request as a handler sees it. Borrowed for the handler call only. */
struct http_req {
    const char *method;
    const char *path;
    const char *body;             /* NUL-terminated; body_len excludes NUL */
    size_t body_len;
    char param[HTTP_PARAM_MAX];   /* the {param} segment of the route, if any */
    char request_id[HTTP_REQ_ID_MAX];
    void *conn;                   /* opaque: for http_req_header only */
};

/* The reply a handler fills. http.c owns and frees it. */
struct http_resp {
    int status;
    char *body;                   /* malloc'd JSON text, or NULL */
    const char *content_type;     /* NULL = application/json */
    int retry_after_s;            /* > 0 adds Retry-After */
    const char *code;             /* error code of the reply, for logs */
};

typedef void (*http_handler)(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);

/* Value of a request header (case-insensitive name), or NULL. */
const char *http_req_header(const struct http_req *req, const char *name);

/* Sets status and body from obj (serialised, not freed: the caller still
 * owns obj). On serialisation failure sends 500. */
void http_reply_json(struct http_resp *resp, int status, const struct cJSON *obj);

/* Sets a {"code","message"} error reply. */
void http_reply_error(struct http_resp *resp, int status, const char *code,
                      const char *message);

/* Sets a plain-text reply (copied), e.g. for /metrics. */
void http_reply_text(struct http_resp *resp, int status, const char *ctype,
                     const char *text, size_t len);

/* 503 UNAVAILABLE with Retry-After. */
void http_reply_unavailable(struct http_resp *resp, const char *message);

/* Starts the daemon on cfg's address and port with cfg->workers threads.
 * Returns 0 and stores the bound port in *port, or -1 (logged). */
int http_start(struct server *srv, int *port);

/* Stops accepting new connections (MHD quiesce): the listening socket is
 * closed, so new connection attempts are refused. Requests in flight go on;
 * every reply from now on carries Connection: close, so keep-alive clients
 * do not start new requests here. */
void http_quiesce(struct server *srv);

/* Number of requests being handled right now. */
int http_inflight(const struct server *srv);

/* Stops the daemon and frees it. NULL-safe. */
void http_stop(struct server *srv);

/* Route table, for /metrics labels and the OpenAPI check: each entry is
 * method and pattern ("/order/{order_no}/ship"). count set to its length. */
struct http_route_info { const char *method; const char *pattern; };
const struct http_route_info *http_routes(size_t *count);

#endif
