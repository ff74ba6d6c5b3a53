/* refund_relay.c - the refund relay threads and the libcurl call they make.
 * The records and their state changes are refund.c's; the wire format of
 * each gateway's refund API is gateway_refund.c's. */
#include "refund_relay.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "db.h"
#include "delivery.h"
#include "gateway.h"
#include "gateway_refund.h"
#include "keyring.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "refund.h"
#include "server.h"

#define RELAY_DB_WAIT_MS 1000
#define RELAY_LEASE_PAD_S 5
#define RELAY_ANSWER_MAX (64 * 1024) /* a longer answer is cut and reads as unknown */
#define RELAY_HEADERS_MAX 8192

struct rrelay {
    struct refund_relay *rr;
    const struct shard *sh;
    pthread_t thread;
    bool started;
    int failures;
    struct timespec next_sweep; /* CLOCK_MONOTONIC */
    atomic_llong oldest_s;      /* this shard's oldest unrefunded double payment */
    char owner[OUTBOX_OWNER_MAX];
    CURL *curl;
};

struct refund_relay {
    struct server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    int nrelays;
    struct rrelay *relays;
};

/* An answer being read. */
struct buf {
    char *p;
    size_t len, cap;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    size_t n = size * nmemb, room = b->cap - b->len - 1;

    if (n > room)
        n = room; /* cut: an answer this long does not parse, and reads as unknown */
    memcpy(b->p + b->len, ptr, n);
    b->len += n;
    b->p[b->len] = '\0';
    return size * nmemb;
}

static bool stopping(struct refund_relay *rr)
{
    bool s;

    pthread_mutex_lock(&rr->mu);
    s = rr->stop;
    pthread_mutex_unlock(&rr->mu);
    return s;
}

static void idle(struct refund_relay *rr, int ms)
{
    struct timespec until = monotime_after_ms(ms);

    pthread_mutex_lock(&rr->mu);
    while (!rr->stop)
        if (pthread_cond_timedwait(&rr->cv, &rr->mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&rr->mu);
}

static uint32_t random_u32(void)
{
    uint32_t v = 0;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        v = (uint32_t)time(NULL);
    return v;
}

/* Sends call, and reads the answer into *a. No database connection is
 * held meanwhile. */
static void perform(struct rrelay *r, const struct gateway *gw, int query,
                    const struct gwr_call *call, struct gwr_answer *a)
{
    char body[RELAY_ANSWER_MAX], headers[RELAY_HEADERS_MAX];
    struct buf b = { body, 0, sizeof(body) }, h = { headers, 0, sizeof(headers) };
    struct curl_slist *hdr = NULL, *t;
    long code = 0;
    CURLcode cc;

    body[0] = headers[0] = '\0';
    memset(a, 0, sizeof(*a));
    a->outcome = GWR_UNKNOWN;
    for (size_t i = 0; i < call->nheaders; i++) {
        if ((t = curl_slist_append(hdr, call->header[i])) == NULL) {
            snprintf(a->message, sizeof(a->message), "out of memory");
            goto out;
        }
        hdr = t;
    }
    if ((t = curl_slist_append(hdr, "Expect:")) != NULL)
        hdr = t;
    curl_easy_reset(r->curl);
    curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(r->curl, CURLOPT_URL, call->url);
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(r->curl, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(r->curl, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, (long)gw->cfg->refund_timeout_ms);
    curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)gw->cfg->refund_timeout_ms);
    if (strcmp(call->method, "POST") == 0) {
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, (long)call->body_len);
    } else {
        curl_easy_setopt(r->curl, CURLOPT_HTTPGET, 1L);
    }
    cc = curl_easy_perform(r->curl);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(a->message, sizeof(a->message), "no answer within %d ms",
                 gw->cfg->refund_timeout_ms);
    } else if (cc != CURLE_OK) {
        snprintf(a->message, sizeof(a->message), "%s", curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
        gwr_read(gw, query, code, headers, body, b.len, a);
    }
out:
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
}

