/* check_shards_identity.c - a shard's database knows which shard of which
 * cluster it is (shard_identity, written by `paycallback shards init`):
 * a blank, swapped or foreign database configured as a shard is refused at
 * start, found at SIGHUP (the shard answers 503, an alert is logged), and
 * never pays; tools refuse it before writing a row. Shard 1 is the test
 * database, shard 2 its _s2 twin (h_shards_env), cluster H_CLUSTER_ID. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define START_REFUSED_MS 15000 /* bound on a start that must end by itself */

/* Empties both shards' identities and maps: the next sharded start's
 * shards init makes a new cluster of them. */
static void forget_identities(void)
{
    struct h_db *db = h_db_open();
    unsigned int e;

    for (int id = 1; id <= 2; id++) {
        h_db_sql(db, "DELETE FROM `%s`.shard_map", h_shard_db(id));
        e = h_db_try(db, "DELETE FROM `%s`.shard_identity", h_shard_db(id));
        ck_assert_msg(e == 0 || e == 1146, "DELETE FROM shard_identity: errno %u", e);
    }
    h_db_close(db);
}

/* Each test: clean databases and Redis, a new cluster of both shards, and
 * a server over them (the harness runs shards init first). */
static void cluster_up(void)
{
    h_fixture_clean();
    forget_identities();
    h_fixture_sharded_up();
}

/* The same with a prober that would not look again for a minute: what a
 * shard's database turned into is found only because SIGHUP asks. */
static void cluster_slow_probe_up(void)
{
    const char *env[] = { h_shards_env(), "PAYCALLBACK_MYSQL_PROBE_INTERVAL_MS=60000", NULL };

    h_fixture_clean();
    forget_identities();
    h_fixture_server_up_env(env);
}

static void cluster_down(void)
{
    if (h_srv != NULL)
        h_fixture_server_down();
    h_srv = NULL;
    forget_identities(); /* the next suite's start makes its own */
}

/* A pay_no whose registry row is placed on shard want. */
static void pay_no_on(int want, const char *prefix, char *out, size_t outsz)
{
    for (int i = 0;; i++) {
        snprintf(out, outsz, "%s-%d", prefix, i);
        if (h_shard_place(out) == want)
            return;
    }
}

/* Payments of pay_no on both shards. */
static long long payments_of(const char *pay_no)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s'", pay_no) +
           h_db_scalar_ll("SELECT COUNT(*) FROM `%s`.payment_record WHERE pay_no = '%s'",
                          h_shard_db(2), pay_no);
}

/* Shard 2's database made blank: no identity, no map, no row, as a newly
 * made and migrated database is. */
static void blank_shard_2(void)
{
    static const char *const tables[] = { "orders",          "payment_record", "outbox",
                                          "pay_no_registry", "pay_no_fence",   "checkout_registry",
                                          "shard_map",       "shard_identity" };

    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        h_db_exec("DELETE FROM `%s`.%s", h_shard_db(2), tables[i]);
}

static void insert_order_on_2(const char *order_no)
{
    h_db_exec("INSERT INTO `%s`.orders (order_no, user_id, request_id, sku, quantity, amount, "
              "status) VALUES ('%s', 'u-id', 'req-%s', 'SHOE-42', 1, 899.00, 1)",
              h_shard_db(2), order_no, order_no);
}

/* Runs the service over both shards; a refused start ends by itself. */
static void start_run(const char *const *env, struct h_run *run)
{
    const char *args[] = { "-c", "config/paycallback.json", NULL };

    h_run(args, env, START_REFUSED_MS, run);
}

/* ---- at start ----------------------------------------------------------------- */

