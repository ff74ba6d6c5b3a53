/* query.h - asking the payment gateways about stale orders. For a WAIT_PAY
 * order older than reconcile.wait_pay_age_s (its callback never came) the
 * service sends GET <query_url>?order_no=<order_no> with "Authorization:
 * Bearer <token>" to every configured query endpoint: the native one
 * (callback.query_url) and each gateway profile's query_url. An endpoint
 * that answers PAID has its payment applied through pay_route, exactly as
 * a callback would be, so a query racing the real callback still records
 * one payment per pay_no and pays the order once. With several shards the
 * stale orders of each are taken in even shares, and a shard that is down
 * is skipped (and counted) while the others' orders are asked about.
 *
 * No database connection is held while an endpoint is asked. Knows nothing
 * of the HTTP server; uses libcurl for the client side. */
#ifndef PAYCALLBACK_QUERY_H
#define PAYCALLBACK_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "currency.h"
#include "gateway_cfg.h"
#include "pay.h"
#include "validate.h"

struct config;
struct server;
struct query;

#define QUERY_TARGETS_MAX (GATEWAYS_MAX + 1) /* the native endpoint and one per gateway */
#define QUERY_ANSWER_MAX_BYTES 16384         /* a longer answer is malformed */
#define QUERY_TOKEN_MAX 1024                 /* bearer token characters */
#define QUERY_NATIVE_NAME "native"           /* the native endpoint in logs and replies */

/* What one endpoint said about one order. The first four are answers of
 * the query contract; the rest are failures, which change nothing. */
enum query_status {
    QUERY_PAID,      /* paid: pay_no, amount and currency given */
    QUERY_NOTPAY,    /* known to the gateway, not paid (yet) */
    QUERY_CLOSED,    /* known, closed or expired unpaid: no payment will come */
    QUERY_NOT_FOUND, /* unknown to this gateway (paid elsewhere, or never) */
    QUERY_MALFORMED, /* a 200 whose body breaks the contract */
    QUERY_ERROR,     /* no connection, or an HTTP status other than 200 */
    QUERY_TIMEOUT,   /* past the endpoint's query timeout */
    QUERY_CANCELED   /* the service is stopping */
};

/* A parsed answer. pay_no, amount_cents and currency are set for
 * QUERY_PAID only. */
struct query_answer {
    enum query_status status;
    char pay_no[ID_BUF];
    int64_t amount_cents;
    char currency[CURRENCY_BUF];
};

/* Parses the body of a 200 answer to the query about order_no: one JSON
 * object (nothing after it, no member twice, no NUL) with "order_no" equal
 * to the one asked (a misrouted or cached answer must never pay another
 * order) and "status" one of "PAID", "NOTPAY", "CLOSED", "NOT_FOUND". PAID
 * also needs "pay_no" (an identifier: the gateway's payment id, the same
 * one its callback carries), "amount" (a money string above zero, never a
 * number) and "currency" (a known ISO 4217 code, either case). Other
 * members are ignored. Returns the status, also in out->status;
 * QUERY_MALFORMED with the reason in why (whysz bytes). Pure. */
enum query_status query_parse_answer(const char *body, size_t len, const char *order_no,
                                     struct query_answer *out, char *why, size_t whysz);

/* A shard's share of a round's orders when remaining are still to take
 * and shards_left shards still to read: remaining split evenly, rounded up
 * (0 when no shard is left). Pure. */
size_t query_share(size_t remaining, size_t shards_left);

/* "PAID", "NOTPAY", ..., "TIMEOUT", "CANCELED". Never NULL. */
const char *query_status_name(enum query_status st);

/* Loads the endpoints of cfg: callback.query_url with callback.query_token,
 * then each gateway profile with a query_url, its token read from the
 * variable query_token_env names. Fails closed: an unset, empty or
 * malformed token stops here with a one-line reason in err naming the
 * gateway and the variable (never the token). Returns the registry, with
 * no endpoint at all when none is configured (free it with query_destroy;
 * cfg must outlive it), or NULL. */
