/* pay_callback.c - POST /pay/callback: the bank's payment notification in
 * our own JSON format. Verifies the signature, parses the body into a
 * struct pay_request, applies it on its order's shard (pay_route) and
 * renders the answer; the payment rules themselves live in pay.c, shared by
 * every gateway format. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <time.h>

#include "api_error.h"
#include "common.h"
#include "config.h"
#include "handlers.h"
#include "http_route.h"
#include "json_reply.h"
#include "keyring.h"
#include "log.h"
#include "money.h"
#include "order_state.h"
#include "pay.h"
#include "route.h"
#include "server.h"
#include "signature.h"

/* The secrets of this request's snapshot, keyed when it was made: the
 * current one, and the previous one only while a rotation has set it. */
static int verify_or_reply(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    enum sig_status st;

    st = sig_keys_verify(req->keys->callback_keys, http_req_header(req, "X-Timestamp"),
                         http_req_header(req, "X-Signature"), req->body, req->body_len,
                         (int64_t)time(NULL), srv->cfg->signature_tolerance_s);
    if (st == SIG_OK)
        return 0;
    log_warn("callback signature rejected", "reason=\"%s\" request_id=%s", sig_status_str(st),
             req->request_id);
    api_reply(resp, API_BAD_SIGNATURE, sig_status_str(st));
    return -1;
}

static int parse_or_reply(const struct http_req *req, struct pay_request *pr,
                          struct http_resp *resp)
{
    cJSON *body = json_parse_object_or_reply(req->body, req->body_len, resp);
    int rc = -1;

    *pr = (struct pay_request){ .currency = "" };
    if (body == NULL)
        return -1;
    if (json_get_id_or_reply(body, "order_no", pr->order_no, resp) != 0 ||
        json_get_id_or_reply(body, "pay_no", pr->pay_no, resp) != 0 ||
        json_get_money_or_reply(body, "amount", &pr->amount_cents, resp) != 0)
        goto out;
    rc = 0;
out:
    cJSON_Delete(body);
    return rc;
}

/* 200 {"code":"SUCCESS",...}: the payment is recorded (now or before). */
static void reply_success(struct http_resp *resp, const struct pay_request *pr,
                          const struct pay_outcome *out, bool duplicate)
{
    char amount[MONEY_STR_MAX];
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "code", "SUCCESS");
    cJSON_AddStringToObject(o, "order_no", pr->order_no);
    cJSON_AddStringToObject(o, "pay_no", pr->pay_no);
    cJSON_AddStringToObject(o, "amount", money_format(pr->amount_cents, amount, sizeof(amount)));
    cJSON_AddStringToObject(o, "status", order_state_name(out->order_status));
    cJSON_AddStringToObject(o, "result", payment_status_name(out->outcome));
    cJSON_AddBoolToObject(o, "duplicate", duplicate);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

static void render(const struct http_req *req, struct http_resp *resp,
                   const struct route_failure *f, const struct pay_request *pr, enum pay_result r,
                   const struct pay_outcome *out)
{
    switch (r) {
    case PAY_PAID:
    case PAY_REFUND_REQUIRED:
    case PAY_REPLAY: reply_success(resp, pr, out, r == PAY_REPLAY); break;
    case PAY_CONFLICT:
        if (out->released)
            api_reply(resp, API_PAY_NO_RELEASED,
                      "this pay_no's binding to this order_no was released by an operator");
        else
            api_reply(resp, API_PAY_NO_CONFLICT,
                      "pay_no already recorded with another order_no or amount");
        break;
    case PAY_NOT_FOUND: api_reply(resp, API_ORDER_NOT_FOUND, "no order with this order_no"); break;
    case PAY_MISMATCH:
        api_reply(resp, API_AMOUNT_MISMATCH, "amount differs from the order's amount");
        break;
    case PAY_UNAVAILABLE:
        if (out->releasing) {
            http_reply_unavailable(resp, "a release of this pay_no's binding is under way");
            break;
        }
        reply_route_failure(req, resp, f);
        break;
    case PAY_ERROR: reply_route_failure(req, resp, f); break;
    }
}

