/* auth.h - operator credentials: "Authorization: Bearer <key>" checked
 * against the named keys of auth.keys in constant time. The operator
 * routes (order reads and transitions, /metrics) require one; callbacks
 * stay signed and the shopper's token and order calls stay token-based.
 * auth_check is pure; auth_require_or_reply writes the 401. */
#ifndef PAYCALLBACK_AUTH_H
#define PAYCALLBACK_AUTH_H

struct config;
struct http_req;
struct http_resp;

enum auth_status {
    AUTH_OK,
    AUTH_MISSING,    /* no Authorization header */
    AUTH_MALFORMED,  /* not "Bearer <token>" */
    AUTH_UNKNOWN_KEY /* a token that is no configured key */
};

/* Checks the value of an Authorization header (NULL when absent). On
 * AUTH_OK, *name points at the matching key's name (borrowed from cfg);
 * otherwise it is NULL. The token is compared with every configured key,
 * each over the key field's full size with CRYPTO_memcmp, and the match
 * is selected without a branch: the time taken does not depend on which
 * key matched, nor on how much of one did. Thread-safe. */
enum auth_status auth_check(const struct config *cfg, const char *authorization, const char **name);

/* Human-readable reason for a status, for the 401 message. */
const char *auth_status_str(enum auth_status st);

/* The guard of the operator routes (app/router.c), run before the handler:
 * on success copies the caller's key name into req->caller and returns 0;
 * otherwise replies 401 UNAUTHORIZED with WWW-Authenticate: Bearer and
 * returns -1. */
int auth_require_or_reply(const struct config *cfg, struct http_req *req, struct http_resp *resp);

/* After auth_require_or_reply: 0 when the caller's key holds scope (one
 * CFG_SCOPE_* flag; 0 needs none); otherwise replies 403 FORBIDDEN naming
 * the scope and returns -1. */
int auth_scope_or_reply(const struct http_req *req, unsigned scope, struct http_resp *resp);

#endif
