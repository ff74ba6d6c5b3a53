/* gateway_callback_wechat.c - WeChat Pay v3's side of POST /pay/callback/{gateway}: the
 * Wechatpay-* headers and the encrypted resource (gateway_wechat.c), and
 * WeChat's answers: 204 with no body is success; any 4xx or 5xx with
 * {"code":"FAIL","message":...} makes it resend. */
#include <string.h>

#include "gateway.h"
#include "gateway_callback.h"
#include "gateway_wechat.h"
#include "http.h"

#define WECHAT_FAIL "FAIL"

static enum gateway_status wechat_read(const struct gateway *gw, const struct http_req *req,
                                       int64_t now_s, struct gateway_notice *n)
{
    enum gateway_status st;

    memset(n, 0, sizeof(*n));
    st = gateway_wechat_verify(
        http_req_header(req, "Wechatpay-Timestamp"), http_req_header(req, "Wechatpay-Nonce"),
        http_req_header(req, "Wechatpay-Signature"), http_req_header(req, "Wechatpay-Serial"),
        req->body, req->body_len, gw->wechat_keys, gw->nwechat_keys, now_s, gw->cfg->tolerance_s);
    if (st != GATEWAY_OK)
        return st;
    return gateway_wechat_notice(req->body, req->body_len, gw->secret, gw->cfg->mchid,
                                 gw->cfg->app_id, n);
}

static void wechat_ack(struct http_resp *resp)
{
    http_reply_text(resp, 204, "text/plain", "", 0);
}

static void wechat_fail(struct http_resp *resp, int status, const char *code, const char *message)
{
    (void)code; /* WeChat knows one code: FAIL */
    if (status == 503)
        http_reply_retry(resp, WECHAT_FAIL, message, 1);
    else
        http_reply_error(resp, status, WECHAT_FAIL, message);
}

const struct gateway_callback_kind gateway_callback_wechat = { wechat_read, wechat_ack,
                                                               wechat_fail };
