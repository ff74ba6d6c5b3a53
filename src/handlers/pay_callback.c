/* pay_callback.c - POST /pay/callback: the bank's payment notification.
 *
 * Two lines of defence in one transaction: the payment_record insert
 * (UNIQUE pay_no; a duplicate key, and only that, means "seen before"),
 * then the state machine's CAS WAIT_PAY -> PAID with its order.paid outbox
 * row. Either all of it commits or none of it does, so any retry is safe.
 * A payment for an order that is no longer waiting is kept as
 * REFUND_REQUIRED: the customer was charged twice and someone must act. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "db.h"
#include "handler_util.h"
#include "handlers.h"
#include "jsonutil.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "server.h"
#include "signature.h"
#include "validate.h"

struct pay_callback {
    char order_no[ID_BUF];
    char pay_no[ID_BUF];
    int64_t amount_cents;
    char amount[MONEY_STR_MAX];               /* canonical "899.00" */
};

enum pay_outcome {
    PAY_OUT_PAID,
    PAY_OUT_REFUND,                           /* second charge on one order */
    PAY_OUT_SEEN,                             /* pay_no exists: answer from the record */
    PAY_OUT_NOT_FOUND,
    PAY_OUT_MISMATCH
};

struct pay_job {
    const struct pay_callback *cb;
    enum pay_outcome outcome;
    int order_status;                         /* after the transaction */
    int64_t order_cents;                      /* for the mismatch alert */
};

/* What payment_record says of a pay_no, joined with its order's status. */
struct pay_seen {
    char order_no[ID_BUF];
    int64_t amount_cents;
    int outcome;
    int order_status;
};

static int verify_or_reply(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct config *cfg = srv->cfg;
    enum sig_status st;

    if (cfg->callback_secret[0] == '\0')
        return 0;                             /* authentication switched off */
    st = sig_verify(cfg->callback_secret, http_req_header(req, "X-Timestamp"),
                    http_req_header(req, "X-Signature"), req->body, req->body_len,
                    (int64_t)time(NULL), cfg->signature_tolerance_s);
    if (st == SIG_OK)
        return 0;
    log_warn("callback signature rejected", "reason=\"%s\" request_id=%s", sig_status_str(st),
             req->request_id);
    http_reply_error(resp, 401, "BAD_SIGNATURE", sig_status_str(st));
    return -1;
}

static int parse_or_reply(const struct http_req *req, struct pay_callback *cb,
                          struct http_resp *resp)
{
    cJSON *body = json_parse_object_or_reply(req->body, req->body_len, resp);
    int rc = -1;

    if (body == NULL)
        return -1;
    if (json_get_id_or_reply(body, "order_no", cb->order_no, resp) != 0 ||
        json_get_id_or_reply(body, "pay_no", cb->pay_no, resp) != 0 ||
        json_get_money_or_reply(body, "amount", &cb->amount_cents, resp) != 0)
        goto out;
    money_format(cb->amount_cents, cb->amount, sizeof(cb->amount));
    rc = 0;
out:
    cJSON_Delete(body);
    return rc;
}

/* Reads the stored record of pay_no. *found is false when there is none. */
static enum db_status load_seen(struct db_conn *c, const char *pay_no, struct pay_seen *seen,
                                bool *found)
{
    const char *p[] = { pay_no };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_PAY_SELECT, p, 1, &row, 1, &n);

    *found = st == DB_OK && n == 1;
    if (!*found)
        return st;
    snprintf(seen->order_no, sizeof(seen->order_no), "%.64s", row.col[0]);
    if (money_parse(row.col[1], &seen->amount_cents) != MONEY_OK)
        return DB_ERROR;
    seen->outcome = atoi(row.col[2]);
    seen->order_status = row.is_null[3] ? 0 : atoi(row.col[3]);
    return DB_OK;
}

/* The transaction body; re-runnable, it resets its outputs first. */
static enum db_status pay_txn(struct db_conn *c, void *arg)
{
    struct pay_job *j = arg;
    const struct pay_callback *cb = j->cb;
    const char *ins[] = { cb->pay_no, cb->order_no, cb->amount };
    const char *key[] = { cb->order_no };
    const char *cas[] = { "2", cb->order_no, "1" };
    const char *refund[] = { cb->pay_no };
    char payload[256];
    struct db_row row;
    uint64_t rows = 0;
    size_t n = 0;
    enum db_status st;

