/* check_gateway_alipay.c - POST /pay/callback/{gateway} for an alipay
 * profile, against the real binary, MariaDB and Redis: form notifications
 * signed RSA2 as Alipay documents it, with a key pair generated here; the
 * plain "success" acknowledgement, replays, a storm, trade statuses that
 * pay nothing, every signature failure, another app_id, currency and
 * amount mismatches, an unknown order, malformed forms and a MySQL outage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APP_ID         "2021000000000001"
#define ROUTE          "/pay/callback/alipay"
#define GW_ALERT_NAME  "alipay"        /* the profile ROUTE names */
#define PRICE          "899.00"
#define STORM_TOTAL    100
#define TC_TIMEOUT_S   60
#define SLOW_TIMEOUT_S 120
#define FORM_CTYPE     "Content-Type: application/x-www-form-urlencoded; charset=utf-8"

static struct testkey *alipay, *impostor;
static char key_path[H_TEMP_PATH_MAX], config_path[H_TEMP_PATH_MAX];

/* Two profiles: CNY (the default) and one for HKD, the same key. */
static void server_up(void)
{
    char cfg[1024];

    alipay = testkey_create();
    impostor = testkey_create();
    h_temp_file(key_path, "");
    testkey_write_public(alipay, key_path);
    snprintf(cfg, sizeof cfg, "{\"gateways\": ["
             "{\"name\": \"alipay\", \"kind\": \"alipay\", \"app_id\": \"" APP_ID "\","
             " \"public_key_file\": \"%s\"},"
             "{\"name\": \"alipay-hk\", \"kind\": \"alipay\", \"app_id\": \"" APP_ID "\","
             " \"public_key_file\": \"%s\", \"currency\": \"HKD\"}]}", key_path, key_path);
    h_temp_file(config_path, cfg);
    h_fixture_server_up_config(config_path, NULL);
}

static void server_down(void)
{
    h_fixture_server_down();
    unlink(config_path);
    unlink(key_path);
    testkey_destroy(alipay);
    testkey_destroy(impostor);
}

/* The decoded fields of a notification, in the order Alipay sends them. */
struct field { const char *k, *v; };

static int cmp_field(const void *a, const void *b)
{
    return strcmp(((const struct field *)a)->k, ((const struct field *)b)->k);
}

/* Builds the form body of fields signed by key: the signed string is every
 * field sorted by name as k=v joined by '&' (sign and sign_type left out),
 * SHA256withRSA, base64. */
static void notify_body(char *out, size_t n, const struct testkey *key, const struct field *f,
                        size_t nf)
{
    struct field sorted[32];
    char content[4096] = "", *sig, *esc;
    size_t i, pos = 0;

    memcpy(sorted, f, nf * sizeof *f);
    qsort(sorted, nf, sizeof *sorted, cmp_field);
    for (i = 0; i < nf; i++)
        if (strcmp(sorted[i].k, "sign_type") != 0)
            pos += (size_t)snprintf(content + pos, sizeof content - pos, "%s%s=%s",
                                    pos ? "&" : "", sorted[i].k, sorted[i].v);
    sig = testkey_sign_b64(key, content, strlen(content));
    out[0] = '\0';
    for (pos = 0, i = 0; i < nf; i++) {
        esc = testkey_form_escape(f[i].v);
        pos += (size_t)snprintf(out + pos, n - pos, "%s=%s&", f[i].k, esc);
        free(esc);
    }
    esc = testkey_form_escape(sig);
    snprintf(out + pos, n - pos, "sign=%s", esc);
    free(esc);
    free(sig);
}

/* A notification for order_no paid with trade_no, signed by key. */
static void trade(char *out, size_t n, const struct testkey *key, const char *app_id,
                  const char *trade_no, const char *order_no, const char *amount,
                  const char *status)
{
    const struct field f[] = {
        { "gmt_create", "2024-01-01 10:00:00" }, { "charset", "utf-8" },
        { "gmt_payment", "2024-01-01 10:00:05" }, { "notify_time", "2024-01-01 10:00:06" },
        { "subject", "\xe9\x9e\x8b 42" }, { "sign_type", "RSA2" },
        { "buyer_id", "2088102116773037" }, { "invoice_amount", amount },
        { "version", "1.0" }, { "notify_id", "2024010100222100005018000000000001" },
        { "fund_bill_list", "[{\"amount\":\"899.00\",\"fundChannel\":\"ALIPAYACCOUNT\"}]" },
        { "notify_type", "trade_status_sync" }, { "out_trade_no", order_no },
        { "total_amount", amount }, { "trade_status", status }, { "trade_no", trade_no },
        { "auth_app_id", app_id }, { "receipt_amount", amount }, { "point_amount", "0.00" },
        { "app_id", app_id }, { "buyer_pay_amount", amount }, { "seller_id", "2088102119685838" },
    };

    notify_body(out, n, key, f, sizeof f / sizeof f[0]);
}

