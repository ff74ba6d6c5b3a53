/* common.c - helpers every handler shares. */
#include "common.h"

#include "api_error.h"
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

void reply_route_failure(const struct http_req *req, struct http_resp *resp,
                         const struct route_failure *f)
{
    route_log_failure(f, req->request_id);
    if (f->no_conn)                           /* the pool's own wait: not a MySQL failure */
        http_reply_unavailable(resp, "database busy: no free connection");
    else if (f->unavailable)
        http_reply_unavailable(resp, "database unavailable, retry later");
    else
        api_reply(resp, API_INTERNAL, f->shard != NULL ? "database error" : f->msg);
}
