/* operator.c - what the operator API's routes share: who is acting, the
 * integer query parameters, and the JSON of an outbox event, a refund and
 * of the shards a merged answer missed. The routes live by resource in
 * operator_outbox.c, operator_refunds.c and operator_reconcile.c. */
#include "operator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "api_error.h"
#include "http.h"
#include "money.h"
#include "order_state.h"
#include "outbox.h"
#include "refunds.h"
#include "server.h"
#include "shard.h"

/* Who is acting: the name of the operator credential that authenticated
 * the request (never the key itself). */
const char *operator_actor(const struct http_req *req)
{
    return req->caller[0] != '\0' ? req->caller : "anonymous";
}

/* A query parameter as an integer in [min, max]; def when absent. 0, or
 * -1 with a 400 in resp. */
int operator_query_int_or_reply(const struct http_req *req, const char *name, int64_t min,
                                int64_t max, int64_t def, int64_t *out, struct http_resp *resp)
{
    const char *v = http_req_query(req, name);
    char *end = NULL, msg[128];
    long long x;

    *out = def;
    if (v == NULL)
        return 0;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || errno != 0 || *end != '\0' || x < min || x > max) {
        snprintf(msg, sizeof(msg), "%s must be an integer in %lld..%lld", name, (long long)min,
                 (long long)max);
        api_reply(resp, API_BAD_REQUEST, msg);
        return -1;
    }
    *out = x;
    return 0;
}

/* The shard of index idx, named in a sharded answer. */
void operator_add_shard(cJSON *o, const struct server *srv, size_t idx)
{
    if (srv->shards.sharded)
        cJSON_AddNumberToObject(o, "shard", srv->shards.s[idx].id);
}

/* An event's id as the operator API shows it: the row id unsharded (a
 * number, as always), "Sdd-<row id>" sharded. */
static void add_event_id(cJSON *o, const struct server *srv, const struct outbox_entry *e)
{
    char id[SHARD_PREFIX_LEN + DB_INT_BUF];

    if (!srv->shards.sharded) {
        cJSON_AddNumberToObject(o, "id", (double)e->id);
        return;
    }
    snprintf(id, sizeof(id), "S%02d-%llu", srv->shards.s[e->shard].id, (unsigned long long)e->id);
    cJSON_AddStringToObject(o, "id", id);
}

/* Sharded answers name the shards that did not answer (maybe none). */
void operator_add_unavailable(cJSON *o, const struct server *srv, const struct route_scan *sc)
{
    cJSON *arr;

    if (!srv->shards.sharded)
        return;
    arr = cJSON_AddArrayToObject(o, "unavailable_shards");
    for (size_t i = 0; i < srv->shards.n; i++)
        if (sc->missed[i])
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(srv->shards.s[i].id));
}

cJSON *operator_event_json(const struct server *srv, const struct outbox_entry *e,
                           bool with_payload)
{
    cJSON *o = cJSON_CreateObject();

    add_event_id(o, srv, e);
    operator_add_shard(o, srv, e->shard);
    cJSON_AddStringToObject(o, "type", e->event_type);
    cJSON_AddStringToObject(o, "order_no", e->order_no);
    cJSON_AddStringToObject(o, "state", outbox_state_name(e->state));
    cJSON_AddNumberToObject(o, "attempts", e->attempts);
    cJSON_AddStringToObject(o, "created_at", e->created_at);
    cJSON_AddStringToObject(o, "next_attempt_at", e->next_attempt_at);
    if (e->published_at[0] != '\0')
        cJSON_AddStringToObject(o, "delivered_at", e->published_at);
    else
        cJSON_AddNullToObject(o, "delivered_at");
    if (e->last_error[0] != '\0')
        cJSON_AddStringToObject(o, "last_error", e->last_error);
    else
        cJSON_AddNullToObject(o, "last_error");
    if (with_payload) {
        cJSON *data = cJSON_Parse(e->payload);
        if (data != NULL)
            cJSON_AddItemToObject(o, "data", data);
        else
            cJSON_AddStringToObject(o, "data", e->payload);
    }
    return o;
}

cJSON *operator_refund_json(const struct server *srv, const struct refund_entry *r)
{
    cJSON *o = cJSON_CreateObject();
    char amount[MONEY_STR_MAX];

    operator_add_shard(o, srv, r->shard);
    cJSON_AddStringToObject(o, "pay_no", r->pay_no);
    cJSON_AddStringToObject(o, "order_no", r->order_no);
    cJSON_AddStringToObject(o, "amount", money_format(r->amount_cents, amount, sizeof(amount)));
    cJSON_AddStringToObject(o, "status", payment_status_name(r->status));
    cJSON_AddStringToObject(o, "created_at", r->create_time);
    if (r->status == PAYMENT_REFUND_SETTLED) {
        cJSON_AddStringToObject(o, "reference", r->reference);
        cJSON_AddStringToObject(o, "settled_by", r->settled_by);
        cJSON_AddStringToObject(o, "settled_at", r->settled_at);
    }
    return o;
}
