/* metrics.h - process counters and per-route latency histograms, rendered
 * in the Prometheus text exposition format. Every update is a relaxed C11
 * atomic add: no lock on the request path. All functions accept m == NULL
 * (they then do nothing), so pure modules and unit tests may pass NULL. */
#ifndef PAYCALLBACK_METRICS_H
#define PAYCALLBACK_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct metrics;

enum metric_counter {
    M_DUP_CALLBACK,   /* callback replays answered from payment_record */
    M_DUP_ORDER,      /* order create answered with the existing order */
    M_DUP_TOKEN,      /* REPEAT_SUBMIT: token already used or expired */
    M_DUP_TRANSITION, /* ship/finish/cancel already in the target */
    M_DOUBLE_PAYMENT, /* REFUND_REQUIRED: a second charge on one order */
    M_ILLEGAL_TRANSITION,
    M_AMOUNT_MISMATCH,
    M_PAY_NO_CONFLICT,
    M_REDIS_DEGRADED_OPS, /* token or lock operations served without Redis */
    M_REDIS_ERRORS,
    M_MYSQL_RETRIES,            /* transactions re-run after deadlock or lost link */
    M_MYSQL_CONNECTS,           /* connections made, first ones included */
    M_MYSQL_RECONNECTS,         /* connections made again after a lost link */
    M_MYSQL_POOL_WAITS,         /* acquisitions that had to wait */
    M_MYSQL_POOL_TIMEOUTS,      /* acquisitions that gave up -> 503 */
    M_OUTBOX_DELIVERED,         /* events the shop's webhook acknowledged */
    M_OUTBOX_FAILURES,          /* attempts answered non-2xx or not connected */
    M_OUTBOX_TIMEOUTS,          /* attempts that ran out of webhook.timeout_ms */
    M_OUTBOX_DEAD,              /* events that ran out of attempts */
    M_PURGED_OUTBOX,            /* delivered events purged by retention */
    M_PURGED_PAYMENTS,          /* payment records purged by retention */
    M_PURGED_PAY_NO_REGISTRY,   /* pay_no bindings older than retention.registry_days */
    M_PURGED_CHECKOUT_REGISTRY, /* checkout bindings older than retention.registry_days */
    M_PURGED_CHECKOUT_ORPHANS,  /* checkout bindings of attempts that made no order */
    M_PURGED_PAY_NO_FENCE,      /* fences of released bindings older than retention.registry_days */
    M_IDEM_REPLAYS,             /* Idempotency-Key repeats answered with the stored reply */
    M_IDEM_MISMATCHES,          /* a key reused with another request -> 422 */
    M_IDEM_WAITS,               /* repeats that waited for the first attempt */
    M_IDEM_BUSY,                /* repeats still waiting past the bound -> 409 */
    M_HTTP_REFUSED_TOTAL_CAP,   /* connections closed at accept: http.max_connections */
    M_HTTP_REFUSED_ADDR_CAP,    /* ... http.max_connections_per_ip */
    M_HTTP_REFUSED_RESERVED,    /* ... only http.reserved_percent left, not a small holder */
    M_HTTP_REFUSED_V6_56_CAP,   /* connections closed at accept: http.max_connections_per_v6_56 */
    M_HTTP_REFUSED_V6_48_CAP,   /* ... http.max_connections_per_v6_48 */
    M_HTTP_EVICTED,             /* connections shut down to make room for a small holder */
    M_QUOTA_REFUSED_TOKEN,      /* /token/apply answered 429 past quota.token_rate */
    M_QUOTA_REFUSED_ORDER,      /* /order/create answered 429 past quota.order_rate */
    M_HTTP_HEADER_TIMEOUTS,     /* connections shut down past http.header_timeout_ms */
    M_HTTP_BODY_TIMEOUTS,       /* ... past http.body_timeout_ms */
    M_HTTP_BODY_TOO_SLOW,       /* connections shut down below http.min_body_rate_bps */
    M_HTTP_QUEUE_EXPIRED,       /* requests answered 503 past http.queue_wait_ms */
    M_RELOADS_OK,               /* SIGHUP reloads that published new secrets and keys */
    M_RELOADS_FAILED,           /* SIGHUP reloads refused: the running ones stay */
    M_QUERY_PAID,               /* stale-order queries answered PAID */
    M_QUERY_NOT_PAID,           /* ... answered NOTPAY, CLOSED or NOT_FOUND */
    M_QUERY_MALFORMED,          /* ... answered 200 with a body that breaks the contract */
    M_QUERY_ERROR,              /* ... not connected, or answered another HTTP status */
    M_QUERY_TIMEOUT,            /* ... past the endpoint's query timeout */
    M_OPEN_ORDER_CAP,           /* creates refused: orders.max_open_per_user reached (409) */
    M_UNITS_USER_SKU,           /* ... orders.max_open_units_per_user_sku (409) */
    M_UNITS_USER,               /* ... orders.max_open_units_per_user (409) */
    M_UNITS_CLIENT_SKU,         /* ... orders.max_open_units_per_client_sku (409) */
    M_UNITS_CLIENT,             /* ... orders.max_open_units_per_client (409) */
    M_QUANTITY_LIMIT,           /* ... orders.max_quantity_per_line (422) */
    M_UNITS_EVICTED,            /* client unit counts pushed out of the full table */
    M_ORDERS_EXPIRED,           /* WAIT_PAY orders closed past reconcile.payment_window_s */
    M_EXPIRY_DEFERRED,          /* ... left open: a gateway could not confirm them unpaid */
    M_REPLAY_CACHE_HITS,        /* repeat callbacks answered from memory, no database read */
    M_LOOP_ANSWERED,            /* requests answered by an event loop's non-blocking form */
    M_LOOP_HANDED,              /* ... handed by the loop to a handler thread instead */
    M_COUNT
};

