/* orders_route.c - orders.c's operations routed to their shards. */
#include "orders_route.h"

#include <stdio.h>
#include <string.h>

#include "ids.h"
#include "log.h"

/* r of step on the hop's shard: a failure is recorded (and counted when
 * retryable); anything else passes through. */
static enum orders_result failed(struct route_hop *h, enum orders_result r, const char *step)
{
    if (r == ORDERS_UNAVAILABLE || r == ORDERS_ERROR)
        route_failed(h, r == ORDERS_UNAVAILABLE, step);
    return r;
}

/* Sharded, step 2: binds the checkout to order_no on the user's shard, or
 * learns the binding made before (a retry, a concurrent twin, a retry
 * after a crash before the order existed) into *ck. */
static enum orders_result bind(struct route_hop *h, const struct order_create_req *req,
                               const char *order_no, struct order_checkout *ck)
{
    const struct shard *u = shard_place(h->rt->set, req->user_id);
    enum orders_result r;

    if (route_hop_to(h, u, "orders_checkout_bind") == NULL)
        return ORDERS_UNAVAILABLE;
    r = failed(h, orders_checkout_bind(h->c, req, order_no, ck), "orders_checkout_bind");
    if (r == ORDERS_DUPLICATE)
        log_info("checkout already bound to an order number",
                 "order_no=%s user_id=%s "
                 "checkout_id=%s sku=%s quantity=%lld request_id=%s",
                 ck->order_no, req->user_id, req->checkout_id, ck->sku, (long long)ck->quantity,
                 h->rt->request_id != NULL ? h->rt->request_id : "-");
    return r;
}

/* Sharded: check on K, bind on the user's shard, then create (or return)
 * the bound order in one transaction on its shard, the stock taken there. */
static enum orders_result create_sharded(struct route_hop *h, struct order_create_req *req,
                                         const struct shard *hook_shard, struct order_view *out)
{
    const struct shard_set *set = h->rt->set;
    const struct shard *k = shard_place(set, req->sku), *s;
    char tail[IDS_ORDER_NO_BUF], order_no[ID_BUF];
    struct order_checkout ck;
    enum orders_result r;

    if (route_hop_to(h, k, "orders_check_sku") == NULL)
        return ORDERS_UNAVAILABLE;
    if ((r = failed(h, orders_check_sku(h->c, req->sku, req->quantity), "orders_check_sku")) !=
        ORDERS_OK)
        return r;
    if (ids_order_no(tail) != 0 || shard_order_no(set, k, tail, order_no, sizeof(order_no)) != 0) {
        route_fail_msg(h->fail, "orders_create", "cannot draw an order_no");
        return ORDERS_ERROR;
    }
    if ((r = bind(h, req, order_no, &ck)) != ORDERS_OK && r != ORDERS_DUPLICATE)
        return r;
    if ((s = shard_of_order(set, ck.order_no)) == NULL) {
        log_error("checkout bound to an order_no of no configured shard",
                  "order_no=%s request_id=%s", ck.order_no,
                  h->rt->request_id != NULL ? h->rt->request_id : "-");
        route_fail_msg(h->fail, "orders_create", "the checkout's order is on an unknown shard");
        return ORDERS_ERROR;
    }
    snprintf(req->sku, sizeof(req->sku), "%s", ck.sku);
    req->quantity = ck.quantity;
    req->order_no = ck.order_no;
    if (hook_shard != s)
        req->hook = NULL;
    if (route_hop_to(h, s, "orders_create") == NULL)
        return ORDERS_UNAVAILABLE;
    r = failed(h, orders_create(h->c, req, out), "orders_create");
    req->order_no = NULL; /* ck goes out of scope */
    return r;
}

enum orders_result orders_route_create(const struct route *rt, struct order_create_req *req,
                                       const struct shard *hook_shard, struct order_view *out,
                                       struct route_failure *fail)
{
    const struct shard *s = &rt->set->s[0];
    struct route_hop h;
    enum orders_result r;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (rt->set->sharded) {
        r = create_sharded(&h, req, hook_shard, out);
    } else {
        if (hook_shard != s)
            req->hook = NULL;
        r = route_hop_to(&h, s, "orders_create") == NULL
                ? ORDERS_UNAVAILABLE
                : failed(&h, orders_create(h.c, req, out), "orders_create");
    }
    route_hop_release(&h);
    return r;
}

enum orders_result orders_route_transition(const struct route *rt,
                                           const struct order_transition_req *req,
                                           const struct shard *hook_shard, struct order_change *out,
                                           struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, req->order_no);
    struct order_transition_req tr = *req;
    struct route_hop h;
    enum orders_result r;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return ORDERS_NOT_FOUND;
    if (hook_shard != sh)
        tr.hook = NULL;
    r = route_hop_to(&h, sh, "orders_transition") == NULL
            ? ORDERS_UNAVAILABLE
            : failed(&h, orders_transition(h.c, &tr, out), "orders_transition");
    route_hop_release(&h);
    return r;
}

enum orders_result orders_route_view(const struct route *rt, const char *order_no,
                                     struct order_detail *out, struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, order_no);
    struct route_hop h;
    enum orders_result r;

    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return ORDERS_NOT_FOUND;
    r = route_hop_to(&h, sh, "orders_view") == NULL
            ? ORDERS_UNAVAILABLE
            : failed(&h, orders_view(h.c, order_no, out), "orders_view");
    route_hop_release(&h);
    return r;
}
