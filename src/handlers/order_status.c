/* order_status.c - GET /order/{order_no} and the status changes
 * POST /order/{order_no}/ship, /finish and /cancel.
 *
 * Every change goes through order_transition: lock the row, ask the one
 * transition table (order_state.c) before any write, then the CAS
 * UPDATE ... WHERE status = <current> with its outbox event, all in one
 * transaction. Asking for the status the order already has is a duplicate
 * (200, nothing written); anything the table forbids is 409
 * ILLEGAL_TRANSITION and an alert. Cancelling gives the stock back in the
 * same transaction, and a cancelled PAID order's payments become
 * REFUND_REQUIRED. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "handler_util.h"
#include "handlers.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "order_view.h"
#include "server.h"
#include "validate.h"

#define ORDER_PAYMENTS_MAX 32     /* payments shown by GET; more are not expected */
#define ORDER_REFUNDS_MAX  8      /* payments named in the refund alert */
#define ORDER_EVENT_MAX    256

enum transition_outcome {
    TR_DONE,
    TR_DUPLICATE,                 /* already in the target status */
    TR_NOT_FOUND,
    TR_ILLEGAL
};

struct transition_job {
    const char *order_no;
    int to;
    enum transition_outcome outcome;
    int from;
    struct order_view order;      /* as it is after the transaction */
    char refund_pay_no[ORDER_REFUNDS_MAX][ID_BUF];
    char refund_amount[ORDER_REFUNDS_MAX][MONEY_STR_MAX];
    size_t nrefunds;              /* payments now REFUND_REQUIRED */
};

static const char *event_of(int to)
{
    switch (to) {
    case ORDER_SHIPPED: return "order.shipped";
    case ORDER_FINISHED: return "order.finished";
    case ORDER_CANCELED: return "order.canceled";
    default: return "order.changed";
    }
}

static int order_no_or_reply(const struct http_req *req, struct http_resp *resp)
{
    if (validate_id(req->param))
        return 0;
    http_reply_error(resp, 400, "BAD_REQUEST", "order_no must be 1..64 characters of [A-Za-z0-9_.:-]");
    return -1;
}

/* Cancel: puts the order's quantity back on its sku. A sku removed from
 * stock since is logged and skipped: there is nothing to give back to. */
static enum db_status return_stock(struct db_conn *c, const struct order_view *o)
{
    char qty[24];
    const char *p[] = { qty, o->sku };
    uint64_t rows = 0;
    enum db_status st;

    snprintf(qty, sizeof(qty), "%lld", (long long)o->quantity);
    if ((st = db_exec(c, ST_STOCK_RETURN, p, 2, &rows)) != DB_OK)
        return st;
    if (rows == 0)
        log_warn("cancelled order's sku is gone from stock", "order_no=%s sku=%s",
                 o->order_no, o->sku);
    return DB_OK;
}

/* Cancel of a PAID order: the customer paid for nothing, so each PAID
 * payment becomes REFUND_REQUIRED. The rows are locked first so the alert
 * names exactly the payments the UPDATE changes. */
static enum db_status mark_refunds(struct db_conn *c, struct transition_job *j)
{
    const char *p[] = { j->order_no };
    struct db_row *rows = calloc(ORDER_REFUNDS_MAX, sizeof(*rows));
    size_t n = 0;
    enum db_status st = DB_ERROR;

    if (rows == NULL)
        return DB_ERROR;
    if ((st = db_query(c, ST_PAY_PAID_BY_ORDER_LOCK, p, 1, rows, ORDER_REFUNDS_MAX, &n)) != DB_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        snprintf(j->refund_pay_no[i], ID_BUF, "%.64s", rows[i].col[0]);
        snprintf(j->refund_amount[i], MONEY_STR_MAX, "%.15s", rows[i].col[1]);
    }
    j->nrefunds = n;
    st = db_exec(c, ST_PAY_REFUND_BY_ORDER, p, 1, NULL);
out:
    free(rows);
    return st;
}

static enum db_status write_event(struct db_conn *c, const struct transition_job *j)
{
    char payload[ORDER_EVENT_MAX];
    const char *p[] = { event_of(j->to), j->order_no, payload };
    enum db_status st;

