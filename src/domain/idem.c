/* idem.c - Idempotency-Key records in MySQL: claim, wait, replay, store,
 * release and purge. Every instance sharing the database sees the same
 * records, and every time comparison (lease, expiry) uses the database's
 * clock, so instances need not agree on theirs. */
#include "idem.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hex.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "order_state.h"
#include "route.h"

/* One claim attempt's state, re-runnable under db_retry. */
struct claim_job {
    const struct idem_settings *set;
    struct idem_claim *cl;
    struct idem_answer *ans;
    char *buf; /* IDEM_BODY_MAX + 1 bytes for a stored body */
    enum idem_result result;
    bool pending; /* the first attempt is still running (IDEM_BUSY) */
};

/* idem_key_parse's work; out may hold a prefix on failure. */
static int parse_key(const char *value, char out[IDEM_KEY_MAX + 1])
{
    size_t n = 0;
    bool quoted;

    if (value == NULL)
        return -1;
    quoted = value[0] == '"';
    for (const char *p = value + quoted; *p != '\0'; p++) {
        unsigned char ch = (unsigned char)*p;

        if (quoted && ch == '"') {
            if (p[1] != '\0')
                return -1; /* text after the closing quote */
            quoted = false;
            break;
        }
        if (quoted && ch == '\\') {
            ch = (unsigned char)*++p;
            if (ch != '"' && ch != '\\')
                return -1;
        } else if (ch < 0x20 || ch > 0x7e || (ch == ' ' && value[0] != '"') ||
                   (ch == '"' && value[0] == '"')) {
            return -1;
        }
        if (n == IDEM_KEY_MAX)
            return -1;
        out[n++] = (char)ch;
    }
    out[n] = '\0';
    return quoted || n == 0 ? -1 : 0; /* an unterminated string, or nothing */
}

int idem_key_parse(const char *value, char out[IDEM_KEY_MAX + 1])
{
    if (parse_key(value, out) == 0)
        return 0;
    out[0] = '\0';
    return -1;
}

static void sha256_hex(const void *data, size_t len, char out[IDEM_FP_HEX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1)
        mdlen = 0; /* leaves an empty string: never matches */
    hex_encode(md, mdlen < IDEM_FP_HEX / 2 ? mdlen : IDEM_FP_HEX / 2, out);
}

void idem_fingerprint(const char *method, const char *path, const char *scope, const char *body,
                      size_t body_len, char out[IDEM_FP_HEX + 1])
{
    char body_hex[IDEM_FP_HEX + 1];
    char text[IDEM_FP_HEX + IDEM_SCOPE_MAX + 512];
    int n;

    sha256_hex(body != NULL ? body : "", body != NULL ? body_len : 0, body_hex);
    n = snprintf(text, sizeof(text), "%.16s\n%.400s\n%s\n%s", method, path, scope, body_hex);
    sha256_hex(text, n > 0 ? (size_t)n : 0, out);
}

void idem_answer_free(struct idem_answer *ans)
{
    if (ans == NULL)
        return;
    free(ans->body);
    memset(ans, 0, sizeof(*ans));
}

/* ---- claiming ------------------------------------------------------------ */

static enum db_status insert_claim(struct db_conn *c, const struct claim_job *j)
{
    const struct idem_claim *cl = j->cl;
    char state[DB_INT_BUF], lease[DB_INT_BUF], ttl[DB_INT_BUF];
    const char *p[] = { cl->scope,
                        cl->key,
                        cl->fingerprint,
                        db_param_int(state, IDEM_STATE_RUNNING),
                        cl->owner,
                        db_param_int(lease, j->set->lease_ms),
                        db_param_int(ttl, j->set->ttl_s) };

    return db_exec(c, ST_IDEM_CLAIM, p, 7, NULL);
}

/* What ST_IDEM_GET read. */
struct record {
    char fingerprint[IDEM_FP_HEX + 1];
    char owner[IDS_TOKEN_BUF];
    int64_t state, status, live, expired;
    size_t body_len;
};

