/* token_store.h - where anti-resubmit tokens live: Redis normally, the
 * MySQL table idem_token while Redis is unreachable. The two stores sit
 * behind one interface (the project's one vtable); token_store_issue,
 * _consume and _restore are the policy that picks between them.
 * Knows nothing of HTTP. */
#ifndef PAYCALLBACK_TOKEN_STORE_H
#define PAYCALLBACK_TOKEN_STORE_H

#include <stdint.h>

#include "ids.h"

struct server;
struct db_conn;
struct shard;

enum token_status {
    TOKEN_OK,
    TOKEN_USED, /* unknown, already used, or expired */
    TOKEN_DOWN, /* this store cannot be reached: use the other */
    TOKEN_ERROR /* the store failed: answer 503 */
};

/* What a store works with: the server context and a MySQL connection that
 * is borrowed on first use. Sharded, a token's MySQL row lives on
 * shard_place(token), so conn may come from any shard's pool. The
 * connection is given back before token_store_issue, _consume and
 * _restore return: a caller never holds one. Zero it but for srv; one
 * thread at a time. */
struct token_ctx {
    struct server *srv;
    struct db_conn *conn;      /* NULL until a MySQL call needs one */
    const struct shard *shard; /* the shard conn came from */
};

/* One token store. self is a struct token_ctx *. */
struct token_store {
    const char *name; /* "redis" or "mysql", for logs */
    /* Stores a new token for ttl_ms. TOKEN_OK, TOKEN_DOWN or TOKEN_ERROR. */
    enum token_status (*issue)(void *self, const char *token, int64_t ttl_ms);
    /* Deletes the token atomically. TOKEN_OK only for the first use of an
     * unexpired token, with what it had left in *remaining_ms. */
    enum token_status (*consume)(void *self, const char *token, int64_t *remaining_ms);
    /* Puts a consumed token back for remaining_ms (> 0). */
    enum token_status (*restore)(void *self, const char *token, int64_t remaining_ms);
};

extern const struct token_store token_store_redis;
extern const struct token_store token_store_mysql;

/* A consumed token: enough to put it back where it came from. */
struct token_receipt {
    const struct token_store *store; /* NULL: nothing was consumed */
    char token[IDS_TOKEN_BUF];
    int64_t remaining_ms;
};

/* Draws a new token into token and stores it for redis.token_ttl_s: in
 * Redis, or in MySQL when Redis cannot take it. *where (may be NULL) names
 * the store. TOKEN_OK or TOKEN_ERROR. */
enum token_status token_store_issue(struct token_ctx *ctx, char token[IDS_TOKEN_BUF],
                                    const struct token_store **where);

/* Consumes token (32 lowercase hex, already validated). Redis first; when
 * Redis does not know it, MySQL too, since a token issued while Redis was
 * down lives there; when Redis is down, MySQL alone. TOKEN_OK (first use:
 * rcpt filled), TOKEN_USED (unknown, used or expired) or TOKEN_ERROR. */
enum token_status token_store_consume(struct token_ctx *ctx, const char *token,
                                      struct token_receipt *rcpt);

/* Puts a consumed token back, after a failure that was not the client's
 * (a 503), so that its retry with the same token is not REPEAT_SUBMIT.
 * A Redis token goes back with the time it had left, or into MySQL when
 * Redis has gone meanwhile; a MySQL token gets a full TTL (the DELETE
 * that consumed it could not say what was left). Failures are logged.
 * NULL-safe in rcpt->store. */
void token_store_restore(struct token_ctx *ctx, const struct token_receipt *rcpt);

#endif
