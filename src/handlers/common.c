/* common.c - helpers every handler shares. */
#include "common.h"

#include "api_error.h"
#include "array.h"
#include "http.h"
#include "log.h"
#include "route.h"
#include "server.h"
#include "shard.h"

const struct shard *order_shard_or_reply(struct server *srv, const char *order_no,
                                         struct http_resp *resp)
{
    const struct shard *sh = shard_of_order(&srv->shards, order_no);

    if (sh == NULL)
        api_reply(resp, API_ORDER_NOT_FOUND, "no order with this order_no");
    return sh;
}

/* A 503 that one shard of a sharded service caused: marked as its outage
 * (shard_outage, X-Shard-Outage), so that a proxy does not re-send it to
 * another instance, which would answer the same. */
static void reply_shard_outage(struct http_resp *resp, const struct route_failure *f)
{
    static const char *const message[] = {
        [DB_REFUSED_NONE] = "the shard's database is unavailable, retry later",
        [DB_REFUSED_WAIT] = "the shard's database is busy: no free connection",
        [DB_REFUSED_OUTAGE] = "the shard's database is down or failing: refused at once",
        [DB_REFUSED_BUSY] = "the shard has too many requests in flight",
        [DB_REFUSED_MAP] = "the shard map changed: this instance must be restarted",
    };
    unsigned why = (unsigned)f->refusal < ARRAY_SIZE(message) ? f->refusal : 0;

    http_reply_shard_outage(resp, f->shard->label, message[why], shard_retry_after_s(f->shard));
}

void reply_route_failure(const struct http_req *req, struct http_resp *resp,
                         const struct route_failure *f)
{
    route_log_failure(f, req->request_id);
    if (f->unavailable && f->shard != NULL && f->shard->set != NULL && f->shard->set->sharded)
        reply_shard_outage(resp, f);
    else if (f->no_conn) /* the pool's own wait: not a MySQL failure */
        http_reply_unavailable(resp, "database busy: no free connection");
    else if (f->unavailable)
        http_reply_unavailable(resp, "database unavailable, retry later");
    else
        api_reply(resp, API_INTERNAL, f->shard != NULL ? "database error" : f->msg);
}
