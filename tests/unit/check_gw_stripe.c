/* check_gw_stripe.c - unit tests for gateway_stripe.c: the Stripe-Signature
 * grammar, HMAC-SHA256 of t "." body (one vector from the openssl command
 * line, the rest from testkeys.c), several v1 values, the tolerance, and
 * payment_intent.succeeded events. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_stripe.h"
#include "../testkeys.h"
#include "../check_main.h"

#define SECRET "whsec_test"
#define TS "1700000000"
#define NOW_S INT64_C(1700000000)
#define WINDOW_S INT64_C(300)
#define BODY "{\"id\":\"evt_1\"}"
/* printf '%s' '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test */
#define MAC_BODY "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925"
#define MAC_ZERO "0000000000000000000000000000000000000000000000000000000000000000"

static enum gateway_status verify(const char *header, const char *body, int64_t now_s)
{
    return gateway_stripe_verify(SECRET, header, body, strlen(body), now_s, WINDOW_S);
}

static char *event(const char *type, const char *object)
{
    char *e = malloc(1024);

    snprintf(e, 1024,
             "{\"id\":\"evt_3\",\"object\":\"event\",\"type\":\"%s\","
             "\"data\":{\"object\":%s}}",
             type, object);
    return e;
}

#define INTENT(amount, currency, meta)                                                    \
    "{\"id\":\"pi_3MtwBwLkdIwHu7ix28a3tqPa\",\"object\":\"payment_intent\","              \
    "\"amount\":" amount ",\"amount_received\":" amount ",\"currency\":\"" currency "\"," \
    "\"status\":\"succeeded\",\"metadata\":" meta "}"

START_TEST(gateway_stripe_header_parse_reads_t_and_every_v1)
{
    struct gateway_stripe_header h;

    ck_assert_int_eq(GATEWAY_OK, gateway_stripe_header_parse(
                                     "t=" TS ",v1=" MAC_BODY ",v0=abc,v1=" MAC_ZERO, &h));
    ck_assert_str_eq(TS, h.t);
    ck_assert_uint_eq(2, h.nv1);
    ck_assert_str_eq(MAC_BODY, h.v1[0]);
    ck_assert_str_eq(MAC_ZERO, h.v1[1]);
}
END_TEST

START_TEST(gateway_stripe_header_parse_refuses_incomplete_headers)
{
    struct gateway_stripe_header h;

    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse(NULL, &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse("", &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse("v1=" MAC_BODY, &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse("t=" TS, &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse("t=" TS ",v0=" MAC_BODY, &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, gateway_stripe_header_parse("t=abc,v1=" MAC_BODY, &h));
    ck_assert_int_eq(GATEWAY_SIG_MISSING,
                     gateway_stripe_header_parse("t=" TS ",t=1,v1=" MAC_BODY, &h));
    ck_assert_uint_eq(0, h.nv1);
}
END_TEST

START_TEST(gateway_stripe_verify_matches_the_openssl_vector)
{
    ck_assert_int_eq(GATEWAY_OK, verify("t=" TS ",v1=" MAC_BODY, BODY, NOW_S));
}
END_TEST

START_TEST(gateway_stripe_verify_accepts_any_matching_v1)
{
    ck_assert_int_eq(GATEWAY_OK, verify("t=" TS ",v1=" MAC_ZERO ",v1=" MAC_BODY, BODY, NOW_S));
    ck_assert_int_eq(GATEWAY_OK, verify("v1=" MAC_BODY ",t=" TS, BODY, NOW_S));
}
END_TEST

START_TEST(gateway_stripe_verify_refuses_another_secret_or_body)
{
    char mac[65], header[128];

    testkey_hmac_hex("whsec_other", TS, BODY, mac);
    snprintf(header, sizeof(header), "t=" TS ",v1=%s", mac);
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify(header, BODY, NOW_S));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify("t=" TS ",v1=" MAC_BODY, BODY " ", NOW_S));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify("t=1700000001,v1=" MAC_BODY, BODY, NOW_S));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, gateway_stripe_verify("", "t=" TS ",v1=" MAC_BODY, BODY,
                                                                 strlen(BODY), NOW_S, WINDOW_S));
}
END_TEST

START_TEST(gateway_stripe_verify_applies_the_tolerance_both_ways)
{
    ck_assert_int_eq(GATEWAY_OK, verify("t=" TS ",v1=" MAC_BODY, BODY, NOW_S + WINDOW_S));
    ck_assert_int_eq(GATEWAY_SIG_STALE,
                     verify("t=" TS ",v1=" MAC_BODY, BODY, NOW_S + WINDOW_S + 1));
    ck_assert_int_eq(GATEWAY_SIG_STALE,
                     verify("t=" TS ",v1=" MAC_BODY, BODY, NOW_S - WINDOW_S - 1));
}
END_TEST

START_TEST(gateway_stripe_verify_signs_the_raw_body_as_testkeys_does)
{
    const char *body = "{\"type\":\"payment_intent.succeeded\",\"x\":\"\\u00e9\"}";
    char mac[65], header[128];

    testkey_hmac_hex(SECRET, TS, body, mac);
    snprintf(header, sizeof(header), "t=" TS ",v1=%s", mac);
    ck_assert_int_eq(GATEWAY_OK, verify(header, body, NOW_S));
}
END_TEST

