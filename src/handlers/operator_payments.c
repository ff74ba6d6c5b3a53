/* operator_payments.c - GET /ops/payments/{pay_no}: which order a payment
 * paid, found on whichever shard holds it (payments_route_order), so that
 * an operator holding only the gateway's pay_no finds the order. 404
 * PAYMENT_NOT_FOUND when no shard has it; 503 when a shard that did not
 * answer might. */
#include <cjson/cJSON.h>

#include "api_error.h"
#include "common.h"
#include "handlers.h"
#include "operator.h"
#include "payments.h"
#include "route.h"
#include "server.h"
#include "validate.h"

void handle_ops_payment_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    char order_no[ID_BUF];
    struct route_scan sc;
    bool found = false;
    cJSON *o;

    if (!validate_id(req->param)) {
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
        return;
    }
    if (payments_route_order(&rt, req->param, order_no, &found, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        return;
    }
    if (!found && sc.nmissed > 0) {
        http_reply_unavailable(resp, "a shard that may hold this payment did not answer");
        return;
    }
    if (!found) {
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
        return;
    }
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pay_no", req->param);
    cJSON_AddStringToObject(o, "order_no", order_no);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}