START_TEST(a_blank_database_as_shard_2_is_not_adopted_and_pays_nothing_again)
{
    const char *env[] = { h_shards_env(), NULL };
    struct h_server *again;
    struct h_run run;
    struct h_resp r;
    char pay_no[64];
    const char *line;
    int status = 0;

    /* A pay_no whose binding lives on shard 2, paid for an order of shard 1. */
    pay_no_on(2, "PAY-BLANK", pay_no, sizeof pay_no);
    h_db_insert_order("S01-BLANK1", "u-id", "899.00", 1);
    ck_assert_int_eq(0, h_callback(h_port(), "S01-BLANK1", pay_no, "899.00", &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_fixture_server_down();
    h_srv = NULL;

    /* Shard 2 now points at a blank, migrated database holding a new order;
     * the same pay_no arrives for it. It must never be paid a second time. */
    blank_shard_2();
    insert_order_on_2("S02-BLANK2");
    again = h_server_start(env);
    if (again != NULL) {
        ck_assert_int_eq(0, h_callback(h_server_port(again), "S02-BLANK2", pay_no, "899.00", &r));
        status = r.status;
        h_resp_free(&r);
        h_server_stop(again);
    }
    ck_assert_msg(payments_of(pay_no) == 1, "%s paid %lld times (last answer %d)", pay_no,
                  payments_of(pay_no), status);
    ck_assert_msg(again == NULL, "a service started on a blank shard 2");
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM `%s`.shard_map", h_shard_db(2)));

    start_run(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    line = strstr(run.err, "paycallback: shard identity: shard 2 ");
    ck_assert_msg(line != NULL && strstr(line, "has no shard identity") != NULL &&
                      strstr(line, "has no shard identity") < strchr(line, '\n'),
                  "not one line naming shard 2: %s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(a_foreign_database_as_shard_2_is_refused_at_start)
{
    const char *env[] = { h_shards_env(), NULL };
    struct h_run run;

    h_db_exec("UPDATE `%s`.shard_identity SET cluster_id = 'another-cluster'", h_shard_db(2));
    start_run(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "belongs to cluster another-cluster") != NULL, "%s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(a_swapped_pair_of_shards_is_refused_at_start)
{
    char env0[512];
    const char *env[] = { env0, NULL };
    struct h_run run;
    const char *port = getenv("PCB_TEST_MYSQL_PORT");

    snprintf(env0, sizeof env0, "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:%s/%s,2=127.0.0.1:%s/%s",
             port != NULL ? port : "3307", h_shard_db(2), port != NULL ? port : "3307",
             h_shard_db(1));
    start_run(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "is shard 2 of cluster " H_CLUSTER_ID ", configured as shard 1"),
                  "%s", run.err);
    h_run_free(&run);
}
END_TEST

START_TEST(a_service_of_another_cluster_id_is_refused_at_start)
{
    const char *env[] = { h_shards_env(), "PAYCALLBACK_MYSQL_CLUSTER_ID=other", NULL };
    struct h_run run;

    start_run(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "belongs to cluster " H_CLUSTER_ID ", configured cluster is "
                                  "other") != NULL,
                  "%s", run.err);
    h_run_free(&run);
}
END_TEST

/* ---- shards init -------------------------------------------------------------- */

static void shards_init(const char *const *env, struct h_run *run)
{
    const char *args[] = { "-c", "config/paycallback.json", "shards", "init", NULL };

    h_run(args, env, 20000, run);
}

START_TEST(shards_init_adopts_shards_that_hold_their_map_and_is_rerunnable)
{
    const char *env[] = { h_shards_env(), NULL };
    struct h_run run;

    /* A deployment sharded before identities: maps, no identity. */
    for (int id = 1; id <= 2; id++)
        h_db_exec("DELETE FROM `%s`.shard_identity", h_shard_db(id));
    shards_init(env, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "shard 2: shard 2 of cluster " H_CLUSTER_ID ": adopted"), "%s",
                  run.out);
    h_run_free(&run);
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT shard_id FROM `%s`.shard_identity WHERE "
                                       "cluster_id = '" H_CLUSTER_ID "'",
                                       h_shard_db(2)));
    shards_init(env, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "shard 1: already shard 1"), "%s", run.out);
    h_run_free(&run);
}
END_TEST

START_TEST(shards_init_finishes_a_new_cluster_whose_first_map_was_not_written)
{
    const char *env[] = { h_shards_env(), NULL };
    struct h_run run;

    /* A first run that wrote every identity and stopped before the map. */
    for (int id = 1; id <= 2; id++)
        h_db_exec("DELETE FROM `%s`.shard_map", h_shard_db(id));
    shards_init(env, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "shards 1,2, shard map epoch 1 written"), "%s", run.out);
    h_run_free(&run);
    for (int id = 1; id <= 2; id++)
        ck_assert_int_eq(id, h_db_scalar_ll("SELECT shard_id FROM `%s`.shard_map WHERE epoch = 1 "
                                            "AND shard_ids = '1,2'",
                                            h_shard_db(id)));
}
END_TEST

START_TEST(shards_init_never_gives_a_blank_database_a_shard_id_the_cluster_has)
{
    const char *env[] = { h_shards_env(), NULL };
    struct h_run run;

    blank_shard_2();
    shards_init(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "shard 2") && strstr(run.err, "blank database") &&
                      strstr(run.err, "nothing written"),
                  "%s", run.err);
    h_run_free(&run);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM `%s`.shard_identity", h_shard_db(2)));
}
END_TEST

START_TEST(shards_init_refuses_another_clusters_database)
{
    const char *env[] = { h_shards_env(), "PAYCALLBACK_MYSQL_CLUSTER_ID=other", NULL };
    struct h_run run;

    shards_init(env, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "belongs to cluster " H_CLUSTER_ID), "%s", run.err);
    h_run_free(&run);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM shard_identity WHERE cluster_id = "
                                       "'other'"));
}
END_TEST

/* ---- tools -------------------------------------------------------------------- */

