/* orders.h - the order operations: create (price, stock and the order row
 * in one transaction), the status changes ship/finish/cancel (one function,
 * through the state machine of order_state.h, with their outbox events),
 * and the view of an order with its payments. Knows nothing of HTTP, JSON,
 * tokens or Redis: callers put their own guards in front (the
 * anti-resubmit token, the per-sku lock) and render the results.
 *
 * Every function takes a borrowed connection (not inside a transaction),
 * retries deadlocks and lost links itself (db_txn), resets its out-param
 * first, and on ORDERS_UNAVAILABLE / ORDERS_ERROR leaves the detail in
 * db_errno(c)/db_errstr(c) for the caller to log with its request id.
 * Any thread, one connection per thread. */
#ifndef PAYCALLBACK_ORDERS_H
#define PAYCALLBACK_ORDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "validate.h"

#define ORDERS_QTY_MIN 1
#define ORDERS_QTY_MAX 1000
#define ORDERS_PAYMENTS_MAX 32 /* payments shown by orders_view; more are not expected */
#define ORDERS_REFUNDS_MAX 8   /* payments named by one cancel */

#define ORDER_TIME_BUF 40 /* "2024-05-01T12:30:45.123000Z" */

/* An order as plain data, as orders.c reads it from the database (the
 * handlers render it: handlers/order_view.h). */
struct order_view {
    char order_no[ID_BUF];
    char user_id[ID_BUF];
    char checkout_id[ID_BUF]; /* the client's "request_id" (JSON and SQL) */
    char sku[ID_BUF];
    int64_t quantity;
    int64_t amount_cents;
    int status; /* enum order_status */
    char create_time[ORDER_TIME_BUF];
    char update_time[ORDER_TIME_BUF];
};

enum orders_result {
    ORDERS_OK,             /* created / moved / found */
    ORDERS_DUPLICATE,      /* create: the request already made an order (out is it);
                                     transition: the order is already in the target status */
    ORDERS_NOT_FOUND,      /* no order with this order_no */
    ORDERS_NO_SKU,         /* create: the sku is not in stock */
    ORDERS_NO_STOCK,       /* create: not enough stock for the quantity */
    ORDERS_TOO_LARGE,      /* create: price x quantity past DECIMAL(12,2) */
    ORDERS_TOO_MANY_OPEN,  /* create: the user holds max_open unpaid orders already */
    ORDERS_USER_SKU_UNITS, /* create: the user would hold more than max_units_sku unpaid
                              units of the sku */
    ORDERS_USER_UNITS,     /* create: ... more than max_units unpaid units in all */
    ORDERS_ILLEGAL,        /* transition: the state table forbids it */
    ORDERS_MOVES_MONEY,    /* transition: the cancel of a PAID order refunds its payment, and
                              the caller may not move money (req->no_refund) */
    ORDERS_ABORTED,        /* the caller's hook rolled the effect back */
    ORDERS_UNAVAILABLE,    /* MySQL unreachable or busy: retry later; nothing written */
    ORDERS_ERROR           /* a bug, a schema problem or a malformed row */
};

/* A caller's step inside the transaction of a create or a transition, run
 * once the effect is written and before COMMIT (result ORDERS_OK), so that
 * the caller's own rows commit or roll back with the effect: the stored
 * answer of an Idempotency-Key. data is the struct order_view * of a create
 * or the struct order_change * of a transition, as the call will return
 * it. DB_OK goes on to COMMIT; DB_ROLLBACK rolls the effect back and the
 * call returns ORDERS_ABORTED; any other status fails the call as a
 * database failure would. It may run more than once (a retried
 * transaction), and must reset what it sets. */
struct orders_hook {
    enum db_status (*fn)(struct db_conn *c, const void *data, void *arg);
    void *arg;
};

/* An order to make: validated identifiers, quantity in
 * [ORDERS_QTY_MIN, ORDERS_QTY_MAX]. (user_id, request_id) is unique: the
 * same pair again answers with the order it made. */
struct order_create_req {
    char user_id[ID_BUF];
    char checkout_id[ID_BUF]; /* the client's "request_id" (JSON and SQL) */
    char sku[ID_BUF];
    int64_t quantity;
    const struct orders_hook *hook; /* may be NULL */
    const char *order_no;           /* NULL: a number is drawn (one database); else the order
                                     gets this one, which the checkout registry bound to
                                     (user_id, request_id) before (sharded) */
    int64_t max_open;               /* 0: no cap; else a new order is refused while user_id
                                     has this many WAIT_PAY orders (on this database) */
    int64_t max_units_sku;          /* 0: no cap; else the most units of this sku user_id may
                                     hold in WAIT_PAY orders, the new one included */
    int64_t max_units;              /* 0: no cap; else likewise over every sku */
};

/* What the checkout registry of a sharded service holds for one
 * (user_id, request_id): the order number it was given and the sku and
 * quantity it was first sent with. */
struct order_checkout {
    char order_no[ID_BUF];
    char sku[ID_BUF];
    int64_t quantity;
};

/* A status change: order_no (validated) to status to (ORDER_SHIPPED,
 * ORDER_FINISHED or ORDER_CANCELED). */
