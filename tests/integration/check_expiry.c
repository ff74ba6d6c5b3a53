/* check_expiry.c - the payment window, against the real binary and real
 * MariaDB: an unpaid order past reconcile.payment_window_s is closed by
 * the periodic pass (stock back, an order.canceled event with its reason,
 * an audit row), only once every query endpoint (tests/tools/
 * query_responder.py) says it has no payment; a payment that arrives
 * after the close is kept as REFUND_REQUIRED; with two shards, each
 * shard's orders expire. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TOKEN "query-token-0123456789abcdef"
#define TC_TIMEOUT_S 120
#define WAIT_MS 30000

static struct h_tool rsp;

/* Plants what the query endpoint answers about order_no. */
static void plant(const char *order_no, const char *mode, const char *pay_no)
{
    char body[512];
    struct h_resp r;

    snprintf(body, sizeof(body),
             "{\"path\":\"/q\",\"order_no\":\"%s\",\"mode\":\"%s\","
             "\"pay_no\":\"%s\",\"amount\":\"899.00\",\"currency\":\"CNY\"}",
             order_no, mode, pay_no);
    h_http(rsp.port, "POST", "/_plant", NULL, body, strlen(body), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* Creates an order of one SHOE-42 through the API; its order_no in out. */
static void create_order(const char *request_id, char out[64])
{
    char token[H_TOKEN_BUF], *no;
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-exp", request_id, "SHOE-42", 1, &r);
    h_assert_status(&r, 201);
    no = h_json_get_str(r.body, "order_no");
    ck_assert_ptr_nonnull(no);
    snprintf(out, 64, "%s", no);
    free(no);
    h_resp_free(&r);
}

/* Moves an order's creation two hours back: past a one-minute window. */
static void age(const char *order_no)
{
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 2 HOUR WHERE order_no = '%s'",
              order_no);
}

static long long stock(void)
{
    return h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'");
}

/* Waits until a pass that started after now has completed. */
static void await_pass(void)
{
    long long t0 = h_metric("paycallback_reconcile_last_success_timestamp_seconds");

    h_await(h_metric("paycallback_reconcile_last_success_timestamp_seconds") > t0 + 2, WAIT_MS,
            "no reconciliation pass completed");
}

/* ---- without a query endpoint --------------------------------------------- */

static void plain_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_RECONCILE_INTERVAL_S=1",
                                       "PAYCALLBACK_RECONCILE_PAYMENT_WINDOW_S=60", NULL };

    h_fixture_server_up_env(env);
}

START_TEST(an_unpaid_order_past_the_window_expires_and_returns_its_stock)
{
    char old_no[64], fresh_no[64];
    long long full = stock(), expired0 = h_metric("paycallback_orders_expired_total");

    create_order("exp-1", old_no);
    create_order("exp-2", fresh_no);
    ck_assert_int_eq(full - 2, stock());
    age(old_no);
    h_await(h_order_status(old_no) == 9, WAIT_MS, "order %s never expired", old_no);
    ck_assert_int_eq(full - 1, stock());
    /* The same pass saw the fresh order and left it waiting. */
    ck_assert_int_eq(1, h_order_status(fresh_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = '%s' AND "
                                       "event_type = 'order.canceled' AND payload LIKE "
                                       "'%%\"reason\":\"payment_window_expired\"%%'",
                                       old_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE subject = '%s' AND "
                                       "actor = 'service' AND action = 'order.expire'",
                                       old_no));
    ck_assert_int_eq(expired0 + 1, h_metric("paycallback_orders_expired_total"));
    await_pass();
    ck_assert_int_eq(full - 1, stock()); /* returned once */
    ck_assert_int_eq(0, h_metric("paycallback_reconcile_wait_pay_overdue"));
}
END_TEST

START_TEST(a_payment_after_expiry_is_kept_and_flagged_for_refund)
{
    char order_no[64], *result;
    long long doubles = h_metric("paycallback_double_payments_total");
    struct h_resp r;

    create_order("exp-3", order_no);
    age(order_no);
    h_await(h_order_status(order_no) == 9, WAIT_MS, "order %s never expired", order_no);
    h_callback(h_port(), order_no, "PAY-LATE-1", "899.00", &r);
    h_assert_status(&r, 200);
    result = h_json_get_str(r.body, "result");
    ck_assert_str_eq("REFUND_REQUIRED", result);
    free(result);
    h_resp_free(&r);
    ck_assert_int_eq(9, h_order_status(order_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'PAY-LATE-1' AND order_no = '%s' AND status = 2",
                                       order_no));
    ck_assert_int_eq(doubles + 1, h_metric("paycallback_double_payments_total"));
    /* The refund queue lists it. */
    h_http(h_port(), "GET", "/ops/refunds", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "PAY-LATE-1") != NULL, "%s", r.body);
    h_resp_free(&r);
}
END_TEST

/* ---- window off ------------------------------------------------------------ */

static void off_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_RECONCILE_INTERVAL_S=1",
                                       "PAYCALLBACK_RECONCILE_PAYMENT_WINDOW_S=0", NULL };

    h_fixture_server_up_env(env);
}

