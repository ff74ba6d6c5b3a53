/* delivery.c - the outbox relay threads and the one libcurl call they make.
 * The fan-out, claim, lease and state changes are outbox.c's; the wire
 * format of an event, the signatures and the retry policy are here. */
#include "delivery.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "config.h"
#include "db.h"
#include "keyring.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "outbox.h"
#include "server.h"
#include "signature.h"
#include "stdwebhook.h"

#define DELIVERY_HEADER_MAX 200 /* one signature header line, NUL included */
#define DELIVERY_LEASE_PAD_S 2  /* lease beyond the batch's worst case */
#define DELIVERY_DB_WAIT_MS 1000
#define DELIVERY_FANOUT_BATCH 200    /* events one fan-out transaction hands out */
#define DELIVERY_SETTLE_BATCH 1000   /* events one settle statement closes */
#define DELIVERY_SETTLE_EVERY_MS 250 /* settle passes at most this often */
/* relays at most: every endpoint, webhook.workers (<= 16) each, per shard */
#define DELIVERY_RELAYS_MAX ((size_t)WEBHOOKS_MAX * 16)
#define DELIVERY_POLL_SLICE_MS 100 /* longest wait in a batch before looking at stop again */

struct slot;

enum attempt_result {
    ATTEMPT_OK,
    ATTEMPT_HTTP,
    ATTEMPT_TIMEOUT,
    ATTEMPT_CONNECT
};

/* A relay delivers one endpoint's events from one shard: a failing
 * endpoint holds back only its own relays, and a shard whose database
 * fails only its own. */
struct relay {
    struct delivery *d;
    const struct shard *sh;
    char endpoint[WEBHOOK_NAME_MAX + 1];
    pthread_t thread;
    bool started;
    atomic_bool quit; /* the endpoint was removed: finish and leave */
    atomic_bool done; /* the thread has left: join it */
    int failures;     /* claims failed in a row on sh */
    char owner[OUTBOX_OWNER_MAX];
    CURLM *multi;       /* the batch's requests, and the connections kept alive */
    struct slot *slots; /* webhook.inflight of them */
    size_t nslots;
    int64_t next_ns; /* the rate limit's next slot, monotonic nanoseconds; 0: none yet */
};

/* Per shard: hands new events to the endpoints, settles events done
 * everywhere, and keeps one set of relays per configured endpoint. */
struct shard_loop {
    struct delivery *d;
    const struct shard *sh;
    pthread_t thread;
    bool started;
    int failures;
    long long settled_ms; /* the last settle pass that left nothing over (monotonic) */
    struct relay *relays[DELIVERY_RELAYS_MAX];
};

struct delivery {
    struct server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    size_t nloops;
    struct shard_loop *loops;
    atomic_int serial; /* relays started, for owner ids */
};