static enum db_status read_record(struct db_conn *c, struct claim_job *j, struct record *r,
                                  bool *found)
{
    const char *p[] = { j->cl->scope, j->cl->key };
    struct db_row row;
    enum db_status st;

    memset(r, 0, sizeof(*r));
    st = db_query_one_long(c, ST_IDEM_GET, p, 2, &row, IC_BODY, j->buf, IDEM_BODY_MAX + 1,
                           &r->body_len, found);
    if (st != DB_OK || !*found)
        return st;
    if (db_row_str(&row, IC_FINGERPRINT, r->fingerprint, sizeof(r->fingerprint)) != 0 ||
        db_row_str(&row, IC_OWNER, r->owner, sizeof(r->owner)) != 0 ||
        db_row_int(&row, IC_STATE, IDEM_STATE_RUNNING, IDEM_STATE_DONE, &r->state) != 0 ||
        db_row_int(&row, IC_LIVE, 0, 1, &r->live) != 0 ||
        db_row_int(&row, IC_EXPIRED, 0, 1, &r->expired) != 0 ||
        (r->state == IDEM_STATE_DONE && db_row_int(&row, IC_STATUS, 100, 599, &r->status) != 0))
        return db_fail(c, "idem_key record of key %.64s is malformed", j->cl->key);
    return DB_OK;
}

/* Takes over a RUNNING record whose lease ran out; *won when this attempt
 * now holds it. */
static enum db_status take_over(struct db_conn *c, struct claim_job *j, const char *old_owner,
                                bool *won)
{
    const struct idem_claim *cl = j->cl;
    char lease[DB_INT_BUF], state[DB_INT_BUF];
    const char *p[] = { cl->owner, db_param_int(lease, j->set->lease_ms),   cl->scope,
                        cl->key,   db_param_int(state, IDEM_STATE_RUNNING), old_owner };
    uint64_t rows = 0;
    enum db_status st = db_exec(c, ST_IDEM_TAKEOVER, p, 6, &rows);

    *won = st == DB_OK && rows == 1;
    if (*won)
        log_warn("idempotency claim taken over from an attempt whose lease ran out",
                 "scope=%s lease_ms=%d", cl->scope, j->set->lease_ms);
    return st;
}

static enum db_status drop_expired(struct db_conn *c, const struct idem_claim *cl)
{
    const char *p[] = { cl->scope, cl->key };

    return db_exec(c, ST_IDEM_DROP_EXPIRED, p, 2, NULL);
}

/* Keeps a stored answer for the caller. */
static enum db_status keep_answer(struct db_conn *c, struct claim_job *j, const struct record *r)
{
    if (r->body_len == 0 || (j->ans->body = malloc(r->body_len + 1)) == NULL)
        return db_fail(c, "cannot keep the stored answer of key %.64s", j->cl->key);
    memcpy(j->ans->body, j->buf, r->body_len + 1);
    j->ans->len = r->body_len;
    j->ans->status = (int)r->status;
    return DB_OK;
}

/* About one claim in IDEM_PURGE_EVERY also purges a batch of expired
 * records; the choice comes from the claim id's random bits. */
static void maybe_purge(struct db_conn *c, const struct idem_claim *cl)
{
    unsigned int first = 0;
    uint64_t rows = 0;

    if (sscanf(cl->owner, "%2x", &first) != 1 || first % IDEM_PURGE_EVERY != 0)
        return;
    if (idem_purge(c, &rows) == DB_OK && rows > 0)
        log_info("expired idempotency keys purged", "rows=%llu", (unsigned long long)rows);
}

/* One claim attempt: insert; on a duplicate key read the record and
 * decide. A record that vanishes or expires meanwhile is tried again. */
static enum db_status claim_body(struct db_conn *c, void *arg)
{
    struct claim_job *j = arg;
    struct record r;
    bool found = false, won = false;
    enum db_status st;

