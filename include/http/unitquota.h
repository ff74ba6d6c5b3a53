/* unitquota.h - the units of stock each client address reserved in its
 * orders within the last payment window, per sku and in all, so that one
 * address cannot hold a sku's stock with unpaid orders. Counted in memory
 * per instance, in time slots of an eighth of the window: a reservation
 * counts for at least one window and at most nine eighths of one, paid or
 * not (the service does not learn here when an order is paid). The table
 * has a fixed size (UNITQUOTA_SLOTS); when a set is full the least
 * recently used entry gives way (hold->evicted says when a live one did).
 * Thread-safe; the clock is the caller's. Pure of I/O. */
#ifndef PAYCALLBACK_UNITQUOTA_H
#define PAYCALLBACK_UNITQUOTA_H

#include <stdint.h>

#include "netaddr.h"

#define UNITQUOTA_SLOTS 16384 /* entries kept: (address, sku) and (address, all) */

enum unitquota_result {
    UNITQUOTA_OK,    /* reserved */
    UNITQUOTA_SKU,   /* the address would pass its units of this sku */
    UNITQUOTA_TOTAL, /* ... its units of all skus */
};

/* What one reservation took, to give it back (unitquota_give_back). */
struct unitquota_hold {
    struct netaddr client;
    uint64_t sku_hash;
    int64_t units;
    int64_t epoch; /* the time slot it was counted in; 0: nothing held */
    int evicted;   /* entries still counting units that this take pushed out */
};

struct unitquota;

/* A table counting reservations for window_ms (> 0). NULL when out of
 * memory. */
struct unitquota *unitquota_create(long long window_ms);

/* NULL-safe. */
void unitquota_destroy(struct unitquota *q);

/* Reserves units of sku for client at now_ms (a monotonic clock) when,
 * with them, the client holds at most max_sku units of the sku and
 * max_total in all (0: that cap is off). UNITQUOTA_OK and *hold set, or
 * which cap it would pass, nothing reserved and *hold empty. */
enum unitquota_result unitquota_take(struct unitquota *q, const struct netaddr *client,
                                     const char *sku, int64_t units, int64_t max_sku,
                                     int64_t max_total, long long now_ms,
                                     struct unitquota_hold *hold);

/* Gives back what hold reserved (the order was not made) and empties
 * hold; nothing when hold is empty or its entries are gone. */
void unitquota_give_back(struct unitquota *q, struct unitquota_hold *hold);

#endif
