/* reconcile.c - the reconciliation report, retention purges, and the
 * thread that runs both periodically and publishes the counts. */
#include "reconcile.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "expiry.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "order_state.h"
#include "audit.h"
#include "orders.h"
#include "route.h"
#include "query.h"
#include "server.h"

#define RECONCILE_DB_WAIT_MS 1000

#define ORPHAN_PAGE 100 /* checkout bindings looked at per shard and pass */
#define ORPHAN_START "1000-01-01 00:00:00.000000"

/* Where the look for orphaned checkout bindings of one shard goes on. */
struct orphan_cursor {
    char time[32];
    char user[ID_BUF];
    char req[ID_BUF];
};

struct reconcile {
    struct server *srv;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    struct orphan_cursor cursor[CFG_SHARDS_MAX];
};

static enum db_status count(struct db_conn *c, enum db_stmt id, const char *const *p, size_t np,
                            int64_t *out)
{
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, id, p, np, &row, 1, &n);

    *out = 0;
    if (st != DB_OK)
        return st;
    if (n != 1 || db_row_int(&row, 0, 0, INT64_MAX, out) != 0)
        return db_fail(c, "reconcile: malformed count");
    return DB_OK;
}

enum db_status reconcile_report(struct db_conn *c, const struct config *cfg,
                                struct reconcile_report *out)
{
    char wait_pay[DB_INT_BUF], age[DB_INT_BUF], required[DB_INT_BUF];
    const char *pw[] = { db_param_int(wait_pay, ORDER_WAIT_PAY),
                         db_param_int(age, cfg->reconcile_wait_pay_age_s) };
    const char *pr[] = { db_param_int(required, PAYMENT_REFUND_REQUIRED) };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    if ((st = count(c, ST_WAIT_PAY_COUNT, pw, 2, &out->wait_pay_stale)) != DB_OK ||
        (st = stale_orders_list(c, cfg->reconcile_wait_pay_age_s, out->stale, RECONCILE_LIST_MAX,
                                &out->nstale)) != DB_OK ||
        (st = count(c, ST_REFUND_COUNT, pr, 1, &out->refund_unsettled)) != DB_OK ||
        (st = outbox_stats(c, cfg->reconcile_outbox_lag_s, &out->outbox)) != DB_OK ||
        (st = outbox_list(c, OUTBOX_DEAD, 0, out->dead, RECONCILE_LIST_MAX, &out->ndead)) != DB_OK)
        return st;
    if (refunds_list(c, PAYMENT_REFUND_REQUIRED, out->refunds, RECONCILE_LIST_MAX,
                     &out->nrefunds) != REFUNDS_OK)
        return DB_UNAVAILABLE;
    return DB_OK;
}

static bool stale_before(const struct stale_order *a, const struct stale_order *b)
{
    int t = strcmp(a->create_time, b->create_time);

    return t < 0 || (t == 0 && strcmp(a->order_no, b->order_no) <= 0);
}

void reconcile_merge_stale(const struct stale_order *a, size_t na, const struct stale_order *b,
                           size_t nb, struct stale_order *out, size_t max, size_t *n)
{
    size_t i = 0, j = 0, k = 0;

    while (k < max && (i < na || j < nb))
        out[k++] = j >= nb || (i < na && stale_before(&a[i], &b[j])) ? a[i++] : b[j++];
    *n = k;
}

/* Dead events across shards, oldest first (each shard's list is by id). */
static void merge_dead(const struct outbox_entry *a, size_t na, const struct outbox_entry *b,
                       size_t nb, struct outbox_entry *out, size_t max, size_t *n)
{
    size_t i = 0, j = 0, k = 0;

    while (k < max && (i < na || j < nb))
        out[k++] =
            j >= nb || (i < na && strcmp(a[i].created_at, b[j].created_at) <= 0) ? a[i++] : b[j++];
    *n = k;
}

/* The report of the shards so far and one more: merged into a copy,
 * which replaces total's lists. */
