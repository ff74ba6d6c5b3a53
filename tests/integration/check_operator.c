/* check_operator.c - the operator API over real HTTP on real MariaDB: the
 * refund queue (list, settle: idempotent, audited, never a delete), the
 * outbox (list, inspect, send a dead event again), the reconciliation
 * report, and cancelling stale WAIT_PAY orders. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

/* h_http sends the development operator key (named "dev") by default. */
static void get(const char *path, struct h_resp *r)
{
    h_http(h_port(), "GET", path, NULL, NULL, 0, r);
}

static void post(const char *path, const char *body, struct h_resp *r)
{
    h_http(h_port(), "POST", path, NULL, body, body ? strlen(body) : 0, r);
}

/* Asserts that the one value sql selects is want. */
static void assert_scalar_str(const char *want, const char *sql)
{
    char *got = h_db_scalar_str("%s", sql);

    ck_assert_str_eq(want, got);
    free(got);
}

static void payment(const char *pay_no, const char *order_no, int status)
{
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
              "VALUES ('%s', '%s', 899.00, %d, %d)",
              pay_no, order_no, status, status == 1 ? 1 : 2);
}

/* A customer charged twice: the second callback is REFUND_REQUIRED. */
static void double_charge(const char *order_no, const char *first, const char *second)
{
    struct h_resp r;

    h_db_insert_order(order_no, "u1", "899.00", 1);
    h_callback(h_port(), order_no, first, "899.00", &r);
    h_assert_str(&r, "result", "PAID");
    h_resp_free(&r);
    h_callback(h_port(), order_no, second, "899.00", &r);
    h_assert_str(&r, "result", "REFUND_REQUIRED");
    h_resp_free(&r);
}

START_TEST(refund_queue_lists_then_settles_once)
{
    struct h_resp r;

    double_charge("OR1", "PA1", "PA2");
    get("/ops/refunds", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"PA2\""));
    ck_assert_ptr_null(strstr(r.body, "\"pay_no\":\"PA1\""));
    h_resp_free(&r);

    post("/ops/refunds/PA2/settle", "{\"reference\":\"RF-1001\"}", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "REFUND_SETTLED");
    h_assert_str(&r, "reference", "RF-1001");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(3, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'PA2'"));
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = 'refund.settle' "
                                    "AND subject = 'PA2' AND detail = 'reference=RF-1001'"));

    post("/ops/refunds/PA2/settle", "{\"reference\":\"RF-1001\"}", &r); /* again */
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));

    get("/ops/refunds", &r);
    ck_assert_ptr_null(strstr(r.body, "PA2"));
    h_resp_free(&r);
    get("/ops/refunds?status=REFUND_SETTLED", &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"reference\":\"RF-1001\""));
    h_resp_free(&r);
    /* never a delete: both payments are still there */
    ck_assert_int_eq(2,
                     h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE order_no = 'OR1'"));
}
END_TEST

/* The order of a settled double charge still reads: its payments show the
 * settled one as such. */
START_TEST(order_with_a_settled_payment_reads)
{
    struct h_resp r;

    double_charge("OR5", "PE1", "PE2");
    post("/ops/refunds/PE2/settle", "{\"reference\":\"RF-5\"}", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    get("/order/OR5", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"PE2\",\"amount\":\"899.00\","
                                         "\"status\":\"REFUND_SETTLED\""));
    h_resp_free(&r);
}
END_TEST

