/* metrics.c - counters and per-route latency histograms as relaxed C11
 * atomics, rendered in the Prometheus text exposition format (0.0.4),
 * plus build info and the standard process_* metrics read from /proc at
 * scrape time. Updates never lock; a scrape reads each atomic once and may
 * see a request counted in one series a moment before another. */
#include "metrics.h"

#include <dirent.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "array.h"

/* The promise of metrics.h: an update is one instruction, never a lock. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "metrics need lock-free 64-bit atomics");

/* Upper bounds of the latency buckets in microseconds; +Inf is implicit. */
static const uint64_t bucket_us[] = { 1000,   2500,   5000,    10000,   25000,   50000,   100000,
                                      250000, 500000, 1000000, 2500000, 5000000, 10000000 };
#define NBUCKETS (ARRAY_SIZE(bucket_us))

/* Status codes counted one by one; anything else goes in "other". */
static const int codes[] = { 200, 201, 204, 400, 401, 403, 404, 405, 408, 409,
                             413, 414, 422, 429, 431, 500, 501, 503, 505 };
#define NCODES (ARRAY_SIZE(codes))

struct route_stats {
    atomic_ullong by_code[NCODES + 1];
    atomic_ullong bucket[NBUCKETS + 1]; /* non-cumulative; last = +Inf */
    atomic_ullong sum_us;
    atomic_ullong count;
};

struct metrics {
    struct metrics_route *routes; /* a copy of metrics_create's */
    size_t nroutes;
    struct route_stats *rs; /* nroutes + 1: the last is unmatched */
    atomic_ullong counter[M_COUNT];
    atomic_int redis_degraded;
    atomic_int ready;
    char version[32], commit[48]; /* set once before threads start */
    /* Payment gateways: names and label values set once before threads
     * start (the arrays belong to the caller), counts by gateway. */
    const char *const *gateway_names, *const *gateway_results, *const *gateway_reasons;
    size_t ngw, ngw_results, ngw_reasons;
    atomic_ullong gateway_result[METRICS_GATEWAYS_MAX][METRICS_GW_LABELS_MAX];
    atomic_ullong gateway_reject[METRICS_GATEWAYS_MAX][METRICS_GW_LABELS_MAX];
    atomic_ullong refund_state[METRICS_GATEWAYS_MAX][METRICS_REFUND_STATES];
    atomic_ullong refund_unsolicited[METRICS_GATEWAYS_MAX];
    /* Webhook endpoints: a slot's state is 0 free, 1 being named, 2 named
     * (its name then never changes). */
    atomic_int endpoint_state[METRICS_ENDPOINTS_MAX];
    char endpoint_name[METRICS_ENDPOINTS_MAX][METRICS_ENDPOINT_NAME_MAX + 1];
    atomic_ullong endpoint_count[METRICS_ENDPOINTS_MAX][ME_COUNT];
    const char *const *shard_labels; /* set once before threads start */
    size_t nshards;
    atomic_ullong shard_count[METRICS_SHARDS_MAX][MS_COUNT];
    atomic_int shard_ready[METRICS_SHARDS_MAX];
    atomic_llong shard_gauge[METRICS_SHARDS_MAX][MSG_COUNT];
    struct timespec start; /* wall clock at creation */
    atomic_llong gauge[G_COUNT];
    atomic_ullong idem_wait_bucket[NBUCKETS + 1]; /* non-cumulative; last = +Inf */
    atomic_ullong idem_wait_sum_us;
};