/* The refund's facts as the gateway's calls need them. */
static void gwr_of(const struct refund *rf, struct gwr_refund *g)
{
    g->refund_no = rf->refund_no;
    g->pay_no = rf->pay_no;
    g->order_no = rf->order_no;
    g->amount_cents = rf->amount_cents;
    g->pay_amount_cents = rf->pay_amount_cents;
    g->currency = rf->currency;
    g->gateway_refund_id = rf->gateway_refund_id;
}

/* Records the answer a on the refund, counted under gateway index gwi
 * (SIZE_MAX: no such profile). A failure to record leaves the lease to run
 * out: the refund is asked about again, never lost. */
static void record(struct rrelay *r, size_t gwi, struct refund *rf, const struct gwr_answer *a)
{
    const struct config *cfg = r->rr->srv->cfg;
    struct db_conn *c = shard_acquire(r->sh, RELAY_DB_WAIT_MS);
    const char *gid = a->gateway_refund_id[0] ? a->gateway_refund_id : NULL;
    int64_t wait = delivery_backoff_ms(rf->attempts + 1, cfg->refunds_backoff_base_ms,
                                       cfg->refunds_backoff_max_ms, random_u32());
    struct refund after = { .id = 0 };
    enum db_status st;
    bool changed = false;

    if (c == NULL) {
        log_warn("refund: no database connection to record an answer", "refund_no=%s outcome=%s",
                 rf->refund_no, gwr_outcome_str(a->outcome));
        return;
    }
    switch (a->outcome) {
    case GWR_SUCCEEDED:
    case GWR_FAILED:
        st = refund_finish(c, rf->refund_no,
                           a->outcome == GWR_SUCCEEDED ? REFUND_SUCCEEDED : REFUND_FAILED, gid,
                           a->outcome == GWR_FAILED ? a->code : NULL, a->message, &changed, &after);
        if (st == DB_OK && changed)
            metrics_refund(r->rr->srv->m, gwi,
                           a->outcome == GWR_FAILED ? REFUND_FAILED : REFUND_SUCCEEDED);
        if (st == DB_OK && changed && a->outcome == GWR_FAILED)
            log_alert("REFUND_FAILED",
                      "refund_no=%s pay_no=%s order_no=%s gateway=%s code=%s message=\"%s\"",
                      rf->refund_no, rf->pay_no, rf->order_no, rf->gateway, a->code, a->message);
        else if (st == DB_OK && changed)
            log_info("refund succeeded", "refund_no=%s pay_no=%s order_no=%s gateway=%s id=%s",
                     rf->refund_no, rf->pay_no, rf->order_no, rf->gateway, a->gateway_refund_id);
        break;
    case GWR_PENDING:
    case GWR_NOT_FOUND:
    case GWR_UNKNOWN:
    default:
        if (a->outcome != GWR_PENDING)
            metrics_refund(r->rr->srv->m, gwi, REFUND_UNKNOWN);
        st = refund_mark_waiting(c, rf->id, r->owner,
                                 a->outcome == GWR_PENDING ? REFUND_SUBMITTED : REFUND_UNKNOWN, gid,
                                 a->message, wait);
        log_write(a->outcome == GWR_PENDING ? LOG_INFO : LOG_WARN, "refund not decided yet",
                  "refund_no=%s gateway=%s outcome=%s attempt=%d retry_in_ms=%lld error=\"%s\"",
                  rf->refund_no, rf->gateway, gwr_outcome_str(a->outcome), rf->attempts + 1,
                  (long long)wait, a->message);
        break;
    }
    if (st != DB_OK)
        log_warn("refund: cannot record an answer", "refund_no=%s status=%s error=\"%s\"",
                 rf->refund_no, db_status_str(st), db_errstr(c));
    shard_release(r->sh, c);
}

/* Marks rf SUBMITTED before a call leaves. False when the lease is no
 * longer this relay's, the ledger has no room for it (its payment settled
 * since: alerted), or the database failed: nothing is sent. */
