/* common.c - helpers every handler shares. */
#include "handler_util.h"

#include "config.h"
#include "http.h"
#include "log.h"
#include "server.h"

struct db_conn *db_acquire_or_reply(struct server *srv, struct http_resp *resp)
{
    struct db_conn *c = db_acquire(srv->db, srv->cfg->mysql_wait_ms);

    if (c == NULL)
        http_reply_unavailable(resp, "database busy: no free connection");
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
