/* operator_pay_no.c - the operator API's release of a pay_no binding
 * (pay_release_route): for a pay_no a bank first sent with the wrong
 * order, so that its corrected callback pays. Audited with the operator
 * credential's name. */
#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api_error.h"
#include "common.h"
#include "handlers.h"
#include "json_reply.h"
#include "operator.h"
#include "pay_release.h"
#include "route.h"
#include "server.h"
#include "validate.h"

/* POST /ops/pay-no/{pay_no}/release {"order_no": the order it is bound to}. */
void handle_ops_pay_no_release(struct server *srv, const struct http_req *req,
                               struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    char order_no[ID_BUF];
    const struct release_request rr = { .pay_no = req->param,
                                        .order_no = order_no,
                                        .actor = operator_actor(req),
                                        .request_id = req->request_id };
    struct release_outcome out;
    struct route_failure fail;
    cJSON *body = NULL, *o;

    if (!validate_id(req->param)) {
        api_reply(resp, API_BINDING_NOT_FOUND, "this pay_no is bound to no order");
        return;
    }
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL)
        return;
    if (json_get_id_or_reply(body, "order_no", order_no, resp) != 0)
        goto out;
    switch (pay_release_route(&rt, &rr, &out, &fail)) {
    case RELEASE_OK:
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pay_no", rr.pay_no);
        cJSON_AddStringToObject(o, "order_no", order_no);
        cJSON_AddStringToObject(o, "state", "RELEASED");
        cJSON_AddBoolToObject(o, "duplicate", out.repeat);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
        break;
    case RELEASE_NOT_FOUND:
        api_reply(resp, API_BINDING_NOT_FOUND, "this pay_no is bound to no order");
        break;
    case RELEASE_OTHER_ORDER:
        api_reply(resp, API_PAY_NO_CONFLICT, "this pay_no is bound to another order_no");
        break;
    case RELEASE_PAID:
        api_reply(resp, API_PAY_NO_PAID,
                  "the pay_no is paid on the bound order: only a refund undoes it");
        break;
    case RELEASE_UNAVAILABLE:
    case RELEASE_ERROR: reply_route_failure(req, resp, &fail); break;
    }
out:
    cJSON_Delete(body);
}
