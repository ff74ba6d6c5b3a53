/* router.c - the route table: which handler serves each method and path,
 * in which lane it runs (on the polling thread, in the pool of the
 * readiness probes, or in the work pool), whether it needs an operator
 * key, and its quota. The only file that knows both the handlers and the
 * credentials. */
#include "router.h"

#include "array.h"
#include "auth.h"
#include "config.h"
#include "handlers.h"
#include "http_route.h"
#include "keyring.h"
#include "metrics.h"

/* The scope an operator route needs (auth_scope_or_reply), in the
 * guard's bits of its flags: operator_key with READ, ORDERS, ... */
#define SCOPE_SHIFT HTTP_ROUTE_GUARD_SHIFT
#define READ (CFG_SCOPE_READ << SCOPE_SHIFT)
#define ORDERS (CFG_SCOPE_ORDERS << SCOPE_SHIFT)
#define REFUNDS (CFG_SCOPE_REFUNDS << SCOPE_SHIFT)
#define EVENTS (CFG_SCOPE_EVENTS << SCOPE_SHIFT)
#define METRICS (CFG_SCOPE_METRICS << SCOPE_SHIFT)
#define AUDIT (CFG_SCOPE_AUDIT << SCOPE_SHIFT)
#define ANY 0 /* any operator key: the route tells a key about itself */

/* The guard of the operator routes: an operator key (auth.keys) of the
 * keys this request started with, holding the route's scope. */
static int operator_key(const struct http_route *route, struct http_req *req,
                        struct http_resp *resp)
{
    if (auth_require_or_reply(&req->keys->cfg, req, resp) != 0)
        return -1;                                                      /* 401 set */
    return auth_scope_or_reply(req, route->flags >> SCOPE_SHIFT, resp); /* 403 */
}

/* The guard of a route where a key is optional: none passes; one sent
 * must be valid, and then names the caller. */
static int caller_key(const struct http_route *route, struct http_req *req, struct http_resp *resp)
{
    (void)route;
    if (http_req_header(req, "Authorization") == NULL)
        return 0;
    return auth_require_or_reply(&req->keys->cfg, req, resp);
}

#define OPEN NULL               /* signed, token-based or public: no operator key */
#define INLINE HTTP_LANE_INLINE /* no I/O: answered on the polling thread */
#define OPS HTTP_LANE_OPS       /* the bounded readiness probe: never behind business */
#define WORK HTTP_LANE_WORK     /* MySQL and Redis */

#define QUOTA_TOKEN HTTP_ROUTE_QUOTA_TOKEN
#define QUOTA_ORDER HTTP_ROUTE_QUOTA_ORDER
#define NO_HEAD HTTP_ROUTE_NO_HEAD
#define PAY_ASYNC (&pay_callback_async) /* its form for http.event_loop */

