/* operator_reconcile.c - the operator API's reconciliation: the report
 * over every shard (reconcile_route_report), cancelling the orders whose
 * payment never came (reconcile_route_cancel_stale, audited), and asking
 * the gateways' query endpoints about them now (query_run). A route that
 * merges every shard answers with the shards that answered and names the
 * others in "unavailable_shards" (503 only when none answered). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>

#include "api_error.h"
#include "common.h"
#include "config.h"
#include "handlers.h"
#include "json_reply.h"
#include "log.h"
#include "money.h"
#include "operator.h"
#include "order_state.h"
#include "orders.h"
#include "pay.h"
#include "query.h"
#include "reconcile.h"
#include "route.h"
#include "server.h"

#define OPS_CANCEL_MAX 100   /* stale orders one cancel-stale call cancels at most */
#define OPS_QUERY_DEFAULT 20 /* stale orders one query call asks about by default */
#define OPS_QUERY_MAX 100
#define OPS_QUERY_BUSY_RETRY_S 5

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
        operator_add_shard(x, srv, rep->stale[i].shard);
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
        cJSON_AddItemToArray(arr, operator_refund_json(srv, &rep->refunds[i]));
    sec = cJSON_AddObjectToObject(o, "outbox");
    outbox_counts_json(sec, &rep->outbox);
    cJSON_AddNumberToObject(sec, "lag_bound_s", cfg->reconcile_outbox_lag_s);
    cJSON_AddNumberToObject(sec, "oldest_pending_ms", (double)rep->outbox.oldest_pending_ms);
    cJSON_AddNumberToObject(sec, "dead", (double)rep->outbox.dead);
    arr = cJSON_AddArrayToObject(sec, "dead_events");
    for (size_t i = 0; i < rep->ndead; i++)
        cJSON_AddItemToArray(arr, operator_event_json(srv, &rep->dead[i], false));
    if (srv->shards.sharded)
        report_shards_json(o, srv, rep);
    operator_add_unavailable(o, srv, sc);
    return o;
}

void handle_ops_reconcile(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct reconcile_report *rep = calloc(1, sizeof(*rep));
    struct route_scan sc;
    cJSON *o;

    if (rep == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (reconcile_route_report(&rt, srv->cfg, rep, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
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
    struct reconcile_cancel rc = { .actor = operator_actor(req) };
    struct route_failure fail;
    int64_t age = 0, limit = 0;
    cJSON *body = NULL, *o = NULL, *arr;

    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_int_or_reply(body, "older_than_s", srv->cfg->reconcile_wait_pay_age_s, 31536000,
                              &age, resp) != 0 ||
        json_get_int_or_reply(body, "limit", 1, OPS_CANCEL_MAX, &limit, resp) != 0)
        goto out;
    rc.age_s = (int)age;
    rc.limit = (size_t)limit;
    if ((rc.items = calloc(rc.limit, sizeof(*rc.items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
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

        operator_add_shard(x, srv, it->order.shard);
        cJSON_AddStringToObject(x, "order_no", it->order.order_no);
        cJSON_AddStringToObject(x, "result", orders_result_str(it->result));
        if (it->result != ORDERS_UNAVAILABLE)
            cJSON_AddStringToObject(
                x, "status", order_state_name(it->result == ORDERS_OK ? ORDER_CANCELED : it->from));
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddNumberToObject(o, "canceled", (double)rc.canceled);
    operator_add_unavailable(o, srv, &rc.sc);
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
                         const struct query_item *items, size_t n, const struct query_summary *sum)
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
    struct query_round run = { .request_id = req->request_id, .actor = operator_actor(req) };
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
        api_reply(resp, API_QUERY_NOT_CONFIGURED,
                  "no query_url is configured: "
                  "GET /ops/reconcile reports the stale orders");
        goto out;
    }
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        goto out;
    }
    run.age_s = (int)age;
    run.limit = (size_t)limit;
    run.items = items;
    log_info("stale orders queried on demand",
             "limit=%lld older_than_s=%lld actor=%s "
             "request_id=%s",
             (long long)limit, (long long)age, operator_actor(req), req->request_id);
    switch (query_run(srv->query, srv, &run, &n, &sum)) {
    case QUERY_ROUND_OK: render_query(resp, srv->query, items, n, &sum); break;
    case QUERY_ROUND_BUSY:
        http_reply_in_progress(resp, api_error_code(API_QUERY_IN_PROGRESS),
                               "a query round is running already", OPS_QUERY_BUSY_RETRY_S);
        break;
    case QUERY_ROUND_UNAVAILABLE: http_reply_unavailable(resp, "database unavailable"); break;
    case QUERY_ROUND_ERROR:
        api_reply(resp, API_INTERNAL, "the query round failed; see the log");
        break;
    }
out:
    cJSON_Delete(body);
    free(items);
}