    j->outcome = PAY_OUT_SEEN;
    j->order_status = 0;
    j->order_cents = 0;
    if ((st = db_exec(c, ST_PAY_INSERT, ins, 3, NULL)) == DB_DUPLICATE)
        return DB_ROLLBACK;                   /* seen before: answer from the record */
    if (st != DB_OK)
        return st;
    if ((st = db_query(c, ST_ORDER_LOCK, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0) {
        j->outcome = PAY_OUT_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (money_parse(row.col[0], &j->order_cents) != MONEY_OK)
        return DB_ERROR;
    if (j->order_cents != cb->amount_cents) {
        j->outcome = PAY_OUT_MISMATCH;
        return DB_ROLLBACK;
    }
    j->order_status = atoi(row.col[1]);
    if (order_state_allowed(j->order_status, ORDER_PAID)) {
        if ((st = db_exec(c, ST_ORDER_CAS, cas, 3, &rows)) != DB_OK)
            return st;
    }
    if (rows == 1) {
        const char *ev[] = { "order.paid", cb->order_no, payload };
        snprintf(payload, sizeof(payload),
                 "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"amount\":\"%s\"}", cb->order_no,
                 cb->pay_no, cb->amount);
        if ((st = db_exec(c, ST_OUTBOX_INSERT, ev, 3, NULL)) == DB_DUPLICATE) {
            log_error("order.paid event already exists", "order_no=%s", cb->order_no);
            return DB_ERROR;                  /* invariant broken: refuse, do not guess */
        }
        j->order_status = ORDER_PAID;
        j->outcome = PAY_OUT_PAID;
        return st;
    }
    if ((st = db_exec(c, ST_PAY_MARK_REFUND, refund, 1, NULL)) != DB_OK)
        return st;
    j->outcome = PAY_OUT_REFUND;
    return DB_OK;
}

static void reply_success(struct http_resp *resp, const struct pay_callback *cb,
                          int order_status, int outcome, bool duplicate)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "code", "SUCCESS");
    cJSON_AddStringToObject(o, "order_no", cb->order_no);
    cJSON_AddStringToObject(o, "pay_no", cb->pay_no);
    cJSON_AddStringToObject(o, "amount", cb->amount);
    cJSON_AddStringToObject(o, "status", order_state_name(order_status));
    cJSON_AddStringToObject(o, "result", outcome == PAY_REFUND_REQUIRED ? "REFUND_REQUIRED" : "PAID");
    cJSON_AddBoolToObject(o, "duplicate", duplicate);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

/* Answers a pay_no that is already recorded: the same payment again is a
 * replay of the first outcome; the same pay_no with another order or
 * amount is a conflict. */
static void reply_seen(struct server *srv, const struct http_req *req, struct http_resp *resp,
                       const struct pay_callback *cb, const struct pay_seen *seen)
{
    char stored[MONEY_STR_MAX];

    if (strcmp(seen->order_no, cb->order_no) != 0 || seen->amount_cents != cb->amount_cents) {
        metrics_inc(srv->m, M_PAY_NO_CONFLICT);
        log_alert("PAY_NO_CONFLICT",
                  "pay_no=%s order_no=%s amount=%s stored_order_no=%s stored_amount=%s request_id=%s",
                  cb->pay_no, cb->order_no, cb->amount, seen->order_no,
                  money_format(seen->amount_cents, stored, sizeof(stored)), req->request_id);
        http_reply_error(resp, 409, "PAY_NO_CONFLICT",
                         "pay_no already recorded with another order_no or amount");
        return;
    }
    metrics_inc(srv->m, M_DUP_CALLBACK);
    reply_success(resp, cb, seen->order_status, seen->outcome, true);
}

static void reply_outcome(struct server *srv, const struct http_req *req, struct http_resp *resp,
                          const struct pay_job *j)
{
    const struct pay_callback *cb = j->cb;
    char want[MONEY_STR_MAX];

    switch (j->outcome) {
    case PAY_OUT_PAID:
        log_info("order paid", "order_no=%s pay_no=%s amount=%s request_id=%s", cb->order_no,
                 cb->pay_no, cb->amount, req->request_id);
        reply_success(resp, cb, ORDER_PAID, PAY_PAID, false);
        break;
    case PAY_OUT_REFUND:
        metrics_inc(srv->m, M_DOUBLE_PAYMENT);
        log_alert("REFUND_REQUIRED", "order_no=%s pay_no=%s amount=%s order_status=%s request_id=%s",
                  cb->order_no, cb->pay_no, cb->amount, order_state_name(j->order_status),
                  req->request_id);
        reply_success(resp, cb, j->order_status, PAY_REFUND_REQUIRED, false);
        break;
    case PAY_OUT_NOT_FOUND:
        log_alert("ORDER_NOT_FOUND", "order_no=%s pay_no=%s amount=%s request_id=%s",
                  cb->order_no, cb->pay_no, cb->amount, req->request_id);
        http_reply_error(resp, 404, "ORDER_NOT_FOUND", "no order with this order_no");
        break;
    case PAY_OUT_MISMATCH:
        metrics_inc(srv->m, M_AMOUNT_MISMATCH);
        log_alert("AMOUNT_MISMATCH", "order_no=%s pay_no=%s amount=%s order_amount=%s request_id=%s",
                  cb->order_no, cb->pay_no, cb->amount,
                  money_format(j->order_cents, want, sizeof(want)), req->request_id);
        http_reply_error(resp, 422, "AMOUNT_MISMATCH", "amount differs from the order's amount");
        break;
    case PAY_OUT_SEEN:
        break;                                /* handled by the caller */
    }
}

void handle_pay_callback(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct pay_callback cb;
    struct pay_job job = { .cb = &cb };
    struct pay_seen seen;
    struct db_conn *conn = NULL;
    enum db_status st;
    bool found = false;

    if (verify_or_reply(srv, req, resp) != 0 || parse_or_reply(req, &cb, resp) != 0)
        return;
    if ((conn = db_acquire_or_reply(srv, resp)) == NULL)
        return;
    /* Fast path for bank retries: a recorded pay_no needs no write. The
     * insert in the transaction stays the authority for races. */
    if ((st = load_seen(conn, cb.pay_no, &seen, &found)) != DB_OK)
        goto fail;
    if (found) {
        reply_seen(srv, req, resp, &cb, &seen);
        goto out;
    }
    st = db_txn(conn, pay_txn, &job);
    if (st != DB_OK && st != DB_ROLLBACK)
        goto fail;
    if (job.outcome == PAY_OUT_SEEN) {
        if ((st = load_seen(conn, cb.pay_no, &seen, &found)) != DB_OK)
            goto fail;
        if (!found) {
            st = DB_ERROR;                    /* duplicate key, yet no row: refuse */
            goto fail;
        }
        reply_seen(srv, req, resp, &cb, &seen);
        goto out;
    }
    reply_outcome(srv, req, resp, &job);
    goto out;
fail:
    reply_db_failure(resp, st);
out:
    db_release(srv->db, conn);
}