static bool mark_submitting(struct rrelay *r, size_t gwi, const struct refund *rf)
{
    struct db_conn *c = shard_acquire(r->sh, RELAY_DB_WAIT_MS);
    bool held = false, refused = false;

    if (c == NULL)
        return false;
    if (refund_mark_submitting(c, rf->id, r->owner, &held, &refused) != DB_OK)
        log_warn("refund: cannot mark a submission", "refund_no=%s error=\"%s\"", rf->refund_no,
                 db_errstr(c));
    shard_release(r->sh, c);
    if (refused) {
        log_alert("REFUND_LEDGER_REFUSED",
                  "refund_no=%s pay_no=%s gateway=%s state=%s sent=0 "
                  "reason=\"its payment was settled or has no room left\"",
                  rf->refund_no, rf->pay_no, rf->gateway, refund_state_name(rf->state));
        if (rf->state == REFUND_REQUESTED)
            metrics_refund(r->rr->srv->m, gwi, REFUND_FAILED);
    }
    if (held)
        metrics_refund(r->rr->srv->m, gwi, REFUND_SUBMITTED);
    return held;
}

/* One call, built by build (gwr_submit or gwr_query), sent and read. -1
 * when it could not be built (the refund cannot be submitted as it is). */
static int call(struct rrelay *r, const struct gateway *gw, const struct refund *rf, int query,
                struct gwr_answer *a)
{
    struct gwr_refund g;
    struct gwr_call *c = calloc(1, sizeof(*c));
    int rc;

    memset(a, 0, sizeof(*a));
    if (c == NULL) {
        a->outcome = GWR_UNKNOWN;
        snprintf(a->message, sizeof(a->message), "out of memory");
        return 0;
    }
    gwr_of(rf, &g);
    rc = query ? gwr_query(gw, &g, c, a->message, sizeof(a->message))
               : gwr_submit(gw, &g, c, a->message, sizeof(a->message));
    if (rc == 0)
        perform(r, gw, query, c, a);
    free(c);
    return rc;
}

/* Submits or asks about one claimed refund, and records what came of it. */
static void work(struct rrelay *r, struct refund *rf)
{
    struct keyring *kr = keyslot_acquire(r->rr->srv->keys);
    const struct gateway *gw = gateways_find(kr->gw, rf->gateway);
    int query = rf->state != REFUND_REQUESTED;
    struct gwr_answer a;

    memset(&a, 0, sizeof(a));
    if (gw == NULL || gw->cfg->refund_url[0] == '\0') {
        a.outcome = GWR_UNKNOWN;
        snprintf(a.message, sizeof(a.message), "gateway profile \"%s\" has no refund_url",
                 rf->gateway);
        log_alert("REFUND_NO_GATEWAY", "refund_no=%s gateway=%s", rf->refund_no, rf->gateway);
        record(r, SIZE_MAX, rf, &a);
        goto out;
    }
    if (!mark_submitting(r, gw->index, rf))
        goto out;
    if (call(r, gw, rf, query, &a) != 0) {
        a.outcome = GWR_FAILED;
        snprintf(a.code, sizeof(a.code), "not_submittable");
    } else if (query && a.outcome == GWR_NOT_FOUND) {
        /* It never arrived: submit it now, under the same number. */
        log_info("refund unknown to its gateway, submitted again", "refund_no=%s gateway=%s",
                 rf->refund_no, rf->gateway);
        if (call(r, gw, rf, 0, &a) != 0) {
            a.outcome = GWR_FAILED;
            snprintf(a.code, sizeof(a.code), "not_submittable");
        }
    }
    record(r, gw->index, rf, &a);
out:
    keyring_release(kr);
}

/* True while the shard's prober finds its database away. The relay then
 * leaves it alone: a background attempt against a database that is down
 * would take the breaker's half-open trial and hold the breaker open for
 * the requests that come once it is back. */
static bool shard_away(const struct rrelay *r)
{
    enum db_health h = db_pool_health(r->sh->pool, NULL);

    return h == DB_HEALTH_DOWN || h == DB_HEALTH_NOT_SYNCED || h == DB_HEALTH_MAP_STALE;
}

