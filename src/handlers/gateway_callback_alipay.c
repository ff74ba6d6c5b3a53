/* gateway_callback_alipay.c - Alipay's side of POST /pay/callback/{gateway}: the form
 * notify read and verified by gateway_alipay.c, and Alipay's answers. Alipay
 * stops resending only on a body of exactly "success"; anything else is
 * "try again" (8 times over about 25 hours). */
#include <string.h>

#include "form.h"
#include "gateway.h"
#include "gateway_alipay.h"
#include "gateway_callback.h"
#include "http.h"

#define ALIPAY_CTYPE "text/plain; charset=utf-8"

static enum gateway_status alipay_read(const struct gateway *gw, const struct http_req *req,
                                       int64_t now_s, struct gateway_notice *n)
{
    struct form *f = NULL;
    enum gateway_status st;

    (void)now_s; /* Alipay signs no timestamp to bound */
    memset(n, 0, sizeof(*n));
    if (form_parse(req->body, req->body_len, &f) != FORM_OK)
        return GATEWAY_MALFORMED;
    st = gateway_alipay_verify(f, gw->alipay_key);
    if (st == GATEWAY_OK)
        st = gateway_alipay_notice(f, gw->cfg->app_id, gw->cfg->currency, n);
    form_destroy(f);
    return st;
}

static void alipay_ack(struct http_resp *resp)
{
    http_reply_text(resp, 200, ALIPAY_CTYPE, GATEWAY_ALIPAY_ACK, strlen(GATEWAY_ALIPAY_ACK));
}

/* The status tells operators and proxies what happened; Alipay itself
 * reads only the body, which is never "success" here. */
static void alipay_fail(struct http_resp *resp, int status, const char *code, const char *message)
{
    (void)message;
    if (status == 503)
        http_reply_text_retry(resp, ALIPAY_CTYPE, GATEWAY_ALIPAY_NACK, strlen(GATEWAY_ALIPAY_NACK),
                              code, 1);
    else
        http_reply_text(resp, status, ALIPAY_CTYPE, GATEWAY_ALIPAY_NACK,
                        strlen(GATEWAY_ALIPAY_NACK));
}

const struct gateway_callback_kind gateway_callback_alipay = { alipay_read, alipay_ack,
                                                               alipay_fail };
