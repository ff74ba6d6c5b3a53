/* expiry.c - closing unpaid orders past the payment window, shard by
 * shard: list, ask the gateways (no connection held), close through the
 * state machine. The close is the cancel of orders.c from WAIT_PAY only,
 * so an order paid between the listing and the close is left alone. */
#include "expiry.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "metrics.h"
#include "order_state.h"
#include "orders.h"
#include "query.h"
#include "server.h"
#include "shard.h"
#include "stale_orders.h"

#define EXPIRY_DB_WAIT_MS 1000
#define EXPIRY_REQUEST_ID "expiry"

/* The audit row of a close, in the close's transaction. */
static enum db_status audit_expire(struct db_conn *c, const void *data, void *arg)
{
    const struct order_change *ch = data;

    (void)arg;
    return audit_append(c, EXPIRY_ACTOR, "order.expire", ch->order.order_no,
                        "WAIT_PAY -> CANCELED: unpaid past the payment window", EXPIRY_REQUEST_ID);
}

static void shard_failed(struct server *srv, const struct shard *sh, struct db_conn *c,
                         const char *op, const char *what)
{
    log_warn("order expiry failed", "shard=%s op=%s status=%s error=\"%s\"", sh->label, op, what,
             c != NULL ? db_errstr(c) : "no free connection");
    metrics_shard_inc(srv->m, sh->index, MS_RECONCILE_FAILURES);
}

/* The up to max oldest orders of sh past the window. 0, or -1 (logged). */
static int list_shard(struct server *srv, const struct shard *sh, struct stale_order *out,
                      size_t max, size_t *n)
{
    struct db_conn *c = shard_acquire(sh, EXPIRY_DB_WAIT_MS);
    enum db_status st = DB_UNAVAILABLE;

    *n = 0;
    if (c == NULL ||
        (st = stale_orders_list(c, srv->cfg->reconcile_payment_window_s, out, max, n)) != DB_OK) {
        shard_failed(srv, sh, c, "list", db_status_str(st));
        shard_release(sh, c);
        return -1;
    }
    shard_release(sh, c);
    return 0;
}

/* Closes the orders of stale whose close[i] is set, over one connection
 * of sh. 0, or -1 when the shard failed (logged; the rest waits). */
static int close_shard(struct server *srv, const struct shard *sh, const struct stale_order *stale,
                       const bool *close, size_t n, struct expiry_summary *sum)
{
    const struct orders_hook audit = { audit_expire, NULL };
    struct order_change *ch = malloc(sizeof(*ch));
    struct db_conn *c = NULL;
    int rc = -1;

    if (ch == NULL) {
        log_error("order expiry: out of memory", "shard=%s", sh->label);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct order_transition_req tr = { .order_no = stale[i].order_no,
                                           .to = ORDER_CANCELED,
                                           .only_from = ORDER_WAIT_PAY,
                                           .hook = &audit,
                                           .reason = ORDERS_REASON_EXPIRED };
        enum orders_result r;

        if (!close[i])
            continue;
        if (c == NULL && (c = shard_acquire(sh, EXPIRY_DB_WAIT_MS)) == NULL) {
            shard_failed(srv, sh, NULL, "close", "UNAVAILABLE");
            goto out;
        }
        r = orders_transition(c, &tr, ch);
        if (r == ORDERS_UNAVAILABLE || r == ORDERS_ERROR) {
            shard_failed(srv, sh, c, "close", orders_result_str(r));
            goto out;
        }
        if (r != ORDERS_OK) /* paid or cancelled meanwhile */
            continue;
        sum->expired++;
        metrics_inc(srv->m, M_ORDERS_EXPIRED);
        log_info("unpaid order expired",
                 "order_no=%s user_id=%s created=%s shard=%s "
                 "stock_returned=%lld sku=%s",
                 stale[i].order_no, stale[i].user_id, stale[i].create_time, sh->label,
                 (long long)ch->order.quantity, ch->order.sku);
    }
    rc = 0;
out:
    shard_release(sh, c);
    free(ch);
    return rc;
}

/* Decides, for the n orders of one shard, which may be closed: all of
 * them without a query endpoint; else those every endpoint says it has no
 * payment for (a PAID answer pays the order as the round applies it). */
static void decide(struct server *srv, const struct stale_order *stale, size_t n,
                   char (*order_nos)[ID_BUF], struct query_item *items, bool *close,
                   struct expiry_summary *sum)
{
    struct query_summary qs;
    enum query_round_result r;
    size_t i, k;

    if (query_count(srv->query) == 0) {
        for (i = 0; i < n; i++)
            close[i] = true;
        return;
    }
    for (i = 0; i < n; i++)
        memcpy(order_nos[i], stale[i].order_no, ID_BUF);
    r = query_orders(srv->query, srv, (const char(*)[ID_BUF])order_nos, n, EXPIRY_REQUEST_ID, items,
                     &qs);
    if (r == QUERY_ROUND_BUSY)
        log_info("order expiry waits for a query round", "orders=%zu", n);
    for (i = 0; i < n; i++) {
        close[i] = r != QUERY_ROUND_BUSY && query_item_unpaid(srv->query, &items[i]);
        if (close[i])
            continue;
        for (k = 0; k < items[i].nasked && items[i].answer[k] != QUERY_PAID; k++)
            ;
        if (k < items[i].nasked) {
            sum->paid++;
            continue;
        }
        sum->deferred++;
        metrics_inc(srv->m, M_EXPIRY_DEFERRED);
        log_warn("expired order left open: a gateway did not confirm it unpaid",
                 "order_no=%s created=%s", stale[i].order_no, stale[i].create_time);
    }
}

void expiry_pass(struct server *srv, struct expiry_summary *sum)
{
    size_t max = (size_t)srv->cfg->reconcile_expire_batch, n = 0;
    struct stale_order *stale = NULL;
    char(*order_nos)[ID_BUF] = NULL;
    struct query_item *items = NULL;
    struct expiry_summary local;
    bool *close = NULL;

    if (sum == NULL)
        sum = &local;
    memset(sum, 0, sizeof(*sum));
    if (srv->cfg->reconcile_payment_window_s == 0)
        return;
    if ((stale = calloc(max, sizeof(*stale))) == NULL ||
        (order_nos = calloc(max, sizeof(*order_nos))) == NULL ||
        (items = calloc(max, sizeof(*items))) == NULL ||
        (close = calloc(max, sizeof(*close))) == NULL) {
        log_error("order expiry: out of memory", "batch=%zu", max);
        goto out;
    }
    for (size_t s = 0; s < srv->shards.n; s++) {
        const struct shard *sh = &srv->shards.s[s];

        if (list_shard(srv, sh, stale, max, &n) != 0) {
            sum->shards_failed++;
            continue;
        }
        if (n == 0)
            continue;
        sum->listed += n;
        memset(close, 0, max * sizeof(*close));
        decide(srv, stale, n, order_nos, items, close, sum);
        if (close_shard(srv, sh, stale, close, n, sum) != 0)
            sum->shards_failed++;
    }
out:
    free(stale);
    free(order_nos);
    free(items);
    free(close);
}
