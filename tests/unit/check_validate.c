/* check_validate.c - unit tests for validate.c: the identifier rule
 * (1..64 of [A-Za-z0-9_.:-]) and the 32-lowercase-hex token rule. */
#include <check.h>
#include <string.h>

#include "validate.h"

/* Fills buf with n copies of c and a NUL; buf has at least n + 1 bytes. */
static char *repeat(char *buf, char c, size_t n)
{
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

/* --- validate_id --- */

START_TEST(validate_id_accepts_letters_and_digits)
{
    ck_assert(validate_id("u1001"));
    ck_assert(validate_id("SHOE42"));
    ck_assert(validate_id("a"));
    ck_assert(validate_id("7"));
}
END_TEST

START_TEST(validate_id_accepts_each_allowed_punctuation)
{
    ck_assert(validate_id("_"));
    ck_assert(validate_id("."));
    ck_assert(validate_id(":"));
    ck_assert(validate_id("-"));
    ck_assert(validate_id("SHOE-42"));
    ck_assert(validate_id("pay_2024.01:abc-9"));
    ck_assert(validate_id("550e8400-e29b-41d4-a716-446655440000"));
}
END_TEST

START_TEST(validate_id_accepts_64_characters)
{
    char buf[ID_BUF];

    ck_assert(validate_id(repeat(buf, 'a', ID_MAX_LEN)));
}
END_TEST

START_TEST(validate_id_rejects_65_characters)
{
    char buf[ID_BUF + 1];

    ck_assert(!validate_id(repeat(buf, 'a', ID_MAX_LEN + 1)));
}
END_TEST

START_TEST(validate_id_rejects_empty_string)
{
    ck_assert(!validate_id(""));
}
END_TEST

START_TEST(validate_id_rejects_null)
{
    ck_assert(!validate_id(NULL));
}
END_TEST

START_TEST(validate_id_rejects_space)
{
    ck_assert(!validate_id("u 1"));
    ck_assert(!validate_id(" u1"));
    ck_assert(!validate_id("u1 "));
    ck_assert(!validate_id("u1\t"));
    ck_assert(!validate_id("u1\n"));
}
END_TEST

START_TEST(validate_id_rejects_slash)
{
    ck_assert(!validate_id("a/b"));
    ck_assert(!validate_id("../etc"));
    ck_assert(!validate_id("a\\b"));
}
END_TEST

START_TEST(validate_id_rejects_quotes)
{
    ck_assert(!validate_id("a'b"));
    ck_assert(!validate_id("a\"b"));
    ck_assert(!validate_id("a`b"));
}
END_TEST

START_TEST(validate_id_rejects_other_punctuation)
{
    static const char *const bad[] = {
        "a;b", "a,b", "a%b", "a+b", "a*b", "a#b", "a?b", "a&b", "a=b",
        "a@b", "a(b", "a{b", "a<b", "a|b", "a~b", "a!b", "a$b",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!validate_id(bad[i]), "\"%s\" was accepted", bad[i]);
}
END_TEST

START_TEST(validate_id_rejects_non_ascii)
{
    ck_assert(!validate_id("caf\xc3\xa9"));            /* café */
    ck_assert(!validate_id("\xe8\xae\xa2\xe5\x8d\x95")); /* 订单 */
    ck_assert(!validate_id("\xef\xbc\x91"));           /* fullwidth 1 */
    ck_assert(!validate_id("a\x7f"));
    ck_assert(!validate_id("a\x01"));
}
END_TEST

/* --- validate_token --- */

START_TEST(validate_token_accepts_32_lowercase_hex)
{
    ck_assert(validate_token("0123456789abcdef0123456789abcdef"));
    ck_assert(validate_token("ffffffffffffffffffffffffffffffff"));
}
END_TEST

START_TEST(validate_token_rejects_uppercase_hex)
{
    ck_assert(!validate_token("0123456789ABCDEF0123456789abcdef"));
    ck_assert(!validate_token("0123456789abcdef0123456789abcdeF"));
}
END_TEST

START_TEST(validate_token_rejects_wrong_length)
{
    char buf[40];

    ck_assert(!validate_token(repeat(buf, 'a', 31)));
    ck_assert(!validate_token(repeat(buf, 'a', 33)));
    ck_assert(!validate_token(repeat(buf, 'a', 1)));
    ck_assert(!validate_token(""));
}
END_TEST

START_TEST(validate_token_rejects_non_hex)
{
    ck_assert(!validate_token("0123456789abcdef0123456789abcdeg"));
    ck_assert(!validate_token("0123456789abcdef-123456789abcdef"));
    ck_assert(!validate_token("0123456789abcdef 123456789abcdef"));
}
END_TEST

START_TEST(validate_token_rejects_null)
{
    ck_assert(!validate_token(NULL));
}
END_TEST

static Suite *validate_suite(void)
{
    Suite *s = suite_create("validate");
    TCase *tc;

    tc = tcase_create("id_accepts");
    tcase_add_test(tc, validate_id_accepts_letters_and_digits);
    tcase_add_test(tc, validate_id_accepts_each_allowed_punctuation);
    tcase_add_test(tc, validate_id_accepts_64_characters);
    suite_add_tcase(s, tc);

    tc = tcase_create("id_rejects");
    tcase_add_test(tc, validate_id_rejects_65_characters);
    tcase_add_test(tc, validate_id_rejects_empty_string);
    tcase_add_test(tc, validate_id_rejects_null);
    tcase_add_test(tc, validate_id_rejects_space);
    tcase_add_test(tc, validate_id_rejects_slash);
    tcase_add_test(tc, validate_id_rejects_quotes);
    tcase_add_test(tc, validate_id_rejects_other_punctuation);
    tcase_add_test(tc, validate_id_rejects_non_ascii);
    suite_add_tcase(s, tc);

    tc = tcase_create("token");
    tcase_add_test(tc, validate_token_accepts_32_lowercase_hex);
    tcase_add_test(tc, validate_token_rejects_uppercase_hex);
    tcase_add_test(tc, validate_token_rejects_wrong_length);
    tcase_add_test(tc, validate_token_rejects_non_hex);
    tcase_add_test(tc, validate_token_rejects_null);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(validate_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
