/* stale_orders.h - the WAIT_PAY orders older than an age, oldest first:
 * what the reconciliation report lists (reconcile.h) and what the payment
 * window closes (expiry.h). Knows nothing of HTTP. */
#ifndef PAYCALLBACK_STALE_ORDERS_H
#define PAYCALLBACK_STALE_ORDERS_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "outbox.h"
#include "validate.h"

struct stale_order {
    char order_no[ID_BUF];
    char user_id[ID_BUF];
    int64_t amount_cents;
    char create_time[OUTBOX_TIME_MAX];
    size_t shard; /* index in the shard set it was read from (set by the caller) */
};

/* Lists up to max WAIT_PAY orders older than age_s, oldest first. */
enum db_status stale_orders_list(struct db_conn *c, int age_s, struct stale_order *out, size_t max,
                                 size_t *n);

#endif
