/* delivery.c - the outbox relay threads and the one libcurl call they make.
 * The claim, lease and state changes are outbox.c's; the wire format of an
 * event and the retry policy are here. */
#include "delivery.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
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

#define DELIVERY_HEADER_MAX 160 /* one signature header line, NUL included */
#define DELIVERY_LEASE_PAD_S 2  /* lease beyond the batch's worst case */
#define DELIVERY_DB_WAIT_MS 1000
#define DELIVERY_DOWN_WAIT_MAX_MS 5000 /* longest wait before claiming again on a failing shard */

enum attempt_result {
    ATTEMPT_OK,
    ATTEMPT_HTTP,
    ATTEMPT_TIMEOUT,
    ATTEMPT_CONNECT
};

/* A relay serves one shard: a shard whose database fails holds back only
 * its own relays, never another shard's events. */
struct relay {
    struct delivery *d;
    const struct shard *sh;
    pthread_t thread;
    bool started;
    int failures; /* claims failed in a row on sh */
    char owner[OUTBOX_OWNER_MAX];
    CURL *curl;
};

struct delivery {
    struct server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    int nrelays;
    struct relay *relays;
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
    snprintf(out, outsz, "%s:%s", ev->order_no, ev->event_type);
}

char *delivery_event_body(const struct outbox_event *ev, size_t *len)
{
    char id[sizeof(ev->order_no) + sizeof(ev->event_type) + 1];
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

/* The signature headers of one attempt, signed with the secrets of the
 * current snapshot (a reload may have rotated them since the last
 * attempt): Standard Webhooks' webhook-id, webhook-timestamp and
 * webhook-signature, the latter with a second signature while a previous
 * secret is within its stated overlap; or the legacy X-Timestamp and
 * X-Signature. Returns 0, or -1 when a secret does not sign. */
static int sign_event(struct server *srv, const char *id, const char *body, size_t len,
                      char h[3][DELIVERY_HEADER_MAX])
{
    struct keyring *kr = keyslot_acquire(srv->keys);
    const struct config *k = &kr->cfg;
    time_t now = time(NULL);
    char ts[24], mac[SIG_HEX_LEN + 1], sig[2][SWH_SIG_LEN + 1] = { "", "" };
    unsigned char key[SWH_KEY_MAX];
    size_t keylen = 0;
    int rc = -1;

    snprintf(ts, sizeof(ts), "%lld", (long long)now);
    if (strcmp(srv->cfg->webhook_format, CFG_WEBHOOK_LEGACY) == 0) {
        if (sig_compute(k->webhook_secret, ts, body, len, mac) == 0) {
            snprintf(h[0], DELIVERY_HEADER_MAX, "X-Timestamp: %s", ts);
            snprintf(h[1], DELIVERY_HEADER_MAX, "X-Signature: %s", mac);
            h[2][0] = '\0';
            rc = 0;
        }
        goto out;
    }
    if (swh_secret_decode(k->webhook_secret, key, &keylen) != 0 ||
        swh_sign(key, keylen, id, ts, body, len, sig[0]) != 0)
        goto out;
    if (k->webhook_previous_secret[0] != '\0' && (long long)now < k->webhook_previous_until_s &&
        (swh_secret_decode(k->webhook_previous_secret, key, &keylen) != 0 ||
         swh_sign(key, keylen, id, ts, body, len, sig[1]) != 0))
        goto out;
    snprintf(h[0], DELIVERY_HEADER_MAX, "webhook-id: %s", id);
    snprintf(h[1], DELIVERY_HEADER_MAX, "webhook-timestamp: %s", ts);
    snprintf(h[2], DELIVERY_HEADER_MAX, "webhook-signature: %s%s%s", sig[0],
             sig[1][0] != '\0' ? " " : "", sig[1]);
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof(key));
    keyring_release(kr);
    return rc;
}

