/* check_gateway_stripe.c - POST /pay/callback/{gateway} for a stripe
 * profile, against the real binary, MariaDB and Redis: events signed with
 * Stripe-Signature as Stripe documents it (HMAC-SHA256 of t "." body with
 * the endpoint secret), the 2xx acknowledgement and the JSON errors. The
 * driver below runs the shared scenarios of gateway_scenarios.c; zero-
 * decimal currencies, a \u0000 in a signed event and an unknown gateway
 * are Stripe's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway_scenarios.h"
#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define SECRET "whsec_integration_test_secret"
#define ROUTE "/pay/callback/stripe"
#define PRICE GW_PRICE
#define PRICE_MINOR "89900"
#define TC_TIMEOUT_S 60
#define SLOW_TIMEOUT_S 120

static char config_path[H_TEMP_PATH_MAX];

static void server_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET, NULL };

    h_temp_file(config_path, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\","
                             " \"secret_env\": \"TEST_STRIPE_SECRET\", \"tolerance_s\": 300}]}");
    h_fixture_server_up_config(config_path, env);
}

/* The same, with the replay cache on (the harness turns it off). */
static void remembering_server_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET,
                                       "PAYCALLBACK_CALLBACK_REPLAY_CACHE_ENTRIES=64", NULL };

    h_temp_file(config_path, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\","
                             " \"secret_env\": \"TEST_STRIPE_SECRET\", \"tolerance_s\": 300}]}");
    h_fixture_server_up_config(config_path, env);
}

/* The same, answering those repeats on the polling thread. */
static void inline_server_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET,
                                       "PAYCALLBACK_CALLBACK_REPLAY_CACHE_ENTRIES=64",
                                       "PAYCALLBACK_HTTP_REPLAYS_INLINE=1",
                                       "PAYCALLBACK_LOG_LEVEL=warn", NULL };

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
    snprintf(buf, n,
             "{\"id\":\"evt_1\",\"object\":\"event\",\"type\":\"%s\",\"data\":{\"object\":"
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

/* Posts body signed now with the right secret. */
static void post(const char *body, struct h_resp *r)
{
    char hdr[160];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    sign(hdr, sizeof hdr, SECRET, (long long)time(NULL), body);
    h_http(h_port(), "POST", ROUTE, headers, body, strlen(body), r);
}

/* ---- the driver of the shared scenarios ----------------------------------- */

static const char *const idle_types[] = { "payment_intent.payment_failed", "charge.refunded",
                                          "payment_intent.created", NULL };

static const struct gw_malformed malformed[] = {
    { "not json", 400 },
    { "{\"type\":\"payment_intent.succeeded\"}", 400 },
    { "{\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_1\","
      "\"amount_received\":89900,\"currency\":\"usd\",\"metadata\":{}}}}",
      400 },
    { "{\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_1\","
      "\"amount_received\":899.5,\"currency\":\"usd\",\"metadata\":{\"order_no\":\"O1\"}}}}",
      400 },
    { NULL, 0 },
};

/* The content type and, unless unsigned, a Stripe-Signature of the body
 * by secret at ts. */
static void headers_for(struct gw_request *rq, const char *secret, long long ts)
{
    snprintf(rq->header[0], sizeof rq->header[0], "Content-Type: application/json");
    if (secret == NULL) {
        snprintf(rq->header[1], sizeof rq->header[1], "X-Nothing: 1");
    } else {
        sign(rq->header[1], sizeof rq->header[1], secret, ts, rq->body);
    }
    gw_headers(rq, 2);
}

static void seal(struct gw_request *rq)
{
    headers_for(rq, SECRET, (long long)time(NULL));
}

/* An event is a JSON body signed in Stripe-Signature: the twists change
 * the event, the signing, or the body after it. */
static void build(struct gw_request *rq, const struct gw_pay *p, enum gw_twist t)
{
    const char *type =
        t == GW_NUL ? "payment_intent.succeeded\\u0000x" : "payment_intent.succeeded";
    char minor[24], *at;
    long long ts = (long long)time(NULL);

    snprintf(minor, sizeof minor, "%lld", p->amount_cents);
    event(rq->body, sizeof rq->body, p->state != NULL ? p->state : type, p->pay_no, p->order_no,
          minor, t == GW_OTHER_CURRENCY ? "eur" : "usd");
    headers_for(rq,
                t == GW_UNSIGNED      ? NULL
                : t == GW_FOREIGN_KEY ? "whsec_someone_else"
                                      : SECRET,
                t == GW_STALE ? ts - 301 - 5 : ts);
    if (t == GW_ALTERED) {
        ck_assert_ptr_nonnull(at = strstr(rq->body, "\"amount_received\":89900"));
        memcpy(at, "\"amount_received\":00899", 23); /* same length, another amount */
    }
}

static int acked(const struct h_resp *r)
{
    return r->status == 200 && h_json_get_bool(r->body, "received") == 1;
}

static const char *refused(const struct h_resp *r, int status, const char *code)
{
    return h_check_error(r, status, code);
}

static const struct gw_driver driver = {
    .name = "stripe",
    .currency = "USD",
    .twists = GW_CAN(GW_FOREIGN_KEY) | GW_CAN(GW_ALTERED) | GW_CAN(GW_UNSIGNED) | GW_CAN(GW_STALE) |
              GW_CAN(GW_OTHER_CURRENCY) | GW_CAN(GW_NUL),
    .altered_price = "8.99",
    .idle = idle_types,
    .malformed = malformed,
    .build = build,
    .seal = seal,
    .acked = acked,
    .refused = refused,
};

/* ---- what only Stripe does ------------------------------------------------ */

START_TEST(zero_decimal_currency_is_converted_exactly)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("OJ", "500.00", "JPY");
    event(body, sizeof body, "payment_intent.succeeded", "pi_jpy", "OJ", "500", "jpy");
    post(body, &r);
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("OJ"));
}
END_TEST

/* Validly signed, but the order carries a \u0000, where cJSON would cut
 * the string: "O1\u0000x" must not pay O1. (A \u0000 in the type is a
 * shared scenario.) */
START_TEST(nul_in_the_order_of_a_signed_event_is_refused_and_pays_nothing)
{
    char body[1024];
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "USD");
    event(body, sizeof body, "payment_intent.succeeded", "pi_1", "O1\\u0000x", PRICE_MINOR, "usd");
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

static Suite *gateway_stripe_suite(void)
{
    Suite *s = suite_create("gateway_stripe");
    TCase *tc;

    tc = h_tcase_with("a succeeded payment intent pays once", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_PAYS, &driver);
    tcase_add_test(tc, zero_decimal_currency_is_converted_exactly);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a replay is acknowledged from memory", TC_TIMEOUT_S, remembering_server_up,
                      server_down);
    gw_scenarios_add(tc, GW_REMEMBERED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a replay is acknowledged on the polling thread", TC_TIMEOUT_S,
                      inline_server_up, server_down);
    gw_scenarios_add(tc, GW_REMEMBERED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned events are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_REFUSED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_UNMATCHED, &driver);
    tcase_add_test(tc, nul_in_the_order_of_a_signed_event_is_refused_and_pays_nothing);
    tcase_add_test(tc, unknown_gateway_is_not_found);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    gw_scenarios_add(tc, GW_OUTAGE, &driver);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_stripe_suite, NULL, NULL);
