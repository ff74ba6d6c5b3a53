/* outbox.h - the transactional outbox: an event row written in the same
 * transaction as the change it announces, so that an event exists exactly
 * when its change committed. A relay (not built yet) claims and delivers
 * the rows; this module is the one place that knows the outbox table.
 * Knows nothing of HTTP. */
#ifndef PAYCALLBACK_OUTBOX_H
#define PAYCALLBACK_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define OUTBOX_TYPE_MAX    32     /* event_type VARCHAR(32) */
#define OUTBOX_PAYLOAD_MAX 512    /* payloads we write; the column is TEXT */

/* Event types. The table keeps at most one event of a type per order
 * (UNIQUE(event_type, order_no)). */
#define OUTBOX_ORDER_PAID     "order.paid"
#define OUTBOX_ORDER_SHIPPED  "order.shipped"
#define OUTBOX_ORDER_FINISHED "order.finished"
#define OUTBOX_ORDER_CANCELED "order.canceled"

/* One event as the relay will see it. */
struct outbox_event {
    uint64_t id;
    char event_type[OUTBOX_TYPE_MAX + 1];
    char order_no[65];
    char payload[OUTBOX_PAYLOAD_MAX];
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

/* Later, for the relay, in the same style:
 *   enum db_status outbox_claim(struct db_conn *c, const char *worker, int lease_ms,
 *                               struct outbox_event *ev, size_t max, size_t *n);
 *   enum db_status outbox_mark_delivered(struct db_conn *c, uint64_t id);
 * claim takes up to max undelivered events under a lease (so a dead relay's
 * claims come back), mark_delivered sets published_at. */

#endif