/* POSTs one event. The reason of a failure goes to err. */
static enum attempt_result post_event(struct relay *r, const struct outbox_event *ev, char *err,
                                      size_t errsz)
{
    const struct config *cfg = r->d->srv->cfg;
    char id[sizeof(ev->order_no) + sizeof(ev->event_type) + 1];
    char sig[3][DELIVERY_HEADER_MAX], h_key[160], h_type[64];
    struct curl_slist *hdr = NULL, *t;
    enum attempt_result res = ATTEMPT_CONNECT;
    size_t len = 0;
    long code = 0;
    char *body = delivery_event_body(ev, &len);
    CURLcode cc;

    err[0] = '\0';
    if (body == NULL) {
        snprintf(err, errsz, "event payload is not a JSON object");
        return ATTEMPT_HTTP; /* permanent: retries go dead, visibly */
    }
    delivery_event_id(ev, id, sizeof(id));
    if (sign_event(r->d->srv, id, body, len, sig) != 0) {
        snprintf(err, errsz, "cannot sign the event");
        free(body);
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
        if ((t = curl_slist_append(hdr, lines[i])) == NULL) {
            snprintf(err, errsz, "out of memory");
            goto out;
        }
        hdr = t;
    }
    curl_easy_setopt(r->curl, CURLOPT_URL, cfg->webhook_url);
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, (long)cfg->webhook_timeout_ms);
    curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->webhook_timeout_ms);
    cc = curl_easy_perform(r->curl);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        res = ATTEMPT_TIMEOUT;
        snprintf(err, errsz, "timed out after %d ms", cfg->webhook_timeout_ms);
    } else if (cc != CURLE_OK) {
        res = ATTEMPT_CONNECT;
        snprintf(err, errsz, "%s", curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
        res = code >= 200 && code < 300 ? ATTEMPT_OK : ATTEMPT_HTTP;
        if (res != ATTEMPT_OK)
            snprintf(err, errsz, "webhook answered %ld", code);
    }
out:
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    free(body);
    return res;
}

static uint32_t random_u32(void)
{
    uint32_t v = 0;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        v = (uint32_t)time(NULL);
    return v;
}

/* Records one attempt's result; a failure to record leaves the lease to
 * run out, so the event is attempted again (at least once, never lost). */
