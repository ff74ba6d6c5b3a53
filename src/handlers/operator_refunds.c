/* operator_refunds.c - the operator API's refund queue: list the payments
 * that charged a customer twice (the oldest across every shard,
 * refunds_route_list), and settle one with the gateway's refund reference
 * (refunds_route_settle finds its shard), audited with the operator
 * credential's name. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "common.h"
#include "handlers.h"
#include "json_reply.h"
#include "log.h"
#include "operator.h"
#include "order_state.h"
#include "refunds.h"
#include "route.h"
#include "server.h"
#include "validate.h"

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
        api_reply(resp, API_BAD_REQUEST, "status must be REFUND_REQUIRED or REFUND_SETTLED");
        return;
    }
    if (operator_query_int_or_reply(req, "limit", 1, REFUNDS_LIST_MAX, OPS_LIST_DEFAULT, &limit,
                                    resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (refunds_route_list(&rt, status, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "payments");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, operator_refund_json(srv, &items[i]));
    operator_add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}

/* Records that the double charge pay_no was refunded at the gateway, with
 * the refund's reference. The same reference again answers the settled
 * payment with "duplicate":true; another reference is a conflict. */
void handle_ops_refund_settle(struct server *srv, const struct http_req *req,
                              struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    char reference[REFUNDS_REF_MAX];
    const struct refunds_settle_req sr = { .pay_no = req->param,
                                           .reference = reference,
                                           .actor = operator_actor(req) };
    struct route_failure fail;
    struct refund_entry e;
    enum refunds_result r;
    cJSON *body = NULL, *o;
    char msg[320];

    if (!validate_id(req->param)) {
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
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
                     e.pay_no, e.order_no, reference, operator_actor(req), req->request_id);
        o = operator_refund_json(srv, &e);
        cJSON_AddBoolToObject(o, "duplicate", r == REFUNDS_DUPLICATE);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
        break;
    case REFUNDS_NOT_FOUND:
        api_reply(resp, API_PAYMENT_NOT_FOUND, "no payment with this pay_no");
        break;
    case REFUNDS_NOT_REQUIRED:
        api_reply(resp, API_REFUND_NOT_REQUIRED,
                  "the payment is PAID: it did not charge the customer twice");
        break;
    case REFUNDS_CONFLICT:
        api_reply(resp, API_ALREADY_SETTLED, "the payment was settled with another reference");
        break;
    case REFUNDS_REFUND_LIVE:
        snprintf(msg, sizeof(msg),
                 "refund %s of this payment is under way: reject it "
                 "(POST /ops/refund-requests/%s/reject) or let it finish; settling too would "
                 "give the money back twice",
                 e.live_refund_no, e.live_refund_no);
        log_alert("SETTLE_OVER_LIVE_REFUND", "pay_no=%s refund_no=%s actor=%s request_id=%s",
                  req->param, e.live_refund_no, operator_actor(req), req->request_id);
        api_reply(resp, API_REFUND_IN_PROGRESS, msg);
        break;
    case REFUNDS_UNAVAILABLE:
    case REFUNDS_ERROR: reply_route_failure(req, resp, &fail); break;
    }
out:
    cJSON_Delete(body);
}
