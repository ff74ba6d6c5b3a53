/* idempotency.c - the Idempotency-Key steps of a handler: read the header,
 * claim the key or answer from its record (replay, 422, a bounded wait then
 * 409), store the answer with the effect through the orders hook, and give
 * the key back after a retryable failure. The records themselves are
 * idem.c's. */
#include "idempotency.h"

#include <stdio.h>

#include "api_error.h"
#include "common.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "route.h"
#include "server.h"

int idempotency_key_or_reply(const struct http_req *req, struct idempotency *ir,
                             struct http_resp *resp)
{
    const char *value = http_req_header(req, IDEMPOTENCY_HEADER);

    ir->on = false;
    if (value == NULL)
        return 0;
    if (idem_key_parse(value, ir->claim.key) != 0) {
        api_reply(resp, API_BAD_REQUEST,
                  IDEMPOTENCY_HEADER " must be 1..255 visible ASCII characters");
        return -1;
    }
    ir->on = true;
    return 0;
}

static void settings_of(const struct server *srv, struct idem_settings *set)
{
    set->wait_ms = srv->cfg->idem_wait_ms;
    set->lease_ms = srv->cfg->idem_lease_ms;
    set->ttl_s = srv->cfg->idem_ttl_s;
}

/* Claims ir's key; on anything but IDEM_RUN replies and returns -1. */
static int claim_or_reply(struct server *srv, const struct http_req *req, struct idempotency *ir,
                          struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct idem_settings set;
    struct idem_answer ans;
    long long waited_us = 0;
    enum idem_result r;

    settings_of(srv, &set);
    r = idem_begin(&rt, &set, &ir->claim, &ans, &waited_us);
    if (waited_us > 0)
        log_info("idempotency key waited for its first attempt",
                 "scope=%s waited_ms=%lld result=%d request_id=%s", ir->claim.scope,
                 waited_us / 1000, (int)r, req->request_id);
    switch (r) {
    case IDEM_RUN: ir->owned = true; return 0;
    case IDEM_REPLAY: http_reply_replay(resp, ans.status, ans.body, ans.len); break;
    case IDEM_MISMATCH:
        log_warn("idempotency key reused for another request", "scope=%s request_id=%s",
                 ir->claim.scope, req->request_id);
        api_reply(resp, API_IDEMPOTENCY_KEY_MISMATCH,
                  "this Idempotency-Key was used for a different request");
        break;
    case IDEM_BUSY:
        http_reply_in_progress(resp, api_error_code(API_IDEMPOTENCY_KEY_IN_USE),
                               "the first request with this Idempotency-Key is still running",
                               IDEMPOTENCY_BUSY_RETRY_S);
        break;
    case IDEM_UNAVAILABLE:
    case IDEM_ERROR:
        log_write(r == IDEM_UNAVAILABLE ? LOG_WARN : LOG_ERROR, "mysql failure",
                  "op=idem_begin error=\"%s\" request_id=%s", ir->claim.errstr, req->request_id);
        if (r == IDEM_UNAVAILABLE) /* counted for its shard by idem_begin */
            http_reply_unavailable(resp, "database unavailable, retry later");
        else
            api_reply(resp, API_INTERNAL, "database error");
        break;
    }
    idem_answer_free(&ans);
    return -1;
}

int idempotency_begin_or_reply(struct server *srv, const struct http_req *req, const char *scope,
                               struct idempotency *ir, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);

    snprintf(ir->claim.scope, sizeof(ir->claim.scope), "%s", scope);
    ir->shard = idem_shard(&rt, &ir->claim);
    idem_fingerprint(req->method, req->path, ir->claim.scope, req->body, req->body_len,
                     ir->claim.fingerprint);
    return claim_or_reply(srv, req, ir, resp);
}

/* True when resp is an answer to keep: definite and below 500. */
static bool storable(const struct http_resp *resp)
{
    return !http_resp_retryable(resp) && resp->status < 500 && resp->body != NULL;
}

static enum db_status store_hook(struct db_conn *c, const void *data, void *arg)
{
    struct idempotency *ir = arg;
    enum db_status st;

    ir->stored = false;
    ir->lost = false;
    ir->render(ir->resp, data);
    if (!storable(ir->resp))
        return DB_OK;
    st = idem_finish_in_txn(c, &ir->claim, ir->resp->status, ir->resp->body, &ir->lost);
    ir->stored = st == DB_OK;
    return st;
}

const struct orders_hook *idempotency_hook(struct idempotency *ir, struct http_resp *resp,
                                           idempotency_render_fn render)
{
    if (!ir->owned)
        return NULL;
    ir->render = render;
    ir->resp = resp;
    ir->hook.fn = store_hook;
    ir->hook.arg = ir;
    return &ir->hook;
}

/* The claim went to a repeat meanwhile: answer as a repeat would. */
static void answer_as_repeat(struct server *srv, const struct http_req *req, struct idempotency *ir,
                             struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct route_failure fail;
    bool lost = false;

    ir->owned = false;
    if (claim_or_reply(srv, req, ir, resp) != 0)
        return;
    /* The repeat gave the key back, and this attempt's effect was rolled
     * back (or, sharded, kept on another shard, where the checkout's unique
     * keys hand it to the retry): give the key back too, and say so. */
    if (idem_settle(&rt, &ir->claim, 0, NULL, &lost, &fail) != DB_OK)
        route_log_failure(&fail, req->request_id);
    ir->owned = false;
    http_reply_unavailable(resp, "the request was interrupted, retry it");
}

void idempotency_end(struct server *srv, const struct http_req *req, struct idempotency *ir,
                     struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct route_failure fail = { .shard = NULL };
    enum db_status st = DB_OK;
    bool lost = ir->lost;

    if (!ir->owned)
        return;
    if (!lost && !storable(resp))
        st = idem_settle(&rt, &ir->claim, 0, NULL, &lost, &fail);
    else if (!lost && !ir->stored)
        st = idem_settle(&rt, &ir->claim, resp->status, resp->body, &lost, &fail);
    if (st != DB_OK && fail.no_conn) {
        log_warn("no mysql connection to settle an idempotency key; its lease will lapse",
                 "scope=%s request_id=%s", ir->claim.scope, req->request_id);
        return;
    }
    if (st != DB_OK)
        route_log_failure(&fail, req->request_id);
    if (lost)
        answer_as_repeat(srv, req, ir, resp);
}