static void claim_failed(struct rrelay *r, enum db_status st, const char *err)
{
    if (r->failures++ == 0)
        log_warn("refund relay: claim failed", "shard=%s status=%s error=\"%s\"", r->sh->label,
                 db_status_str(st), err);
}

/* Claims a batch; the count, or -1 when the shard's database failed. */
static long claim(struct rrelay *r, struct refund *out, size_t max)
{
    /* Two calls per refund (a query, then a submission), each bounded by
     * the longest refund timeout of a profile with a refund API, so a live
     * relay keeps its claims, and a crashed one's run out no later than
     * they must. */
    const struct config *cfg = r->rr->srv->cfg;
    int64_t longest = 0;
    int lease_s;
    struct db_conn *c;
    enum db_status st;
    size_t n = 0;

    for (size_t i = 0; i < cfg->gateways.n; i++)
        if (cfg->gateways.profile[i].refund_url[0] != '\0' &&
            cfg->gateways.profile[i].refund_timeout_ms > longest)
            longest = cfg->gateways.profile[i].refund_timeout_ms;
    lease_s = (int)(((int64_t)max * 2 * longest + 999) / 1000) + RELAY_LEASE_PAD_S;
    if (shard_away(r)) {
        claim_failed(r, DB_UNAVAILABLE, "the shard's prober finds it away");
        return -1;
    }
    if ((c = shard_acquire(r->sh, RELAY_DB_WAIT_MS)) == NULL) {
        claim_failed(r, DB_UNAVAILABLE, "no free connection");
        return -1;
    }
    st = refund_claim(c, r->owner, lease_s, out, max, &n);
    if (st != DB_OK) {
        claim_failed(r, st, db_errstr(c));
        shard_release(r->sh, c);
        return -1;
    }
    shard_release(r->sh, c);
    if (r->failures > 0)
        log_info("refund relay: claims work again", "shard=%s failed_claims=%d", r->sh->label,
                 r->failures);
    r->failures = 0;
    return (long)n;
}

static void hand_back(struct rrelay *r)
{
    struct db_conn *c = shard_acquire(r->sh, RELAY_DB_WAIT_MS);

    if (c == NULL)
        return; /* the leases run out by themselves */
    if (refund_release(c, r->owner) != DB_OK)
        log_warn("refund relay: cannot hand back claims", "shard=%s error=\"%s\"", r->sh->label,
                 db_errstr(c));
    shard_release(r->sh, c);
}

/* Reads this shard's oldest unrefunded double payment and publishes the
 * oldest over every shard's last reading. */
static void publish_oldest(struct rrelay *r, struct db_conn *c)
{
    struct refund_relay *rr = r->rr;
    int64_t age = 0, top = 0;

    if (refund_oldest_unrefunded(c, &age) != DB_OK)
        return;
    atomic_store(&r->oldest_s, (long long)age);
    for (size_t i = 0; i < rr->srv->shards.n; i++) /* the array is all there from the start */
        if (atomic_load(&rr->relays[i].oldest_s) > top)
            top = atomic_load(&rr->relays[i].oldest_s);
    metrics_set_gauge(rr->srv->m, G_REFUND_OLDEST_S, top);
}

/* Every refunds.sweep_s: the refunds nobody asked for yet (a canceled
 * paid order's payment, a double payment whose refund a crash lost). */
static void sweep(struct rrelay *r)
{
    struct server *srv = r->rr->srv;
    struct timespec now = monotime_after_ms(0);
    struct keyring *kr;
    struct db_conn *c;
    int made = 0;

    if (now.tv_sec < r->next_sweep.tv_sec ||
        (now.tv_sec == r->next_sweep.tv_sec && now.tv_nsec < r->next_sweep.tv_nsec))
        return;
    r->next_sweep = monotime_after_ms((int64_t)srv->cfg->refunds_sweep_s * 1000);
    if (shard_away(r) || (c = shard_acquire(r->sh, RELAY_DB_WAIT_MS)) == NULL)
        return;
    kr = keyslot_acquire(srv->keys);
    publish_oldest(r, c);
    if (refund_sweep(c, &srv->shards, r->sh, kr->gw, "refund-relay", &made) != DB_OK)
        log_warn("refund relay: sweep failed", "shard=%s error=\"%s\"", r->sh->label, db_errstr(c));
    else if (made > 0)
        log_info("refunds made for payments to refund", "shard=%s made=%d", r->sh->label, made);
    keyring_release(kr);
    shard_release(r->sh, c);
}

