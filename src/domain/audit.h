/* audit.h - the append-only audit_log: one row per state change an
 * operator makes (settling a refund, sending a dead event again,
 * cancelling a stale order), with the operator credential's name and the
 * HTTP request id. Knows nothing of HTTP. */
#ifndef PAYCALLBACK_AUDIT_H
#define PAYCALLBACK_AUDIT_H

#include "db.h"

/* Appends a row on c, inside the caller's transaction so that the row
 * exists exactly when the change committed. */
enum db_status audit_append(struct db_conn *c, const char *actor, const char *action,
                            const char *subject, const char *detail, const char *request_id);

#endif
