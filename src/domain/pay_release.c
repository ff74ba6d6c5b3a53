/* pay_release.c - an operator's release of a pay_no's binding: the
 * registry's RELEASING state, the fence on the bound order's shard, then
 * RELEASED, each step with its audit row in its own transaction. */
#include "pay_release.h"

#include <stdio.h>
#include <string.h>

#include "array.h"
#include "audit.h"
#include "log.h"
#include "pay.h"
#include "shard.h"

/* One step's transaction: the request, and what the step found. */
struct release_job {
    const struct release_request *req;
    struct release_outcome *out;
    enum release_result res;
    bool go_on; /* step 1: the fence and step 3 remain to be done */
};

/* Reads the binding of j->req->pay_no, locked. *found says whether
 * there is one; its order goes into order_no, its state into *state. */
static enum db_status lock_binding(struct db_conn *c, const char *pay_no, char order_no[ID_BUF],
                                   int64_t *state, bool *found)
{
    const char *p[] = { pay_no };
    struct db_row row;
    enum db_status st = db_query_one(c, ST_PAY_NO_LOCK, p, 1, &row, found);

    if (st != DB_OK || !*found)
        return st;
    if (db_row_str(&row, PNC_ORDER_NO, order_no, ID_BUF) != 0 ||
        db_row_int(&row, PNC_STATE, PAY_NO_BOUND, PAY_NO_RELEASED, state) != 0)
        return db_fail(c, "pay_no_registry row of pay_no %s is malformed", pay_no);
    return DB_OK;
}

/* Moves the binding from one state to another, with its audit row. */
static enum db_status move(struct db_conn *c, const struct release_request *req, int from, int to,
                           const char *action, const char *detail)
{
    char fb[DB_INT_BUF], tb[DB_INT_BUF];
    const char *p[] = { db_param_int(tb, to), req->pay_no, req->order_no, db_param_int(fb, from) };
    uint64_t affected = 0;
    enum db_status st = db_exec(c, ST_PAY_NO_SET_STATE, p, 4, &affected);

    if (st != DB_OK)
        return st;
    if (affected != 1)
        return db_fail(c, "pay_no_registry row of pay_no %s changed under its lock", req->pay_no);
    return audit_append(c, req->actor, action, req->pay_no, detail, req->request_id);
}

/* Step 1, on the registry's shard. */
static enum db_status begin_body(struct db_conn *c, void *arg)
{
    struct release_job *j = arg;
    char order_no[ID_BUF], detail[AUDIT_DETAIL_MAX + 1];
    int64_t state = 0;
    bool found = false;
    enum db_status st;

    j->go_on = false;
    j->out->repeat = false;
    if ((st = lock_binding(c, j->req->pay_no, order_no, &state, &found)) != DB_OK)
        return st;
    if (!found) {
        j->res = RELEASE_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (strcmp(order_no, j->req->order_no) != 0) {
        snprintf(j->out->bound_order_no, sizeof(j->out->bound_order_no), "%s", order_no);
        j->res = RELEASE_OTHER_ORDER;
        return DB_ROLLBACK;
    }
    j->res = RELEASE_OK;
    if (state == PAY_NO_RELEASED) {
        j->out->repeat = true;
        return DB_ROLLBACK;
    }
    j->go_on = true;
    if (state == PAY_NO_RELEASING)
        return DB_ROLLBACK; /* a release that stopped midway: resume it */
    snprintf(detail, sizeof(detail), "order_no=%s BOUND -> RELEASING", j->req->order_no);
    return move(c, j->req, PAY_NO_BOUND, PAY_NO_RELEASING, "pay_no.release", detail);
}

/* Step 2, on the bound order's shard: the fence, then the payment. The
 * fence row is written first and the payment read with a lock, while
 * pay_callback_v3 writes its payment first and reads the fence with a
 * lock: whichever commits first, the other sees it. */
static enum db_status fence_body(struct db_conn *c, void *arg)
{
    struct release_job *j = arg;
    const char *pf[] = { j->req->pay_no, j->req->order_no, j->req->actor };
    const char *pp[] = { j->req->pay_no };
    struct db_row row;
    bool found = false;
    enum db_status st;

