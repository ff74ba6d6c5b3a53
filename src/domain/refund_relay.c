/* refund_relay.c - the refund relay threads and the libcurl calls they
 * make. Per shard: one sweeper thread (refunds nobody asked for yet, the
 * age of the oldest double payment, refunds of a profile without a refund
 * API) and, per gateway profile with a refund_url, a lane: one claimer
 * thread and refunds.inflight sender threads, each with its own curl
 * handle. A gateway that hangs holds its own lane's senders and no other.
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
#define RELAY_LEASE_CALLS 4 /* calls one lease covers, each at the profile's refund_timeout_ms */
#define RELAY_ANSWER_MAX (64 * 1024) /* a longer answer is cut and reads as unknown */
#define RELAY_HEADERS_MAX 8192

struct lane;

/* One sender: a thread, its curl handle, the refund it works. */
struct sender {
    struct lane *l;
    pthread_t thread;
    bool started;
    CURL *curl;
};

/* The refunds of one gateway profile on one shard. Its queue holds the
 * refunds claimed and not yet taken by a sender; queued + busy never
 * exceeds nsenders, so a claimed refund is sent at once and its lease
 * only has to cover its own calls. Guarded by the relay's mu. */
struct lane {
    struct rrelay *r;
    char gateway[33];
    int lease_s;
    pthread_t claimer;
    bool started;
    pthread_cond_t cv; /* a refund queued, a sender free, or stop */
    struct refund *queue;
    size_t queued;
    int busy;
    int nsenders;
    struct sender *senders;
    int failures;
};

/* One shard's relay. */
struct rrelay {
    struct refund_relay *rr;
    const struct shard *sh;
    pthread_t thread; /* the sweeper */
    bool started;
    int failures;
    struct timespec next_sweep; /* CLOCK_MONOTONIC */
    atomic_llong oldest_s;      /* this shard's oldest unrefunded double payment */
    char owner[OUTBOX_OWNER_MAX];
    struct lane *lanes;
    int nlanes;
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
static void perform(CURL *curl, const struct gateway *gw, const struct gwr_refund *g, int query,
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
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_URL, call->url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)gw->cfg->refund_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)gw->cfg->refund_timeout_ms);
    if (strcmp(call->method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)call->body_len);
    } else {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    cc = curl_easy_perform(curl);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(a->message, sizeof(a->message), "no answer within %d ms",
                 gw->cfg->refund_timeout_ms);
    } else if (cc != CURLE_OK) {
        snprintf(a->message, sizeof(a->message), "%s", curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        gwr_read(gw, g, query, code, headers, body, b.len, a);
    }
out:
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
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

/* One call about rf under Idempotency-Key generation key_seq, built by
 * gwr_submit or gwr_query, sent and read. -1 when it could not be built
 * (the refund cannot be submitted as it is). */
static int call(CURL *curl, const struct gateway *gw, const struct refund *rf, int key_seq,
                int query, struct gwr_answer *a)
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
    g.key_seq = key_seq;
    rc = query ? gwr_query(gw, &g, c, a->message, sizeof(a->message))
               : gwr_submit(gw, &g, c, a->message, sizeof(a->message));
    if (rc == 0)
        perform(curl, gw, &g, query, c, a);
    free(c);
    return rc;
}

/* A refund of a profile that has no refund API (or no longer exists):
 * nothing can be sent; it waits, alerted, until the profile has one. */
static void no_gateway(struct rrelay *r, struct refund *rf)
{
    struct gwr_answer a;

    memset(&a, 0, sizeof(a));
    a.outcome = GWR_UNKNOWN;
    snprintf(a.message, sizeof(a.message), "gateway profile \"%s\" has no refund_url", rf->gateway);
    log_alert("REFUND_NO_GATEWAY", "refund_no=%s gateway=%s", rf->refund_no, rf->gateway);
    record(r, SIZE_MAX, rf, &a);
}

/* The calls of one refund, from the first query (or the submission of a
 * refund never sent) to an answer that decides, within the time its lease
 * leaves. A query that finds nothing is followed by the submission under
 * the same number. A submission whose Idempotency-Key the gateway keeps an
 * error under (Stripe's 500: a replayed one cannot be told from a fresh
 * one) is followed by a query, since that request may have made the refund
 * before it failed, and when the query finds none, by the submission under
 * the next key. Every attempt walks the keys again from the first (a spent
 * one answers its kept error at once) and goes at most one key further
 * than the attempt before could: attempt n uses keys 0..n-1, so a gateway
 * that fails every request spends one key per attempt, not all of them at
 * once. GWR_KEYS_MAX spent keys stop the walk with an alert. */
