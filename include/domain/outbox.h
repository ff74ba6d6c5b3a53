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
#include "webhook_cfg.h"

#define OUTBOX_TYPE_MAX 32     /* event_type VARCHAR(32) */
#define OUTBOX_PAYLOAD_MAX 512 /* payloads we write; the column is TEXT */

/* Event types. The table keeps at most one event of a type per order
 * and subject (UNIQUE(event_type, order_no, subject)). */
#define OUTBOX_ORDER_PAID "order.paid"
#define OUTBOX_ORDER_SHIPPED "order.shipped"
#define OUTBOX_ORDER_FINISHED "order.finished"
#define OUTBOX_ORDER_CANCELED "order.canceled"
#define OUTBOX_PAYMENT_DOUBLE_CHARGED "payment.double_charged" /* subject: the pay_no */
#define OUTBOX_REFUND_SUCCEEDED "refund.succeeded"             /* subject: the refund_no */
#define OUTBOX_REFUND_FAILED "refund.failed"                   /* subject: the refund_no */

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
    char subject[65]; /* "" for the order itself; a refund's refund_no */
    char payload[OUTBOX_PAYLOAD_MAX];
    char created_at[OUTBOX_TIME_MAX];
    int attempts;     /* failed or made at this endpoint before this claim */
    char currency[4]; /* the order's ISO 4217 code; "" when the order is gone */
};

/* An event's delivery at one endpoint (webhook_delivery), as the operator
 * API shows it. */