struct order_transition_req {
    const char *order_no;
    int to;
    const struct orders_hook *hook; /* may be NULL */
    int only_from;                  /* 0: from any status the table allows; else only from
                                     this one (ORDERS_ILLEGAL otherwise, nothing written) */
    const char *reason;             /* NULL, or why, as "reason" in the event's payload
                                     (ORDERS_REASON_EXPIRED: the payment window ran out) */
    const char *actor;              /* NULL, or the operator key's name: the change gets an
                                     audit_log row "order.<ship|finish|cancel>" in its
                                     transaction */
    const char *request_id;         /* the audit row's request id (with actor) */
    bool no_refund;                 /* the caller may not move money: the cancel of a PAID
                                     order (whose payment it would refund) is
                                     ORDERS_MOVES_MONEY, nothing written */
};

#define ORDERS_REASON_EXPIRED "payment_window_expired"

/* A payment a cancel turned REFUND_REQUIRED. */
struct order_refund {
    char pay_no[ID_BUF];
    int64_t amount_cents;
};

/* What a transition found and did. */
struct order_change {
    struct order_view order; /* as it is after the call (OK, DUPLICATE) */
    int from;                /* the status it had (OK, DUPLICATE, ILLEGAL) */
    struct order_refund refunds[ORDERS_REFUNDS_MAX];
    size_t nrefunds; /* OK of a cancel of a PAID order: now REFUND_REQUIRED */
};

/* One payment of an order. */
struct order_payment {
    char pay_no[ID_BUF];
    int64_t amount_cents;
    int status; /* enum payment_status */
    char create_time[ORDER_TIME_BUF];
};

/* An order with its payments, oldest first. */
struct order_detail {
    struct order_view order;
    struct order_payment payments[ORDERS_PAYMENTS_MAX];
    size_t npayments;
};

/* Makes the order of req in one transaction: reads the sku's price, inserts
 * the order (WAIT_PAY) under UNIQUE(user_id, request_id) and takes the
 * stock with a conditional UPDATE (never below zero). A duplicate key means
 * the request was seen before: ORDERS_DUPLICATE with that order in *out;
 * or, when no order has this request, that two random order numbers
 * collided: another is drawn (a few times, then ORDERS_ERROR; with a
 * req->order_no given there is no other to draw: ORDERS_ERROR). Returns
 * With req->max_open set, the user's row of order_user_lock is written
 * first, so one user's creates on this database run one at a time, and
 * the user's WAIT_PAY orders are counted after the insert (so that a
 * repeat of a request still answers with its order): a new order past the
 * cap is rolled back, ORDERS_TOO_MANY_OPEN, nothing written. Exact under
 * any concurrency. req->max_units_sku and req->max_units cap the units
 * of the user's WAIT_PAY orders the same way (ORDERS_USER_SKU_UNITS,
 * ORDERS_USER_UNITS). Returns
 * ORDERS_OK (*out is the new order), ORDERS_DUPLICATE, ORDERS_NO_SKU,
 * ORDERS_NO_STOCK, ORDERS_TOO_LARGE, ORDERS_TOO_MANY_OPEN, ORDERS_USER_SKU_UNITS,
 * ORDERS_USER_UNITS, ORDERS_ABORTED (req->hook),
 * ORDERS_UNAVAILABLE or ORDERS_ERROR. */
enum orders_result orders_create(struct db_conn *c, const struct order_create_req *req,
                                 struct order_view *out);

/* Sharded creation, step 1, on the sku's shard and before anything is
 * written anywhere: the sku exists and price x quantity fits. ORDERS_OK,
 * ORDERS_NO_SKU, ORDERS_TOO_LARGE, ORDERS_UNAVAILABLE or ORDERS_ERROR. */
enum orders_result orders_check_sku(struct db_conn *c, const char *sku, int64_t quantity);

/* Sharded creation, step 2, on the shard placed by user_id: binds
 * (req->user_id, req->request_id) to order_no, req->sku and req->quantity
 * with one autocommit INSERT into checkout_registry, whose rows are never
 * deleted. ORDERS_OK: bound now (*out is what was given). ORDERS_DUPLICATE:
 * the checkout was bound before, maybe to another sku; *out is that
 * binding, which the caller creates or returns. ORDERS_UNAVAILABLE or
 * ORDERS_ERROR. */
enum orders_result orders_checkout_bind(struct db_conn *c, const struct order_create_req *req,
                                        const char *order_no, struct order_checkout *out);

/* Moves an order to req->to in one transaction: locks the row, asks
 * order_state_allowed before any write, then compare-and-sets the status
 * with its outbox event. A cancel gives the stock back, and a cancel of a
 * PAID order turns its PAID payments REFUND_REQUIRED (listed in out).
 * Returns ORDERS_OK, ORDERS_DUPLICATE (already there; nothing written),
 * ORDERS_NOT_FOUND, ORDERS_ILLEGAL (nothing written; out->from says from
 * where), ORDERS_ABORTED (req->hook), ORDERS_UNAVAILABLE or ORDERS_ERROR. */
enum orders_result orders_transition(struct db_conn *c, const struct order_transition_req *req,
                                     struct order_change *out);

/* Reads an order and its payments in one snapshot. ORDERS_OK,
 * ORDERS_NOT_FOUND, ORDERS_UNAVAILABLE or ORDERS_ERROR. */
enum orders_result orders_view(struct db_conn *c, const char *order_no, struct order_detail *out);

/* "OK", "DUPLICATE", ... for logs. Never NULL. */
const char *orders_result_str(enum orders_result r);

#endif
