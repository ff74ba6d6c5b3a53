/* order_status.c - GET /order/{order_no} and the status changes
 * POST /order/{order_no}/ship, /finish and /cancel.
 *
 * The rules live in orders.c (orders_transition: the transition table
 * before any write, the compare-and-set, the outbox event, the stock and
 * refunds of a cancel, all in one transaction). Here: parse the order_no,
 * call, render. Asking for the status the order already has is a duplicate
 * (200, nothing written); anything the table forbids is 409
 * ILLEGAL_TRANSITION and an alert.
 *
 * Each call runs on the order's shard, named by its order_no
 * (orders_route.h; one database: the only one); a number that names no
 * shard of this service is 404 with nothing read or written. A cancel's stock goes back on that
 * shard in the same transaction: an order lives where its sku's stock
 * does. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "api_error.h"
#include "common.h"
#include "handlers.h"
#include "idempotency.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "order_view.h"
#include "orders_route.h"
#include "server.h"
#include "validate.h"

static int order_no_or_reply(const struct http_req *req, struct http_resp *resp)
{
    if (validate_id(req->param))
        return 0;
    api_reply(resp, API_BAD_REQUEST, "order_no must be 1..64 characters of [A-Za-z0-9_.:-]");
    return -1;
}

static void reply_order(struct http_resp *resp, const struct order_view *o, bool duplicate)
{
    cJSON *j = order_view_json(o, false, duplicate);

    if (j == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    http_reply_json(resp, 200, j);
    cJSON_Delete(j);
}

/* The answer of a change made; also what the Idempotency-Key hook stores. */
static void render_changed(struct http_resp *resp, const void *data)
{
    const struct order_change *ch = data;

    reply_order(resp, &ch->order, false);
}

/* Logs a change that happened, with one alert per payment to refund. */
static void log_change(const struct http_req *req, const struct order_transition_req *tr,
                       const struct order_change *ch)
{
    char amount[MONEY_STR_MAX];

    log_info("order status changed", "order_no=%s from=%s to=%s request_id=%s", tr->order_no,
             order_state_name(ch->from), order_state_name(tr->to), req->request_id);
    for (size_t i = 0; i < ch->nrefunds; i++)
        log_alert("REFUND_REQUIRED",
                  "order_no=%s pay_no=%s amount=%s reason=order_canceled "
                  "request_id=%s",
                  tr->order_no, ch->refunds[i].pay_no,
                  money_format(ch->refunds[i].amount_cents, amount, sizeof(amount)),
                  req->request_id);
}

static void render_transition(struct server *srv, const struct http_req *req,
                              const struct order_transition_req *tr, enum orders_result r,
                              const struct order_change *ch, const struct route_failure *fail,
                              struct http_resp *resp)
{
    char msg[128];

    switch (r) {
    case ORDERS_OK:
        log_change(req, tr, ch);
        render_changed(resp, ch);
        break;
    case ORDERS_DUPLICATE:
        metrics_inc(srv->m, M_DUP_TRANSITION);
        reply_order(resp, &ch->order, true);
        break;
    case ORDERS_NOT_FOUND:
        api_reply(resp, API_ORDER_NOT_FOUND, "no order with this order_no");
        break;
    case ORDERS_ILLEGAL:
        metrics_inc(srv->m, M_ILLEGAL_TRANSITION);
        log_alert("ILLEGAL_TRANSITION", "order_no=%s from=%s to=%s request_id=%s", tr->order_no,
                  order_state_name(ch->from), order_state_name(tr->to), req->request_id);
        snprintf(msg, sizeof(msg), "an order in status %s cannot become %s",
                 order_state_name(ch->from), order_state_name(tr->to));
        api_reply(resp, API_ILLEGAL_TRANSITION, msg);
        break;
    case ORDERS_MOVES_MONEY:
        api_reply(resp, API_FORBIDDEN,
                  "the order is PAID: cancelling it refunds its payment, and this key lacks the "
                  "scope 'refunds'");
        break;
    case ORDERS_ABORTED: break; /* idempotency_end answers as a repeat */
    default: reply_route_failure(req, resp, fail); break;
    }
}

