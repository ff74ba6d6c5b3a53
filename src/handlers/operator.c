/* operator.c - the operator API: the outbox (list, inspect, send a dead
 * event again), the refund queue (list, settle), the reconciliation report,
 * and cancelling orders whose payment never came. Every change is audited
 * with the operator credential's name. Parse -> call the domain -> render. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "config.h"
#include "db.h"
#include "handler_util.h"
#include "handlers.h"
#include "jsonutil.h"
#include "log.h"
#include "money.h"
#include "order_state.h"
#include "orders.h"
#include "outbox.h"
#include "query.h"
#include "reconcile.h"
#include "refunds.h"
#include "server.h"
#include "validate.h"

#define OPS_LIST_DEFAULT 50
#define OPS_LIST_MAX     100
#define OPS_CANCEL_MAX   100      /* stale orders one cancel-stale call cancels at most */
#define OPS_QUERY_DEFAULT 20      /* stale orders one query call asks about by default */
#define OPS_QUERY_MAX    100
#define OPS_QUERY_BUSY_RETRY_S 5

static bool retryable(enum db_status st)
{
    return st == DB_UNAVAILABLE || st == DB_RETRY;
}

/* Who is acting: the name of the operator credential that authenticated
 * the request (never the key itself). */
static const char *actor(const struct http_req *req)
{
    return req->caller[0] != '\0' ? req->caller : "anonymous";
}

/* A query parameter as an integer in [min, max]; def when absent. 0, or
 * -1 with a 400 in resp. */
static int query_int_or_reply(const struct http_req *req, const char *name, int64_t min,
                              int64_t max, int64_t def, int64_t *out, struct http_resp *resp)
{
    const char *v = http_req_query(req, name);
    char *end = NULL, msg[128];
    long long x;

    *out = def;
    if (v == NULL)
        return 0;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || errno != 0 || *end != '\0' || x < min || x > max) {
        snprintf(msg, sizeof(msg), "%s must be an integer in %lld..%lld", name, (long long)min,
                 (long long)max);
        http_reply_error(resp, 400, "BAD_REQUEST", msg);
        return -1;
    }
    *out = x;
    return 0;
}

/* The {id} of an outbox route. 0, or -1 with a 404 in resp. */
static int event_id_or_reply(const struct http_req *req, uint64_t *id, struct http_resp *resp)
{
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    v = strtoull(req->param, &end, 10);
    if (req->param[0] < '1' || req->param[0] > '9' || errno != 0 || *end != '\0' ||
        v > INT64_MAX) {
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
        return -1;
    }
    *id = v;
    return 0;
}

static cJSON *entry_json(const struct outbox_entry *e, bool with_payload)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, "id", (double)e->id);
    cJSON_AddStringToObject(o, "type", e->event_type);
    cJSON_AddStringToObject(o, "order_no", e->order_no);
    cJSON_AddStringToObject(o, "state", outbox_state_name(e->state));
    cJSON_AddNumberToObject(o, "attempts", e->attempts);
    cJSON_AddStringToObject(o, "created_at", e->created_at);
    cJSON_AddStringToObject(o, "next_attempt_at", e->next_attempt_at);
    if (e->published_at[0] != '\0')
        cJSON_AddStringToObject(o, "delivered_at", e->published_at);
    else
        cJSON_AddNullToObject(o, "delivered_at");
    if (e->last_error[0] != '\0')
        cJSON_AddStringToObject(o, "last_error", e->last_error);
    else
        cJSON_AddNullToObject(o, "last_error");
    if (with_payload) {
        cJSON *data = cJSON_Parse(e->payload);
        if (data != NULL)
            cJSON_AddItemToObject(o, "data", data);
        else
            cJSON_AddStringToObject(o, "data", e->payload);
    }
    return o;
}

