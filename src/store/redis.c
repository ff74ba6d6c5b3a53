/* redis.c - the hiredis connection pool, the two Lua scripts (token consume
 * and lock release, both compare-and-delete, called by EVALSHA), and the
 * degraded state that lets the service keep serving while Redis is away.
 * Knows nothing of HTTP or MySQL.
 *
 * Degraded mode: the first failure to reach Redis (refused, timed out,
 * dropped, or LOADING) flips an atomic flag and logs the switch once. While
 * the flag is set, calls answer RDS_DOWN without touching the network, and
 * one call a second is let through as a probe; the first probe that
 * succeeds clears the flag and logs the recovery once. */
#include "redis.h"

#include <assert.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "config.h"
#include "hex.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "slots.h"

#define RDS_SHA_HEX_LEN 40
#define RDS_LOCK_RETRY_MS 2 /* between lock attempts, plus 0..3 ms of jitter */
#define RDS_LOCK_JITTER_MS 4
#define RDS_TOKEN_MARK "1" /* the value of every idem:token:* key */
#define RDS_ERRSTR_MAX 192

enum rds_script {
    SCRIPT_TOKEN_CONSUME,
    SCRIPT_LOCK_RELEASE,
    SCRIPT_COUNT
};

/* KEYS[1] token key, ARGV[1] the token mark, ARGV[2] the TTL to report for
 * a key that has none. Returns the milliseconds the token had left, or -1
 * when it is not there (never issued, used, or expired). */
static const char *const script_body[SCRIPT_COUNT] = {
    [SCRIPT_TOKEN_CONSUME] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end\n"
                             "local ttl = redis.call('PTTL', KEYS[1])\n"
                             "redis.call('DEL', KEYS[1])\n"
                             "if ttl < 0 then ttl = tonumber(ARGV[2]) end\n"
                             "return ttl\n",
    /* KEYS[1] lock key, ARGV[1] the holder's value. 1 deleted, 0 not ours. */
    [SCRIPT_LOCK_RELEASE] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                            "  return redis.call('DEL', KEYS[1])\n"
                            "end\n"
                            "return 0\n",
};

struct rds_conn {
    redisContext *c; /* NULL while disconnected */
};

struct rds_pool {
    const struct config *cfg;
    struct metrics *m;
    struct timeval timeout;
    char sha[SCRIPT_COUNT][RDS_SHA_HEX_LEN + 1];

    struct slots *free; /* which of conns are lent out */
    struct rds_conn *conns;
    int size;

