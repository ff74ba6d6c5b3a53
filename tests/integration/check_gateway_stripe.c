/* check_gateway_stripe.c - POST /pay/callback/{gateway} for a stripe
 * profile, against the real binary, MariaDB and Redis: events signed with
 * Stripe-Signature as Stripe documents it (HMAC-SHA256 of t "." body with
 * the endpoint secret), the 2xx acknowledgement, replays, a storm, other
 * event types, every signature failure, currency and amount mismatches, an
 * unknown order, malformed events and a MySQL outage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define SECRET         "whsec_integration_test_secret"
#define ROUTE          "/pay/callback/stripe"
#define PRICE          "899.00"
#define PRICE_MINOR    "89900"
#define STORM_TOTAL    100
#define TC_TIMEOUT_S   60
#define SLOW_TIMEOUT_S 120

static char config_path[H_TEMP_PATH_MAX];

static void server_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET, NULL };

    h_temp_file(config_path, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\","
                             " \"secret_env\": \"TEST_STRIPE_SECRET\", \"tolerance_s\": 300}]}");
    h_fixture_server_up_config(config_path, env);
}

static void server_down(void)
{
    h_fixture_server_down();
    unlink(config_path);
}

/* An event body: type, and a payment intent for order_no. */
static void event(char *buf, size_t n, const char *type, const char *pi, const char *order_no,
                  const char *minor, const char *currency)
{
    snprintf(buf, n, "{\"id\":\"evt_1\",\"object\":\"event\",\"type\":\"%s\",\"data\":{\"object\":"
             "{\"id\":\"%s\",\"object\":\"payment_intent\",\"amount\":%s,\"amount_received\":%s,"
             "\"currency\":\"%s\",\"status\":\"succeeded\",\"metadata\":{\"order_no\":\"%s\"}}}}",
             type, pi, minor, minor, currency, order_no);
}

/* Stripe-Signature: t=ts,v1=HMAC(secret, ts "." body) into hdr. */
static void sign(char *hdr, size_t n, const char *secret, long long ts, const char *body)
{
    char t[24], mac[65];

    snprintf(t, sizeof t, "%lld", ts);
    testkey_hmac_hex(secret, t, body, mac);
    snprintf(hdr, n, "Stripe-Signature: t=%s,v1=%s", t, mac);
}

static int post_raw(const char *sig_hdr, const char *body, struct h_resp *r)
{
    const char *headers[] = { "Content-Type: application/json", sig_hdr, NULL };

    return h_http(h_port(), "POST", ROUTE, headers, body, strlen(body), r);
}

/* Posts body signed now with the right secret. */
static void post(const char *body, struct h_resp *r)
{
    char hdr[160];

    sign(hdr, sizeof hdr, SECRET, (long long)time(NULL), body);
    post_raw(hdr, body, r);
}

static void assert_ack(const struct h_resp *r)
{
    ck_assert_msg(r->status == 200, "expected 200, got %d: %s", r->status, r->body);
    ck_assert_msg(h_json_get_bool(r->body, "received") == 1, "expected received:true: %s", r->body);
}

/* The value of one /metrics series line, or -1 when absent. */

/* ---- the happy path, replays and the storm -------------------------------- */

START_TEST(succeeded_payment_intent_pays_the_order)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = 'pi_1'"
                                       " AND order_no = 'O1' AND amount = 899.00"));
    ck_assert_int_eq(1, h_metric("paycallback_gateway_notifications_total{gateway=\"stripe\","
                               "result=\"PAID\"}"));
}
END_TEST

