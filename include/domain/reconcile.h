/* reconcile.h - finding what fell through, and retention. One pass counts
 * (and lists, for the report) the WAIT_PAY orders older than
 * reconcile.wait_pay_age_s (their callback never came: query the gateway
 * or cancel them), the REFUND_REQUIRED payments nobody settled, and the
 * events that are dead or undelivered past reconcile.outbox_lag_s; then
 * purges, in small batches, what is past its retention window. A thread
 * runs a pass every reconcile.interval_s: it first asks the configured
 * query endpoints about the next reconcile.query_batch stale orders
 * (query.h), then closes the unpaid orders past the payment window
 * (expiry.h), then publishes the counts as gauges; the operator API runs
 * the report on demand. Knows nothing of HTTP. */
#ifndef PAYCALLBACK_RECONCILE_H
#define PAYCALLBACK_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "db.h"
#include "outbox.h"
#include "refunds.h"
#include "route.h"
#include "stale_orders.h"
#include "validate.h"

struct server;
struct config;
struct metrics;
struct reconcile;

#define RECONCILE_LIST_MAX 50 /* items of each class a report lists */

/* One shard's counts in a report over every shard. */
struct reconcile_part {
    bool answered; /* false: the shard's database failed; counts are 0 */
    int64_t wait_pay_stale;
    int64_t refund_unsettled;
    struct outbox_stats outbox;
};

/* One reconciliation: counts, and the oldest items of each class. Over
 * several shards (reconcile_report_add): the counts are totals over the
 * shards that answered, each shard's own in part[] by shard index. */
struct reconcile_report {
    struct reconcile_part part[CFG_SHARDS_MAX];
    size_t nparts; /* shards added, answered or not */
    int64_t wait_pay_stale;
    struct stale_order stale[RECONCILE_LIST_MAX];
    size_t nstale;
    int64_t refund_unsettled;
    struct refund_entry refunds[RECONCILE_LIST_MAX];
    size_t nrefunds;
    struct outbox_stats outbox;
    struct outbox_entry dead[RECONCILE_LIST_MAX];
    size_t ndead;
};

/* Builds the report on c. DB_OK or the failing statement's status. The
 * report is large: allocate it, do not put it on a thread's stack. */
enum db_status reconcile_report(struct db_conn *c, const struct config *cfg,
                                struct reconcile_report *out);

/* Adds the report of shard index shard (built by reconcile_report on its
 * database; NULL when the shard did not answer) to total, which starts
 * zeroed: counts are summed, and each list keeps its RECONCILE_LIST_MAX
 * oldest items across the shards (a list's first part is kept as it
 * came, so one shard's report is unchanged). part's items are tagged
 * with their shard first. */
void reconcile_report_add(struct reconcile_report *total, struct reconcile_report *part,
                          size_t shard);

/* Merges the oldest-first lists a (na items) and b (nb) into out, by
 * (create_time, order_no), keeping at most max; the count in *n. out must
 * not overlap a or b. */
void reconcile_merge_stale(const struct stale_order *a, size_t na, const struct stale_order *b,
                           size_t nb, struct stale_order *out, size_t max, size_t *n);

#define RECONCILE_PURGE_ROUNDS 20 /* batches per table per pass: the rest waits for the next */

/* Deletes, batch by batch (retention.batch rows, each batch its own short
 * statement, at most RECONCILE_PURGE_ROUNDS per table), delivered events
 * past retention.outbox_days, expired MySQL tokens, and, when
 * retention.payment_days is set, PAID and settled payment records past it
 * (an unsettled REFUND_REQUIRED record is never purged). Counts go to the
 * metrics (m may be NULL). */
enum db_status reconcile_purge(struct db_conn *c, const struct config *cfg, struct metrics *m);

/* Starts the periodic thread (a pass at start, then every interval). The
 * pass reads and purges every shard in turn, one connection at a time; a
 * shard that fails is logged and counted
 * (paycallback_shard_reconcile_failures_total{shard}) and the others go
 * on. The gauges are totals over the shards that answered, each shard's
 * own in the paycallback_shard_* series.
 * NULL on failure (logged). */
struct reconcile *reconcile_start(struct server *srv);

/* Stops and joins the thread (a pass in flight ends after its current
 * statement; a query in flight is cancelled with query_cancel) and frees
 * it. NULL-safe. */
void reconcile_stop(struct reconcile *r);

/* ---- routed (route.h): the operator API's report and cancel ---------------- */

/* Builds the report of every shard into rep (zeroed by the caller):
 * reconcile_report on each, added with reconcile_report_add, a shard that
 * did not answer added as NULL. ROUTE_OK (sc->missed names those),
 * ROUTE_UNAVAILABLE or ROUTE_FAILED (sc->fail). */
enum route_result reconcile_route_report(const struct route *rt, const struct config *cfg,
                                         struct reconcile_report *rep, struct route_scan *sc);

/* One stale order of a cancel, and what its cancel did. */
struct reconcile_canceled {
    struct stale_order order; /* as listed, with its shard */
    int result;               /* enum orders_result; ORDERS_UNAVAILABLE: its shard failed */
    int from;                 /* the status it had, unless ORDERS_UNAVAILABLE */
};

/* A cancel of stale orders: what to cancel (set by the caller), what was
 * done (set by reconcile_route_cancel_stale). */
struct reconcile_cancel {
    const char *actor;                /* the operator credential's name, for the audit */
    int age_s;                        /* WAIT_PAY for longer than this */
    size_t limit;                     /* at most this many: the oldest across the shards */
    struct reconcile_canceled *items; /* limit of them, the caller's */
    size_t n;                         /* listed */
    size_t canceled;                  /* of which this call canceled */
    struct route_scan sc;             /* the shards that did not answer (listing or cancel) */
    const struct route *rt;
};

/* Lists, on every shard, the WAIT_PAY orders older than rc->age_s, keeps
 * the rc->limit oldest across shards, and cancels each through the state
 * machine like POST /order/{no}/cancel (stock returned, an order.canceled
 * event, and an audit row "order.cancel_stale" by rc->actor, in the
 * cancel's transaction), only from WAIT_PAY: an order paid between the
 * listing and its cancel is left alone (ORDERS_ILLEGAL). A shard that fails
 * midway is noted in rc->sc and its orders are ORDERS_UNAVAILABLE
 * (sharded); unsharded, or when no shard answers the listing, that is
 * ROUTE_UNAVAILABLE. A database error is ROUTE_FAILED. *fail says why. */
enum route_result reconcile_route_cancel_stale(const struct route *rt, struct reconcile_cancel *rc,
                                               struct route_failure *fail);

#endif
