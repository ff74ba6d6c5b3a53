/* orders_route.h - the order operations of orders.h, each run on the shard
 * its order lives on, with the connections borrowed and given back here
 * (one at a time: never two shards' at once). Callers hold no connection
 * when they call, and render the result; a failure is named in a struct
 * route_failure (route.h), already counted for its shard.
 *
 * Sharded (mysql.shards), a new order is placed by its sku: K =
 * shard_place(sku) holds the sku's stock row and the new order, so taking
 * the stock and inserting the order stay one transaction on K. Across
 * shards, (user_id, checkout_id) is kept unique by the checkout registry on
 * shard_place(user_id), written first (autocommit) with the order number
 * already chosen: a checkout seen before is sent on to the order number,
 * sku and quantity it was first bound to, and that order is created or
 * returned on its shard.
 *
 * An Idempotency-Key's answer is stored by the request's hook in the
 * effect's transaction only when the key's records (idem_shard) sit on the
 * order's shard; otherwise the caller stores it after the commit. A crash
 * between the two leaves the effect made and its key RUNNING: once the
 * key's lease has run out, a repeat takes the key over and runs the request
 * again, which the effect's own unique keys answer as a repeat (a create:
 * the checkout is bound, and 200 "duplicate":true with the same order, not
 * the 201 never received; a status change: "duplicate":true), never a
 * second effect. That answer is what the key replays from then on. */
#ifndef PAYCALLBACK_ORDERS_ROUTE_H
#define PAYCALLBACK_ORDERS_ROUTE_H

#include "orders.h"
#include "route.h"

/* Creates req's order: unsharded, orders_create on the one database;
 * sharded, orders_check_sku on K (an unknown sku or an amount past the
 * largest is refused before the registry binds the checkout, so a typo
 * does not tie up a checkout), orders_checkout_bind on the user's shard
 * (req's sku and quantity become those of the binding), then orders_create
 * of the bound order number on its shard. req->hook runs only when
 * hook_shard is that shard. Results as orders_create's; ORDERS_UNAVAILABLE
 * and ORDERS_ERROR with *fail set. */
enum orders_result orders_route_create(const struct route *rt, struct order_create_req *req,
                                       const struct shard *hook_shard, struct order_view *out,
                                       struct route_failure *fail);

/* orders_transition on the order's shard (a number that names no shard of
 * ours is ORDERS_NOT_FOUND, nothing read). req->hook runs only when
 * hook_shard is the order's shard. */
enum orders_result orders_route_transition(const struct route *rt,
                                           const struct order_transition_req *req,
                                           const struct shard *hook_shard, struct order_change *out,
                                           struct route_failure *fail);

/* orders_view on the order's shard. */
enum orders_result orders_route_view(const struct route *rt, const char *order_no,
                                     struct order_detail *out, struct route_failure *fail);

#endif