START_TEST(replayed_event_is_acknowledged_and_written_once)
{
    char body[1024];
    struct h_resp r;
    int i;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    for (i = 0; i < 3; i++) {
        post(body, &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(2, h_metric("paycallback_gateway_notifications_total{gateway=\"stripe\","
                               "result=\"REPLAY\"}"));
}
END_TEST

struct storm_arg {
    const char *body;
    const char *hdr;
    int status[STORM_TOTAL];
};

static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    const char *headers[] = { "Content-Type: application/json", a->hdr, NULL };
    struct h_resp r;
    int rc = h_http(h_port(), "POST", ROUTE, headers, a->body, strlen(a->body), &r);

    a->status[i] = r.status;
    h_resp_free(&r);
    return rc != 0 || a->status[i] != 200;
}

START_TEST(storm_of_identical_events_pays_exactly_once)
{
    static struct storm_arg a;
    static char body[1024], hdr[160];
    struct h_storm_stats st;
    int i, ok = 0;

    h_db_insert_order_in("OSTORM", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_storm", "OSTORM", PRICE_MINOR, "usd");
    sign(hdr, sizeof hdr, SECRET, (long long)time(NULL), body);
    a.body = body;
    a.hdr = hdr;
    ck_assert_int_eq(0, h_storm(STORM_TOTAL, STORM_TOTAL, storm_call, &a, &st));
    for (i = 0; i < STORM_TOTAL; i++)
        ok += a.status[i] == 200;
    printf("stripe storm: %d identical events, %d acknowledged, %.0f req/s\n", STORM_TOTAL, ok,
           st.rps);
    ck_assert_int_eq(STORM_TOTAL, ok);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(2, h_order_status("OSTORM"));
}
END_TEST

/* ---- events that pay nothing --------------------------------------------- */

START_TEST(other_event_types_are_acknowledged_and_change_nothing)
{
    const char *types[] = { "payment_intent.payment_failed", "charge.refunded",
                            "payment_intent.created" };
    char body[1024];
    struct h_resp r;
    size_t i;

    h_db_insert_order_in("O1", PRICE, "USD");
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        event(body, sizeof body, types[i], "pi_1", "O1", PRICE_MINOR, "usd");
        post(body, &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
    ck_assert_int_eq(3, h_metric("paycallback_gateway_notifications_total{gateway=\"stripe\","
                               "result=\"IGNORED\"}"));
}
END_TEST

/* ---- signature failures ---------------------------------------------------- */

static void assert_refused(const char *hdr, const char *body, const char *reason)
{
    char series[160];
    struct h_resp r;
    long long before;

    snprintf(series, sizeof series,
             "paycallback_gateway_rejected_total{gateway=\"stripe\",reason=\"%s\"}", reason);
    before = h_metric(series);
    if (before < 0)
        before = 0;
    post_raw(hdr, body, &r);
    h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(before + 1, h_metric(series));
}

START_TEST(event_signed_with_another_secret_is_refused)
{
    char body[1024], hdr[160];

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    sign(hdr, sizeof hdr, "whsec_someone_else", (long long)time(NULL), body);
    assert_refused(hdr, body, "signature_mismatch");
}
END_TEST

START_TEST(altered_event_is_refused)
{
    char body[1024], hdr[160], *p;

    h_db_insert_order_in("O1", "8.99", "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    sign(hdr, sizeof hdr, SECRET, (long long)time(NULL), body);
    ck_assert_ptr_nonnull(p = strstr(body, "\"amount_received\":89900"));
    memcpy(p, "\"amount_received\":00899", 23);   /* same length, another amount */
    assert_refused(hdr, body, "signature_mismatch");
}
END_TEST

START_TEST(stale_timestamp_is_refused)
{
    char body[1024], hdr[160];

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    sign(hdr, sizeof hdr, SECRET, (long long)time(NULL) - 301 - 5, body);
    assert_refused(hdr, body, "timestamp_stale");
}
END_TEST

START_TEST(missing_signature_header_is_refused)
{
    char body[1024];

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    assert_refused("X-Nothing: 1", body, "signature_missing");
}
END_TEST

/* ---- payments that do not match ------------------------------------------ */

START_TEST(event_in_another_currency_is_amount_mismatch)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    post(body, &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
}
END_TEST

START_TEST(event_with_another_amount_is_amount_mismatch)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", "89901", "usd");
    post(body, &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

START_TEST(zero_decimal_currency_is_converted_exactly)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("OJ", "500.00", "JPY");
    event(body, sizeof body, "payment_intent.succeeded", "pi_jpy", "OJ", "500", "jpy");
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("OJ"));
}
END_TEST

START_TEST(event_for_an_unknown_order_is_refused)
{
    char body[1024];
    struct h_resp r;

    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "NOPE", PRICE_MINOR, "usd");
    post(body, &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

START_TEST(malformed_events_are_refused)
{
    const char *bodies[] = {
        "not json",
        "{\"type\":\"payment_intent.succeeded\"}",
        "{\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_1\","
        "\"amount_received\":89900,\"currency\":\"usd\",\"metadata\":{}}}}",
        "{\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_1\","
        "\"amount_received\":899.5,\"currency\":\"usd\",\"metadata\":{\"order_no\":\"O1\"}}}}",
    };
    struct h_resp r;
    size_t i;

    h_db_insert_order_in("O1", PRICE, "USD");
    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        post(bodies[i], &r);
        ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "body %s: %s", bodies[i],
                      h_check_error(&r, 400, "BAD_REQUEST"));
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
}
END_TEST

/* Validly signed, but the type or order carries a \u0000, where cJSON
 * would cut the string: "payment_intent.succeeded\u0000x" must not pay. */
START_TEST(nul_in_a_signed_event_is_refused_and_pays_nothing)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded\\u0000x", "pi_1", "O1", PRICE_MINOR,
          "usd");
    post(body, &r);
    ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "%s",
                  h_check_error(&r, 400, "BAD_REQUEST"));
    h_resp_free(&r);
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1\\u0000x", PRICE_MINOR,
          "usd");
    post(body, &r);
    ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "%s",
                  h_check_error(&r, 400, "BAD_REQUEST"));
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