static const struct {
    const char *name;
    const char *label; /* extra label pair, or NULL */
    const char *help;
} counter_info[M_COUNT] = {
    [M_DUP_CALLBACK] = { "paycallback_duplicates_absorbed_total", "kind=\"callback_replay\"",
                         "Repeated requests answered without doing the work again." },
    [M_DUP_ORDER] = { "paycallback_duplicates_absorbed_total", "kind=\"order_dedupe\"", NULL },
    [M_DUP_TOKEN] = { "paycallback_duplicates_absorbed_total", "kind=\"token_repeat\"", NULL },
    [M_DUP_TRANSITION] = { "paycallback_duplicates_absorbed_total", "kind=\"transition_repeat\"",
                           NULL },
    [M_DOUBLE_PAYMENT] = { "paycallback_double_payments_total", NULL,
                           "Payments for an order that was no longer waiting for payment (REFUND_REQUIRED)." },
    [M_ILLEGAL_TRANSITION] = { "paycallback_illegal_transitions_total", NULL,
                               "Order status changes refused by the state machine." },
    [M_AMOUNT_MISMATCH] = { "paycallback_amount_mismatches_total", NULL,
                            "Callbacks whose amount differed from the order's." },
    [M_PAY_NO_CONFLICT] = { "paycallback_pay_no_conflicts_total", NULL,
                            "Callbacks reusing a pay_no with another order or amount." },
    [M_REDIS_DEGRADED_OPS] = { "paycallback_redis_degraded_operations_total", NULL,
                               "Token and lock operations served without Redis." },
    [M_REDIS_ERRORS] = { "paycallback_redis_errors_total", NULL,
                         "Redis commands that failed or timed out." },
    [M_MYSQL_RETRIES] = { "paycallback_mysql_retries_total", NULL,
                          "Transactions re-run after a deadlock, lock wait or lost connection." },
    [M_MYSQL_CONNECTS] = { "paycallback_mysql_connects_total", NULL,
                           "MySQL connections made (first connects and reconnects)." },
    [M_MYSQL_RECONNECTS] = { "paycallback_mysql_reconnects_total", NULL,
                             "MySQL connections made again after a lost connection." },
    [M_MYSQL_POOL_WAITS] = { "paycallback_mysql_pool_waits_total", NULL,
                             "Connection acquisitions that had to wait for a free connection." },
    [M_MYSQL_POOL_TIMEOUTS] = { "paycallback_mysql_pool_timeouts_total", NULL,
                                "Connection acquisitions that gave up (answered 503)." },
    [M_OUTBOX_DELIVERED] = { "paycallback_outbox_delivered_total", NULL,
                             "Events the shop's webhook acknowledged with a 2xx." },
    [M_OUTBOX_FAILURES] = { "paycallback_outbox_attempt_failures_total", "reason=\"error\"",
                            "Delivery attempts that failed, by reason." },
    [M_OUTBOX_TIMEOUTS] = { "paycallback_outbox_attempt_failures_total", "reason=\"timeout\"",
                            NULL },
    [M_OUTBOX_DEAD] = { "paycallback_outbox_dead_total", NULL,
                        "Events that ran out of delivery attempts (now DEAD)." },
    [M_PURGED_OUTBOX] = { "paycallback_retention_purged_total", "table=\"outbox\"",
                          "Rows deleted by retention, by table." },
    [M_PURGED_PAYMENTS] = { "paycallback_retention_purged_total", "table=\"payment_record\"",
                            NULL },
    [M_PURGED_PAY_NO_REGISTRY] = { "paycallback_retention_purged_total",
                                   "table=\"pay_no_registry\"", NULL },
    [M_PURGED_CHECKOUT_REGISTRY] = { "paycallback_retention_purged_total",
                                     "table=\"checkout_registry\"", NULL },
    [M_PURGED_CHECKOUT_ORPHANS] = { "paycallback_retention_purged_total",
                                    "table=\"checkout_registry_orphans\"", NULL },
    [M_PURGED_PAY_NO_FENCE] = { "paycallback_retention_purged_total", "table=\"pay_no_fence\"",
                                NULL },
    [M_IDEM_REPLAYS] = { "paycallback_idempotency_replays_total", NULL,
                         "Idempotency-Key repeats answered with the stored reply." },
    [M_IDEM_MISMATCHES] = { "paycallback_idempotency_mismatches_total", NULL,
                            "Idempotency-Keys reused with another request (422)." },
    [M_IDEM_WAITS] = { "paycallback_idempotency_waits_total", NULL,
                       "Idempotency-Key repeats that waited for the first attempt." },
    [M_IDEM_BUSY] = { "paycallback_idempotency_busy_total", NULL,
                      "Idempotency-Key repeats still waiting past idempotency.wait_ms (409)." },
    [M_HTTP_REFUSED_TOTAL_CAP] = { "paycallback_http_connections_refused_total",
                                   "reason=\"max_connections\"",
                                   "Connections closed as soon as accepted, by the cap they hit." },
    [M_HTTP_REFUSED_ADDR_CAP] = { "paycallback_http_connections_refused_total",
                                  "reason=\"max_connections_per_ip\"", NULL },
    [M_HTTP_REFUSED_RESERVED] = { "paycallback_http_connections_refused_total",
                                  "reason=\"reserved\"", NULL },
    [M_HTTP_REFUSED_V6_56_CAP] = { "paycallback_http_connections_refused_total",
                                   "reason=\"max_connections_per_v6_56\"", NULL },
    [M_HTTP_REFUSED_V6_48_CAP] = { "paycallback_http_connections_refused_total",
                                   "reason=\"max_connections_per_v6_48\"", NULL },
    [M_HTTP_BODY_TOO_SLOW] = { "paycallback_http_deadline_closes_total", "phase=\"body_rate\"",
                               NULL },
    [M_QUOTA_REFUSED_TOKEN] = { "paycallback_http_quota_refusals_total", "route=\"token\"",
                                "Requests answered 429 RATE_LIMITED past their client's quota, "
                                "by route (token: /token/apply, order: /order/create)." },
    [M_QUOTA_REFUSED_ORDER] = { "paycallback_http_quota_refusals_total", "route=\"order\"", NULL },
    [M_HTTP_EVICTED] = { "paycallback_http_connections_evicted_total", NULL,
                         "Connections still waiting for their headers, of the client holding the "
                         "most, shut down to admit a client holding few." },
    [M_HTTP_HEADER_TIMEOUTS] = { "paycallback_http_deadline_closes_total", "phase=\"header\"",
                                 "Connections shut down past their header or body deadline." },
    [M_HTTP_BODY_TIMEOUTS] = { "paycallback_http_deadline_closes_total", "phase=\"body\"", NULL },
    [M_HTTP_QUEUE_EXPIRED] = { "paycallback_http_queue_expired_total", NULL,
                               "Requests answered 503 after waiting past http.queue_wait_ms for a "
                               "handler thread." },
    [M_RELOADS_OK] = { "paycallback_config_reloads_total", "result=\"ok\"",
                       "SIGHUP reloads of secrets and keys, by result." },
    [M_RELOADS_FAILED] = { "paycallback_config_reloads_total", "result=\"failed\"", NULL },
    [M_QUERY_PAID] = { "paycallback_reconcile_queries_total", "answer=\"paid\"",
                       "Queries of a gateway about a stale WAIT_PAY order, by answer." },
    [M_QUERY_NOT_PAID] = { "paycallback_reconcile_queries_total", "answer=\"not_paid\"", NULL },
    [M_QUERY_MALFORMED] = { "paycallback_reconcile_queries_total", "answer=\"malformed\"", NULL },
    [M_QUERY_ERROR] = { "paycallback_reconcile_queries_total", "answer=\"error\"", NULL },
    [M_QUERY_TIMEOUT] = { "paycallback_reconcile_queries_total", "answer=\"timeout\"", NULL },
    [M_OPEN_ORDER_CAP] = { "paycallback_open_order_cap_refusals_total", NULL,
                           "Order creates refused because the user_id held "
                           "orders.max_open_per_user unpaid orders (409 TOO_MANY_OPEN_ORDERS)." },
    [M_UNITS_USER_SKU] = { "paycallback_order_unit_quota_refusals_total", "bound=\"user_sku\"",
                           "Order creates refused 409 UNIT_QUOTA_EXCEEDED, by the quota of unpaid "
                           "units they would pass (orders.max_open_units_per_user_sku, _per_user, "
                           "_per_client_sku, _per_client)." },
    [M_UNITS_USER] = { "paycallback_order_unit_quota_refusals_total", "bound=\"user\"", NULL },
    [M_UNITS_CLIENT_SKU] = { "paycallback_order_unit_quota_refusals_total", "bound=\"client_sku\"",
                             NULL },
    [M_UNITS_CLIENT] = { "paycallback_order_unit_quota_refusals_total", "bound=\"client\"", NULL },
    [M_QUANTITY_LIMIT] = { "paycallback_order_quantity_limit_refusals_total", NULL,
                           "Order creates refused 422 QUANTITY_LIMIT: a quantity above "
                           "orders.max_quantity_per_line." },
    [M_UNITS_EVICTED] = { "paycallback_order_unit_quota_evictions_total", NULL,
                          "Client addresses whose reserved units were forgotten to make room in "
                          "the full table of unit quotas (its size is fixed)." },
    [M_ORDERS_EXPIRED] = { "paycallback_orders_expired_total", NULL,
                           "Unpaid orders closed past reconcile.payment_window_s (stock returned)." },
    [M_EXPIRY_DEFERRED] = { "paycallback_order_expiry_deferred_total", NULL,
                            "Orders past the payment window left open because a gateway could "
                            "not confirm them unpaid." },
    [M_REPLAY_CACHE_HITS] = { "paycallback_replay_cache_hits_total", NULL,
                              "Repeat callbacks answered from the replay cache, with no database "
                              "read." },
    [M_LOOP_ANSWERED] = { "paycallback_http_loop_answered_total", NULL,
                          "Requests answered on an event loop with the non-blocking database "
                          "API, no handler thread (http.event_loop)." },
    [M_LOOP_HANDED] = { "paycallback_http_loop_handed_total", NULL,
                        "Requests of a route with a non-blocking form that an event loop handed "
                        "to a handler thread (a connection not yet prepared, a retry, a "
                        "sharded set)." },
};