START_TEST(a_window_of_zero_never_expires_an_order)
{
    h_db_insert_order("EX-OFF", "u1", "899.00", 1);
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 400 DAY WHERE order_no = "
              "'EX-OFF'");
    await_pass();
    ck_assert_int_eq(1, h_order_status("EX-OFF"));
    ck_assert_int_eq(0, h_metric("paycallback_orders_expired_total"));
}
END_TEST

/* ---- with a query endpoint ------------------------------------------------- */

static void query_up(void)
{
    char url[128];
    const char *env[6];

    h_tool_start(&rsp, "query_responder.py", (const char *const[]){ "--token", TOKEN, NULL });
    snprintf(url, sizeof(url), "PAYCALLBACK_CALLBACK_QUERY_URL=http://127.0.0.1:%d/q", rsp.port);
    env[0] = url;
    env[1] = "PAYCALLBACK_CALLBACK_QUERY_TOKEN=" TOKEN;
    env[2] = "PAYCALLBACK_CALLBACK_QUERY_TIMEOUT_MS=500";
    env[3] = "PAYCALLBACK_RECONCILE_INTERVAL_S=1";
    env[4] = "PAYCALLBACK_RECONCILE_PAYMENT_WINDOW_S=60";
    env[5] = NULL;
    h_fixture_server_up_env(env);
}

static void query_down(void)
{
    h_fixture_server_down();
    h_tool_stop(&rsp);
}

START_TEST(only_an_order_the_gateway_confirms_unpaid_expires)
{
    char notpay[64], paid[64], failing[64];
    long long deferred0 = h_metric("paycallback_order_expiry_deferred_total");
    long long full = stock();

    create_order("exq-1", notpay);
    create_order("exq-2", paid);
    create_order("exq-3", failing);
    plant(notpay, "NOTPAY", "");
    plant(paid, "PAID", "QPAY-EX2");
    plant(failing, "500", "");
    age(notpay);
    age(paid);
    age(failing);
    h_await(h_order_status(notpay) == 9, WAIT_MS, "the NOTPAY order never expired");
    h_await(h_metric("paycallback_order_expiry_deferred_total") > deferred0, WAIT_MS,
            "the failing endpoint's order was never deferred");
    ck_assert_int_eq(2, h_order_status(paid));
    ck_assert_int_eq(1, h_order_status(failing));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'QPAY-EX2' AND status = 1"));
    ck_assert_int_eq(full - 2, stock()); /* only the NOTPAY one came back */
    h_await(h_metric("paycallback_reconcile_wait_pay_overdue") == 1, WAIT_MS,
            "the deferred order is not reported overdue");
    /* The gateway answers at last: the next pass closes it. */
    plant(failing, "CLOSED", "");
    h_await(h_order_status(failing) == 9, WAIT_MS, "the CLOSED order never expired");
    ck_assert_int_eq(full - 1, stock());
}
END_TEST

/* ---- two shards ------------------------------------------------------------ */

static void sharded_up(void)
{
    const char *env[] = { h_shards_env(), "PAYCALLBACK_RECONCILE_INTERVAL_S=1",
                          "PAYCALLBACK_RECONCILE_PAYMENT_WINDOW_S=60", NULL };

    h_fixture_server_up_env(env);
}

START_TEST(every_shard_s_unpaid_orders_expire)
{
    for (int id = 1; id <= 2; id++) {
        h_db_exec("INSERT INTO `%s`.orders (order_no, user_id, request_id, sku, quantity, amount, "
                  "status, create_time) VALUES ('S0%d-EXP', 'u1', 'r-exp-%d', 'SHOE-42', 3, "
                  "2697.00, 1, NOW(3) - INTERVAL 2 HOUR)",
                  h_shard_db(id), id, id);
        h_db_exec("UPDATE `%s`.stock SET num = 97 WHERE sku = 'SHOE-42'", h_shard_db(id));
    }
    for (int id = 1; id <= 2; id++) {
        h_await(h_db_scalar_ll("SELECT status FROM `%s`.orders WHERE order_no = 'S0%d-EXP'",
                               h_shard_db(id), id) == 9,
                WAIT_MS, "shard %d's order never expired", id);
        ck_assert_int_eq(100, h_db_scalar_ll("SELECT num FROM `%s`.stock WHERE sku = 'SHOE-42'",
                                             h_shard_db(id)));
        ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM `%s`.outbox WHERE order_no = "
                                           "'S0%d-EXP' AND event_type = 'order.canceled'",
                                           h_shard_db(id), id));
    }
}
END_TEST

static Suite *expiry_suite(void)
{
    Suite *s = suite_create("expiry");
    TCase *tc = h_tcase_with("no query endpoint", TC_TIMEOUT_S, plain_up, h_fixture_server_down);

    tcase_add_test(tc, an_unpaid_order_past_the_window_expires_and_returns_its_stock);
    tcase_add_test(tc, a_payment_after_expiry_is_kept_and_flagged_for_refund);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("window off", TC_TIMEOUT_S, off_up, h_fixture_server_down);
    tcase_add_test(tc, a_window_of_zero_never_expires_an_order);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("query endpoint", TC_TIMEOUT_S, query_up, query_down);
    tcase_add_test(tc, only_an_order_the_gateway_confirms_unpaid_expires);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("sharded", TC_TIMEOUT_S, sharded_up, h_fixture_server_down);
    tcase_add_test(tc, every_shard_s_unpaid_orders_expire);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(expiry_suite, NULL, NULL);
