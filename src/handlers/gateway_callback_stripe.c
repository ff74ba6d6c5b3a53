/* gateway_callback_stripe.c - the Stripe-style side of POST /pay/callback/{gateway}:
 * Stripe-Signature and the event (gateway_stripe.c), and the answers: any 2xx
 * is success, anything else makes Stripe resend (for up to three days). */
#include <cjson/cJSON.h>
#include <string.h>

#include "gateway.h"
#include "gateway_callback.h"
#include "gateway_stripe.h"
#include "http.h"

static enum gateway_status stripe_read(const struct gateway *gw, const struct http_req *req,
                                       int64_t now_s, struct gateway_notice *n)
{
    enum gateway_status st;

    memset(n, 0, sizeof(*n));
    st = gateway_stripe_verify(gw->secret, http_req_header(req, "Stripe-Signature"), req->body,
                               req->body_len, now_s, gw->cfg->tolerance_s);
    if (st != GATEWAY_OK)
        return st;
    return gateway_stripe_notice(req->body, req->body_len, n);
}

/* 200 {"received":true}, as Stripe's own examples answer. */
static void stripe_ack(struct http_resp *resp)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddBoolToObject(o, "received", 1);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

static void stripe_fail(struct http_resp *resp, int status, const char *code, const char *message)
{
    if (status == 503)
        http_reply_retry(resp, code, message, 1);
    else
        http_reply_error(resp, status, code, message);
}

const struct gateway_callback_kind gateway_callback_stripe = { stripe_read, stripe_ack,
                                                               stripe_fail };
