/* orders.c - order create, status changes and the order view: the
 * transactions, the stock arithmetic and the reading of order rows. Knows
 * nothing of HTTP, tokens or Redis.
 *
 * Create relies on the database alone for correctness: the order insert
 * under UNIQUE(user_id, request_id) and the stock taken with UPDATE ...
 * WHERE num >= q forbid duplicates and overselling whatever guards the
 * caller puts in front. Every status change goes through the one transition
 * table (order_state.c) before any write. */
#include "orders.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "audit.h"
#include "ids.h"
#include "log.h"
#include "money.h"
#include "order_state.h"
#include "outbox.h"

#define ORDERS_NO_ATTEMPTS 3 /* fresh order_no after a (64-bit) collision */

/* Copies an identifier column; -1 unless it is a valid identifier. */
static int row_id(const struct db_row *r, unsigned int col, char out[ID_BUF])
{
    if (db_row_str(r, col, out, ID_BUF) != 0 || !validate_id(out)) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* Fills o from an enum order_col row; DB_ERROR (db_fail) when a column is
 * not what the schema promises. */
static enum db_status order_from_row(struct db_conn *c, const struct db_row *r,
                                     struct order_view *o)
{
    int64_t status = 0;

    memset(o, 0, sizeof(*o));
    if (row_id(r, OC_ORDER_NO, o->order_no) != 0 || row_id(r, OC_USER_ID, o->user_id) != 0 ||
        row_id(r, OC_REQUEST_ID, o->checkout_id) != 0 || row_id(r, OC_SKU, o->sku) != 0 ||
        db_row_int(r, OC_QUANTITY, 0, INT64_MAX, &o->quantity) != 0 ||
        db_row_cents(r, OC_AMOUNT, &o->amount_cents) != 0 ||
        db_row_int(r, OC_STATUS, 0, 99, &status) != 0 || !order_state_valid((int)status) ||
        db_row_str(r, OC_CREATE_TIME, o->create_time, sizeof(o->create_time)) != 0 ||
        db_row_str(r, OC_UPDATE_TIME, o->update_time, sizeof(o->update_time)) != 0) {
        memset(o, 0, sizeof(*o));
        return db_fail(c, "an orders row is malformed");
    }
    o->status = (int)status;
    return DB_OK;
}

/* Runs the caller's hook (if any) at the end of a transaction body whose
 * effect is written; a DB_ROLLBACK from it makes the result ORDERS_ABORTED. */
static enum db_status run_hook(struct db_conn *c, const struct orders_hook *hook, const void *data,
                               enum orders_result *result)
{
    enum db_status st;

    if (hook == NULL)
        return DB_OK;
    if ((st = hook->fn(c, data, hook->arg)) == DB_ROLLBACK)
        *result = ORDERS_ABORTED;
    return st;
}

/* ---- create -------------------------------------------------------------- */

struct create_job {
    const struct order_create_req *req;
    enum orders_result result; /* ORDERS_DUPLICATE: a duplicate key */
    struct order_view *order;  /* the new order when ORDERS_OK */
};

/* The sku's price into *price; *found false when the sku is unknown. */
static enum db_status stock_price(struct db_conn *c, const char *sku, int64_t *price, bool *found)
{
    const char *p[] = { sku };
    struct db_row row;
    enum db_status st;

    if ((st = db_query_one(c, ST_STOCK_PRICE, p, 1, &row, found)) != DB_OK || !*found)
        return st;
    if (db_row_cents(&row, SPC_PRICE, price) != 0)
        return db_fail(c, "stock price of sku %s is malformed", sku);
    return DB_OK;
}

/* The first statement of a create under a cap: the user's row of
 * order_user_lock, written, so the user's other creates on this database
 * wait for this one's commit or rollback. Being first, it comes before the
 * transaction's first read, whose snapshot then holds every create of the
 * user that committed before: the count of check_open is exact. */
static bool capped(const struct order_create_req *rq)
{
    return rq->max_open > 0 || rq->max_units_sku > 0 || rq->max_units > 0;
}

static enum db_status lock_user(struct db_conn *c, const struct order_create_req *rq)
{
    const char *p[] = { rq->user_id };

    if (!capped(rq))
        return DB_OK;
    return db_exec(c, ST_ORDER_USER_LOCK, p, 1, NULL);
}

/* The cap on a user's unpaid orders, counted with the new one inserted:
 * past it, *result is ORDERS_TOO_MANY_OPEN and the body rolls back. The
 * count is a plain read of the snapshot taken after lock_user, so it sees
 * every earlier create of the user and none runs beside it: exact. */
static enum db_status check_open(struct db_conn *c, const struct order_create_req *rq,
                                 enum orders_result *result)
{
    char wait_pay[DB_INT_BUF];
    const char *p[] = { rq->user_id, db_param_int(wait_pay, ORDER_WAIT_PAY) };
    struct db_row row;
    int64_t open = 0;
    bool found = false;
    enum db_status st;

    if (rq->max_open <= 0)
        return DB_OK;
    if ((st = db_query_one(c, ST_ORDER_OPEN_COUNT, p, 2, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_int(&row, 0, 0, INT64_MAX, &open) != 0)
        return db_fail(c, "malformed count of user %s's open orders", rq->user_id);
    if (open <= rq->max_open)
        return DB_OK;
    *result = ORDERS_TOO_MANY_OPEN;
    return DB_ROLLBACK;
}

/* The caps on the units of the user's unpaid orders, of this sku and of
 * all, counted with the new order inserted, like check_open (exact for
 * the same reason): past one, *result says which and the body rolls
 * back. */
static enum db_status check_units(struct db_conn *c, const struct order_create_req *rq,
                                  enum orders_result *result)
{
    char wait_pay[DB_INT_BUF];
    const char *p[] = { rq->sku, rq->user_id, db_param_int(wait_pay, ORDER_WAIT_PAY) };
    struct db_row row;
    int64_t of_sku = 0, all = 0;
    bool found = false;
    enum db_status st;

    if (rq->max_units_sku <= 0 && rq->max_units <= 0)
        return DB_OK;
    if ((st = db_query_one(c, ST_ORDER_OPEN_UNITS, p, 3, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_int(&row, 0, 0, INT64_MAX, &of_sku) != 0 ||
        db_row_int(&row, 1, 0, INT64_MAX, &all) != 0)
        return db_fail(c, "malformed count of user %s's open units", rq->user_id);
    if (rq->max_units_sku > 0 && of_sku > rq->max_units_sku)
        *result = ORDERS_USER_SKU_UNITS;
    else if (rq->max_units > 0 && all > rq->max_units)
        *result = ORDERS_USER_UNITS;
    else
        return DB_OK;
    return DB_ROLLBACK;
}

/* The transaction body; re-runnable: it resets its outputs and draws a new
 * order_no each time. */
static enum db_status create_txn(struct db_conn *c, void *arg)
{
    struct create_job *j = arg;
    const struct order_create_req *rq = j->req;
    struct order_view *o = j->order;
    char qty[DB_INT_BUF], amount[MONEY_STR_MAX], status[DB_INT_BUF];
    const char *ins[] = { o->order_no,
                          rq->user_id,
                          rq->checkout_id,
                          rq->sku,
                          qty,
                          amount,
                          db_param_int(status, ORDER_WAIT_PAY) };
    const char *take[] = { qty, rq->sku, qty };
    int64_t price = 0;
    uint64_t rows = 0;
    bool found = false;
    enum db_status st;

    memset(o, 0, sizeof(*o));
    j->result = ORDERS_OK;
    if ((st = lock_user(c, rq)) != DB_OK)
        return st;
    if (rq->order_no != NULL)
        snprintf(o->order_no, sizeof(o->order_no), "%s", rq->order_no);
    else if (ids_order_no(o->order_no) != 0)
        return db_fail(c, "cannot draw random bytes for an order_no");
    if ((st = stock_price(c, rq->sku, &price, &found)) != DB_OK)
        return st;
    if (!found) {
        j->result = ORDERS_NO_SKU;
        return DB_ROLLBACK;
    }
    if (money_mul(price, rq->quantity, &o->amount_cents) != MONEY_OK) {
        j->result = ORDERS_TOO_LARGE;
        return DB_ROLLBACK;
    }
    db_param_int(qty, rq->quantity);
    money_format(o->amount_cents, amount, sizeof(amount));
    if ((st = db_exec(c, ST_ORDER_INSERT, ins, 7, NULL)) == DB_DUPLICATE) {
        j->result = ORDERS_DUPLICATE;
        return DB_ROLLBACK;
    }
    if (st != DB_OK)
        return st;
    if ((st = check_open(c, rq, &j->result)) != DB_OK ||
        (st = check_units(c, rq, &j->result)) != DB_OK)
        return st;
    if ((st = db_exec(c, ST_STOCK_TAKE, take, 3, &rows)) != DB_OK)
        return st;
    if (rows == 0) {
        j->result = ORDERS_NO_STOCK;
        return DB_ROLLBACK;
    }
    snprintf(o->user_id, sizeof(o->user_id), "%s", rq->user_id);
    snprintf(o->checkout_id, sizeof(o->checkout_id), "%s", rq->checkout_id);
    snprintf(o->sku, sizeof(o->sku), "%s", rq->sku);
    o->quantity = rq->quantity;
    o->status = ORDER_WAIT_PAY;
    return run_hook(c, rq->hook, o, &j->result);
}

/* The order already made for (user_id, request_id), read outside the
 * failed transaction so that it sees what the other one committed. */
static enum db_status load_by_request(struct db_conn *c, const struct order_create_req *rq,
                                      struct order_view *o, bool *found)
{
    const char *p[] = { rq->user_id, rq->checkout_id };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_ORDER_BY_REQUEST, p, 2, &row, 1, &n);

    *found = false;
    if (st != DB_OK || n == 0)
        return st;
    if ((st = order_from_row(c, &row, o)) != DB_OK)
        return st;
    *found = true;
    return DB_OK;
}

enum orders_result orders_create(struct db_conn *c, const struct order_create_req *req,
                                 struct order_view *out)
{
    struct create_job j = { .req = req, .order = out };
    char drawn[ID_BUF];
    bool found = false;
    enum db_status st;

    memset(out, 0, sizeof(*out));
    for (int attempt = 0; attempt < ORDERS_NO_ATTEMPTS; attempt++) {
        st = db_txn(c, create_txn, &j);
        if (st != DB_OK && st != DB_ROLLBACK)
            return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
        if (j.result != ORDERS_DUPLICATE)
            return j.result;
        snprintf(drawn, sizeof(drawn), "%s", out->order_no);
        if ((st = load_by_request(c, req, out, &found)) != DB_OK)
            return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
        if (found)
            return ORDERS_DUPLICATE;
        if (req->order_no != NULL) {
            memset(out, 0, sizeof(*out));
            db_fail(c, "order_no %s of the checkout registry belongs to another checkout", drawn);
            return ORDERS_ERROR;
        }
        log_warn("order_no collision, drawing another", "order_no=%s", drawn);
    }
    memset(out, 0, sizeof(*out));
    db_fail(c, "cannot draw a unique order_no in %d attempts", ORDERS_NO_ATTEMPTS);
    return ORDERS_ERROR;
}

/* ---- sharded creation ---------------------------------------------------- */

enum orders_result orders_check_sku(struct db_conn *c, const char *sku, int64_t quantity)
{
    const char *p[] = { sku };
    struct db_row row;
    int64_t price = 0, amount = 0;
    size_t n = 0;
    enum db_status st;

    if ((st = db_query_retry(c, ST_STOCK_PRICE, p, 1, &row, 1, &n)) != DB_OK)
        return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
    if (n == 0)
        return ORDERS_NO_SKU;
    if (db_row_cents(&row, SPC_PRICE, &price) != 0) {
        db_fail(c, "stock price of sku %s is malformed", sku);
        return ORDERS_ERROR;
    }
    return money_mul(price, quantity, &amount) == MONEY_OK ? ORDERS_OK : ORDERS_TOO_LARGE;
}

/* The binding of (user_id, request_id), read after its INSERT hit the key. */
static enum orders_result checkout_read(struct db_conn *c, const struct order_create_req *rq,
                                        struct order_checkout *out)
{
    const char *p[] = { rq->user_id, rq->checkout_id };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_CHECKOUT_GET, p, 2, &row, 1, &n);

    if (st != DB_OK)
        return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
    if (n == 0 || row_id(&row, CKC_ORDER_NO, out->order_no) != 0 ||
        row_id(&row, CKC_SKU, out->sku) != 0 ||
        db_row_int(&row, CKC_QUANTITY, ORDERS_QTY_MIN, ORDERS_QTY_MAX, &out->quantity) != 0) {
        memset(out, 0, sizeof(*out));
        db_fail(c, "checkout_registry row of user %s is %s", rq->user_id,
                n == 0 ? "missing after a duplicate key" : "malformed");
        return ORDERS_ERROR;
    }
    return ORDERS_DUPLICATE;
}

enum orders_result orders_checkout_bind(struct db_conn *c, const struct order_create_req *req,
                                        const char *order_no, struct order_checkout *out)
{
    char qty[DB_INT_BUF];
    const char *p[] = { req->user_id, req->checkout_id, order_no, req->sku,
                        db_param_int(qty, req->quantity) };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    if ((st = db_exec_retry(c, ST_CHECKOUT_INSERT, p, 5, NULL)) == DB_DUPLICATE)
        return checkout_read(c, req, out);
    if (st != DB_OK)
        return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
    snprintf(out->order_no, sizeof(out->order_no), "%s", order_no);
    snprintf(out->sku, sizeof(out->sku), "%s", req->sku);
    out->quantity = req->quantity;
    return ORDERS_OK;
}

/* ---- status changes ------------------------------------------------------ */

struct transition_job {
    const struct order_transition_req *req;
    enum orders_result result;
    struct order_change *out;
};

/* Cancel: puts the order's quantity back on its sku. A sku removed from
 * stock since is logged and skipped: there is nothing to give back to. */
static enum db_status return_stock(struct db_conn *c, const struct order_view *o)
{
    char qty[DB_INT_BUF];
    const char *p[] = { db_param_int(qty, o->quantity), o->sku };
    uint64_t rows = 0;
    enum db_status st;

    if ((st = db_exec(c, ST_STOCK_RETURN, p, 2, &rows)) != DB_OK)
        return st;
    if (rows == 0)
        log_warn("cancelled order's sku is gone from stock", "order_no=%s sku=%s", o->order_no,
                 o->sku);
    return DB_OK;
}

/* Cancel of a PAID order: the customer paid for nothing, so each PAID
 * payment becomes REFUND_REQUIRED. The rows are locked first so the list
 * names exactly the payments the UPDATE changes. */
static enum db_status mark_refunds(struct db_conn *c, struct order_change *ch)
{
    char paid[DB_INT_BUF], refund[DB_INT_BUF];
    const char *sel[] = { ch->order.order_no, db_param_int(paid, PAYMENT_PAID) };
    const char *upd[] = { db_param_int(refund, PAYMENT_REFUND_REQUIRED), ch->order.order_no, paid };
    struct db_row *rows = calloc(ORDERS_REFUNDS_MAX, sizeof(*rows));
    size_t n = 0;
    enum db_status st;

    if (rows == NULL)
        return db_fail(c, "out of memory");
    if ((st = db_query(c, ST_PAY_BY_ORDER_STATUS_LOCK, sel, 2, rows, ORDERS_REFUNDS_MAX, &n)) !=
        DB_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (row_id(&rows[i], PKC_PAY_NO, ch->refunds[i].pay_no) != 0 ||
            db_row_cents(&rows[i], PKC_AMOUNT, &ch->refunds[i].amount_cents) != 0) {
            st = db_fail(c, "a payment_record row of order %s is malformed", ch->order.order_no);
            goto out;
        }
    }
    ch->nrefunds = n;
    st = db_exec(c, ST_PAY_REFUND_BY_ORDER, upd, 3, NULL);
out:
    free(rows);
    return st;
}

/* The event of a move; reason (an identifier-like word, or NULL) is
 * added to the payload as it is. */
static enum db_status write_event(struct db_conn *c, const struct order_change *ch, int to,
                                  const char *reason)
{
    char payload[OUTBOX_PAYLOAD_MAX];
    const char *type = outbox_type_for_status(to);

    if (type == NULL)
        return db_fail(c, "no event for a move to status %d", to);
    snprintf(payload, sizeof(payload), "{\"order_no\":\"%s\",\"from\":\"%s\",\"to\":\"%s\"%s%s%s}",
             ch->order.order_no, order_state_name(ch->from), order_state_name(to),
             reason != NULL ? ",\"reason\":\"" : "", reason != NULL ? reason : "",
             reason != NULL ? "\"" : "");
    return outbox_append(c, type, ch->order.order_no, payload);
}

/* The audit row of a change an operator key made (req->actor set). */
static enum db_status audit_transition(struct db_conn *c, const struct order_transition_req *req,
                                       int from)
{
    char detail[64];
    const char *action = req->to == ORDER_SHIPPED    ? "order.ship"
                         : req->to == ORDER_FINISHED ? "order.finish"
                                                     : "order.cancel";

    if (req->actor == NULL || req->actor[0] == '\0')
        return DB_OK;
    snprintf(detail, sizeof(detail), "%s -> %s", order_state_name(from), order_state_name(req->to));
    return audit_append(c, req->actor, action, req->order_no, detail,
                        req->request_id != NULL ? req->request_id : "");
}

/* Locks the order row into ch->order; *found false when there is none. */
static enum db_status lock_row(struct db_conn *c, const char *order_no, struct order_change *ch,
                               bool *found)
{
    const char *key[] = { order_no };
    struct db_row row;
    enum db_status st;

    if ((st = db_query_one(c, ST_ORDER_LOCK_ROW, key, 1, &row, found)) != DB_OK || !*found)
        return st;
    return order_from_row(c, &row, &ch->order);
}

/* The transaction body of every status change; re-runnable. */
static enum db_status transition_txn(struct db_conn *c, void *arg)
{
    struct transition_job *j = arg;
    struct order_change *ch = j->out;
    int to = j->req->to;
    char tos[DB_INT_BUF], froms[DB_INT_BUF];
    const char *cas[] = { db_param_int(tos, to), j->req->order_no, froms };
    uint64_t rows = 0;
    bool found = false;
    enum db_status st;

    memset(ch, 0, sizeof(*ch));
    j->result = ORDERS_OK;
    if ((st = lock_row(c, j->req->order_no, ch, &found)) != DB_OK)
        return st;
    if (!found) {
        j->result = ORDERS_NOT_FOUND;
        return DB_ROLLBACK;
    }
    ch->from = ch->order.status;
    if (ch->from == to) {
        j->result = ORDERS_DUPLICATE;
        return DB_ROLLBACK;
    }
    if (!order_state_allowed(ch->from, to) ||
        (j->req->only_from != 0 && ch->from != j->req->only_from)) {
        j->result = ORDERS_ILLEGAL;
        return DB_ROLLBACK;
    }
    if (to == ORDER_CANCELED && ch->from == ORDER_PAID && j->req->no_refund) {
        j->result = ORDERS_MOVES_MONEY;
        return DB_ROLLBACK;
    }
    db_param_int(froms, ch->from);
    if ((st = db_exec(c, ST_ORDER_CAS, cas, 3, &rows)) != DB_OK)
        return st;
    if (rows != 1)
        return DB_RETRY; /* cannot happen under FOR UPDATE: read again */
    if (to == ORDER_CANCELED) {
        if ((st = return_stock(c, &ch->order)) != DB_OK)
            return st;
        if (ch->from == ORDER_PAID && (st = mark_refunds(c, ch)) != DB_OK)
            return st;
    }
    if ((st = write_event(c, ch, to, j->req->reason)) != DB_OK ||
        (st = audit_transition(c, j->req, ch->from)) != DB_OK)
        return st;
    ch->order.status = to;
    return run_hook(c, j->req->hook, ch, &j->result);
}

enum orders_result orders_transition(struct db_conn *c, const struct order_transition_req *req,
                                     struct order_change *out)
{
    struct transition_job j = { .req = req, .out = out };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    st = db_txn(c, transition_txn, &j);
    if (st != DB_OK && st != DB_ROLLBACK)
        return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
    return j.result;
}

/* ---- view ---------------------------------------------------------------- */

struct view_job {
    const char *order_no;
    enum orders_result result;
    struct order_detail *out;
};

static enum db_status payment_from_row(struct db_conn *c, const struct db_row *r,
                                       struct order_payment *p)
{
    int64_t status = 0;

    if (row_id(r, PLC_PAY_NO, p->pay_no) != 0 ||
        db_row_cents(r, PLC_AMOUNT, &p->amount_cents) != 0 ||
        db_row_int(r, PLC_STATUS, PAYMENT_PAID, PAYMENT_REFUND_SETTLED, &status) != 0 ||
        db_row_str(r, PLC_CREATE_TIME, p->create_time, sizeof(p->create_time)) != 0)
        return db_fail(c, "a payment_record row is malformed");
    p->status = (int)status;
    return DB_OK;
}

/* Reads the order and its payments in one snapshot. */
static enum db_status view_txn(struct db_conn *c, void *arg)
{
    struct view_job *j = arg;
    struct order_detail *d = j->out;
    const char *key[] = { j->order_no };
    struct db_row row, *rows = NULL;
    size_t n = 0;
    enum db_status st;

    memset(d, 0, sizeof(*d));
    j->result = ORDERS_NOT_FOUND;
    if ((st = db_query(c, ST_ORDER_GET, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0)
        return DB_ROLLBACK;
    if ((st = order_from_row(c, &row, &d->order)) != DB_OK)
        return st;
    if ((rows = calloc(ORDERS_PAYMENTS_MAX, sizeof(*rows))) == NULL)
        return db_fail(c, "out of memory");
    if ((st = db_query(c, ST_PAY_BY_ORDER, key, 1, rows, ORDERS_PAYMENTS_MAX, &n)) != DB_OK)
        goto out;
    for (size_t i = 0; i < n; i++)
        if ((st = payment_from_row(c, &rows[i], &d->payments[i])) != DB_OK)
            goto out;
    d->npayments = n;
    j->result = ORDERS_OK;
out:
    free(rows);
    return st;
}

enum orders_result orders_view(struct db_conn *c, const char *order_no, struct order_detail *out)
{
    struct view_job j = { .order_no = order_no, .out = out };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    st = db_txn(c, view_txn, &j);
    if (st != DB_OK && st != DB_ROLLBACK)
        return DB_FAILURE(st, ORDERS_UNAVAILABLE, ORDERS_ERROR);
    return j.result;
}

const char *orders_result_str(enum orders_result r)
{
    static const char *const names[] = {
        "OK",          "DUPLICATE",     "NOT_FOUND",      "NO_SKU",     "NO_STOCK",
        "TOO_LARGE",   "TOO_MANY_OPEN", "USER_SKU_UNITS", "USER_UNITS", "ILLEGAL",
        "MOVES_MONEY", "ABORTED",       "UNAVAILABLE",    "ERROR"
    };

    return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "UNKNOWN";
}
