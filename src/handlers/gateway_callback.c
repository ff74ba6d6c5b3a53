/* gateway_callback.c - POST /pay/callback/{gateway}: a payment notification in
 * a configured gateway's own format. The kind reads and verifies it
 * (gateway_callback_alipay.c, _wechat.c, _stripe.c); a paying notification then
 * goes through the same pay_route as the native callback, so dedupe, CAS,
 * REFUND_REQUIRED and the outbox behave identically; the answer is given in
 * the gateway's words, so that it stops resending exactly when the payment
 * is recorded. A refused notification writes nothing. */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "api_error.h"
#include "common.h"
#include "db.h"
#include "gateway.h"
#include "gateway_callback.h"
#include "handlers.h"
#include "http.h"
#include "keyring.h"
#include "log.h"
#include "metrics.h"
#include "order_state.h"
#include "pay.h"
#include "refund.h"
#include "route.h"
#include "server.h"

static const struct gateway_callback_kind *kind_of(const struct gateway *gw)
{
    switch (gw->cfg->kind) {
    case GATEWAY_ALIPAY: return &gateway_callback_alipay;
    case GATEWAY_WECHATPAY_V3: return &gateway_callback_wechat;
    case GATEWAY_STRIPE: return &gateway_callback_stripe;
    }
    return NULL;
}

/* The error of a refusal. Verification failures are 401, a notification
 * for another app 403, anything unreadable 400. */
static enum api_error refusal(enum gateway_status st)
{
    switch (st) {
    case GATEWAY_SIG_MISSING:
    case GATEWAY_SIG_STALE:
    case GATEWAY_SIG_UNKNOWN_KEY:
    case GATEWAY_SIG_MISMATCH:
    case GATEWAY_DECRYPT_FAILED: return API_BAD_SIGNATURE;
    case GATEWAY_WRONG_APP: return API_WRONG_APP;
    case GATEWAY_ERROR: return API_INTERNAL;
    case GATEWAY_OK:
    case GATEWAY_MALFORMED:
    case GATEWAY_BAD_AMOUNT:
    case GATEWAY_BAD_CURRENCY: break;
    }
    return API_BAD_REQUEST;
}

/* k's failure answer for the API error e (its status and code). */
static void fail(const struct gateway_callback_kind *k, struct http_resp *resp, enum api_error e,
                 const char *message)
{
    k->fail(resp, api_error_status(e), api_error_code(e), message);
}

static void refuse(struct server *srv, const struct gateway *gw,
                   const struct gateway_callback_kind *k, const struct http_req *req,
                   struct http_resp *resp, enum gateway_status st)
{
    metrics_gateway_reject(srv->m, gw->index, (size_t)st - 1);
    log_warn("gateway notification refused", "gateway=%s reason=%s request_id=%s", gw->cfg->name,
             gateway_status_reason(st), req->request_id);
    fail(k, resp, refusal(st), gateway_status_str(st));
}

/* The answer to what pay_route did: recorded (now or before) is the ack;
 * an unmatched payment is refused so the gateway keeps it visible; a
 * database that is away is the gateway's "try again". */
static void render(const struct gateway_callback_kind *k, const struct http_req *req,
                   struct http_resp *resp, const struct route_failure *f, enum pay_result r,
                   const struct pay_outcome *out)
{
    if (r == PAY_CONFLICT && out->released) {
        fail(k, resp, API_PAY_NO_RELEASED,
             "this pay_no's binding to this order was released by an operator");
        return;
    }
    if (r == PAY_UNAVAILABLE && out->releasing) {
        fail(k, resp, API_UNAVAILABLE, "a release of this pay_no's binding is under way");
        return;
    }
    switch (r) {
    case PAY_PAID:
    case PAY_REFUND_REQUIRED:
    case PAY_REPLAY: k->ack(resp); break;
    case PAY_CONFLICT:
        fail(k, resp, API_PAY_NO_CONFLICT, "pay_no already recorded with another order or amount");
        break;
    case PAY_NOT_FOUND: fail(k, resp, API_ORDER_NOT_FOUND, "no order with this order_no"); break;
    case PAY_MISMATCH:
        fail(k, resp, API_AMOUNT_MISMATCH, "amount or currency differs from the order's");
        break;
    case PAY_UNAVAILABLE:
        if (f->no_conn) /* the pool's own wait: not a MySQL failure */
            fail(k, resp, API_UNAVAILABLE, "database busy, retry later");
        else {
            route_log_failure(f, req->request_id);
            fail(k, resp, API_UNAVAILABLE, "database unavailable, retry later");
        }
        /* In the gateway's own format, but marked like every shard outage. */
        if (f->shard != NULL && f->shard->set != NULL && f->shard->set->sharded)
            http_mark_shard_outage(resp, f->shard->label);
        break;
    case PAY_ERROR:
        route_log_failure(f, req->request_id);
        fail(k, resp, API_INTERNAL, "internal error");
        break;
    }
}

