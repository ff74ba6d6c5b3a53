/* handler_util.h - the _or_reply helpers handlers share: borrowing a MySQL
 * connection, and the one log line plus reply of a failed domain call. */
#ifndef PAYCALLBACK_HANDLER_UTIL_H
#define PAYCALLBACK_HANDLER_UTIL_H

#include <stdbool.h>

#include "db.h"

struct server;
struct http_req;
struct http_resp;

/* Borrows a pooled connection, or replies 503 UNAVAILABLE (Retry-After)
 * and returns NULL when none frees up within mysql.wait_ms. Release with
 * db_release. */
struct db_conn *db_acquire_or_reply(struct server *srv, struct http_resp *resp);

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