void reconcile_report_add(struct reconcile_report *total, struct reconcile_report *part,
                          size_t shard)
{
    struct reconcile_report *m;
    struct reconcile_part *p;
    size_t i;

    if (shard >= CFG_SHARDS_MAX)
        return;
    p = &total->part[shard];
    memset(p, 0, sizeof(*p));
    if (total->nparts < shard + 1)
        total->nparts = shard + 1;
    if (part == NULL)
        return;
    for (i = 0; i < part->nstale; i++)
        part->stale[i].shard = shard;
    for (i = 0; i < part->nrefunds; i++)
        part->refunds[i].shard = shard;
    for (i = 0; i < part->ndead; i++)
        part->dead[i].shard = shard;
    p->answered = true;
    p->wait_pay_stale = part->wait_pay_stale;
    p->refund_unsettled = part->refund_unsettled;
    p->outbox = part->outbox;
    total->wait_pay_stale += part->wait_pay_stale;
    total->refund_unsettled += part->refund_unsettled;
    total->outbox.pending += part->outbox.pending;
    total->outbox.dead += part->outbox.dead;
    total->outbox.lagging += part->outbox.lagging;
    if (part->outbox.oldest_pending_ms > total->outbox.oldest_pending_ms)
        total->outbox.oldest_pending_ms = part->outbox.oldest_pending_ms;
    if ((m = malloc(sizeof(*m))) == NULL) {
        /* Counts stay exact; the lists keep what they had. */
        return;
    }
    reconcile_merge_stale(total->stale, total->nstale, part->stale, part->nstale, m->stale,
                          RECONCILE_LIST_MAX, &m->nstale);
    refunds_merge(total->refunds, total->nrefunds, part->refunds, part->nrefunds, m->refunds,
                  RECONCILE_LIST_MAX, &m->nrefunds);
    merge_dead(total->dead, total->ndead, part->dead, part->ndead, m->dead, RECONCILE_LIST_MAX,
               &m->ndead);
    memcpy(total->stale, m->stale, m->nstale * sizeof(m->stale[0]));
    total->nstale = m->nstale;
    memcpy(total->refunds, m->refunds, m->nrefunds * sizeof(m->refunds[0]));
    total->nrefunds = m->nrefunds;
    memcpy(total->dead, m->dead, m->ndead * sizeof(m->dead[0]));
    total->ndead = m->ndead;
    free(m);
}

/* Runs one purge statement up to RECONCILE_PURGE_ROUNDS times while it
 * deletes whole batches. */
static enum db_status purge(struct db_conn *c, enum db_stmt id, const char *const *p, size_t np,
                            uint64_t batch, uint64_t *total)
{
    enum db_status st = DB_OK;
    uint64_t deleted = 0;

    *total = 0;
    for (int round = 0; round < RECONCILE_PURGE_ROUNDS; round++) {
        if ((st = db_exec_retry(c, id, p, np, &deleted)) != DB_OK)
            break;
        *total += deleted;
        if (deleted < batch)
            break;
    }
    return st;
}

enum db_status reconcile_purge(struct db_conn *c, const struct config *cfg, struct metrics *m)
{
    char delivered[DB_INT_BUF], days[DB_INT_BUF], batch[DB_INT_BUF], pdays[DB_INT_BUF];
    char paid[DB_INT_BUF], settled[DB_INT_BUF];
    const char *po[] = { db_param_int(delivered, OUTBOX_DELIVERED),
                         db_param_int(days, cfg->retention_outbox_days),
                         db_param_int(batch, cfg->retention_batch) };
    const char *pp[] = { db_param_int(pdays, cfg->retention_payment_days),
                         db_param_int(paid, PAYMENT_PAID),
                         db_param_int(settled, PAYMENT_REFUND_SETTLED), batch };
    uint64_t n = 0;
    enum db_status st;

