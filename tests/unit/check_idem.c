/* check_idem.c - unit tests for the pure parts of idem.c: reading an
 * Idempotency-Key header value and the request fingerprint. */
#include <check.h>
#include <string.h>

#include "idem.h"
#include "../check_main.h"

START_TEST(idem_key_parse_takes_a_bare_token)
{
    char k[IDEM_KEY_MAX + 1];

    ck_assert_int_eq(0, idem_key_parse("8e03978e-40d5-43e8-bc93-6894a57f9324", k));
    ck_assert_str_eq("8e03978e-40d5-43e8-bc93-6894a57f9324", k);
}
END_TEST

START_TEST(idem_key_parse_unquotes_a_structured_field_string)
{
    char k[IDEM_KEY_MAX + 1];

    ck_assert_int_eq(0, idem_key_parse("\"a key with \\\"quotes\\\" and \\\\\"", k));
    ck_assert_str_eq("a key with \"quotes\" and \\", k);
}
END_TEST

START_TEST(idem_key_parse_refuses_empty_long_and_invisible)
{
    static const char *const bad[] = { "",
                                       "\"\"",
                                       "\"open",
                                       "\"a\"tail",
                                       "with space",
                                       "tab\there",
                                       "\"bad \\x escape\"",
                                       "caf\xc3\xa9" };
    char k[IDEM_KEY_MAX + 1], longkey[IDEM_KEY_MAX + 2];

    ck_assert_int_eq(-1, idem_key_parse(NULL, k));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(idem_key_parse(bad[i], k) == -1, "accepted [%s]", bad[i]);
        ck_assert_str_eq("", k);
    }
    memset(longkey, 'x', IDEM_KEY_MAX + 1);
    longkey[IDEM_KEY_MAX + 1] = '\0';
    ck_assert_int_eq(-1, idem_key_parse(longkey, k));
    longkey[IDEM_KEY_MAX] = '\0';
    ck_assert_int_eq(0, idem_key_parse(longkey, k));
    ck_assert_uint_eq(IDEM_KEY_MAX, strlen(k));
}
END_TEST

START_TEST(idem_fingerprint_changes_with_each_part_and_only_then)
{
    char a[IDEM_FP_HEX + 1], b[IDEM_FP_HEX + 1];

    idem_fingerprint("POST", "/order/create", "user:u1", "{\"q\":1}", 7, a);
    ck_assert_uint_eq(IDEM_FP_HEX, strlen(a));
    idem_fingerprint("POST", "/order/create", "user:u1", "{\"q\":1}", 7, b);
    ck_assert_str_eq(a, b);
    idem_fingerprint("POST", "/order/create", "user:u1", "{\"q\":2}", 7, b);
    ck_assert_str_ne(a, b);
    idem_fingerprint("POST", "/order/create", "user:u2", "{\"q\":1}", 7, b);
    ck_assert_str_ne(a, b);
    idem_fingerprint("POST", "/order/X/ship", "user:u1", "{\"q\":1}", 7, b);
    ck_assert_str_ne(a, b);
    idem_fingerprint("PUT", "/order/create", "user:u1", "{\"q\":1}", 7, b);
    ck_assert_str_ne(a, b);
}
END_TEST

static Suite *idem_suite(void)
{
    Suite *s = suite_create("idem");
    TCase *tc = tcase_create("key header");

    tcase_add_test(tc, idem_key_parse_takes_a_bare_token);
    tcase_add_test(tc, idem_key_parse_unquotes_a_structured_field_string);
    tcase_add_test(tc, idem_key_parse_refuses_empty_long_and_invisible);
    suite_add_tcase(s, tc);

    tc = tcase_create("fingerprint");
    tcase_add_test(tc, idem_fingerprint_changes_with_each_part_and_only_then);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(idem_suite, NULL, NULL);
