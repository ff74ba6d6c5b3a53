/* refunds.h - the refund queue: payments that charged a customer a second
 * time (REFUND_REQUIRED) until an operator refunds them at the gateway and
 * records it here (REFUND_SETTLED, with the refund's reference, who and
 * when). Settling is an audited state change, idempotent, and never a
 * delete. Knows nothing of HTTP. Any thread, one connection per thread;
 * on REFUNDS_UNAVAILABLE / REFUNDS_ERROR the detail is in db_errstr(c). */
#ifndef PAYCALLBACK_REFUNDS_H
#define PAYCALLBACK_REFUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "outbox.h"
#include "route.h"
#include "validate.h"

#define REFUNDS_LIST_MAX 100 /* rows one list call returns at most */
#define REFUNDS_REF_MAX 65   /* a settle reference: an identifier, and the NUL */

enum refunds_result {
    REFUNDS_OK,           /* settled now / listed */
    REFUNDS_DUPLICATE,    /* already settled with the same reference: nothing written */
    REFUNDS_NOT_FOUND,    /* no payment with this pay_no */
    REFUNDS_NOT_REQUIRED, /* the payment is PAID: there is nothing to refund */
    REFUNDS_CONFLICT,     /* already settled with another reference */
    REFUNDS_REFUND_LIVE,  /* a refund of it is under way (out->live_refund_no): nothing written */
    REFUNDS_UNAVAILABLE,  /* MySQL unreachable or busy; nothing written */
    REFUNDS_ERROR
};

/* A payment in the refund queue (or settled out of it). */
struct refund_entry {
    char pay_no[ID_BUF];
    char order_no[ID_BUF];
    int64_t amount_cents;
    int status; /* PAYMENT_REFUND_REQUIRED or PAYMENT_REFUND_SETTLED */
    char create_time[OUTBOX_TIME_MAX];
    char reference[REFUNDS_REF_MAX]; /* "" until settled */
    char settled_by[ID_BUF];
    char settled_at[OUTBOX_TIME_MAX];
    char live_refund_no[ID_BUF]; /* REFUNDS_REFUND_LIVE: the refund under way */
    size_t shard;                /* index in the shard set it was read from (set by the caller) */
};

/* Lists up to max (<= REFUNDS_LIST_MAX) payments in status, oldest first. */
enum refunds_result refunds_list(struct db_conn *c, int status, struct refund_entry *out,
                                 size_t max, size_t *n);

struct refunds_settle_req;

/* Settles sr->pay_no with the refund's reference, in one transaction with
 * its audit_log row (actor: the operator credential's name; request_id: the
 * HTTP request's), on c, the database of sh in set (a refund number drawn
 * here gets sh's prefix). The refund ledger is kept under the payment's row
 * lock: a refund of it under way (awaiting approval, requested, submitted,
 * unknown) refuses the settle (REFUNDS_REFUND_LIVE, naming it), and what the
 * payment's succeeded refunds leave is recorded as a SUCCEEDED refund of
 * origin MANUAL, so no later refund finds room in it. *out is the payment as
 * it is afterwards (OK, DUPLICATE, CONFLICT, NOT_REQUIRED). */
enum refunds_result refunds_settle(struct db_conn *c, const struct shard_set *set,
                                   const struct shard *sh, const struct refunds_settle_req *sr,
                                   const char *request_id, struct refund_entry *out);

/* Sharded: the order pay_no_registry binds pay_no to, read on c (the
 * shard placement(pay_no) puts the registry row on). REFUNDS_OK with
 * *found, REFUNDS_UNAVAILABLE or REFUNDS_ERROR. */
enum refunds_result refunds_registry_order(struct db_conn *c, const char *pay_no,
                                           char order_no[ID_BUF], bool *found);

/* Merges the oldest-first lists a (na items) and b (nb) into out, by
 * (create_time, pay_no), keeping at most max; the count goes in *n. out
 * must not overlap a or b. */
void refunds_merge(const struct refund_entry *a, size_t na, const struct refund_entry *b, size_t nb,
                   struct refund_entry *out, size_t max, size_t *n);

/* ---- routed (route.h): the operator API's refund queue --------------------- */

/* Lists up to limit (<= REFUNDS_LIST_MAX) payments in status across the
 * shards: each shard's oldest, merged into the oldest across them, each
 * item's shard set. ROUTE_OK (sc->missed names the shards that did not
 * answer), ROUTE_UNAVAILABLE or ROUTE_FAILED (sc->fail). */
enum route_result refunds_route_list(const struct route *rt, int status, struct refund_entry *items,
                                     size_t limit, size_t *n, struct route_scan *sc);

/* Sharded: the shard pay_no's payment lives on, by its pay_no_registry
 * row (on shard_place(pay_no)), or NULL when the registry cannot say (no
 * row: a payment made before sharding; or the registry's shard is down,
 * which is logged and not counted: every shard is asked then). */
const struct shard *refunds_pay_shard(const struct route *rt, const char *pay_no);

/* A settle: the payment, the refund's reference at the gateway, and who. */
struct refunds_settle_req {
    const char *pay_no;
    const char *reference;
    const char *actor;
};

/* Settles sr->pay_no wherever it lives: unsharded on the one database;
 * sharded on the shard its pay_no_registry row names, or else (a payment
 * made before sharding, or the registry's shard down) on the shard that
 * has it, each asked in turn, where a shard that could not answer makes a
 * payment found nowhere REFUNDS_UNAVAILABLE, not REFUNDS_NOT_FOUND. Results
 * as refunds_settle's; REFUNDS_UNAVAILABLE and REFUNDS_ERROR with *fail. */
enum refunds_result refunds_route_settle(const struct route *rt,
                                         const struct refunds_settle_req *sr,
                                         struct refund_entry *e, struct route_failure *fail);

#endif
