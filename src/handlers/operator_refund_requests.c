/* operator_refund_requests.c - the operator API's refund records: ask for
 * a (partial) refund of a payment with an Idempotency-Key, list refunds by
 * state, gateway and age, read one, approve one awaiting approval, and make
 * a waiting one due now. Each change is audited with the operator
 * credential's name; the refunds themselves are refund.c's and the relay
 * submits them. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "auth.h"
#include "common.h"
#include "currency.h"
#include "handlers.h"
#include "http.h"
#include "idempotency.h"
#include "json_reply.h"
#include "keyring.h"
#include "log.h"
#include "money.h"
#include "operator.h"
#include "refund.h"
#include "route.h"
#include "server.h"
#include "shard.h"
#include "validate.h"

/* A refund's listing cursor: its row id, after its refund_no's shard
 * prefix when it has one ("S02-17"), as outbox event ids are written. */
static void refund_cursor(const struct refund *r, char *out, size_t outsz)
{
    int sid = 0;

    if (shard_parse_order_no(r->refund_no, &sid) == SHARD_PREFIXED)
        snprintf(out, outsz, "S%02d-%llu", sid, (unsigned long long)r->id);
    else
        snprintf(out, outsz, "%llu", (unsigned long long)r->id);
}

static cJSON *refund_json(const struct refund *r)
{
    cJSON *o = cJSON_CreateObject();
    char amount[MONEY_STR_MAX], pay_amount[MONEY_STR_MAX], cursor[48];

    refund_cursor(r, cursor, sizeof(cursor));
    cJSON_AddStringToObject(o, "refund_no", r->refund_no);
    cJSON_AddStringToObject(o, "cursor", cursor);
    cJSON_AddStringToObject(o, "pay_no", r->pay_no);
    cJSON_AddStringToObject(o, "order_no", r->order_no);
    cJSON_AddStringToObject(o, "gateway", r->gateway);
    cJSON_AddStringToObject(o, "amount", money_format(r->amount_cents, amount, sizeof(amount)));
    cJSON_AddStringToObject(o, "payment_amount",
                            money_format(r->pay_amount_cents, pay_amount, sizeof(pay_amount)));
    cJSON_AddStringToObject(o, "currency", r->currency);
    cJSON_AddStringToObject(o, "state", refund_state_name(r->state));
    cJSON_AddStringToObject(o, "origin", refund_origin_name(r->origin));
    cJSON_AddStringToObject(o, "reason", r->reason);
    cJSON_AddStringToObject(o, "requested_by", r->requested_by);
    cJSON_AddStringToObject(o, "approved_by", r->approved_by);
    cJSON_AddStringToObject(o, "gateway_refund_id", r->gateway_refund_id);
    cJSON_AddStringToObject(o, "failure_code", r->failure_code);
    cJSON_AddStringToObject(o, "last_error", r->last_error);
    cJSON_AddNumberToObject(o, "attempts", r->attempts);
    cJSON_AddStringToObject(o, "created_at", r->create_time);
    cJSON_AddStringToObject(o, "updated_at", r->update_time);
    cJSON_AddStringToObject(o, "next_attempt_at", r->next_attempt_at);
    if (r->finished_at[0] != '\0')
        cJSON_AddStringToObject(o, "finished_at", r->finished_at);
    else
        cJSON_AddNullToObject(o, "finished_at");
    return o;
}

static void reply_refund(struct http_resp *resp, int status, const struct refund *r, bool duplicate)
{
    cJSON *o = refund_json(r);

    cJSON_AddBoolToObject(o, "duplicate", duplicate);
    http_reply_json(resp, status, o);
    cJSON_Delete(o);
}

/* The answer to a created refund, stored with it under its Idempotency-Key. */
static void render_created(struct http_resp *resp, const void *data)
{
    reply_refund(resp, 201, data, false);
}

