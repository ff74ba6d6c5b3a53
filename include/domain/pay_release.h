/* pay_release.h - an operator's release of a pay_no's binding in
 * pay_no_registry, for a binding made by a mistake (a bank that sent the
 * pay_no with the wrong order first): after it, the next callback with
 * another order takes the pay_no, and the released order can never be
 * paid with it. Three steps, each one transaction on one shard, one
 * connection at a time (docs/sharding.md, "Releasing a pay_no binding"):
 *  1. on the registry's shard: BOUND -> RELEASING, audit "pay_no.release";
 *     callbacks of the pay_no answer 503 meanwhile;
 *  2. on the bound order's shard: a fence row for (pay_no, order_no), then
 *     a locking read of the pay_no's payment there. A payment refuses the
 *     release (RELEASING -> BOUND, audit "pay_no.release_refused"); else
 *     the fence commits, and pay_callback_v3 refuses from then on to record
 *     that payment for that order, however late its CALL commits;
 *  3. on the registry's shard: RELEASING -> RELEASED, audit
 *     "pay_no.released".
 * A crash between steps leaves RELEASING (with or without the fence): the
 * same request again resumes where it stopped. Knows nothing of HTTP. */
#ifndef PAYCALLBACK_PAY_RELEASE_H
#define PAYCALLBACK_PAY_RELEASE_H

#include "route.h"
#include "validate.h"

enum release_result {
    RELEASE_OK,          /* released now, or before (a repeat) */
    RELEASE_NOT_FOUND,   /* the pay_no is bound to no order */
    RELEASE_OTHER_ORDER, /* bound to another order than the one named */
    RELEASE_PAID,        /* a payment of the pay_no is recorded on the order's shard */
    RELEASE_UNAVAILABLE, /* a shard could not be reached: the retry resumes */
    RELEASE_ERROR        /* a bug or a malformed row: fail says */
};

struct release_request {
    const char *pay_no;
    const char *order_no; /* the order the binding must name */
    const char *actor;    /* the operator key's name */
    const char *request_id;
};

/* What the release found. */
struct release_outcome {
    char bound_order_no[ID_BUF]; /* OTHER_ORDER: the order the binding names */
    char paid_order_no[ID_BUF];  /* PAID: the order of the recorded payment */
    bool repeat;                 /* OK: it was released before this call */
};

/* Runs the three steps. fail says where a failure happened. Any thread. */
enum release_result pay_release_route(const struct route *rt, const struct release_request *req,
                                      struct release_outcome *out, struct route_failure *fail);

/* "OK", "NOT_FOUND", ... for logs. Never NULL. */
const char *release_result_str(enum release_result r);

#endif
