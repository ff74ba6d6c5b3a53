/* check_redis_lock.c - the Redis module (src/redis.c) driven directly
 * against the private Redis (db 9): the stock lock's mutual exclusion and
 * its holder-only release (also after it expired and someone else took
 * it), token consume's single use, the scripts surviving SCRIPT FLUSH, a
 * dropped link replaced without fuss, and the degraded state: entered on
 * a refused connection or a timeout, rate-limited, and left again. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 30
#define LOCK_KEY "idem:lock:stock:TEST-SKU"
#define HOLDER_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HOLDER_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define TOKEN "0123456789abcdef0123456789abcdef"
#define EXCL_THREADS 8
#define EXCL_ROUNDS 25
#define LOCK_EXPIRY_WAIT_MS 5000
#define WAITER_SEEN_MS 5000
#define RECOVER_WAIT_MS 10000

static struct config cfg;
static struct metrics *m;
static struct rds_pool *pool;

/* The shipped config pointed at the test Redis, db 9. */
static void load_config(struct config *c)
{
    char path[4096], err[256], port_kv[64];
    const char *root = getenv("PCB_ROOT");
    const char *port = getenv("PCB_TEST_REDIS_PORT");
    const char *env[] = { port_kv, "PAYCALLBACK_REDIS_DB=9", NULL };

    snprintf(path, sizeof path, "%s/config/paycallback.json", root && *root ? root : ".");
    snprintf(port_kv, sizeof port_kv, "PAYCALLBACK_REDIS_PORT=%s", port && *port ? port : "6380");
    ck_assert_msg(cfg_load(c, path, env, CFG_LOAD_DEV, err, sizeof err) == 0, "config: %s", err);
}

/* Checked fixture: a pool of our own in each forked test. */
static void pool_up(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the service does */
    log_set_level(LOG_ERROR);
    load_config(&cfg);
    h_redis_flush();
    m = metrics_create(NULL, 0);
    ck_assert_ptr_nonnull(m);
    pool = rds_pool_create(&cfg, m);
    ck_assert_ptr_nonnull(pool);
}

static void pool_down(void)
{
    rds_pool_destroy(pool);
    metrics_destroy(m);
    pool = NULL;
    m = NULL;
}

/* The value of a counter or gauge line "name value" in /metrics text. */
static long long metric(const char *name)
{
    size_t len;
    char *text = metrics_render(m, &len), *p;
    char want[128];
    long long v = -1;

    ck_assert_ptr_nonnull(text);
    snprintf(want, sizeof want, "\n%s ", name);
    if ((p = strstr(text, want)) != NULL)
        v = strtoll(p + strlen(want), NULL, 10);
    free(text);
    return v;
}

/* GET key in Redis, malloc'd, or NULL when absent. */
static char *redis_get(const char *key)
{
    redisReply *r = h_redis_cmd("GET %s", key);
    char *v;

    ck_assert_ptr_nonnull(r);
    v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

/* 1 when key exists in Redis. */
static int redis_exists(const char *key)
{
    redisReply *r = h_redis_cmd("EXISTS %s", key);
    int yes;

    ck_assert_ptr_nonnull(r);
    yes = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return yes;
}

/* How many SET commands Redis has run (INFO commandstats), -1 if unknown.
 * Every lock attempt is one SET, so a rise shows that a waiter has tried. */
static long long redis_set_calls(void)
{
    redisReply *r = h_redis_cmd("INFO commandstats");
    const char *p;
    long long n = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING)
        n = (p = strstr(r->str, "cmdstat_set:calls=")) != NULL
                ? strtoll(p + strlen("cmdstat_set:calls="), NULL, 10)
                : 0;
    freeReplyObject(r);
    return n;
}

/* ---- the lock ------------------------------------------------------------ */

