/* operator_summary.c - GET /ops/whoami (the operator key that signed a
 * request in: its name and scopes, never the key) and GET /ops/summary
 * (this instance's counters since it started: callbacks by gateway and
 * result, refusals, double payments, deliveries, and the gauges of the
 * last reconciliation pass). Neither touches a database: both answer on
 * the polling thread. The console draws its overview from them. */
#include <cjson/cJSON.h>
#include <string.h>

#include "array.h"
#include "config.h"
#include "gateway_notice.h"
#include "handlers.h"
#include "metrics.h"
#include "server.h"

#define NATIVE_GATEWAY "json" /* POST /pay/callback: the service's own format */

void handle_ops_whoami(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    cJSON *o = cJSON_CreateObject(), *scopes;

    (void)srv;
    cJSON_AddStringToObject(o, "name", req->caller);
    scopes = cJSON_AddArrayToObject(o, "scopes");
    for (int i = 0; i < CFG_SCOPES_N; i++)
        if (req->scopes & (1u << i))
            cJSON_AddItemToArray(scopes, cJSON_CreateString(cfg_scope_name(1u << i)));
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

static void add_count(cJSON *arr, const char *gateway, const char *key, const char *value,
                      uint64_t n)
{
    cJSON *o;

    if (n == 0)
        return; /* the lists hold what happened; the console draws the zeros */
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gateway", gateway);
    cJSON_AddStringToObject(o, key, value);
    cJSON_AddNumberToObject(o, "count", (double)n);
    cJSON_AddItemToArray(arr, o);
}

/* The service's own callback is counted by answer: the route's statuses,
 * named by the code each carries. */
static const struct {
    int status;
    const char *result;
} native_results[] = {
    { 200, "SUCCESS" },         { 400, "BAD_REQUEST" },     { 404, "ORDER_NOT_FOUND" },
    { 409, "PAY_NO_CONFLICT" }, { 422, "AMOUNT_MISMATCH" }, { 503, "UNAVAILABLE" },
};

/* Fills "callbacks" and "rejections"; returns the signature refusals. */
static uint64_t add_callbacks(const struct metrics *m, cJSON *o)
{
    cJSON *done = cJSON_AddArrayToObject(o, "callbacks");
    cJSON *refused = cJSON_AddArrayToObject(o, "rejections");
    struct metrics_gateway_view gw[METRICS_GATEWAYS_MAX];
    size_t n = metrics_gateways_read(m, gw, ARRAY_SIZE(gw));
    uint64_t bad_sig = metrics_route_status(m, "POST", "/pay/callback", 401);

    for (size_t i = 0; i < ARRAY_SIZE(native_results); i++)
        add_count(done, NATIVE_GATEWAY, "result", native_results[i].result,
                  metrics_route_status(m, "POST", "/pay/callback", native_results[i].status));
    add_count(refused, NATIVE_GATEWAY, "reason", "signature_mismatch", bad_sig);
    for (size_t g = 0; g < n; g++) {
        for (size_t v = 0; v < gw[g].nresults; v++)
            add_count(done, gw[g].name, "result", gw[g].results[v], gw[g].result[v]);
        for (size_t v = 0; v < gw[g].nreasons; v++) {
            add_count(refused, gw[g].name, "reason", gw[g].reasons[v], gw[g].reject[v]);
            /* reasons[v] is enum gateway_status v + 1 */
            if (v + 1 >= GATEWAY_SIG_MISSING && v + 1 <= GATEWAY_DECRYPT_FAILED)
                bad_sig += gw[g].reject[v];
        }
    }
    return bad_sig;
}

static void add_reconcile(const struct metrics *m, cJSON *o)
{
    cJSON *r = cJSON_AddObjectToObject(o, "reconcile");

    cJSON_AddNumberToObject(r, "last_run_s", (double)metrics_gauge(m, G_RECONCILE_LAST_RUN_S));
    cJSON_AddNumberToObject(r, "wait_pay_stale", (double)metrics_gauge(m, G_WAIT_PAY_STALE));
    cJSON_AddNumberToObject(r, "refund_unsettled", (double)metrics_gauge(m, G_REFUND_UNSETTLED));
    cJSON_AddNumberToObject(r, "outbox_pending", (double)metrics_gauge(m, G_OUTBOX_PENDING));
    cJSON_AddNumberToObject(r, "outbox_dead", (double)metrics_gauge(m, G_OUTBOX_DEAD));
}

void handle_ops_summary(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct metrics *m = srv->m;
    cJSON *o = cJSON_CreateObject(), *ob;
    uint64_t bad_sig;

    (void)req;
    cJSON_AddNumberToObject(o, "uptime_s", (double)metrics_uptime_s(m));
    bad_sig = add_callbacks(m, o);
    cJSON_AddNumberToObject(o, "signature_rejections", (double)bad_sig);
    cJSON_AddNumberToObject(o, "double_payments", (double)metrics_counter(m, M_DOUBLE_PAYMENT));
    cJSON_AddNumberToObject(o, "duplicate_callbacks", (double)metrics_counter(m, M_DUP_CALLBACK));
    ob = cJSON_AddObjectToObject(o, "outbox");
    cJSON_AddNumberToObject(ob, "delivered", (double)metrics_counter(m, M_OUTBOX_DELIVERED));
    cJSON_AddNumberToObject(ob, "failures", (double)metrics_counter(m, M_OUTBOX_FAILURES));
    cJSON_AddNumberToObject(ob, "dead", (double)metrics_counter(m, M_OUTBOX_DEAD));
    add_reconcile(m, o);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}