static const struct http_route routes[] = {
    { "POST", "/pay/callback", handle_pay_callback, WORK, OPEN, 0, first_pay_callback, PAY_ASYNC },
    { "POST", "/pay/callback/{gateway}", handle_gateway_callback, WORK, OPEN, 0,
      first_gateway_callback, NULL },
    { "GET", "/healthz", handle_healthz, INLINE, OPEN, 0, NULL, NULL },
    { "GET", "/readyz", handle_readyz, OPS, OPEN, 0, NULL, NULL },
    { "GET", "/metrics", handle_metrics, OPS, operator_key, METRICS, NULL, NULL },
    { "GET", "/token/apply", handle_token_apply, WORK, OPEN, QUOTA_TOKEN | NO_HEAD, NULL, NULL },
    { "POST", "/token/apply", handle_token_apply, WORK, OPEN, QUOTA_TOKEN, NULL, NULL },
    { "POST", "/order/create", handle_order_create, WORK, caller_key, QUOTA_ORDER, NULL, NULL },
    { "GET", "/order/{order_no}", handle_order_get, WORK, operator_key, READ, NULL, NULL },
    { "POST", "/order/{order_no}/ship", handle_order_ship, WORK, operator_key, ORDERS, NULL, NULL },
    { "POST", "/order/{order_no}/finish", handle_order_finish, WORK, operator_key, ORDERS, NULL,
      NULL },
    { "POST", "/order/{order_no}/cancel", handle_order_cancel, WORK, operator_key, ORDERS, NULL,
      NULL },
    { "GET", "/ops/reconcile", handle_ops_reconcile, WORK, operator_key, READ, NULL, NULL },
    { "POST", "/ops/reconcile/query", handle_ops_reconcile_query, WORK, operator_key, ORDERS, NULL,
      NULL },
    { "GET", "/ops/outbox", handle_ops_outbox_list, WORK, operator_key, READ, NULL, NULL },
    { "GET", "/ops/outbox/{id}", handle_ops_outbox_get, WORK, operator_key, READ, NULL, NULL },
    { "POST", "/ops/outbox/{id}/retry", handle_ops_outbox_retry, WORK, operator_key, EVENTS, NULL,
      NULL },
    { "POST", "/ops/outbox/{id}/replay", handle_ops_outbox_replay, WORK, operator_key, EVENTS, NULL,
      NULL },
    { "POST", "/ops/outbox/replay", handle_ops_outbox_replay_since, WORK, operator_key, EVENTS,
      NULL, NULL },
    { "GET", "/ops/refunds", handle_ops_refunds_list, WORK, operator_key, READ, NULL, NULL },
    { "POST", "/ops/refunds/{pay_no}/settle", handle_ops_refund_settle, WORK, operator_key, REFUNDS,
      NULL, NULL },
    { "POST", "/ops/payments/{pay_no}/refunds", handle_ops_refund_create, WORK, operator_key,
      REFUNDS, NULL, NULL },
    { "GET", "/ops/refund-requests", handle_ops_refund_list, WORK, operator_key, READ, NULL, NULL },
    { "GET", "/ops/refund-requests/{refund_no}", handle_ops_refund_get, WORK, operator_key, READ,
      NULL, NULL },
    { "POST", "/ops/refund-requests/{refund_no}/approve", handle_ops_refund_approve, WORK,
      operator_key, REFUNDS, NULL, NULL },
    { "POST", "/ops/refund-requests/{refund_no}/retry", handle_ops_refund_retry, WORK, operator_key,
      REFUNDS, NULL, NULL },
    { "POST", "/ops/refund-requests/{refund_no}/reject", handle_ops_refund_reject, WORK,
      operator_key, REFUNDS, NULL, NULL },
    { "POST", "/ops/pay-no/{pay_no}/release", handle_ops_pay_no_release, WORK, operator_key,
      REFUNDS, NULL, NULL },
    { "POST", "/ops/orders/cancel-stale", handle_ops_cancel_stale, WORK, operator_key, ORDERS, NULL,
      NULL },
    { "GET", "/ops/audit", handle_ops_audit_list, WORK, operator_key, AUDIT, NULL, NULL },
    { "GET", "/ops/whoami", handle_ops_whoami, INLINE, operator_key, ANY, NULL, NULL },
    { "GET", "/ops/summary", handle_ops_summary, INLINE, operator_key, READ, NULL, NULL },
    { "GET", "/ops/payments/{pay_no}", handle_ops_payment_get, WORK, operator_key, READ, NULL,
      NULL },
    { "GET", "/console/", handle_console_index, INLINE, OPEN, 0, NULL, NULL },
    { "GET", "/console/{file}", handle_console_file, INLINE, OPEN, 0, NULL, NULL },
};

const struct http_route *router_routes(size_t *count)
{
    *count = ARRAY_SIZE(routes);
    return routes;
}

struct metrics *router_metrics_create(void)
{
    struct metrics_route labels[ARRAY_SIZE(routes)];

    for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
        labels[i].method = routes[i].method;
        labels[i].pattern = routes[i].pattern;
    }
    return metrics_create(labels, ARRAY_SIZE(routes));
}
