/* common.c - helpers every handler shares. */
#include "handler_util.h"

#include "config.h"
#include "http.h"
#include "server.h"

struct db_conn *db_acquire_or_reply(struct server *srv, struct http_resp *resp)
{
    struct db_conn *c = db_acquire(srv->db, srv->cfg->mysql_wait_ms);

    if (c == NULL)
        http_reply_unavailable(resp, "database busy: no free connection");
    return c;
}

void reply_db_failure(struct http_resp *resp, enum db_status st)
{
    if (st == DB_UNAVAILABLE || st == DB_RETRY)
        http_reply_unavailable(resp, "database unavailable, retry later");
    else
        http_reply_error(resp, 500, "INTERNAL", "database error");
}