/* The request of a verified, paying notification. */
static struct pay_request pay_request_of(const struct gateway *gw, const struct gateway_notice *n)
{
    /* The gateway's acknowledgement says nothing of the order's status. */
    struct pay_request pr = { .amount_cents = n->amount_cents,
                              .gateway = gw->cfg->name,
                              .ack_only = true };

    memcpy(pr.pay_no, n->pay_no, sizeof(pr.pay_no));
    memcpy(pr.order_no, n->order_no, sizeof(pr.order_no));
    memcpy(pr.currency, n->currency, sizeof(pr.currency));
    return pr;
}

/* A payment through a gateway with a refund API: its gateway is noted on
 * the record and a double payment gets its refund, before the ack, so a
 * crash in between makes the gateway resend and this runs again. False
 * after a failure that the gateway should retry (answered). */
static bool refund_follow_up(struct server *srv, const struct gateway *gw,
                             const struct gateway_callback_kind *k, const struct http_req *req,
                             struct http_resp *resp, const struct pay_request *pr,
                             enum pay_result r, const struct pay_outcome *out)
{
    const struct route rt = route_of(srv, req->request_id);
    const struct refund_paid p = { .pay_no = pr->pay_no,
                                   .order_no = pr->order_no,
                                   .gateway = gw->cfg->name,
                                   .double_payment =
                                       r == PAY_REFUND_REQUIRED ||
                                       (r == PAY_REPLAY && out->outcome == PAYMENT_REFUND_REQUIRED),
                                   .gw = req->keys->gw };
    struct route_failure failure = { .shard = NULL };
    struct refund e = { .id = 0 };
    enum refund_result rr;

    if (gw->cfg->refund_url[0] == '\0' ||
        (r != PAY_PAID && r != PAY_REFUND_REQUIRED && r != PAY_REPLAY))
        return true;
    rr = refund_route_after_payment(&rt, &p, &e, &failure);
    if (rr == REFUND_OK && p.double_payment)
        log_info("refund of a double payment requested",
                 "gateway=%s pay_no=%s order_no=%s refund_no=%s state=%s request_id=%s",
                 gw->cfg->name, pr->pay_no, pr->order_no, e.refund_no, refund_state_name(e.state),
                 req->request_id);
    if (rr != REFUND_UNAVAILABLE && rr != REFUND_ERROR)
        return true;
    route_log_failure(&failure, req->request_id);
    fail(k, resp, rr == REFUND_UNAVAILABLE ? API_UNAVAILABLE : API_INTERNAL,
         "the payment is recorded; its refund could not be, retry later");
    return false;
}

/* Applies a verified, paying notification on its order's shard and answers. */
static void apply(struct server *srv, const struct gateway *gw,
                  const struct gateway_callback_kind *k, const struct http_req *req,
                  struct http_resp *resp, const struct gateway_notice *n)
{
    const struct route rt = route_of(srv, req->request_id);
    struct pay_request pr = pay_request_of(gw, n);
    struct pay_outcome out;
    struct route_failure failure;
    enum pay_result r;

    r = pay_route(&rt, srv->paid, &pr, &out, &failure);
    pay_report(srv->m, &pr, r, &out, req->request_id);
    metrics_gateway_result(srv->m, gw->index, r);
    if (!failure.no_conn)
        log_info("gateway notification applied",
                 "gateway=%s pay_no=%s order_no=%s result=%s "
                 "request_id=%s",
                 gw->cfg->name, pr.pay_no, pr.order_no, pay_result_str(r), req->request_id);
    if (refund_follow_up(srv, gw, k, req, resp, &pr, r, &out))
        render(k, req, resp, &failure, r, &out);
}

bool first_gateway_callback(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct gateway *gw = gateways_find(req->keys->gw, req->param);
    const struct route rt = route_of(srv, req->request_id);
    const struct gateway_callback_kind *k;
    struct gateway_notice n;
    struct pay_request pr;
    struct pay_outcome out;
    enum pay_result r;

    /* The handler writes an info line for every notification: it does. */
    if (log_enabled(LOG_INFO) || gw == NULL || (k = kind_of(gw)) == NULL ||
        k->read(gw, req, (int64_t)time(NULL), &n) != GATEWAY_OK || !n.pays)
        return false;
    pr = pay_request_of(gw, &n);
    if (!pay_remembered(&rt, srv->paid, &pr, true, &out, &r))
        return false;
    pay_report(srv->m, &pr, r, &out, req->request_id);
    metrics_gateway_result(srv->m, gw->index, r);
    k->ack(resp);
    return true;
}