/* The refusals and failures every refund route may answer. */
static void reply_refusal(const struct http_req *req, struct http_resp *resp, enum refund_result r,
                          const struct refund *e, const struct route_failure *fail)
{
    char msg[160], left[MONEY_STR_MAX];

    switch (r) {
    case REFUND_NOT_FOUND:
        api_reply(resp, API_REFUND_NOT_FOUND, "no refund with this refund_no");
        break;
    case REFUND_EXCEEDS:
        snprintf(msg, sizeof(msg), "the payment's refunds would exceed its amount: %s is left",
                 money_format(e->pay_amount_cents, left, sizeof(left)));
        api_reply(resp, API_REFUND_EXCEEDS_PAYMENT, msg);
        break;
    case REFUND_CURRENCY:
        snprintf(msg, sizeof(msg), "the payment is in %s: a refund is in its payment's currency",
                 e->currency);
        api_reply(resp, API_REFUND_CURRENCY_MISMATCH, msg);
        break;
    case REFUND_INEXACT:
        snprintf(msg, sizeof(msg), "%s %s has no exact value in %s's minor unit",
                 money_format(e->amount_cents, left, sizeof(left)), e->currency, e->currency);
        api_reply(resp, API_REFUND_AMOUNT_INEXACT, msg);
        break;
    case REFUND_MANUAL:
        api_reply(resp, API_REFUND_MANUAL,
                  "the payment's gateway has no refund API: refund it by hand and settle it");
        break;
    case REFUND_ILLEGAL:
        snprintf(msg, sizeof(msg), "a refund in state %s does not allow this change",
                 refund_state_name(e->state));
        api_reply(resp, API_REFUND_ILLEGAL_STATE, msg);
        break;
    case REFUND_SETTLED:
        api_reply(resp, API_PAYMENT_SETTLED,
                  "the refund's payment was settled (refunded elsewhere or in full): nothing more "
                  "goes back through the gateway");
        break;
    case REFUND_SAME_ACTOR:
        api_reply(resp, API_APPROVER_MUST_DIFFER,
                  "refunds.approver_must_differ: another operator key must approve this refund");
        break;
    case REFUND_ABORTED: break; /* idempotency_end answers as a repeat */
    default: reply_route_failure(req, resp, fail); break;
    }
}

/* POST /ops/payments/{pay_no}/refunds {"amount"?, "currency"?, "reason"?}:
 * an Idempotency-Key is required, since a refund asked twice would give the
 * money back twice; keys are scoped by the operator key's name. Without
 * "amount" the refund is what is left of the payment. A refund is in its
 * payment's currency: "currency", when given, must name it (422
 * REFUND_CURRENCY_MISMATCH otherwise). Under refunds.approver_must_differ
 * it waits for another key's approval. */
