/* order.c - POST /order/create: one order per click, however often it is
 * clicked, retried or raced.
 *
 * Three guards, outermost first: the single-use token (a double click is
 * REPEAT_SUBMIT), the per-sku Redis lock (concurrent buyers of one sku take
 * turns instead of piling up on its stock row), and one transaction that
 * inserts the order under UNIQUE(user_id, request_id) and takes the stock
 * with UPDATE ... WHERE num >= q. The transaction alone is enough for
 * correctness: with Redis down the lock is skipped, and the unique key and
 * the conditional UPDATE still forbid duplicates and overselling.
 *
 * Everything the client sent is validated before the token is consumed. A
 * consumed token is put back when the request then fails with a 503, so
 * the client's retry with the same token is served, not refused. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "handler_util.h"
#include "handlers.h"
#include "ids.h"
#include "jsonutil.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "order_view.h"
#include "rds.h"
#include "server.h"
#include "token_store.h"
#include "validate.h"

#define ORDER_QTY_MIN        1
#define ORDER_QTY_MAX        1000
#define ORDER_NO_ATTEMPTS    3    /* fresh order_no after a (64-bit) collision */
#define ORDER_BUSY_RETRY_S   1
#define TOKEN_HEADER         "Idempotent-Token"
#define REPEAT_SUBMIT_MSG    "请勿重复提交: token already used or expired"

struct order_req {
    char token[IDS_TOKEN_BUF];
    char user_id[ID_BUF];
    char request_id[ID_BUF];
    char sku[ID_BUF];
    int64_t quantity;
};

enum create_outcome {
    CREATE_OK,
    CREATE_DUPLICATE,             /* duplicate key: the request, or the order_no */
    CREATE_NO_SKU,
    CREATE_NO_STOCK,
    CREATE_TOO_LARGE              /* price x quantity past DECIMAL(12,2) */
};

struct create_job {
    const struct order_req *rq;
    enum create_outcome outcome;
    struct order_view order;      /* the new order when CREATE_OK */
};

/* The stock lock of one request. held is false when Redis was down and
 * the lock was skipped. */
struct stock_lock {
    char key[RDS_KEY_MAX];
    char value[IDS_TOKEN_BUF];
    bool held;
};

/* Reads the token header and the body into rq, replying 400 on anything
 * wrong. Nothing has been consumed yet when this fails. */
static int parse_or_reply(const struct http_req *req, struct order_req *rq,
                          struct http_resp *resp)
{
    const char *token = http_req_header(req, TOKEN_HEADER);
    cJSON *body = NULL;
    int rc = -1;

    memset(rq, 0, sizeof(*rq));
    if (token == NULL || token[0] == '\0') {
        http_reply_error(resp, 400, "BAD_REQUEST",
                         TOKEN_HEADER " header is required: apply for one at /token/apply");
        return -1;
    }
    if (!validate_token(token)) {
        http_reply_error(resp, 400, "BAD_REQUEST",
                         TOKEN_HEADER " must be 32 lowercase hex digits");
        return -1;
    }
    snprintf(rq->token, sizeof(rq->token), "%s", token);
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return -1;
    if (json_get_id_or_reply(body, "user_id", rq->user_id, resp) != 0 ||
        json_get_id_or_reply(body, "request_id", rq->request_id, resp) != 0 ||
        json_get_id_or_reply(body, "sku", rq->sku, resp) != 0 ||
        json_get_int_or_reply(body, "quantity", ORDER_QTY_MIN, ORDER_QTY_MAX, &rq->quantity,
                              resp) != 0)
        goto out;
    rc = 0;
out:
    cJSON_Delete(body);
    return rc;
}

static int consume_or_reply(struct server *srv, struct token_ctx *ctx, const struct order_req *rq,
                            struct token_receipt *rcpt, const struct http_req *req,
                            struct http_resp *resp)
{
    switch (token_store_consume(ctx, rq->token, rcpt)) {
    case TOKEN_OK:
        return 0;
    case TOKEN_USED:
        metrics_inc(srv->m, M_DUP_TOKEN);
        log_info("repeat submit refused", "user_id=%s request_id=%s http_request_id=%s",
                 rq->user_id, rq->request_id, req->request_id);
        http_reply_error(resp, 409, "REPEAT_SUBMIT", REPEAT_SUBMIT_MSG);
        return -1;
    default:
        http_reply_unavailable(resp, "token store unavailable, retry later");
        return -1;
    }
}

