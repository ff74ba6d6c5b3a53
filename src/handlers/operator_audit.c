/* operator_audit.c - the operator API's audit log: GET /ops/audit lists
 * the rows oldest first, filtered by exact actor, action and subject, a
 * page at a time. Sharded, shard by shard (audit_route_list), rows named
 * "Sdd-<row id>" as events are, and the shards that did not answer named
 * in "unavailable_shards". */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "audit.h"
#include "common.h"
#include "handlers.h"
#include "operator.h"
#include "route.h"
#include "server.h"
#include "shard.h"

#define OPS_AUDIT_MAX 100 /* rows one page holds at most */

/* A filter parameter: absent is NULL; empty or longer than max is a 400.
 * 0, or -1. */
static int filter_or_reply(const struct http_req *req, const char *name, size_t max,
                           const char **out, struct http_resp *resp)
{
    char msg[96];

    *out = http_req_query(req, name);
    if (*out == NULL || (**out != '\0' && strlen(*out) <= max))
        return 0;
    snprintf(msg, sizeof(msg), "%s must be 1..%zu characters", name, max);
    api_reply(resp, API_BAD_REQUEST, msg);
    return -1;
}

/* Where a page starts: after the row id unsharded; sharded after a row
 * named "Sdd-<row id>" (a bare id or 0 is shard 1's). 0, or -1 after a
 * 400. */
static int after_or_reply(struct server *srv, const struct http_req *req, size_t *shard,
                          uint64_t *after, struct http_resp *resp)
{
    const char *v = http_req_query(req, "after"), *num;
    const struct shard *sh;
    char *end = NULL;
    unsigned long long x;
    int64_t n = 0;
    int sid = 0;

    *shard = 0;
    *after = 0;
    if (!srv->shards.sharded || v == NULL || shard_parse_order_no(v, &sid) != SHARD_PREFIXED) {
        if (operator_query_int_or_reply(req, "after", 0, INT64_MAX, 0, &n, resp) != 0)
            return -1;
        *after = (uint64_t)n;
        return 0;
    }
    num = v + SHARD_PREFIX_LEN;
    errno = 0;
    x = strtoull(num, &end, 10);
    if ((sh = shard_of_order(&srv->shards, v)) == NULL || num[0] < '1' || num[0] > '9' ||
        errno != 0 || *end != '\0' || x > INT64_MAX) {
        api_reply(resp, API_BAD_REQUEST, "after must be an audit row id (S01-17)");
        return -1;
    }
    *shard = sh->index;
    *after = x;
    return 0;
}

static cJSON *audit_json(const struct server *srv, const struct audit_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    char id[SHARD_PREFIX_LEN + 24];

    if (srv->shards.sharded) {
        snprintf(id, sizeof(id), "S%02d-%llu", srv->shards.s[e->shard].id,
                 (unsigned long long)e->id);
        cJSON_AddStringToObject(o, "id", id);
    } else {
        cJSON_AddNumberToObject(o, "id", (double)e->id);
    }
    operator_add_shard(o, srv, e->shard);
    cJSON_AddStringToObject(o, "actor", e->actor);
    cJSON_AddStringToObject(o, "action", e->action);
    cJSON_AddStringToObject(o, "subject", e->subject);
    cJSON_AddStringToObject(o, "detail", e->detail);
    cJSON_AddStringToObject(o, "request_id", e->request_id);
    cJSON_AddStringToObject(o, "created_at", e->created_at);
    return o;
}

void handle_ops_audit_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct audit_filter f = { NULL, NULL, NULL };
    struct audit_entry *items = NULL;
    struct route_scan sc;
    uint64_t after = 0;
    int64_t limit = 0;
    size_t n = 0, first = 0;
    cJSON *o, *arr;

    if (filter_or_reply(req, "actor", AUDIT_ACTOR_MAX, &f.actor, resp) != 0 ||
        filter_or_reply(req, "action", AUDIT_ACTION_MAX, &f.action, resp) != 0 ||
        filter_or_reply(req, "subject", AUDIT_SUBJECT_MAX, &f.subject, resp) != 0 ||
        after_or_reply(srv, req, &first, &after, resp) != 0 ||
        operator_query_int_or_reply(req, "limit", 1, OPS_AUDIT_MAX, OPS_LIST_DEFAULT, &limit,
                                    resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (audit_route_list(&rt, &f, first, after, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "entries");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, audit_json(srv, &items[i]));
    if (n == (size_t)limit) {
        cJSON *last = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, (int)n - 1), "id");

        if (srv->shards.sharded)
            cJSON_AddStringToObject(o, "next_after", last->valuestring);
        else
            cJSON_AddNumberToObject(o, "next_after", (double)items[n - 1].id);
    }
    operator_add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}
