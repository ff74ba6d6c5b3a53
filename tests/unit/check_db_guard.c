/* check_db_guard.c - unit tests for the guard of a shard's pool (db.c):
 * the prober's health, the circuit breaker and the cap on requests in
 * flight, held from the first request. Connections are borrowed and given back, never
 * connected: no database is needed. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../check_main.h"
#include "config.h"
#include "db.h"

static struct config cfg;
static struct cfg_shard at;

static struct db_pool *guarded_pool(int size, int failures, int open_ms, int max_inflight,
                                    int stall_ms)
{
    struct db_pool *p;

    memset(&cfg, 0, sizeof(cfg));
    memset(&at, 0, sizeof(at));
    cfg.mysql_pool_size = size;
    at.id = 1;
    snprintf(at.host, sizeof(at.host), "127.0.0.1");
    at.port = 1;
    p = db_pool_create(&cfg, &at, NULL);
    ck_assert_ptr_nonnull(p);
    db_pool_guard(p, failures, open_ms, max_inflight, stall_ms, true, 1000);
    return p;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

START_TEST(a_shard_the_prober_finds_down_refuses_at_once_until_it_is_up)
{
    struct db_pool *p = guarded_pool(2, 3, 60000, 0, 250);
    enum db_refusal why;
    struct db_conn *c;

    ck_assert_int_eq(DB_HEALTH_UNKNOWN, db_pool_health(p, NULL));
    c = db_acquire_why(p, 0, &why); /* not probed yet: goes through */
    ck_assert_ptr_nonnull(c);
    db_release(p, c);

    db_pool_set_health(p, DB_HEALTH_DOWN, NULL);
    ck_assert(db_pool_outage(p));
    ck_assert_ptr_null(db_acquire_why(p, 1000, &why));
    ck_assert_int_eq(DB_REFUSED_OUTAGE, why);

    db_pool_set_health(p, DB_HEALTH_MAP_STALE, NULL);
    ck_assert_ptr_null(db_acquire_why(p, 1000, &why));
    ck_assert_int_eq(DB_REFUSED_MAP, why);

    db_pool_set_health(p, DB_HEALTH_UP, NULL);
    ck_assert(!db_pool_outage(p));
    c = db_acquire_why(p, 0, &why);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(DB_REFUSED_NONE, why);
    db_release(p, c);
    db_pool_destroy(p);
}
END_TEST

START_TEST(repeated_failures_open_the_breaker_and_one_trial_half_opens_it)
{
    struct db_pool *p = guarded_pool(1, 2, 150, 0, 250);
    enum db_refusal why;
    struct db_conn *held, *trial;

    /* The one connection is held: two waits that give up are two failures. */
    held = db_acquire(p, 0);
    ck_assert_ptr_nonnull(held);
    ck_assert_ptr_null(db_acquire_why(p, 1, &why));
    ck_assert_int_eq(DB_REFUSED_WAIT, why);
    ck_assert(!db_pool_outage(p));
    ck_assert_ptr_null(db_acquire_why(p, 1, &why));
    ck_assert_int_eq(DB_REFUSED_WAIT, why);
    ck_assert(db_pool_outage(p)); /* open */
    db_release(p, held);
    ck_assert_ptr_null(db_acquire_why(p, 1000, &why));
    ck_assert_int_eq(DB_REFUSED_OUTAGE, why);

    /* After the open time one trial goes through, and only one. */
    while (db_pool_outage(p))
        sleep_ms(10);
    trial = db_acquire_why(p, 0, &why);
    ck_assert_ptr_nonnull(trial);
    ck_assert_ptr_null(db_acquire_why(p, 0, &why));
    ck_assert_int_eq(DB_REFUSED_OUTAGE, why);
    db_release(p, trial); /* ran nothing: another may try */
    trial = db_acquire_why(p, 0, &why);
    ck_assert_ptr_nonnull(trial);
    db_release(p, trial);

    /* A successful probe closes it. */
    db_pool_set_health(p, DB_HEALTH_UP, NULL);
    held = db_acquire_why(p, 0, &why);
    ck_assert_ptr_nonnull(held);
    db_release(p, held);
    db_pool_destroy(p);
}
END_TEST

START_TEST(a_shard_at_its_cap_lets_nothing_more_in_from_the_first_request)
{
    struct db_pool *p = guarded_pool(4, 100, 60000, 2, 50);
    struct db_conn *a, *b, *c;
    enum db_refusal why;

    a = db_acquire(p, 0);
    b = db_acquire(p, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(2, db_pool_inflight(p));
    /* Nothing finishes: a third waits at most until the shard counts as
     * stalled, then is refused; it never goes in beside the two. */
    ck_assert_ptr_null(db_acquire_why(p, 0, &why));
    ck_assert_int_eq(DB_REFUSED_BUSY, why);
    ck_assert_int_eq(2, db_pool_inflight(p));
    sleep_ms(80); /* stalled: refused at once */
    ck_assert_ptr_null(db_acquire_why(p, 0, &why));
    ck_assert_int_eq(DB_REFUSED_BUSY, why);

    db_release(p, a); /* progress again */
    c = db_acquire_why(p, 0, &why);
    ck_assert_ptr_nonnull(c);
    db_release(p, c);
    db_release(p, b);
    ck_assert_int_eq(0, db_pool_inflight(p));
    db_pool_destroy(p);
}
END_TEST

struct taker {
    struct db_pool *p;
    struct db_conn *c;
    enum db_refusal why;
};

static void *take(void *arg)
{
    struct taker *t = arg;

    t->c = db_acquire_why(t->p, 0, &t->why);
    return NULL;
}

START_TEST(a_request_at_the_cap_of_a_progressing_shard_waits_for_a_slot)
{
    struct db_pool *p = guarded_pool(4, 100, 60000, 1, 60000);
    struct taker t = { .p = NULL };
    struct db_conn *a;
    pthread_t th;

    t.p = p;
    a = db_acquire(p, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(0, pthread_create(&th, NULL, take, &t));
    sleep_ms(20); /* let it reach the cap (it may also arrive after the release) */
    db_release(p, a);
    pthread_join(th, NULL);
    ck_assert_ptr_nonnull(t.c);
    ck_assert_int_eq(DB_REFUSED_NONE, t.why);
    ck_assert_int_eq(1, db_pool_inflight(p));
    db_release(p, t.c);
    db_pool_destroy(p);
}
END_TEST

static Suite *db_guard_suite(void)
{
    Suite *s = suite_create("db_guard");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, a_shard_the_prober_finds_down_refuses_at_once_until_it_is_up);
    tcase_add_test(tc, repeated_failures_open_the_breaker_and_one_trial_half_opens_it);
    tcase_add_test(tc, a_shard_at_its_cap_lets_nothing_more_in_from_the_first_request);
    tcase_add_test(tc, a_request_at_the_cap_of_a_progressing_shard_waits_for_a_slot);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(db_guard_suite, NULL, NULL);
