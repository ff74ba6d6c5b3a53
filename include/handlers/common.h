/* common.h - the _or_reply helpers handlers share: the shard an order
 * number names, and the one log line plus reply of a failed domain call.
 * Handlers borrow no connection: the domain routes (route.h). */
#ifndef PAYCALLBACK_COMMON_H
#define PAYCALLBACK_COMMON_H

struct server;
struct http_req;
struct http_resp;

/* The shard order_no lives on, or NULL after replying 404 ORDER_NOT_FOUND
 * (its number names no shard of this service: nothing may be written). */
struct shard;
const struct shard *order_shard_or_reply(struct server *srv, const char *order_no,
                                         struct http_resp *resp);

/* Logs a routed call's failure (route_log_failure) and replies: a pool's
 * own wait is 503 "database busy", another retryable failure 503
 * UNAVAILABLE, anything else 500 INTERNAL. All with Retry-After on 503. */
struct route_failure;
void reply_route_failure(const struct http_req *req, struct http_resp *resp,
                         const struct route_failure *f);

#endif