static const struct {
    const char *name;
    const char *help;
    int scale_ms; /* value is ms, rendered in seconds */
} gauge_info[G_COUNT] = {
    [G_OUTBOX_PENDING] = { "paycallback_outbox_pending", "Events not delivered to the shop yet.",
                           0 },
    [G_OUTBOX_DEAD] = { "paycallback_outbox_dead", "Events that ran out of delivery attempts.", 0 },
    [G_OUTBOX_LAGGING] = { "paycallback_outbox_lagging",
                           "Pending events older than reconcile.outbox_lag_s.", 0 },
    [G_OUTBOX_OLDEST_MS] = { "paycallback_outbox_lag_seconds",
                             "Age of the oldest event not delivered yet (0 when none).", 1 },
    [G_WAIT_PAY_STALE] = { "paycallback_reconcile_wait_pay_stale",
                           "WAIT_PAY orders older than reconcile.wait_pay_age_s.", 0 },
    [G_REFUND_UNSETTLED] = { "paycallback_reconcile_refund_unsettled",
                             "REFUND_REQUIRED payments not settled yet.", 0 },
    [G_WAIT_PAY_OVERDUE] = { "paycallback_reconcile_wait_pay_overdue",
                             "WAIT_PAY orders still open past reconcile.payment_window_s.", 0 },
    [G_RECONCILE_LAST_RUN_S] = { "paycallback_reconcile_last_success_timestamp_seconds",
                                 "Unix time of the last complete reconciliation pass.", 0 },
    [G_RELOAD_OK] = { "paycallback_config_last_reload_successful",
                      "Whether the last SIGHUP reload succeeded (1; also before any) or was refused (0).",
                      0 },
    [G_REFUND_OLDEST_S] = { "paycallback_refund_oldest_unrefunded_seconds",
                            "Age of the oldest double payment (REFUND_REQUIRED) not refunded yet, "
                            "over every shard (0 when none).",
                            0 },
    [G_REFUND_ALERT_AGE_S] = { "paycallback_refund_unrefunded_alert_age_seconds",
                               "refunds.unrefunded_alert_s: a double payment unrefunded this long "
                               "alerts (PaycallbackDoublePaymentUnrefunded).",
                               0 },
    [G_HTTP_IN_FLIGHT] = { "paycallback_http_requests_in_flight",
                           "Requests whose headers arrived and whose answer is not sent yet, the "
                           "scrape that reads it included.",
                           0 },
};

