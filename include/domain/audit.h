/* audit.h - the append-only audit_log: one row per state change an
 * operator key makes (ship, finish and cancel through the order routes,
 * settling a refund, sending a dead event again, cancelling stale orders)
 * or the service makes on its own (an order closed by the payment window,
 * actor "service"), with the credential's name and the HTTP request id;
 * and the listing the operator API reads it with. Knows nothing of HTTP. */
#ifndef PAYCALLBACK_AUDIT_H
#define PAYCALLBACK_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "route.h"

#define AUDIT_ACTOR_MAX 64 /* audit_log.actor VARCHAR(64) */
#define AUDIT_ACTION_MAX 32
#define AUDIT_SUBJECT_MAX 140
#define AUDIT_DETAIL_MAX 255
#define AUDIT_REQUEST_ID_MAX 64
#define AUDIT_TIME_MAX 32 /* "2026-12-02T16:31:10.123000Z" and the NUL */

/* Appends a row on c, inside the caller's transaction so that the row
 * exists exactly when the change committed. */
enum db_status audit_append(struct db_conn *c, const char *actor, const char *action,
                            const char *subject, const char *detail, const char *request_id);

/* audit_append on its own (autocommit), retried like any statement, for
 * a row that follows a change committed elsewhere. */
enum db_status audit_append_retry(struct db_conn *c, const char *actor, const char *action,
                                  const char *subject, const char *detail, const char *request_id);

/* One row of audit_log. */
struct audit_entry {
    uint64_t id;
    char actor[AUDIT_ACTOR_MAX + 1];
    char action[AUDIT_ACTION_MAX + 1];
    char subject[AUDIT_SUBJECT_MAX + 1];
    char detail[AUDIT_DETAIL_MAX + 1];
    char request_id[AUDIT_REQUEST_ID_MAX + 1];
    char created_at[AUDIT_TIME_MAX];
    size_t shard; /* index of the shard it was read from (set by the caller) */
};

/* Equality filters of a listing; NULL matches anything. */
struct audit_filter {
    const char *actor;
    const char *action;
    const char *subject;
};

/* Lists up to max rows with an id above after that match f, by id, into
 * out (*n of them). DB_OK or the statement's status. */
enum db_status audit_list(struct db_conn *c, const struct audit_filter *f, uint64_t after,
                          struct audit_entry *out, size_t max, size_t *n);

/* audit_list over every shard, from shard index first (after the row
 * after there) on, shard by shard, until limit rows; each row tagged with
 * its shard. *n rows; sc says which shards did not answer. */
enum route_result audit_route_list(const struct route *rt, const struct audit_filter *f,
                                   size_t first, uint64_t after, struct audit_entry *items,
                                   size_t limit, size_t *n, struct route_scan *sc);

#endif