    if ((st = purge(c, ST_OUTBOX_PURGE, po, 3, (uint64_t)cfg->retention_batch, &n)) != DB_OK)
        return st;
    metrics_add(m, M_PURGED_OUTBOX, n);
    if ((st = purge(c, ST_DELIVERY_PURGE, po, 3, (uint64_t)cfg->retention_batch, &n)) != DB_OK)
        return st;
    if ((st = purge(c, ST_TOKEN_PURGE, NULL, 0, 1000, &n)) != DB_OK)
        return st;
    if (cfg->retention_payment_days > 0) {
        if ((st = purge(c, ST_PAY_PURGE, pp, 4, (uint64_t)cfg->retention_batch, &n)) != DB_OK)
            return st;
        metrics_add(m, M_PURGED_PAYMENTS, n);
    }
    if (cfg->retention_registry_days > 0) {
        char rdays[DB_INT_BUF];
        const char *pr[] = { db_param_int(rdays, cfg->retention_registry_days), batch };

        if ((st = purge(c, ST_REGISTRY_PAY_PURGE, pr, 2, (uint64_t)cfg->retention_batch, &n)) !=
            DB_OK)
            return st;
        metrics_add(m, M_PURGED_PAY_NO_REGISTRY, n);
        if ((st = purge(c, ST_REGISTRY_CHECKOUT_PURGE, pr, 2, (uint64_t)cfg->retention_batch,
                        &n)) != DB_OK)
            return st;
        metrics_add(m, M_PURGED_CHECKOUT_REGISTRY, n);
        if ((st = purge(c, ST_FENCE_PURGE, pr, 2, (uint64_t)cfg->retention_batch, &n)) != DB_OK)
            return st;
        metrics_add(m, M_PURGED_PAY_NO_FENCE, n);
    }
    return DB_OK;
}

/* Whether order_no is an order on its shard: 1 yes, 0 no (or it names no
 * shard), -1 the shard could not say. */
static int order_exists(struct server *srv, const char *order_no)
{
    const struct shard *sh = shard_of_order(&srv->shards, order_no);
    const char *p[] = { order_no };
    struct db_row row;
    struct db_conn *c;
    size_t n = 0;
    enum db_status st;

    if (sh == NULL)
        return 0;
    if ((c = shard_acquire(sh, RECONCILE_DB_WAIT_MS)) == NULL)
        return -1;
    st = db_query_retry(c, ST_ORDER_EXISTS, p, 1, &row, 1, &n);
    shard_release(sh, c);
    return st != DB_OK ? -1 : n > 0;
}

/* The checkout bindings on reg older than retention.orphan_checkout_s
 * whose order does not exist on its shard (the client gave up, the sku ran
 * out, the order's shard was down): they hold nothing but the request_id,
 * and are deleted, ORPHAN_PAGE at a time from where the last pass stopped.
 * The grace is far longer than a create takes, so a binding whose order is
 * being made is never among them. One connection at a time. */
