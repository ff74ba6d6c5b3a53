/* expiry.h - the payment window: a WAIT_PAY order older than
 * reconcile.payment_window_s is closed (CANCELED through the state
 * machine: its stock returned, an order.canceled event with reason
 * "payment_window_expired", an audit row by the actor "service"), once no
 * gateway has a payment for it. Where query endpoints are configured
 * (query.h), every one of them is asked first and must answer NOTPAY,
 * CLOSED or NOT_FOUND; a PAID answer pays the order instead, and a
 * failed answer leaves the order open for the next pass (counted as
 * deferred). Without an endpoint the window alone closes the order.
 *
 * A payment that arrives after the close is kept: the callback records it
 * REFUND_REQUIRED, as a second payment of a paid order is, so no money is
 * lost and the refund queue shows it. Runs in the reconciliation pass, on
 * every shard in turn, one connection at a time, none held while a
 * gateway is asked. Knows nothing of HTTP. */
#ifndef PAYCALLBACK_EXPIRY_H
#define PAYCALLBACK_EXPIRY_H

#include <stddef.h>

struct server;

#define EXPIRY_ACTOR "service" /* the audit_log actor of a close by the window */

/* What one pass did, over every shard. */
struct expiry_summary {
    size_t listed;        /* orders past the window taken */
    size_t expired;       /* closed now */
    size_t deferred;      /* left open: an endpoint failed or was busy */
    size_t paid;          /* an endpoint answered PAID: paid, not closed */
    size_t shards_failed; /* shards that could not be read or written */
};

/* Runs one pass with srv's shards, query endpoints and metrics: on each
 * shard the reconcile.expire_batch oldest orders past the window, asked
 * about and closed as above. Does nothing when the window is 0. Counts go
 * to paycallback_orders_expired_total and
 * paycallback_order_expiry_deferred_total; sum (may be NULL) gets them too.
 * The reconciliation thread calls it; any one thread at a time. */
void expiry_pass(struct server *srv, struct expiry_summary *sum);

#endif