static void post_to(const char *route, const char *body, struct h_resp *r)
{
    const char *headers[] = { FORM_CTYPE, NULL };

    h_http(h_port(), "POST", route, headers, body, strlen(body), r);
}

static void post(const char *body, struct h_resp *r)
{
    post_to(ROUTE, body, r);
}

/* Alipay stops resending on exactly this body, and on nothing else. */
static void assert_ack(const struct h_resp *r)
{
    ck_assert_msg(r->status == 200, "expected 200, got %d: %s", r->status, r->body);
    ck_assert_str_eq("success", r->body);
}

static void assert_nack(const struct h_resp *r, int status)
{
    ck_assert_msg(r->status == status, "expected %d, got %d: %s", status, r->status, r->body);
    ck_assert_str_eq("failure", r->body);
}

/* ---- the happy path, replays and the storm -------------------------------- */

START_TEST(trade_success_pays_the_order_and_answers_success)
{
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "2024010122001400000000000001", "O1", PRICE,
          "TRADE_SUCCESS");
    post(body, &r);
    assert_ack(&r);
    ck_assert_ptr_nonnull(strstr(h_resp_header(&r, "Content-Type"), "text/plain"));
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'2024010122001400000000000001' AND order_no = 'O1' "
                                       "AND amount = 899.00"));
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(1, h_metric("paycallback_gateway_notifications_total{gateway=\"alipay\","
                               "result=\"PAID\"}"));
}
END_TEST

/* Alipay's own verification (its SDKs' rsaCheckV1) signs every parameter
 * but sign and sign_type, an empty value as "key=": a notification with
 * an empty passback_params is Alipay's and pays. */
START_TEST(notification_with_an_empty_parameter_pays)
{
    const struct field f[] = {
        { "gmt_create", "2024-01-01 10:00:00" }, { "charset", "utf-8" },
        { "notify_time", "2024-01-01 10:00:06" }, { "sign_type", "RSA2" },
        { "passback_params", "" }, { "body", "" }, { "version", "1.0" },
        { "notify_type", "trade_status_sync" }, { "out_trade_no", "O1" },
        { "total_amount", PRICE }, { "trade_status", "TRADE_SUCCESS" },
        { "trade_no", "T-EMPTY" }, { "app_id", APP_ID },
    };
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    notify_body(body, sizeof body, alipay, f, sizeof f / sizeof f[0]);
    ck_assert_ptr_nonnull(strstr(body, "passback_params=&"));
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'T-EMPTY'"));
}
END_TEST