START_TEST(settle_refuses_what_it_must_not_settle)
{
    struct h_resp r;

    double_charge("OR2", "PB1", "PB2");
    post("/ops/refunds/PB1/settle", "{\"reference\":\"RF-1\"}", &r);
    h_assert_error(&r, 409, "REFUND_NOT_REQUIRED");
    h_resp_free(&r);
    post("/ops/refunds/NOPE/settle", "{\"reference\":\"RF-1\"}", &r);
    h_assert_error(&r, 404, "PAYMENT_NOT_FOUND");
    h_resp_free(&r);
    post("/ops/refunds/PB2/settle", "{\"reference\":\"bad ref\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    post("/ops/refunds/PB2/settle", "{}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    post("/ops/refunds/PB2/settle", "{\"reference\":\"RF-2\"}", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    post("/ops/refunds/PB2/settle", "{\"reference\":\"RF-3\"}", &r);
    h_assert_error(&r, 409, "ALREADY_SETTLED");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
    assert_scalar_str("RF-2", "SELECT settle_reference FROM payment_record WHERE pay_no = 'PB2'");
}
END_TEST

START_TEST(outbox_lists_inspects_and_sends_a_dead_event_again)
{
    struct h_resp r;
    long long id;
    char path[96];

    h_db_insert_order("OR3", "u1", "899.00", 2);
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, state, attempts, last_error) "
              "VALUES ('order.paid', 'OR3', '{\"pay_no\":\"X\"}', 2, 15, 'webhook answered 500')");
    id = h_db_scalar_ll("SELECT id FROM outbox WHERE order_no = 'OR3'");
    get("/ops/outbox", &r); /* default: the dead ones */
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"order_no\":\"OR3\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"state\":\"DEAD\""));
    h_resp_free(&r);
    snprintf(path, sizeof(path), "/ops/outbox/%lld", id);
    get(path, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"last_error\":\"webhook answered 500\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"X\""));
    h_resp_free(&r);

    snprintf(path, sizeof(path), "/ops/outbox/%lld/retry", id);
    post(path, NULL, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "state", "PENDING");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT attempts FROM outbox WHERE id = %lld", id));
    ck_assert_int_eq(
        1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = 'outbox.retry'"));
    post(path, NULL, &r); /* again: already pending */
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    h_db_exec("UPDATE outbox SET state = 1 WHERE id = %lld", id);
    post(path, NULL, &r);
    h_assert_error(&r, 409, "EVENT_NOT_DEAD");
    h_resp_free(&r);
    get("/ops/outbox/999999", &r);
    h_assert_error(&r, 404, "EVENT_NOT_FOUND");
    h_resp_free(&r);
    get("/ops/outbox/abc", &r);
    h_assert_error(&r, 404, "EVENT_NOT_FOUND");
    h_resp_free(&r);
    get("/ops/outbox?state=LOST", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    get("/ops/outbox?limit=0", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
}
END_TEST

START_TEST(outbox_list_pages_by_id)
{
    struct h_resp r;
    char *next;
    char path[96];

    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, state) "
              "SELECT 'order.paid', CONCAT('OP', seq), '{}', 2 FROM seq_1_to_5");
    get("/ops/outbox?state=DEAD&limit=3", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(next = strstr(r.body, "\"next_after\":"));
    snprintf(path, sizeof(path), "/ops/outbox?state=DEAD&limit=3&after=%lld",
             atoll(next + strlen("\"next_after\":")));
    ck_assert_ptr_nonnull(strstr(r.body, "OP3"));
    ck_assert_ptr_null(strstr(r.body, "OP4"));
    h_resp_free(&r);
    get(path, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "OP4"));
    ck_assert_ptr_nonnull(strstr(r.body, "OP5"));
    ck_assert_ptr_null(strstr(r.body, "OP3"));
    ck_assert_ptr_null(strstr(r.body, "next_after"));
    h_resp_free(&r);
}
END_TEST

START_TEST(reconcile_report_finds_each_planted_case)
{
    struct h_resp r;

    h_db_insert_order("OS1", "u1", "899.00", 1);
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 20 MINUTE WHERE order_no = 'OS1'");
    h_db_insert_order("OS2", "u1", "899.00", 1);
    payment("PS1", "OS9", 2);
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, state) "
              "VALUES ('order.paid', 'OS8', '{}', 2)");
    get("/ops/reconcile", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"wait_pay_stale\":{\"count\":1"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"order_no\":\"OS1\""));
    ck_assert_ptr_null(strstr(r.body, "\"order_no\":\"OS2\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"refund_required\":{\"count\":1"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"PS1\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"dead\":1"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"order_no\":\"OS8\""));
    h_resp_free(&r);
}
END_TEST