START_TEST(lock_is_taken_and_released_by_its_holder)
{
    char *v;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    v = redis_get(LOCK_KEY);
    ck_assert_pstr_eq(HOLDER_A, v);
    free(v);
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
    v = redis_get(LOCK_KEY);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(RDS_NOT_FOUND, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
}
END_TEST

START_TEST(held_lock_is_busy_for_another_holder)
{
    char *v;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    ck_assert_int_eq(RDS_BUSY, rds_lock_acquire(pool, LOCK_KEY, HOLDER_B, 30000, 100));
    ck_assert_int_eq(RDS_NOT_FOUND, rds_lock_release(pool, LOCK_KEY, HOLDER_B));
    v = redis_get(LOCK_KEY);
    ck_assert_pstr_eq(HOLDER_A, v);
    free(v);
}
END_TEST

START_TEST(lock_has_the_ttl_it_was_given)
{
    redisReply *r;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 5000, 0));
    r = h_redis_cmd("PTTL %s", LOCK_KEY);
    ck_assert_msg(r != NULL && r->integer > 0 && r->integer <= 5000, "PTTL %lld",
                  r ? r->integer : -9);
    freeReplyObject(r);
}
END_TEST

/* The scenario the compare-and-delete exists for: A's lock expires while A
 * is still working, B takes it, and A's late release must leave B's lock. */
START_TEST(late_holder_cannot_release_the_next_holders_lock)
{
    char *v;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 100, 0));
    h_await(!redis_exists(LOCK_KEY), LOCK_EXPIRY_WAIT_MS, "A's 100 ms lock never expired");
    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_B, 30000, 0));

    ck_assert_int_eq(RDS_NOT_FOUND, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
    v = redis_get(LOCK_KEY);
    ck_assert_pstr_eq(HOLDER_B, v);
    free(v);
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_B));
    v = redis_get(LOCK_KEY);
    ck_assert_ptr_null(v);
}
END_TEST

/* Releases A's lock once the waiter has been refused at least once (one
 * more SET than *arg), so the waiter really waits; gives up waiting for
 * that after WAITER_SEEN_MS and releases anyway. */
static void *release_once_waited_for(void *arg)
{
    long long before = *(long long *)arg;
    struct h_deadline d = h_deadline_in(WAITER_SEEN_MS);

    while (redis_set_calls() <= before && h_deadline_wait(&d))
        ;
    rds_lock_release(pool, LOCK_KEY, HOLDER_A);
    return NULL;
}

START_TEST(waiter_gets_the_lock_once_it_is_released)
{
    pthread_t t;
    long long sets;
    char *v;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    sets = redis_set_calls();
    ck_assert_int_ge(sets, 1);
    ck_assert_int_eq(0, pthread_create(&t, NULL, release_once_waited_for, &sets));
    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_B, 30000, 5000));
    pthread_join(t, NULL);
    v = redis_get(LOCK_KEY);
    ck_assert_pstr_eq(HOLDER_B, v);
    free(v);
}
END_TEST

struct exclusion {
    long counter; /* updated non-atomically inside the lock */
    int failures;
    pthread_mutex_t mu; /* guards failures only */
};

/* One round: take the lock, bump the counter the slow way, release. */
static int exclusion_round(struct exclusion *x, const char *value)
{
    long c;

    if (rds_lock_acquire(pool, LOCK_KEY, value, 30000, 10000) != RDS_OK)
        return -1;
    c = x->counter;
    sched_yield(); /* a race would lose increments here */
    x->counter = c + 1;
    return rds_lock_release(pool, LOCK_KEY, value) == RDS_OK ? 0 : -1;
}

static void *exclusion_worker(void *arg)
{
    struct exclusion *x = arg;
    char value[40];

    for (int i = 0; i < EXCL_ROUNDS; i++) {
        snprintf(value, sizeof value, "%016lx%016x", (unsigned long)pthread_self(), (unsigned)i);
        if (exclusion_round(x, value) != 0) {
            pthread_mutex_lock(&x->mu);
            x->failures++;
            pthread_mutex_unlock(&x->mu);
        }
    }
    return NULL;
}