/* Gauges: the periodic reconciliation's last values, and live counts. */
enum metric_gauge {
    G_OUTBOX_PENDING,       /* events not delivered yet */
    G_OUTBOX_DEAD,          /* events that ran out of attempts */
    G_OUTBOX_LAGGING,       /* pending events older than reconcile.outbox_lag_s */
    G_OUTBOX_OLDEST_MS,     /* age of the oldest pending event */
    G_WAIT_PAY_STALE,       /* WAIT_PAY orders older than reconcile.wait_pay_age_s */
    G_REFUND_UNSETTLED,     /* REFUND_REQUIRED payments nobody settled yet */
    G_WAIT_PAY_OVERDUE,     /* WAIT_PAY orders past reconcile.payment_window_s after the
                                     pass's expiry (0 when the window is off) */
    G_RECONCILE_LAST_RUN_S, /* unix time of the last successful pass */
    G_RELOAD_OK,            /* 1 when the last SIGHUP reload (or the start) succeeded */
    G_REFUND_OLDEST_S,      /* age of the oldest double payment (not refunded) */
    G_REFUND_ALERT_AGE_S,   /* refunds.unrefunded_alert_s: the age that alerts */
    G_HTTP_IN_FLIGHT,       /* requests past their headers and not finished */
    G_COUNT
};

/* The labels of one route on paycallback_http_requests_total and
 * paycallback_http_request_duration_seconds. */
struct metrics_route {
    const char *method;
    const char *pattern; /* "/order/{order_no}/ship" */
};

/* Creates the registry for nroutes routes; route i of the observations is
 * routes[i]. The array is copied; its strings must outlive the registry.
 * Returns NULL on allocation failure. */
struct metrics *metrics_create(const struct metrics_route *routes, size_t nroutes);

/* Sets the labels of paycallback_build_info (both "unknown" until then).
 * Call once before threads start; quotes and backslashes are dropped. */
void metrics_set_build_info(struct metrics *m, const char *version, const char *commit);

/* NULL-safe. */
void metrics_destroy(struct metrics *m);

void metrics_inc(struct metrics *m, enum metric_counter c);

/* Adds n to counter c. */
void metrics_add(struct metrics *m, enum metric_counter c, uint64_t n);

/* Records one finished request: route index (nroutes = unmatched, whose
 * series carry route="unmatched",method="other"), status, and duration in
 * microseconds. */
void metrics_observe(struct metrics *m, size_t route, int status, uint64_t usec);

/* Sets gauge g to v. Any thread. */
void metrics_set_gauge(struct metrics *m, enum metric_gauge g, int64_t v);
void metrics_add_gauge(struct metrics *m, enum metric_gauge g, int64_t delta);
/* Records how long an Idempotency-Key repeat waited for its first attempt
 * (microseconds), in the histogram paycallback_idempotency_wait_seconds. */
void metrics_observe_idem_wait(struct metrics *m, uint64_t usec);

#define METRICS_GATEWAYS_MAX 8
#define METRICS_GW_LABELS_MAX 16

/* Names the payment gateways (labels gateway="name", index = position)
 * and the label values of their two counter families: results (what a
 * verified notification did) and reasons (why one was refused). Call once
 * before the HTTP threads start; the arrays must outlive m. Extra entries
 * past the maxima are not counted. */
void metrics_set_gateways(struct metrics *m, const char *const *names, size_t n,
                          const char *const *results, size_t nresults, const char *const *reasons,
                          size_t nreasons);

/* Counts one notification of gateway gw by result or by refusal reason
 * (indices into the arrays given to metrics_set_gateways). */
void metrics_gateway_result(struct metrics *m, size_t gw, size_t result);
void metrics_gateway_reject(struct metrics *m, size_t gw, size_t reason);

/* Refund states as the refund table numbers them (label state="NAME"). */
#define METRICS_REFUND_STATES 6

/* Counts one refund of gateway gw (index as metrics_set_gateways named
 * it) entering state (0..METRICS_REFUND_STATES-1), and one notification
 * of a refund the service never asked for. Out-of-range indices count
 * nothing. */