static void purge_orphans(struct reconcile *r, size_t idx)
{
    struct server *srv = r->srv;
    const struct shard *reg = &srv->shards.s[idx];
    struct orphan_cursor *cur = &r->cursor[idx];
    char age[DB_INT_BUF], limit[DB_INT_BUF];
    const char *p[] = { db_param_int(age, srv->cfg->retention_orphan_checkout_s),
                        cur->time,
                        cur->time,
                        cur->user,
                        cur->user,
                        cur->req,
                        db_param_int(limit, ORPHAN_PAGE) };
    struct db_row *rows;
    bool *orphan;
    struct db_conn *c;
    size_t n = 0, i;
    uint64_t deleted = 0;

    if (srv->cfg->retention_orphan_checkout_s == 0 || !srv->shards.sharded)
        return;
    if (cur->time[0] == '\0')
        snprintf(cur->time, sizeof(cur->time), "%s", ORPHAN_START);
    rows = calloc(ORPHAN_PAGE, sizeof(*rows));
    orphan = calloc(ORPHAN_PAGE, sizeof(*orphan));
    if (rows == NULL || orphan == NULL || (c = shard_acquire(reg, RECONCILE_DB_WAIT_MS)) == NULL)
        goto out;
    enum db_status st = db_query_retry(c, ST_CHECKOUT_AGED, p, 7, rows, ORPHAN_PAGE, &n);
    shard_release(reg, c);
    if (st != DB_OK)
        goto out;
    for (i = 0; i < n; i++) {
        char order_no[ID_BUF];

        if (db_row_str(&rows[i], CAC_ORDER_NO, order_no, sizeof(order_no)) != 0)
            continue;
        orphan[i] = order_exists(srv, order_no) == 0;
    }
    if ((c = shard_acquire(reg, RECONCILE_DB_WAIT_MS)) == NULL)
        goto out;
    for (i = 0; i < n; i++) {
        char user[ID_BUF], req[ID_BUF], order_no[ID_BUF];
        const char *dp[] = { user, req, order_no };
        uint64_t one = 0;

        if (!orphan[i] || db_row_str(&rows[i], CAC_USER_ID, user, sizeof(user)) != 0 ||
            db_row_str(&rows[i], CAC_REQUEST_ID, req, sizeof(req)) != 0 ||
            db_row_str(&rows[i], CAC_ORDER_NO, order_no, sizeof(order_no)) != 0)
            continue;
        if (db_exec_retry(c, ST_CHECKOUT_FORGET, dp, 3, &one) != DB_OK)
            break;
        if (one > 0)
            log_info("checkout binding purged",
                     "shard=%s user_id=%s request_id=%s order_no=%s "
                     "reason=\"no such order\"",
                     reg->label, user, req, order_no);
        deleted += one;
    }
    shard_release(reg, c);
    metrics_add(srv->m, M_PURGED_CHECKOUT_ORPHANS, deleted);
    /* On from the last binding read; from the start again once through. */
    if (n < ORPHAN_PAGE ||
        db_row_str(&rows[n - 1], CAC_CREATE_TIME, cur->time, sizeof(cur->time)) != 0 ||
        db_row_str(&rows[n - 1], CAC_USER_ID, cur->user, sizeof(cur->user)) != 0 ||
        db_row_str(&rows[n - 1], CAC_REQUEST_ID, cur->req, sizeof(cur->req)) != 0)
        memset(cur, 0, sizeof(*cur));
out:
    free(rows);
    free(orphan);
}

/* Asks the query endpoints about the next batch of stale orders, when
 * any endpoint is configured; without one, stale orders are only
 * reported. */
static void query_pass(struct server *srv)
{
    const struct config *cfg = srv->cfg;
    struct query_round run = { .age_s = cfg->reconcile_wait_pay_age_s,
                               .limit = (size_t)cfg->reconcile_query_batch,
                               .rotate = true,
                               .request_id = "reconcile" };
    struct query_summary sum;

    if (query_count(srv->query) == 0)
        return;
    if (query_run(srv->query, srv, &run, NULL, &sum) != QUERY_ROUND_OK)
        return; /* logged; busy means an operator's round runs */
    if (sum.orders > 0)
        log_info("stale orders queried", "orders=%zu queries=%zu paid=%zu failed=%zu", sum.orders,
                 sum.queries, sum.paid, sum.failed);
}

/* What one pass counted on one shard. */
struct shard_counts {
    struct outbox_stats ob;
    int64_t stale, refunds, overdue;
};

/* Counts and purges one shard over a connection of its own. 0, or -1
 * after logging and counting the shard's failure. */
