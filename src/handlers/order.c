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
 * Before them, the quotas of units: a quantity above
 * orders.max_quantity_per_line is refused, and an anonymous client's
 * address reserves the order's units (unitquota.h) or is refused; the
 * user's unpaid units are capped inside the transaction. An
 * Idempotency-Key replaces the token only for a shop backend's key.
 *
 * The guards in front live here; the transaction is orders_create
 * (orders.c). Everything the client sent is validated before the token is
 * consumed. A consumed token is put back when the answer is retryable (a
 * 503), so the client's retry with the same token is served, not refused.
 *
 * The order itself is made by orders_route_create, on the shard its sku
 * places it on (orders_route.h), holding one connection at a time. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api_error.h"
#include "auth.h"
#include "common.h"
#include "config.h"
#include "handlers.h"
#include "idempotency.h"
#include "ids.h"
#include "json_reply.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "monotime.h"
#include "order_view.h"
#include "orders_route.h"
#include "redis.h"
#include "server.h"
#include "token_store.h"
#include "unitquota.h"
#include "validate.h"

#define ORDER_BUSY_RETRY_S 1
#define TOKEN_HEADER "Idempotent-Token"

/* What POST /order/create carries: the token header and the order. */
struct order_req {
    char token[IDS_TOKEN_BUF];
    struct order_create_req order;
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
static int parse_or_reply(const struct http_req *req, bool keyed, struct order_req *rq,
                          struct http_resp *resp)
{
    const char *token = http_req_header(req, TOKEN_HEADER);
    cJSON *body = NULL;
    int rc = -1;

