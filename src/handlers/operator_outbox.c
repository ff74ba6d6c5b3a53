/* operator_outbox.c - the operator API's outbox: list events by state,
 * inspect one, send a dead one again (audited with the operator
 * credential's name). Sharded, events are named across shards by
 * "Sdd-<row id>"; the list reads every shard (outbox_route_list) and names
 * the shards that did not answer, while an event's own routes answer 503
 * while its shard is down. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "api_error.h"
#include "common.h"
#include "delivery.h"
#include "handlers.h"
#include "json_reply.h"
#include "log.h"
#include "operator.h"
#include "outbox.h"
#include "route.h"
#include "server.h"
#include "shard.h"
#include "validate.h"

#define OPS_LIST_MAX 100

/* An event's name across shards: its shard and its row id there. Text
 * is a row id ("17") unsharded; sharded, "S02-17" names row 17 of shard 2
 * and a bare row id names shard 1 (events written before sharding, as an
 * order_no without a prefix). 0, or -1 when text names no event of ours. */
static int event_ref(const struct server *srv, const char *text, const struct shard **sh,
                     uint64_t *id)
{
    const char *num = text;
    char *end = NULL;
    unsigned long long v;
    int sid = 0;

    if ((*sh = shard_of_order(&srv->shards, text)) == NULL)
        return -1;
    if (srv->shards.sharded && shard_parse_order_no(text, &sid) == SHARD_PREFIXED)
        num = text + SHARD_PREFIX_LEN;
    errno = 0;
    v = strtoull(num, &end, 10);
    if (num[0] < '1' || num[0] > '9' || errno != 0 || *end != '\0' || v > INT64_MAX)
        return -1;
    *id = v;
    return 0;
}

/* The {id} of an outbox route. 0, or -1 with a 404 in resp. */
static int event_id_or_reply(const struct server *srv, const struct http_req *req,
                             const struct shard **sh, uint64_t *id, struct http_resp *resp)
{
    if (event_ref(srv, req->param, sh, id) != 0) {
        api_reply(resp, API_EVENT_NOT_FOUND, "no outbox event with this id");
        return -1;
    }
    return 0;
}

/* The position a listing starts after: unsharded the row id; sharded an
 * event id, events being listed by shard (in configured order), then id.
 * 0, or -1 after a 400. */
static int after_or_reply(struct server *srv, const struct http_req *req, size_t *shard,
                          uint64_t *after, struct http_resp *resp)
{
    const char *v = http_req_query(req, "after");
    const struct shard *sh = NULL;
    int64_t n = 0;

    *shard = 0;
    *after = 0;
    if (!srv->shards.sharded || v == NULL || strcmp(v, "0") == 0) {
        if (operator_query_int_or_reply(req, "after", 0, INT64_MAX, 0, &n, resp) != 0)
            return -1;
        *after = (uint64_t)n;
        return 0;
    }
    if (event_ref(srv, v, &sh, after) != 0) {
        api_reply(resp, API_BAD_REQUEST, "after must be an event id (S01-17)");
        return -1;
    }
    *shard = sh->index;
    return 0;
}

/* An endpoint's name as the configuration spells it: [a-z0-9_-]{1,32}. */
static bool endpoint_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > WEBHOOK_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return false;
    return true;
}

/* "deliveries": the event's delivery at each endpoint it was handed to. */
static void add_deliveries(cJSON *o, const struct outbox_entry *e)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "deliveries");

    for (size_t i = 0; i < e->ndeliveries; i++) {
        const struct outbox_delivery *d = &e->deliveries[i];
        cJSON *it = cJSON_CreateObject();

        cJSON_AddStringToObject(it, "endpoint", d->endpoint);
        cJSON_AddStringToObject(it, "state", outbox_state_name(d->state));
        cJSON_AddNumberToObject(it, "attempts", d->attempts);
        cJSON_AddStringToObject(it, "next_attempt_at", d->next_attempt_at);
        if (d->delivered_at[0] != '\0')
            cJSON_AddStringToObject(it, "delivered_at", d->delivered_at);
        else
            cJSON_AddNullToObject(it, "delivered_at");
        if (d->last_error[0] != '\0')
            cJSON_AddStringToObject(it, "last_error", d->last_error);
        else
            cJSON_AddNullToObject(it, "last_error");
        cJSON_AddItemToArray(arr, it);
    }
}