static void calls(CURL *curl, const struct gateway *gw, const struct refund *rf,
                  struct gwr_answer *a)
{
    int64_t budget_ms = (int64_t)(RELAY_LEASE_CALLS - 1) * gw->cfg->refund_timeout_ms;
    struct timespec until = monotime_after_ms(budget_ms), now;
    int query = rf->state != REFUND_REQUESTED, key_seq = 0;

    for (;;) {
        if (call(curl, gw, rf, key_seq, query, a) != 0) {
            a->outcome = GWR_FAILED;
            snprintf(a->code, sizeof(a->code), "not_submittable");
            return;
        }
        if (query && a->outcome == GWR_NOT_FOUND) {
            /* It never arrived: submit it now, under the same number. */
            log_info("refund unknown to its gateway, submitted again",
                     "refund_no=%s gateway=%s key_seq=%d", rf->refund_no, rf->gateway, key_seq);
            query = 0;
        } else if (!query && a->key_spent && key_seq + 1 < GWR_KEYS_MAX &&
                   key_seq + 1 <= rf->attempts) {
            key_seq++;
            query = 1;
        } else {
            if (!query && a->key_spent && key_seq + 1 >= GWR_KEYS_MAX)
                log_alert("REFUND_KEYS_SPENT", "refund_no=%s gateway=%s keys=%d", rf->refund_no,
                          rf->gateway, GWR_KEYS_MAX);
            return;
        }
        now = monotime_after_ms(gw->cfg->refund_timeout_ms);
        if (now.tv_sec > until.tv_sec ||
            (now.tv_sec == until.tv_sec && now.tv_nsec > until.tv_nsec)) {
            a->outcome = GWR_UNKNOWN;
            snprintf(a->message, sizeof(a->message),
                     "no time left in the lease for another call (key_seq %d)", key_seq);
            return;
        }
    }
}

/* Submits or asks about one claimed refund with curl, and records what
 * came of it. */