/* Takes idem:lock:stock:<sku>, waiting at most redis.lock_wait_ms. With
 * Redis down the lock is skipped (lk->held stays false). */
static int lock_or_reply(struct server *srv, struct stock_lock *lk, const char *sku,
                         struct http_resp *resp)
{
    const struct config *cfg = srv->cfg;
    enum rds_status st;

    snprintf(lk->key, sizeof(lk->key), RDS_LOCK_PREFIX "stock:%s", sku);
    if (ids_token(lk->value) != 0) {
        http_reply_error(resp, 500, "INTERNAL", "cannot draw random bytes");
        return -1;
    }
    st = rds_lock_acquire(srv->rds, lk->key, lk->value, cfg->lock_ttl_ms, cfg->lock_wait_ms);
    switch (st) {
    case RDS_OK:
        lk->held = true;
        return 0;
    case RDS_DOWN:
        return 0;                             /* the conditional UPDATE guards alone */
    case RDS_BUSY:
        http_reply_retry(resp, "BUSY", "this sku is busy, retry shortly", ORDER_BUSY_RETRY_S);
        return -1;
    default:
        http_reply_unavailable(resp, "redis error, retry later");
        return -1;
    }
}

static void unlock(struct server *srv, struct stock_lock *lk)
{
    enum rds_status st;

    if (!lk->held)
        return;
    lk->held = false;
    st = rds_lock_release(srv->rds, lk->key, lk->value);
    if (st == RDS_NOT_FOUND)
        log_warn("stock lock expired before its release; raise redis.lock_ttl_ms",
                 "key=%s lock_ttl_ms=%d", lk->key, srv->cfg->lock_ttl_ms);
    else if (st != RDS_OK)
        log_warn("cannot release the stock lock; it expires by itself", "key=%s status=%s",
                 lk->key, rds_status_str(st));
}

/* The transaction body; re-runnable: it resets its outputs and draws a new
 * order_no each time. */
static enum db_status create_txn(struct db_conn *c, void *arg)
{
    struct create_job *j = arg;
    const struct order_req *rq = j->rq;
    struct order_view *o = &j->order;
    char qty[24], amount[MONEY_STR_MAX];
    const char *sku[] = { rq->sku };
    const char *ins[] = { o->order_no, rq->user_id, rq->request_id, rq->sku, qty, amount };
    const char *take[] = { qty, rq->sku, qty };
    int64_t price = 0;
    struct db_row row;
    uint64_t rows = 0;
    size_t n = 0;
    enum db_status st;

    memset(o, 0, sizeof(*o));
    j->outcome = CREATE_OK;
    if (ids_order_no(o->order_no) != 0)
        return DB_ERROR;
    if ((st = db_query(c, ST_STOCK_PRICE, sku, 1, &row, 1, &n)) != DB_OK)
        return st;
    if (n == 0) {
        j->outcome = CREATE_NO_SKU;
        return DB_ROLLBACK;
    }
    if (money_parse(row.col[0], &price) != MONEY_OK)
        return DB_ERROR;
    if (money_mul(price, rq->quantity, &o->amount_cents) != MONEY_OK) {
        j->outcome = CREATE_TOO_LARGE;
        return DB_ROLLBACK;
    }
    snprintf(qty, sizeof(qty), "%lld", (long long)rq->quantity);
    money_format(o->amount_cents, amount, sizeof(amount));
    if ((st = db_exec(c, ST_ORDER_INSERT, ins, 6, NULL)) == DB_DUPLICATE) {
        j->outcome = CREATE_DUPLICATE;
        return DB_ROLLBACK;
    }
    if (st != DB_OK)
        return st;
    if ((st = db_exec(c, ST_STOCK_TAKE, take, 3, &rows)) != DB_OK)
        return st;
    if (rows == 0) {
        j->outcome = CREATE_NO_STOCK;
        return DB_ROLLBACK;
    }
    snprintf(o->user_id, sizeof(o->user_id), "%s", rq->user_id);
    snprintf(o->request_id, sizeof(o->request_id), "%s", rq->request_id);
    snprintf(o->sku, sizeof(o->sku), "%s", rq->sku);
    o->quantity = rq->quantity;
    o->status = ORDER_WAIT_PAY;
    return DB_OK;
}

/* The order already made for (user_id, request_id), read outside the
 * failed transaction so that it sees what the other one committed. */
