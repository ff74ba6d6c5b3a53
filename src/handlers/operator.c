/* operator.c - the operator API: the outbox (list, inspect, send a dead
 * event again), the refund queue (list, settle), the reconciliation report,
 * and cancelling orders whose payment never came. Every change is audited
 * with the operator credential's name. Parse -> call the domain -> render.
 *
 * Sharded, every route works across the shards, one connection at a time
 * (never two shards' at once). One rule for a shard that is down: a route
 * that merges every shard (the lists, the report, cancel-stale) answers
 * with the shards that answered and names the others in
 * "unavailable_shards" (503 only when none answered); a route that needs
 * one shard (an event, a payment to settle) answers 503 while that shard
 * is down. Events are named across shards by "Sdd-<row id>". */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "config.h"
#include "handlers.h"
#include "jsonutil.h"
#include "log.h"
#include "metrics.h"
#include "money.h"
#include "order_state.h"
#include "orders.h"
#include "outbox.h"
#include "query.h"
#include "reconcile.h"
#include "refunds.h"
#include "route.h"
#include "server.h"
#include "shard.h"
#include "validate.h"

#define OPS_LIST_DEFAULT 50
#define OPS_LIST_MAX     100
#define OPS_CANCEL_MAX   100      /* stale orders one cancel-stale call cancels at most */
#define OPS_QUERY_DEFAULT 20      /* stale orders one query call asks about by default */
#define OPS_QUERY_MAX    100
#define OPS_QUERY_BUSY_RETRY_S 5

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

/* An event's name across shards: its shard and its row id there. Text
 * is a row id ("17") unsharded; sharded, "S02-17" names row 17 of shard 2
 * and a bare row id names shard 1 (events written before sharding, as an
 * order_no without a prefix). 0, or -1 when text names no event of ours. */
static int event_ref(const struct server *srv, const char *text, const struct shard **sh,
                     uint64_t *id)
{
    const char *num = text;
    char *end = NULL;
    unsigned long long v;
    int sid = 0;

    if ((*sh = shard_of_order(&srv->shards, text)) == NULL)
        return -1;
    if (srv->shards.sharded && shard_parse_order_no(text, &sid) == SHARD_PREFIXED)
        num = text + SHARD_PREFIX_LEN;
    errno = 0;
    v = strtoull(num, &end, 10);
    if (num[0] < '1' || num[0] > '9' || errno != 0 || *end != '\0' || v > INT64_MAX)
        return -1;
    *id = v;
    return 0;
}

/* The {id} of an outbox route. 0, or -1 with a 404 in resp. */
static int event_id_or_reply(const struct server *srv, const struct http_req *req,
                             const struct shard **sh, uint64_t *id, struct http_resp *resp)
{
    if (event_ref(srv, req->param, sh, id) != 0) {
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
        return -1;
    }
    return 0;
}

/* The shard of index idx, named in a sharded answer. */
static void add_shard(cJSON *o, const struct server *srv, size_t idx)
{
    if (srv->shards.sharded)
        cJSON_AddNumberToObject(o, "shard", srv->shards.s[idx].id);
}

/* An event's id as the operator API shows it: the row id unsharded (a
 * number, as always), "Sdd-<row id>" sharded. */
static void add_event_id(cJSON *o, const struct server *srv, const struct outbox_entry *e)
{
    char id[SHARD_PREFIX_LEN + DB_INT_BUF];

    if (!srv->shards.sharded) {
        cJSON_AddNumberToObject(o, "id", (double)e->id);
        return;
    }
    snprintf(id, sizeof(id), "S%02d-%llu", srv->shards.s[e->shard].id,
             (unsigned long long)e->id);
    cJSON_AddStringToObject(o, "id", id);
}

/* Sharded answers name the shards that did not answer (maybe none). */
static void add_unavailable(cJSON *o, const struct server *srv, const struct route_scan *sc)
{
    cJSON *arr;

    if (!srv->shards.sharded)
        return;
    arr = cJSON_AddArrayToObject(o, "unavailable_shards");
    for (size_t i = 0; i < srv->shards.n; i++)
        if (sc->missed[i])
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(srv->shards.s[i].id));
}

