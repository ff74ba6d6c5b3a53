/* check_reconcile.c - the periodic reconciliation pass and retention,
 * against the real binary and real MariaDB: each planted case shows up in
 * its gauge, and a purge removes exactly what is past its window. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

static const char *const env_keep[] = { "PAYCALLBACK_RECONCILE_INTERVAL_S=1", NULL };

static const char *const env_purge_payments[] = {
    "PAYCALLBACK_RECONCILE_INTERVAL_S=1", "PAYCALLBACK_RETENTION_PAYMENT_DAYS=35",
    "PAYCALLBACK_RETENTION_BATCH=2", /* several batches per table */
    NULL
};

/* The value of an unlabelled sample in a /metrics scrape, or -1. */
static long long gauge(int port, const char *name)
{
    struct h_resp r;
    long long v = -1;
    size_t n = strlen(name);

    h_http(port, "GET", "/metrics", NULL, NULL, 0, &r);
    if (r.status == 200) {
        for (const char *line = r.body; line != NULL && *line != '\0';) {
            if (strncmp(line, name, n) == 0 && line[n] == ' ') {
                v = atoll(line + n + 1);
                break;
            }
            line = strchr(line, '\n');
            line = line != NULL ? line + 1 : NULL;
        }
    }
    h_resp_free(&r);
    return v;
}

static void payment(const char *pay_no, const char *order_no, int status, int age_days)
{
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome, create_time) "
              "VALUES ('%s', '%s', 899.00, %d, %d, NOW(3) - INTERVAL %d DAY)",
              pay_no, order_no, status, status == 1 ? 1 : 2, age_days);
}

static void event(const char *order_no, const char *type, int state, const char *published)
{
    h_db_exec(
        "INSERT INTO outbox (event_type, order_no, payload, state, create_time, published_at) "
        "VALUES ('%s', '%s', '{}', %d, NOW(3) - INTERVAL 40 DAY, %s)",
        type, order_no, state, published);
}

START_TEST(each_planted_case_shows_in_its_gauge)
{
    int port = h_port();

    h_db_insert_order("RS1", "u1", "899.00", 1); /* stale WAIT_PAY */
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 20 MINUTE WHERE order_no = 'RS1'");
    h_db_insert_order("RS2", "u1", "899.00", 1); /* fresh: not reported */
    h_db_insert_order("RS3", "u1", "899.00", 2);
    payment("PR1", "RS3", 1, 0);
    payment("PR2", "RS3", 2, 0);           /* a double charge */
    payment("PR3", "RS3", 3, 0);           /* settled: not reported */
    event("RS3", "order.paid", 2, "NULL"); /* dead */
    h_db_insert_order("RS4", "u1", "899.00", 2);
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, create_time) VALUES "
              "('order.paid', 'RS4', '{}', NOW(3) - INTERVAL 10 MINUTE)"); /* lagging */
    h_await(gauge(port, "paycallback_reconcile_wait_pay_stale") == 1 &&
                gauge(port, "paycallback_reconcile_refund_unsettled") == 1 &&
                gauge(port, "paycallback_outbox_dead") == 1 &&
                gauge(port, "paycallback_outbox_lagging") == 1,
            10000, "the gauges never showed the planted cases");
    ck_assert_int_eq(1, gauge(port, "paycallback_outbox_pending"));
    ck_assert_int_ge(gauge(port, "paycallback_outbox_lag_seconds"), 599);
    ck_assert_int_gt(gauge(port, "paycallback_reconcile_last_success_timestamp_seconds"), 0);
}
END_TEST

START_TEST(payment_records_are_kept_by_default)
{
    event("RK1", "order.paid", 1, "NOW(3) - INTERVAL 8 DAY");
    payment("PK1", "RK1", 1, 400);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'RK1'") == 0, 10000,
            "the delivered event past its window was not purged");
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = 'PK1'"));
}
END_TEST

static void keep_server_up(void)
{
    h_fixture_server_up_env(env_keep);
}

static void purge_server_up(void)
{
    h_fixture_server_up_env(env_purge_payments);
}

START_TEST(retention_purges_exactly_what_is_past_its_window)
{
    event("RP1", "order.paid", 1, "NOW(3) - INTERVAL 8 DAY"); /* purged */
    event("RP2", "order.paid", 1, "NOW(3) - INTERVAL 8 DAY"); /* purged */
    event("RP3", "order.paid", 1, "NOW(3) - INTERVAL 6 DAY"); /* kept: inside 7 days */
    event("RP4", "order.paid", 0, "NULL");                    /* kept: pending */
    event("RP5", "order.paid", 2, "NULL");                    /* kept: dead */
    payment("PP1", "RP1", 1, 40);                             /* purged */
    payment("PP2", "RP1", 3, 40);                             /* purged: settled */
    payment("PP3", "RP1", 2, 40);                             /* kept: unsettled refund */
    payment("PP4", "RP1", 1, 30);                             /* kept: inside 35 days */
    payment("PP5", "RP1", 1, 36);                             /* purged */
    h_db_exec("INSERT INTO idem_token (token, expires_at) VALUES "
              "('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', NOW(3) - INTERVAL 1 SECOND), "
              "('bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', NOW(3) + INTERVAL 1 HOUR)");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no IN "
                           "('PP1', 'PP2', 'PP5')") == 0,
            10000, "payment records past 35 days were not purged");
    /* The tokens are purged by their own step of the pass, maybe after. */
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM idem_token") == 1, 10000,
            "the expired token was not purged");
    ck_assert_int_eq(
        0, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no IN ('RP1', 'RP2')"));
    ck_assert_int_eq(3, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no IN "
                                       "('RP3', 'RP4', 'RP5')"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no IN "
                                       "('PP3', 'PP4')"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM idem_token"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM idem_token WHERE token LIKE 'b%%'"));
}
END_TEST

START_TEST(a_payment_window_under_35_days_is_refused)
{
    static const char *const env[] = { "PAYCALLBACK_RETENTION_PAYMENT_DAYS=30", NULL };
    struct h_server *s = h_server_start(env);

    ck_assert_msg(s == NULL, "the service started with a 30-day payment retention");
}
END_TEST

static Suite *reconcile_suite(void)
{
    Suite *s = suite_create("reconcile");
    TCase *tc = tcase_create("reconcile");

    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_add_unchecked_fixture(tc, keep_server_up, h_fixture_server_down);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_planted_case_shows_in_its_gauge);
    tcase_add_test(tc, payment_records_are_kept_by_default);
    suite_add_tcase(s, tc);

    tc = tcase_create("retention");
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_add_unchecked_fixture(tc, purge_server_up, h_fixture_server_down);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, retention_purges_exactly_what_is_past_its_window);
    suite_add_tcase(s, tc);

    tc = tcase_create("config");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_payment_window_under_35_days_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(reconcile_suite, NULL, NULL);