struct metrics *metrics_create(const struct metrics_route *routes, size_t nroutes)
{
    struct metrics *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    if ((m->rs = calloc(nroutes + 1, sizeof(*m->rs))) == NULL ||
        (m->routes = calloc(nroutes + 1, sizeof(*m->routes))) == NULL) {
        free(m->rs);
        free(m);
        return NULL;
    }
    if (nroutes > 0)
        memcpy(m->routes, routes, nroutes * sizeof(*routes));
    m->nroutes = nroutes;
    clock_gettime(CLOCK_REALTIME, &m->start);
    metrics_set_build_info(m, "unknown", "unknown");
    return m;
}

void metrics_destroy(struct metrics *m)
{
    if (m == NULL)
        return;
    free(m->routes);
    free(m->rs);
    free(m);
}

/* Copies s into out for a label value, dropping the characters that the
 * text format would need escaped (a version or commit never has them). */
static void label_copy(char *out, size_t n, const char *s)
{
    size_t j = 0;

    for (size_t i = 0; s != NULL && s[i] != '\0' && j + 1 < n; i++)
        if (s[i] != '"' && s[i] != '\\' && s[i] != '\n')
            out[j++] = s[i];
    out[j] = '\0';
}

void metrics_set_build_info(struct metrics *m, const char *version, const char *commit)
{
    if (m == NULL)
        return;
    label_copy(m->version, sizeof(m->version), version);
    label_copy(m->commit, sizeof(m->commit), commit);
}

void metrics_inc(struct metrics *m, enum metric_counter c)
{
    if (m != NULL && (unsigned)c < M_COUNT)
        atomic_fetch_add_explicit(&m->counter[c], 1, memory_order_relaxed);
}

void metrics_add(struct metrics *m, enum metric_counter c, uint64_t n)
{
    if (m != NULL && (unsigned)c < M_COUNT)
        atomic_fetch_add_explicit(&m->counter[c], n, memory_order_relaxed);
}

void metrics_set_gauge(struct metrics *m, enum metric_gauge g, int64_t v)
{
    if (m != NULL && (unsigned)g < G_COUNT)
        atomic_store_explicit(&m->gauge[g], v, memory_order_relaxed);
}

void metrics_add_gauge(struct metrics *m, enum metric_gauge g, int64_t delta)
{
    if (m != NULL && (unsigned)g < G_COUNT)
        atomic_fetch_add_explicit(&m->gauge[g], delta, memory_order_relaxed);
}

void metrics_set_redis_degraded(struct metrics *m, int degraded)
{
    if (m != NULL)
        atomic_store_explicit(&m->redis_degraded, degraded != 0, memory_order_relaxed);
}

void metrics_set_ready(struct metrics *m, int ready)
{
    if (m != NULL)
        atomic_store_explicit(&m->ready, ready != 0, memory_order_relaxed);
}

void metrics_observe(struct metrics *m, size_t route, int status, uint64_t usec)
{
    struct route_stats *rs;
    size_t ci = NCODES, b = 0;

    if (m == NULL)
        return;
    rs = &m->rs[route < m->nroutes ? route : m->nroutes];
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i] == status)
            ci = i;
    while (b < NBUCKETS && usec > bucket_us[b])
        b++;
    atomic_fetch_add_explicit(&rs->by_code[ci], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rs->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rs->sum_us, usec, memory_order_relaxed);
    atomic_fetch_add_explicit(&rs->count, 1, memory_order_relaxed);
}

void metrics_observe_idem_wait(struct metrics *m, uint64_t usec)
{
    size_t b = 0;

    if (m == NULL)
        return;
    while (b < NBUCKETS && usec > bucket_us[b])
        b++;
    atomic_fetch_add_explicit(&m->idem_wait_bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->idem_wait_sum_us, usec, memory_order_relaxed);
}

/* A growing text buffer; on allocation failure it stops growing and
 * marks itself failed. */
struct buf {
    char *p;
    size_t len, cap;
    int failed;
};

__attribute__((format(printf, 2, 3))) static void bprintf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->failed)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        char *np = realloc(b->p, b->cap * 2 + (size_t)n);
        if (np == NULL) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = b->cap * 2 + (size_t)n;
    }
}

static unsigned long long ld(const atomic_ullong *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

uint64_t metrics_counter(const struct metrics *m, enum metric_counter c)
{
    return m != NULL && (unsigned)c < M_COUNT ? ld(&m->counter[c]) : 0;
}

int64_t metrics_gauge(const struct metrics *m, enum metric_gauge g)
{
    return m != NULL && (unsigned)g < G_COUNT
               ? (int64_t)atomic_load_explicit(&m->gauge[g], memory_order_relaxed)
               : 0;
}

uint64_t metrics_route_status(const struct metrics *m, const char *method, const char *pattern,
                              int status)
{
    if (m == NULL)
        return 0;
    for (size_t r = 0; r < m->nroutes; r++) {
        if (strcmp(m->routes[r].method, method) != 0 || strcmp(m->routes[r].pattern, pattern) != 0)
            continue;
        for (size_t i = 0; i < NCODES; i++)
            if (codes[i] == status)
                return ld(&m->rs[r].by_code[i]);
    }
    return 0;
}

size_t metrics_gateways_read(const struct metrics *m, struct metrics_gateway_view *out, size_t max)
{
    size_t n = m != NULL && m->ngw < max ? m->ngw : max;

    if (m == NULL)
        return 0;
    for (size_t g = 0; g < n; g++) {
        out[g].name = m->gateway_names[g];
        out[g].results = m->gateway_results;
        out[g].reasons = m->gateway_reasons;
        out[g].nresults = m->ngw_results;
        out[g].nreasons = m->ngw_reasons;
        for (size_t v = 0; v < m->ngw_results; v++)
            out[g].result[v] = ld(&m->gateway_result[g][v]);
        for (size_t v = 0; v < m->ngw_reasons; v++)
            out[g].reject[v] = ld(&m->gateway_reject[g][v]);
    }
    return n;
}

int64_t metrics_uptime_s(const struct metrics *m)
{
    struct timespec now;

    if (m == NULL)
        return 0;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)(now.tv_sec - m->start.tv_sec);
}