    atomic_bool degraded;
    atomic_llong failed_at_ms; /* when the last failure was seen */
    atomic_llong retry_at_ms;  /* while degraded: no attempt before this */
};

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The SHA1 of a script in lowercase hex: the name EVALSHA knows it by. */
static int script_sha(const char *body, char out[RDS_SHA_HEX_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;

    out[0] = '\0';
    if (EVP_Digest(body, strlen(body), md, &len, EVP_sha1(), NULL) != 1 || len != 20)
        return -1;
    hex_encode(md, len, out);
    return 0;
}

/* ---- degraded state ------------------------------------------------------ */

/* True when a command may go to Redis now. While degraded only one caller
 * a second wins the compare-and-swap and becomes the probe. */
static bool may_try(struct rds_pool *p, long long now)
{
    long long at;

    if (!atomic_load(&p->degraded))
        return true;
    at = atomic_load(&p->retry_at_ms);
    if (now < at)
        return false;
    return atomic_compare_exchange_strong(&p->retry_at_ms, &at, now + RDS_PROBE_INTERVAL_MS);
}

static void mark_down(struct rds_pool *p, const char *why)
{
    long long now = monotime_ms();

    metrics_inc(p->m, M_REDIS_ERRORS);
    atomic_store(&p->failed_at_ms, now);
    atomic_store(&p->retry_at_ms, now + RDS_PROBE_INTERVAL_MS);
    log_debug("redis call failed", "error=\"%s\"", why);
    if (!atomic_exchange(&p->degraded, true)) {
        log_warn("redis unreachable, degraded mode: tokens in mysql, stock lock skipped",
                 "host=%s port=%d error=\"%s\"", p->cfg->redis_host, p->cfg->redis_port, why);
        metrics_set_redis_degraded(p->m, 1);
    }
}

/* A command that started at started_ms succeeded. Only one that started
 * after the last failure proves Redis is back: an older one may have
 * finished just before Redis went away. */
static void mark_up(struct rds_pool *p, long long started_ms)
{
    if (!atomic_load(&p->degraded) || started_ms < atomic_load(&p->failed_at_ms))
        return;
    if (atomic_exchange(&p->degraded, false)) {
        log_info("redis is back", "host=%s port=%d", p->cfg->redis_host, p->cfg->redis_port);
        metrics_set_redis_degraded(p->m, 0);
    }
}

/* ---- connections --------------------------------------------------------- */

static void conn_close(struct rds_conn *rc)
{
    redisFree(rc->c); /* NULL-safe */
    rc->c = NULL;
}

/* Connects rc and SELECTs the configured db. 0, or -1 with the reason in
 * why (rc then stays disconnected). */
static int conn_open(struct rds_pool *p, struct rds_conn *rc, char *why, size_t whysz)
{
    const struct config *cfg = p->cfg;
    redisContext *c = redisConnectWithTimeout(cfg->redis_host, cfg->redis_port, p->timeout);
    redisReply *r = NULL;

    if (c == NULL || c->err) {
        snprintf(why, whysz, "connect: %.128s", c ? c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(c, p->timeout) != REDIS_OK) {
        snprintf(why, whysz, "cannot set the command timeout");
        goto fail;
    }
    r = redisCommand(c, "SELECT %d", cfg->redis_db);
    if (r == NULL || r->type != REDIS_REPLY_STATUS) {
        snprintf(why, whysz, "select %d: %.128s", cfg->redis_db,
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        goto fail;
    }
    freeReplyObject(r);
    rc->c = c;
    return 0;
fail:
    freeReplyObject(r);
    redisFree(c);
    return -1;
}

/* True when a failed command's link was closed by the other side (the
 * server restarted or dropped us), as opposed to timing out. */
static bool link_dropped(const redisContext *c, int err)
{
    return c->err == REDIS_ERR_EOF ||
           (c->err == REDIS_ERR_IO && (err == ECONNRESET || err == EPIPE));
}

static struct rds_conn *conn_acquire(struct rds_pool *p)
{
    int i = slots_take(p->free, p->cfg->redis_timeout_ms, NULL);

    return i >= 0 ? &p->conns[i] : NULL;
}

/* cppcheck-suppress constParameter ; the connection goes back to the pool: not the caller's to read */
static void conn_release(struct rds_pool *p, struct rds_conn *rc)
{
    slots_put(p->free, (int)(rc - p->conns));
}

/* Sends one command on a pooled connection. A connection whose link the
 * server dropped (Redis restarted since it was last used) is replaced and
 * the command sent once more; a timeout is not retried. Returns RDS_OK
 * with the reply in *out (free it with freeReplyObject; it may be an error
 * reply), RDS_DOWN after marking Redis unreachable, or RDS_ERROR when no
 * pooled connection freed up in time. */
static enum rds_status command(struct rds_pool *p, int argc, const char **argv, redisReply **out)
{
    char why[RDS_ERRSTR_MAX] = "";
    long long t0 = monotime_ms();
    struct rds_conn *rc;
    redisReply *r = NULL;
    bool fresh = false;

    *out = NULL;
    if (!may_try(p, t0))
        return RDS_DOWN;
    if ((rc = conn_acquire(p)) == NULL) {
        metrics_inc(p->m, M_REDIS_ERRORS);
        log_warn("no free redis connection", "pool_size=%d wait_ms=%d", p->size,
                 p->cfg->redis_timeout_ms);
        return RDS_ERROR;
    }
    for (int attempt = 0; attempt < 2 && r == NULL; attempt++) {
        if (rc->c == NULL) {
            if (conn_open(p, rc, why, sizeof(why)) != 0)
                break;
            fresh = true;
        }
        r = redisCommandArgv(rc->c, argc, argv, NULL);
        if (r == NULL) {
            bool dropped = link_dropped(rc->c, errno);
            snprintf(why, sizeof(why), "%.16s: %.128s", argv[0], rc->c->errstr);
            conn_close(rc); /* err is set: the context is done */
            if (fresh || !dropped)
                break;
        }
    }
    conn_release(p, rc);
    if (r == NULL) {
        mark_down(p, why);
        return RDS_DOWN;
    }
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0) {
        freeReplyObject(r);
        mark_down(p, "LOADING: redis is loading its dataset");
        return RDS_DOWN;
    }
    mark_up(p, t0);
    *out = r;
    return RDS_OK;
}

/* Logs and counts an error reply (or a reply of a type we never expect). */
static enum rds_status unexpected(struct rds_pool *p, const char *op, const redisReply *r)
{
    metrics_inc(p->m, M_REDIS_ERRORS);
    log_warn("unexpected redis reply", "op=%s type=%d error=\"%s\"", op, r->type,
             r->type == REDIS_REPLY_ERROR ? r->str : "");
    return RDS_ERROR;
}

/* SCRIPT LOAD of one script, checking that Redis names it as we do. */
static enum rds_status load_script(struct rds_pool *p, enum rds_script s)
{
    const char *argv[] = { "SCRIPT", "LOAD", script_body[s] };
    redisReply *r = NULL;
    enum rds_status st = command(p, 3, argv, &r);

    if (st != RDS_OK)
        return st;
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, p->sha[s]) != 0)
        st = unexpected(p, "script load", r);
    else
        log_info("redis script loaded", "sha=%s", p->sha[s]);
    freeReplyObject(r);
    return st;
}

