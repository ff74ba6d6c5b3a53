/* check_signature.c - unit tests for signature.c. The expected MACs were
 * computed independently with the openssl command line, e.g.
 *   printf '%s' '1700000000.{"a":1}' | openssl dgst -sha256 -hmac dev-secret
 * and are hard-coded here as the oracle. */
#include <check.h>
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "signature.h"

#define SECRET     "dev-secret"
#define TS         "1700000000"
#define TS_S       INT64_C(1700000000)
#define BODY       "{\"a\":1}"
#define WINDOW_S   INT64_C(300)
/* HMAC-SHA256(dev-secret, "1700000000.{\"a\":1}") */
#define MAC_BODY   "81528f21e4bbfbf8126dae6ccb165f60a908ae2df81dd1d5def1b102278ab923"
/* HMAC-SHA256(other-secret, "1700000000.{\"a\":1}") */
#define MAC_OTHER  "d26e6d3ebb77ee6d8bcc8b2f6184dc4e58401cc7852a06e70ba3c9c05d8a9481"
/* HMAC-SHA256(dev-secret, "1700000000.") */
#define MAC_EMPTY  "46775370b0a8571b014ec581bce4dac76fa2d8df0091cdefad9008689b4ea0d2"

/* sig_verify with the fixed secret and body, at time now_s. */
static enum sig_status verify_at(const char *ts, const char *sig, int64_t now_s)
{
    return sig_verify(SECRET, ts, sig, BODY, strlen(BODY), now_s, WINDOW_S);
}

/* --- sig_compute --- */

START_TEST(sig_compute_matches_openssl_vector)
{
    char out[SIG_HEX_LEN + 1];

    ck_assert_int_eq(0, sig_compute(SECRET, TS, BODY, strlen(BODY), out));
    ck_assert_str_eq(MAC_BODY, out);
}
END_TEST

START_TEST(sig_compute_depends_on_the_key)
{
    char out[SIG_HEX_LEN + 1];

    ck_assert_int_eq(0, sig_compute("other-secret", TS, BODY, strlen(BODY), out));
    ck_assert_str_eq(MAC_OTHER, out);
}
END_TEST

START_TEST(sig_compute_of_empty_body_matches_openssl_vector)
{
    char out[SIG_HEX_LEN + 1];

    ck_assert_int_eq(0, sig_compute(SECRET, TS, "", 0, out));
    ck_assert_str_eq(MAC_EMPTY, out);
    ck_assert_int_eq(0, sig_compute(SECRET, TS, NULL, 0, out));
    ck_assert_str_eq(MAC_EMPTY, out);
}
END_TEST

START_TEST(sig_compute_reads_only_body_len_bytes)
{
    char out[SIG_HEX_LEN + 1];

    ck_assert_int_eq(0, sig_compute(SECRET, TS, BODY "trailing", strlen(BODY), out));
    ck_assert_str_eq(MAC_BODY, out);
}
END_TEST

START_TEST(sig_compute_refuses_missing_secret)
{
    char out[SIG_HEX_LEN + 1] = "x";

    ck_assert_int_eq(-1, sig_compute("", TS, BODY, strlen(BODY), out));
    ck_assert_str_eq("", out);
    ck_assert_int_eq(-1, sig_compute(NULL, TS, BODY, strlen(BODY), out));
    ck_assert_int_eq(-1, sig_compute(SECRET, NULL, BODY, strlen(BODY), out));
    ck_assert_int_eq(-1, sig_compute(SECRET, TS, NULL, 5, out));
}
END_TEST

/* --- sig_verify: accepted --- */

START_TEST(sig_verify_accepts_correct_signature)
{
    ck_assert_int_eq(SIG_OK, verify_at(TS, MAC_BODY, TS_S));
    ck_assert_int_eq(SIG_OK, verify_at(TS, MAC_BODY, TS_S + 1));
}
END_TEST

START_TEST(sig_verify_accepts_timestamp_exactly_at_window_edge)
{
    ck_assert_int_eq(SIG_OK, verify_at(TS, MAC_BODY, TS_S + WINDOW_S));
    ck_assert_int_eq(SIG_OK, verify_at(TS, MAC_BODY, TS_S - WINDOW_S));
}
END_TEST

/* --- sig_verify: missing headers --- */

START_TEST(sig_verify_reports_missing_timestamp)
{
    ck_assert_int_eq(SIG_MISSING, verify_at(NULL, MAC_BODY, TS_S));
    ck_assert_int_eq(SIG_MISSING, verify_at("", MAC_BODY, TS_S));
}
END_TEST

START_TEST(sig_verify_reports_missing_signature)
{
    ck_assert_int_eq(SIG_MISSING, verify_at(TS, NULL, TS_S));
    ck_assert_int_eq(SIG_MISSING, verify_at(TS, "", TS_S));
    ck_assert_int_eq(SIG_MISSING, verify_at(NULL, NULL, TS_S));
}
END_TEST

/* --- sig_verify: timestamp --- */

