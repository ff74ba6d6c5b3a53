/* check_validate.c - unit tests for validate.c: the identifier rule
 * (1..64 of [A-Za-z0-9_.:-]) and the 32-lowercase-hex token rule. */
#include <check.h>
#include <string.h>

#include "validate.h"
#include "../check_main.h"

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
    ck_assert(!validate_id("caf\xc3\xa9"));              /* café */
    ck_assert(!validate_id("\xe8\xae\xa2\xe5\x8d\x95")); /* 订单 */
    ck_assert(!validate_id("\xef\xbc\x91"));             /* fullwidth 1 */
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

/* --- validate_http_url, validate_bearer_token --- */

START_TEST(validate_http_url_accepts_http_and_https_urls)
{
    static const char *const good[] = {
        "http://127.0.0.1",
        "https://pay.example.com/v3/query",
        "http://10.0.0.1:8443/q?shop=1&x=%2F",
        "https://[::1]:9/q",
        "https://a-b.example/p;v=1/x~y@z!$'()*+,",
        "http://h:65535/",
    };
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(validate_http_url(good[i]), "\"%s\" was refused", good[i]);
}
END_TEST

START_TEST(validate_http_url_refuses_other_schemes_credentials_and_junk)
{
    static const char *const bad[] = {
        "",
        "ftp://h/",
        "HTTP://h/",
        "file:///etc/passwd",
        "http://",
        "https:///q",
        "http://user:pw@h/",
        "http://h:0/",
        "http://h:65536/",
        "http://h:123456/",
        "http://h:/",
        "http://h/a b",
        "http://h/a#frag",
        "http://h/%zz",
        "http://h/%4",
        "http://h/\r\nX: 1",
        "http://.h/",
        "http://-h/",
        "http://[]/",
        "http://[::1/",
        "http://h\x7f/",
        "//h/q",
        "http://h/caf\xc3\xa9",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!validate_http_url(bad[i]), "\"%s\" was accepted", bad[i]);
    ck_assert(!validate_http_url(NULL));
}
END_TEST

START_TEST(validate_bearer_token_takes_only_the_token_alphabet)
{
    ck_assert(validate_bearer_token("abc-._~+/XYZ019==", 64));
    ck_assert(validate_bearer_token("a", 1));
    ck_assert(!validate_bearer_token("ab", 1));
    ck_assert(!validate_bearer_token("", 64));
    ck_assert(!validate_bearer_token("=abc", 64));
    ck_assert(!validate_bearer_token("ab=c", 64));
    ck_assert(!validate_bearer_token("ab c", 64));
    ck_assert(!validate_bearer_token("abc\r\nX-Injected: 1", 64));
    ck_assert(!validate_bearer_token(NULL, 64));
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
    tcase_add_test(tc, validate_http_url_accepts_http_and_https_urls);
    tcase_add_test(tc, validate_http_url_refuses_other_schemes_credentials_and_junk);
    tcase_add_test(tc, validate_bearer_token_takes_only_the_token_alphabet);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(validate_suite, NULL, NULL);