void handle_ops_refund_create(struct server *srv, const struct http_req *req,
                              struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct refund_create_req cr = { .pay_no = req->param,
                                    .origin = REFUND_ORIGIN_OPERATOR,
                                    .actor = operator_actor(req),
                                    .request_id = req->request_id,
                                    /* four eyes: another key approves it */
                                    .approved = srv->cfg->refunds_approver_must_differ == 0,
                                    .gw = req->keys->gw };
    struct idempotency ir = { .on = false };
    char scope[IDEM_SCOPE_MAX + 1], reason[REFUND_REASON_MAX + 1] = "", currency[CURRENCY_BUF];
    struct route_failure fail = { .shard = NULL };
    const cJSON *it;
    struct refund e = { .id = 0 };
    enum refund_result r;
    cJSON *body = NULL;

    if (!validate_id(req->param)) {
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
        return;
    }
    if (idempotency_key_or_reply(req, &ir, resp) != 0)
        return;
    if (!ir.on) {
        api_reply(resp, API_BAD_REQUEST, "a refund needs an " IDEMPOTENCY_HEADER " header");
        return;
    }
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (cJSON_GetObjectItemCaseSensitive(body, "amount") != NULL &&
        json_get_money_or_reply(body, "amount", &cr.amount_cents, resp) != 0)
        goto out;
    if (cJSON_GetObjectItemCaseSensitive(body, "amount") != NULL && cr.amount_cents <= 0) {
        api_reply(resp, API_BAD_REQUEST, "amount must be above 0");
        goto out;
    }
    it = cJSON_GetObjectItemCaseSensitive(body, "currency");
    if (it != NULL) {
        if (!cJSON_IsString(it) || currency_normalize(it->valuestring, currency) != CURRENCY_OK) {
            api_reply(resp, API_BAD_REQUEST, "currency must be an ISO 4217 code (\"CNY\")");
            goto out;
        }
        cr.currency = currency;
    }
    it = cJSON_GetObjectItemCaseSensitive(body, "reason");
    if (it != NULL) {
        if (!cJSON_IsString(it) || strlen(it->valuestring) > REFUND_REASON_MAX) {
            api_reply(resp, API_BAD_REQUEST, "reason must be a string of at most 128 bytes");
            goto out;
        }
        snprintf(reason, sizeof(reason), "%s", it->valuestring);
        cr.reason = reason;
    }
    snprintf(scope, sizeof(scope), "key:%s", operator_actor(req));
    if (idempotency_begin_or_reply(srv, req, scope, &ir, resp) != 0)
        goto out;
    cr.hook = idempotency_hook(&ir, resp, render_created);
    r = refund_route_create(&rt, &cr, ir.shard, &e, &fail);
    if (r == REFUND_OK) {
        log_info("refund requested",
                 "refund_no=%s pay_no=%s order_no=%s amount_cents=%lld state=%s actor=%s "
                 "request_id=%s",
                 e.refund_no, e.pay_no, e.order_no, (long long)e.amount_cents,
                 refund_state_name(e.state), cr.actor, req->request_id);
        render_created(resp, &e);
    } else if (r == REFUND_NOT_FOUND) {
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
    } else {
        reply_refusal(req, resp, r, &e, &fail);
    }
    idempotency_end(srv, req, &ir, resp);
out:
    cJSON_Delete(body);
}

/* The position a listing starts after: a refund's cursor ("17", or
 * "S02-17" sharded). 0, or -1 after a 400. */
static int after_or_reply(struct server *srv, const struct http_req *req, size_t *first,
                          uint64_t *after, struct http_resp *resp)
{
    const char *v = http_req_query(req, "after"), *num;
    const struct shard *sh;
    unsigned long long n;
    char *end = NULL;
    int sid = 0;

    *first = 0;
    *after = 0;
    if (v == NULL || strcmp(v, "0") == 0)
        return 0;
    num = v;
    sh = shard_of_order(&srv->shards, v);
    if (shard_parse_order_no(v, &sid) == SHARD_PREFIXED)
        num = v + SHARD_PREFIX_LEN;
    errno = 0;
    n = strtoull(num, &end, 10);
    if (sh == NULL || num[0] < '1' || num[0] > '9' || errno != 0 || *end != '\0' || n > INT64_MAX) {
        api_reply(resp, API_BAD_REQUEST, "after must be a refund's cursor");
        return -1;
    }
    *first = sh->index;
    *after = n;
    return 0;
}

