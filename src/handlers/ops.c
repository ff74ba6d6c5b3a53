/* ops.c - operations routes: liveness, readiness and Prometheus metrics. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "config.h"
#include "db.h"
#include "handlers.h"
#include "metrics.h"
#include "rds.h"
#include "server.h"

void handle_healthz(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    cJSON *o = cJSON_CreateObject();

    (void)srv;
    (void)req;
    cJSON_AddStringToObject(o, "status", "ok");
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

/* The "mysql" field of /readyz: up, down, or not_synced for a Galera node
 * that answers but is joining, donating, or outside the primary component. */
static const char *mysql_state(enum db_status st, const struct db_node *node)
{
    if (st == DB_OK)
        return "up";
    return node->galera ? "not_synced" : "down";
}

/* Pings MySQL through the pool (node gets its Galera state) and Redis
 * (which refreshes the degraded state, once a second while down), and
 * records the outcome in the paycallback_ready gauge. DB_OK when MySQL
 * takes writes. */
static enum db_status probe_ready(struct server *srv, struct db_node *node)
{
    struct db_conn *conn = NULL;
    enum db_status st = DB_UNAVAILABLE;

    if ((conn = db_acquire(srv->db, srv->cfg->mysql_wait_ms)) != NULL)
        st = db_ping(conn, node);
    db_release(srv->db, conn);
    rds_ping(srv->rds);
    metrics_set_ready(srv->m, st == DB_OK);
    return st;
}

/* Ready while MySQL takes writes: it answers and, on Galera, the node is
 * Synced and primary. Redis being down only degrades, shown as
 * "redis":"degraded" (tokens in MySQL, stock lock skipped). */
void handle_readyz(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct db_node node = { 0, 0, 0 };
    enum db_status st = probe_ready(srv, &node);
    cJSON *o = cJSON_CreateObject();

    (void)req;
    if (st != DB_OK) {                        /* an error body like any other, plus the probe */
        cJSON_AddStringToObject(o, "code", "UNAVAILABLE");
        cJSON_AddStringToObject(o, "message", node.galera ? "galera node is not synced"
                                                          : "mysql does not answer");
    }
    cJSON_AddStringToObject(o, "status", st == DB_OK ? "ready" : "unavailable");
    cJSON_AddStringToObject(o, "mysql", mysql_state(st, &node));
    if (node.galera)
        cJSON_AddNumberToObject(o, "wsrep_local_state", node.wsrep_local_state);
    cJSON_AddStringToObject(o, "redis", rds_degraded(srv->rds) ? "degraded" : "up");
    if (st == DB_OK)
        http_reply_json(resp, 200, o);
    else
        http_reply_json_unavailable(resp, o);
    cJSON_Delete(o);
}

/* Probes readiness first, so every scrape carries a fresh paycallback_ready
 * and alerting needs no probe of its own against /readyz. */
void handle_metrics(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct db_node node = { 0, 0, 0 };
    size_t len;
    char *text;

    (void)req;
    probe_ready(srv, &node);
    text = metrics_render(srv->m, &len);
    if (text == NULL) {
        http_reply_error(resp, 500, "INTERNAL", "cannot render metrics");
        return;
    }
    http_reply_text(resp, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}
