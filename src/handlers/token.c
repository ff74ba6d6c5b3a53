/* token.c - GET|POST /token/apply: issues a single-use anti-resubmit token
 * for one order submission. The token is 32 hex digits of kernel
 * randomness, kept in Redis (or in MySQL while Redis is unreachable) for
 * redis.token_ttl_s. Any request body is ignored. */
#include <cjson/cJSON.h>

#include "api_error.h"
#include "config.h"
#include "db.h"
#include "handlers.h"
#include "log.h"
#include "server.h"
#include "token_store.h"

void handle_token_apply(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct token_ctx ctx = { .srv = srv };
    const struct token_store *where = NULL;
    char token[IDS_TOKEN_BUF];
    cJSON *o = NULL;

    if (token_store_issue(&ctx, token, &where) != TOKEN_OK) {
        http_reply_unavailable(resp, "cannot issue a token: redis and mysql are unavailable");
        goto out;
    }
    if ((o = cJSON_CreateObject()) == NULL || cJSON_AddStringToObject(o, "token", token) == NULL ||
        cJSON_AddNumberToObject(o, "expires_in", srv->cfg->token_ttl_s) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        goto out;
    }
    log_debug("token issued", "token_store=%s request_id=%s", where->name, req->request_id);
    http_reply_json(resp, 200, o);
out:
    cJSON_Delete(o);
}