START_TEST(unknown_gateway_is_not_found)
{
    struct h_resp r;

    h_http(h_port(), "POST", "/pay/callback/paypal", NULL, "{}", 2, &r);
    h_assert_error(&r, 404, "NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

/* ---- MySQL outage ---------------------------------------------------------- */

START_TEST(mysql_outage_answers_retry_and_loses_nothing)
{
    char body[1024];
    struct h_resp r;
    const char *retry;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1", PRICE_MINOR, "usd");
    h_services("stop-mysql");
    post(body, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    retry = h_resp_header(&r, "Retry-After");
    ck_assert_msg(retry != NULL && atoi(retry) > 0, "expected Retry-After: %s", r.body);
    h_resp_free(&r);
    h_services("start-mysql");
    post(body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

static Suite *gateway_stripe_suite(void)
{
    Suite *s = suite_create("gateway_stripe");
    TCase *tc;

    tc = h_tcase_with("a succeeded payment intent pays once", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, succeeded_payment_intent_pays_the_order);
    tcase_add_test(tc, replayed_event_is_acknowledged_and_written_once);
    tcase_add_test(tc, storm_of_identical_events_pays_exactly_once);
    tcase_add_test(tc, other_event_types_are_acknowledged_and_change_nothing);
    tcase_add_test(tc, zero_decimal_currency_is_converted_exactly);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned events are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, event_signed_with_another_secret_is_refused);
    tcase_add_test(tc, altered_event_is_refused);
    tcase_add_test(tc, stale_timestamp_is_refused);
    tcase_add_test(tc, missing_signature_header_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, event_in_another_currency_is_amount_mismatch);
    tcase_add_test(tc, event_with_another_amount_is_amount_mismatch);
    tcase_add_test(tc, event_for_an_unknown_order_is_refused);
    tcase_add_test(tc, malformed_events_are_refused);
    tcase_add_test(tc, nul_in_a_signed_event_is_refused_and_pays_nothing);
    tcase_add_test(tc, unknown_gateway_is_not_found);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, mysql_outage_answers_retry_and_loses_nothing);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_stripe_suite, NULL, NULL);