int64_t delivery_backoff_ms(int attempt, int64_t base_ms, int64_t max_ms, uint32_t rnd)
{
    int64_t d = base_ms;
    int i;

    if (attempt < 1)
        attempt = 1;
    for (i = 1; i < attempt && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    if (d < 2)
        return d;
    return d / 2 + (int64_t)(rnd % (uint64_t)(d - d / 2 + 1));
}

void delivery_event_id(const struct outbox_event *ev, char *out, size_t outsz)
{
    if (ev->subject[0] == '\0')
        snprintf(out, outsz, "%s:%s", ev->order_no, ev->event_type);
    else
        snprintf(out, outsz, "%s:%s:%s", ev->order_no, ev->event_type, ev->subject);
}

char *delivery_event_body(const struct outbox_event *ev, size_t *len)
{
    char id[sizeof(ev->order_no) + sizeof(ev->event_type) + sizeof(ev->subject) + 2];
    cJSON *o = cJSON_CreateObject(), *data = cJSON_Parse(ev->payload);
    char *text = NULL, *out = NULL;

    *len = 0;
    if (o == NULL || data == NULL || !cJSON_IsObject(data))
        goto out;
    delivery_event_id(ev, id, sizeof(id));
    if (cJSON_AddStringToObject(o, "id", id) == NULL ||
        cJSON_AddStringToObject(o, "type", ev->event_type) == NULL ||
        cJSON_AddStringToObject(o, "order_no", ev->order_no) == NULL ||
        cJSON_AddStringToObject(o, "created_at", ev->created_at) == NULL)
        goto out;
    /* The order's currency, which the writer of a payment event did not
     * need to read (it never changes once the order is made). */
    if (ev->currency[0] != '\0' && cJSON_GetObjectItemCaseSensitive(data, "amount") != NULL &&
        cJSON_GetObjectItemCaseSensitive(data, "currency") == NULL &&
        cJSON_AddStringToObject(data, "currency", ev->currency) == NULL)
        goto out;
    if (!cJSON_AddItemToObject(o, "data", data))
        goto out;
    data = NULL; /* owned by o now */
    if ((text = cJSON_PrintUnformatted(o)) == NULL)
        goto out;
    if ((out = strdup(text)) != NULL)
        *len = strlen(out);
out:
    cJSON_free(text);
    cJSON_Delete(data);
    cJSON_Delete(o);
    return out;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    (void)ptr;
    (void)userdata;
    return size * nmemb;
}

/* The endpoints of the current configuration: webhook.url's (its url from
 * the running configuration, its secrets from the snapshot) and the
 * "webhooks" array's. Returns how many are in out. */
static size_t endpoints_now(const struct server *srv, const struct keyring *kr,
                            struct webhook_endpoint_cfg out[WEBHOOKS_MAX])
{
    size_t n = 0;

    if (cfg_default_webhook(srv->cfg, &kr->cfg, &out[0]))
        n = 1;
    for (size_t i = 0; i < kr->cfg.webhooks.n && n < WEBHOOKS_MAX; i++)
        out[n++] = kr->cfg.webhooks.ep[i];
    return n;
}

size_t delivery_endpoints(const struct server *srv, struct webhook_endpoint_cfg out[WEBHOOKS_MAX])
{
    struct keyring *kr = keyslot_acquire(srv->keys);
    size_t n = endpoints_now(srv, kr, out);

    keyring_release(kr);
    return n;
}

/* The current configuration of endpoint name into *ep; false when the
 * endpoint is no longer configured. */
static bool endpoint_get(struct server *srv, const char *name, struct webhook_endpoint_cfg *ep)
{
    struct webhook_endpoint_cfg *all = malloc(WEBHOOKS_MAX * sizeof(*all));
    struct keyring *kr = keyslot_acquire(srv->keys);
    size_t n = all != NULL ? endpoints_now(srv, kr, all) : 0;
    bool found = false;

    for (size_t i = 0; i < n && !found; i++)
        if (strcmp(all[i].name, name) == 0) {
            *ep = all[i];
            found = true;
        }
    keyring_release(kr);
    if (all != NULL)
        OPENSSL_cleanse(all, WEBHOOKS_MAX * sizeof(*all));
    free(all);
    return found;
}

/* The signature headers of one attempt, with the endpoint's secrets as the
 * current snapshot has them (a reload may have rotated them since the last
 * attempt): Standard Webhooks' webhook-id, webhook-timestamp and
 * webhook-signature, the latter with a second signature while a previous
 * secret is within its stated overlap; or the legacy X-Timestamp and
 * X-Signature. Returns 0, or -1 when a secret does not sign. */
static int sign_event(const struct webhook_endpoint_cfg *ep, const char *id, const char *body,
                      size_t len, char h[3][DELIVERY_HEADER_MAX])
{
    time_t now = time(NULL);
    char ts[24], mac[SIG_HEX_LEN + 1], sig[2][SWH_SIG_LEN + 1] = { "", "" };
    unsigned char key[SWH_KEY_MAX];
    size_t keylen = 0;
    int rc = -1;

    snprintf(ts, sizeof(ts), "%lld", (long long)now);
    if (ep->format == WEBHOOK_LEGACY) {
        if (sig_compute(ep->secret, ts, body, len, mac) == 0) {
            snprintf(h[0], DELIVERY_HEADER_MAX, "X-Timestamp: %s", ts);
            snprintf(h[1], DELIVERY_HEADER_MAX, "X-Signature: %s", mac);
            h[2][0] = '\0';
            rc = 0;
        }
        return rc;
    }
    if (swh_secret_decode(ep->secret, key, &keylen) != 0 ||
        swh_sign(key, keylen, id, ts, body, len, sig[0]) != 0)
        goto out;
    if (ep->previous_secret[0] != '\0' && (long long)now < ep->previous_until_s &&
        (swh_secret_decode(ep->previous_secret, key, &keylen) != 0 ||
         swh_sign(key, keylen, id, ts, body, len, sig[1]) != 0))
        goto out;
    snprintf(h[0], DELIVERY_HEADER_MAX, "webhook-id: %s", id);
    snprintf(h[1], DELIVERY_HEADER_MAX, "webhook-timestamp: %s", ts);
    snprintf(h[2], DELIVERY_HEADER_MAX, "webhook-signature: %s%s%s", sig[0],
             sig[1][0] != '\0' ? " " : "", sig[1]);
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

/* One request in flight: its easy handle (kept with its connection from
 * batch to batch), what it sends, and the event of the batch it carries. */
struct slot {
    CURL *curl;
    struct curl_slist *hdr;
    char *body;
    size_t idx;
    bool busy;
};

static void slot_clear(struct slot *s)
{
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(s->hdr);
    free(s->body);
    s->hdr = NULL;
    s->body = NULL;
    s->busy = false;
}

/* Sets s up to POST ev to ep. ATTEMPT_OK when the request is ready to
 * start; else the failure of an attempt that never started, with its
 * reason in err. */
static enum attempt_result slot_prepare(struct slot *s, const struct webhook_endpoint_cfg *ep,
                                        const struct outbox_event *ev, char *err, size_t errsz)
{
    char id[sizeof(ev->order_no) + sizeof(ev->event_type) + sizeof(ev->subject) + 2];
    char sig[3][DELIVERY_HEADER_MAX], h_key[200], h_type[64];
    struct curl_slist *t;
    size_t len = 0;

    err[0] = '\0';
    s->hdr = NULL;
    if ((s->body = delivery_event_body(ev, &len)) == NULL) {
        snprintf(err, errsz, "event payload is not a JSON object");
        return ATTEMPT_HTTP; /* permanent: retries go dead, visibly */
    }
    delivery_event_id(ev, id, sizeof(id));
    if (sign_event(ep, id, s->body, len, sig) != 0) {
        snprintf(err, errsz, "cannot sign the event");
        slot_clear(s);
        return ATTEMPT_CONNECT;
    }
    snprintf(h_key, sizeof(h_key), "Idempotency-Key: %s", id);
    snprintf(h_type, sizeof(h_type), "X-Event-Type: %s", ev->event_type);
    const char *lines[] = {
        "Content-Type: application/json", "Expect:", sig[0], sig[1], sig[2], h_key, h_type
    };
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
        if (lines[i][0] == '\0')
            continue;
        if ((t = curl_slist_append(s->hdr, lines[i])) == NULL) {
            snprintf(err, errsz, "out of memory");
            slot_clear(s);
            return ATTEMPT_CONNECT;
        }
        s->hdr = t;
    }
    curl_easy_setopt(s->curl, CURLOPT_URL, ep->url);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, s->hdr);
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, s->body);
    curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)ep->timeout_ms);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ep->timeout_ms);
    curl_easy_setopt(s->curl, CURLOPT_PRIVATE, s);
    return ATTEMPT_OK;
}

