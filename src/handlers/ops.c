/* ops.c - operations routes: liveness, readiness and Prometheus metrics. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "config.h"
#include "db.h"
#include "handlers.h"
#include "metrics.h"
#include "redis.h"
#include "server.h"
#include "shard.h"

void handle_healthz(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    cJSON *o = cJSON_CreateObject();

    (void)srv;
    (void)req;
    cJSON_AddStringToObject(o, "status", "ok");
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

/* What the probes found: each shard's state, and how many take writes. */
struct ready_probe {
    enum db_health h[CFG_SHARDS_MAX];
    struct db_node node[CFG_SHARDS_MAX];
    size_t up;
};

/* Reads every shard's state as its background prober last found it (or
 * only only's, when not NULL): never a wait on a database, so a hung shard
 * cannot slow readiness down. Redis is pinged (which refreshes the
 * degraded state, once a second while down). The paycallback_ready gauge
 * is 1 while some shard takes writes, since one shard down fails only its
 * own orders. */
static void probe_ready(struct server *srv, const struct shard *only, struct ready_probe *p)
{
    size_t i;

    memset(p, 0, sizeof(*p));
    for (i = 0; i < srv->shards.n; i++) {
        p->h[i] = DB_HEALTH_DOWN;
        if (only != NULL && only != &srv->shards.s[i])
            continue;
        if ((p->h[i] = db_pool_health(srv->shards.s[i].pool, &p->node[i])) == DB_HEALTH_UP)
            p->up++;
    }
    rds_ping(srv->rds);
    if (only == NULL)
        metrics_set_ready(srv->m, p->up > 0);
}

/* Ready while MySQL takes writes: it answers and, on Galera, the node is
 * Synced and primary. Redis being down only degrades, shown as
 * "redis":"degraded" (tokens in MySQL, stock lock skipped).
 *
 * Sharded, the service is ready while any shard takes writes, and the body
 * says which ("shards":{"1":"up","2":"down"}; "mysql" is "up", "partial"
 * or "down"): taking every instance out of rotation because one shard is
 * down would turn a partial outage into a total one. /readyz?shard=N
 * answers for shard N alone (404 for a shard this service does not have),
 * for per-shard health checks and alerts. */
void handle_readyz(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const char *want = http_req_query(req, "shard");
    const struct shard *only = NULL;
    struct ready_probe p;
    cJSON *o, *shards;
    size_t i;
    bool ok;

    if (want != NULL) {
        char *end;
        long id = strtol(want, &end, 10);
        if (want[0] < '0' || want[0] > '9' || *end != '\0' || id < 1 || id > CFG_SHARD_ID_MAX ||
            (only = shard_by_id(&srv->shards, (int)id)) == NULL) {
            api_reply(resp, API_NOT_FOUND, "no such shard");
            return;
        }
    }
    probe_ready(srv, only, &p);
    ok = p.up > 0;
    o = cJSON_CreateObject();
    if (!srv->shards.sharded) {
        const struct db_node *node = &p.node[0];
        if (!ok) { /* an error body like any other, plus the probe */
            cJSON_AddStringToObject(o, "code", api_error_code(API_UNAVAILABLE));
            cJSON_AddStringToObject(o, "message",
                                    p.h[0] == DB_HEALTH_NOT_SYNCED ? "galera node is not synced"
                                    : p.h[0] == DB_HEALTH_MAP_STALE
                                        ? "the database holds a shard map: it is a shard"
                                        : "mysql does not answer");
        }
        cJSON_AddStringToObject(o, "status", ok ? "ready" : "unavailable");
        cJSON_AddStringToObject(o, "mysql", shard_health_name(p.h[0]));
        if (node->galera)
            cJSON_AddNumberToObject(o, "wsrep_local_state", node->wsrep_local_state);
    } else {
        size_t asked = only != NULL ? 1 : srv->shards.n;
        if (!ok) {
            cJSON_AddStringToObject(o, "code", api_error_code(API_UNAVAILABLE));
            cJSON_AddStringToObject(o, "message",
                                    only != NULL ? "the shard does not take writes"
                                                 : "no shard takes writes");
        }
        cJSON_AddStringToObject(o, "status", ok ? "ready" : "unavailable");
        cJSON_AddStringToObject(o, "mysql", p.up == asked ? "up" : p.up > 0 ? "partial" : "down");
        shards = cJSON_AddObjectToObject(o, "shards");
        for (i = 0; i < srv->shards.n; i++) {
            if (only != NULL && only != &srv->shards.s[i])
                continue;
            cJSON_AddStringToObject(shards, srv->shards.s[i].label, shard_health_name(p.h[i]));
        }
    }
    cJSON_AddStringToObject(o, "redis", rds_degraded(srv->rds) ? "degraded" : "up");
    if (ok)
        http_reply_json(resp, 200, o);
    else
        http_reply_json_unavailable(resp, o);
    cJSON_Delete(o);
}

/* Reads readiness first, so every scrape carries a fresh paycallback_ready
 * and alerting needs no probe of its own against /readyz. */
void handle_metrics(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    struct ready_probe p;
    size_t len;
    char *text;

    (void)req;
    probe_ready(srv, NULL, &p);
    text = metrics_render(srv->m, &len);
    if (text == NULL) {
        api_reply(resp, API_INTERNAL, "cannot render metrics");
        return;
    }
    http_reply_text(resp, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
}