struct query *query_create(const struct config *cfg, char *err, size_t errsz);

/* Wipes the tokens and frees q. NULL-safe. */
void query_destroy(struct query *q);

/* Number of endpoints, and the name of the i-th ("native" or the gateway
 * profile's name). */
size_t query_count(const struct query *q);
const char *query_target_name(const struct query *q, size_t i);

/* The service is stopping: a query in flight is abandoned at once (within
 * libcurl's progress interval, about a second, not the endpoint's
 * timeout) and no further one starts. Any thread; NULL-safe. */
void query_cancel(struct query *q);

/* What one round did to one order. */
struct query_item {
    char order_no[ID_BUF];
    enum query_status answer[QUERY_TARGETS_MAX]; /* by endpoint index */
    enum pay_result result[QUERY_TARGETS_MAX];   /* where answer is QUERY_PAID */
    size_t nasked;                               /* endpoints asked: answer[0 .. nasked) are set */
};

/* A round's counts. */
struct query_summary {
    size_t orders;  /* stale orders taken */
    size_t queries; /* requests sent */
    size_t paid;    /* PAID answers (each applied) */
    size_t failed;  /* MALFORMED, ERROR and TIMEOUT answers */
    bool stopped;   /* query_cancel cut the round short */
};

struct query_round {
    int age_s;    /* orders WAIT_PAY for longer than this */
    size_t limit; /* at most this many orders */
    /* true: go on after the orders the last rotating round took, so that
     * every stale order is asked in turn however many there are (the
     * periodic pass); false: the oldest ones (an operator's call). */
    bool rotate;
    const char *request_id; /* names the round in the log lines */
    /* An operator's round: the name of its key. Each payment the round
     * applies (PAID or REFUND_REQUIRED) then gets an audit_log row on the
     * order's shard (action "payment.apply", actor this name). NULL for
     * the periodic pass, the service's own work. */
    const char *actor;
    struct query_item *items; /* limit entries, or NULL */
};

enum query_round_result {
    QUERY_ROUND_OK,
    QUERY_ROUND_BUSY,        /* another round is running in this process */
    QUERY_ROUND_UNAVAILABLE, /* MySQL unreachable or busy (logged; sharded: every shard
                                     could not be listed); what was applied stays */
    QUERY_ROUND_ERROR        /* a bug, a schema problem, out of memory (logged) */
};

/* Runs one round with srv's shards and metrics: takes the stale orders of
 * every shard, asks every endpoint about each (no database connection held
 * meanwhile), applies each PAID answer with pay_route and reports it with
 * pay_report,
 * counts every answer in the metrics. One round at a time per process: a
 * second caller gets QUERY_ROUND_BUSY at once. *nitems gets the number of
 * items filled (when run->items is set), *sum the counts. Any thread. */
enum query_round_result query_run(struct query *q, struct server *srv,
                                  const struct query_round *run, size_t *nitems,
                                  struct query_summary *sum);

/* Asks every endpoint about each of the n orders of order_nos (no
 * database connection held) and applies each PAID answer, as a round
 * does; items (n entries) get what each endpoint said. Shares the
 * one-round-at-a-time rule of query_run: QUERY_ROUND_BUSY at once when a
 * round runs. The payment window's expiry asks this way before it closes
 * an order. Any thread. */
enum query_round_result query_orders(struct query *q, struct server *srv,
                                     const char (*order_nos)[ID_BUF], size_t n,
                                     const char *request_id, struct query_item *items,
                                     struct query_summary *sum);

/* True when every endpoint of q was asked about it->order_no and each
 * answered NOTPAY, CLOSED or NOT_FOUND: no gateway has a payment for it.
 * False with no endpoint, a PAID answer, a failed or a missing one. */
bool query_item_unpaid(const struct query *q, const struct query_item *it);

#endif