static bool is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* EVALSHA of script s with one key and argc_extra arguments. A NOSCRIPT
 * answer (Redis restarted or its script cache was flushed) loads the
 * script and tries once more. Same returns as command(). */
static enum rds_status eval(struct rds_pool *p, enum rds_script s, const char *key,
                            const char *arg1, const char *arg2, redisReply **out)
{
    const char *argv[] = { "EVALSHA", p->sha[s], "1", key, arg1, arg2 };
    int argc = arg2 != NULL ? 6 : 5;
    enum rds_status st = command(p, argc, argv, out);

    if (st != RDS_OK || !is_noscript(*out))
        return st;
    freeReplyObject(*out);
    *out = NULL;
    if ((st = load_script(p, s)) != RDS_OK)
        return st;
    return command(p, argc, argv, out);
}

/* Counts an operation that the caller will now serve without Redis. */
static enum rds_status degraded_op(struct rds_pool *p, enum rds_status st)
{
    if (st == RDS_DOWN)
        metrics_inc(p->m, M_REDIS_DEGRADED_OPS);
    return st;
}

/* ---- public -------------------------------------------------------------- */

struct rds_pool *rds_pool_create(const struct config *cfg, struct metrics *m)
{
    struct rds_pool *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->cfg = cfg;
    p->m = m;
    p->size = cfg->redis_pool_size;
    p->timeout.tv_sec = cfg->redis_timeout_ms / 1000;
    p->timeout.tv_usec = (suseconds_t)(cfg->redis_timeout_ms % 1000) * 1000;
    for (int s = 0; s < SCRIPT_COUNT; s++) {
        if (script_sha(script_body[s], p->sha[s]) != 0) {
            free(p);
            return NULL;
        }
    }
    if ((p->conns = calloc((size_t)p->size, sizeof(*p->conns))) == NULL ||
        (p->free = slots_create(p->size)) == NULL) {
        free(p->conns);
        free(p);
        return NULL;
    }
    atomic_init(&p->degraded, false);
    atomic_init(&p->failed_at_ms, 0);
    atomic_init(&p->retry_at_ms, 0);
    return p;
}

void rds_pool_destroy(struct rds_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++)
        conn_close(&p->conns[i]);
    slots_destroy(p->free);
    free(p->conns);
    free(p);
}

bool rds_degraded(struct rds_pool *p)
{
    return atomic_load(&p->degraded);
}

enum rds_status rds_ping(struct rds_pool *p)
{
    const char *argv[] = { "PING" };
    redisReply *r = NULL;
    enum rds_status st = command(p, 1, argv, &r);

    if (st == RDS_OK && r->type != REDIS_REPLY_STATUS)
        st = unexpected(p, "ping", r);
    freeReplyObject(r);
    return st;
}

