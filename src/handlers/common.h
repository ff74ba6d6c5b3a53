/* common.h - the _or_reply helpers handlers share: borrowing a MySQL
 * connection and the one log line plus reply of a failed domain call. */
#ifndef PAYCALLBACK_COMMON_H
#define PAYCALLBACK_COMMON_H

#include <stdbool.h>

#include "db.h"

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

/* Logs a routed call's failure (route_log_failure) and replies: a pool's
 * own wait is 503 "database busy", another retryable failure 503
 * UNAVAILABLE, anything else 500 INTERNAL. All with Retry-After on 503. */
struct route_failure;
void reply_route_failure(const struct http_req *req, struct http_resp *resp,
                         const struct route_failure *f);

/* Logs the failure a domain call left on c (db_errno, db_errstr) as one
 * line with what failed and the request id: a warning when retryable (MySQL
 * unreachable or busy), an error otherwise. */
void log_db_failure(const struct http_req *req, const struct db_conn *c, const char *what,
                    bool retryable);

/* log_db_failure, then the reply: retryable -> 503 UNAVAILABLE with
 * Retry-After, otherwise 500 INTERNAL. */
void reply_db_failure(const struct http_req *req, struct http_resp *resp, const struct db_conn *c,
                      const char *what, bool retryable);

#endif
