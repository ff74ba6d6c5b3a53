/* handler_util.h - the _or_reply helpers handlers share: borrowing a MySQL
 * connection and turning a failed db status into the right reply. */
#ifndef PAYCALLBACK_HANDLER_UTIL_H
#define PAYCALLBACK_HANDLER_UTIL_H

#include "db.h"

struct server;
struct http_resp;

/* Borrows a pooled connection, or replies 503 UNAVAILABLE (Retry-After)
 * and returns NULL when none frees up within mysql.wait_ms. Release with
 * db_release. */
struct db_conn *db_acquire_or_reply(struct server *srv, struct http_resp *resp);

/* Replies for a db failure: DB_UNAVAILABLE and DB_RETRY -> 503 with
 * Retry-After; anything else -> 500 INTERNAL. */
void reply_db_failure(struct http_resp *resp, enum db_status st);

#endif