/* Moves the order named by the path to status to; serves ship, finish and
 * cancel alike. An Idempotency-Key is optional here (a repeated change is
 * answered as a duplicate anyway); with one, the caller gets the first
 * answer again byte for byte. Keys are scoped by the operator key's name,
 * so two callers using the same key never see each other's answers, and
 * their records are placed by that scope (orders_route.h says what a
 * crash between the change and the stored answer leaves). */
static void transition_and_reply(struct server *srv, const struct http_req *req,
                                 struct http_resp *resp, int to)
{
    const struct route rt = route_of(srv, req->request_id);
    /* Cancelling a PAID order refunds its payment: only a key that may
     * move money (the refunds scope) does it. */
    struct order_transition_req tr = { .order_no = req->param,
                                       .to = to,
                                       .actor = req->caller,
                                       .request_id = req->request_id,
                                       .no_refund = (req->scopes & CFG_SCOPE_REFUNDS) == 0 };
    struct idempotency ir = { .on = false };
    struct route_failure fail;
    struct order_change ch;
    enum orders_result r;

    if (idempotency_key_or_reply(req, &ir, resp) != 0 || order_no_or_reply(req, resp) != 0 ||
        order_shard_or_reply(srv, req->param, resp) == NULL)
        return;
    if (ir.on) {
        char scope[IDEM_SCOPE_MAX + 1];

        snprintf(scope, sizeof(scope), "key:%s", req->caller);
        if (idempotency_begin_or_reply(srv, req, scope, &ir, resp) != 0)
            return;
        tr.hook = idempotency_hook(&ir, resp, render_changed);
    }
    r = orders_route_transition(&rt, &tr, ir.shard, &ch, &fail);
    render_transition(srv, req, &tr, r, &ch, &fail, resp);
    idempotency_end(srv, req, &ir, resp);
}

void handle_order_ship(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    transition_and_reply(srv, req, resp, ORDER_SHIPPED);
}

void handle_order_finish(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    transition_and_reply(srv, req, resp, ORDER_FINISHED);
}

void handle_order_cancel(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    transition_and_reply(srv, req, resp, ORDER_CANCELED);
}

/* ---- GET ----------------------------------------------------------------- */

/* [{"pay_no","amount","status","create_time"}] */
static cJSON *payments_json(const struct order_detail *d)
{
    cJSON *arr = cJSON_CreateArray();
    char amount[MONEY_STR_MAX];

    for (size_t i = 0; arr != NULL && i < d->npayments; i++) {
        const struct order_payment *p = &d->payments[i];
        cJSON *o = cJSON_CreateObject();

        if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
        if (cJSON_AddStringToObject(o, "pay_no", p->pay_no) == NULL ||
            cJSON_AddStringToObject(
                o, "amount", money_format(p->amount_cents, amount, sizeof(amount))) == NULL ||
            cJSON_AddStringToObject(o, "status", payment_status_name(p->status)) == NULL ||
            cJSON_AddStringToObject(o, "create_time", p->create_time) == NULL) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static void reply_detail(const struct order_detail *d, struct http_resp *resp)
{
    cJSON *o = order_view_json(&d->order, true, -1);
    cJSON *pays = payments_json(d);

    if (o == NULL || pays == NULL || !cJSON_AddItemToObject(o, "payments", pays)) {
        cJSON_Delete(pays);
        api_reply(resp, API_INTERNAL, "out of memory");
    } else {
        http_reply_json(resp, 200, o);
    }
    cJSON_Delete(o);
}

void handle_order_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct order_detail *d = NULL;
    struct route_failure fail;
    enum orders_result r;

    if (order_no_or_reply(req, resp) != 0 || order_shard_or_reply(srv, req->param, resp) == NULL)
        return;
    if ((d = malloc(sizeof(*d))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    r = orders_route_view(&rt, req->param, d, &fail);
    if (r == ORDERS_OK)
        reply_detail(d, resp);
    else if (r == ORDERS_NOT_FOUND)
        api_reply(resp, API_ORDER_NOT_FOUND, "no order with this order_no");
    else
        reply_route_failure(req, resp, &fail);
    free(d);
}
