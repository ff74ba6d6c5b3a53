/* check_shards.c - a sharded service (mysql.shards) against the real
 * binary and MariaDB: shard 1 is the test database, shard 2 its _s2 twin
 * on the same server (h_shards_env). This file holds what every sharded
 * path stands on: the start checks each shard's schema, /readyz and
 * /metrics report each shard, and one shard down leaves the service ready
 * while naming the shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define TC_TIMEOUT_S 60

static void sharded_server_up(void)
{
    const char *env[] = { h_shards_env(), NULL };

    h_fixture_server_up_env(env);
}

/* Shard 2 points at a port nothing listens on: a shard that is down. */
static void half_down_server_up(void)
{
    static char shards[512];
    const char *env[] = { shards, "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200", NULL };
    const char *db = getenv("PCB_TEST_MYSQL_DB") ? getenv("PCB_TEST_MYSQL_DB") : "paycallback_test";
    const char *port = getenv("PCB_TEST_MYSQL_PORT") ? getenv("PCB_TEST_MYSQL_PORT") : "3307";

    snprintf(shards, sizeof shards, "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:%s/%s,"
             "2=127.0.0.1:1/%s" H_SHARD2_SUFFIX, port, db, db);
    h_fixture_server_up_env(env);
}

START_TEST(readyz_lists_every_shard_up)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "up");
    ck_assert_msg(strstr(r.body, "\"shards\":{\"1\":\"up\",\"2\":\"up\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=2", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"shards\":{\"2\":\"up\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=3", NULL, NULL, 0, &r));
    h_assert_error(&r, 404, "NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=x", NULL, NULL, 0, &r));
    h_assert_error(&r, 404, "NOT_FOUND");
    h_resp_free(&r);

    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"1\"}"));
    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"2\"}"));
    ck_assert_int_eq(0, h_metric("paycallback_shard_unavailable_total{shard=\"2\"}"));
}
END_TEST

START_TEST(one_shard_down_keeps_the_service_ready_and_names_it)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "ready");
    h_assert_str(&r, "mysql", "partial");
    ck_assert_msg(strstr(r.body, "\"shards\":{\"1\":\"up\",\"2\":\"down\"}") != NULL, "%s",
                  r.body);
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=2", NULL, NULL, 0, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);

    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz?shard=1", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);

    ck_assert_int_eq(1, h_metric("paycallback_shard_ready{shard=\"1\"}"));
    ck_assert_int_eq(0, h_metric("paycallback_shard_ready{shard=\"2\"}"));
    ck_assert_int_eq(1, h_metric("paycallback_ready"));
}
END_TEST

START_TEST(check_config_probes_every_shard)
{
    const char *env[] = { h_shards_env(), NULL };
    const char *args[] = { "--check-config", NULL };
    struct h_run run;

    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "shard 1: mysql") != NULL, "%s", run.out);
    ck_assert_msg(strstr(run.out, "shard 2: mysql") != NULL && strstr(run.out, H_SHARD2_SUFFIX),
                  "%s", run.out);
    h_run_free(&run);
}
END_TEST

static Suite *shards_suite(void)
{
    Suite *s = suite_create("shards");
    TCase *tc = h_tcase_with("two shards up", TC_TIMEOUT_S, sharded_server_up,
                             h_fixture_server_down);

    tcase_add_test(tc, readyz_lists_every_shard_up);
    tcase_add_test(tc, check_config_probes_every_shard);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 down", TC_TIMEOUT_S, half_down_server_up, h_fixture_server_down);
    tcase_add_test(tc, one_shard_down_keeps_the_service_ready_and_names_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(shards_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