struct outbox_delivery {
    char endpoint[WEBHOOK_NAME_MAX + 1];
    int state; /* enum outbox_state */
    int attempts;
    char next_attempt_at[OUTBOX_TIME_MAX];
    char delivered_at[OUTBOX_TIME_MAX]; /* "" until delivered */
    char last_error[OUTBOX_ERROR_MAX];  /* "" when none */
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
    /* Its deliveries, by endpoint name (the first WEBHOOKS_MAX): none
     * before the relay hands it out, nor where no endpoint subscribes. */
    struct outbox_delivery deliveries[WEBHOOKS_MAX];
    size_t ndeliveries;
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

/* outbox_append for an event about one of the order's things (subject,
 * "" for the order itself): an order has at most one event of a type per
 * subject (UNIQUE(event_type, order_no, subject)). A refund's events carry
 * its refund_no, so each partial refund is announced once. */
enum db_status outbox_append_subject(struct db_conn *c, const char *event_type,
                                     const char *order_no, const char *subject,
                                     const char *payload);

/* The event type announcing that an order entered status to (an enum
 * order_status), or NULL for a status that has no event (WAIT_PAY). */
const char *outbox_type_for_status(int to);

/* Hands up to max events written since the last call to the endpoints of
 * eps whose events include their type (one webhook_delivery row each; a
 * disabled endpoint's wait), in one transaction, oldest first; *n gets how
 * many events were handed out. Events another relay is handing out are
 * skipped. An event no endpoint subscribes to is settled as delivered.
 * Nothing is handed out when neps is 0: events then wait in the outbox. */
enum db_status outbox_fanout(struct db_conn *c, const struct webhook_endpoint_cfg *eps, size_t neps,
                             size_t max, size_t *n);

/* Settles up to max handed-out events none of whose deliveries is pending
 * any more: DEAD when one of them is, else DELIVERED. *n gets how many. */
enum db_status outbox_settle(struct db_conn *c, size_t max, uint64_t *n);

/* Claims up to max due deliveries to endpoint for owner (a relay's unique
 * id) under a lease of lease_s seconds and stores their events in evs,
 * oldest first, with the count in *n. Only an order's oldest undelivered
 * event at that endpoint can be claimed, so the events of one order go
 * out in order there, whatever other endpoints do. Runs its own
 * transaction: call it outside one. Safe with any number of relays on one
 * database: a delivery has one unexpired lease at a time. */
enum db_status outbox_claim(struct db_conn *c, const char *endpoint, const char *owner, int lease_s,
                            struct outbox_event *evs, size_t max, size_t *n);

/* One attempt at an endpoint, as the relay records it. */
struct outbox_attempt {
    uint64_t id;         /* the event */
    bool ok;             /* the endpoint acknowledged it (2xx) */
    const char *error;   /* else why not */
    int64_t delay_ms;    /* else when it is due again */
    int max_attempts;    /* the endpoint's; the delivery is DEAD at that many */
    int attempts_before; /* made before this one */
    bool held;           /* out: owner still held the lease, so the record counts */
    bool dead;           /* out: this failure made the delivery DEAD */
};

/* Records n attempts at endpoint by owner in one transaction (one commit
 * for a batch). An acknowledgement marks the delivery DELIVERED only
 * while owner still holds an unexpired lease on it (held); one that came
 * after the lease ran out changes nothing: the delivery is pending again,
 * or another relay has it, and the endpoint sees the event again and
 * dedupes by its id. A failure makes the delivery due again in delay_ms,
 * or DEAD at its max_attempts-th attempt (dead), and leaves the most
 * attempts and the last error on the outbox row, for the operator API. */
enum db_status outbox_record(struct db_conn *c, const char *endpoint, const char *owner,
                             struct outbox_attempt *a, size_t n);

/* Hands back owner's claims on deliveries it will not attempt (graceful stop). */
enum db_status outbox_release(struct db_conn *c, const char *owner);

/* Deliveries pending at endpoint, into *n. */
enum db_status outbox_waiting(struct db_conn *c, const char *endpoint, int64_t *n);

/* Makes a DEAD event pending again with its attempts reset, due now, its
 * dead deliveries too (the endpoints that had it keep it), in one
 * transaction with its audit_log row (actor: the operator key's name).
 * *changed is false, and nothing is written, when id is not a dead event
 * (unknown, pending, or delivered). Runs its own transaction. */
enum db_status outbox_retry(struct db_conn *c, uint64_t id, const char *actor,
                            const char *request_id, bool *changed);

/* Sends event id again to each endpoint of eps whose events include its
 * type, delivered or dead there before (or never handed to it): the
 * delivery is pending again with its attempts reset, due now, in one
 * transaction with an audit_log row (actor: the operator key's name).
 * *found is false for an unknown id; *sent counts the endpoints (0 when
 * none subscribes to the type: nothing is written). Runs its own
 * transaction. */
enum db_status outbox_replay(struct db_conn *c, uint64_t id, const struct webhook_endpoint_cfg *eps,
                             size_t neps, const char *actor, const char *request_id, bool *found,
                             size_t *sent);

/* What a replay since a time takes: events written at or after since
 * ("YYYY-MM-DD HH:MM:SS", UTC), with ids above after, of the types in the
 * types bit set (webhook_event_bit), at most max of them (the bound of
 * one request), to the endpoints of eps that subscribe to each. */
struct outbox_replay_since {
    const char *since;
    uint64_t after;
    unsigned types;
    size_t max;
    const struct webhook_endpoint_cfg *eps;
    size_t neps;
};

/* Replays as outbox_replay every event q selects, by id, reading at most
 * q->max events, in one transaction with one audit_log row; *n gets the
 * events sent again, *read those read and *last the id of the last one
 * read (where a next request goes on, as its after; q->after when none
 * was left). */
enum db_status outbox_replay_since(struct db_conn *c, const struct outbox_replay_since *q,
                                   const char *actor, const char *request_id, size_t *n,
                                   size_t *read, uint64_t *last);

/* Lists up to max events in state with ids above after_id, by id. */
enum db_status outbox_list(struct db_conn *c, int state, uint64_t after_id,
                           struct outbox_entry *out, size_t max, size_t *n);

/* What an operator listing selects: events in state (by id), or with
 * order_no the order's events (state < 0: in any state), or with endpoint
 * the events whose delivery at that endpoint is in state. */
struct outbox_filter {
    int state;
    const char *order_no; /* NULL: any order */
    const char *endpoint; /* NULL: by the event's own state */
};

/* Lists up to max events f selects with ids above after_id, by id, each
 * with its deliveries. */
enum db_status outbox_list_filtered(struct db_conn *c, const struct outbox_filter *f,
                                    uint64_t after_id, struct outbox_entry *out, size_t max,
                                    size_t *n);

/* Reads e's deliveries (by e->id) into e->deliveries. */
enum db_status outbox_deliveries(struct db_conn *c, struct outbox_entry *e);

/* One event with its payload; *found false when there is none. */
enum db_status outbox_get(struct db_conn *c, uint64_t id, struct outbox_entry *out, bool *found);

/* Counts pending and dead events, the oldest pending event's age, and the
 * pending events older than lag_s. */
enum db_status outbox_stats(struct db_conn *c, int lag_s, struct outbox_stats *out);

/* "PENDING", "DELIVERED", "DEAD" or "UNKNOWN"; and back (-1 unknown). */
const char *outbox_state_name(int state);
int outbox_state_from_name(const char *name);

/* ---- routed (route.h): the operator API's reads and changes ---------------- */

/* Lists up to limit events f selects across the shards, each with its
 * deliveries, by shard (in configured order) then id: from shard index
 * first, after row id after there, then the next shards from their start,
 * until limit are found; an order's events from its own shard only. Each
 * item's shard is set. *n gets the count. ROUTE_OK (sc->missed names the
 * shards that did not answer), ROUTE_UNAVAILABLE or ROUTE_FAILED. */
enum route_result outbox_route_list(const struct route *rt, const struct outbox_filter *f,
                                    size_t first, uint64_t after, struct outbox_entry *items,
                                    size_t limit, size_t *n, struct route_scan *sc);

/* outbox_get of row id on shard sh, with its deliveries (*e's shard set
 * when found). ROUTE_OK,
 * ROUTE_UNAVAILABLE or ROUTE_FAILED with *fail set. */
enum route_result outbox_route_get(const struct route *rt, const struct shard *sh, uint64_t id,
                                   struct outbox_entry *e, bool *found, struct route_failure *fail);

/* outbox_retry of row id on shard sh by actor, then the event as it is
 * afterwards in *e (*found false when there is none). */
enum route_result outbox_route_retry(const struct route *rt, const struct shard *sh, uint64_t id,
                                     const char *actor, bool *changed, struct outbox_entry *e,
                                     bool *found, struct route_failure *fail);

/* outbox_replay of row id on shard sh by actor. ROUTE_OK, ROUTE_UNAVAILABLE
 * or ROUTE_FAILED with *fail set. */
enum route_result outbox_route_replay(const struct route *rt, const struct shard *sh, uint64_t id,
                                      const struct webhook_endpoint_cfg *eps, size_t neps,
                                      const char *actor, bool *found, size_t *sent,
                                      struct route_failure *fail);

/* outbox_replay_since over the shards, from shard index first (after row
 * q->after there), then the next shards from their start, until q->max
 * events were read. *n gets the count; *last_shard and *last where
 * the reading stopped; *more whether the bound was reached (a next request
 * goes on after *last of *last_shard). ROUTE_OK (sc->missed names the
 * shards that did not answer), ROUTE_UNAVAILABLE or ROUTE_FAILED. */
enum route_result outbox_route_replay_since(const struct route *rt,
                                            const struct outbox_replay_since *q, size_t first,
                                            const char *actor, size_t *n, size_t *last_shard,
                                            uint64_t *last, bool *more, struct route_scan *sc);

#endif