START_TEST(trade_finished_pays_too)
{
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T-FIN", "O1", PRICE, "TRADE_FINISHED");
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

START_TEST(replayed_notification_answers_success_and_writes_once)
{
    char body[8192];
    struct h_resp r;
    int i;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    for (i = 0; i < 3; i++) {
        post(body, &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
}
END_TEST

struct storm_arg {
    const char *body;
    int ok[STORM_TOTAL];
};

static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    const char *headers[] = { FORM_CTYPE, NULL };
    struct h_resp r;
    int rc = h_http(h_port(), "POST", ROUTE, headers, a->body, strlen(a->body), &r);

    a->ok[i] = rc == 0 && r.status == 200 && strcmp(r.body, "success") == 0;
    h_resp_free(&r);
    return !a->ok[i];
}

START_TEST(storm_of_identical_notifications_pays_exactly_once)
{
    static struct storm_arg a;
    static char body[8192];
    struct h_storm_stats st;
    int i, ok = 0;

    h_db_insert_order_in("OSTORM", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "TSTORM", "OSTORM", PRICE, "TRADE_SUCCESS");
    a.body = body;
    ck_assert_int_eq(0, h_storm(STORM_TOTAL, STORM_TOTAL, storm_call, &a, &st));
    for (i = 0; i < STORM_TOTAL; i++)
        ok += a.ok[i];
    printf("alipay storm: %d identical notifications, %d answered success, %.0f req/s\n",
           STORM_TOTAL, ok, st.rps);
    ck_assert_int_eq(STORM_TOTAL, ok);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(2, h_order_status("OSTORM"));
}
END_TEST

START_TEST(non_paying_statuses_answer_success_and_change_nothing)
{
    const char *statuses[] = { "WAIT_BUYER_PAY", "TRADE_CLOSED" };
    char body[8192];
    struct h_resp r;
    size_t i;

    h_db_insert_order_in("O1", PRICE, "CNY");
    for (i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, statuses[i]);
        post(body, &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
}
END_TEST

/* ---- signature failures ---------------------------------------------------- */

static void assert_refused(const char *body, int status, const char *reason)
{
    char series[160];
    struct h_resp r;
    long long before;

    snprintf(series, sizeof series,
             "paycallback_gateway_rejected_total{gateway=\"alipay\",reason=\"%s\"}", reason);
    before = h_metric(series);
    if (before < 0)
        before = 0;
    post(body, &r);
    assert_nack(&r, status);
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    ck_assert_int_eq(before + 1, h_metric(series));
}

START_TEST(notification_signed_with_another_key_is_refused)
{
    char body[8192];

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, impostor, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    assert_refused(body, 401, "signature_mismatch");
}
END_TEST

START_TEST(altered_field_is_refused)
{
    char body[8192], *p;

    h_db_insert_order_in("O1", "1.00", "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    ck_assert_ptr_nonnull(p = strstr(body, "total_amount=899.00"));
    memcpy(p, "total_amount=001.00", 19);
    assert_refused(body, 401, "signature_mismatch");
}
END_TEST

START_TEST(missing_sign_is_refused)
{
    char body[8192], *p;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    ck_assert_ptr_nonnull(p = strstr(body, "&sign="));
    *p = '\0';
    assert_refused(body, 401, "signature_missing");
}
END_TEST

START_TEST(another_app_id_is_refused)
{
    char body[8192];

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, "2021999999999999", "T1", "O1", PRICE, "TRADE_SUCCESS");
    assert_refused(body, 403, "wrong_app");
}
END_TEST

START_TEST(malformed_forms_are_refused)
{
    const char *bodies[] = { "", "app_id=1&&sign=x", "app_id=%zz", "a=1&a=2", "{\"json\":1}" };
    struct h_resp r;
    size_t i;

    h_db_insert_order_in("O1", PRICE, "CNY");
    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        post(bodies[i], &r);
        assert_nack(&r, 400);
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
}
END_TEST

/* ---- payments that do not match ------------------------------------------ */

START_TEST(notification_in_another_currency_is_amount_mismatch)
{
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    post_to("/pay/callback/alipay-hk", body, &r);       /* that profile speaks HKD */
    assert_nack(&r, 422);
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_metric("paycallback_gateway_notifications_total{gateway=\"alipay-hk\","
                               "result=\"MISMATCH\"}"));
}
END_TEST

START_TEST(notification_with_another_amount_is_amount_mismatch)
{
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", "899.01", "TRADE_SUCCESS");
    post(body, &r);
    assert_nack(&r, 422);
    h_resp_free(&r);
    h_assert_nothing_paid();
    {
        /* the same alert as a native callback's, naming the gateway */
        const char *parts[] = { "alert=AMOUNT_MISMATCH", "gateway=" GW_ALERT_NAME,
                                "order_no=O1", "pay_no=T1", NULL };
        char *line = h_log_find(parts, 5000);
        ck_assert_msg(line != NULL, "no AMOUNT_MISMATCH alert naming the gateway");
        free(line);
    }
}
END_TEST

START_TEST(notification_for_an_unknown_order_is_refused)
{
    char body[8192];
    struct h_resp r;

    trade(body, sizeof body, alipay, APP_ID, "T1", "NOPE", PRICE, "TRADE_SUCCESS");
    post(body, &r);
    assert_nack(&r, 404);
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

/* ---- MySQL outage ---------------------------------------------------------- */

START_TEST(mysql_outage_answers_failure_so_alipay_retries)
{
    char body[8192];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    trade(body, sizeof body, alipay, APP_ID, "T1", "O1", PRICE, "TRADE_SUCCESS");
    h_services("stop-mysql");
    post(body, &r);
    assert_nack(&r, 503);
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    h_services("start-mysql");
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

static Suite *gateway_alipay_suite(void)
{
    Suite *s = suite_create("gateway_alipay");
    TCase *tc;

    tc = h_tcase_with("a paying notification pays once", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, trade_success_pays_the_order_and_answers_success);
    tcase_add_test(tc, trade_finished_pays_too);
    tcase_add_test(tc, notification_with_an_empty_parameter_pays);
    tcase_add_test(tc, replayed_notification_answers_success_and_writes_once);
    tcase_add_test(tc, storm_of_identical_notifications_pays_exactly_once);
    tcase_add_test(tc, non_paying_statuses_answer_success_and_change_nothing);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned notifications are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, notification_signed_with_another_key_is_refused);
    tcase_add_test(tc, altered_field_is_refused);
    tcase_add_test(tc, missing_sign_is_refused);
    tcase_add_test(tc, another_app_id_is_refused);
    tcase_add_test(tc, malformed_forms_are_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, notification_in_another_currency_is_amount_mismatch);
    tcase_add_test(tc, notification_with_another_amount_is_amount_mismatch);
    tcase_add_test(tc, notification_for_an_unknown_order_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, mysql_outage_answers_failure_so_alipay_retries);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_alipay_suite, NULL, NULL);
