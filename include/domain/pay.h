/* pay.h - applying a payment: the domain operation behind every payment
 * notification, whatever its wire format. A gateway handler parses and
 * authenticates its own format into a struct pay_request, calls pay_route
 * (pay_apply on the order's shard), hands the result to pay_report (alerts,
 * metrics) and renders its own acknowledgement from the result. Knows
 * nothing of HTTP or JSON.
 *
 * The guarantees: one payment (pay_no) is recorded once, ever; an order
 * is paid by at most one payment, through the state machine; a payment
 * that arrives for an order no longer waiting is kept as REFUND_REQUIRED;
 * a payment that cannot be matched (unknown order, wrong amount) writes
 * nothing. Any call may be repeated: a repeat answers from the record. */
#ifndef PAYCALLBACK_PAY_H
#define PAYCALLBACK_PAY_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "money.h"
#include "outbox.h"
#include "route.h"
#include "validate.h"

struct gateways;
struct metrics;
struct replays;
struct seen;
struct shard;
struct shard_set;
struct route;
struct route_failure;

#define PAY_CURRENCY_BUF 4 /* ISO 4217 alpha code and the NUL */

/* One payment notification, already authenticated and validated. */
struct pay_request {
    char pay_no[ID_BUF]; /* the gateway's payment id: unique forever */
    char order_no[ID_BUF];
    int64_t amount_cents; /* > 0 */
    /* ISO 4217 code the gateway stated ("CNY"), or "" when its format has
     * none (then it is not compared). A code other than the order's is
     * PAY_MISMATCH with out->currency_mismatch set: currency is part of
     * the amount. */
    char currency[PAY_CURRENCY_BUF];
    const char *gateway; /* the gateway profile's name for alerts; NULL: native */
    /* True when the caller's answer to a repeat carries nothing of the
     * order's current status (a gateway's acknowledgement): then any
     * cached record answers it. False (the safe default): only a record
     * whose order is in a terminal status does. */
    bool ack_only;
};

/* What this process remembers of recorded payments; either may be NULL.
 * recent: the pay_nos it saw committed, a hint (seen.h); answers: records
 * whose answer to a repeat can no longer change (replays.h). */
struct pay_memory {
    struct seen *recent;
    struct replays *answers;
};

enum pay_result {
    PAY_PAID,            /* this payment paid the order: WAIT_PAY -> PAID, event written */
    PAY_REFUND_REQUIRED, /* recorded, but the order was not waiting: someone must refund */
    PAY_REPLAY,          /* pay_no already recorded with this order and amount */
    PAY_CONFLICT,        /* pay_no already recorded with another order or amount */
    PAY_NOT_FOUND,       /* no such order; nothing written */
    PAY_MISMATCH,        /* amount differs from the order's; nothing written */
    PAY_UNAVAILABLE,     /* MySQL unreachable or busy: answer "retry later"; safe */
    PAY_ERROR            /* a bug, a schema problem or a malformed row: db_errstr */
};

/* What pay_apply found, for rendering and alerting. Which fields mean
 * something depends on the result, as noted. */
struct pay_outcome {
    /* PAID, REFUND_REQUIRED, REPLAY: the answer to give. */
    int order_status; /* enum order_status after the call; 0 if the order is gone */
    int outcome;      /* enum payment_status: the first answer for this pay_no */
    /* REPLAY, CONFLICT: the record of the first call. A conflict found in
     * the pay_no registry (sharded) knows the order only: the amount is
     * then -1. */
    char stored_order_no[ID_BUF];
    int64_t stored_amount_cents;
    /* MISMATCH: what the order expects. */
    int64_t order_amount_cents;
    char order_currency[PAY_CURRENCY_BUF]; /* set when the currency was compared */
    int currency_mismatch;                 /* 1 when the currency, not the amount, differs */
    /* CONFLICT: the pay_no's binding to this order was released by an
     * operator (docs/sharding.md): never paid here again. */
    int released;
    /* UNAVAILABLE: a release of the pay_no's binding is under way; it may
     * yet be refused, so the answer is "retry later", nothing written. */
    int releasing;
};

/* The state of a pay_no's binding in pay_no_registry (its state column). */
enum pay_no_state {
    PAY_NO_BOUND = 1,     /* the order it names owns the pay_no */
    PAY_NO_RELEASING = 2, /* an operator's release is under way: callbacks wait */
    PAY_NO_RELEASED = 3   /* released: the next callback with another order takes it */
};

/* Applies req on c (a borrowed connection, not inside a transaction) in
 * one round trip: one prepared CALL of pay_callback_v3 (sql/migrations/0010_double_charged.sql),
 * which runs the whole transaction inside MariaDB. It inserts the payment
 * record first (UNIQUE pay_no: a duplicate key, and only that, means "seen
 * before", answered from the record), locks the order, checks the amount,
 * moves the order WAIT_PAY -> PAID (a compare-and-set) with its order.paid
 * outbox event, or marks the record REFUND_REQUIRED when the order was no
 * longer waiting. Deadlocks, lock waits and lost links re-run the call
 * (db_retry). A repeat answered by mem->answers reads nothing at all;
 * mem->recent holds the pay_nos this process saw committed: one found
 * there is first looked up with one indexed read, no write, and that read
 * fills mem->answers; pay_apply adds every pay_no it finds recorded to
 * mem->recent. out is always reset first. On PAY_UNAVAILABLE and PAY_ERROR the detail is in
 * db_errno(c)/db_errstr(c). Any thread, one connection per thread. */
enum pay_result pay_apply(struct db_conn *c, const struct pay_memory *mem,
                          const struct pay_request *req, struct pay_outcome *out);