static int pass_shard(struct server *srv, const struct shard *sh, struct shard_counts *out)
{
    const struct config *cfg = srv->cfg;
    char wait_pay[DB_INT_BUF], age[DB_INT_BUF], required[DB_INT_BUF];
    const char *pw[] = { db_param_int(wait_pay, ORDER_WAIT_PAY),
                         db_param_int(age, cfg->reconcile_wait_pay_age_s) };
    const char *pr[] = { db_param_int(required, PAYMENT_REFUND_REQUIRED) };
    char window[DB_INT_BUF];
    const char *po[] = { wait_pay, db_param_int(window, cfg->reconcile_payment_window_s) };
    struct db_conn *c = shard_acquire(sh, RECONCILE_DB_WAIT_MS);
    enum db_status st = DB_UNAVAILABLE;

    memset(out, 0, sizeof(*out));
    if (c == NULL || (st = outbox_stats(c, cfg->reconcile_outbox_lag_s, &out->ob)) != DB_OK ||
        (st = count(c, ST_WAIT_PAY_COUNT, pw, 2, &out->stale)) != DB_OK ||
        (cfg->reconcile_payment_window_s > 0 &&
         (st = count(c, ST_WAIT_PAY_COUNT, po, 2, &out->overdue)) != DB_OK) ||
        (st = count(c, ST_REFUND_COUNT, pr, 1, &out->refunds)) != DB_OK ||
        (st = reconcile_purge(c, cfg, srv->m)) != DB_OK) {
        if (srv->shards.sharded)
            log_warn("reconciliation pass failed", "shard=%s status=%s error=\"%s\"", sh->label,
                     db_status_str(st), c != NULL ? db_errstr(c) : "no free connection");
        else
            log_warn("reconciliation pass failed", "status=%s error=\"%s\"", db_status_str(st),
                     c != NULL ? db_errstr(c) : "no free connection");
        metrics_shard_inc(srv->m, sh->index, MS_RECONCILE_FAILURES);
        shard_release(sh, c);
        return -1;
    }
    shard_release(sh, c);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_OUTBOX_PENDING, out->ob.pending);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_OUTBOX_DEAD, out->ob.dead);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_OUTBOX_LAGGING, out->ob.lagging);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_WAIT_PAY_STALE, out->stale);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_REFUND_UNSETTLED, out->refunds);
    metrics_shard_set_gauge(srv->m, sh->index, MSG_RECONCILE_LAST_RUN_S, (int64_t)time(NULL));
    return 0;
}

/* One periodic pass: the query of stale orders, then each shard's counts
 * and retention, one shard at a time; the gauges are the totals over the
 * shards that answered. The pass counts as complete (its timestamp gauge)
 * only when every shard answered. */
static void pass(struct reconcile *r)
{
    struct server *srv = r->srv;
    struct shard_counts one, sum;
    struct expiry_summary ex;
    size_t i, answered = 0;

    query_pass(srv); /* no connection held while it asks */
    expiry_pass(srv, &ex);
    if (ex.expired > 0 || ex.deferred > 0)
        log_info("payment window pass", "listed=%zu expired=%zu deferred=%zu paid=%zu", ex.listed,
                 ex.expired, ex.deferred, ex.paid);
    memset(&sum, 0, sizeof(sum));
    for (i = 0; i < srv->shards.n; i++) {
        if (pass_shard(srv, &srv->shards.s[i], &one) != 0)
            continue;
        answered++;
        sum.ob.pending += one.ob.pending;
        sum.ob.dead += one.ob.dead;
        sum.ob.lagging += one.ob.lagging;
        if (one.ob.oldest_pending_ms > sum.ob.oldest_pending_ms)
            sum.ob.oldest_pending_ms = one.ob.oldest_pending_ms;
        sum.stale += one.stale;
        sum.refunds += one.refunds;
        sum.overdue += one.overdue;
    }
    for (i = 0; i < srv->shards.n; i++)
        purge_orphans(r, i);
    if (answered == 0)
        return;
    metrics_set_gauge(srv->m, G_OUTBOX_PENDING, sum.ob.pending);
    metrics_set_gauge(srv->m, G_OUTBOX_DEAD, sum.ob.dead);
    metrics_set_gauge(srv->m, G_OUTBOX_LAGGING, sum.ob.lagging);
    metrics_set_gauge(srv->m, G_OUTBOX_OLDEST_MS, sum.ob.oldest_pending_ms);
    metrics_set_gauge(srv->m, G_WAIT_PAY_STALE, sum.stale);
    metrics_set_gauge(srv->m, G_REFUND_UNSETTLED, sum.refunds);
    metrics_set_gauge(srv->m, G_WAIT_PAY_OVERDUE, sum.overdue);
    if (answered == srv->shards.n)
        metrics_set_gauge(srv->m, G_RECONCILE_LAST_RUN_S, (int64_t)time(NULL));
    if (sum.stale > 0 || sum.refunds > 0 || sum.ob.dead > 0 || sum.ob.lagging > 0)
        log_warn("reconciliation found work",
                 "wait_pay_stale=%lld refund_unsettled=%lld "
                 "outbox_dead=%lld outbox_lagging=%lld",
                 (long long)sum.stale, (long long)sum.refunds, (long long)sum.ob.dead,
                 (long long)sum.ob.lagging);
}