/* A refund notification: moves the refund it names, acknowledged once
 * recorded (a replay, or a word on a refund already final, changes
 * nothing and is acknowledged too). One for a refund we did not ask for is
 * recorded, alerted and acknowledged; a database away is the gateway's
 * "try again". */
static void apply_refund(struct server *srv, const struct gateway *gw,
                         const struct gateway_callback_kind *k, const struct http_req *req,
                         struct http_resp *resp, const struct gateway_notice *n)
{
    const struct route rt = route_of(srv, req->request_id);
    const struct refund_notice rn = { .gateway = gw->cfg->name,
                                      .refund_no = n->refund_no,
                                      .refund_id = n->refund_id,
                                      .state = n->refund == GATEWAY_REFUND_SUCCEEDED
                                                   ? REFUND_SUCCEEDED
                                                   : REFUND_FAILED,
                                      .code = n->refund_code,
                                      .pay_no = n->pay_no,
                                      .has_amount = n->refund_has_amount,
                                      .amount_total = n->refund_amount_total,
                                      .amount_cents = n->refund_amount_cents };
    struct route_failure failure = { .shard = NULL };
    struct refund e = { .id = 0 };
    enum refund_result r;
    bool changed = false;

    if (n->refund == GATEWAY_REFUND_PENDING) {
        k->ack(resp);
        return;
    }
    r = refund_route_notice(&rt, &rn, &changed, &e, &failure);
    switch (r) {
    case REFUND_OK:
        if (changed)
            metrics_refund(srv->m, gw->index, (int)rn.state);
        log_info("refund notification applied",
                 "gateway=%s refund_no=%s state=%s changed=%d request_id=%s", gw->cfg->name,
                 n->refund_no, refund_state_name(e.state), changed, req->request_id);
        if (changed && rn.state == REFUND_FAILED)
            log_alert("REFUND_FAILED", "refund_no=%s pay_no=%s gateway=%s code=%s request_id=%s",
                      e.refund_no, e.pay_no, gw->cfg->name, n->refund_code, req->request_id);
        k->ack(resp);
        break;
    case REFUND_MISMATCH: /* verified, but not what the refund is: never applied */
        log_alert("REFUND_NOTICE_MISMATCH",
                  "gateway=%s refund_no=%s refund_id=%s notice_pay_no=%s pay_no=%s "
                  "applied=0 request_id=%s",
                  gw->cfg->name, n->refund_no, n->refund_id, n->pay_no, e.pay_no, req->request_id);
        k->ack(resp);
        break;
    case REFUND_NOT_FOUND:
        metrics_refund_unsolicited(srv->m, gw->index);
        log_alert("REFUND_UNSOLICITED", "gateway=%s refund_no=%s refund_id=%s request_id=%s",
                  gw->cfg->name, n->refund_no, n->refund_id, req->request_id);
        k->ack(resp);
        break;
    default:
        route_log_failure(&failure, req->request_id);
        fail(k, resp, r == REFUND_UNAVAILABLE ? API_UNAVAILABLE : API_INTERNAL,
             "the refund notification could not be recorded, retry later");
        break;
    }
}

void handle_gateway_callback(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct gateway *gw = gateways_find(req->keys->gw, req->param);
    const struct gateway_callback_kind *k;
    struct gateway_notice n;
    enum gateway_status st;

    if (gw == NULL || (k = kind_of(gw)) == NULL) {
        api_reply(resp, API_NOT_FOUND, "no gateway with this name is configured");
        return;
    }
    if ((st = k->read(gw, req, (int64_t)time(NULL), &n)) != GATEWAY_OK) {
        refuse(srv, gw, k, req, resp, st);
        return;
    }
    if (n.refund != GATEWAY_REFUND_NONE) {
        apply_refund(srv, gw, k, req, resp, &n);
        return;
    }
    if (!n.pays) {
        metrics_gateway_result(srv->m, gw->index, PAY_RESULT_IGNORED);
        log_info("gateway notification acknowledged, nothing to apply",
                 "gateway=%s state=%s request_id=%s", gw->cfg->name, n.state, req->request_id);
        k->ack(resp);
        return;
    }
    apply(srv, gw, k, req, resp, &n);
}