START_TEST(backfill_refuses_a_swapped_map_and_writes_nothing)
{
    char env0[512];
    const char *env[] = { env0, NULL };
    const char *args[] = { "--backfill-registries", NULL };
    const char *port = getenv("PCB_TEST_MYSQL_PORT");
    struct h_run run;

    /* Payments made before sharding, on both databases, not yet bound. */
    h_db_insert_order("S01-BF1", "u-bf", "899.00", 2);
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) VALUES "
              "('PAY-BF-1', 'S01-BF1', 899.00, 1, 1)");
    snprintf(env0, sizeof env0, "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:%s/%s,2=127.0.0.1:%s/%s",
             port != NULL ? port : "3307", h_shard_db(2), port != NULL ? port : "3307",
             h_shard_db(1));
    h_run(args, env, 30000, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "shard identity") != NULL, "%s", run.err);
    h_run_free(&run);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM pay_no_registry"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM `%s`.pay_no_registry", h_shard_db(2)));
}
END_TEST

START_TEST(write_shard_map_refuses_a_blank_shard)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--write-shard-map", NULL };
    struct h_run run;

    h_db_exec("DELETE FROM `%s`.shard_identity", h_shard_db(2));
    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status == 2, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "has no shard identity") && strstr(run.err, "nothing written"),
                  "%s", run.err);
    h_run_free(&run);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT epoch FROM shard_map"));
}
END_TEST

/* ---- at SIGHUP ---------------------------------------------------------------- */

/* What shard 2's database turns into under a running instance: blank (its
 * identity gone), foreign (another cluster's) or swapped (shard 1's). */
static const char *const turned[] = {
    "DELETE FROM `%s`.shard_identity",
    "UPDATE `%s`.shard_identity SET cluster_id = 'another-cluster'",
    "UPDATE `%s`.shard_identity SET shard_id = 1",
};
static const char *const turned_why[] = {
    "has no shard identity",
    "belongs to cluster another-cluster",
    "is shard 1 of cluster " H_CLUSTER_ID ", configured as shard 2",
};

static int shard_2_refuses(void)
{
    struct h_resp r;
    int refused;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    refused = r.body != NULL && strstr(r.body, "\"2\":\"map_changed\"") != NULL;
    h_resp_free(&r);
    return refused;
}

START_TEST(a_shard_database_replaced_under_a_running_instance_is_refused_at_sighup)
{
    const char *parts[] = { "SHARD_MAP_CHANGED", "shard=2", turned_why[_i], NULL };
    struct h_resp r;
    char pay_no[64], *line;

    insert_order_on_2("S02-HUP1");
    h_db_insert_order("S01-HUP1", "u-id", "899.00", 1);
    h_db_exec(turned[_i], h_shard_db(2));
    ck_assert_int_eq(0, h_server_signal(h_srv, SIGHUP));
    h_await(shard_2_refuses(), 10000, "shard 2 never refused after SIGHUP");

    pay_no_on(1, "PAY-HUP", pay_no, sizeof pay_no);
    ck_assert_int_eq(0, h_callback(h_port(), "S02-HUP1", pay_no, "899.00", &r));
    h_assert_status(&r, 503);
    h_resp_free(&r);
    ck_assert_int_eq(0, payments_of(pay_no));
    line = h_log_find(parts, 5000);
    ck_assert_msg(line != NULL, "no SHARD_MAP_CHANGED alert naming shard 2: %s", turned_why[_i]);
    free(line);

    /* Shard 1 still pays what needs only shard 1. */
    ck_assert_int_eq(0, h_callback(h_port(), "S01-HUP1", pay_no, "899.00", &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

static Suite *identity_suite(void)
{
    Suite *s = suite_create("shards_identity");
    TCase *tc = tcase_create("at start and by tools");

    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_checked_fixture(tc, cluster_up, cluster_down);
    tcase_add_test(tc, a_blank_database_as_shard_2_is_not_adopted_and_pays_nothing_again);
    tcase_add_test(tc, a_foreign_database_as_shard_2_is_refused_at_start);
    tcase_add_test(tc, a_swapped_pair_of_shards_is_refused_at_start);
    tcase_add_test(tc, a_service_of_another_cluster_id_is_refused_at_start);
    tcase_add_test(tc, shards_init_adopts_shards_that_hold_their_map_and_is_rerunnable);
    tcase_add_test(tc, shards_init_finishes_a_new_cluster_whose_first_map_was_not_written);
    tcase_add_test(tc, shards_init_never_gives_a_blank_database_a_shard_id_the_cluster_has);
    tcase_add_test(tc, shards_init_refuses_another_clusters_database);
    tcase_add_test(tc, backfill_refuses_a_swapped_map_and_writes_nothing);
    tcase_add_test(tc, write_shard_map_refuses_a_blank_shard);
    suite_add_tcase(s, tc);

    tc = tcase_create("at SIGHUP");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_checked_fixture(tc, cluster_slow_probe_up, cluster_down);
    tcase_add_loop_test(tc, a_shard_database_replaced_under_a_running_instance_is_refused_at_sighup,
                        0, 3);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(identity_suite, NULL, NULL);