/* Applies req on the shard its order_no names, borrowing and releasing
 * connections itself (one at a time: never two shards' at once). A number
 * that names no shard of the set is PAY_NOT_FOUND with nothing written
 * anywhere. Unsharded, it is pay_apply on shard 1's pool. Sharded, the
 * order must exist on its shard (else PAY_NOT_FOUND, nothing written
 * anywhere); then the pay_no is bound to it in pay_no_registry on
 * shard_place(pay_no), an autocommit insert: a pay_no bound to another
 * order that exists is PAY_CONFLICT, nothing written on the order's shard;
 * bound to an order that does not exist, the binding is moved to this one
 * (an alert line says so); bound to this one (a repeat, or the retry of a
 * callback that died between the two steps), it goes on to pay_apply on
 * the order's shard. A pay_no of the recent hint whose record
 * on the order's shard is this very payment is answered PAY_REPLAY from
 * that one read, without the registry. A shard that cannot be reached is
 * PAY_UNAVAILABLE, counted in its paycallback_shard_unavailable_total
 * (route.h) and named in fail (route_log_failure logs it). Connections are
 * borrowed within rt->wait_ms; mem is pay_apply's, and a repeat its
 * mem->answers answers (sharded: a replay only) borrows no connection.
 * Any thread. */
enum pay_result pay_route(const struct route *rt, const struct pay_memory *mem,
                          const struct pay_request *req, struct pay_outcome *out,
                          struct route_failure *fail);

/* The first step of pay_route alone, with no connection and no I/O: true
 * with *r and out set when mem->answers answers req (a repeat whose answer
 * can no longer change; a replay only when replay_only or sharded), counted in
 * paycallback_replay_cache_hits_total; false when pay_route must run.
 * Safe on a thread that must not block. */
bool pay_remembered(const struct route *rt, const struct pay_memory *mem,
                    const struct pay_request *req, bool replay_only, struct pay_outcome *out,
                    enum pay_result *r);

/* Logs and counts what operators must see of a result, each line with
 * request_id: PAID (info), REFUND_REQUIRED, CONFLICT, NOT_FOUND and
 * MISMATCH (alert lines), REPLAY (a counter). Failures are not reported
 * here: the caller logs them with db_errstr. m may be NULL. */
void pay_report(struct metrics *m, const struct pay_request *req, enum pay_result r,
                const struct pay_outcome *out, const char *request_id);

/* "PAID", "REPLAY", ... for logs. Never NULL. */
const char *pay_result_str(enum pay_result r);

/* The result label of a verified gateway notification that pays nothing
 * (a closed trade, another event type): acknowledged, nothing applied.
 * The other results are the enum pay_result values. */
#define PAY_RESULT_IGNORED (PAY_ERROR + 1)

/* Gives metrics the gateway names and the label values of their counters:
 * results (enum pay_result, then PAY_RESULT_IGNORED) and refusal reasons
 * (enum gateway_status from GATEWAY_MALFORMED on, counted at st - 1). Call
 * once before the HTTP threads start; g must outlive m's use of it. */
void pay_register_gateway_metrics(const struct gateways *g, struct metrics *m);

/* ---- non-blocking (http.event_loop) --------------------------------------
 * pay_route's unsharded path as steps an event loop drives, each returning
 * at once: the replay cache, then the hinted read or the one CALL on a
 * connection borrowed without waiting (db_try_acquire), run with the
 * non-blocking API (db_call_*). The same statements, the same rows, the
 * same mapping to a result as pay_apply. Whatever that path does not
 * cover goes back to the caller as PAY_STEP_BLOCKING, to run pay_route on
 * a thread that may block: a sharded set, a stated currency, a guard's
 * refusal, a connection not yet connected or prepared, a failure other
 * than an unreachable server (a deadlock, a lost procedure: pay_route's
 * retries re-run them; the insert-first CALL makes a re-run safe). A
 * server that does not answer within mysql.io_timeout_s is PAY_UNAVAILABLE
 * at once, as pay_route's first attempt would find it. */

enum pay_step {
    PAY_STEP_DONE,    /* a->r, a->out, a->fail hold the answer; no connection held */
    PAY_STEP_WAIT,    /* waiting on pay_async_fd for a->wait (DB_IO_*) */
    PAY_STEP_BUSY,    /* no connection free: begin again later */
    PAY_STEP_BLOCKING /* run pay_route instead; no connection held */
};

struct pay_async_io;

/* One payment on the way: the caller fills req (and rt, mem) and zeroes
 * the rest before pay_async_begin. */
struct pay_async {
    struct pay_request req;
    struct route rt;
    const struct pay_memory *mem;
    enum pay_result r;
    struct pay_outcome out;
    struct route_failure fail;
    int wait; /* DB_IO_* while PAY_STEP_WAIT */
    /* private */
    const struct shard *sh;
    struct db_conn *c;
    int phase;
    char amount[MONEY_STR_MAX];
    char payload[OUTBOX_PAYLOAD_MAX];
    const char *p[4];
    struct pay_async_io *io; /* the row and the call: only while a connection is held */
};

enum pay_step pay_async_begin(struct pay_async *a);

/* After the events a->wait asked for happened (DB_IO_TIMEOUT when its
 * bound ran out). */
enum pay_step pay_async_cont(struct pay_async *a, int events);

/* The socket and, with DB_IO_TIMEOUT in a->wait, the bound in ms. */
int pay_async_fd(const struct pay_async *a);
int pay_async_timeout_ms(const struct pay_async *a);

#endif