START_TEST(cancel_stale_cancels_old_wait_pay_orders_only)
{
    struct h_resp r;
    long long stock0 = h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'");

    h_db_insert_order("OC1", "u1", "899.00", 1); /* stale */
    h_db_insert_order("OC2", "u1", "899.00", 1); /* fresh */
    h_db_insert_order("OC3", "u1", "899.00", 2); /* old but PAID */
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 20 MINUTE "
              "WHERE order_no IN ('OC1', 'OC3')");
    post("/ops/orders/cancel-stale", "{\"older_than_s\":900,\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"canceled\":1"));
    h_resp_free(&r);
    ck_assert_int_eq(9, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'OC1'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'OC2'"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'OC3'"));
    ck_assert_int_eq(stock0 + 1, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'OC1' "
                                       "AND event_type = 'order.canceled'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE subject = 'OC1'"));
    post("/ops/orders/cancel-stale", "{\"older_than_s\":900,\"limit\":10}", &r); /* again */
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"canceled\":0"));
    h_resp_free(&r);
    post("/ops/orders/cancel-stale", "{\"older_than_s\":5,\"limit\":10}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST"); /* below reconcile.wait_pay_age_s */
    h_resp_free(&r);
}
END_TEST

START_TEST(every_operator_route_wants_a_key)
{
    static const char *const routes[][2] = {
        { "GET", "/ops/reconcile" },
        { "GET", "/ops/outbox" },
        { "GET", "/ops/outbox/1" },
        { "POST", "/ops/outbox/1/retry" },
        { "GET", "/ops/refunds" },
        { "POST", "/ops/refunds/PZ1/settle" },
        { "POST", "/ops/orders/cancel-stale" },
    };
    struct h_resp r;

    double_charge("OR9", "PZ0", "PZ1");
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const char *body = strcmp(routes[i][0], "POST") == 0 ? "{\"reference\":\"RF-9\"}" : NULL;
        h_http_key(h_port(), NULL, routes[i][0], routes[i][1], NULL, body, body ? strlen(body) : 0,
                   &r);
        h_assert_error(&r, 401, "UNAUTHORIZED");
        h_resp_free(&r);
        h_http_key(h_port(), "not-a-configured-key-0123", routes[i][0], routes[i][1], NULL, body,
                   body ? strlen(body) : 0, &r);
        h_assert_error(&r, 401, "UNAUTHORIZED");
        h_resp_free(&r);
    }
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'PZ1'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
    /* with the key, the actor recorded is the key's name */
    post("/ops/refunds/PZ1/settle", "{\"reference\":\"RF-9\"}", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "settled_by", "dev");
    h_resp_free(&r);
    assert_scalar_str("dev", "SELECT actor FROM audit_log");
}
END_TEST

static Suite *operator_suite(void)
{
    Suite *s = suite_create("operator");
    TCase *tc = h_tcase("operator", 60);

    tcase_add_test(tc, refund_queue_lists_then_settles_once);
    tcase_add_test(tc, order_with_a_settled_payment_reads);
    tcase_add_test(tc, settle_refuses_what_it_must_not_settle);
    tcase_add_test(tc, outbox_lists_inspects_and_sends_a_dead_event_again);
    tcase_add_test(tc, outbox_list_pages_by_id);
    tcase_add_test(tc, reconcile_report_finds_each_planted_case);
    tcase_add_test(tc, cancel_stale_cancels_old_wait_pay_orders_only);
    tcase_add_test(tc, every_operator_route_wants_a_key);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(operator_suite, NULL, NULL);