/* The listing's filter from the query. 0, or -1 after a 400. */
static int filter_or_reply(const struct http_req *req, struct outbox_filter *f,
                           struct http_resp *resp)
{
    const char *sv = http_req_query(req, "state");

    f->order_no = http_req_query(req, "order_no");
    f->endpoint = http_req_query(req, "endpoint");
    if (f->order_no != NULL && !validate_id(f->order_no)) {
        api_reply(resp, API_BAD_REQUEST, "order_no must be an order number");
        return -1;
    }
    if (f->endpoint != NULL && !endpoint_name_ok(f->endpoint)) {
        api_reply(resp, API_BAD_REQUEST, "endpoint must be a webhook endpoint's name");
        return -1;
    }
    if (f->order_no != NULL && f->endpoint != NULL) {
        api_reply(resp, API_BAD_REQUEST, "order_no and endpoint are not given together");
        return -1;
    }
    /* An order's events are all listed unless a state is asked for. */
    f->state = sv != NULL ? outbox_state_from_name(sv) : f->order_no != NULL ? -1 : OUTBOX_DEAD;
    if (sv != NULL && f->state < 0) {
        api_reply(resp, API_BAD_REQUEST, "state must be PENDING, DELIVERED or DEAD");
        return -1;
    }
    return 0;
}

void handle_ops_outbox_list(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct outbox_entry *items = NULL;
    struct outbox_filter f;
    struct route_scan sc;
    uint64_t after = 0;
    int64_t limit = 0;
    size_t n = 0, first = 0;
    cJSON *o, *arr;

    if (filter_or_reply(req, &f, resp) != 0 ||
        after_or_reply(srv, req, &first, &after, resp) != 0 ||
        operator_query_int_or_reply(req, "limit", 1, OPS_LIST_MAX, OPS_LIST_DEFAULT, &limit,
                                    resp) != 0)
        return;
    if ((items = calloc((size_t)limit, sizeof(*items))) == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (outbox_route_list(&rt, &f, first, after, items, (size_t)limit, &n, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        goto out;
    }
    o = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(o, "events");
    for (size_t i = 0; i < n; i++) {
        cJSON *ev = operator_event_json(srv, &items[i], false);

        add_deliveries(ev, &items[i]);
        cJSON_AddItemToArray(arr, ev);
    }
    if (n == (size_t)limit) {
        if (srv->shards.sharded) {
            cJSON *last = cJSON_GetArrayItem(arr, (int)n - 1);
            cJSON_AddStringToObject(o, "next_after",
                                    cJSON_GetObjectItemCaseSensitive(last, "id")->valuestring);
        } else {
            cJSON_AddNumberToObject(o, "next_after", (double)items[n - 1].id);
        }
    }
    operator_add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    free(items);
}

void handle_ops_outbox_get(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct outbox_entry e;
    const struct shard *sh = NULL;
    struct route_failure fail;
    uint64_t id = 0;
    bool found = false;
    cJSON *o;

    if (event_id_or_reply(srv, req, &sh, &id, resp) != 0)
        return;
    if (outbox_route_get(&rt, sh, id, &e, &found, &fail) != ROUTE_OK) {
        reply_route_failure(req, resp, &fail);
    } else if (!found) {
        api_reply(resp, API_EVENT_NOT_FOUND, "no outbox event with this id");
    } else {
        o = operator_event_json(srv, &e, true);
        add_deliveries(o, &e);
        http_reply_json(resp, 200, o);
        cJSON_Delete(o);
    }
}

/* Sends a dead event again: PENDING, attempts reset, due now. Retrying an
 * event that is not dead changes nothing and says where it is. */
void handle_ops_outbox_retry(struct server *srv, const struct http_req *req, struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct outbox_entry e;
    const struct shard *sh = NULL;
    struct route_failure fail;
    uint64_t id = 0;
    bool changed = false, found = false;
    cJSON *o;

    if (event_id_or_reply(srv, req, &sh, &id, resp) != 0)
        return;
    if (outbox_route_retry(&rt, sh, id, operator_actor(req), &changed, &e, &found, &fail) !=
        ROUTE_OK) {
        reply_route_failure(req, resp, &fail);
        return;
    }
    if (!found) {
        api_reply(resp, API_EVENT_NOT_FOUND, "no outbox event with this id");
        return;
    }
    if (!changed && e.state != OUTBOX_PENDING) {
        api_reply(resp, API_EVENT_NOT_DEAD,
                  e.state == OUTBOX_DELIVERED ? "the event was delivered already"
                                              : "the event is not dead");
        return;
    }
    if (changed)
        log_info("outbox event sent again", "event_id=%s:%s actor=%s request_id=%s", e.order_no,
                 e.event_type, operator_actor(req), req->request_id);
    o = operator_event_json(srv, &e, false);
    cJSON_AddBoolToObject(o, "duplicate", !changed);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
}

/* The endpoints a replay goes to: the one its body's "endpoint" names, or
 * every configured one, into eps. 0, or -1 after a 400. */
static int replay_endpoints_or_reply(struct server *srv, const cJSON *body,
                                     struct webhook_endpoint_cfg *eps, size_t *neps,
                                     struct http_resp *resp)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "endpoint");
    size_t n = delivery_endpoints(srv, eps);

    *neps = n;
    if (name == NULL)
        return 0;
    if (!cJSON_IsString(name)) {
        api_reply(resp, API_BAD_REQUEST, "endpoint must be the name of a webhook endpoint");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(eps[i].name, name->valuestring) == 0) {
            eps[0] = eps[i];
            *neps = 1;
            return 0;
        }
    api_reply(resp, API_BAD_REQUEST, "no webhook endpoint is configured with this name");
    return -1;
}

