/* common.h - the _or_reply helpers handlers share: borrowing a MySQL
 * connection, the one log line plus reply of a failed domain call, and the
 * Idempotency-Key steps around a domain call (common.c, idempotency.c). */
#ifndef PAYCALLBACK_COMMON_H
#define PAYCALLBACK_COMMON_H

#include <stdbool.h>

#include "db.h"
#include "idem.h"
#include "orders.h"

struct server;
struct http_req;
struct http_resp;

/* The shard order_no lives on, or NULL after replying 404 ORDER_NOT_FOUND
 * (its number names no shard of this service: nothing may be written). */
struct shard;
const struct shard *order_shard_or_reply(struct server *srv, const char *order_no,
                                         struct http_resp *resp);

/* db_acquire_or_reply on one shard's pool; a timeout also counts in the
 * shard's paycallback_shard_unavailable_total. Release with
 * db_release(sh->pool, c). */
struct db_conn *shard_acquire_or_reply(struct server *srv, const struct shard *sh,
                                       struct http_resp *resp);

/* Logs the failure a domain call left on c (db_errno, db_errstr) as one
 * line with what failed and the request id: a warning when retryable (MySQL
 * unreachable or busy), an error otherwise. */
void log_db_failure(const struct http_req *req, const struct db_conn *c, const char *what,
                    bool retryable);

/* log_db_failure, then the reply: retryable -> 503 UNAVAILABLE with
 * Retry-After, otherwise 500 INTERNAL. */
void reply_db_failure(const struct http_req *req, struct http_resp *resp, const struct db_conn *c,
                      const char *what, bool retryable);

#define IDEM_HEADER        "Idempotency-Key"
#define IDEM_BUSY_RETRY_S  1      /* Retry-After of a 409 while the first attempt runs */

/* Renders the answer of a domain result into resp; for the Idempotency-Key
 * hook, it must render exactly what the handler sends. */
typedef void (*idem_render_fn)(struct http_resp *resp, const void *data);

/* One request's Idempotency-Key handling. Zero it, then idem_key_or_reply. */
struct idem_req {
    bool on;                      /* the request carries Idempotency-Key */
    const struct shard *shard;    /* where its record lives: set before idem_begin_or_reply
                                     (a transition: the order's shard), or NULL for
                                     shard_place(scope) */
    bool owned;                   /* this attempt holds the key's claim */
    bool stored;                  /* its answer committed with the effect */
    bool lost;                    /* a repeat took the claim over */
    struct idem_claim claim;
    struct orders_hook hook;
    idem_render_fn render;
    struct http_resp *resp;
};

/* Reads the Idempotency-Key header into ir (ir->on false when there is
 * none). 0, or -1 after a 400 for a malformed key. */
int idem_key_or_reply(const struct http_req *req, struct idem_req *ir, struct http_resp *resp);

/* Claims the key in scope (the caller: "key:<credential>" or
 * "user:<user_id>") for this request's fingerprint, on ir->shard (or
 * shard_place(scope) when that is NULL; one database: its only one; a 503
 * from that shard counts as its own). 0: run the request
 * (then idem_end). -1 after replying: the stored answer again (replay), 422
 * IDEMPOTENCY_KEY_MISMATCH, 409 IDEMPOTENCY_KEY_IN_USE with Retry-After
 * past idempotency.wait_ms, or 503/500 when MySQL fails. */
int idem_begin_or_reply(struct server *srv, const struct http_req *req, const char *scope,
                        struct idem_req *ir, struct http_resp *resp);

/* The orders hook that renders the ORDERS_OK answer with render and stores
 * it with the effect; NULL when ir holds no claim. */
const struct orders_hook *idem_hook(struct idem_req *ir, struct http_resp *resp,
                                    idem_render_fn render);

/* After the request, when it held a claim: a definite answer below 500 not
 * yet stored is stored now; a retryable or 5xx answer gives the key back;
 * when a repeat took the claim over, resp is replaced by that repeat's
 * answer (waiting for it as a repeat would). c is a connection of
 * ir->shard's pool, or NULL (one is borrowed: the caller then holds no
 * other, so that no thread waits for one pool while holding another). */
void idem_end(struct server *srv, const struct http_req *req, struct idem_req *ir,
              struct db_conn *c, struct http_resp *resp);

#endif
