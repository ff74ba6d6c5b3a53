/* http.h - what a handler sees of HTTP: the request, the reply it fills
 * and the helpers that fill it (http.c). Never MHD's types. The server is
 * http_server.h, the routing http_route.h. */
#ifndef PAYCALLBACK_HTTP_H
#define PAYCALLBACK_HTTP_H

#include <stddef.h>

#include "netaddr.h"

struct server;
struct unitquota;
struct cJSON;

#define HTTP_PARAM_MAX \
    66 /* one {param} segment: 64 chars, one more so that a
                                     longer one stays too long, and the NUL */
#define HTTP_REQ_ID_MAX 65
#define HTTP_CALLER_MAX 33 /* an operator key's name (auth.keys) and the NUL */

/* One request as a handler sees it. Borrowed for the handler call only. */
struct keyring;

struct http_req {
    const char *method;
    const char *path;
    const char *body; /* NUL-terminated; body_len excludes NUL */
    size_t body_len;
    char param[HTTP_PARAM_MAX]; /* the {param} segment of the route, if any */
    char request_id[HTTP_REQ_ID_MAX];
    char caller[HTTP_CALLER_MAX]; /* name of the operator key that authenticated the
                                     request (operator routes), else "" */
    unsigned scopes;              /* that key's CFG_SCOPE_* flags, else 0 */
    const struct keyring *keys;   /* the secrets and keys of this request, taken when its
                                     headers arrived: a reload never changes them mid-way */
    struct netaddr client;        /* the address the request counts against (the peer, or
                                     the client a trusted proxy names; IPv6 by its
                                     http.ipv6_prefix network) */
    struct unitquota *units;      /* the units each client address reserved (thread-safe) */
    void *conn;                   /* opaque: for http_req_header only */
};

/* What a handler's reply means to whoever ran it (the token restore, an
 * idempotency store): not read back from the HTTP status. */
enum http_outcome {
    HTTP_OUT_NONE,     /* nothing answered yet */
    HTTP_OUT_DEFINITE, /* the answer stands: repeating the request changes nothing */
    HTTP_OUT_RETRYABLE /* a 503 with Retry-After: nothing was done, try again */
};

/* The reply a handler fills. The server owns and frees it. Only the reply
 * helpers below (http_reply_*) and the *_or_reply helpers built on them
 * write its fields; everyone else reads them through http_resp_*. */
struct http_resp {
    int status;
    char *body;                   /* malloc'd JSON text, or NULL */
    const char *content_type;     /* NULL = application/json */
    int retry_after_s;            /* > 0 adds Retry-After */
    const char *code;             /* error code of the reply, for logs */
    const char *www_authenticate; /* static text; non-NULL adds WWW-Authenticate */
    enum http_outcome outcome;
    int replayed;         /* 1: a stored answer, sent with Idempotent-Replayed: true */
    char shard_outage[4]; /* non-empty: the shard id whose outage this 503 is, sent
                                     as X-Shard-Outage (a proxy must not retry it elsewhere) */
    /* A document's headers (http_reply_document); NULL for every API
     * answer, which is sent with Cache-Control: no-store and the policy
     * HTTP_CSP_API. Static text or the document's own, living as long as
     * the server. */
    const char *cache_control;
    const char *etag;
    const char *csp;
};

/* The Content-Security-Policy of every answer that is not a document:
 * JSON loads nothing and is framed by nobody. */
#define HTTP_CSP_API "default-src 'none'; frame-ancestors 'none'"

typedef void (*http_handler)(struct server *srv, const struct http_req *req,
                             struct http_resp *resp);

/* Value of a query-string parameter (percent-decoded), or NULL. */
const char *http_req_query(const struct http_req *req, const char *name);

/* Value of a request header (case-insensitive name), or NULL. */
const char *http_req_header(const struct http_req *req, const char *name);

/* Sets status and body from obj (serialised, not freed: the caller still
 * owns obj); a definite answer. On serialisation failure sends 500. */
void http_reply_json(struct http_resp *resp, int status, const struct cJSON *obj);

/* Sets a {"code","message"} error reply; a definite answer. */
void http_reply_error(struct http_resp *resp, int status, const char *code, const char *message);

/* Adds WWW-Authenticate: challenge (a static string) to a 401 reply. */
void http_reply_challenge(struct http_resp *resp, const char *challenge);

/* Sets a plain-text reply (copied), e.g. for /metrics; a definite answer. */
void http_reply_text(struct http_resp *resp, int status, const char *ctype, const char *text,
                     size_t len);

/* A static document: status 200 with the body (len bytes, copied; text
 * without a NUL), its Content-Type, ETag, Cache-Control and
 * Content-Security-Policy (borrowed: static, or living as long as the
 * server). With not_modified, 304 and no body. */
void http_reply_document(struct http_resp *resp, const char *ctype, const char *body, size_t len,
                         const char *etag, const char *cache_control, const char *csp,
                         int not_modified);

/* 503 {"code":code,"message"} with Retry-After: retry_after_s (>= 1); a
 * retryable answer. code must be a string literal (it is kept for logs). */
void http_reply_retry(struct http_resp *resp, const char *code, const char *message,
                      int retry_after_s);

/* 503 with a plain-text body (a gateway's own "try again" answer) and
 * Retry-After: retry_after_s (>= 1); a retryable answer. code is kept for
 * logs and must be a string literal. */
void http_reply_text_retry(struct http_resp *resp, const char *ctype, const char *text, size_t len,
                           const char *code, int retry_after_s);

/* 503 UNAVAILABLE with Retry-After: 1; a retryable answer. */
void http_reply_unavailable(struct http_resp *resp, const char *message);

/* 503 UNAVAILABLE caused by one shard's database (shard: its id as text),
 * with Retry-After: retry_after_s, "shard_outage":"<id>" in the body and
 * the header X-Shard-Outage: <id>: every instance would give the same
 * answer now, so a proxy must not retry it on another one. Retryable. */
void http_reply_shard_outage(struct http_resp *resp, const char *shard, const char *message,
                             int retry_after_s);

/* Adds X-Shard-Outage: shard to the 503 just set in another format (a
 * gateway's own answer). Nothing for another status. */
void http_mark_shard_outage(struct http_resp *resp, const char *shard);

/* 503 with obj as the body (an error body plus whatever the caller adds,
 * as /readyz does), code UNAVAILABLE and Retry-After: 1; retryable. */
void http_reply_json_unavailable(struct http_resp *resp, const struct cJSON *obj);

/* 409 {"code":code,"message"} with Retry-After: retry_after_s: the same
 * request is still being served by an earlier attempt; a retryable answer
 * (nothing was done by this one). code must be a string literal. */
void http_reply_in_progress(struct http_resp *resp, const char *code, const char *message,
                            int retry_after_s);

/* Sends a stored answer again, byte for byte (body copied; len bytes), as
 * JSON with the header Idempotent-Replayed: true; a definite answer. */
void http_reply_replay(struct http_resp *resp, int status, const char *body, size_t len);

/* 429 {"code":code,"message"} with Retry-After: retry_after_s (>= 1): the
 * client is past its rate; a retryable answer (nothing was done). code
 * must be a string literal. */
void http_reply_rate_limited(struct http_resp *resp, const char *code, const char *message,
                             int retry_after_s);

/* True when the reply is retryable (a 503, or a 409 in progress): nothing
 * was done, and the same request may be sent again. */
int http_resp_retryable(const struct http_resp *resp);

#endif
