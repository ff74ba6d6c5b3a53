/* pay.c - applies a payment: the dedupe insert, the order lock, the amount
 * check and the state machine's compare-and-set, in one transaction, plus
 * the alert lines and counters of each result. Knows nothing of HTTP.
 *
 * Two lines of defence: the payment_record insert (UNIQUE pay_no; a
 * duplicate key, and only that, means "seen before"), then the CAS
 * WAIT_PAY -> PAID with its order.paid outbox row. Either all of it
 * commits or none of it does, so any retry is safe. */
#include "pay.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "outbox.h"

/* A transaction's state: the request, and what the last attempt found. */
struct pay_job {
    const struct pay_request *req;
    enum pay_result result;       /* PAY_REPLAY: the insert met a duplicate key */
    int order_status;
    int64_t order_amount_cents;
};

static enum pay_result from_db(enum db_status st)
{
    return st == DB_UNAVAILABLE || st == DB_RETRY ? PAY_UNAVAILABLE : PAY_ERROR;
}

/* Reads the record of req->pay_no into out->stored_*, out->outcome and
 * out->order_status. *found is false when there is none. */
static enum db_status load_seen(struct db_conn *c, const struct pay_request *req,
                                struct pay_outcome *out, bool *found)
{
    const char *p[] = { req->pay_no };
    struct db_row row;
    int64_t outcome = 0, status = 0;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_PAY_SELECT, p, 1, &row, 1, &n);

    *found = false;
    if (st != DB_OK || n == 0)
        return st;
    if (db_row_str(&row, PSC_ORDER_NO, out->stored_order_no, sizeof(out->stored_order_no)) != 0 ||
        db_row_cents(&row, PSC_AMOUNT, &out->stored_amount_cents) != 0 ||
        db_row_int(&row, PSC_OUTCOME, PAYMENT_PAID, PAYMENT_REFUND_REQUIRED, &outcome) != 0 ||
        (!db_row_is_null(&row, PSC_ORDER_STATUS) &&
         (db_row_int(&row, PSC_ORDER_STATUS, 0, 99, &status) != 0 ||
          !order_state_valid((int)status))))
        return db_fail(c, "payment_record of pay_no %s is malformed", req->pay_no);
    out->outcome = (int)outcome;
    out->order_status = (int)status;
    *found = true;
    return DB_OK;
}

/* Answers a recorded pay_no: the same payment again is a replay of the
 * first outcome; the same pay_no with another order or amount is a
 * conflict. */
static enum pay_result seen_result(const struct pay_request *req, const struct pay_outcome *out)
{
    if (strcmp(out->stored_order_no, req->order_no) != 0 ||
        out->stored_amount_cents != req->amount_cents)
        return PAY_CONFLICT;
    return PAY_REPLAY;
}

/* Locks the order row; *found false when there is none. */
static enum db_status lock_order(struct db_conn *c, struct pay_job *j, bool *found)
{
    const char *key[] = { j->req->order_no };
    struct db_row row;
    int64_t status = 0;
    enum db_status st;

    if ((st = db_query_one(c, ST_ORDER_LOCK, key, 1, &row, found)) != DB_OK || !*found)
        return st;
    if (db_row_cents(&row, OLC_AMOUNT, &j->order_amount_cents) != 0 ||
        db_row_int(&row, OLC_STATUS, 0, 99, &status) != 0 || !order_state_valid((int)status)) {
        *found = false;
        return db_fail(c, "order %s is malformed", j->req->order_no);
    }
    j->order_status = (int)status;
    return DB_OK;
}

/* WAIT_PAY -> PAID by compare-and-set, with the order.paid event. *moved
 * is false when the order had left WAIT_PAY. */
static enum db_status mark_paid(struct db_conn *c, struct pay_job *j, bool *moved)
{
    const struct pay_request *req = j->req;
    char to[DB_INT_BUF], from[DB_INT_BUF], amount[MONEY_STR_MAX], payload[OUTBOX_PAYLOAD_MAX];
    const char *cas[] = { db_param_int(to, ORDER_PAID), req->order_no,
                          db_param_int(from, j->order_status) };
    uint64_t rows = 0;
    enum db_status st;

    *moved = false;
    if (!order_state_allowed(j->order_status, ORDER_PAID))
        return DB_OK;
    if ((st = db_exec(c, ST_ORDER_CAS, cas, 3, &rows)) != DB_OK || rows != 1)
        return st;
    snprintf(payload, sizeof(payload), "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}",
             req->order_no, req->pay_no, money_format(req->amount_cents, amount, sizeof(amount)));
    if ((st = outbox_append(c, OUTBOX_ORDER_PAID, req->order_no, payload)) != DB_OK)
        return st;
    j->order_status = ORDER_PAID;
    *moved = true;
    return DB_OK;
}

/* A second charge on one order: the record stays, as REFUND_REQUIRED. */
static enum db_status mark_refund(struct db_conn *c, const struct pay_request *req)
{
    char status[DB_INT_BUF], outcome[DB_INT_BUF];
    const char *p[] = { db_param_int(status, PAYMENT_REFUND_REQUIRED),
                        db_param_int(outcome, PAYMENT_REFUND_REQUIRED), req->pay_no };

    return db_exec(c, ST_PAY_MARK_REFUND, p, 3, NULL);
}