    j->pending = false;
    idem_answer_free(j->ans);
    for (int round = 0; round < 4; round++) {
        if ((st = insert_claim(c, j)) == DB_OK) {
            j->result = IDEM_RUN;
            maybe_purge(c, j->cl);
            return DB_OK;
        }
        if (st != DB_DUPLICATE)
            return st;
        if ((st = read_record(c, j, &r, &found)) != DB_OK)
            return st;
        if (!found)
            continue; /* given back meanwhile */
        if (r.expired) {
            if ((st = drop_expired(c, j->cl)) != DB_OK)
                return st;
            continue;
        }
        if (strcmp(r.fingerprint, j->cl->fingerprint) != 0) {
            j->result = IDEM_MISMATCH;
            return DB_OK;
        }
        if (r.state == IDEM_STATE_DONE) {
            j->result = IDEM_REPLAY;
            return keep_answer(c, j, &r);
        }
        if (strcmp(r.owner, j->cl->owner) == 0) {
            j->result = IDEM_RUN; /* our own insert, whose reply was lost */
            return DB_OK;
        }
        if (r.live)
            break;
        if ((st = take_over(c, j, r.owner, &won)) != DB_OK)
            return st;
        if (won) {
            j->result = IDEM_RUN;
            return DB_OK;
        }
    }
    j->pending = true;
    j->result = IDEM_BUSY; /* for now: idem_begin waits and asks again */
    return DB_OK;
}