void handle_ops_outbox_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const char *sv = http_req_query(req, "state");
    int state = sv == NULL ? OUTBOX_DEAD : outbox_state_from_name(sv);
    struct outbox_entry *items = NULL;
    struct db_conn *c = NULL;
    int64_t after = 0, limit = 0;
    size_t n = 0;
    enum db_status st;
    cJSON *o, *arr;

    if (state < 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "state must be PENDING, DELIVERED or DEAD");
        return;
    }
    if (query_int_or_reply(req, "after", 0, INT64_MAX, 0, &after, resp) != 0 ||
        query_int_or_reply(req, "limit", 1, OPS_LIST_MAX, OPS_LIST_DEFAULT, &limit, resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if ((c = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    st = outbox_list(c, state, (uint64_t)after, items, (size_t)limit, &n);
    if (st != DB_OK) {
        reply_db_failure(req, resp, c, "outbox_list", retryable(st));
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "events");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, entry_json(&items[i], false));
    if (n == (size_t)limit)
        cJSON_AddNumberToObject(o, "next_after", (double)items[n - 1].id);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    db_release(srv->db, c);
    free(items);
}

void handle_ops_outbox_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct outbox_entry e;
    struct db_conn *c = NULL;
    uint64_t id = 0;
    bool found = false;
    enum db_status st;
    cJSON *o;

    if (event_id_or_reply(req, &id, resp) != 0 || (c = db_acquire_or_reply(srv, resp)) == NULL)
        return;
    st = outbox_get(c, id, &e, &found);
    if (st != DB_OK)
        reply_db_failure(req, resp, c, "outbox_get", retryable(st));
    else if (!found)
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
    else {
        o = entry_json(&e, true);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
    }
    db_release(srv->db, c);
}

/* Sends a dead event again: PENDING, attempts reset, due now. Retrying an
 * event that is not dead changes nothing and says where it is. */
void handle_ops_outbox_retry(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct outbox_entry e;
    uint64_t id = 0;
    bool changed = false;
    struct db_conn *c = NULL;
    bool found = false;
    enum db_status st;
    cJSON *o;

    if (event_id_or_reply(req, &id, resp) != 0 || (c = db_acquire_or_reply(srv, resp)) == NULL)
        return;
    st = outbox_retry(c, id, actor(req), req->request_id, &changed);
    if (st != DB_OK) {
        reply_db_failure(req, resp, c, "outbox_retry", retryable(st));
        goto out;
    }
    if ((st = outbox_get(c, id, &e, &found)) != DB_OK) {
        reply_db_failure(req, resp, c, "outbox_get", retryable(st));
        goto out;
    }
    if (!found) {
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
        goto out;
    }
    if (!changed && e.state != OUTBOX_PENDING) {
        http_reply_error(resp, 409, "EVENT_NOT_DEAD",
                         e.state == OUTBOX_DELIVERED ? "the event was delivered already"
                                                     : "the event is not dead");
        goto out;
    }
    if (changed)
        log_info("outbox event sent again", "event_id=%s:%s actor=%s request_id=%s", e.order_no,
                 e.event_type, actor(req), req->request_id);
    o = entry_json(&e, false);
    cJSON_AddBoolToObject(o, "duplicate", !changed);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    db_release(srv->db, c);
}

static cJSON *refund_json(const struct refund_entry *r)
{
    cJSON *o = cJSON_CreateObject();
    char amount[MONEY_STR_MAX];

    cJSON_AddStringToObject(o, "pay_no", r->pay_no);
    cJSON_AddStringToObject(o, "order_no", r->order_no);
    cJSON_AddStringToObject(o, "amount", money_format(r->amount_cents, amount, sizeof(amount)));
    cJSON_AddStringToObject(o, "status", payment_status_name(r->status));
    cJSON_AddStringToObject(o, "created_at", r->create_time);
    if (r->status == PAYMENT_REFUND_SETTLED) {
        cJSON_AddStringToObject(o, "reference", r->reference);
        cJSON_AddStringToObject(o, "settled_by", r->settled_by);
        cJSON_AddStringToObject(o, "settled_at", r->settled_at);
    }
    return o;
}

void handle_ops_refunds_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const char *sv = http_req_query(req, "status");
    int status = PAYMENT_REFUND_REQUIRED;
    struct refund_entry *items = NULL;
    struct db_conn *c = NULL;
    enum refunds_result r;
    int64_t limit = 0;
    size_t n = 0;
    cJSON *o, *arr;

    if (sv != NULL && strcmp(sv, "REFUND_SETTLED") == 0)
        status = PAYMENT_REFUND_SETTLED;
    else if (sv != NULL && strcmp(sv, "REFUND_REQUIRED") != 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "status must be REFUND_REQUIRED or REFUND_SETTLED");
        return;
    }
    if (query_int_or_reply(req, "limit", 1, REFUNDS_LIST_MAX, OPS_LIST_DEFAULT, &limit, resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if ((c = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    if ((r = refunds_list(c, status, items, (size_t)limit, &n)) != REFUNDS_OK) {
        reply_db_failure(req, resp, c, "refunds_list", r == REFUNDS_UNAVAILABLE);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "payments");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, refund_json(&items[i]));
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    db_release(srv->db, c);
    free(items);
}

/* Records that the double charge pay_no was refunded at the gateway, with
 * the refund's reference. The same reference again answers the settled
 * payment with "duplicate":true; another reference is a conflict. */
void handle_ops_refund_settle(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    char reference[REFUNDS_REF_MAX];
    struct refund_entry e;
    struct db_conn *c = NULL;
    enum refunds_result r;
    cJSON *body = NULL, *o;

    if (!validate_id(req->param)) {
        http_reply_error(resp, 404, "PAYMENT_NOT_FOUND", "no payment with this pay_no");
        return;
    }
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_id_or_reply(body, "reference", reference, resp) != 0 ||
        (c = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    r = refunds_settle(c, req->param, reference, actor(req), req->request_id, &e);
    switch (r) {
    case REFUNDS_OK:
    case REFUNDS_DUPLICATE:
        if (r == REFUNDS_OK)
            log_info("refund settled", "pay_no=%s order_no=%s reference=%s actor=%s request_id=%s",
                     e.pay_no, e.order_no, reference, actor(req), req->request_id);
        o = refund_json(&e);
        cJSON_AddBoolToObject(o, "duplicate", r == REFUNDS_DUPLICATE);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
        break;
    case REFUNDS_NOT_FOUND:
        http_reply_error(resp, 404, "PAYMENT_NOT_FOUND", "no payment with this pay_no");
        break;
    case REFUNDS_NOT_REQUIRED:
        http_reply_error(resp, 409, "REFUND_NOT_REQUIRED",
                         "the payment is PAID: it did not charge the customer twice");
        break;
    case REFUNDS_CONFLICT:
        http_reply_error(resp, 409, "ALREADY_SETTLED",
                         "the payment was settled with another reference");
        break;
    case REFUNDS_UNAVAILABLE:
    case REFUNDS_ERROR:
        reply_db_failure(req, resp, c, "refunds_settle", r == REFUNDS_UNAVAILABLE);
        break;
    }
out:
    db_release(srv->db, c);
    cJSON_Delete(body);
}

static cJSON *report_json(const struct reconcile_report *rep, const struct config *cfg)
{
    cJSON *o = cJSON_CreateObject(), *sec, *arr;
    char amount[MONEY_STR_MAX];

    sec = cJSON_AddObjectToObject(o, "wait_pay_stale");
    cJSON_AddNumberToObject(sec, "count", (double)rep->wait_pay_stale);
    cJSON_AddNumberToObject(sec, "older_than_s", cfg->reconcile_wait_pay_age_s);
    arr = cJSON_AddArrayToObject(sec, "orders");
    for (size_t i = 0; i < rep->nstale; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "order_no", rep->stale[i].order_no);
        cJSON_AddStringToObject(x, "user_id", rep->stale[i].user_id);
        cJSON_AddStringToObject(x, "amount",
                                money_format(rep->stale[i].amount_cents, amount, sizeof(amount)));
        cJSON_AddStringToObject(x, "created_at", rep->stale[i].create_time);
        cJSON_AddItemToArray(arr, x);
    }
    sec = cJSON_AddObjectToObject(o, "refund_required");
    cJSON_AddNumberToObject(sec, "count", (double)rep->refund_unsettled);
    arr = cJSON_AddArrayToObject(sec, "payments");
    for (size_t i = 0; i < rep->nrefunds; i++)
        cJSON_AddItemToArray(arr, refund_json(&rep->refunds[i]));
    sec = cJSON_AddObjectToObject(o, "outbox");
    cJSON_AddNumberToObject(sec, "pending", (double)rep->outbox.pending);
    cJSON_AddNumberToObject(sec, "lagging", (double)rep->outbox.lagging);
    cJSON_AddNumberToObject(sec, "lag_bound_s", cfg->reconcile_outbox_lag_s);
    cJSON_AddNumberToObject(sec, "oldest_pending_ms", (double)rep->outbox.oldest_pending_ms);
    cJSON_AddNumberToObject(sec, "dead", (double)rep->outbox.dead);
    arr = cJSON_AddArrayToObject(sec, "dead_events");
    for (size_t i = 0; i < rep->ndead; i++)
        cJSON_AddItemToArray(arr, entry_json(&rep->dead[i], false));
    return o;
}

void handle_ops_reconcile(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct reconcile_report *rep = calloc(1, sizeof(*rep));
    struct db_conn *c = NULL;
    enum db_status st;
    cJSON *o;

    if (rep == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if ((c = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    if ((st = reconcile_report(c, srv->cfg, rep)) != DB_OK) {
        reply_db_failure(req, resp, c, "reconcile_report", retryable(st));
        goto out;
    }
    o = report_json(rep, srv->cfg);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    db_release(srv->db, c);
    free(rep);
}

/* The audit row of a stale-order cancel, in the cancel's transaction. */
static enum db_status audit_cancel(struct db_conn *c, const void *data, void *arg)
{
    const struct order_change *ch = data;
    const struct http_req *req = arg;

    return audit_append(c, actor(req), "order.cancel_stale", ch->order.order_no,
                        "WAIT_PAY -> CANCELED", req->request_id);
}

/* Cancels, through the state machine like POST /order/{no}/cancel (stock
 * returned, an order.canceled event, an audit row), the WAIT_PAY orders
 * older than older_than_s (at least reconcile.wait_pay_age_s), at most
 * limit of them. An order paid between the listing and its cancel is left
 * alone: the cancel happens only from WAIT_PAY. */
void handle_ops_cancel_stale(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct stale_order *stale = NULL;
    struct order_change *ch = NULL;
    struct db_conn *c = NULL;
    int64_t age = 0, limit = 0;
    size_t n = 0, canceled = 0;
    enum db_status st;
    cJSON *body = NULL, *o = NULL, *arr;
    const struct orders_hook audit = { audit_cancel, (void *)req };

    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_int_or_reply(body, "older_than_s", srv->cfg->reconcile_wait_pay_age_s,
                              31536000, &age, resp) != 0 ||
        json_get_int_or_reply(body, "limit", 1, OPS_CANCEL_MAX, &limit, resp) != 0)
        goto out;
    if ((stale = calloc((size_t)limit, sizeof(*stale))) == NULL ||
        (ch = calloc(1, sizeof(*ch))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        goto out;
    }
    if ((c = db_acquire_or_reply(srv, resp)) == NULL)
        goto out;
    if ((st = reconcile_stale_orders(c, (int)age, stale, (size_t)limit, &n)) != DB_OK) {
        reply_db_failure(req, resp, c, "reconcile_stale_orders",
                         retryable(st));
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "orders");
    for (size_t i = 0; i < n; i++) {
        struct order_transition_req tr = { .order_no = stale[i].order_no, .to = ORDER_CANCELED,
                                           .only_from = ORDER_WAIT_PAY, .hook = &audit };
        enum orders_result r = orders_transition(c, &tr, ch);
        cJSON *x = cJSON_CreateObject();

        cJSON_AddStringToObject(x, "order_no", stale[i].order_no);
        cJSON_AddStringToObject(x, "result", orders_result_str(r));
        cJSON_AddStringToObject(x, "status", order_state_name(r == ORDERS_OK ? ORDER_CANCELED
                                                                             : ch->from));
        cJSON_AddItemToArray(arr, x);
        if (r == ORDERS_OK) {
            canceled++;
            log_info("stale order canceled", "order_no=%s actor=%s request_id=%s",
                     stale[i].order_no, actor(req), req->request_id);
        } else if (r == ORDERS_UNAVAILABLE || r == ORDERS_ERROR) {
            reply_db_failure(req, resp, c, "orders_transition", r == ORDERS_UNAVAILABLE);
            goto out;
        }
    }
    cJSON_AddNumberToObject(o, "canceled", (double)canceled);
    http_reply_json(resp, 200, o);
out:
    cJSON_Delete(o);
    db_release(srv->db, c);
    cJSON_Delete(body);
    free(stale);
    free(ch);
}

static cJSON *query_item_json(const struct query *q, const struct query_item *it)
{
    cJSON *o = cJSON_CreateObject(), *arr;

    cJSON_AddStringToObject(o, "order_no", it->order_no);
    arr = cJSON_AddArrayToObject(o, "answers");
    for (size_t i = 0; i < it->nasked; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "endpoint", query_target_name(q, i));
        cJSON_AddStringToObject(x, "answer", query_status_name(it->answer[i]));
        if (it->answer[i] == QUERY_PAID)
            cJSON_AddStringToObject(x, "result", pay_result_str(it->result[i]));
        cJSON_AddItemToArray(arr, x);
    }
    return o;
}

/* The operator's round of POST /ops/reconcile/query, rendered. */
static void render_query(struct http_resp *resp, const struct query *q,
                         const struct query_item *items, size_t n,
                         const struct query_summary *sum)
{
    cJSON *o = cJSON_CreateObject(), *arr;

    cJSON_AddNumberToObject(o, "orders_asked", (double)sum->orders);
    cJSON_AddNumberToObject(o, "queries", (double)sum->queries);
    cJSON_AddNumberToObject(o, "paid", (double)sum->paid);
    cJSON_AddNumberToObject(o, "failed", (double)sum->failed);
    cJSON_AddBoolToObject(o, "stopped", sum->stopped);
    arr = cJSON_AddArrayToObject(o, "orders");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, query_item_json(q, &items[i]));
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

/* Asks the query endpoints now about the oldest stale orders (optional
 * body {"limit","older_than_s"}) and applies what they say was paid, as
 * the periodic pass does. Nothing to ask is a 409; a round already
 * running in this process is a 409 with Retry-After. */
void handle_ops_reconcile_query(struct server *srv, const struct http_req *req,
                                struct http_resp *resp)
{
    struct query_round run = { .request_id = req->request_id };
    struct query_item *items = NULL;
    struct query_summary sum;
    int64_t age = srv->cfg->reconcile_wait_pay_age_s, limit = OPS_QUERY_DEFAULT;
    size_t n = 0;
    cJSON *body = NULL;

    if (req->body_len > 0) {
        if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
            return;
        if ((cJSON_GetObjectItemCaseSensitive(body, "older_than_s") != NULL &&
             json_get_int_or_reply(body, "older_than_s", srv->cfg->reconcile_wait_pay_age_s,
                                   31536000, &age, resp) != 0) ||
            (cJSON_GetObjectItemCaseSensitive(body, "limit") != NULL &&
             json_get_int_or_reply(body, "limit", 1, OPS_QUERY_MAX, &limit, resp) != 0))
            goto out;
    }
    if (query_count(srv->query) == 0) {
        http_reply_error(resp, 409, "QUERY_NOT_CONFIGURED", "no query_url is configured: "
                         "GET /ops/reconcile reports the stale orders");
        goto out;
    }
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        goto out;
    }
    run.age_s = (int)age;
    run.limit = (size_t)limit;
    run.items = items;
    log_info("stale orders queried on demand", "limit=%lld older_than_s=%lld actor=%s "
             "request_id=%s", (long long)limit, (long long)age, actor(req), req->request_id);
    switch (query_run(srv->query, srv, &run, &n, &sum)) {
    case QUERY_ROUND_OK:
        render_query(resp, srv->query, items, n, &sum);
        break;
    case QUERY_ROUND_BUSY:
        http_reply_in_progress(resp, "QUERY_IN_PROGRESS", "a query round is running already",
                               OPS_QUERY_BUSY_RETRY_S);
        break;
    case QUERY_ROUND_UNAVAILABLE:
        http_reply_unavailable(resp, "database unavailable");
        break;
    case QUERY_ROUND_ERROR:
        http_reply_error(resp, 500, "INTERNAL", "the query round failed; see the log");
        break;
    }
out:
    cJSON_Delete(body);
    free(items);
}