/* The transaction body; re-runnable, it resets its outputs first. */
static enum db_status pay_txn(struct db_conn *c, void *arg)
{
    struct pay_job *j = arg;
    const struct pay_request *req = j->req;
    char amount[MONEY_STR_MAX], status[DB_INT_BUF], outcome[DB_INT_BUF];
    const char *ins[] = { req->pay_no, req->order_no,
                          money_format(req->amount_cents, amount, sizeof(amount)),
                          db_param_int(status, PAYMENT_PAID), db_param_int(outcome, PAYMENT_PAID) };
    bool found = false, moved = false;
    enum db_status st;

    j->result = PAY_REPLAY;
    j->order_status = 0;
    j->order_amount_cents = 0;
    if ((st = db_exec(c, ST_PAY_INSERT, ins, 5, NULL)) == DB_DUPLICATE)
        return DB_ROLLBACK;                   /* seen before: answer from the record */
    if (st != DB_OK)
        return st;
    if ((st = lock_order(c, j, &found)) != DB_OK)
        return st;
    if (!found) {
        j->result = PAY_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (j->order_amount_cents != req->amount_cents) {
        j->result = PAY_MISMATCH;
        return DB_ROLLBACK;
    }
    if ((st = mark_paid(c, j, &moved)) != DB_OK)
        return st;
    if (moved) {
        j->result = PAY_PAID;
        return DB_OK;
    }
    if ((st = mark_refund(c, req)) != DB_OK)
        return st;
    j->result = PAY_REFUND_REQUIRED;
    return DB_OK;
}

enum pay_result pay_apply(struct db_conn *c, const struct pay_request *req,
                          struct pay_outcome *out)
{
    struct pay_job j = { .req = req };
    enum db_status st;
    bool found = false;

    memset(out, 0, sizeof(*out));
    /* Fast path for gateway retries: a recorded pay_no needs no write. The
     * insert in the transaction stays the authority for races. */
    if ((st = load_seen(c, req, out, &found)) != DB_OK)
        return from_db(st);
    if (found)
        return seen_result(req, out);
    st = db_txn(c, pay_txn, &j);
    if (st != DB_OK && st != DB_ROLLBACK)
        return from_db(st);
    if (j.result == PAY_REPLAY) {             /* lost a race to the same pay_no */
        if ((st = load_seen(c, req, out, &found)) != DB_OK)
            return from_db(st);
        if (!found) {
            db_fail(c, "pay_no %s is a duplicate key, yet has no record", req->pay_no);
            return PAY_ERROR;
        }
        return seen_result(req, out);
    }
    out->order_status = j.order_status;
    out->outcome = j.result == PAY_REFUND_REQUIRED ? PAYMENT_REFUND_REQUIRED : PAYMENT_PAID;
    out->order_amount_cents = j.order_amount_cents;
    return j.result;
}

void pay_report(struct metrics *m, const struct pay_request *req, enum pay_result r,
                const struct pay_outcome *out, const char *request_id)
{
    char amount[MONEY_STR_MAX], other[MONEY_STR_MAX];

    money_format(req->amount_cents, amount, sizeof(amount));
    switch (r) {
    case PAY_PAID:
        log_info("order paid", "order_no=%s pay_no=%s amount=%s request_id=%s", req->order_no,
                 req->pay_no, amount, request_id);
        break;
    case PAY_REFUND_REQUIRED:
        metrics_inc(m, M_DOUBLE_PAYMENT);
        log_alert("REFUND_REQUIRED", "order_no=%s pay_no=%s amount=%s order_status=%s request_id=%s",
                  req->order_no, req->pay_no, amount, order_state_name(out->order_status),
                  request_id);
        break;
    case PAY_REPLAY:
        metrics_inc(m, M_DUP_CALLBACK);
        break;
    case PAY_CONFLICT:
        metrics_inc(m, M_PAY_NO_CONFLICT);
        log_alert("PAY_NO_CONFLICT",
                  "pay_no=%s order_no=%s amount=%s stored_order_no=%s stored_amount=%s request_id=%s",
                  req->pay_no, req->order_no, amount, out->stored_order_no,
                  money_format(out->stored_amount_cents, other, sizeof(other)), request_id);
        break;
    case PAY_NOT_FOUND:
        log_alert("ORDER_NOT_FOUND", "order_no=%s pay_no=%s amount=%s request_id=%s",
                  req->order_no, req->pay_no, amount, request_id);
        break;
    case PAY_MISMATCH:
        metrics_inc(m, M_AMOUNT_MISMATCH);
        log_alert("AMOUNT_MISMATCH", "order_no=%s pay_no=%s amount=%s order_amount=%s request_id=%s",
                  req->order_no, req->pay_no, amount,
                  money_format(out->order_amount_cents, other, sizeof(other)), request_id);
        break;
    case PAY_UNAVAILABLE:
    case PAY_ERROR:
        break;                                /* the caller logs these with db_errstr */
    }
}

const char *pay_result_str(enum pay_result r)
{
    static const char *const names[] = { "PAID", "REFUND_REQUIRED", "REPLAY", "CONFLICT",
                                         "NOT_FOUND", "MISMATCH", "UNAVAILABLE", "ERROR" };

    return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "UNKNOWN";
}