static const char *route_label(const struct metrics *m, size_t r)
{
    return r < m->nroutes ? m->routes[r].pattern : "unmatched";
}

/* Unmatched requests share one series whatever their method, so a
 * client inventing methods cannot grow the label set. */
static const char *route_method(const struct metrics *m, size_t r)
{
    return r < m->nroutes ? m->routes[r].method : "other";
}

static void render_requests(const struct metrics *m, struct buf *b)
{
    bprintf(
        b,
        "# HELP paycallback_http_requests_total HTTP requests by route, method and status code.\n"
        "# TYPE paycallback_http_requests_total counter\n");
    for (size_t r = 0; r <= m->nroutes; r++) {
        for (size_t i = 0; i <= NCODES; i++) {
            unsigned long long v = ld(&m->rs[r].by_code[i]);
            if (v == 0)
                continue;
            if (i < NCODES)
                bprintf(
                    b,
                    "paycallback_http_requests_total{route=\"%s\",method=\"%s\",code=\"%d\"} %llu\n",
                    route_label(m, r), route_method(m, r), codes[i], v);
            else
                bprintf(
                    b,
                    "paycallback_http_requests_total{route=\"%s\",method=\"%s\",code=\"other\"} %llu\n",
                    route_label(m, r), route_method(m, r), v);
        }
    }
}

/* Writes usec as seconds in the shortest exact decimal ("0.0025", "1"),
 * the form Prometheus clients use for le, so queries can match it. */
static void seconds_label(uint64_t usec, char *out, size_t n)
{
    unsigned long long whole = usec / 1000000u, frac = usec % 1000000u;
    int digits = 6;

    if (frac == 0) {
        snprintf(out, n, "%llu", whole);
        return;
    }
    while (frac % 10 == 0) {
        frac /= 10;
        digits--;
    }
    snprintf(out, n, "%llu.%0*llu", whole, digits, frac);
}

static void render_latency(const struct metrics *m, struct buf *b)
{
    char le[32];

    bprintf(
        b,
        "# HELP paycallback_http_request_duration_seconds Time from the request's first byte to the reply.\n"
        "# TYPE paycallback_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r <= m->nroutes; r++) {
        const struct route_stats *rs = &m->rs[r];
        const char *route = route_label(m, r), *method = route_method(m, r);
        unsigned long long cum = 0, sum = ld(&rs->sum_us);

        for (size_t i = 0; i < NBUCKETS; i++) {
            cum += ld(&rs->bucket[i]);
            seconds_label(bucket_us[i], le, sizeof(le));
            bprintf(
                b,
                "paycallback_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"%s\"} %llu\n",
                route, method, le, cum);
        }
        cum += ld(&rs->bucket[NBUCKETS]);
        bprintf(
            b,
            "paycallback_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} %llu\n",
            route, method, cum);
        bprintf(
            b,
            "paycallback_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %llu.%06llu\n",
            route, method, sum / 1000000ULL, sum % 1000000ULL);
        bprintf(
            b, "paycallback_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %llu\n",
            route, method, cum);
    }
}

static void render_idem_wait(const struct metrics *m, struct buf *b)
{
    unsigned long long cum = 0, sum = ld(&m->idem_wait_sum_us);
    char le[32];

    bprintf(
        b,
        "# HELP paycallback_idempotency_wait_seconds Time an Idempotency-Key repeat waited for its first attempt.\n"
        "# TYPE paycallback_idempotency_wait_seconds histogram\n");
    for (size_t i = 0; i < NBUCKETS; i++) {
        cum += ld(&m->idem_wait_bucket[i]);
        seconds_label(bucket_us[i], le, sizeof(le));
        bprintf(b, "paycallback_idempotency_wait_seconds_bucket{le=\"%s\"} %llu\n", le, cum);
    }
    cum += ld(&m->idem_wait_bucket[NBUCKETS]);
    bprintf(b, "paycallback_idempotency_wait_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    bprintf(b, "paycallback_idempotency_wait_seconds_sum %llu.%06llu\n", sum / 1000000ULL,
            sum % 1000000ULL);
    bprintf(b, "paycallback_idempotency_wait_seconds_count %llu\n", cum);
}