    j->res = RELEASE_OK;
    st = db_exec(c, ST_PAY_NO_FENCE, pf, 3, NULL);
    if (st != DB_OK && st != DB_DUPLICATE) /* a duplicate: a release resumed */
        return st;
    if ((st = db_query_one(c, ST_PAY_LOCK_PAY_NO, pp, 1, &row, &found)) != DB_OK)
        return st;
    if (!found)
        return DB_OK;
    if (db_row_str(&row, 0, j->out->paid_order_no, sizeof(j->out->paid_order_no)) != 0)
        return db_fail(c, "payment_record of pay_no %s is malformed", j->req->pay_no);
    j->res = RELEASE_PAID;
    return DB_ROLLBACK;
}

/* Step 2 refused: the binding back to BOUND. */
static enum db_status refuse_body(struct db_conn *c, void *arg)
{
    struct release_job *j = arg;
    char detail[AUDIT_DETAIL_MAX + 1];

    snprintf(detail, sizeof(detail), "order_no=%s RELEASING -> BOUND: paid on order %s",
             j->req->order_no, j->out->paid_order_no);
    return move(c, j->req, PAY_NO_RELEASING, PAY_NO_BOUND, "pay_no.release_refused", detail);
}

/* Step 3, on the registry's shard. */
static enum db_status finish_body(struct db_conn *c, void *arg)
{
    struct release_job *j = arg;
    char order_no[ID_BUF], detail[AUDIT_DETAIL_MAX + 1];
    int64_t state = 0;
    bool found = false;
    enum db_status st;

    if ((st = lock_binding(c, j->req->pay_no, order_no, &state, &found)) != DB_OK)
        return st;
    if (found && state == PAY_NO_RELEASED && strcmp(order_no, j->req->order_no) == 0) {
        j->out->repeat = true; /* a twin of this request finished first */
        return DB_ROLLBACK;
    }
    if (!found || state != PAY_NO_RELEASING || strcmp(order_no, j->req->order_no) != 0)
        return db_fail(c, "pay_no_registry row of pay_no %s changed during its release",
                       j->req->pay_no);
    snprintf(detail, sizeof(detail), "order_no=%s RELEASING -> RELEASED", j->req->order_no);
    return move(c, j->req, PAY_NO_RELEASING, PAY_NO_RELEASED, "pay_no.released", detail);
}

/* Runs fn in a transaction on sh over h. RELEASE_OK to go on, or the
 * failure, recorded in h's failure. */
static enum release_result step(struct route_hop *h, const struct shard *sh, const char *name,
                                db_txn_fn fn, struct release_job *j)
{
    enum db_status st;

    if (route_hop_to(h, sh, name) == NULL)
        return RELEASE_UNAVAILABLE;
    st = db_txn(h->c, fn, j);
    if (st == DB_OK || st == DB_ROLLBACK)
        return RELEASE_OK;
    route_failed(h, db_retryable(st), name);
    return DB_FAILURE(st, RELEASE_UNAVAILABLE, RELEASE_ERROR);
}

enum release_result pay_release_route(const struct route *rt, const struct release_request *req,
                                      struct release_outcome *out, struct route_failure *fail)
{
    const struct shard *reg = shard_place(rt->set, req->pay_no);
    const struct shard *sh = shard_of_order(rt->set, req->order_no);
    struct release_job j = { .req = req, .out = out };
    struct route_hop h;
    enum release_result r;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if ((r = step(&h, reg, "pay_no release", begin_body, &j)) != RELEASE_OK ||
        j.res != RELEASE_OK || !j.go_on)
        goto out;
    /* An order_no that names no shard of ours can be paid nowhere: no fence. */
    if (sh != NULL && (r = step(&h, sh, "pay_no fence", fence_body, &j)) != RELEASE_OK)
        goto out;
    if (j.res == RELEASE_PAID) {
        if ((r = step(&h, reg, "pay_no release", refuse_body, &j)) == RELEASE_OK)
            j.res = RELEASE_PAID;
        goto out;
    }
    r = step(&h, reg, "pay_no release", finish_body, &j);
out:
    route_hop_release(&h);
    if (r == RELEASE_OK)
        r = j.res;
    if (r == RELEASE_OK)
        log_alert("PAY_NO_BINDING_RELEASED",
                  "pay_no=%s order_no=%s actor=%s repeat=%s request_id=%s", req->pay_no,
                  req->order_no, req->actor, out->repeat ? "true" : "false", req->request_id);
    else if (r == RELEASE_PAID)
        log_warn("pay_no release refused",
                 "pay_no=%s order_no=%s paid_order_no=%s actor=%s "
                 "request_id=%s",
                 req->pay_no, req->order_no, out->paid_order_no, req->actor, req->request_id);
    return r;
}

const char *release_result_str(enum release_result r)
{
    static const char *const names[] = { "OK",   "NOT_FOUND",   "OTHER_ORDER",
                                         "PAID", "UNAVAILABLE", "ERROR" };

    return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "UNKNOWN";
}
