/* pay_gateway.h - what POST /pay/callback/{gateway} (handlers/pay_gateway.c)
 * needs of each gateway kind: read and verify a notification in the kind's
 * own format, and answer in the kind's own words. One implementation per
 * kind in handlers/pay_alipay.c, pay_wechat.c and pay_stripe.c. */
#ifndef PAYCALLBACK_PAY_GATEWAY_H
#define PAYCALLBACK_PAY_GATEWAY_H

#include <stdint.h>

#include "gateway_notice.h"

struct gateway;
struct http_req;
struct http_resp;

struct pay_gateway_kind {
    /* Verifies req as the gateway signs it and reads it into *n; now_s is
     * the clock for timestamp windows. Returns GW_OK or the refusal. */
    enum gw_status (*read)(const struct gateway *gw, const struct http_req *req, int64_t now_s,
                           struct gw_notice *n);
    /* The acknowledgement that stops the gateway resending. */
    void (*ack)(struct http_resp *resp);
    /* A refusal in the gateway's failure format, which makes it resend:
     * status 503 is the retryable "nothing done, try again later" (with
     * Retry-After). code is a string literal naming the cause, for logs. */
    void (*fail)(struct http_resp *resp, int status, const char *code, const char *message);
};

extern const struct pay_gateway_kind pay_alipay_kind;
extern const struct pay_gateway_kind pay_wechat_kind;
extern const struct pay_gateway_kind pay_stripe_kind;

#endif
