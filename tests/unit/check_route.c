/* check_route.c - unit tests for route.c: a hop holds one connection at a
 * time, a scan notes the shards it missed and fails only when none
 * answered, and the unavailable shards are counted there. The pools (one
 * connection each) are created but never connected: each scan's step says
 * itself what its shard answered, and holding a pool's only connection
 * makes that shard "no free connection". No database is needed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "metrics.h"
#include "route.h"
#include "shard.h"
#include "../check_main.h"

static struct config cfg;
static struct shard_set set;
static struct metrics *m;
static struct route rt;

/* Two shards, ids 1 and 2, one connection each. */
static void setup(void)
{
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.mysql_host, sizeof(cfg.mysql_host), "127.0.0.1");
    snprintf(cfg.mysql_database, sizeof(cfg.mysql_database), "paycallback");
    cfg.mysql_port = 3306;
    cfg.mysql_pool_size = 1;
    for (int i = 0; i < 2; i++) {
        cfg.shards[i].id = i + 1;
        snprintf(cfg.shards[i].host, sizeof(cfg.shards[i].host), "127.0.0.1");
        cfg.shards[i].port = 40001 + i;
        snprintf(cfg.shards[i].database, sizeof(cfg.shards[i].database), "paycallback");
    }
    cfg.nshards = 2;
    m = metrics_create(NULL, 0); /* no routes: only the shard series matter */
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(0, shard_set_open(&set, &cfg, m));
    rt = (struct route){ .set = &set, .wait_ms = 0, .m = m, .request_id = "test" };
}

static void teardown(void)
{
    shard_set_close(&set);
    metrics_destroy(m);
}

/* paycallback_shard_unavailable_total of shard id, as rendered. */
static long unavailable_count(int id)
{
    char series[96];
    size_t len = 0, n;
    char *text = metrics_render(m, &len), *at;
    long v = -1;

    ck_assert_ptr_nonnull(text);
    n = (size_t)snprintf(series, sizeof(series),
                         "paycallback_shard_unavailable_total{shard=\"%d\"} ", id);
    if ((at = strstr(text, series)) != NULL)
        v = strtol(at + n, NULL, 10);
    free(text);
    return v;
}

/* What each shard's step answers, and how often each was asked. */
struct script {
    enum route_step answer[2];
    int calls[2];
};

static enum route_step scripted(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct script *s = arg;

    ck_assert_ptr_nonnull(c);
    s->calls[sh->index]++;
    return s->answer[sh->index];
}