static void pause_ms(long long ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One claim attempt on a borrowed connection of the key's shard. */
static enum idem_result claim_once(struct route_hop *h, const struct shard *sh, struct claim_job *j)
{
    enum db_status st;

    if (route_hop_to(h, sh, "idem_begin") == NULL) {
        snprintf(j->cl->errstr, sizeof(j->cl->errstr), "no free mysql connection");
        return IDEM_UNAVAILABLE;
    }
    st = db_retry(h->c, claim_body, j);
    if (st != DB_OK) {
        snprintf(j->cl->errstr, sizeof(j->cl->errstr), "%s", db_errstr(h->c));
        route_failed(h, route_retryable(st), "idem_begin");
    }
    route_hop_release(h);
    if (st == DB_OK)
        return j->result;
    return route_retryable(st) ? IDEM_UNAVAILABLE : IDEM_ERROR;
}

const struct shard *idem_shard(const struct route *rt, const struct idem_claim *cl)
{
    return shard_place(rt->set, cl->scope);
}

enum idem_result idem_begin(const struct route *rt, const struct idem_settings *set,
                            struct idem_claim *cl, struct idem_answer *ans, long long *waited_us)
{
    struct claim_job j = { .set = set, .cl = cl, .ans = ans };
    long long start = monotime_us(), elapsed = 0, pause = IDEM_POLL_MIN_MS;
    const struct shard *sh = idem_shard(rt, cl);
    struct metrics *m = rt->m;
    struct route_failure fail;
    struct route_hop h;
    enum idem_result r;
    bool waited = false;

    route_hop_init(&h, rt, &fail);
    memset(ans, 0, sizeof(*ans));
    cl->errstr[0] = '\0';
    *waited_us = 0;
    if (ids_token(cl->owner) != 0) {
        snprintf(cl->errstr, sizeof(cl->errstr), "cannot draw random bytes for a claim id");
        return IDEM_ERROR;
    }
    if ((j.buf = malloc(IDEM_BODY_MAX + 1)) == NULL) {
        snprintf(cl->errstr, sizeof(cl->errstr), "out of memory");
        return IDEM_ERROR;
    }
    for (;;) {
        r = claim_once(&h, sh, &j);
        elapsed = monotime_us() - start;
        if (r != IDEM_BUSY || elapsed >= (long long)set->wait_ms * 1000)
            break;
        if (!waited) {
            metrics_inc(m, M_IDEM_WAITS);
            log_info("idempotency key in use, waiting for its first attempt", "scope=%s wait_ms=%d",
                     cl->scope, set->wait_ms);
        }
        waited = true;
        if (pause > set->wait_ms - elapsed / 1000)
            pause = set->wait_ms - elapsed / 1000 + 1;
        pause_ms(pause);
        pause = pause * 2 < IDEM_POLL_MAX_MS ? pause * 2 : IDEM_POLL_MAX_MS;
    }
    free(j.buf);
    if (waited) {
        metrics_observe_idem_wait(m, (uint64_t)elapsed);
        *waited_us = elapsed;
    }
    if (r == IDEM_REPLAY)
        metrics_inc(m, M_IDEM_REPLAYS);
    else if (r == IDEM_MISMATCH)
        metrics_inc(m, M_IDEM_MISMATCHES);
    else if (r == IDEM_BUSY)
        metrics_inc(m, M_IDEM_BUSY);
    return r;
}

/* ---- storing and giving back --------------------------------------------- */

enum db_status idem_finish_in_txn(struct db_conn *c, const struct idem_claim *cl, int status,
                                  const char *body, bool *lost)
{
    char done[DB_INT_BUF], code[DB_INT_BUF], running[DB_INT_BUF];
    const char *p[] = { db_param_int(done, IDEM_STATE_DONE),
                        db_param_int(code, status),
                        body,
                        cl->scope,
                        cl->key,
                        cl->owner,
                        db_param_int(running, IDEM_STATE_RUNNING) };
    uint64_t rows = 0;
    enum db_status st;

    *lost = false;
    if (body == NULL || strlen(body) > IDEM_BODY_MAX)
        return db_fail(c, "answer of key %.64s is too large to store", cl->key);
    if ((st = db_exec(c, ST_IDEM_DONE, p, 7, &rows)) != DB_OK)
        return st;
    if (rows != 1) {
        *lost = true;
        return DB_ROLLBACK;
    }
    return DB_OK;
}

struct finish_job {
    const struct idem_claim *cl;
    int status;
    const char *body;
    bool lost;
};

static enum db_status finish_body(struct db_conn *c, void *arg)
{
    struct finish_job *f = arg;

    return idem_finish_in_txn(c, f->cl, f->status, f->body, &f->lost);
}

enum db_status idem_finish(struct db_conn *c, const struct idem_claim *cl, int status,
                           const char *body, bool *lost)
{
    struct finish_job f = { cl, status, body, false };
    enum db_status st = db_txn(c, finish_body, &f);

    *lost = f.lost;
    return st;
}

enum db_status idem_release(struct db_conn *c, const struct idem_claim *cl)
{
    char running[DB_INT_BUF];
    const char *p[] = { cl->scope, cl->key, cl->owner, db_param_int(running, IDEM_STATE_RUNNING) };

    return db_exec(c, ST_IDEM_RELEASE, p, 4, NULL);
}

enum db_status idem_settle(const struct route *rt, const struct idem_claim *cl, int status,
                           const char *body, bool *lost, struct route_failure *fail)
{
    struct route_hop h;
    enum db_status st;

    *lost = false;
    route_hop_init(&h, rt, fail);
    h.uncounted = true; /* the answer is decided already */
    if (route_hop_to(&h, idem_shard(rt, cl), "idem_end") == NULL)
        return DB_UNAVAILABLE;
    st = status == 0 ? idem_release(h.c, cl) : idem_finish(h.c, cl, status, body, lost);
    if (st == DB_ROLLBACK)
        st = DB_OK; /* *lost says it */
    if (st != DB_OK)
        route_failed(&h, route_retryable(st), "idem_end");
    route_hop_release(&h);
    return st;
}

enum db_status idem_purge(struct db_conn *c, uint64_t *purged)
{
    uint64_t rows = 0;
    enum db_status st = db_exec(c, ST_IDEM_PURGE, NULL, 0, &rows);

    if (purged != NULL)
        *purged = rows;
    return st;
}
