/* order_state.h - every status the service stores, in C and in the SQL
 * parameters alike: the order state machine (the one transition table every
 * status change consults before any SQL) and the statuses of a payment
 * record. Pure; safe from any thread. */
#ifndef PAYCALLBACK_ORDER_STATE_H
#define PAYCALLBACK_ORDER_STATE_H

#include <stdbool.h>

enum order_status {
    ORDER_WAIT_PAY = 1,
    ORDER_PAID = 2,
    ORDER_SHIPPED = 3,
    ORDER_FINISHED = 4,
    ORDER_CANCELED = 9
};

/* payment_record.status (what the payment is now) and .outcome (what its
 * first callback answered; never changes). */
enum payment_status {
    PAYMENT_PAID = 1,
    PAYMENT_REFUND_REQUIRED = 2,
    PAYMENT_REFUND_SETTLED = 3 /* an operator refunded the double charge */
};

/* idem_key.state: an Idempotency-Key whose first request is running, or
 * whose answer is stored. */
enum idem_state {
    IDEM_STATE_RUNNING = 1,
    IDEM_STATE_DONE = 2
};

/* True when code is one of the five statuses above. */
bool order_state_valid(int code);

/* True when from -> to is an allowed transition:
 * 1->2, 1->9, 2->3, 2->9, 3->4. Everything else (including from == to,
 * and any unknown code) is false. */
bool order_state_allowed(int from, int to);

/* True for FINISHED and CANCELED. */
bool order_state_final(int code);

/* True when code is a status with no allowed move out of it in the table
 * above: an order in it keeps it forever, so whatever reports it may be
 * remembered (the replay cache, replays.h). Derived from the table, so a
 * move added out of a status stops it being terminal. Every status change
 * of an order consults the table first (see above). */
bool order_state_terminal(int code);

/* "WAIT_PAY", "PAID", ... or "UNKNOWN". Never NULL. */
const char *order_state_name(int code);

/* The code for a name, or -1. */
int order_state_from_name(const char *name);

/* True when code is a payment_status. */
bool payment_status_valid(int code);

/* "PAID", "REFUND_REQUIRED", "REFUND_SETTLED" or "UNKNOWN". Never NULL. */
const char *payment_status_name(int code);

#endif