static void render_counters(const struct metrics *m, struct buf *b)
{
    for (int c = 0; c < M_COUNT; c++) {
        if (counter_info[c].help != NULL)
            bprintf(b, "# HELP %s %s\n# TYPE %s counter\n", counter_info[c].name,
                    counter_info[c].help, counter_info[c].name);
        if (counter_info[c].label != NULL)
            bprintf(b, "%s{%s} %llu\n", counter_info[c].name, counter_info[c].label,
                    ld(&m->counter[c]));
        else
            bprintf(b, "%s %llu\n", counter_info[c].name, ld(&m->counter[c]));
    }
    bprintf(b,
            "# HELP paycallback_redis_degraded 1 while Redis is unreachable and tokens use MySQL.\n"
            "# TYPE paycallback_redis_degraded gauge\n"
            "paycallback_redis_degraded %d\n",
            atomic_load_explicit(&m->redis_degraded, memory_order_relaxed));
    bprintf(b,
            "# HELP paycallback_ready 1 while MySQL answered the last readiness probe "
            "(each /readyz and /metrics request runs one).\n"
            "# TYPE paycallback_ready gauge\n"
            "paycallback_ready %d\n",
            atomic_load_explicit(&m->ready, memory_order_relaxed));
    for (int g = 0; g < G_COUNT; g++) {
        long long v = atomic_load_explicit(&m->gauge[g], memory_order_relaxed);

        bprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", gauge_info[g].name, gauge_info[g].help,
                gauge_info[g].name);
        if (gauge_info[g].scale_ms)
            bprintf(b, "%s %lld.%03lld\n", gauge_info[g].name, v / 1000, v % 1000);
        else
            bprintf(b, "%s %lld\n", gauge_info[g].name, v);
    }
}

void metrics_set_gateways(struct metrics *m, const char *const *names, size_t n,
                          const char *const *results, size_t nresults, const char *const *reasons,
                          size_t nreasons)
{
    if (m == NULL)
        return;
    m->gateway_names = names;
    m->ngw = n < METRICS_GATEWAYS_MAX ? n : METRICS_GATEWAYS_MAX;
    m->gateway_results = results;
    m->ngw_results = nresults < METRICS_GW_LABELS_MAX ? nresults : METRICS_GW_LABELS_MAX;
    m->gateway_reasons = reasons;
    m->ngw_reasons = nreasons < METRICS_GW_LABELS_MAX ? nreasons : METRICS_GW_LABELS_MAX;
}

void metrics_gateway_result(struct metrics *m, size_t gw, size_t result)
{
    if (m != NULL && gw < m->ngw && result < m->ngw_results)
        atomic_fetch_add_explicit(&m->gateway_result[gw][result], 1, memory_order_relaxed);
}

void metrics_gateway_reject(struct metrics *m, size_t gw, size_t reason)
{
    if (m != NULL && gw < m->ngw && reason < m->ngw_reasons)
        atomic_fetch_add_explicit(&m->gateway_reject[gw][reason], 1, memory_order_relaxed);
}

void metrics_refund(struct metrics *m, size_t gw, int state)
{
    if (m != NULL && gw < m->ngw && state >= 0 && state < METRICS_REFUND_STATES)
        atomic_fetch_add_explicit(&m->refund_state[gw][state], 1, memory_order_relaxed);
}

void metrics_refund_unsolicited(struct metrics *m, size_t gw)
{
    if (m != NULL && gw < m->ngw)
        atomic_fetch_add_explicit(&m->refund_unsolicited[gw], 1, memory_order_relaxed);
}

/* The slot of endpoint name, taken for it if it has none: slots are
 * scanned in order and one being named is waited for, so two threads
 * counting one new name at once end in the same slot. -1 when full. */
static int endpoint_slot(struct metrics *m, const char *name)
{
    for (int i = 0; i < METRICS_ENDPOINTS_MAX; i++) {
        int st = atomic_load_explicit(&m->endpoint_state[i], memory_order_acquire);

        if (st == 0) {
            int expect = 0;

            if (atomic_compare_exchange_strong(&m->endpoint_state[i], &expect, 1)) {
                snprintf(m->endpoint_name[i], sizeof(m->endpoint_name[i]), "%s", name);
                atomic_store_explicit(&m->endpoint_state[i], 2, memory_order_release);
                return i;
            }
            st = expect;
        }
        while (st == 1) {
            sched_yield();
            st = atomic_load_explicit(&m->endpoint_state[i], memory_order_acquire);
        }
        if (strcmp(m->endpoint_name[i], name) == 0)
            return i;
    }
    return -1;
}

void metrics_endpoint(struct metrics *m, const char *name, enum metric_endpoint_result r)
{
    int i;

    if (m == NULL || name == NULL || (unsigned)r >= ME_COUNT ||
        strlen(name) > METRICS_ENDPOINT_NAME_MAX || (i = endpoint_slot(m, name)) < 0)
        return;
    atomic_fetch_add_explicit(&m->endpoint_count[i][r], 1, memory_order_relaxed);
}

/* Deliveries by endpoint and result, for every endpoint counted so far. */
static void render_endpoints(const struct metrics *m, struct buf *b)
{
    static const char *const results[ME_COUNT] = { "delivered", "failed", "timeout", "dead" };
    int header = 0;

    for (int i = 0; i < METRICS_ENDPOINTS_MAX; i++) {
        if (atomic_load_explicit(&m->endpoint_state[i], memory_order_acquire) != 2)
            continue;
        if (!header++)
            bprintf(b, "# HELP paycallback_webhook_deliveries_total Webhook delivery attempts by "
                       "endpoint and result (dead: the attempt that ran out of attempts).\n"
                       "# TYPE paycallback_webhook_deliveries_total counter\n");
        for (int r = 0; r < ME_COUNT; r++)
            bprintf(b, "paycallback_webhook_deliveries_total{endpoint=\"%s\",result=\"%s\"} %llu\n",
                    m->endpoint_name[i], results[r], ld(&m->endpoint_count[i][r]));
    }
}