static void *reconcile_main(void *arg)
{
    struct reconcile *r = arg;
    struct timespec until;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        pthread_mutex_unlock(&r->mu);
        pass(r);
        until = monotime_after_ms(r->srv->cfg->reconcile_interval_s * 1000LL);
        pthread_mutex_lock(&r->mu);
        while (!r->stop)
            if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
                break;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

struct reconcile *reconcile_start(struct server *srv)
{
    struct reconcile *r = calloc(1, sizeof(*r));
    pthread_condattr_t ca;

    if (r == NULL) {
        log_error("reconciliation: out of memory", "%s", "");
        return NULL;
    }
    r->srv = srv;
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->thread, NULL, reconcile_main, r) != 0) {
        log_error("reconciliation: cannot start its thread", "%s", "");
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return NULL;
    }
    return r;
}

void reconcile_stop(struct reconcile *r)
{
    if (r == NULL)
        return;
    query_cancel(r->srv->query); /* a query waiting on a slow endpoint ends now */
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* ---- routed: the operator API's report and cancel ----------------------- */

/* A report over the shards: each shard's part added to the total. */
struct report_job {
    const struct config *cfg;
    struct reconcile_report *total, *part;
};

static enum route_step report_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct report_job *j = arg;
    enum db_status st = reconcile_report(c, j->cfg, j->part);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    reconcile_report_add(j->total, j->part, sh->index);
    return ROUTE_NEXT;
}

enum route_result reconcile_route_report(const struct route *rt, const struct config *cfg,
                                         struct reconcile_report *rep, struct route_scan *sc)
{
    struct report_job j = { cfg, rep, calloc(1, sizeof(*j.part)) };
    enum route_result r;
    size_t i;

    memset(sc, 0, sizeof(*sc));
    if (j.part == NULL) {
        route_fail_msg(&sc->fail, "reconcile_report", "out of memory");
        return ROUTE_FAILED;
    }
    r = route_scan(rt, 0, "reconcile_report", report_shard, &j, sc);
    for (i = 0; i < rt->set->n; i++)
        if (sc->missed[i])
            reconcile_report_add(rep, NULL, i);
    free(j.part);
    return r;
}

/* The stale orders of every shard, the limit oldest across them kept. */
struct stale_job {
    int age_s;
    struct stale_order *stale, *part, *merged;
    size_t limit, n;
};

static enum route_step stale_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct stale_job *j = arg;
    size_t got = 0, i;
    enum db_status st = stale_orders_list(c, j->age_s, j->part, j->limit, &got);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->part[i].shard = sh->index;
    reconcile_merge_stale(j->stale, j->n, j->part, got, j->merged, j->limit, &j->n);
    memcpy(j->stale, j->merged, j->n * sizeof(*j->stale));
    return ROUTE_NEXT;
}

/* The audit row of a stale-order cancel, in the cancel's transaction. */
static enum db_status audit_cancel(struct db_conn *c, const void *data, void *arg)
{
    const struct order_change *ch = data;
    const struct reconcile_cancel *rc = arg;

    return audit_append(c, rc->actor, "order.cancel_stale", ch->order.order_no,
                        "WAIT_PAY -> CANCELED", rc->rt->request_id);
}

/* Cancels the listed orders of shard sh over one connection, filling
 * their results. Sharded, a shard that fails midway is noted as missed in
 * rc->sc, its remaining orders ORDERS_UNAVAILABLE, and the others go on;
 * unsharded that is the whole answer's failure (ROUTE_UNAVAILABLE). A
 * database error is always ROUTE_FAILED. *fail says why. */
