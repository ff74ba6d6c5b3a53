/* operator.h - what the operator API's routes share (operator.c): who is
 * acting, integer query parameters, and the JSON of the items they list.
 * Every change an operator route makes is audited with the name of the
 * operator credential that authenticated it.
 *
 * Sharded, every route works across the shards through the domain's
 * routed calls (route.h), one connection at a time. One rule for a shard
 * that is down: a route that merges every shard (the lists, the report,
 * cancel-stale) answers with the shards that answered and names the others
 * in "unavailable_shards" (503 only when none answered); a route that needs
 * one shard (an event, a payment to settle) answers 503 while that shard is
 * down. */
#ifndef PAYCALLBACK_OPERATOR_H
#define PAYCALLBACK_OPERATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct server;
struct http_req;
struct http_resp;
struct outbox_entry;
struct refund_entry;
struct route_scan;

#define OPS_LIST_DEFAULT 50 /* items a list answers when no limit is asked */

/* Who is acting: the name of the operator credential that authenticated
 * the request (never the key itself); "anonymous" without one. */
const char *operator_actor(const struct http_req *req);

/* The query parameter name as an integer in [min, max]; def when absent.
 * 0, or -1 with a 400 in resp. */
int operator_query_int_or_reply(const struct http_req *req, const char *name, int64_t min,
                                int64_t max, int64_t def, int64_t *out, struct http_resp *resp);

/* Adds "shard" (the id of shard index idx) to o, sharded only. */
void operator_add_shard(cJSON *o, const struct server *srv, size_t idx);

/* Adds "unavailable_shards" (the ids sc missed, maybe none) to o, sharded
 * only. */
void operator_add_unavailable(cJSON *o, const struct server *srv, const struct route_scan *sc);

/* An outbox event as the operator API shows it, with its "data" when
 * with_payload. The caller frees it with cJSON_Delete. */
cJSON *operator_event_json(const struct server *srv, const struct outbox_entry *e,
                           bool with_payload);

/* A payment of the refund queue as the operator API shows it. */
cJSON *operator_refund_json(const struct server *srv, const struct refund_entry *r);

#endif