void metrics_set_shards(struct metrics *m, const char *const *labels, size_t n)
{
    if (m == NULL)
        return;
    m->shard_labels = labels;
    m->nshards = n < METRICS_SHARDS_MAX ? n : METRICS_SHARDS_MAX;
}

void metrics_shard_inc(struct metrics *m, size_t idx, enum metric_shard_counter c)
{
    if (m != NULL && idx < m->nshards && (unsigned)c < MS_COUNT)
        atomic_fetch_add_explicit(&m->shard_count[idx][c], 1, memory_order_relaxed);
}

void metrics_shard_set_gauge(struct metrics *m, size_t idx, enum metric_shard_gauge g, int64_t v)
{
    if (m != NULL && idx < m->nshards && (unsigned)g < MSG_COUNT)
        atomic_store_explicit(&m->shard_gauge[idx][g], v, memory_order_relaxed);
}

void metrics_shard_ready(struct metrics *m, size_t idx, int ready)
{
    if (m != NULL && idx < m->nshards)
        atomic_store_explicit(&m->shard_ready[idx], ready != 0, memory_order_relaxed);
}

static void render_shards(const struct metrics *m, struct buf *b)
{
    static const struct {
        const char *name, *help;
    } info[MS_COUNT] = {
        [MS_UNAVAILABLE] = { "paycallback_shard_unavailable_total",
                             "Requests answered 503 because this shard's database failed them." },
        [MS_POOL_TIMEOUTS] = { "paycallback_shard_pool_timeouts_total",
                               "Acquisitions of this shard's connection pool that gave up." },
        [MS_RECONNECTS] = { "paycallback_shard_reconnects_total",
                            "Connections to this shard made again after a lost link." },
        [MS_OUTBOX_CLAIM_FAILURES] = { "paycallback_shard_outbox_claim_failures_total",
                                       "Outbox relay claims this shard's database failed (tried "
                                       "again later)." },
        [MS_RECONCILE_FAILURES] = { "paycallback_shard_reconcile_failures_total",
                                    "Reconciliation passes that could not read this shard." },
        [MS_BREAKER_OPENS] = { "paycallback_shard_breaker_opens_total",
                               "Times this shard's circuit breaker opened after repeated "
                               "failures or a failed probe." },
        [MS_FAST_FAILS] = { "paycallback_shard_fast_fails_total",
                            "Requests refused at once because this shard is down, its breaker "
                            "is open or its shard map changed." },
        [MS_INFLIGHT_REFUSED] = { "paycallback_shard_inflight_refused_total",
                                  "Requests refused because this shard had "
                                  "mysql.shard_max_inflight requests in flight." },
    };
    static const struct {
        const char *name, *help;
    } ginfo[MSG_COUNT] = {
        [MSG_OUTBOX_PENDING] = { "paycallback_shard_outbox_pending",
                                 "Events on this shard not delivered to the shop yet." },
        [MSG_OUTBOX_DEAD] = { "paycallback_shard_outbox_dead",
                              "Events on this shard that ran out of delivery attempts." },
        [MSG_OUTBOX_LAGGING] = { "paycallback_shard_outbox_lagging",
                                 "Pending events on this shard older than reconcile.outbox_lag_s." },
        [MSG_WAIT_PAY_STALE] = { "paycallback_shard_reconcile_wait_pay_stale",
                                 "WAIT_PAY orders on this shard older than "
                                 "reconcile.wait_pay_age_s." },
        [MSG_REFUND_UNSETTLED] = { "paycallback_shard_reconcile_refund_unsettled",
                                   "REFUND_REQUIRED payments on this shard not settled yet." },
        [MSG_RECONCILE_LAST_RUN_S] = { "paycallback_shard_reconcile_last_success_timestamp_seconds",
                                       "Unix time of the last reconciliation pass that read this "
                                       "shard." },
    };
    size_t i;
    int c;

    if (m->nshards == 0)
        return;
    bprintf(b, "# HELP paycallback_shard_ready 1 when the shard's database took writes at the "
               "last readiness probe.\n# TYPE paycallback_shard_ready gauge\n");
    for (i = 0; i < m->nshards; i++)
        bprintf(b, "paycallback_shard_ready{shard=\"%s\"} %d\n", m->shard_labels[i],
                atomic_load_explicit(&m->shard_ready[i], memory_order_relaxed));
    for (c = 0; c < MS_COUNT; c++) {
        bprintf(b, "# HELP %s %s\n# TYPE %s counter\n", info[c].name, info[c].help, info[c].name);
        for (i = 0; i < m->nshards; i++)
            bprintf(b, "%s{shard=\"%s\"} %llu\n", info[c].name, m->shard_labels[i],
                    ld(&m->shard_count[i][c]));
    }
    for (c = 0; c < MSG_COUNT; c++) {
        bprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", ginfo[c].name, ginfo[c].help, ginfo[c].name);
        for (i = 0; i < m->nshards; i++)
            bprintf(b, "%s{shard=\"%s\"} %lld\n", ginfo[c].name, m->shard_labels[i],
                    (long long)atomic_load_explicit(&m->shard_gauge[i][c], memory_order_relaxed));
    }
}

/* One labelled series per gateway and label value, zeros included, so a
 * rate() sees a series before its first increment. */