/* What a scan that did not succeed answers: 503 when no shard answered,
 * 500 when one answered an error. */
static void reply_scan_failure(const struct http_req *req, struct http_resp *resp,
                               const struct route_scan *sc)
{
    reply_route_failure(req, resp, &sc->fail);
}

static cJSON *entry_json(const struct server *srv, const struct outbox_entry *e,
                         bool with_payload)
{
    cJSON *o = cJSON_CreateObject();

    add_event_id(o, srv, e);
    add_shard(o, srv, e->shard);
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

/* The position a listing starts after: unsharded the row id; sharded an
 * event id, events being listed by shard (in configured order), then id.
 * 0, or -1 after a 400. */
static int after_or_reply(struct server *srv, const struct http_req *req, size_t *shard,
                          uint64_t *after, struct http_resp *resp)
{
    const char *v = http_req_query(req, "after");
    const struct shard *sh = NULL;
    int64_t n = 0;

    *shard = 0;
    *after = 0;
    if (!srv->shards.sharded || v == NULL || strcmp(v, "0") == 0) {
        if (query_int_or_reply(req, "after", 0, INT64_MAX, 0, &n, resp) != 0)
            return -1;
        *after = (uint64_t)n;
        return 0;
    }
    if (event_ref(srv, v, &sh, after) != 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "after must be an event id (S01-17)");
        return -1;
    }
    *shard = sh->index;
    return 0;
}

void handle_ops_outbox_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    const char *sv = http_req_query(req, "state");
    int state = sv == NULL ? OUTBOX_DEAD : outbox_state_from_name(sv);
    struct outbox_entry *items = NULL;
    struct route_scan sc;
    uint64_t after = 0;
    int64_t limit = 0;
    size_t n = 0, first = 0;
    cJSON *o, *arr;

    if (state < 0) {
        http_reply_error(resp, 400, "BAD_REQUEST", "state must be PENDING, DELIVERED or DEAD");
        return;
    }
    if (after_or_reply(srv, req, &first, &after, resp) != 0 ||
        query_int_or_reply(req, "limit", 1, OPS_LIST_MAX, OPS_LIST_DEFAULT, &limit, resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if (outbox_route_list(&rt, state, first, after, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_scan_failure(req, resp, &sc);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "events");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, entry_json(srv, &items[i], false));
    if (n == (size_t)limit) {
        if (srv->shards.sharded) {
            cJSON *last = cJSON_GetArrayItem(arr, (int)n - 1);
            cJSON_AddStringToObject(o, "next_after",
                                    cJSON_GetObjectItemCaseSensitive(last, "id")->valuestring);
        } else {
            cJSON_AddNumberToObject(o, "next_after", (double)items[n - 1].id);
        }
    }
    add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}

void handle_ops_outbox_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct outbox_entry e;
    const struct shard *sh = NULL;
    struct route_failure fail;
    uint64_t id = 0;
    bool found = false;
    cJSON *o;

    if (event_id_or_reply(srv, req, &sh, &id, resp) != 0)
        return;
    if (outbox_route_get(&rt, sh, id, &e, &found, &fail) != ROUTE_OK) {
        reply_route_failure(req, resp, &fail);
    } else if (!found) {
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
    } else {
        o = entry_json(srv, &e, true);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
    }
}

/* Sends a dead event again: PENDING, attempts reset, due now. Retrying an
 * event that is not dead changes nothing and says where it is. */