static void *relay_main(void *arg)
{
    struct rrelay *r = arg;
    struct refund_relay *rr = r->rr;
    size_t batch = (size_t)rr->srv->cfg->refunds_batch;
    struct refund *rfs = calloc(batch, sizeof(*rfs));

    if (rfs == NULL) {
        log_error("refund relay: out of memory", "owner=%s", r->owner);
        return NULL;
    }
    while (!stopping(rr)) {
        long got;

        sweep(r);
        got = claim(r, rfs, batch);
        size_t n = got > 0 ? (size_t)got : 0, i;

        for (i = 0; i < n && !stopping(rr); i++)
            work(r, &rfs[i]);
        if (i < n)
            hand_back(r);
        if (got < 0)
            idle(rr, delivery_down_wait_ms(rr->srv->cfg->refunds_poll_ms, r->failures));
        else if (n < batch)
            idle(rr, rr->srv->cfg->refunds_poll_ms);
    }
    free(rfs);
    return NULL;
}

static void owner_id(char out[OUTBOX_OWNER_MAX], int index)
{
    unsigned char b[8] = { 0 };
    char host[16] = "host";

    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        memset(b, 0, sizeof(b));
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '-';
    snprintf(out, OUTBOX_OWNER_MAX, "%.15s-r%u-%02x%02x%02x%02x%02x%02x%02x%02x", host,
             (unsigned)(unsigned char)index, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
}

struct refund_relay *refund_relay_start(struct server *srv)
{
    int nrelays = (int)srv->shards.n;
    struct refund_relay *rr;
    pthread_condattr_t ca;
    int i;

    if ((rr = calloc(1, sizeof(*rr))) == NULL ||
        (rr->relays = calloc((size_t)nrelays, sizeof(*rr->relays))) == NULL) {
        free(rr);
        log_error("refund relay: out of memory", "%s", "");
        return NULL;
    }
    rr->srv = srv;
    metrics_set_gauge(srv->m, G_REFUND_ALERT_AGE_S, srv->cfg->refunds_unrefunded_alert_s);
    pthread_mutex_init(&rr->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rr->cv, &ca);
    pthread_condattr_destroy(&ca);
    for (i = 0; i < nrelays; i++) {
        struct rrelay *r = &rr->relays[i];

        r->rr = rr;
        r->sh = &srv->shards.s[i];
        owner_id(r->owner, i);
        if ((r->curl = curl_easy_init()) == NULL)
            goto fail;
        if (pthread_create(&r->thread, NULL, relay_main, r) != 0)
            goto fail;
        r->started = true;
        rr->nrelays = i + 1;
    }
    log_info("refund relay started", "shards=%zu", srv->shards.n);
    return rr;
fail:
    log_error("refund relay: cannot start", "worker=%d", i);
    if (rr->relays[i].curl != NULL && !rr->relays[i].started)
        rr->nrelays = i + 1;
    refund_relay_stop(rr);
    return NULL;
}

void refund_relay_stop(struct refund_relay *rr)
{
    int i;

    if (rr == NULL)
        return;
    pthread_mutex_lock(&rr->mu);
    rr->stop = true;
    pthread_cond_broadcast(&rr->cv);
    pthread_mutex_unlock(&rr->mu);
    for (i = 0; i < rr->nrelays; i++) {
        if (rr->relays[i].started)
            pthread_join(rr->relays[i].thread, NULL);
        if (rr->relays[i].curl != NULL)
            curl_easy_cleanup(rr->relays[i].curl);
    }
    pthread_cond_destroy(&rr->cv);
    pthread_mutex_destroy(&rr->mu);
    free(rr->relays);
    free(rr);
}
