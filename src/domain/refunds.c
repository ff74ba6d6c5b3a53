/* refunds.c - listing and settling REFUND_REQUIRED payments, with the
 * audit row of each settlement in the same transaction. */
#include "refunds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "ids.h"
#include "money.h"
#include "order_state.h"
#include "route.h"

static int opt_str(const struct db_row *r, unsigned int col, char *out, size_t outsz)
{
    if (db_row_is_null(r, col)) {
        out[0] = '\0';
        return 0;
    }
    return db_row_str(r, col, out, outsz);
}

static int read_entry(const struct db_row *r, struct refund_entry *e)
{
    int64_t status;

    memset(e, 0, sizeof(*e));
    if (db_row_str(r, RFC_PAY_NO, e->pay_no, sizeof(e->pay_no)) != 0 ||
        db_row_str(r, RFC_ORDER_NO, e->order_no, sizeof(e->order_no)) != 0 ||
        db_row_cents(r, RFC_AMOUNT, &e->amount_cents) != 0 ||
        db_row_int(r, RFC_STATUS, PAYMENT_PAID, PAYMENT_REFUND_SETTLED, &status) != 0 ||
        db_row_str(r, RFC_CREATE_TIME, e->create_time, sizeof(e->create_time)) != 0 ||
        opt_str(r, RFC_REFERENCE, e->reference, sizeof(e->reference)) != 0 ||
        opt_str(r, RFC_SETTLED_BY, e->settled_by, sizeof(e->settled_by)) != 0 ||
        opt_str(r, RFC_SETTLED_AT, e->settled_at, sizeof(e->settled_at)) != 0)
        return -1;
    e->status = (int)status;
    return 0;
}