START_TEST(sig_verify_rejects_stale_timestamp)
{
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, TS_S + WINDOW_S + 1));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, TS_S + 86400));
}
END_TEST

START_TEST(sig_verify_rejects_future_timestamp)
{
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, TS_S - WINDOW_S - 1));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, 0));
}
END_TEST

START_TEST(sig_verify_rejects_non_digit_timestamp)
{
    static const char *const bad[] = {
        "17000000a0", "-1700000000", "+1700000000", " 1700000000",
        "1700000000 ", "1.7e9", "1700000000.0", "0x6553f100",
        "\357\274\221700000000",        /* fullwidth 1 then 700000000 */
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(SIG_BAD_TIMESTAMP == verify_at(bad[i], MAC_BODY, TS_S),
                      "timestamp \"%s\" was not refused", bad[i]);
}
END_TEST

START_TEST(sig_verify_rejects_overlong_timestamp)
{
    /* 20 digits, and 19 digits above INT64_MAX: neither is a unix time. */
    ck_assert_int_eq(SIG_BAD_TIMESTAMP,
                     verify_at("00000000001700000000", MAC_BODY, TS_S));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP,
                     verify_at("9999999999999999999", MAC_BODY, TS_S));
}
END_TEST

START_TEST(sig_verify_survives_extreme_clock_values)
{
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, INT64_MIN));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, INT64_MAX));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP,
                     verify_at("9223372036854775807", MAC_BODY, INT64_MIN));
}
END_TEST

START_TEST(sig_verify_rejects_everything_with_negative_window)
{
    ck_assert_int_eq(SIG_BAD_TIMESTAMP,
                     sig_verify(SECRET, TS, MAC_BODY, BODY, strlen(BODY), TS_S, -1));
}
END_TEST

/* --- sig_verify: MAC --- */

START_TEST(sig_verify_rejects_wrong_key)
{
    ck_assert_int_eq(SIG_MISMATCH, verify_at(TS, MAC_OTHER, TS_S));
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify("other-secret", TS, MAC_BODY, BODY, strlen(BODY),
                                TS_S, WINDOW_S));
}
END_TEST

START_TEST(sig_verify_rejects_tampered_body)
{
    static const char tampered[] = "{\"a\":2}";

    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify(SECRET, TS, MAC_BODY, tampered, strlen(tampered),
                                TS_S, WINDOW_S));
}
END_TEST

START_TEST(sig_verify_rejects_signature_for_other_timestamp)
{
    /* The MAC covers the timestamp: replaying it with a fresh one fails. */
    ck_assert_int_eq(SIG_MISMATCH, verify_at("1700000001", MAC_BODY, TS_S));
}
END_TEST

START_TEST(sig_verify_rejects_uppercase_hex)
{
    char upper[SIG_HEX_LEN + 1];
    size_t i;

    for (i = 0; i <= SIG_HEX_LEN; i++)
        upper[i] = (char)toupper((unsigned char)MAC_BODY[i]);
    ck_assert_str_ne(MAC_BODY, upper);
    ck_assert_int_eq(SIG_MISMATCH, verify_at(TS, upper, TS_S));
}
END_TEST

START_TEST(sig_verify_rejects_wrong_length)
{
    char shorter[SIG_HEX_LEN];
    char longer[SIG_HEX_LEN + 2];

    memcpy(shorter, MAC_BODY, SIG_HEX_LEN - 1);
    shorter[SIG_HEX_LEN - 1] = '\0';
    memcpy(longer, MAC_BODY, SIG_HEX_LEN);
    longer[SIG_HEX_LEN] = '0';
    longer[SIG_HEX_LEN + 1] = '\0';
    ck_assert_int_eq(SIG_MISMATCH, verify_at(TS, shorter, TS_S));
    ck_assert_int_eq(SIG_MISMATCH, verify_at(TS, longer, TS_S));
    ck_assert_int_eq(SIG_MISMATCH, verify_at(TS, "81528f21", TS_S));
}
END_TEST