static void render_gateway_family(const struct metrics *m, struct buf *b, const char *name,
                                  const char *help, const char *label, const char *const *values,
                                  size_t nvalues,
                                  const atomic_ullong (*count)[METRICS_GW_LABELS_MAX])
{
    if (m->ngw == 0)
        return;
    bprintf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (size_t g = 0; g < m->ngw; g++)
        for (size_t v = 0; v < nvalues; v++)
            bprintf(b, "%s{gateway=\"%s\",%s=\"%s\"} %llu\n", name, m->gateway_names[g], label,
                    values[v], ld(&count[g][v]));
}

/* Refunds by gateway and the state they entered: what the relay's calls
 * and the gateways' notifications did (the states before a submission are
 * the refund table's to count). Zeros included. */
static void render_refunds(const struct metrics *m, struct buf *b)
{
    static const char *const states[METRICS_REFUND_STATES] = {
        "AWAITING_APPROVAL", "REQUESTED", "SUBMITTED", "SUCCEEDED", "FAILED", "UNKNOWN"
    };

    if (m->ngw == 0)
        return;
    bprintf(b, "# HELP paycallback_refunds_total Refunds by gateway and the state the relay's "
               "calls or the gateway's notifications put them in (UNKNOWN: each answer "
               "lost).\n# TYPE paycallback_refunds_total counter\n");
    for (size_t g = 0; g < m->ngw; g++)
        for (int s = 2; s < METRICS_REFUND_STATES; s++)
            bprintf(b, "paycallback_refunds_total{gateway=\"%s\",state=\"%s\"} %llu\n",
                    m->gateway_names[g], states[s], ld(&m->refund_state[g][s]));
    bprintf(b, "# HELP paycallback_refund_notifications_unsolicited_total Refund notifications "
               "of a refund the service never asked for (recorded in audit_log).\n"
               "# TYPE paycallback_refund_notifications_unsolicited_total counter\n");
    for (size_t g = 0; g < m->ngw; g++)
        bprintf(b, "paycallback_refund_notifications_unsolicited_total{gateway=\"%s\"} %llu\n",
                m->gateway_names[g], ld(&m->refund_unsolicited[g]));
}

static void render_gateways(const struct metrics *m, struct buf *b)
{
    render_gateway_family(m, b, "paycallback_gateway_notifications_total",
                          "Verified gateway notifications by gateway and what applying them did "
                          "(IGNORED: a status that pays nothing, acknowledged).",
                          "result", m->gateway_results, m->ngw_results, m->gateway_result);
    render_gateway_family(m, b, "paycallback_gateway_rejected_total",
                          "Gateway notifications refused before anything was written, by reason.",
                          "reason", m->gateway_reasons, m->ngw_reasons, m->gateway_reject);
    render_refunds(m, b);
}

static void render_build_info(const struct metrics *m, struct buf *b)
{
    bprintf(b,
            "# HELP paycallback_build_info The running build: version and commit, always 1.\n"
            "# TYPE paycallback_build_info gauge\n"
            "paycallback_build_info{version=\"%s\",commit=\"%s\"} 1\n",
            m->version, m->commit);
}

/* Open descriptors: the entries of /proc/self/fd less the one that
 * reading the directory holds. -1 when /proc is not mounted. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

/* The process_* family that Prometheus client libraries export, so
 * standard dashboards and alerts work unchanged. Values /proc cannot give
 * are left out rather than reported as zero. */
static void render_process(const struct metrics *m, struct buf *b)
{
    struct rusage ru;
    struct rlimit rl;
    unsigned long long vm_pages, rss_pages;
    long page = sysconf(_SC_PAGESIZE), fds = open_fds();
    FILE *f;

    if (getrusage(RUSAGE_SELF, &ru) == 0)
        bprintf(
            b,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total %ld.%06ld\n",
            (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000000),
            (long)((ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) % 1000000));
    if (fds >= 0)
        bprintf(b,
                "# HELP process_open_fds Number of open file descriptors.\n"
                "# TYPE process_open_fds gauge\n"
                "process_open_fds %ld\n",
                fds);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        bprintf(b,
                "# HELP process_max_fds Maximum number of open file descriptors.\n"
                "# TYPE process_max_fds gauge\n"
                "process_max_fds %llu\n",
                (unsigned long long)rl.rlim_cur);
    if (page > 0 && (f = fopen("/proc/self/statm", "r")) != NULL) {
        if (fscanf(f, "%llu %llu", &vm_pages, &rss_pages) == 2)
            bprintf(b,
                    "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                    "# TYPE process_virtual_memory_bytes gauge\n"
                    "process_virtual_memory_bytes %llu\n"
                    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                    "# TYPE process_resident_memory_bytes gauge\n"
                    "process_resident_memory_bytes %llu\n",
                    vm_pages * (unsigned long long)page, rss_pages * (unsigned long long)page);
        fclose(f);
    }
    bprintf(
        b,
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        "# TYPE process_start_time_seconds gauge\n"
        "process_start_time_seconds %lld.%03ld\n",
        (long long)m->start.tv_sec, m->start.tv_nsec / 1000000L);
}

char *metrics_render(const struct metrics *m, size_t *len)
{
    struct buf b = { malloc(16384), 0, 16384, 0 };

    *len = 0;
    if (m == NULL || b.p == NULL) {
        free(b.p);
        return NULL;
    }
    render_requests(m, &b);
    render_latency(m, &b);
    render_counters(m, &b);
    render_gateways(m, &b);
    render_endpoints(m, &b);
    render_shards(m, &b);
    render_build_info(m, &b);
    render_process(m, &b);
    render_idem_wait(m, &b);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