static enum db_status load_by_request(struct db_conn *c, const struct order_req *rq,
                                      struct order_view *o, bool *found)
{
    const char *p[] = { rq->user_id, rq->request_id };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_ORDER_BY_REQUEST, p, 2, &row, 1, &n);

    *found = false;
    if (st != DB_OK || n == 0)
        return st;
    if (order_view_from_row(&row, o) != 0)
        return DB_ERROR;
    *found = true;
    return DB_OK;
}

static void reply_order(struct http_resp *resp, int status, const struct order_view *o,
                        bool duplicate)
{
    cJSON *j = order_view_json(o, false, duplicate);

    if (j == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    http_reply_json(resp, status, j);
    cJSON_Delete(j);
}

/* Renders a transaction that ended without a duplicate key. */
static void reply_outcome(const struct http_req *req, const struct create_job *j,
                          const struct token_receipt *rcpt, struct http_resp *resp)
{
    const struct order_view *o = &j->order;
    char amount[MONEY_STR_MAX];

    switch (j->outcome) {
    case CREATE_OK:
        log_info("order created",
                 "order_no=%s user_id=%s request_id=%s sku=%s quantity=%lld amount=%s "
                 "token_store=%s http_request_id=%s", o->order_no, o->user_id, o->request_id,
                 o->sku, (long long)o->quantity, money_format(o->amount_cents, amount,
                 sizeof(amount)), rcpt->store ? rcpt->store->name : "none", req->request_id);
        reply_order(resp, 201, o, false);
        break;
    case CREATE_NO_SKU:
        http_reply_error(resp, 404, "SKU_NOT_FOUND", "no such sku");
        break;
    case CREATE_NO_STOCK:
        http_reply_error(resp, 409, "OUT_OF_STOCK", "not enough stock for this quantity");
        break;
    case CREATE_TOO_LARGE:
        http_reply_error(resp, 400, "BAD_REQUEST",
                         "quantity times the price exceeds the largest amount");
        break;
    case CREATE_DUPLICATE:
        break;                                /* handled by the caller */
    }
}

/* Runs the transaction and replies. A duplicate key is the same request
 * seen before (answer with its order) unless no order has this request:
 * then two order numbers collided, and another is drawn. */
static void create_and_reply(struct server *srv, const struct http_req *req,
                             struct token_ctx *ctx, struct create_job *j,
                             const struct token_receipt *rcpt, struct http_resp *resp)
{
    struct db_conn *c = token_ctx_conn(ctx);
    struct order_view existing;
    bool found = false;
    enum db_status st;

    if (c == NULL) {
        http_reply_unavailable(resp, "database busy: no free connection");
        return;
    }
    for (int attempt = 0; attempt < ORDER_NO_ATTEMPTS; attempt++) {
        st = db_txn(c, create_txn, j);
        if (st != DB_OK && st != DB_ROLLBACK)
            goto fail;
        if (j->outcome != CREATE_DUPLICATE) {
            reply_outcome(req, j, rcpt, resp);
            return;
        }
        if ((st = load_by_request(c, j->rq, &existing, &found)) != DB_OK)
            goto fail;
        if (found) {
            metrics_inc(srv->m, M_DUP_ORDER);
            log_info("duplicate order request answered with the existing order",
                     "order_no=%s user_id=%s request_id=%s http_request_id=%s",
                     existing.order_no, existing.user_id, existing.request_id, req->request_id);
            reply_order(resp, 200, &existing, true);
            return;
        }
        log_warn("order_no collision, drawing another", "order_no=%s", j->order.order_no);
    }
    http_reply_error(resp, 500, "INTERNAL", "cannot draw a unique order_no");
    return;
fail:
    reply_db_failure(resp, st);
}

void handle_order_create(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct token_ctx ctx = { .srv = srv };
    struct token_receipt rcpt = { 0 };
    struct stock_lock lk = { .held = false };
    struct order_req rq;
    struct create_job job = { .rq = &rq };

    if (parse_or_reply(req, &rq, resp) != 0)
        goto out;
    if (consume_or_reply(srv, &ctx, &rq, &rcpt, req, resp) != 0)
        goto out;
    if (lock_or_reply(srv, &lk, rq.sku, resp) != 0)
        goto out;
    create_and_reply(srv, req, &ctx, &job, &rcpt, resp);
    unlock(srv, &lk);
out:
    /* A retryable answer was not the client's doing: its retry may use the
     * token again. */
    if (http_resp_retryable(resp))
        token_store_restore(&ctx, &rcpt);
    db_release(srv->db, ctx.conn);
}