START_TEST(lock_excludes_concurrent_holders)
{
    static struct exclusion x;
    pthread_t t[EXCL_THREADS];

    memset(&x, 0, sizeof x);
    pthread_mutex_init(&x.mu, NULL);
    for (int i = 0; i < EXCL_THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, exclusion_worker, &x));
    for (int i = 0; i < EXCL_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_destroy(&x.mu);
    ck_assert_int_eq(0, x.failures);
    ck_assert_int_eq(EXCL_THREADS * EXCL_ROUNDS, x.counter);
}
END_TEST

/* ---- tokens -------------------------------------------------------------- */

START_TEST(token_is_consumed_once_with_its_remaining_ttl)
{
    int64_t left = -1;

    ck_assert_int_eq(RDS_OK, rds_token_put(pool, TOKEN, 5000));
    ck_assert_int_eq(RDS_BUSY, rds_token_put(pool, TOKEN, 5000));
    ck_assert_int_eq(RDS_OK, rds_token_consume(pool, TOKEN, &left));
    ck_assert_msg(left > 0 && left <= 5000, "remaining %lld ms", (long long)left);
    ck_assert_int_eq(RDS_NOT_FOUND, rds_token_consume(pool, TOKEN, &left));
    ck_assert_int_eq(0, left);
}
END_TEST

START_TEST(token_consume_ignores_other_values)
{
    redisReply *r = h_redis_cmd("SET idem:token:%s forged", TOKEN);
    int64_t left = -1;
    char *v;

    freeReplyObject(r);
    ck_assert_int_eq(RDS_NOT_FOUND, rds_token_consume(pool, TOKEN, &left));
    v = redis_get("idem:token:" TOKEN);
    ck_assert_pstr_eq("forged", v);
    free(v);
}
END_TEST

START_TEST(scripts_survive_a_script_flush)
{
    redisReply *r;
    int64_t left;

    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
    r = h_redis_cmd("SCRIPT FLUSH");
    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_STATUS, "SCRIPT FLUSH failed");
    freeReplyObject(r);

    /* NOSCRIPT: loaded again, called again. */
    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
    ck_assert_int_eq(RDS_OK, rds_token_put(pool, TOKEN, 5000));
    ck_assert_int_eq(RDS_OK, rds_token_consume(pool, TOKEN, &left));
    ck_assert(!rds_degraded(pool));
}
END_TEST

/* ---- links and the degraded state ---------------------------------------- */

/* Kills the connections on db 9 whose last command was PING: the pool's,
 * and nobody else's. Returns how many. */