static void work(struct rrelay *r, CURL *curl, struct refund *rf)
{
    struct keyring *kr = keyslot_acquire(r->rr->srv->keys);
    const struct gateway *gw = gateways_find(kr->gw, rf->gateway);
    struct gwr_answer a;

    memset(&a, 0, sizeof(a));
    if (gw == NULL || gw->cfg->refund_url[0] == '\0') {
        no_gateway(r, rf);
        goto out;
    }
    if (!mark_submitting(r, gw->index, rf))
        goto out;
    calls(curl, gw, rf, &a);
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

static void claim_failed(const struct rrelay *r, int *failures, const char *what, enum db_status st,
                         const char *err)
{
    if ((*failures)++ == 0)
        log_warn("refund relay: claim failed", "shard=%s gateway=%s status=%s error=\"%s\"",
                 r->sh->label, what, db_status_str(st), err);
}

/* Claims up to max due refunds of of under a lease of lease_s; the count,
 * or -1 when the shard's database failed (*failures counts those in a
 * row, and the first is logged). */
static long claim(struct rrelay *r, const struct refund_claim_of *of, int lease_s, int *failures,
                  struct refund *out, size_t max)
{
    const char *what = of->gateway != NULL ? of->gateway : "(none)";
    struct db_conn *c;
    enum db_status st;
    size_t n = 0;

    if (shard_away(r)) {
        claim_failed(r, failures, what, DB_UNAVAILABLE, "the shard's prober finds it away");
        return -1;
    }
    if ((c = shard_acquire(r->sh, RELAY_DB_WAIT_MS)) == NULL) {
        claim_failed(r, failures, what, DB_UNAVAILABLE, "no free connection");
        return -1;
    }
    st = refund_claim(c, r->owner, lease_s, of, out, max, &n);
    if (st != DB_OK) {
        claim_failed(r, failures, what, st, db_errstr(c));
        shard_release(r->sh, c);
        return n > 0 ? (long)n : -1;
    }
    shard_release(r->sh, c);
    if (*failures > 0)
        log_info("refund relay: claims work again", "shard=%s gateway=%s failed_claims=%d",
                 r->sh->label, what, *failures);
    *failures = 0;
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

/* The refunds of profiles without a lane (no refund_url, or gone from
 * the configuration): claimed by the sweeper, each kept waiting with an
 * alert, never lost. */
static void orphans(struct rrelay *r)
{
    const char *names[REFUND_CLAIM_OTHERS_MAX];
    struct refund rfs[4];
    struct refund_claim_of of = { .gateway = NULL, .others = names };
    long got;

    for (int i = 0; i < r->nlanes && i < REFUND_CLAIM_OTHERS_MAX; i++)
        names[of.n_others++] = r->lanes[i].gateway;
    got = claim(r, &of, RELAY_LEASE_PAD_S, &r->failures, rfs, sizeof(rfs) / sizeof(rfs[0]));
    for (long i = 0; i < got; i++)
        no_gateway(r, &rfs[i]);
}

/* The shard's sweeper: the sweep every refunds.sweep_s, and the refunds
 * no lane takes, every refunds.poll_ms. */
static void *sweeper_main(void *arg)
{
    struct rrelay *r = arg;
    struct refund_relay *rr = r->rr;

    while (!stopping(rr)) {
        sweep(r);
        orphans(r);
        idle(rr, r->failures > 0 ? delivery_down_wait_ms(rr->srv->cfg->refunds_poll_ms, r->failures)
                                 : rr->srv->cfg->refunds_poll_ms);
    }
    return NULL;
}

/* Waits on the lane's cv until until (CLOCK_MONOTONIC) or stop; rr->mu
 * held. */
static void lane_wait_until(struct lane *l, const struct timespec *until)
{
    struct refund_relay *rr = l->r->rr;

    while (!rr->stop)
        if (pthread_cond_timedwait(&l->cv, &rr->mu, until) == ETIMEDOUT)
            break;
}

/* A lane's claimer: claims as many due refunds as it has idle senders (at
 * most refunds.batch at once) and queues them; waits while every sender is
 * busy, and refunds.poll_ms when nothing more is due. */
static void *claimer_main(void *arg)
{
    struct lane *l = arg;
    struct rrelay *r = l->r;
    struct refund_relay *rr = r->rr;
    const struct config *cfg = rr->srv->cfg;
    struct refund_claim_of of = { .gateway = l->gateway };
    struct refund *got = calloc((size_t)l->nsenders, sizeof(*got));

    if (got == NULL) {
        log_error("refund relay: out of memory", "gateway=%s", l->gateway);
        return NULL;
    }
    pthread_mutex_lock(&rr->mu);
    while (!rr->stop) {
        size_t idle_senders, want;
        struct timespec until;
        long n;

        if (l->busy + (int)l->queued >= l->nsenders) {
            pthread_cond_wait(&l->cv, &rr->mu);
            continue;
        }
        idle_senders = (size_t)(l->nsenders - l->busy) - l->queued;
        want =
            idle_senders < (size_t)cfg->refunds_batch ? idle_senders : (size_t)cfg->refunds_batch;
        pthread_mutex_unlock(&rr->mu);
        n = claim(r, &of, l->lease_s, &l->failures, got, want);
        pthread_mutex_lock(&rr->mu);
        for (long i = 0; i < n; i++)
            l->queue[l->queued++] = got[i];
        if (n > 0)
            pthread_cond_broadcast(&l->cv);
        if (n < 0)
            until = monotime_after_ms(delivery_down_wait_ms(cfg->refunds_poll_ms, l->failures));
        else if ((size_t)n < want)
            until = monotime_after_ms(cfg->refunds_poll_ms);
        else
            continue;
        lane_wait_until(l, &until);
    }
    pthread_mutex_unlock(&rr->mu);
    free(got);
    return NULL;
}

/* A lane's sender: takes a queued refund, works it, and says it is free
 * again. At stop it finishes the refund in hand; the queued ones are
 * handed back. */
static void *sender_main(void *arg)
{
    struct sender *s = arg;
    struct lane *l = s->l;
    struct refund_relay *rr = l->r->rr;
    struct refund rf;

    pthread_mutex_lock(&rr->mu);
    for (;;) {
        while (!rr->stop && l->queued == 0)
            pthread_cond_wait(&l->cv, &rr->mu);
        if (rr->stop)
            break;
        rf = l->queue[0];
        memmove(&l->queue[0], &l->queue[1], (l->queued - 1) * sizeof(l->queue[0]));
        l->queued--;
        l->busy++;
        pthread_mutex_unlock(&rr->mu);
        work(l->r, s->curl, &rf);
        pthread_mutex_lock(&rr->mu);
        l->busy--;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&rr->mu);
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

/* A condition variable whose timed waits take CLOCK_MONOTONIC times. */
static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* The lease of a refund of profile p: RELAY_LEASE_CALLS calls, each
 * bounded by its refund_timeout_ms (the calls stop one call short of it),
 * and a pad, so a live relay keeps its claims and a crashed one's run out
 * no later than they must. */
static int lease_of(const struct gateway_profile_cfg *p)
{
    return (int)((RELAY_LEASE_CALLS * (int64_t)p->refund_timeout_ms + 999) / 1000) +
           RELAY_LEASE_PAD_S;
}

/* Builds the lanes of r (one per profile with a refund_url) and starts
 * their threads. 0, or -1 (what started is stopped by refund_relay_stop). */
static int lanes_start(struct rrelay *r)
{
    const struct config *cfg = r->rr->srv->cfg;
    int n = 0;

    for (size_t i = 0; i < cfg->gateways.n; i++)
        n += cfg->gateways.profile[i].refund_url[0] != '\0';
    if (n == 0)
        return 0;
    if ((r->lanes = calloc((size_t)n, sizeof(*r->lanes))) == NULL)
        return -1;
    for (size_t i = 0; i < cfg->gateways.n; i++) {
        const struct gateway_profile_cfg *p = &cfg->gateways.profile[i];
        struct lane *l = &r->lanes[r->nlanes];

        if (p->refund_url[0] == '\0')
            continue;
        l->r = r;
        snprintf(l->gateway, sizeof(l->gateway), "%s", p->name);
        l->lease_s = lease_of(p);
        l->nsenders = cfg->refunds_inflight;
        cond_init_monotonic(&l->cv);
        r->nlanes++;
        if ((l->queue = calloc((size_t)l->nsenders, sizeof(*l->queue))) == NULL ||
            (l->senders = calloc((size_t)l->nsenders, sizeof(*l->senders))) == NULL)
            return -1;
        for (int k = 0; k < l->nsenders; k++) {
            struct sender *s = &l->senders[k];

            s->l = l;
            if ((s->curl = curl_easy_init()) == NULL ||
                pthread_create(&s->thread, NULL, sender_main, s) != 0)
                return -1;
            s->started = true;
        }
        if (pthread_create(&l->claimer, NULL, claimer_main, l) != 0)
            return -1;
        l->started = true;
    }
    return 0;
}

struct refund_relay *refund_relay_start(struct server *srv)
{
    int nrelays = (int)srv->shards.n;
    struct refund_relay *rr;
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
    cond_init_monotonic(&rr->cv);
    for (i = 0; i < nrelays; i++) {
        struct rrelay *r = &rr->relays[i];

        r->rr = rr;
        r->sh = &srv->shards.s[i];
        owner_id(r->owner, i);
        rr->nrelays = i + 1;
        if (lanes_start(r) != 0 || pthread_create(&r->thread, NULL, sweeper_main, r) != 0)
            goto fail;
        r->started = true;
    }
    log_info("refund relay started", "shards=%zu lanes=%d inflight=%d", srv->shards.n,
             rr->relays[0].nlanes, srv->cfg->refunds_inflight);
    return rr;
fail:
    log_error("refund relay: cannot start", "shard=%d", i);
    refund_relay_stop(rr);
    return NULL;
}

static void lanes_stop(struct rrelay *r)
{
    for (int i = 0; i < r->nlanes; i++) {
        struct lane *l = &r->lanes[i];

        if (l->started)
            pthread_join(l->claimer, NULL);
        for (int k = 0; l->senders != NULL && k < l->nsenders; k++) {
            if (l->senders[k].started)
                pthread_join(l->senders[k].thread, NULL);
            if (l->senders[k].curl != NULL)
                curl_easy_cleanup(l->senders[k].curl);
        }
        pthread_cond_destroy(&l->cv);
        free(l->senders);
        free(l->queue);
    }
    free(r->lanes);
}

void refund_relay_stop(struct refund_relay *rr)
{
    int i;

    if (rr == NULL)
        return;
    pthread_mutex_lock(&rr->mu);
    rr->stop = true;
    pthread_cond_broadcast(&rr->cv);
    for (i = 0; i < rr->nrelays; i++)
        for (int k = 0; k < rr->relays[i].nlanes; k++)
            pthread_cond_broadcast(&rr->relays[i].lanes[k].cv);
    pthread_mutex_unlock(&rr->mu);
    for (i = 0; i < rr->nrelays; i++) {
        struct rrelay *r = &rr->relays[i];

        if (r->started)
            pthread_join(r->thread, NULL);
        lanes_stop(r);
        hand_back(r); /* what was claimed and not sent */
    }
    pthread_cond_destroy(&rr->cv);
    pthread_mutex_destroy(&rr->mu);
    free(rr->relays);
    free(rr);
}