void handle_ops_outbox_retry(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct outbox_entry e;
    const struct shard *sh = NULL;
    struct route_failure fail;
    uint64_t id = 0;
    bool changed = false, found = false;
    cJSON *o;

    if (event_id_or_reply(srv, req, &sh, &id, resp) != 0)
        return;
    if (outbox_route_retry(&rt, sh, id, actor(req), &changed, &e, &found, &fail) != ROUTE_OK) {
        reply_route_failure(req, resp, &fail);
        return;
    }
    if (!found) {
        http_reply_error(resp, 404, "EVENT_NOT_FOUND", "no outbox event with this id");
        return;
    }
    if (!changed && e.state != OUTBOX_PENDING) {
        http_reply_error(resp, 409, "EVENT_NOT_DEAD",
                         e.state == OUTBOX_DELIVERED ? "the event was delivered already"
                                                     : "the event is not dead");
        return;
    }
    if (changed)
        log_info("outbox event sent again", "event_id=%s:%s actor=%s request_id=%s", e.order_no,
                 e.event_type, actor(req), req->request_id);
    o = entry_json(srv, &e, false);
    cJSON_AddBoolToObject(o, "duplicate", !changed);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

static cJSON *refund_json(const struct server *srv, const struct refund_entry *r)
{
    cJSON *o = cJSON_CreateObject();
    char amount[MONEY_STR_MAX];

    add_shard(o, srv, r->shard);
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
    const struct route rt = route_of(srv, req->request_id);
    const char *sv = http_req_query(req, "status");
    int status = PAYMENT_REFUND_REQUIRED;
    struct refund_entry *items = NULL;
    struct route_scan sc;
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
    if (refunds_route_list(&rt, status, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_scan_failure(req, resp, &sc);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "payments");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, refund_json(srv, &items[i]));
    add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}

/* Records that the double charge pay_no was refunded at the gateway, with
 * the refund's reference. The same reference again answers the settled
 * payment with "duplicate":true; another reference is a conflict. */
void handle_ops_refund_settle(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    char reference[REFUNDS_REF_MAX];
    const struct refunds_settle_req sr = { .pay_no = req->param, .reference = reference,
                                           .actor = actor(req) };
    struct route_failure fail;
    struct refund_entry e;
    enum refunds_result r;
    cJSON *body = NULL, *o;

    if (!validate_id(req->param)) {
        http_reply_error(resp, 404, "PAYMENT_NOT_FOUND", "no payment with this pay_no");
        return;
    }
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_id_or_reply(body, "reference", reference, resp) != 0)
        goto out;
    r = refunds_route_settle(&rt, &sr, &e, &fail);
    switch (r) {
    case REFUNDS_OK:
    case REFUNDS_DUPLICATE:
        if (r == REFUNDS_OK)
            log_info("refund settled", "pay_no=%s order_no=%s reference=%s actor=%s request_id=%s",
                     e.pay_no, e.order_no, reference, actor(req), req->request_id);
        o = refund_json(srv, &e);
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
        reply_route_failure(req, resp, &fail);
        break;
    }
out:
    cJSON_Delete(body);
}

static void outbox_counts_json(cJSON *sec, const struct outbox_stats *ob)
{
    cJSON_AddNumberToObject(sec, "pending", (double)ob->pending);
    cJSON_AddNumberToObject(sec, "lagging", (double)ob->lagging);
}

/* Sharded: each shard's own counts ("status":"unavailable" for a shard
 * that did not answer); they add up to the report's totals. */
static void report_shards_json(cJSON *o, const struct server *srv,
                               const struct reconcile_report *rep)
{
    cJSON *all = cJSON_AddObjectToObject(o, "shards"), *x, *ob;

    for (size_t i = 0; i < srv->shards.n; i++) {
        const struct reconcile_part *p = &rep->part[i];

        x = cJSON_AddObjectToObject(all, srv->shards.s[i].label);
        cJSON_AddStringToObject(x, "status", p->answered ? "up" : "unavailable");
        if (!p->answered)
            continue;
        cJSON_AddNumberToObject(x, "wait_pay_stale", (double)p->wait_pay_stale);
        cJSON_AddNumberToObject(x, "refund_required", (double)p->refund_unsettled);
        ob = cJSON_AddObjectToObject(x, "outbox");
        outbox_counts_json(ob, &p->outbox);
        cJSON_AddNumberToObject(ob, "oldest_pending_ms", (double)p->outbox.oldest_pending_ms);
        cJSON_AddNumberToObject(ob, "dead", (double)p->outbox.dead);
    }
}