    memset(rq, 0, sizeof(*rq));
    if (!keyed && (token == NULL || token[0] == '\0')) {
        api_reply(resp, API_BAD_REQUEST,
                  TOKEN_HEADER " header (apply for one at /token/apply) or " IDEMPOTENCY_HEADER
                               " header is required");
        return -1;
    }
    if (!keyed && !validate_token(token)) {
        api_reply(resp, API_BAD_REQUEST, TOKEN_HEADER " must be 32 lowercase hex digits");
        return -1;
    }
    if (!keyed) /* with a key, the key stands in for it */
        snprintf(rq->token, sizeof(rq->token), "%s", token);
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return -1;
    if (json_get_id_or_reply(body, "user_id", rq->order.user_id, resp) != 0 ||
        json_get_id_or_reply(body, "request_id", rq->order.checkout_id, resp) != 0 ||
        json_get_id_or_reply(body, "sku", rq->order.sku, resp) != 0 ||
        json_get_int_or_reply(body, "quantity", ORDERS_QTY_MIN, ORDERS_QTY_MAX, &rq->order.quantity,
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
    case TOKEN_OK: return 0;
    case TOKEN_USED:
        metrics_inc(srv->m, M_DUP_TOKEN);
        log_info("repeat submit refused", "user_id=%s checkout_id=%s request_id=%s",
                 rq->order.user_id, rq->order.checkout_id, req->request_id);
        api_reply(resp, API_REPEAT_SUBMIT, NULL);
        return -1;
    default: http_reply_unavailable(resp, "token store unavailable, retry later"); return -1;
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
        api_reply(resp, API_INTERNAL, "cannot draw random bytes");
        return -1;
    }
    st = rds_lock_acquire(srv->rds, lk->key, lk->value, cfg->lock_ttl_ms, cfg->lock_wait_ms);
    switch (st) {
    case RDS_OK: lk->held = true; return 0;
    case RDS_DOWN: return 0; /* the conditional UPDATE guards alone */
    case RDS_BUSY:
        http_reply_retry(resp, api_error_code(API_BUSY), "this sku is busy, retry shortly",
                         ORDER_BUSY_RETRY_S);
        return -1;
    default: http_reply_unavailable(resp, "redis error, retry later"); return -1;
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
        log_warn("cannot release the stock lock; it expires by itself", "key=%s status=%s", lk->key,
                 rds_status_str(st));
}

static void reply_order(struct http_resp *resp, int status, const struct order_view *o,
                        bool duplicate)
{
    cJSON *j = order_view_json(o, false, duplicate);

    if (j == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    http_reply_json(resp, status, j);
    cJSON_Delete(j);
}

/* The answer of a new order; also what the Idempotency-Key hook stores. */
static void render_created(struct http_resp *resp, const void *data)
{
    reply_order(resp, 201, data, false);
}

static void log_created(const struct http_req *req, const struct order_view *o,
                        const struct token_receipt *rcpt)
{
    char amount[MONEY_STR_MAX];

    /* cppcheck-suppress ctunullpointer ; render_create passes NULLs only with a failed result */
    log_info("order created",
             "order_no=%s user_id=%s checkout_id=%s sku=%s quantity=%lld amount=%s "
             "token_store=%s request_id=%s",
             o->order_no, o->user_id, o->checkout_id, o->sku, (long long)o->quantity,
             money_format(o->amount_cents, amount, sizeof(amount)),
             rcpt->store ? rcpt->store->name : "none", req->request_id);
}

/* Renders what orders_route_create returned. */
static void render_create(struct server *srv, const struct http_req *req, enum orders_result r,
                          const struct order_view *o, const struct token_receipt *rcpt,
                          const struct route_failure *fail, struct http_resp *resp)
{
    switch (r) {
    case ORDERS_OK:
        log_created(req, o, rcpt);
        render_created(resp, o);
        break;
    case ORDERS_DUPLICATE:
        metrics_inc(srv->m, M_DUP_ORDER);
        log_info("duplicate order request answered with the existing order",
                 "order_no=%s user_id=%s checkout_id=%s request_id=%s", o->order_no, o->user_id,
                 o->checkout_id, req->request_id);
        reply_order(resp, 200, o, true);
        break;
    case ORDERS_NO_SKU: api_reply(resp, API_SKU_NOT_FOUND, "no such sku"); break;
    case ORDERS_NO_STOCK:
        api_reply(resp, API_OUT_OF_STOCK, "not enough stock for this quantity");
        break;
    case ORDERS_TOO_MANY_OPEN:
        metrics_inc(srv->m, M_OPEN_ORDER_CAP);
        log_info("order refused: too many unpaid orders", "max_open_per_user=%d request_id=%s",
                 srv->cfg->orders_max_open_per_user, req->request_id);
        api_reply(resp, API_TOO_MANY_OPEN_ORDERS,
                  "this user_id holds the most unpaid orders "
                  "allowed (orders.max_open_per_user): pay or cancel one first");
        break;
    case ORDERS_USER_SKU_UNITS:
        metrics_inc(srv->m, M_UNITS_USER_SKU);
        api_reply(resp, API_UNIT_QUOTA_EXCEEDED,
                  "this user_id would hold more unpaid units of this sku than allowed "
                  "(orders.max_open_units_per_user_sku): pay or cancel an order first");
        break;
    case ORDERS_USER_UNITS:
        metrics_inc(srv->m, M_UNITS_USER);
        api_reply(resp, API_UNIT_QUOTA_EXCEEDED,
                  "this user_id would hold more unpaid units than allowed "
                  "(orders.max_open_units_per_user): pay or cancel an order first");
        break;
    case ORDERS_TOO_LARGE:
        api_reply(resp, API_BAD_REQUEST, "quantity times the price exceeds the largest amount");
        break;
    case ORDERS_ABORTED: break; /* idempotency_end answers as a repeat */
    default: reply_route_failure(req, resp, fail); break;
    }
}

/* The largest quantity of one order line (orders.max_quantity_per_line):
 * above it 422 QUANTITY_LIMIT, before anything is consumed or written. */
static int line_or_reply(struct server *srv, const struct order_req *rq, struct http_resp *resp)
{
    char msg[96];

    if (rq->order.quantity <= srv->cfg->orders_max_quantity_per_line)
        return 0;
    metrics_inc(srv->m, M_QUANTITY_LIMIT);
    snprintf(msg, sizeof(msg), "quantity exceeds %d, the most one order may ask for",
             srv->cfg->orders_max_quantity_per_line);
    api_reply(resp, API_QUANTITY_LIMIT, msg);
    return -1;
}

/* Whether the caller is a shop backend: an operator key with the orders
 * scope. Its orders are its customers', all from its own address, so the
 * quotas of a client address do not apply to it. */
static bool shop_backend(const struct http_req *req)
{
    return req->caller[0] != '\0' && (req->scopes & CFG_SCOPE_ORDERS) != 0;
}

/* Reserves the order's units against its client address (the quotas
 * orders.max_open_units_per_client_sku and _per_client), before the token
 * is consumed: past one, 409 UNIT_QUOTA_EXCEEDED and nothing is written.
 * The reservation is given back when no order is made (handle_order_create). */
static int client_units_or_reply(struct server *srv, const struct http_req *req,
                                 const struct order_req *rq, struct unitquota_hold *hold,
                                 struct http_resp *resp)
{
    const struct config *cfg = srv->cfg;
    enum unitquota_result r;

    if (shop_backend(req) || req->units == NULL)
        return 0;
    r = unitquota_take(req->units, &req->client, rq->order.sku, rq->order.quantity,
                       cfg->orders_max_open_units_client_sku, cfg->orders_max_open_units_client,
                       monotime_ms(), hold);
    if (hold->evicted > 0)
        metrics_add(srv->m, M_UNITS_EVICTED, (uint64_t)hold->evicted);
    if (r == UNITQUOTA_OK)
        return 0;
    metrics_inc(srv->m, r == UNITQUOTA_SKU ? M_UNITS_CLIENT_SKU : M_UNITS_CLIENT);
    log_info("order refused: unit quota of the client address",
             "bound=%s sku=%s quantity=%lld "
             "request_id=%s",
             r == UNITQUOTA_SKU ? "client_sku" : "client", rq->order.sku,
             (long long)rq->order.quantity, req->request_id);
    api_reply(resp, API_UNIT_QUOTA_EXCEEDED,
              r == UNITQUOTA_SKU ? "this client would hold more unpaid units of this sku than "
                                   "allowed (orders.max_open_units_per_client_sku): pay for "
                                   "or cancel an order first"
                                 : "this client would hold more unpaid units than allowed "
                                   "(orders.max_open_units_per_client): pay for or cancel an "
                                   "order first");
    return -1;
}

/* An Idempotency-Key stands in for the single-use token only for a shop
 * backend: a caller authenticated with an operator key that holds the
 * orders scope. Anonymous, the key would let one request skip the token,
 * so it is refused (401, with or without a token: a shopper sends the
 * token alone), and a key without the scope is 403. 0, or -1 after the
 * reply. */
static int keyed_caller_or_reply(const struct http_req *req, struct http_resp *resp)
{
    if (req->caller[0] == '\0') {
        api_reply(resp, API_UNAUTHORIZED,
                  IDEMPOTENCY_HEADER " is for shop backends (Authorization: Bearer <key> with "
                                     "the orders scope); a shopper sends " TOKEN_HEADER " alone");
        http_reply_challenge(resp, "Bearer");
        return -1;
    }
    return auth_scope_or_reply(req, CFG_SCOPE_ORDERS, resp); /* 403 */
}

/* With an Idempotency-Key, from a shop backend: the key belongs to the
 * authenticated caller, whatever user_id the body names, so two callers'
 * keys never meet. Claims the key or answers from its record; sharded,
 * the record lives on shard_place(scope), whatever the sku, so a key
 * reused for another sku is still seen. */
static int claim_key_or_reply(struct server *srv, const struct http_req *req,
                              struct idempotency *ir, struct http_resp *resp)
{
    char scope[IDEM_SCOPE_MAX + 1];

    snprintf(scope, sizeof(scope), "key:%s", req->caller);
    return idempotency_begin_or_reply(srv, req, scope, ir, resp);
}

void handle_order_create(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct token_ctx ctx = { .srv = srv };
    struct token_receipt rcpt = { 0 };
    struct stock_lock lk = { .held = false };
    struct idempotency ir = { .on = false };
    struct unitquota_hold hold = { .epoch = 0 };
    struct route_failure fail;
    struct order_req rq;
    struct order_view o;
    enum orders_result r;

    if (idempotency_key_or_reply(req, &ir, resp) != 0 ||
        (ir.on && keyed_caller_or_reply(req, resp) != 0) ||
        parse_or_reply(req, ir.on, &rq, resp) != 0 || line_or_reply(srv, &rq, resp) != 0 ||
        client_units_or_reply(srv, req, &rq, &hold, resp) != 0)
        goto out;
    rq.order.max_open = srv->cfg->orders_max_open_per_user;
    rq.order.max_units_sku = srv->cfg->orders_max_open_units_user_sku;
    rq.order.max_units = srv->cfg->orders_max_open_units_user;
    if (ir.on ? claim_key_or_reply(srv, req, &ir, resp) != 0
              : consume_or_reply(srv, &ctx, &rq, &rcpt, req, resp) != 0)
        goto out;
    if (lock_or_reply(srv, &lk, rq.order.sku, resp) != 0)
        goto out;
    rq.order.hook = idempotency_hook(&ir, resp, render_created);
    r = orders_route_create(&rt, &rq.order, ir.shard, &o, &fail);
    render_create(srv, req, r, &o, &rcpt, &fail, resp);
    unlock(srv, &lk);
out:
    /* A retryable answer was not the client's doing: its retry may use the
     * token again. */
    if (http_resp_retryable(resp))
        token_store_restore(&ctx, &rcpt);
    if (resp->status != 201) /* no new order: its units were not taken */
        unitquota_give_back(req->units, &hold);
    idempotency_end(srv, req, &ir, resp);
}