static enum route_result cancel_on_shard(struct reconcile_cancel *rc, const struct shard *sh,
                                         struct order_change *ch, struct route_failure *fail)
{
    const struct route *rt = rc->rt;
    const struct orders_hook audit = { audit_cancel, rc };
    const bool sharded = rt->set->sharded;
    enum route_result res = ROUTE_OK;
    struct route_hop h;
    bool down = false;

    route_hop_init(&h, rt, fail);
    h.uncounted = sharded; /* sharded, the other shards still answer */
    for (size_t i = 0; i < rc->n && res == ROUTE_OK; i++) {
        struct reconcile_canceled *it = &rc->items[i];
        struct order_transition_req tr = { .order_no = it->order.order_no,
                                           .to = ORDER_CANCELED,
                                           .only_from = ORDER_WAIT_PAY,
                                           .hook = &audit };

        if (it->order.shard != sh->index)
            continue;
        it->result = ORDERS_UNAVAILABLE;
        if (down)
            continue;
        if (route_hop_to(&h, sh, "orders_transition") == NULL) {
            down = true;
            if (!sharded)
                res = ROUTE_UNAVAILABLE;
            else
                route_scan_miss(rt, &rc->sc, sh, fail);
            continue;
        }
        it->result = orders_transition(h.c, &tr, ch);
        if (it->result == ORDERS_UNAVAILABLE || it->result == ORDERS_ERROR) {
            route_failed(&h, it->result == ORDERS_UNAVAILABLE, "orders_transition");
            if (it->result == ORDERS_ERROR)
                res = ROUTE_FAILED;
            else if (!sharded)
                res = ROUTE_UNAVAILABLE;
            else
                route_scan_miss(rt, &rc->sc, sh, fail);
            down = true;
            continue;
        }
        it->from = ch->from;
        if (it->result == ORDERS_OK) {
            rc->canceled++;
            log_info("stale order canceled", "order_no=%s actor=%s request_id=%s",
                     it->order.order_no, rc->actor, rt->request_id);
        }
    }
    route_hop_release(&h);
    return res;
}

/* Lists the stale orders of every shard into rc->items, the limit oldest
 * across them. */
static enum route_result list_stale(struct reconcile_cancel *rc, struct route_failure *fail)
{
    struct stale_job j = { .age_s = rc->age_s, .limit = rc->limit };
    enum route_result r = ROUTE_FAILED;

    if ((j.stale = calloc(rc->limit, sizeof(*j.stale))) == NULL ||
        (j.part = calloc(rc->limit, sizeof(*j.part))) == NULL ||
        (j.merged = calloc(rc->limit, sizeof(*j.merged))) == NULL) {
        route_fail_msg(fail, "reconcile_stale_orders", "out of memory");
        goto out;
    }
    r = route_scan(rc->rt, 0, "reconcile_stale_orders", stale_shard, &j, &rc->sc);
    if (r != ROUTE_OK) {
        *fail = rc->sc.fail;
        goto out;
    }
    for (size_t i = 0; i < j.n; i++)
        rc->items[i].order = j.stale[i];
    rc->n = j.n;
out:
    free(j.stale);
    free(j.part);
    free(j.merged);
    return r;
}

enum route_result reconcile_route_cancel_stale(const struct route *rt, struct reconcile_cancel *rc,
                                               struct route_failure *fail)
{
    struct order_change *ch = NULL;
    enum route_result r;

    rc->rt = rt;
    rc->n = 0;
    rc->canceled = 0;
    memset(fail, 0, sizeof(*fail));
    if ((r = list_stale(rc, fail)) != ROUTE_OK)
        return r;
    if ((ch = calloc(1, sizeof(*ch))) == NULL) {
        route_fail_msg(fail, "orders_transition", "out of memory");
        return ROUTE_FAILED;
    }
    for (size_t s = 0; s < rt->set->n && r == ROUTE_OK; s++)
        r = cancel_on_shard(rc, &rt->set->s[s], ch, fail);
    free(ch);
    return r;
}