START_TEST(gateway_stripe_notice_reads_a_succeeded_payment_intent)
{
    char *e = event("payment_intent.succeeded", INTENT("2000", "usd", "{\"order_no\":\"O-1\"}"));
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK, gateway_stripe_notice(e, strlen(e), &n));
    ck_assert(n.pays);
    ck_assert_str_eq("payment_intent.succeeded", n.state);
    ck_assert_str_eq("pi_3MtwBwLkdIwHu7ix28a3tqPa", n.pay_no);
    ck_assert_str_eq("O-1", n.order_no);
    ck_assert_int_eq(2000, n.amount_cents);
    ck_assert_str_eq("USD", n.currency);
    free(e);
}
END_TEST

START_TEST(gateway_stripe_notice_converts_zero_decimal_currencies)
{
    char *e = event("payment_intent.succeeded", INTENT("500", "jpy", "{\"order_no\":\"O-1\"}"));
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK, gateway_stripe_notice(e, strlen(e), &n));
    ck_assert_int_eq(50000, n.amount_cents);
    ck_assert_str_eq("JPY", n.currency);
    free(e);
}
END_TEST

START_TEST(gateway_stripe_notice_acknowledges_other_event_types)
{
    char *e = event("charge.refunded", "{\"id\":\"ch_1\"}");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK, gateway_stripe_notice(e, strlen(e), &n));
    ck_assert(!n.pays);
    ck_assert_str_eq("charge.refunded", n.state);
    ck_assert_str_eq("", n.pay_no);
    free(e);
}
END_TEST

START_TEST(gateway_stripe_notice_refuses_incomplete_intents)
{
    const char *bad[] = { INTENT("2000", "usd", "{}"), INTENT("2000", "usd", "null"),
                          "{\"id\":\"pi_1\"}", "[]" };
    struct gateway_notice n;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *e = event("payment_intent.succeeded", bad[i]);

        ck_assert_int_eq(GATEWAY_MALFORMED, gateway_stripe_notice(e, strlen(e), &n));
        free(e);
    }
    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_stripe_notice("{\"type\":1}", 10, &n));
    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_stripe_notice("not json", 8, &n));
}
END_TEST

/* cJSON cuts a string at \u0000: "payment_intent.succeeded\u0000x" would
 * read as the paying type, "O-1\u0000x" as the order O-1. */
START_TEST(gateway_stripe_notice_refuses_nul_in_any_string)
{
    const char *objs[][2] = {
        { "payment_intent.succeeded\\u0000x", INTENT("2000", "usd", "{\"order_no\":\"O-1\"}") },
        { "payment_intent.succeeded", INTENT("2000", "usd", "{\"order_no\":\"O-1\\u0000x\"}") },
        { "payment_intent.succeeded", INTENT("2000", "usd\\u0000", "{\"order_no\":\"O-1\"}") },
        { "charge.refunded\\u0000", "{\"id\":\"ch_1\"}" },
    };
    struct gateway_notice n;
    size_t i;

    for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
        char *e = event(objs[i][0], objs[i][1]);

        ck_assert_msg(gateway_stripe_notice(e, strlen(e), &n) == GATEWAY_MALFORMED, "accepted %s",
                      e);
        ck_assert(!n.pays);
        free(e);
    }
    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_stripe_notice("{\"type\":\"a\"}\0", 13, &n));
}
END_TEST

START_TEST(gateway_stripe_notice_refuses_bad_amounts_and_currencies)
{
    char *e = event("payment_intent.succeeded", INTENT("20.5", "usd", "{\"order_no\":\"O-1\"}"));
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_BAD_AMOUNT, gateway_stripe_notice(e, strlen(e), &n));
    free(e);
    e = event("payment_intent.succeeded", INTENT("1235", "kwd", "{\"order_no\":\"O-1\"}"));
    ck_assert_int_eq(GATEWAY_BAD_AMOUNT, gateway_stripe_notice(e, strlen(e), &n));
    free(e);
    e = event("payment_intent.succeeded", INTENT("2000", "zzz", "{\"order_no\":\"O-1\"}"));
    ck_assert_int_eq(GATEWAY_BAD_CURRENCY, gateway_stripe_notice(e, strlen(e), &n));
    ck_assert(!n.pays);
    free(e);
}
END_TEST

static Suite *gateway_stripe_suite(void)
{
    Suite *s = suite_create("gateway_stripe");
    TCase *tc = tcase_create("header");

    tcase_add_test(tc, gateway_stripe_header_parse_reads_t_and_every_v1);
    tcase_add_test(tc, gateway_stripe_header_parse_refuses_incomplete_headers);
    suite_add_tcase(s, tc);
    tc = tcase_create("verify");
    tcase_add_test(tc, gateway_stripe_verify_matches_the_openssl_vector);
    tcase_add_test(tc, gateway_stripe_verify_accepts_any_matching_v1);
    tcase_add_test(tc, gateway_stripe_verify_refuses_another_secret_or_body);
    tcase_add_test(tc, gateway_stripe_verify_applies_the_tolerance_both_ways);
    tcase_add_test(tc, gateway_stripe_verify_signs_the_raw_body_as_testkeys_does);
    suite_add_tcase(s, tc);
    tc = tcase_create("notice");
    tcase_add_test(tc, gateway_stripe_notice_reads_a_succeeded_payment_intent);
    tcase_add_test(tc, gateway_stripe_notice_refuses_nul_in_any_string);
    tcase_add_test(tc, gateway_stripe_notice_converts_zero_decimal_currencies);
    tcase_add_test(tc, gateway_stripe_notice_acknowledges_other_event_types);
    tcase_add_test(tc, gateway_stripe_notice_refuses_incomplete_intents);
    tcase_add_test(tc, gateway_stripe_notice_refuses_bad_amounts_and_currencies);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_stripe_suite, NULL, NULL);