enum refunds_result refunds_list(struct db_conn *c, int status, struct refund_entry *out,
                                 size_t max, size_t *n)
{
    char stb[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[] = { db_param_int(stb, status), db_param_int(lim, (int64_t)max) };
    struct db_row *rows;
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (max > REFUNDS_LIST_MAX)
        max = REFUNDS_LIST_MAX;
    if (max == 0)
        return REFUNDS_OK;
    if ((rows = calloc(max, sizeof(*rows))) == NULL) {
        db_fail(c, "refunds: out of memory");
        return REFUNDS_ERROR;
    }
    st = db_query_retry(c, ST_REFUND_LIST, p, 2, rows, max, &got);
    for (i = 0; st == DB_OK && i < got; i++)
        if (read_entry(&rows[i], &out[i]) != 0)
            st = db_fail(c, "refunds: malformed payment row");
    free(rows);
    if (st != DB_OK)
        return DB_FAILURE(st, REFUNDS_UNAVAILABLE, REFUNDS_ERROR);
    *n = got;
    return REFUNDS_OK;
}

struct settle_job {
    const struct shard_set *set;
    const struct shard *sh;
    const char *pay_no, *reference, *actor, *request_id;
    struct refund_entry *out;
    enum refunds_result result;
};

/* The refund ledger's refunds of a payment, as settling needs them. These
 * numbers mirror enum refund_state (refund.h), which this module does not
 * include: refund.c uses the queue, not the other way round. */
enum {
    LEDGER_AWAITING = 0,
    LEDGER_REQUESTED = 1,
    LEDGER_SUBMITTED = 2,
    LEDGER_SUCCEEDED = 3,
    LEDGER_UNKNOWN = 5,
    LEDGER_ORIGIN_MANUAL = 4
};

/* A refund of the payment under way (not final): its number into j->out
 * ->live_refund_no, found or not. */
static enum db_status live_refund(struct db_conn *c, struct settle_job *j, bool *found)
{
    char s0[DB_INT_BUF], s1[DB_INT_BUF], s2[DB_INT_BUF], s3[DB_INT_BUF];
    const char *p[] = { j->pay_no, db_param_int(s0, LEDGER_AWAITING),
                        db_param_int(s1, LEDGER_REQUESTED), db_param_int(s2, LEDGER_SUBMITTED),
                        db_param_int(s3, LEDGER_UNKNOWN) };
    struct db_row row;
    enum db_status st;

    if ((st = db_query_one(c, ST_RF_LIVE, p, 5, &row, found)) != DB_OK || !*found)
        return st;
    if (db_row_str(&row, 0, j->out->live_refund_no, sizeof(j->out->live_refund_no)) != 0)
        return db_fail(c, "refunds: malformed refund row of %s", j->pay_no);
    return DB_OK;
}

/* Records in the ledger what the settle says went back outside the
 * service: what the payment's succeeded refunds leave, as a SUCCEEDED
 * refund of origin MANUAL with the reference as the gateway's id, so that
 * no later refund of any path finds room in the payment. Nothing when the
 * refunds already gave it all back. */
static enum db_status ledger_settled(struct db_conn *c, struct settle_job *j)
{
    char tail[IDS_ORDER_NO_BUF], refund_no[ID_BUF], amt[32], stb[DB_INT_BUF], orb[DB_INT_BUF];
    char dedupe[ID_BUF + 8], reason[REFUNDS_REF_MAX + 32];
    const char *sp[] = { j->pay_no, db_param_int(stb, LEDGER_SUCCEEDED) };
    const char *ins[] = { refund_no,    amt,      stb,      db_param_int(orb, LEDGER_ORIGIN_MANUAL),
                          dedupe,       reason,   j->actor, j->actor,
                          j->reference, j->pay_no };
    struct db_row row;
    int64_t succeeded = 0, left;
    enum db_status st;
    bool found = false;

    if ((st = db_query_one(c, ST_RF_STATE_SUM, sp, 2, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_cents(&row, 0, &succeeded) != 0)
        return db_fail(c, "refunds: unreadable refund sum of %s", j->pay_no);
    if ((left = j->out->amount_cents - succeeded) <= 0)
        return DB_OK;
    if (ids_order_no(tail) != 0)
        return db_fail(c, "refunds: no randomness for a refund number");
    tail[0] = 'R';
    if (shard_order_no(j->set, j->sh, tail, refund_no, ID_BUF) != 0)
        return db_fail(c, "refunds: refund number does not fit");
    money_format(left, amt, sizeof(amt));
    snprintf(dedupe, sizeof(dedupe), "settle:%s", j->pay_no);
    snprintf(reason, sizeof(reason), "settled by hand: %s", j->reference);
    st = db_exec(c, ST_RF_INSERT_SETTLED, ins, 10, NULL);
    return st == DB_DUPLICATE ? DB_RETRY : st; /* the same 64 random bits: draw again */
}

static enum db_status settle_txn(struct db_conn *c, void *arg)
{
    struct settle_job *j = arg;
    char settled[DB_INT_BUF], required[DB_INT_BUF], detail[128];
    const char *key[] = { j->pay_no };
    const char *up[] = { db_param_int(settled, PAYMENT_REFUND_SETTLED), j->reference, j->actor,
                         j->pay_no, db_param_int(required, PAYMENT_REFUND_REQUIRED) };
    struct db_row row;
    size_t n = 0;
    uint64_t rows = 0;
    enum db_status st;
    bool live = false;

    memset(j->out, 0, sizeof(*j->out));
    j->result = REFUNDS_ERROR;
    if ((st = db_query(c, ST_REFUND_LOCK, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0) {
        j->result = REFUNDS_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (read_entry(&row, j->out) != 0)
        return db_fail(c, "refunds: malformed payment row");
    if (j->out->status == PAYMENT_PAID) {
        j->result = REFUNDS_NOT_REQUIRED;
        return DB_ROLLBACK;
    }
    if (j->out->status == PAYMENT_REFUND_SETTLED) {
        j->result =
            strcmp(j->out->reference, j->reference) == 0 ? REFUNDS_DUPLICATE : REFUNDS_CONFLICT;
        return DB_ROLLBACK;
    }
    /* Under the payment's row lock, as every refund is made: a refund on
     * its way through the gateway holds its amount, and a settle over it
     * would give the money back twice. */
    if ((st = live_refund(c, j, &live)) != DB_OK)
        return st;
    if (live) {
        j->result = REFUNDS_REFUND_LIVE;
        return DB_ROLLBACK;
    }
    if ((st = ledger_settled(c, j)) != DB_OK)
        return st;
    if ((st = db_exec(c, ST_REFUND_SETTLE, up, 5, &rows)) != DB_OK)
        return st;
    if (rows != 1)
        return db_fail(c, "refunds: %s changed under its row lock", j->pay_no);
    snprintf(detail, sizeof(detail), "reference=%s", j->reference);
    if ((st = audit_append(c, j->actor, "refund.settle", j->pay_no, detail, j->request_id)) !=
        DB_OK)
        return st;
    if ((st = db_query(c, ST_REFUND_LOCK, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n != 1 || read_entry(&row, j->out) != 0)
        return db_fail(c, "refunds: settled payment %s unreadable", j->pay_no);
    j->result = REFUNDS_OK;
    return DB_OK;
}

enum refunds_result refunds_settle(struct db_conn *c, const struct shard_set *set,
                                   const struct shard *sh, const struct refunds_settle_req *sr,
                                   const char *request_id, struct refund_entry *out)
{
    struct settle_job j = { set,       sh,         sr->pay_no, sr->reference,
                            sr->actor, request_id, out,        REFUNDS_ERROR };
    enum db_status st = db_txn(c, settle_txn, &j);

    if (st == DB_OK || st == DB_ROLLBACK)
        return j.result;
    return DB_FAILURE(st, REFUNDS_UNAVAILABLE, REFUNDS_ERROR);
}

enum refunds_result refunds_registry_order(struct db_conn *c, const char *pay_no,
                                           char order_no[ID_BUF], bool *found)
{
    const char *p[] = { pay_no };
    struct db_row row;
    enum db_status st;
    size_t n = 0;

    *found = false;
    order_no[0] = '\0';
    if ((st = db_query_retry(c, ST_PAY_NO_OWNER, p, 1, &row, 1, &n)) != DB_OK)
        return DB_FAILURE(st, REFUNDS_UNAVAILABLE, REFUNDS_ERROR);
    if (n == 0)
        return REFUNDS_OK;
    if (db_row_str(&row, PNC_ORDER_NO, order_no, ID_BUF) != 0) {
        db_fail(c, "refunds: malformed pay_no_registry row");
        return REFUNDS_ERROR;
    }
    *found = true;
    return REFUNDS_OK;
}

static bool refund_before(const struct refund_entry *a, const struct refund_entry *b)
{
    int t = strcmp(a->create_time, b->create_time);

    return t < 0 || (t == 0 && strcmp(a->pay_no, b->pay_no) <= 0);
}

void refunds_merge(const struct refund_entry *a, size_t na, const struct refund_entry *b, size_t nb,
                   struct refund_entry *out, size_t max, size_t *n)
{
    size_t i = 0, j = 0, k = 0;

    while (k < max && (i < na || j < nb))
        out[k++] = j >= nb || (i < na && refund_before(&a[i], &b[j])) ? a[i++] : b[j++];
    *n = k;
}

/* ---- routed ---------------------------------------------------------------- */

/* A listing over the shards: each shard's oldest, merged into the oldest
 * across them. */
struct list_job {
    int status;
    struct refund_entry *items, *part, *merged;
    size_t limit, n;
};

static enum route_step list_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct list_job *j = arg;
    size_t got = 0, i;
    enum refunds_result r = refunds_list(c, j->status, j->part, j->limit, &got);

    if (r != REFUNDS_OK)
        return r == REFUNDS_UNAVAILABLE ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->part[i].shard = sh->index;
    refunds_merge(j->items, j->n, j->part, got, j->merged, j->limit, &j->n);
    memcpy(j->items, j->merged, j->n * sizeof(*j->items));
    return ROUTE_NEXT;
}

enum route_result refunds_route_list(const struct route *rt, int status, struct refund_entry *items,
                                     size_t limit, size_t *n, struct route_scan *sc)
{
    struct list_job j = { .status = status, .items = items, .limit = limit };
    enum route_result r;

    *n = 0;
    memset(sc, 0, sizeof(*sc));
    if ((j.part = calloc(limit, sizeof(*j.part))) == NULL ||
        (j.merged = calloc(limit, sizeof(*j.merged))) == NULL) {
        route_fail_msg(&sc->fail, "refunds_list", "out of memory");
        r = ROUTE_FAILED;
        goto out;
    }
    r = route_scan(rt, 0, "refunds_list", list_shard, &j, sc);
    *n = j.n;
out:
    free(j.part);
    free(j.merged);
    return r;
}

/* refunds_settle on sh. REFUNDS_NOT_FOUND when the payment is not there. */
static enum refunds_result settle_on(struct route_hop *h, const struct shard *sh,
                                     const struct refunds_settle_req *sr, struct refund_entry *e)
{
    enum refunds_result r;

    if (route_hop_to(h, sh, "refunds_settle") == NULL)
        return REFUNDS_UNAVAILABLE;
    r = refunds_settle(h->c, h->rt->set, sh, sr, h->rt->request_id, e);
    e->shard = sh->index;
    if (r == REFUNDS_UNAVAILABLE || r == REFUNDS_ERROR)
        route_failed(h, r == REFUNDS_UNAVAILABLE, "refunds_settle");
    route_hop_release(h);
    return r;
}

const struct shard *refunds_pay_shard(const struct route *rt, const char *pay_no)
{
    const struct shard *reg = shard_place(rt->set, pay_no);
    char order_no[ID_BUF];
    struct route_failure f;
    struct route_hop h;
    bool found = false;

    route_hop_init(&h, rt, &f);
    h.uncounted = true;
    if (route_hop_to(&h, reg, "refunds_registry_order") == NULL)
        return NULL;
    if (refunds_registry_order(h.c, pay_no, order_no, &found) != REFUNDS_OK) {
        route_failed(&h, true, "refunds_registry_order");
        route_log_failure(&f, rt->request_id);
    }
    route_hop_release(&h);
    return found ? shard_of_order(rt->set, order_no) : NULL;
}

enum refunds_result refunds_route_settle(const struct route *rt,
                                         const struct refunds_settle_req *sr,
                                         struct refund_entry *e, struct route_failure *fail)
{
    const struct shard *sh = rt->set->sharded ? refunds_pay_shard(rt, sr->pay_no) : &rt->set->s[0];
    enum refunds_result r;
    struct route_hop h;
    bool missed = false;
    size_t i;

    route_hop_init(&h, rt, fail);
    if (sh != NULL)
        return settle_on(&h, sh, sr, e);
    /* Asked in turn: a shard that could not answer makes a payment found
     * nowhere a 503, not a 404. */
    for (i = 0; i < rt->set->n; i++) {
        r = settle_on(&h, &rt->set->s[i], sr, e);
        if (r == REFUNDS_UNAVAILABLE) {
            route_log_failure(fail, rt->request_id);
            fail->logged = true;
            missed = true;
            continue;
        }
        if (r != REFUNDS_NOT_FOUND)
            return r;
    }
    return missed ? REFUNDS_UNAVAILABLE : REFUNDS_NOT_FOUND;
}