/* The outcome of s's finished request; the reason of a failure goes to err. */
static enum attempt_result slot_finish(struct slot *s, CURLcode cc,
                                       const struct webhook_endpoint_cfg *ep, char *err,
                                       size_t errsz)
{
    enum attempt_result res;
    long code = 0;

    if (cc == CURLE_OPERATION_TIMEDOUT) {
        res = ATTEMPT_TIMEOUT;
        snprintf(err, errsz, "timed out after %d ms", ep->timeout_ms);
    } else if (cc != CURLE_OK) {
        res = ATTEMPT_CONNECT;
        snprintf(err, errsz, "%s", curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
        res = code >= 200 && code < 300 ? ATTEMPT_OK : ATTEMPT_HTTP;
        if (res != ATTEMPT_OK)
            snprintf(err, errsz, "webhook answered %ld", code);
    }
    slot_clear(s);
    return res;
}

static uint32_t random_u32(void)
{
    uint32_t v = 0;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        v = (uint32_t)time(NULL);
    return v;
}

/* Records a batch's attempts in one transaction, then counts and logs
 * them; a failure to record leaves the leases to run out, so the events
 * are attempted again (at least once, never lost). */
static void record(struct relay *r, const struct webhook_endpoint_cfg *ep,
                   const struct outbox_event *evs, struct outbox_attempt *a,
                   const enum attempt_result *res, size_t n)
{
    struct server *srv = r->d->srv;
    struct db_conn *c = shard_acquire(r->sh, DELIVERY_DB_WAIT_MS);
    enum db_status st;

    if (n == 0)
        goto out;
    if (c == NULL) {
        log_warn("outbox: no database connection to record attempts", "endpoint=%s events=%zu",
                 ep->name, n);
        return;
    }
    if ((st = outbox_record(c, ep->name, r->owner, a, n)) != DB_OK) {
        log_warn("outbox: cannot record attempts", "endpoint=%s events=%zu status=%s error=\"%s\"",
                 ep->name, n, db_status_str(st), db_errstr(c));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct outbox_event *ev = &evs[i];

        if (a[i].ok && a[i].held) {
            metrics_inc(srv->m, M_OUTBOX_DELIVERED);
            metrics_endpoint(srv->m, ep->name, ME_DELIVERED);
        } else if (a[i].ok) {
            log_warn("event acknowledged after its lease ran out; it is sent again",
                     "endpoint=%s event_id=%s:%s attempt=%d", ep->name, ev->order_no,
                     ev->event_type, ev->attempts + 1);
        } else {
            metrics_inc(srv->m, res[i] == ATTEMPT_TIMEOUT ? M_OUTBOX_TIMEOUTS : M_OUTBOX_FAILURES);
            metrics_endpoint(srv->m, ep->name, res[i] == ATTEMPT_TIMEOUT ? ME_TIMEOUT : ME_FAILED);
            if (a[i].dead) {
                metrics_inc(srv->m, M_OUTBOX_DEAD);
                metrics_endpoint(srv->m, ep->name, ME_DEAD);
                log_alert("OUTBOX_DEAD", "endpoint=%s event_id=%s:%s attempts=%d error=\"%s\"",
                          ep->name, ev->order_no, ev->event_type, ev->attempts + 1, a[i].error);
            } else {
                log_warn("event delivery failed",
                         "endpoint=%s event_id=%s:%s attempt=%d retry_in_ms=%lld error=\"%s\"",
                         ep->name, ev->order_no, ev->event_type, ev->attempts + 1,
                         (long long)a[i].delay_ms, a[i].error);
            }
        }
    }
out:
    if (c != NULL)
        shard_release(r->sh, c);
}

static bool stopping(struct delivery *d)
{
    bool s;

    pthread_mutex_lock(&d->mu);
    s = d->stop;
    pthread_mutex_unlock(&d->mu);
    return s;
}

static bool relay_stopping(struct relay *r)
{
    return atomic_load(&r->quit) || stopping(r->d);
}

/* Sleeps until the monotonic time until, or until stopped. */
static void idle_until(struct delivery *d, const struct timespec *until)
{
    pthread_mutex_lock(&d->mu);
    while (!d->stop)
        if (pthread_cond_timedwait(&d->cv, &d->mu, until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&d->mu);
}

/* Sleeps up to ms, or until stopped. */
static void idle(struct delivery *d, int ms)
{
    struct timespec until = monotime_after_ms(ms);

    idle_until(d, &until);
}

/* The rate limit: rate_per_s events a second for the endpoint, shared
 * evenly by its relays (webhook.workers per shard). 0 when this relay may
 * start a request now (its slot is then taken), else the milliseconds
 * until its next slot; a relay idle for more than a second saves up no
 * slots. */
static int64_t pace_wait_ms(struct relay *r, const struct webhook_endpoint_cfg *ep)
{
    struct delivery *d = r->d;
    int64_t share = (int64_t)d->srv->cfg->webhook_workers * (int64_t)d->nloops, now;

    if (ep->rate_per_s <= 0)
        return 0;
    now = monotime_us() * 1000;
    if (r->next_ns == 0 || now - r->next_ns > 1000000000LL)
        r->next_ns = now;
    if (r->next_ns > now)
        return (r->next_ns - now + 999999) / 1000000;
    r->next_ns += 1000000000LL * share / ep->rate_per_s;
    return 0;
}

/* A failed claim or fan-out: counted for the shard, logged when the shard
 * starts failing (not on every poll while it stays down). */
static void claim_failed(struct delivery *d, const struct shard *sh, int *failures,
                         enum db_status st, const char *err)
{
    metrics_shard_inc(d->srv->m, sh->index, MS_OUTBOX_CLAIM_FAILURES);
    if ((*failures)++ == 0)
        log_warn("outbox: claim failed", "shard=%s status=%s error=\"%s\"", sh->label,
                 db_status_str(st), err);
}

static void claims_work(const struct shard *sh, int *failures)
{
    if (*failures > 0)
        log_info("outbox: claims work again", "shard=%s failed_claims=%d", sh->label, *failures);
    *failures = 0;
}

/* Claims a batch for the relay's endpoint; returns how many events are in
 * evs, or -1 when the shard's database failed the claim. */
static long claim(struct relay *r, const struct webhook_endpoint_cfg *ep, struct outbox_event *evs,
                  size_t max)
{
    struct delivery *d = r->d;
    int64_t share = (int64_t)d->srv->cfg->webhook_workers * (int64_t)d->nloops;
    int64_t gap_ms = ep->rate_per_s > 0 ? (1000 * share + ep->rate_per_s - 1) / ep->rate_per_s : 0;
    /* Long enough for every attempt of the batch to time out, paced by
     * the rate limit, so a live relay does not lose its claim to another;
     * a dead relay's claims come back this long after it died. */
    int lease_s =
        (int)(((int64_t)max * (ep->timeout_ms + gap_ms) + 999) / 1000) + DELIVERY_LEASE_PAD_S;
    struct db_conn *c = shard_acquire(r->sh, DELIVERY_DB_WAIT_MS);
    enum db_status st;
    size_t n = 0;

    if (c == NULL) {
        claim_failed(d, r->sh, &r->failures, DB_UNAVAILABLE, "no free connection");
        return -1;
    }
    st = outbox_claim(c, ep->name, r->owner, lease_s, evs, max, &n);
    if (st != DB_OK) {
        claim_failed(d, r->sh, &r->failures, st, db_errstr(c));
        shard_release(r->sh, c);
        return -1;
    }
    shard_release(r->sh, c);
    claims_work(r->sh, &r->failures);
    return (long)n;
}

/* Hands back the claims of events not attempted (graceful stop). */
static void hand_back(struct relay *r)
{
    struct db_conn *c = shard_acquire(r->sh, DELIVERY_DB_WAIT_MS);

    if (c == NULL)
        return; /* the leases run out by themselves */
    if (outbox_release(c, r->owner) != DB_OK)
        log_warn("outbox: cannot hand back claims", "shard=%s error=\"%s\"", r->sh->label,
                 db_errstr(c));
    shard_release(r->sh, c);
}

int delivery_down_wait_ms(int poll_ms, int failures)
{
    int64_t w = poll_ms;

    for (int i = 1; i < failures && w < DELIVERY_DOWN_WAIT_MAX_MS; i++)
        w *= 2;
    return w > DELIVERY_DOWN_WAIT_MAX_MS ? DELIVERY_DOWN_WAIT_MAX_MS : (int)w;
}

/* Whether a request of order order_no is in flight. A claim never hands
 * out two events of one order at once (an order's next event waits for the
 * delivery of the one before); this keeps it so within the batch too. */
static bool order_in_flight(const struct relay *r, const struct outbox_event *evs,
                            const char *order_no)
{
    for (size_t k = 0; k < r->nslots; k++)
        if (r->slots[k].busy && strcmp(evs[r->slots[k].idx].order_no, order_no) == 0)
            return true;
    return false;
}

/* Starts the batch's next request on a free slot; false when none is free
 * or the attempt failed before it started (res[idx] says which). */
static bool start_one(struct relay *r, const struct webhook_endpoint_cfg *ep,
                      const struct outbox_event *evs, size_t idx, enum attempt_result *res,
                      char (*errs)[OUTBOX_ERROR_MAX])
{
    struct slot *s = NULL;

    for (size_t k = 0; k < r->nslots && s == NULL; k++)
        if (!r->slots[k].busy)
            s = &r->slots[k];
    if (s == NULL)
        return false;
    if ((res[idx] = slot_prepare(s, ep, &evs[idx], errs[idx], sizeof(errs[idx]))) != ATTEMPT_OK)
        return false;
    s->idx = idx;
    s->busy = true;
    if (curl_multi_add_handle(r->multi, s->curl) != CURLM_OK) {
        slot_clear(s);
        res[idx] = ATTEMPT_CONNECT;
        snprintf(errs[idx], sizeof(errs[idx]), "cannot start the request");
        return false;
    }
    return true;
}

/* POSTs the batch's events in order, up to webhook.inflight at once and
 * paced by the endpoint's rate limit, into res and errs. A relay told to
 * stop starts nothing more and waits for the requests in flight. Returns
 * how many events, from the first, were attempted. */
static size_t deliver_batch(struct relay *r, const struct webhook_endpoint_cfg *ep,
                            const struct outbox_event *evs, size_t n, enum attempt_result *res,
                            char (*errs)[OUTBOX_ERROR_MAX])
{
    size_t next = 0, active = 0;

    for (;;) {
        int64_t wait_ms = DELIVERY_POLL_SLICE_MS, w;
        bool finished = false;
        int running = 0;
        CURLMsg *msg;

        while (next < n && active < r->nslots && !relay_stopping(r) &&
               !order_in_flight(r, evs, evs[next].order_no)) {
            if ((w = pace_wait_ms(r, ep)) > 0) {
                wait_ms = w < wait_ms ? w : wait_ms;
                break;
            }
            if (start_one(r, ep, evs, next, res, errs))
                active++;
            next++;
        }
        if (active == 0 && (next == n || relay_stopping(r)))
            return next;
        curl_multi_perform(r->multi, &running);
        while ((msg = curl_multi_info_read(r->multi, &running)) != NULL) {
            struct slot *s = NULL;

            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_multi_remove_handle(r->multi, msg->easy_handle);
            res[s->idx] = slot_finish(s, msg->data.result, ep, errs[s->idx], sizeof(errs[s->idx]));
            active--;
            finished = true;
        }
        if (!finished && active > 0)
            curl_multi_poll(r->multi, NULL, 0, (int)wait_ms, NULL);
        else if (!finished)
            idle(r->d, (int)wait_ms); /* paced, nothing in flight */
    }
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct delivery *d = r->d;
    const struct config *cfg = d->srv->cfg;
    size_t batch = (size_t)cfg->webhook_batch;
    struct outbox_event *evs = calloc(batch, sizeof(*evs));
    struct outbox_attempt *att = calloc(batch, sizeof(*att));
    enum attempt_result *res = calloc(batch, sizeof(*res));
    char(*errs)[OUTBOX_ERROR_MAX] = calloc(batch, sizeof(*errs));
    struct webhook_endpoint_cfg *ep = malloc(sizeof(*ep));

    if (evs == NULL || att == NULL || res == NULL || errs == NULL || ep == NULL) {
        log_error("outbox relay: out of memory", "owner=%s", r->owner);
        goto out;
    }
    while (!relay_stopping(r) && endpoint_get(d->srv, r->endpoint, ep)) {
        long got;
        size_t n, i, attempted;

        if (ep->disabled) {
            idle(d, cfg->webhook_poll_ms);
            continue;
        }
        got = claim(r, ep, evs, batch);
        n = got > 0 ? (size_t)got : 0;
        attempted = deliver_batch(r, ep, evs, n, res, errs);
        for (i = 0; i < attempted; i++) {
            att[i] = (struct outbox_attempt){
                .id = evs[i].id,
                .ok = res[i] == ATTEMPT_OK,
                .error = errs[i],
                .delay_ms = delivery_backoff_ms(evs[i].attempts + 1, ep->backoff_base_ms,
                                                ep->backoff_max_ms, random_u32()),
                .max_attempts = ep->max_attempts,
                .attempts_before = evs[i].attempts,
            };
        }
        record(r, ep, evs, att, res, i);
        if (i < n)
            hand_back(r);
        if (got < 0)
            idle(d, delivery_down_wait_ms(cfg->webhook_poll_ms, r->failures));
        else if (n < batch)
            idle(d, cfg->webhook_poll_ms);
    }
out:
    if (ep != NULL)
        OPENSSL_cleanse(ep, sizeof(*ep));
    free(ep);
    free(errs);
    free(res);
    free(att);
    free(evs);
    atomic_store(&r->done, true);
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
    /* at most 15 + 1 + 3 + 1 + 16 bytes: fits OUTBOX_OWNER_MAX */
    snprintf(out, OUTBOX_OWNER_MAX, "%.15s-%u-%02x%02x%02x%02x%02x%02x%02x%02x", host,
             (unsigned)(unsigned char)index, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
}

static void relay_free(struct relay *r)
{
    if (r == NULL)
        return;
    if (r->started)
        pthread_join(r->thread, NULL);
    for (size_t k = 0; k < r->nslots; k++)
        if (r->slots[k].curl != NULL)
            curl_easy_cleanup(r->slots[k].curl);
    free(r->slots);
    if (r->multi != NULL)
        curl_multi_cleanup(r->multi);
    free(r);
}

static struct relay *relay_start(struct shard_loop *l, const char *endpoint)
{
    struct relay *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->d = l->d;
    r->sh = l->sh;
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", endpoint);
    atomic_init(&r->quit, false);
    atomic_init(&r->done, false);
    owner_id(r->owner, atomic_fetch_add(&l->d->serial, 1));
    r->nslots = (size_t)l->d->srv->cfg->webhook_inflight;
    if ((r->multi = curl_multi_init()) == NULL ||
        (r->slots = calloc(r->nslots, sizeof(*r->slots))) == NULL) {
        relay_free(r);
        return NULL;
    }
    curl_multi_setopt(r->multi, CURLMOPT_MAXCONNECTS, (long)r->nslots);
    for (size_t k = 0; k < r->nslots; k++) {
        CURL *e = curl_easy_init();

        if ((r->slots[k].curl = e) == NULL) {
            relay_free(r);
            return NULL;
        }
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    }
    if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
        relay_free(r);
        return NULL;
    }
    r->started = true;
    return r;
}

/* Reports an endpoint that left the configuration while deliveries wait
 * for it: they stay (and go out if it comes back), nothing is dropped. */
static void report_removed(struct shard_loop *l, const char *endpoint)
{
    struct db_conn *c = shard_acquire(l->sh, DELIVERY_DB_WAIT_MS);
    int64_t waiting = -1;

    if (c != NULL && outbox_waiting(c, endpoint, &waiting) != DB_OK)
        waiting = -1;
    if (c != NULL)
        shard_release(l->sh, c);
    if (waiting != 0)
        log_warn("webhook endpoint removed while events wait for it; they are kept and go out "
                 "if it is configured again",
                 "endpoint=%s shard=%s waiting=%lld", endpoint, l->sh->label, (long long)waiting);
    else
        log_info("webhook endpoint removed", "endpoint=%s shard=%s", endpoint, l->sh->label);
}

/* Matches the relays to the endpoints of the current configuration: new
 * endpoints get webhook.workers relays, those removed lose theirs (joined
 * once they finished their attempt in flight). */
static void reconcile_relays(struct shard_loop *l, const struct webhook_endpoint_cfg *eps,
                             size_t neps)
{
    int workers = l->d->srv->cfg->webhook_workers;
    char removed[WEBHOOKS_MAX][WEBHOOK_NAME_MAX + 1];
    size_t nremoved = 0;

    for (size_t i = 0; i < DELIVERY_RELAYS_MAX; i++) {
        struct relay *r = l->relays[i];
        bool wanted = false, told = false;

        if (r == NULL)
            continue;
        for (size_t e = 0; e < neps && !wanted; e++)
            wanted = strcmp(eps[e].name, r->endpoint) == 0;
        if (!wanted && !atomic_load(&r->quit)) {
            atomic_store(&r->quit, true);
            for (size_t k = 0; k < nremoved && !told; k++)
                told = strcmp(removed[k], r->endpoint) == 0;
            if (!told && nremoved < WEBHOOKS_MAX) {
                snprintf(removed[nremoved++], sizeof(removed[0]), "%s", r->endpoint);
                report_removed(l, r->endpoint);
            }
        }
        if (atomic_load(&r->done)) {
            relay_free(r);
            l->relays[i] = NULL;
        }
    }
    for (size_t e = 0; e < neps; e++) {
        size_t have = 0, slot;

        for (size_t i = 0; i < DELIVERY_RELAYS_MAX; i++)
            if (l->relays[i] != NULL && !atomic_load(&l->relays[i]->quit) &&
                strcmp(l->relays[i]->endpoint, eps[e].name) == 0)
                have++;
        for (; have < (size_t)workers; have++) {
            for (slot = 0; slot < DELIVERY_RELAYS_MAX && l->relays[slot] != NULL; slot++)
                ;
            if (slot == DELIVERY_RELAYS_MAX ||
                (l->relays[slot] = relay_start(l, eps[e].name)) == NULL) {
                log_error("outbox relay: cannot start", "endpoint=%s shard=%s", eps[e].name,
                          l->sh->label);
                break;
            }
        }
    }
}

/* One pass of a shard: fan-out, then settle. The events handed out, or
 * -1 when the shard's database failed. */
static long shard_pass(struct shard_loop *l, const struct webhook_endpoint_cfg *eps, size_t neps)
{
    struct db_conn *c = shard_acquire(l->sh, DELIVERY_DB_WAIT_MS);
    enum db_status st;
    uint64_t settled = 0;
    size_t n = 0;

    if (c == NULL) {
        claim_failed(l->d, l->sh, &l->failures, DB_UNAVAILABLE, "no free connection");
        return -1;
    }
    bool settle = neps > 0 && monotime_ms() - l->settled_ms >= DELIVERY_SETTLE_EVERY_MS;

    if ((st = outbox_fanout(c, eps, neps, DELIVERY_FANOUT_BATCH, &n)) != DB_OK ||
        (settle && (st = outbox_settle(c, DELIVERY_SETTLE_BATCH, &settled)) != DB_OK)) {
        claim_failed(l->d, l->sh, &l->failures, st, db_errstr(c));
        shard_release(l->sh, c);
        return -1;
    }
    shard_release(l->sh, c);
    claims_work(l->sh, &l->failures);
    if (settle && settled < DELIVERY_SETTLE_BATCH)
        l->settled_ms = monotime_ms(); /* else more wait: settle again next pass */
    return (long)n;
}

static void *shard_main(void *arg)
{
    struct shard_loop *l = arg;
    struct delivery *d = l->d;
    struct webhook_endpoint_cfg *eps = malloc(WEBHOOKS_MAX * sizeof(*eps));

    if (eps == NULL) {
        log_error("outbox relay: out of memory", "shard=%s", l->sh->label);
        return NULL;
    }
    while (!stopping(d)) {
        struct keyring *kr = keyslot_acquire(d->srv->keys);
        size_t neps = endpoints_now(d->srv, kr, eps);
        long got;

        keyring_release(kr);
        reconcile_relays(l, eps, neps);
        got = shard_pass(l, eps, neps);
        OPENSSL_cleanse(eps, WEBHOOKS_MAX * sizeof(*eps));
        if (got < 0)
            idle(d, delivery_down_wait_ms(d->srv->cfg->webhook_poll_ms, l->failures));
        else if (got < DELIVERY_FANOUT_BATCH)
            idle(d, d->srv->cfg->webhook_poll_ms);
    }
    for (size_t i = 0; i < DELIVERY_RELAYS_MAX; i++) {
        relay_free(l->relays[i]); /* d->stop is set: each leaves after its attempt */
        l->relays[i] = NULL;
    }
    free(eps);
    return NULL;
}

struct delivery *delivery_start(struct server *srv)
{
    struct delivery *d;
    size_t i;

    if ((d = calloc(1, sizeof(*d))) == NULL ||
        (d->loops = calloc(srv->shards.n, sizeof(*d->loops))) == NULL) {
        free(d);
        log_error("outbox relay: out of memory", "%s", "");
        return NULL;
    }
    d->srv = srv;
    atomic_init(&d->serial, 0);
    pthread_mutex_init(&d->mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    for (i = 0; i < srv->shards.n; i++) {
        struct shard_loop *l = &d->loops[i];

        l->d = d;
        l->sh = &srv->shards.s[i];
        d->nloops = i + 1;
        if (pthread_create(&l->thread, NULL, shard_main, l) != 0)
            goto fail;
        l->started = true;
    }
    log_info("outbox relay started", "workers=%d shards=%zu", srv->cfg->webhook_workers,
             srv->shards.n);
    return d;
fail:
    log_error("outbox relay: cannot start", "shard=%zu", i);
    delivery_stop(d);
    return NULL;
}

void delivery_stop(struct delivery *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < d->nloops; i++)
        if (d->loops[i].started)
            pthread_join(d->loops[i].thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->loops);
    free(d);
}