static cJSON *report_json(const struct server *srv, const struct reconcile_report *rep,
                          const struct route_scan *sc)
{
    const struct config *cfg = srv->cfg;
    cJSON *o = cJSON_CreateObject(), *sec, *arr;
    char amount[MONEY_STR_MAX];

    sec = cJSON_AddObjectToObject(o, "wait_pay_stale");
    cJSON_AddNumberToObject(sec, "count", (double)rep->wait_pay_stale);
    cJSON_AddNumberToObject(sec, "older_than_s", cfg->reconcile_wait_pay_age_s);
    arr = cJSON_AddArrayToObject(sec, "orders");
    for (size_t i = 0; i < rep->nstale; i++) {
        cJSON *x = cJSON_CreateObject();
        add_shard(x, srv, rep->stale[i].shard);
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
        cJSON_AddItemToArray(arr, refund_json(srv, &rep->refunds[i]));
    sec = cJSON_AddObjectToObject(o, "outbox");
    outbox_counts_json(sec, &rep->outbox);
    cJSON_AddNumberToObject(sec, "lag_bound_s", cfg->reconcile_outbox_lag_s);
    cJSON_AddNumberToObject(sec, "oldest_pending_ms", (double)rep->outbox.oldest_pending_ms);
    cJSON_AddNumberToObject(sec, "dead", (double)rep->outbox.dead);
    arr = cJSON_AddArrayToObject(sec, "dead_events");
    for (size_t i = 0; i < rep->ndead; i++)
        cJSON_AddItemToArray(arr, entry_json(srv, &rep->dead[i], false));
    if (srv->shards.sharded)
        report_shards_json(o, srv, rep);
    add_unavailable(o, srv, sc);
    return o;
}

void handle_ops_reconcile(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct reconcile_report *rep = calloc(1, sizeof(*rep));
    struct route_scan sc;
    cJSON *o;

    if (rep == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        return;
    }
    if (reconcile_route_report(&rt, srv->cfg, rep, &sc) != ROUTE_OK) {
        reply_scan_failure(req, resp, &sc);
        goto out;
    }
    o = report_json(srv, rep, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(rep);
}

/* Cancels, through the state machine like POST /order/{no}/cancel (stock
 * returned, an order.canceled event, an audit row), the WAIT_PAY orders
 * older than older_than_s (at least reconcile.wait_pay_age_s), at most
 * limit of them: the oldest across every shard. An order paid between the
 * listing and its cancel is left alone: the cancel happens only from
 * WAIT_PAY. */
void handle_ops_cancel_stale(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct reconcile_cancel rc = { .actor = actor(req) };
    struct route_failure fail;
    int64_t age = 0, limit = 0;
    cJSON *body = NULL, *o = NULL, *arr;

    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_int_or_reply(body, "older_than_s", srv->cfg->reconcile_wait_pay_age_s,
                              31536000, &age, resp) != 0 ||
        json_get_int_or_reply(body, "limit", 1, OPS_CANCEL_MAX, &limit, resp) != 0)
        goto out;
    rc.age_s = (int)age;
    rc.limit = (size_t)limit;
    if ((rc.items = calloc(rc.limit, sizeof(*rc.items))) == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "out of memory");
        goto out;
    }
    if (reconcile_route_cancel_stale(&rt, &rc, &fail) != ROUTE_OK) {
        reply_route_failure(req, resp, &fail);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "orders");
    for (size_t i = 0; i < rc.n; i++) {
        const struct reconcile_canceled *it = &rc.items[i];
        cJSON *x = cJSON_CreateObject();

        add_shard(x, srv, it->order.shard);
        cJSON_AddStringToObject(x, "order_no", it->order.order_no);
        cJSON_AddStringToObject(x, "result", orders_result_str(it->result));
        if (it->result != ORDERS_UNAVAILABLE)
            cJSON_AddStringToObject(x, "status",
                                    order_state_name(it->result == ORDERS_OK ? ORDER_CANCELED
                                                                             : it->from));
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddNumberToObject(o, "canceled", (double)rc.canceled);
    add_unavailable(o, srv, &rc.sc);
    http_reply_json(resp, 200, o);
out:
    cJSON_Delete(o);
    cJSON_Delete(body);
    free(rc.items);
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