static int kill_pingers(void)
{
    redisReply *list = h_redis_cmd("CLIENT LIST"), *r;
    int killed = 0;

    ck_assert_msg(list != NULL && list->type == REDIS_REPLY_STRING, "CLIENT LIST failed");
    for (char *line = strtok(list->str, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        long long id;

        if (strstr(line, " db=9 ") == NULL || strstr(line, " cmd=ping ") == NULL ||
            sscanf(line, "id=%lld", &id) != 1)
            continue;
        r = h_redis_cmd("CLIENT KILL ID %lld", id);
        killed += r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
    }
    freeReplyObject(list);
    return killed;
}

START_TEST(dropped_link_is_replaced_without_degrading)
{
    ck_assert_int_eq(RDS_OK, rds_ping(pool));
    ck_assert_int_eq(1, kill_pingers());
    ck_assert_int_eq(RDS_OK, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
    ck_assert(!rds_degraded(pool));
    ck_assert_int_eq(0, metric("paycallback_redis_errors_total"));
}
END_TEST

/* A loopback port nothing listens on. */
static int closed_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(0, bind(fd, (struct sockaddr *)&sa, sizeof sa));
    ck_assert_int_eq(0, getsockname(fd, (struct sockaddr *)&sa, &len));
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

START_TEST(unreachable_redis_degrades_and_is_tried_once_a_second)
{
    struct config down = cfg;
    struct rds_pool *p;
    int64_t left;
    long long errors;

    down.redis_port = closed_port();
    p = rds_pool_create(&down, m);
    ck_assert_ptr_nonnull(p);
    ck_assert(!rds_degraded(p));
    ck_assert_int_eq(RDS_DOWN, rds_lock_acquire(p, LOCK_KEY, HOLDER_A, 30000, 500));
    ck_assert(rds_degraded(p));
    ck_assert_int_eq(1, metric("paycallback_redis_degraded"));
    errors = metric("paycallback_redis_errors_total");
    ck_assert_int_ge(errors, 1);

    /* Within the second, nobody touches the network again. */
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(RDS_DOWN, rds_token_consume(p, TOKEN, &left));
    ck_assert_int_eq(RDS_DOWN, rds_token_put(p, TOKEN, 1000));
    ck_assert_int_le(metric("paycallback_redis_errors_total"), errors + 1);
    ck_assert_int_eq(12, metric("paycallback_redis_degraded_operations_total"));
    rds_pool_destroy(p);
}
END_TEST

START_TEST(timeout_degrades_and_the_next_probe_recovers)
{
    redisReply *r;

    ck_assert_int_eq(RDS_OK, rds_ping(pool));
    /* Redis stops answering for 600 ms: longer than redis.timeout_ms. */
    r = h_redis_cmd("CLIENT PAUSE 600 ALL");
    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_STATUS, "CLIENT PAUSE failed");
    freeReplyObject(r);
    ck_assert_int_eq(RDS_DOWN, rds_ping(pool));
    ck_assert(rds_degraded(pool));
    ck_assert_int_eq(RDS_DOWN, rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0));

    /* Once the pause is over, the next probe finds Redis again. */
    h_await(rds_lock_acquire(pool, LOCK_KEY, HOLDER_A, 30000, 0) == RDS_OK, RECOVER_WAIT_MS,
            "the lock was still refused %d ms after CLIENT PAUSE 600", RECOVER_WAIT_MS);
    ck_assert(!rds_degraded(pool));
    ck_assert_int_eq(0, metric("paycallback_redis_degraded"));
    ck_assert_int_eq(RDS_OK, rds_lock_release(pool, LOCK_KEY, HOLDER_A));
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static TCase *tcase(const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_add_checked_fixture(tc, pool_up, pool_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    return tc;
}

static Suite *redis_lock_suite(void)
{
    Suite *s = suite_create("redis_lock");
    TCase *tc;

    tc = tcase("the stock lock");
    tcase_add_test(tc, lock_is_taken_and_released_by_its_holder);
    tcase_add_test(tc, held_lock_is_busy_for_another_holder);
    tcase_add_test(tc, lock_has_the_ttl_it_was_given);
    tcase_add_test(tc, late_holder_cannot_release_the_next_holders_lock);
    tcase_add_test(tc, waiter_gets_the_lock_once_it_is_released);
    tcase_add_test(tc, lock_excludes_concurrent_holders);
    suite_add_tcase(s, tc);

    tc = tcase("tokens");
    tcase_add_test(tc, token_is_consumed_once_with_its_remaining_ttl);
    tcase_add_test(tc, token_consume_ignores_other_values);
    tcase_add_test(tc, scripts_survive_a_script_flush);
    suite_add_tcase(s, tc);

    tc = tcase("links and the degraded state");
    tcase_add_test(tc, dropped_link_is_replaced_without_degrading);
    tcase_add_test(tc, unreachable_redis_degrades_and_is_tried_once_a_second);
    tcase_add_test(tc, timeout_degrades_and_the_next_probe_recovers);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(redis_lock_suite, NULL, NULL);