START_TEST(sig_verify_fails_closed_without_secret)
{
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify("", TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify(NULL, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
}
END_TEST

/* --- sig_status_str --- */

START_TEST(sig_status_str_names_the_headers)
{
    ck_assert_str_eq("missing X-Timestamp or X-Signature header",
                     sig_status_str(SIG_MISSING));
    ck_assert_str_eq("X-Timestamp is not a unix time within the allowed window",
                     sig_status_str(SIG_BAD_TIMESTAMP));
    ck_assert_str_eq("signature does not match", sig_status_str(SIG_MISMATCH));
    ck_assert_ptr_nonnull(sig_status_str(SIG_OK));
    ck_assert_ptr_nonnull(sig_status_str((enum sig_status)42));
}
END_TEST

START_TEST(sig_ts_fresh_accepts_the_window_edges_only)
{
    ck_assert(sig_ts_fresh(TS, TS_S + WINDOW_S, WINDOW_S));
    ck_assert(sig_ts_fresh(TS, TS_S - WINDOW_S, WINDOW_S));
    ck_assert(!sig_ts_fresh(TS, TS_S + WINDOW_S + 1, WINDOW_S));
    ck_assert(!sig_ts_fresh(TS, TS_S - WINDOW_S - 1, WINDOW_S));
    ck_assert(!sig_ts_fresh("-1700000000", TS_S, WINDOW_S));
    ck_assert(!sig_ts_fresh("", TS_S, WINDOW_S));
    ck_assert(!sig_ts_fresh(NULL, TS_S, WINDOW_S));
}
END_TEST

/* --- sig_verify_any: two secrets during a rotation --- */

static enum sig_status verify_any(const char *first, const char *second, const char *sig)
{
    const char *secrets[] = { first, second };

    return sig_verify_any(secrets, 2, TS, sig, BODY, strlen(BODY), TS_S, WINDOW_S);
}

START_TEST(sig_verify_any_accepts_the_first_secret)
{
    ck_assert_int_eq(SIG_OK, verify_any(SECRET, "other-secret", MAC_BODY));
}
END_TEST

START_TEST(sig_verify_any_accepts_the_second_secret)
{
    ck_assert_int_eq(SIG_OK, verify_any("other-secret", SECRET, MAC_BODY));
    ck_assert_int_eq(SIG_OK, verify_any(SECRET, "other-secret", MAC_OTHER));
}
END_TEST

START_TEST(sig_verify_any_refuses_when_neither_matches)
{
    ck_assert_int_eq(SIG_MISMATCH, verify_any("third", "fourth", MAC_BODY));
}
END_TEST

START_TEST(sig_verify_any_never_matches_an_empty_secret)
{
    ck_assert_int_eq(SIG_MISMATCH, verify_any("third", "", MAC_BODY));
    ck_assert_int_eq(SIG_MISMATCH, verify_any(NULL, "", MAC_BODY));
    ck_assert_int_eq(SIG_OK, verify_any("", SECRET, MAC_BODY));
}
END_TEST

START_TEST(sig_verify_any_refuses_more_secrets_than_its_maximum)
{
    const char *secrets[] = { SECRET, SECRET, SECRET };

    ck_assert_int_eq(SIG_MISMATCH, sig_verify_any(secrets, SIG_SECRETS_MAX + 1, TS, MAC_BODY, BODY,
                                                  strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_MISMATCH, sig_verify_any(NULL, 0, TS, MAC_BODY, BODY, strlen(BODY), TS_S,
                                                  WINDOW_S));
}
END_TEST

static Suite *signature_suite(void)
{
    Suite *s = suite_create("signature");
    TCase *tc;

    tc = tcase_create("compute");
    tcase_add_test(tc, sig_compute_matches_openssl_vector);
    tcase_add_test(tc, sig_compute_depends_on_the_key);
    tcase_add_test(tc, sig_compute_of_empty_body_matches_openssl_vector);
    tcase_add_test(tc, sig_compute_reads_only_body_len_bytes);
    tcase_add_test(tc, sig_compute_refuses_missing_secret);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify_accepts");
    tcase_add_test(tc, sig_verify_accepts_correct_signature);
    tcase_add_test(tc, sig_verify_accepts_timestamp_exactly_at_window_edge);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify_missing");
    tcase_add_test(tc, sig_verify_reports_missing_timestamp);
    tcase_add_test(tc, sig_verify_reports_missing_signature);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify_timestamp");
    tcase_add_test(tc, sig_verify_rejects_stale_timestamp);
    tcase_add_test(tc, sig_verify_rejects_future_timestamp);
    tcase_add_test(tc, sig_verify_rejects_non_digit_timestamp);
    tcase_add_test(tc, sig_verify_rejects_overlong_timestamp);
    tcase_add_test(tc, sig_verify_survives_extreme_clock_values);
    tcase_add_test(tc, sig_verify_rejects_everything_with_negative_window);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify_mac");
    tcase_add_test(tc, sig_verify_rejects_wrong_key);
    tcase_add_test(tc, sig_verify_rejects_tampered_body);
    tcase_add_test(tc, sig_verify_rejects_signature_for_other_timestamp);
    tcase_add_test(tc, sig_verify_rejects_uppercase_hex);
    tcase_add_test(tc, sig_verify_rejects_wrong_length);
    tcase_add_test(tc, sig_verify_fails_closed_without_secret);
    suite_add_tcase(s, tc);

    tc = tcase_create("ts_fresh");
    tcase_add_test(tc, sig_ts_fresh_accepts_the_window_edges_only);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify_any");
    tcase_add_test(tc, sig_verify_any_accepts_the_first_secret);
    tcase_add_test(tc, sig_verify_any_accepts_the_second_secret);
    tcase_add_test(tc, sig_verify_any_refuses_when_neither_matches);
    tcase_add_test(tc, sig_verify_any_never_matches_an_empty_secret);
    tcase_add_test(tc, sig_verify_any_refuses_more_secrets_than_its_maximum);
    suite_add_tcase(s, tc);

    tc = tcase_create("status_str");
    tcase_add_test(tc, sig_status_str_names_the_headers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(signature_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
