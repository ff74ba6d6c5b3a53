/* outbox.c - appends events to the transactional outbox. Called from
 * inside the payment and status-change transactions; delivery is a relay's
 * job, not this file's. */
#include "outbox.h"

#include "order_state.h"

enum db_status outbox_append(struct db_conn *c, const char *event_type, const char *order_no,
                             const char *payload)
{
    const char *p[] = { event_type, order_no, payload };
    enum db_status st = db_exec(c, ST_OUTBOX_INSERT, p, 3, NULL);

    if (st == DB_DUPLICATE)
        return db_fail(c, "outbox: order %s already has a %s event", order_no, event_type);
    return st;
}

const char *outbox_type_for_status(int to)
{
    switch (to) {
    case ORDER_PAID:
        return OUTBOX_ORDER_PAID;
    case ORDER_SHIPPED:
        return OUTBOX_ORDER_SHIPPED;
    case ORDER_FINISHED:
        return OUTBOX_ORDER_FINISHED;
    case ORDER_CANCELED:
        return OUTBOX_ORDER_CANCELED;
    default:
        return NULL;
    }
}
