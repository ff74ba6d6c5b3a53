/* check_stdwebhook.c - unit tests for stdwebhook.c. The oracle is the
 * Standard Webhooks specification's own example (secret, id, timestamp,
 * body and signature), which the `standardwebhooks` npm package also
 * computes; the second vector was computed with that package. */
#include <check.h>
#include <string.h>

#include "stdwebhook.h"
#include "../check_main.h"

#define SPEC_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SPEC_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SPEC_TS "1614265330"
#define SPEC_BODY "{\"test\": 2432232314}"
#define SPEC_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

START_TEST(the_specification_example_signs_as_published)
{
    unsigned char key[SWH_KEY_MAX];
    size_t n = 0;
    char sig[SWH_SIG_LEN + 1];

    ck_assert_int_eq(0, swh_secret_decode(SPEC_SECRET, key, &n));
    ck_assert_uint_eq(24, n);
    ck_assert_int_eq(0, swh_sign(key, n, SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), sig));
    ck_assert_str_eq(SPEC_SIG, sig);
}
END_TEST

START_TEST(an_empty_body_is_signed_too)
{
    unsigned char key[SWH_KEY_MAX];
    size_t n = 0;
    char sig[SWH_SIG_LEN + 1];

    ck_assert_int_eq(0, swh_secret_decode(SPEC_SECRET, key, &n));
    ck_assert_int_eq(0, swh_sign(key, n, "OB1:order.paid", "1700000000", NULL, 0, sig));
    ck_assert_str_eq("v1,U24Z9VkhW64M6Sza1zIYAV2MhmI/tBf4VfYzM/E6NEI=", sig);
}
END_TEST

START_TEST(secrets_not_in_the_whsec_form_are_refused)
{
    unsigned char key[SWH_KEY_MAX];
    size_t n = 99;

    ck_assert_int_eq(-1, swh_secret_decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key, &n));
    ck_assert_uint_eq(0, n);
    ck_assert_int_eq(-1, swh_secret_decode("whsec_not base64!", key, &n));
    ck_assert_int_eq(-1, swh_secret_decode("whsec_c2hvcnQ=", key, &n)); /* 5 bytes */
    ck_assert_int_eq(-1, swh_secret_decode("whsec_", key, &n));
    ck_assert_int_eq(-1, swh_secret_decode(NULL, key, &n));
}
END_TEST

START_TEST(signing_needs_a_key_an_id_and_a_timestamp)
{
    unsigned char key[SWH_KEY_MIN] = { 1 };
    char sig[SWH_SIG_LEN + 1];

    ck_assert_int_eq(-1, swh_sign(key, 0, "id", "1", "", 0, sig));
    ck_assert_int_eq(-1, swh_sign(key, sizeof(key), NULL, "1", "", 0, sig));
    ck_assert_int_eq(-1, swh_sign(key, sizeof(key), "id", NULL, "", 0, sig));
    ck_assert_int_eq(-1, swh_sign(key, sizeof(key), "id", "1", NULL, 3, sig));
    ck_assert_str_eq("", sig);
}
END_TEST

static Suite *stdwebhook_suite(void)
{
    Suite *s = suite_create("stdwebhook");
    TCase *tc = tcase_create("sign");

    tcase_add_test(tc, the_specification_example_signs_as_published);
    tcase_add_test(tc, an_empty_body_is_signed_too);
    tcase_add_test(tc, secrets_not_in_the_whsec_form_are_refused);
    tcase_add_test(tc, signing_needs_a_key_an_id_and_a_timestamp);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(stdwebhook_suite, NULL, NULL);