static cJSON *endpoint_names(const struct webhook_endpoint_cfg *eps, size_t neps, unsigned types)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < neps; i++)
        if ((eps[i].events & types) != 0)
            cJSON_AddItemToArray(arr, cJSON_CreateString(eps[i].name));
    return arr;
}

/* Sends one event again, delivered or dead, to one endpoint or to every
 * endpoint that subscribes to its type; audited. */
void handle_ops_outbox_replay(struct server *srv, const struct http_req *req,
                              struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct webhook_endpoint_cfg *eps = calloc(WEBHOOKS_MAX, sizeof(*eps));
    const struct shard *sh = NULL;
    struct route_failure fail;
    struct outbox_entry e;
    uint64_t id = 0;
    size_t neps = 0, sent = 0;
    bool found = false;
    cJSON *body = NULL, *o;

    if (eps == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if (event_id_or_reply(srv, req, &sh, &id, resp) != 0 ||
        (body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL ||
        replay_endpoints_or_reply(srv, body, eps, &neps, resp) != 0)
        goto out;
    if (outbox_route_replay(&rt, sh, id, eps, neps, operator_actor(req), &found, &sent, &fail) !=
            ROUTE_OK ||
        (found && outbox_route_get(&rt, sh, id, &e, &found, &fail) != ROUTE_OK)) {
        reply_route_failure(req, resp, &fail);
        goto out;
    }
    if (!found) {
        api_reply(resp, API_EVENT_NOT_FOUND, "no outbox event with this id");
        goto out;
    }
    if (sent == 0) {
        api_reply(resp, API_BAD_REQUEST, "no such endpoint receives this event's type");
        goto out;
    }
    log_info("outbox event replayed", "event_id=%s:%s endpoints=%zu actor=%s request_id=%s",
             e.order_no, e.event_type, sent, operator_actor(req), req->request_id);
    o = operator_event_json(srv, &e, false);
    cJSON_AddItemToObject(o, "replayed_to",
                          endpoint_names(eps, neps, webhook_event_bit(e.event_type)));
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    cJSON_Delete(body);
    OPENSSL_cleanse(eps, WEBHOOKS_MAX * sizeof(*eps));
    free(eps);
}

/* The types a since-replay takes: its body's "types", or every type.
 * 0, or -1 after a 400. */
static int replay_types_or_reply(const cJSON *body, unsigned *types, struct http_resp *resp)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(body, "types"), *it;

    *types = (1u << WEBHOOK_EVENT_TYPES_N) - 1;
    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        api_reply(resp, API_BAD_REQUEST, "types must be a non-empty array of event types");
        return -1;
    }
    *types = 0;
    cJSON_ArrayForEach (it, arr) {
        unsigned bit = cJSON_IsString(it) ? webhook_event_bit(it->valuestring) : 0;

        if (bit == 0) {
            api_reply(resp, API_BAD_REQUEST, "types holds something that is not an event type");
            return -1;
        }
        *types |= bit;
    }
    return 0;
}