enum rds_status rds_token_put(struct rds_pool *p, const char *token, int64_t ttl_ms)
{
    char key[RDS_KEY_MAX], ttl[24];
    const char *argv[] = { "SET", key, RDS_TOKEN_MARK, "PX", ttl, "NX" };
    redisReply *r = NULL;
    enum rds_status st;

    assert(ttl_ms > 0);
    snprintf(key, sizeof(key), RDS_TOKEN_PREFIX "%s", token);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
    if ((st = command(p, 6, argv, &r)) != RDS_OK)
        return degraded_op(p, st);
    if (r->type == REDIS_REPLY_STATUS)
        st = RDS_OK;
    else if (r->type == REDIS_REPLY_NIL)
        st = RDS_BUSY; /* the key exists already */
    else
        st = unexpected(p, "token put", r);
    freeReplyObject(r);
    return st;
}

enum rds_status rds_token_consume(struct rds_pool *p, const char *token, int64_t *remaining_ms)
{
    char key[RDS_KEY_MAX], ttl[24];
    redisReply *r = NULL;
    enum rds_status st;

    *remaining_ms = 0;
    snprintf(key, sizeof(key), RDS_TOKEN_PREFIX "%s", token);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)p->cfg->token_ttl_s * 1000);
    if ((st = eval(p, SCRIPT_TOKEN_CONSUME, key, RDS_TOKEN_MARK, ttl, &r)) != RDS_OK)
        return degraded_op(p, st);
    if (r->type != REDIS_REPLY_INTEGER) {
        st = unexpected(p, "token consume", r);
    } else if (r->integer < 0) {
        st = RDS_NOT_FOUND;
    } else {
        *remaining_ms = (int64_t)r->integer;
        st = RDS_OK;
    }
    freeReplyObject(r);
    return st;
}

/* One SET NX PX attempt: RDS_OK taken, RDS_BUSY held by another. */
static enum rds_status lock_try(struct rds_pool *p, const char *key, const char *value,
                                const char *ttl)
{
    const char *argv[] = { "SET", key, value, "NX", "PX", ttl };
    redisReply *r = NULL;
    enum rds_status st = command(p, 6, argv, &r);

    if (st != RDS_OK)
        return st;
    if (r->type == REDIS_REPLY_STATUS)
        st = RDS_OK;
    else if (r->type == REDIS_REPLY_NIL)
        st = RDS_BUSY;
    else
        st = unexpected(p, "lock acquire", r);
    freeReplyObject(r);
    return st;
}

enum rds_status rds_lock_acquire(struct rds_pool *p, const char *key, const char *value, int ttl_ms,
                                 int wait_ms)
{
    long long deadline = monotime_ms() + wait_ms;
    char ttl[24];
    enum rds_status st;
    struct timespec ts;

    snprintf(ttl, sizeof(ttl), "%d", ttl_ms);
    for (;;) {
        if ((st = lock_try(p, key, value, ttl)) != RDS_BUSY)
            return degraded_op(p, st);
        if (monotime_ms() >= deadline)
            return RDS_BUSY;
        /* Jitter from the clock keeps waiters from retrying in lockstep. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sleep_ms(RDS_LOCK_RETRY_MS + (long)(ts.tv_nsec / 1000 % RDS_LOCK_JITTER_MS));
    }
}

enum rds_status rds_lock_release(struct rds_pool *p, const char *key, const char *value)
{
    redisReply *r = NULL;
    enum rds_status st;

    if ((st = eval(p, SCRIPT_LOCK_RELEASE, key, value, NULL, &r)) != RDS_OK)
        return degraded_op(p, st);
    if (r->type != REDIS_REPLY_INTEGER)
        st = unexpected(p, "lock release", r);
    else
        st = r->integer == 1 ? RDS_OK : RDS_NOT_FOUND;
    freeReplyObject(r);
    return st;
}

const char *rds_status_str(enum rds_status st)
{
    static const char *const names[] = { "OK", "NOT_FOUND", "BUSY", "DOWN", "ERROR" };

    return (unsigned)st < ARRAY_SIZE(names) ? names[st] : "UNKNOWN";
}
