/* check_signature.c - unit tests for signature.c. The expected MACs were
 * computed independently with the openssl command line, e.g.
 *   printf '%s' '1700000000.{"a":1}' | openssl dgst -sha256 -hmac dev-secret
 * and are hard-coded here as the oracle. */
#include <check.h>
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "signature.h"
#include "../check_main.h"

#define SECRET "dev-secret"
#define TS "1700000000"
#define TS_S INT64_C(1700000000)
#define BODY "{\"a\":1}"
#define WINDOW_S INT64_C(300)
/* HMAC-SHA256(dev-secret, "1700000000.{\"a\":1}") */
#define MAC_BODY "81528f21e4bbfbf8126dae6ccb165f60a908ae2df81dd1d5def1b102278ab923"
/* HMAC-SHA256(other-secret, "1700000000.{\"a\":1}") */
#define MAC_OTHER "d26e6d3ebb77ee6d8bcc8b2f6184dc4e58401cc7852a06e70ba3c9c05d8a9481"
/* HMAC-SHA256(dev-secret, "1700000000.") */
#define MAC_EMPTY "46775370b0a8571b014ec581bce4dac76fa2d8df0091cdefad9008689b4ea0d2"

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
    static const char
        *const
            bad
                [] = {
                    "17000000a0",
                    "-1700000000",
                    "+1700000000",
                    " 1700000000",
                    "1700000000 ",
                    "1.7e9",
                    "1700000000.0",
                    "0x6553f100",
                    "\357\274\221700000000", /* fullwidth 1 then 700000000 */
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
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at("00000000001700000000", MAC_BODY, TS_S));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at("9999999999999999999", MAC_BODY, TS_S));
}
END_TEST

START_TEST(sig_verify_survives_extreme_clock_values)
{
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, INT64_MIN));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at(TS, MAC_BODY, INT64_MAX));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, verify_at("9223372036854775807", MAC_BODY, INT64_MIN));
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
                     sig_verify("other-secret", TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
}
END_TEST

START_TEST(sig_verify_rejects_tampered_body)
{
    static const char tampered[] = "{\"a\":2}";

    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify(SECRET, TS, MAC_BODY, tampered, strlen(tampered), TS_S, WINDOW_S));
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
    ck_assert_str_eq("missing X-Timestamp or X-Signature header", sig_status_str(SIG_MISSING));
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
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_verify_any(NULL, 0, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
}
END_TEST

/* --- sig_keys: secrets keyed once --- */

/* The keys of RFC 4231's HMAC-SHA256 test cases 1-4, 6 and 7 (6 and 7 are
 * longer than SHA-256's block, so HMAC hashes them first), each with its
 * case's data. None holds a NUL byte, so each is a C string. */
struct rfc4231_case {
    unsigned char key_byte; /* every byte of the key; 0: the bytes 0x01, 0x02, ... */
    size_t key_len;
    const char *key; /* or a printable key */
    const char *data;
};

static const struct rfc4231_case rfc4231[] = {
    { 0x0b, 20, NULL, "Hi There" },
    { 0, 0, "Jefe", "what do ya want for nothing?" },
    { 0xaa, 20, NULL,
      "\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd"
      "\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd"
      "\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd\xdd" },
    { 0, 25, NULL,
      "\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd"
      "\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd"
      "\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd\xcd" },
    { 0xaa, 131, NULL, "Test Using Larger Than Block-Size Key - Hash Key First" },
    { 0xaa, 131, NULL,
      "This is a test using a larger than block-size key and a larger than "
      "block-size data. The key needs to be hashed before being used by the "
      "HMAC algorithm." },
};

/* The key of case c as a string, built in keybuf unless it is printable. */
static const char *rfc4231_key(const struct rfc4231_case *c, char keybuf[256])
{
    if (c->key != NULL)
        return c->key;
    for (size_t i = 0; i < c->key_len; i++)
        keybuf[i] = (char)(c->key_byte ? c->key_byte : i + 1);
    keybuf[c->key_len] = '\0';
    return keybuf;
}

START_TEST(sig_keys_compute_equals_a_from_scratch_hmac_on_rfc4231_keys)
{
    for (size_t i = 0; i < sizeof(rfc4231) / sizeof(rfc4231[0]); i++) {
        char keybuf[256], keyed[SIG_HEX_LEN + 1], scratch[SIG_HEX_LEN + 1];
        const char *secret = rfc4231_key(&rfc4231[i], keybuf);
        struct sig_keys *k = sig_keys_create(&secret, 1);
        const char *data = rfc4231[i].data;

        ck_assert_ptr_nonnull(k);
        ck_assert_int_eq(0, sig_keys_compute(k, 0, TS, data, strlen(data), keyed));
        ck_assert_int_eq(0, sig_compute(secret, TS, data, strlen(data), scratch));
        ck_assert_str_eq(scratch, keyed);
        ck_assert_int_eq(0, sig_keys_compute(k, 0, "", data, strlen(data), keyed));
        ck_assert_int_eq(0, sig_compute(secret, "", data, strlen(data), scratch));
        ck_assert_str_eq(scratch, keyed);
        sig_keys_destroy(k);
    }
}
END_TEST