/* Sends again everything written since a time, to one endpoint or all, of
 * some types or all, at most webhook.replay_max events a request; the
 * answer says where a next request goes on. Audited (one row a shard). */
void handle_ops_outbox_replay_since(struct server *srv, const struct http_req *req,
                                    struct http_resp *resp)
{
    const struct route rt = route_of(srv, req->request_id);
    struct webhook_endpoint_cfg *eps = calloc(WEBHOOKS_MAX, sizeof(*eps));
    struct outbox_replay_since q = { 0 };
    struct route_scan sc;
    const cJSON *since;
    char when[32];
    long long t;
    int64_t limit = 0;
    size_t first = 0, n = 0, last_shard = 0;
    uint64_t last = 0;
    bool more = false;
    cJSON *body = NULL, *o;

    if (eps == NULL) {
        api_reply(resp, API_INTERNAL, "out of memory");
        return;
    }
    if ((body = json_parse_object_or_reply(req->body, req->body_len, resp)) == NULL ||
        replay_endpoints_or_reply(srv, body, eps, &q.neps, resp) != 0 ||
        replay_types_or_reply(body, &q.types, resp) != 0 ||
        after_or_reply(srv, req, &first, &q.after, resp) != 0)
        goto out;
    since = cJSON_GetObjectItemCaseSensitive(body, "since");
    if (!cJSON_IsString(since) || (t = webhook_parse_utc(since->valuestring)) < 0) {
        api_reply(resp, API_BAD_REQUEST, "since must be a UTC time like 2026-12-03T15:00:00Z");
        goto out;
    }
    {
        time_t tt = (time_t)t;
        struct tm tm;

        gmtime_r(&tt, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    }
    limit = srv->cfg->webhook_replay_max;
    if (cJSON_GetObjectItemCaseSensitive(body, "limit") != NULL &&
        json_get_int_or_reply(body, "limit", 1, srv->cfg->webhook_replay_max, &limit, resp) != 0)
        goto out;
    q.since = when;
    q.max = (size_t)limit;
    q.eps = eps;
    if (q.neps == 0) {
        api_reply(resp, API_BAD_REQUEST, "no webhook endpoint is configured");
        goto out;
    }
    if (outbox_route_replay_since(&rt, &q, first, operator_actor(req), &n, &last_shard, &last,
                                  &more, &sc) != ROUTE_OK) {
        reply_route_failure(req, resp, &sc.fail);
        goto out;
    }
    log_info("outbox events replayed", "since=%s events=%zu endpoints=%zu actor=%s request_id=%s",
             since->valuestring, n, q.neps, operator_actor(req), req->request_id);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "replayed", (double)n);
    cJSON_AddItemToObject(o, "endpoints", endpoint_names(eps, q.neps, q.types));
    if (more && srv->shards.sharded) {
        char ref[32];

        snprintf(ref, sizeof(ref), "S%02d-%llu", srv->shards.s[last_shard].id,
                 (unsigned long long)last);
        cJSON_AddStringToObject(o, "next_after", ref);
    } else if (more) {
        cJSON_AddNumberToObject(o, "next_after", (double)last);
    } else {
        cJSON_AddNullToObject(o, "next_after");
    }
    operator_add_unavailable(o, srv, &sc);
    http_reply_json(resp, 200, o);
    cJSON_Delete(o);
out:
    cJSON_Delete(body);
    OPENSSL_cleanse(eps, WEBHOOKS_MAX * sizeof(*eps));
    free(eps);
}
