/* gateway_callback.h - what POST /pay/callback/{gateway} (handlers/gateway_callback.c)
 * needs of each gateway kind: read and verify a notification in the kind's
 * own format, and answer in the kind's own words. One implementation per
 * kind in handlers/gateway_callback_alipay.c, _wechat.c and _stripe.c. */
#ifndef PAYCALLBACK_GATEWAY_CALLBACK_H
#define PAYCALLBACK_GATEWAY_CALLBACK_H

#include <stdint.h>

#include "gateway_notice.h"

struct gateway;
struct http_req;
struct http_resp;

struct gateway_callback_kind {
    /* Verifies req as the gateway signs it and reads it into *n; now_s is
     * the clock for timestamp windows. Returns GATEWAY_OK or the refusal. */
    enum gateway_status (*read)(const struct gateway *gw, const struct http_req *req, int64_t now_s,
                                struct gateway_notice *n);
    /* The acknowledgement that stops the gateway resending. */
    void (*ack)(struct http_resp *resp);
    /* A refusal in the gateway's failure format, which makes it resend:
     * status 503 is the retryable "nothing done, try again later" (with
     * Retry-After). code is a string literal naming the cause, for logs. */
    void (*fail)(struct http_resp *resp, int status, const char *code, const char *message);
};

extern const struct gateway_callback_kind gateway_callback_alipay;
extern const struct gateway_callback_kind gateway_callback_wechat;
extern const struct gateway_callback_kind gateway_callback_stripe;

#endif