/* RFC 4231 test case 7's data holds a '.', so it splits into a timestamp
 * part and a body part and the MAC is the RFC's own. */
START_TEST(sig_keys_compute_matches_rfc4231_case_7)
{
    const char *data = rfc4231[5].data;
    const char *dot = strchr(data, '.');
    char keybuf[256], ts[128], out[SIG_HEX_LEN + 1];
    const char *secret = rfc4231_key(&rfc4231[5], keybuf);
    struct sig_keys *k = sig_keys_create(&secret, 1);

    ck_assert_ptr_nonnull(k);
    memcpy(ts, data, (size_t)(dot - data));
    ts[dot - data] = '\0';
    ck_assert_int_eq(0, sig_keys_compute(k, 0, ts, dot + 1, strlen(dot + 1), out));
    ck_assert_str_eq("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", out);
    ck_assert_int_eq(0, sig_compute(secret, ts, dot + 1, strlen(dot + 1), out));
    ck_assert_str_eq("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", out);
    sig_keys_destroy(k);
}
END_TEST

START_TEST(sig_keys_stay_keyed_after_every_use)
{
    const char *secret = SECRET;
    struct sig_keys *k = sig_keys_create(&secret, 1);
    char out[SIG_HEX_LEN + 1];

    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(0, sig_keys_compute(k, 0, TS, BODY, strlen(BODY), out));
    ck_assert_str_eq(MAC_BODY, out);
    ck_assert_int_eq(0, sig_keys_compute(k, 0, TS, "", 0, out));
    ck_assert_str_eq(MAC_EMPTY, out);
    ck_assert_int_eq(0, sig_keys_compute(k, 0, TS, BODY, strlen(BODY), out));
    ck_assert_str_eq(MAC_BODY, out);
    ck_assert_int_eq(SIG_OK, sig_keys_verify(k, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_OK, sig_keys_verify(k, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    sig_keys_destroy(k);
}
END_TEST

START_TEST(sig_keys_verify_accepts_either_secret_of_a_rotation)
{
    const char *rotating[] = { "other-secret", SECRET };
    const char *neither[] = { "third", "fourth" };
    struct sig_keys *k = sig_keys_create(rotating, 2);
    struct sig_keys *n = sig_keys_create(neither, 2);

    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(n);
    ck_assert_int_eq(SIG_OK, sig_keys_verify(k, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_OK, sig_keys_verify(k, TS, MAC_OTHER, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_keys_verify(n, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_BAD_TIMESTAMP, sig_keys_verify(k, TS, MAC_BODY, BODY, strlen(BODY),
                                                        TS_S + WINDOW_S + 1, WINDOW_S));
    sig_keys_destroy(k);
    sig_keys_destroy(n);
}
END_TEST

START_TEST(sig_keys_never_match_an_empty_secret)
{
    const char *empty_second[] = { "third", "" };
    const char *empty_first[] = { NULL, SECRET };
    struct sig_keys *a = sig_keys_create(empty_second, 2);
    struct sig_keys *b = sig_keys_create(empty_first, 2);
    char out[SIG_HEX_LEN + 1];

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(-1, sig_keys_compute(a, 1, TS, BODY, strlen(BODY), out));
    ck_assert_str_eq("", out);
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_keys_verify(a, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_OK, sig_keys_verify(b, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    sig_keys_destroy(a);
    sig_keys_destroy(b);
}
END_TEST

START_TEST(sig_keys_refuse_more_secrets_than_the_maximum)
{
    const char *secrets[] = { SECRET, SECRET, SECRET };
    struct sig_keys *k = sig_keys_create(secrets, 1);
    char out[SIG_HEX_LEN + 1];

    ck_assert_ptr_null(sig_keys_create(secrets, SIG_SECRETS_MAX + 1));
    ck_assert_ptr_null(sig_keys_create(NULL, 1));
    ck_assert_int_eq(SIG_MISMATCH,
                     sig_keys_verify(NULL, TS, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_int_eq(SIG_MISSING,
                     sig_keys_verify(NULL, NULL, MAC_BODY, BODY, strlen(BODY), TS_S, WINDOW_S));
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(-1, sig_keys_compute(k, 1, TS, BODY, strlen(BODY), out));
    ck_assert_int_eq(-1, sig_keys_compute(k, 0, NULL, BODY, strlen(BODY), out));
    ck_assert_int_eq(-1, sig_keys_compute(k, 0, TS, NULL, 5, out));
    sig_keys_destroy(k);
    sig_keys_destroy(NULL);
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

    tc = tcase_create("keys");
    tcase_add_test(tc, sig_keys_compute_equals_a_from_scratch_hmac_on_rfc4231_keys);
    tcase_add_test(tc, sig_keys_compute_matches_rfc4231_case_7);
    tcase_add_test(tc, sig_keys_stay_keyed_after_every_use);
    tcase_add_test(tc, sig_keys_verify_accepts_either_secret_of_a_rotation);
    tcase_add_test(tc, sig_keys_never_match_an_empty_secret);
    tcase_add_test(tc, sig_keys_refuse_more_secrets_than_the_maximum);
    suite_add_tcase(s, tc);

    tc = tcase_create("status_str");
    tcase_add_test(tc, sig_status_str_names_the_headers);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(signature_suite, NULL, NULL);