static void record(struct relay *r, const struct outbox_event *ev, enum attempt_result res,
                   const char *err)
{
    struct server *srv = r->d->srv;
    const struct config *cfg = srv->cfg;
    struct db_conn *c = shard_acquire(r->sh, DELIVERY_DB_WAIT_MS);
    enum db_status st;
    bool dead = false;

    if (c == NULL) {
        log_warn("outbox: no database connection to record an attempt", "event_id=%s:%s",
                 ev->order_no, ev->event_type);
        return;
    }
    if (res == ATTEMPT_OK) {
        bool held = false;

        st = outbox_mark_delivered(c, ev->id, r->owner, &held);
        if (st == DB_OK && held) {
            metrics_inc(srv->m, M_OUTBOX_DELIVERED);
            log_info("event delivered", "event_id=%s:%s attempt=%d", ev->order_no, ev->event_type,
                     ev->attempts + 1);
        } else if (st == DB_OK) {
            log_warn("event acknowledged after its lease ran out; it is sent again",
                     "event_id=%s:%s attempt=%d", ev->order_no, ev->event_type, ev->attempts + 1);
        }
    } else {
        int64_t wait = delivery_backoff_ms(ev->attempts + 1, cfg->webhook_backoff_base_ms,
                                           cfg->webhook_backoff_max_ms, random_u32());
        st = outbox_mark_failed(c, ev->id, r->owner, err, wait, cfg->webhook_max_attempts,
                                ev->attempts, &dead);
        metrics_inc(srv->m, res == ATTEMPT_TIMEOUT ? M_OUTBOX_TIMEOUTS : M_OUTBOX_FAILURES);
        if (st == DB_OK && dead) {
            metrics_inc(srv->m, M_OUTBOX_DEAD);
            log_alert("OUTBOX_DEAD", "event_id=%s:%s attempts=%d error=\"%s\"", ev->order_no,
                      ev->event_type, ev->attempts + 1, err);
        } else {
            log_warn("event delivery failed",
                     "event_id=%s:%s attempt=%d retry_in_ms=%lld "
                     "error=\"%s\"",
                     ev->order_no, ev->event_type, ev->attempts + 1, (long long)wait, err);
        }
    }
    if (st != DB_OK)
        log_warn("outbox: cannot record an attempt", "event_id=%s:%s status=%s error=\"%s\"",
                 ev->order_no, ev->event_type, db_status_str(st), db_errstr(c));
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

/* Sleeps up to ms, or until stopped. */
static void idle(struct delivery *d, int ms)
{
    struct timespec until;

    until = monotime_after_ms(ms);
    pthread_mutex_lock(&d->mu);
    while (!d->stop)
        if (pthread_cond_timedwait(&d->cv, &d->mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&d->mu);
}

/* A failed claim: counted for the shard, logged when the shard starts
 * failing (not on every poll while it stays down). */
static void claim_failed(struct relay *r, enum db_status st, const char *err)
{
    struct server *srv = r->d->srv;

    metrics_shard_inc(srv->m, r->sh->index, MS_OUTBOX_CLAIM_FAILURES);
    if (r->failures++ == 0)
        log_warn("outbox: claim failed", "shard=%s status=%s error=\"%s\"", r->sh->label,
                 db_status_str(st), err);
}

/* Claims a batch from the relay's shard; returns how many events are in
 * evs, or -1 when the shard's database failed the claim. */
static long claim(struct relay *r, struct outbox_event *evs, size_t max)
{
    struct server *srv = r->d->srv;
    const struct config *cfg = srv->cfg;
    /* Long enough for every attempt of the batch to time out, so a live
     * relay never loses its claim to another; a dead relay's claims come
     * back this long after it died. */
    int lease_s =
        (int)(((int64_t)max * cfg->webhook_timeout_ms + 999) / 1000) + DELIVERY_LEASE_PAD_S;
    struct db_conn *c = shard_acquire(r->sh, DELIVERY_DB_WAIT_MS);
    enum db_status st;
    size_t n = 0;

    if (c == NULL) {
        claim_failed(r, DB_UNAVAILABLE, "no free connection");
        return -1;
    }
    st = outbox_claim(c, r->owner, lease_s, evs, max, &n);
    if (st != DB_OK) {
        claim_failed(r, st, db_errstr(c));
        shard_release(r->sh, c);
        return -1;
    }
    shard_release(r->sh, c);
    if (r->failures > 0)
        log_info("outbox: claims work again", "shard=%s failed_claims=%d", r->sh->label,
                 r->failures);
    r->failures = 0;
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

/* The wait after the failures-th failed claim in a row: the poll
 * interval doubled per failure, at most DELIVERY_DOWN_WAIT_MAX_MS (a kick
 * still wakes the relay at once). */
static int down_wait_ms(int poll_ms, int failures)
{
    int64_t w = poll_ms;

    for (int i = 1; i < failures && w < DELIVERY_DOWN_WAIT_MAX_MS; i++)
        w *= 2;
    return w > DELIVERY_DOWN_WAIT_MAX_MS ? DELIVERY_DOWN_WAIT_MAX_MS : (int)w;
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    struct delivery *d = r->d;
    size_t batch = (size_t)d->srv->cfg->webhook_batch;
    struct outbox_event *evs = calloc(batch, sizeof(*evs));
    char err[OUTBOX_ERROR_MAX];

    if (evs == NULL) {
        log_error("outbox relay: out of memory", "owner=%s", r->owner);
        return NULL;
    }
    while (!stopping(d)) {
        long got = claim(r, evs, batch);
        size_t n = got > 0 ? (size_t)got : 0, i;

        for (i = 0; i < n && !stopping(d); i++) {
            enum attempt_result res = post_event(r, &evs[i], err, sizeof(err));
            record(r, &evs[i], res, err);
        }
        if (i < n)
            hand_back(r);
        if (got < 0)
            idle(d, down_wait_ms(d->srv->cfg->webhook_poll_ms, r->failures));
        else if (n < batch)
            idle(d, d->srv->cfg->webhook_poll_ms);
    }
    free(evs);
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

struct delivery *delivery_start(struct server *srv)
{
    const struct config *cfg = srv->cfg;
    int nrelays = cfg->webhook_workers * (int)srv->shards.n;
    struct delivery *d;
    int i;

    if (cfg->webhook_url[0] == '\0')
        return NULL;
    if ((d = calloc(1, sizeof(*d))) == NULL ||
        (d->relays = calloc((size_t)nrelays, sizeof(*d->relays))) == NULL) {
        free(d);
        log_error("outbox relay: out of memory", "%s", "");
        return NULL;
    }
    d->srv = srv;
    pthread_mutex_init(&d->mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    for (i = 0; i < nrelays; i++) {
        struct relay *r = &d->relays[i];

        r->d = d;
        r->sh = &srv->shards.s[(size_t)i / (size_t)cfg->webhook_workers];
        owner_id(r->owner, i);
        if ((r->curl = curl_easy_init()) == NULL)
            goto fail;
        curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(r->curl, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        if (pthread_create(&r->thread, NULL, relay_main, r) != 0)
            goto fail;
        r->started = true;
        d->nrelays = i + 1;
    }
    log_info("outbox relay started", "workers=%d shards=%zu url=\"%s\"", cfg->webhook_workers,
             srv->shards.n, cfg->webhook_url);
    return d;
fail:
    log_error("outbox relay: cannot start", "worker=%d", i);
    d->nrelays = nrelays;
    delivery_stop(d);
    return NULL;
}

void delivery_stop(struct delivery *d)
{
    int i;

    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (i = 0; i < d->nrelays; i++) {
        if (d->relays[i].started)
            pthread_join(d->relays[i].thread, NULL);
        if (d->relays[i].curl != NULL)
            curl_easy_cleanup(d->relays[i].curl);
    }
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->relays);
    free(d);
}
