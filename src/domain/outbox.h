/* outbox.h - the transactional outbox: an event row written in the same
 * transaction as the change it announces, so that an event exists exactly
 * when its change committed. A relay (not built yet) claims and delivers
 * the rows; this module is the one place that knows the outbox table.
 * Knows nothing of HTTP. */
#ifndef PAYCALLBACK_OUTBOX_H
#define PAYCALLBACK_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "route.h"

#define OUTBOX_TYPE_MAX 32     /* event_type VARCHAR(32) */
#define OUTBOX_PAYLOAD_MAX 512 /* payloads we write; the column is TEXT */

/* Event types. The table keeps at most one event of a type per order
 * (UNIQUE(event_type, order_no)). */
#define OUTBOX_ORDER_PAID "order.paid"
#define OUTBOX_ORDER_SHIPPED "order.shipped"
#define OUTBOX_ORDER_FINISHED "order.finished"
#define OUTBOX_ORDER_CANCELED "order.canceled"

/* Delivery state of an event (outbox.state). */
enum outbox_state {
    OUTBOX_PENDING = 0,
    OUTBOX_DELIVERED = 1,
    OUTBOX_DEAD = 2 /* attempts ran out; an operator may send it again */
};

#define OUTBOX_TIME_MAX 32   /* "2026-12-02T16:31:10.123000Z" and the NUL */
#define OUTBOX_OWNER_MAX 40  /* lease owner id, NUL included */
#define OUTBOX_ERROR_MAX 200 /* outbox.last_error */

/* One event as the relay sees it. */
struct outbox_event {
    uint64_t id;
    char event_type[OUTBOX_TYPE_MAX + 1];
    char order_no[65];
    char payload[OUTBOX_PAYLOAD_MAX];
    char created_at[OUTBOX_TIME_MAX];
    int attempts; /* failed or made before this claim */
};

/* An event as the operator API lists it. */
struct outbox_entry {
    uint64_t id;
    char event_type[OUTBOX_TYPE_MAX + 1];
    char order_no[65];
    int state; /* enum outbox_state */
    int attempts;
    char created_at[OUTBOX_TIME_MAX];
    char next_attempt_at[OUTBOX_TIME_MAX];
    char published_at[OUTBOX_TIME_MAX]; /* "" until delivered */
    char last_error[OUTBOX_ERROR_MAX];  /* "" when none */
    char payload[OUTBOX_PAYLOAD_MAX];   /* outbox_get only */
    size_t shard; /* index in the shard set it was read from (set by the caller) */
};

/* What is waiting, for /metrics and reconciliation. */
struct outbox_stats {
    int64_t pending;
    int64_t dead;
    int64_t oldest_pending_ms; /* age of the oldest pending event, 0 for none */
    int64_t lagging;           /* pending events older than the lag bound */
};

/* Appends an event on c, which must be inside a db_txn body (the event
 * commits or rolls back with the change). payload is JSON text. Returns
 * DB_OK, DB_ERROR when the order already has an event of this type (the
 * table forbids a second one: an invariant is broken, refuse rather than
 * guess; the detail is in db_errstr), or the statement's failure status. */
enum db_status outbox_append(struct db_conn *c, const char *event_type, const char *order_no,
                             const char *payload);

/* The event type announcing that an order entered status to (an enum
 * order_status), or NULL for a status that has no event (WAIT_PAY). */
const char *outbox_type_for_status(int to);

/* Claims up to max due events for owner (a relay's unique id) under a
 * lease of lease_s seconds and stores them in evs, oldest first, with the
 * count in *n. Only an order's oldest undelivered event can be claimed, so
 * the events of one order go out in order. Runs its own transaction:
 * call it outside one. Safe with any number of relays on one database: a
 * row has one unexpired lease at a time. */
enum db_status outbox_claim(struct db_conn *c, const char *owner, int lease_s,
                            struct outbox_event *evs, size_t max, size_t *n);

/* The shop acknowledged event id: DELIVERED, lease dropped, only while
 * owner still holds an unexpired lease on it; *held says whether it did.
 * A lease that ran out changes nothing (DB_OK, *held false): the event
 * is pending again, or another relay has claimed it, and the shop sees
 * it again and dedupes. */
enum db_status outbox_mark_delivered(struct db_conn *c, uint64_t id, const char *owner, bool *held);

/* An attempt failed with error: the event becomes due again in delay_ms,
 * or DEAD when this was attempt number max_attempts (attempts_before + 1
 * >= max_attempts; *dead says which). */
enum db_status outbox_mark_failed(struct db_conn *c, uint64_t id, const char *owner,
                                  const char *error, int64_t delay_ms, int max_attempts,
                                  int attempts_before, bool *dead);

/* Hands back owner's claims on events it will not attempt (graceful stop). */
enum db_status outbox_release(struct db_conn *c, const char *owner);

/* Makes a DEAD event pending again with its attempts reset, due now, in
 * one transaction with its audit_log row (actor: the operator key's name).
 * *changed is false, and nothing is written, when id is not a dead event
 * (unknown, pending, or delivered). Runs its own transaction. */
enum db_status outbox_retry(struct db_conn *c, uint64_t id, const char *actor,
                            const char *request_id, bool *changed);

/* Lists up to max events in state with ids above after_id, by id. */
enum db_status outbox_list(struct db_conn *c, int state, uint64_t after_id,
                           struct outbox_entry *out, size_t max, size_t *n);

/* One event with its payload; *found false when there is none. */
enum db_status outbox_get(struct db_conn *c, uint64_t id, struct outbox_entry *out, bool *found);

/* Counts pending and dead events, the oldest pending event's age, and the
 * pending events older than lag_s. */
enum db_status outbox_stats(struct db_conn *c, int lag_s, struct outbox_stats *out);

/* "PENDING", "DELIVERED", "DEAD" or "UNKNOWN"; and back (-1 unknown). */
const char *outbox_state_name(int state);
int outbox_state_from_name(const char *name);

/* ---- routed (route.h): the operator API's reads and changes ---------------- */

/* Lists up to limit events in state across the shards, by shard (in
 * configured order) then id: from shard index first, after row id after
 * there, then the next shards from their start, until limit are found.
 * Each item's shard is set. *n gets the count. ROUTE_OK (sc->missed names
 * the shards that did not answer), ROUTE_UNAVAILABLE or ROUTE_FAILED. */
enum route_result outbox_route_list(const struct route *rt, int state, size_t first, uint64_t after,
                                    struct outbox_entry *items, size_t limit, size_t *n,
                                    struct route_scan *sc);

/* outbox_get of row id on shard sh (*e's shard set when found). ROUTE_OK,
 * ROUTE_UNAVAILABLE or ROUTE_FAILED with *fail set. */
enum route_result outbox_route_get(const struct route *rt, const struct shard *sh, uint64_t id,
                                   struct outbox_entry *e, bool *found, struct route_failure *fail);

/* outbox_retry of row id on shard sh by actor, then the event as it is
 * afterwards in *e (*found false when there is none). */
enum route_result outbox_route_retry(const struct route *rt, const struct shard *sh, uint64_t id,
                                     const char *actor, bool *changed, struct outbox_entry *e,
                                     bool *found, struct route_failure *fail);

#endif