START_TEST(scan_with_one_shard_missed_answers_and_counts_nothing)
{
    struct script s = { { ROUTE_MISSED, ROUTE_NEXT }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_int_eq(ROUTE_OK, route_scan(&rt, 0, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(2, (int)sc.asked);
    ck_assert_int_eq(1, (int)sc.nmissed);
    ck_assert(sc.missed[0]);
    ck_assert(!sc.missed[1]);
    ck_assert(sc.fail.unavailable);
    ck_assert(sc.fail.logged);
    ck_assert_int_eq(0, unavailable_count(1));
    ck_assert_int_eq(0, unavailable_count(2));
}
END_TEST

START_TEST(scan_with_every_shard_missed_is_unavailable_and_counts_each_once)
{
    struct script s = { { ROUTE_MISSED, ROUTE_MISSED }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_int_eq(ROUTE_UNAVAILABLE, route_scan(&rt, 0, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(2, (int)sc.nmissed);
    ck_assert_int_eq(1, unavailable_count(1));
    ck_assert_int_eq(1, unavailable_count(2));
}
END_TEST

START_TEST(scan_stops_when_a_shard_says_enough)
{
    struct script s = { { ROUTE_STOP, ROUTE_NEXT }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_int_eq(ROUTE_OK, route_scan(&rt, 0, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(1, s.calls[0]);
    ck_assert_int_eq(0, s.calls[1]);
    ck_assert_int_eq(1, (int)sc.asked);
}
END_TEST

START_TEST(scan_fails_at_the_first_error_without_asking_further)
{
    struct script s = { { ROUTE_ERROR, ROUTE_NEXT }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_int_eq(ROUTE_FAILED, route_scan(&rt, 0, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(0, s.calls[1]);
    ck_assert(!sc.fail.unavailable);
    ck_assert_ptr_eq(&set.s[0], sc.fail.shard);
    ck_assert_str_eq("test_read", sc.fail.step);
    ck_assert_int_eq(0, unavailable_count(1));
}
END_TEST

START_TEST(scan_starts_at_the_shard_it_is_given)
{
    struct script s = { { ROUTE_NEXT, ROUTE_NEXT }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_int_eq(ROUTE_OK, route_scan(&rt, 1, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(0, s.calls[0]);
    ck_assert_int_eq(1, s.calls[1]);
}
END_TEST

START_TEST(scan_misses_a_shard_with_no_free_connection)
{
    struct db_conn *held = shard_acquire(&set.s[0], 0);
    struct script s = { { ROUTE_NEXT, ROUTE_NEXT }, { 0, 0 } };
    struct route_scan sc;

    ck_assert_ptr_nonnull(held);
    ck_assert_int_eq(ROUTE_OK, route_scan(&rt, 0, "test_read", scripted, &s, &sc));
    ck_assert_int_eq(0, s.calls[0]);
    ck_assert_int_eq(1, s.calls[1]);
    ck_assert(sc.missed[0]);
    ck_assert(sc.fail.no_conn);
    shard_release(&set.s[0], held);
}
END_TEST

START_TEST(hop_gives_back_one_shard_before_taking_another)
{
    struct route_failure f;
    struct route_hop h;
    struct db_conn *c;

    route_hop_init(&h, &rt, &f);
    ck_assert_ptr_nonnull(route_hop_to(&h, &set.s[0], "step_a"));
    ck_assert_ptr_nonnull(route_hop_to(&h, &set.s[1], "step_b"));
    /* Shard 1's only connection is free again: the hop holds shard 2's. */
    c = shard_acquire(&set.s[0], 0);
    ck_assert_ptr_nonnull(c);
    shard_release(&set.s[0], c);
    ck_assert_ptr_null(shard_acquire(&set.s[1], 0));
    route_hop_release(&h);
    c = shard_acquire(&set.s[1], 0);
    ck_assert_ptr_nonnull(c);
    shard_release(&set.s[1], c);
}
END_TEST

START_TEST(hop_without_a_free_connection_fails_and_counts_its_shard)
{
    struct db_conn *held = shard_acquire(&set.s[1], 0);
    struct route_failure f;
    struct route_hop h;

    route_hop_init(&h, &rt, &f);
    ck_assert_ptr_null(route_hop_to(&h, &set.s[1], "step_b"));
    ck_assert(f.unavailable);
    ck_assert(f.no_conn);
    ck_assert_ptr_eq(&set.s[1], f.shard);
    ck_assert_str_eq("step_b", f.step);
    ck_assert_int_eq(1, unavailable_count(2));
    ck_assert_int_eq(0, unavailable_count(1));
    shard_release(&set.s[1], held);
}
END_TEST

START_TEST(uncounted_hop_records_its_failure_without_counting)
{
    struct db_conn *held = shard_acquire(&set.s[0], 0);
    struct route_failure f;
    struct route_hop h;

    route_hop_init(&h, &rt, &f);
    h.uncounted = true;
    ck_assert_ptr_null(route_hop_to(&h, &set.s[0], "step_a"));
    ck_assert(f.no_conn);
    ck_assert_int_eq(0, unavailable_count(1));
    shard_release(&set.s[0], held);
}
END_TEST

START_TEST(a_failed_step_counts_only_when_retryable)
{
    struct route_failure f;
    struct route_hop h;

    route_hop_init(&h, &rt, &f);
    ck_assert_ptr_nonnull(route_hop_to(&h, &set.s[0], "step_a"));
    route_failed(&h, false, "step_a");
    ck_assert(!f.unavailable);
    ck_assert_int_eq(0, unavailable_count(1));
    route_failed(&h, true, "step_a");
    ck_assert(f.unavailable);
    ck_assert_int_eq(1, unavailable_count(1));
    route_hop_release(&h);
}
END_TEST

static Suite *route_suite(void)
{
    Suite *s = suite_create("route");
    TCase *scan = tcase_create("scan"), *hop = tcase_create("hop");

    tcase_add_checked_fixture(scan, setup, teardown);
    tcase_add_test(scan, scan_with_one_shard_missed_answers_and_counts_nothing);
    tcase_add_test(scan, scan_with_every_shard_missed_is_unavailable_and_counts_each_once);
    tcase_add_test(scan, scan_stops_when_a_shard_says_enough);
    tcase_add_test(scan, scan_fails_at_the_first_error_without_asking_further);
    tcase_add_test(scan, scan_starts_at_the_shard_it_is_given);
    tcase_add_test(scan, scan_misses_a_shard_with_no_free_connection);
    suite_add_tcase(s, scan);
    tcase_add_checked_fixture(hop, setup, teardown);
    tcase_add_test(hop, hop_gives_back_one_shard_before_taking_another);
    tcase_add_test(hop, hop_without_a_free_connection_fails_and_counts_its_shard);
    tcase_add_test(hop, uncounted_hop_records_its_failure_without_counting);
    tcase_add_test(hop, a_failed_step_counts_only_when_retryable);
    suite_add_tcase(s, hop);
    return s;
}

CHECK_MAIN(route_suite, NULL, NULL);
