/* common.c - helpers every handler shares. */
#include "common.h"

#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "route.h"
#include "shard.h"
#include "server.h"

const struct shard *order_shard_or_reply(struct server *srv, const char *order_no,
                                         struct http_resp *resp)
{
    const struct shard *sh = shard_of_order(&srv->shards, order_no);

    if (sh == NULL)
        http_reply_error(resp, 404, "ORDER_NOT_FOUND", "no order with this order_no");
    return sh;
}

struct db_conn *shard_acquire_or_reply(struct server *srv, const struct shard *sh,
                                       struct http_resp *resp)
{
    struct db_conn *c = db_acquire(sh->pool, srv->cfg->mysql_wait_ms);

    if (c == NULL) {
        metrics_shard_inc(srv->m, sh->index, MS_UNAVAILABLE);
        http_reply_unavailable(resp, "database busy: no free connection");
    }
    return c;
}

void log_db_failure(const struct http_req *req, const struct db_conn *c, const char *what,
                    bool retryable)
{
    log_write(retryable ? LOG_WARN : LOG_ERROR, "mysql failure",
              "op=%s errno=%u error=\"%s\" request_id=%s", what, db_errno(c), db_errstr(c),
              req->request_id);
}

void reply_db_failure(const struct http_req *req, struct http_resp *resp, const struct db_conn *c,
                      const char *what, bool retryable)
{
    log_db_failure(req, c, what, retryable);
    if (retryable)
        http_reply_unavailable(resp, "database unavailable, retry later");
    else
        http_reply_error(resp, 500, "INTERNAL", "database error");
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
        http_reply_error(resp, 500, "INTERNAL", f->shard != NULL ? "database error" : f->msg);
}
