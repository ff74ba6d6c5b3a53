/* quota.h - per-client request rates for the anonymous write routes: one
 * token bucket per (client, route class) with rate tokens a second and
 * room for burst, in a table of fixed size (QUOTA_SLOTS) whose least
 * recently used bucket of a set gives way to a new client, so memory
 * stays bounded whatever the number of clients. A forgotten client comes
 * back with a full bucket. Thread-safe; the clock is the caller's. */
#ifndef PAYCALLBACK_QUOTA_H
#define PAYCALLBACK_QUOTA_H

#include "netaddr.h"

#define QUOTA_SLOTS 65536 /* buckets kept, all classes together */

enum quota_class {
    QUOTA_TOKEN, /* /token/apply */
    QUOTA_ORDER, /* /order/create */
    QUOTA_CLASSES
};

struct quota_limit {
    int rate_per_s; /* 0 = no quota */
    int burst;      /* requests a full bucket holds, >= 1 */
};

struct quota;

/* NULL when out of memory. */
struct quota *quota_create(const struct quota_limit lim[QUOTA_CLASSES]);

/* NULL-safe. */
void quota_destroy(struct quota *q);

/* Takes one request of class cls for client at now_ms (a monotonic
 * clock). Returns 0 when it may go on, else the whole seconds (>= 1)
 * until the bucket holds a request again, for Retry-After. */
int quota_take(struct quota *q, enum quota_class cls, const struct netaddr *client,
               long long now_ms);

#endif