/* GET /ops/refund-requests?state=&gateway=&older_than_s=&after=&limit= */
void handle_ops_refund_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    const char *sv = http_req_query(req, "state");
    struct refund_filter f = { .state = -1,
                               .gateway = http_req_query(req, "gateway"),
                               .pay_no = http_req_query(req, "pay_no") };
    struct refund *items = NULL;
    struct route_scan sc;
    uint64_t after = 0;
    int64_t limit = 0;
    size_t n = 0, first = 0;
    cJSON *o, *arr;

    if (sv != NULL && (f.state = refund_state_from_name(sv)) < 0) {
        api_reply(resp, API_BAD_REQUEST,
                  "state must be AWAITING_APPROVAL, REQUESTED, SUBMITTED, SUCCEEDED, FAILED or "
                  "UNKNOWN");
        return;
    }
    if (f.gateway != NULL && !validate_id(f.gateway)) {
        api_reply(resp, API_BAD_REQUEST, "gateway must be a gateway profile's name");
        return;
    }
    if (f.pay_no != NULL && !validate_id(f.pay_no)) {
        api_reply(resp, API_BAD_REQUEST, "pay_no must be a payment number");
        return;
    }
    if (after_or_reply(srv, req, &first, &after, resp) != 0 ||
        operator_query_int_or_reply(req, "older_than_s", 0, 100L * 365 * 86400, 0, &f.older_s,
                                    resp) != 0 ||
        operator_query_int_or_reply(req, "limit", 1, REFUND_LIST_MAX, OPS_LIST_DEFAULT, &limit,
                                    resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (refund_route_list(&rt, &f, first, after, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "refunds");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, refund_json(&items[i]));
    if (n == (size_t)limit) {
        char cursor[48];

        refund_cursor(&items[n - 1], cursor, sizeof(cursor));
        cJSON_AddStringToObject(o, "next_after", cursor);
    }
    operator_add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}

/* GET /ops/refund-requests/{refund_no} */
void handle_ops_refund_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct route_failure fail = { .shard = NULL };
    struct refund e = { .id = 0 };
    enum refund_result r;

    if (!validate_id(req->param)) {
        api_reply(resp, API_REFUND_NOT_FOUND, "no refund with this refund_no");
        return;
    }
    r = refund_route_get(&rt, req->param, &e, &fail);
    if (r == REFUND_OK) {
        cJSON *o = refund_json(&e);

        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
    } else {
        reply_refusal(req, resp, r, &e, &fail);
    }
}

/* Approve (AWAITING_APPROVAL -> REQUESTED), retry (a waiting refund due
 * now) or reject (AWAITING_APPROVAL -> FAILED, never sent) the refund the
 * path names; the same change again answers the refund with
 * "duplicate":true. */
static void change_and_reply(struct server *srv, const struct http_req *req, struct http_resp *resp,
                             enum refund_change op)
{
    static const char *const done[] = { "refund approved", "refund made due now",
                                        "refund rejected" };
    static const char *const changes[] = { "approve", "retry", "reject" };
    const struct route rt = route_of(srv, req->request_id);
    const struct refund_change_req rq = { .op = op,
                                          .refund_no = req->param,
                                          .actor = operator_actor(req),
                                          .request_id = req->request_id,
                                          .approver_must_differ =
                                              srv->cfg->refunds_approver_must_differ != 0 };
    struct route_failure fail = { .shard = NULL };
    struct refund e = { .id = 0 };
    enum refund_result r;

    if (!validate_id(req->param)) {
        api_reply(resp, API_REFUND_NOT_FOUND, "no refund with this refund_no");
        return;
    }
    r = refund_route_change(&rt, &rq, &e, &fail);
    if (r == REFUND_OK || r == REFUND_DUPLICATE) {
        if (r == REFUND_OK)
            log_info(done[op], "refund_no=%s pay_no=%s actor=%s request_id=%s", e.refund_no,
                     e.pay_no, operator_actor(req), req->request_id);
        reply_refund(resp, 200, &e, r == REFUND_DUPLICATE);
    } else {
        if (r == REFUND_SETTLED)
            log_alert("REFUND_AFTER_SETTLE",
                      "refund_no=%s pay_no=%s actor=%s change=%s refused=payment_settled "
                      "request_id=%s",
                      e.refund_no, e.pay_no, operator_actor(req), changes[op], req->request_id);
        reply_refusal(req, resp, r, &e, &fail);
    }
}

void handle_ops_refund_approve(struct server *srv, const struct http_req *req,
                               struct http_resp *resp)
{
    change_and_reply(srv, req, resp, REFUND_CHANGE_APPROVE);
}

void handle_ops_refund_retry(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    change_and_reply(srv, req, resp, REFUND_CHANGE_RETRY);
}

void handle_ops_refund_reject(struct server *srv, const struct http_req *req,
                              struct http_resp *resp)
{
    change_and_reply(srv, req, resp, REFUND_CHANGE_REJECT);
}