void metrics_refund(struct metrics *m, size_t gw, int state);
void metrics_refund_unsolicited(struct metrics *m, size_t gw);

/* Webhook endpoints by name (label endpoint="name"): a slot is taken by
 * an endpoint's first count and kept for the process's life, so a counter
 * never goes back when a reload removes and adds endpoints again. Names
 * past the maximum are not counted per endpoint (the totals still are). */
#define METRICS_ENDPOINTS_MAX 32
#define METRICS_ENDPOINT_NAME_MAX 32

enum metric_endpoint_result {
    ME_DELIVERED, /* acknowledged (2xx) within its lease */
    ME_FAILED,    /* refused or unreachable: retried on the schedule */
    ME_TIMEOUT,   /* no answer within the endpoint's timeout_ms */
    ME_DEAD,      /* ran out of attempts */
    ME_COUNT
};

/* Counts one delivery attempt's result at endpoint name. */
void metrics_endpoint(struct metrics *m, const char *name, enum metric_endpoint_result r);

#define METRICS_SHARDS_MAX 8

/* Per-shard counters, labelled shard="<id>". */
enum metric_shard_counter {
    MS_UNAVAILABLE,           /* requests answered 503 because this shard failed them */
    MS_POOL_TIMEOUTS,         /* acquisitions of this shard's pool that gave up */
    MS_RECONNECTS,            /* this shard's connections made again after a lost link */
    MS_OUTBOX_CLAIM_FAILURES, /* relay claims this shard's database failed: retried later */
    MS_RECONCILE_FAILURES,    /* reconciliation passes that could not read this shard */
    MS_BREAKER_OPENS,         /* times this shard's circuit breaker opened */
    MS_FAST_FAILS,            /* acquisitions refused at once: breaker open, shard down
                                     or its shard map changed */
    MS_INFLIGHT_REFUSED,      /* acquisitions refused: the shard's cap on requests in flight */
    MS_COUNT
};

/* Per-shard gauges, set by the reconciliation pass from the shard's own
 * counts (a shard that did not answer keeps its last values). */
enum metric_shard_gauge {
    MSG_OUTBOX_PENDING,
    MSG_OUTBOX_DEAD,
    MSG_OUTBOX_LAGGING,
    MSG_WAIT_PAY_STALE,
    MSG_REFUND_UNSETTLED,
    MSG_RECONCILE_LAST_RUN_S, /* unix time of the last pass that read this shard */
    MSG_COUNT
};

/* Names the shards (labels shard="<label>", index = position). Call once
 * before the HTTP threads start; the labels must outlive m. */
void metrics_set_shards(struct metrics *m, const char *const *labels, size_t n);

/* Counts one event of shard idx. */
void metrics_shard_inc(struct metrics *m, size_t idx, enum metric_shard_counter c);

/* Sets gauge g of shard idx to v. Any thread. */
void metrics_shard_set_gauge(struct metrics *m, size_t idx, enum metric_shard_gauge g, int64_t v);

/* Sets shard idx's readiness gauge: 1 when it took writes at the last probe. */
void metrics_shard_ready(struct metrics *m, size_t idx, int ready);

/* Sets the gauge of Redis state: 1 degraded, 0 up. */
void metrics_set_redis_degraded(struct metrics *m, int degraded);

/* Sets the readiness gauge: 1 when MySQL answered the last probe, else 0
 * (0 until the first probe). */
void metrics_set_ready(struct metrics *m, int ready);

/* Reading back, for the operator API's summary: each value read once,
 * relaxed, as a scrape does. 0 for m == NULL. */

/* Counter c's total since start. */
uint64_t metrics_counter(const struct metrics *m, enum metric_counter c);

/* Gauge g's last value. */
int64_t metrics_gauge(const struct metrics *m, enum metric_gauge g);

/* Requests of the route with this method and pattern answered status
 * (one of the statuses counted one by one), since start. */
uint64_t metrics_route_status(const struct metrics *m, const char *method, const char *pattern,
                              int status);

/* One gateway's notification counts, as metrics_set_gateways named them. */
struct metrics_gateway_view {
    const char *name;
    const char *const *results, *const *reasons; /* label values */
    size_t nresults, nreasons;
    uint64_t result[METRICS_GW_LABELS_MAX];
    uint64_t reject[METRICS_GW_LABELS_MAX];
};

/* Fills out[0..max) with the gateways' counts; returns how many. */
size_t metrics_gateways_read(const struct metrics *m, struct metrics_gateway_view *out, size_t max);

/* Seconds since the registry was created (the process started). */
int64_t metrics_uptime_s(const struct metrics *m);

/* Renders all metrics as Prometheus text into a malloc'd NUL-terminated
 * string (caller frees with free), length in *len. NULL on failure. */
char *metrics_render(const struct metrics *m, size_t *len);

#endif