bool first_pay_callback(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct pay_request pr;
    struct pay_outcome out;
    struct route_failure fail = { 0 };
    enum pay_result r;

    /* A refusal is the handler's, with its log line. */
    if (sig_keys_verify(req->keys->callback_keys, http_req_header(req, "X-Timestamp"),
                        http_req_header(req, "X-Signature"), req->body, req->body_len,
                        (int64_t)time(NULL), srv->cfg->signature_tolerance_s) != SIG_OK ||
        parse_or_reply(req, &pr, resp) != 0 || !pay_remembered(&rt, srv->paid, &pr, true, &out, &r))
        return false;
    pay_report(srv->m, &pr, r, &out, req->request_id); /* a replay: a counter, no line */
    render(req, resp, &fail, &pr, r, &out);
    return true;
}

/* Signature first, then the body; pay_route does the rest, shard by shard. */
void handle_pay_callback(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct pay_request pr;
    struct pay_outcome out;
    struct route_failure fail;
    enum pay_result r;

    if (verify_or_reply(srv, req, resp) != 0 || parse_or_reply(req, &pr, resp) != 0)
        return;
    r = pay_route(&rt, srv->paid, &pr, &out, &fail);
    pay_report(srv->m, &pr, r, &out, req->request_id);
    render(req, resp, &fail, &pr, r, &out);
}

/* ---- on an event loop (http.event_loop) ---------------------------------- */

_Static_assert(HTTP_IO_READ == DB_IO_READ && HTTP_IO_WRITE == DB_IO_WRITE &&
                   HTTP_IO_EXCEPT == DB_IO_EXCEPT && HTTP_IO_TIMEOUT == DB_IO_TIMEOUT,
               "the loop's events are the database's");

struct pay_callback_state {
    bool parsed;  /* signature and body checked, a.req filled */
    bool waiting; /* a statement is in flight */
    struct pay_async a;
};

/* handle_pay_callback in steps: the signature and the body, then
 * pay_async's steps; what they leave to a thread goes to the handler. */
static enum http_step pay_callback_step(struct server *srv, const struct http_req *req,
                                        struct http_resp *resp, void *state, int events,
                                        struct http_wait *w)
{
    struct pay_callback_state *s = state;
    enum pay_step ps;

    if (s->waiting) {
        ps = pay_async_cont(&s->a, events);
    } else {
        if (!s->parsed) {
            if (verify_or_reply(srv, req, resp) != 0 || parse_or_reply(req, &s->a.req, resp) != 0)
                return HTTP_STEP_DONE;
            s->parsed = true;
            s->a.rt = route_of(srv, req->request_id);
            s->a.mem = srv->paid;
        }
        ps = pay_async_begin(&s->a);
    }
    s->waiting = ps == PAY_STEP_WAIT;
    switch (ps) {
    case PAY_STEP_WAIT:
        w->fd = pay_async_fd(&s->a);
        w->events = s->a.wait;
        w->timeout_ms = (s->a.wait & DB_IO_TIMEOUT) ? pay_async_timeout_ms(&s->a) : -1;
        return HTTP_STEP_WAIT;
    case PAY_STEP_BUSY: return HTTP_STEP_BUSY;
    case PAY_STEP_BLOCKING: return HTTP_STEP_QUEUE;
    case PAY_STEP_DONE: break;
    }
    pay_report(srv->m, &s->a.req, s->a.r, &s->a.out, req->request_id);
    render(req, resp, &s->a.fail, &s->a.req, s->a.r, &s->a.out);
    return HTTP_STEP_DONE;
}

const struct http_async pay_callback_async = { sizeof(struct pay_callback_state),
                                               pay_callback_step };