    snprintf(payload, sizeof(payload), "{\"order_no\":\"%s\",\"from\":\"%s\",\"to\":\"%s\"}",
             j->order_no, order_state_name(j->from), order_state_name(j->to));
    if ((st = db_exec(c, ST_OUTBOX_INSERT, p, 3, NULL)) == DB_DUPLICATE) {
        log_error("order event already exists", "event=%s order_no=%s", event_of(j->to),
                  j->order_no);
        return DB_ERROR;                      /* the table forbids a second one: refuse */
    }
    return st;
}

/* The transaction body of every status change; re-runnable. */
static enum db_status transition_txn(struct db_conn *c, void *arg)
{
    struct transition_job *j = arg;
    const char *key[] = { j->order_no };
    char to[8], from[8];
    const char *cas[] = { to, j->order_no, from };
    struct db_row row;
    uint64_t rows = 0;
    size_t n = 0;
    enum db_status st;

    j->outcome = TR_DONE;
    j->from = 0;
    j->nrefunds = 0;
    if ((st = db_query(c, ST_ORDER_LOCK_ROW, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0) {
        j->outcome = TR_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (order_view_from_row(&row, &j->order) != 0)
        return DB_ERROR;
    j->from = j->order.status;
    if (j->from == j->to) {
        j->outcome = TR_DUPLICATE;
        return DB_ROLLBACK;
    }
    if (!order_state_allowed(j->from, j->to)) {
        j->outcome = TR_ILLEGAL;
        return DB_ROLLBACK;
    }
    snprintf(to, sizeof(to), "%d", j->to);
    snprintf(from, sizeof(from), "%d", j->from);
    if ((st = db_exec(c, ST_ORDER_CAS, cas, 3, &rows)) != DB_OK)
        return st;
    if (rows != 1)
        return DB_RETRY;                      /* cannot happen under FOR UPDATE: read again */
    if (j->to == ORDER_CANCELED) {
        if ((st = return_stock(c, &j->order)) != DB_OK)
            return st;
        if (j->from == ORDER_PAID && (st = mark_refunds(c, j)) != DB_OK)
            return st;
    }
    if ((st = write_event(c, j)) != DB_OK)
        return st;
    j->order.status = j->to;
    return DB_OK;
}

static void reply_order(struct http_resp *resp, const struct order_view *o, bool duplicate)
{
    cJSON *j = order_view_json(o, false, duplicate);

    if (j == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    http_reply_json(resp, 200, j);
    cJSON_Delete(j);
}

static void reply_transition(struct server *srv, const struct http_req *req,
                             const struct transition_job *j, struct http_resp *resp)
{
    char msg[128];

    switch (j->outcome) {
    case TR_DONE:
        log_info("order status changed", "order_no=%s from=%s to=%s request_id=%s", j->order_no,
                 order_state_name(j->from), order_state_name(j->to), req->request_id);
        for (size_t i = 0; i < j->nrefunds; i++)
            log_alert("REFUND_REQUIRED", "order_no=%s pay_no=%s amount=%s reason=order_canceled "
                      "request_id=%s", j->order_no, j->refund_pay_no[i], j->refund_amount[i],
                      req->request_id);
        reply_order(resp, &j->order, false);
        break;
    case TR_DUPLICATE:
        metrics_inc(srv->m, M_DUP_TRANSITION);
        reply_order(resp, &j->order, true);
        break;
    case TR_NOT_FOUND:
        http_reply_error(resp, 404, "ORDER_NOT_FOUND", "no order with this order_no");
        break;
    case TR_ILLEGAL:
        metrics_inc(srv->m, M_ILLEGAL_TRANSITION);
        log_alert("ILLEGAL_TRANSITION", "order_no=%s from=%s to=%s request_id=%s", j->order_no,
                  order_state_name(j->from), order_state_name(j->to), req->request_id);
        snprintf(msg, sizeof(msg), "an order in status %s cannot become %s",
                 order_state_name(j->from), order_state_name(j->to));
        http_reply_error(resp, 409, "ILLEGAL_TRANSITION", msg);
        break;
    }
}

/* Moves the order named by the path to status to; serves ship, finish and
 * cancel alike. */
static void order_transition(struct server *srv, const struct http_req *req,
                             struct http_resp *resp, int to)
{
    struct transition_job job = { .order_no = req->param, .to = to };
    struct db_conn *conn = NULL;
    enum db_status st;

    if (order_no_or_reply(req, resp) != 0)
        return;
    if ((conn = db_acquire_or_reply(srv, resp)) == NULL)
        return;
    st = db_txn(conn, transition_txn, &job);
    if (st == DB_OK || st == DB_ROLLBACK)
        reply_transition(srv, req, &job, resp);
    else
        reply_db_failure(resp, st);
    db_release(srv->db, conn);
}

void handle_order_ship(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    order_transition(srv, req, resp, ORDER_SHIPPED);
}

void handle_order_finish(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    order_transition(srv, req, resp, ORDER_FINISHED);
}

void handle_order_cancel(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    order_transition(srv, req, resp, ORDER_CANCELED);
}

/* ---- GET ----------------------------------------------------------------- */

struct get_job {
    const char *order_no;
    bool found;
    struct order_view order;
    struct db_row *pays;          /* ORDER_PAYMENTS_MAX rows */
    size_t npays;
};

/* Reads the order and its payments in one snapshot. */
static enum db_status get_txn(struct db_conn *c, void *arg)
{
    struct get_job *j = arg;
    const char *key[] = { j->order_no };
    struct db_row row;
    size_t n = 0;
    enum db_status st;

    j->found = false;
    j->npays = 0;
    if ((st = db_query(c, ST_ORDER_GET, key, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0)
        return DB_ROLLBACK;
    if (order_view_from_row(&row, &j->order) != 0)
        return DB_ERROR;
    if ((st = db_query(c, ST_PAY_BY_ORDER, key, 1, j->pays, ORDER_PAYMENTS_MAX, &j->npays)) != DB_OK)
        return st;
    j->found = true;
    return DB_OK;
}

/* [{"pay_no","amount","status","create_time"}] from ST_PAY_BY_ORDER rows. */
static cJSON *payments_json(const struct db_row *rows, size_t n)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr != NULL && i < n; i++) {
        cJSON *p = cJSON_CreateObject();
        bool refund = atoi(rows[i].col[2]) == 2;

        if (p == NULL || !cJSON_AddItemToArray(arr, p)) {
            cJSON_Delete(p);
            cJSON_Delete(arr);
            return NULL;
        }
        if (cJSON_AddStringToObject(p, "pay_no", rows[i].col[0]) == NULL ||
            cJSON_AddStringToObject(p, "amount", rows[i].col[1]) == NULL ||
            cJSON_AddStringToObject(p, "status", refund ? "REFUND_REQUIRED" : "PAID") == NULL ||
            cJSON_AddStringToObject(p, "create_time", rows[i].col[3]) == NULL) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static void reply_get(const struct get_job *j, struct http_resp *resp)
{
    cJSON *o = order_view_json(&j->order, true, -1);
    cJSON *pays = payments_json(j->pays, j->npays);

    if (o == NULL || pays == NULL || !cJSON_AddItemToObject(o, "payments", pays)) {
        cJSON_Delete(pays);
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
    } else {
        http_reply_json(resp, 200, o);
    }
    cJSON_Delete(o);
}

void handle_order_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct get_job job = { .order_no = req->param };
    struct db_conn *conn = NULL;
    enum db_status st;

    if (order_no_or_reply(req, resp) != 0)
        return;
    if ((job.pays = calloc(ORDER_PAYMENTS_MAX, sizeof(*job.pays))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if ((conn = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    st = db_txn(conn, get_txn, &job);
    if (st != DB_OK && st != DB_ROLLBACK)
        reply_db_failure(resp, st);
    else if (!job.found)
        http_reply_error(resp, 404, "ORDER_NOT_FOUND", "no order with this order_no");
    else
        reply_get(&job, resp);
out:
    db_release(srv->db, conn);
    free(job.pays);
}
