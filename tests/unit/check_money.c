/* check_money.c - unit tests for money.c: every form the contract accepts
 * and every malformed one it refuses, formatting, and money_mul bounds. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "../check_main.h"

#define CENTS_SENTINEL INT64_C(424242) /* proves failures reset *cents */
#define CENTS_MAX INT64_C(999999999999)

/* Parses s and returns the cents, failing the test if s is refused. */
static int64_t parse_ok(const char *s)
{
    int64_t cents = CENTS_SENTINEL;

    ck_assert_msg(money_parse(s, &cents) == MONEY_OK, "\"%s\" was refused", s);
    return cents;
}

/* Fails the test unless s is refused and *cents is reset to 0. */
static void assert_refused_n(const char *s, size_t len)
{
    int64_t cents = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_INVALID, money_parse_n(s, len, &cents));
    ck_assert_int_eq(0, cents);
}

static void assert_refused(const char *s)
{
    int64_t cents = CENTS_SENTINEL;

    ck_assert_msg(money_parse(s, &cents) == MONEY_INVALID, "\"%s\" was accepted", s);
    ck_assert_int_eq(0, cents);
    assert_refused_n(s, strlen(s));
}

/* --- accepted forms --- */

START_TEST(money_parse_accepts_two_decimals)
{
    ck_assert_int_eq(89900, parse_ok("899.00"));
    ck_assert_int_eq(1234, parse_ok("12.34"));
}
END_TEST

START_TEST(money_parse_reads_one_decimal_as_tenths)
{
    ck_assert_int_eq(150, parse_ok("1.5"));
    ck_assert_int_eq(1230, parse_ok("12.3"));
}
END_TEST

START_TEST(money_parse_accepts_integer_without_fraction)
{
    ck_assert_int_eq(89900, parse_ok("899"));
    ck_assert_int_eq(100, parse_ok("1"));
}
END_TEST

START_TEST(money_parse_accepts_zero)
{
    ck_assert_int_eq(0, parse_ok("0"));
    ck_assert_int_eq(0, parse_ok("0.00"));
    ck_assert_int_eq(0, parse_ok("0.0"));
}
END_TEST

START_TEST(money_parse_accepts_leading_zeros)
{
    ck_assert_int_eq(50, parse_ok("0.50"));
    ck_assert_int_eq(700, parse_ok("007.00"));
    ck_assert_int_eq(1, parse_ok("0000000000.01"));
}
END_TEST

START_TEST(money_parse_accepts_one_cent)
{
    ck_assert_int_eq(1, parse_ok("0.01"));
}
END_TEST

START_TEST(money_parse_accepts_decimal_12_2_maximum)
{
    ck_assert_int_eq(CENTS_MAX, parse_ok("9999999999.99"));
    ck_assert_int_eq(INT64_C(999999999900), parse_ok("9999999999"));
}
END_TEST

/* --- refused forms --- */

START_TEST(money_parse_rejects_minus_sign)
{
    assert_refused("-1.00");
    assert_refused("-0");
}
END_TEST

START_TEST(money_parse_rejects_leading_plus)
{
    assert_refused("+1.00");
}
END_TEST

START_TEST(money_parse_rejects_exponent)
{
    assert_refused("1e3");
    assert_refused("1E3");
    assert_refused("1.0e2");
    assert_refused("1e-2");
}
END_TEST

START_TEST(money_parse_rejects_three_decimals)
{
    assert_refused("1.000");
    assert_refused("899.001");
}
END_TEST

START_TEST(money_parse_rejects_eleven_integer_digits)
{
    assert_refused("12345678901");
    assert_refused("10000000000.00");
    assert_refused("00000000000");
}
END_TEST

START_TEST(money_parse_rejects_empty_string)
{
    assert_refused("");
}
END_TEST

START_TEST(money_parse_rejects_leading_dot)
{
    assert_refused(".5");
    assert_refused(".");
}
END_TEST

START_TEST(money_parse_rejects_trailing_dot)
{
    assert_refused("5.");
}
END_TEST

START_TEST(money_parse_rejects_spaces)
{
    assert_refused(" 1.00");
    assert_refused("1.00 ");
    assert_refused("1 00");
    assert_refused("1. 5");
    assert_refused("1.00\n");
    assert_refused("\t1.00");
}
END_TEST

START_TEST(money_parse_rejects_comma_separator)
{
    assert_refused("1,00");
    assert_refused("1,000.00");
}
END_TEST

START_TEST(money_parse_rejects_hex)
{
    assert_refused("0x10");
    assert_refused("0X1A");
}
END_TEST

START_TEST(money_parse_rejects_unicode_digits)
{
    assert_refused("\xef\xbc\x91\xef\xbc\x92"); /* fullwidth "12" */
    assert_refused("\xd9\xa3");                 /* arabic-indic 3 */
    assert_refused("1.\xd9\xa3");
}
END_TEST

START_TEST(money_parse_rejects_several_dots)
{
    assert_refused("1..0");
    assert_refused("1.2.3");
}
END_TEST

START_TEST(money_parse_rejects_words)
{
    assert_refused("NaN");
    assert_refused("inf");
    assert_refused("abc");
}
END_TEST

START_TEST(money_parse_n_rejects_nul_inside_length)
{
    assert_refused_n("1\0.00", 5);
    assert_refused_n("1.0\0", 4);
    assert_refused_n("\0"
                     "1",
                     2);
}
END_TEST

START_TEST(money_parse_rejects_null_arguments)
{
    int64_t cents = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_INVALID, money_parse(NULL, &cents));
    ck_assert_int_eq(0, cents);
    ck_assert_int_eq(MONEY_INVALID, money_parse("1.00", NULL));
    cents = CENTS_SENTINEL;
    ck_assert_int_eq(MONEY_INVALID, money_parse_n(NULL, 4, &cents));
    ck_assert_int_eq(0, cents);
}
END_TEST

/* --- money_parse_n length handling --- */

START_TEST(money_parse_n_reads_only_len_bytes)
{
    int64_t cents = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_OK, money_parse_n("899.00xyz", 6, &cents));
    ck_assert_int_eq(89900, cents);
    ck_assert_int_eq(MONEY_OK, money_parse_n("899.00", 3, &cents));
    ck_assert_int_eq(89900, cents);
}
END_TEST

START_TEST(money_parse_n_rejects_zero_length)
{
    assert_refused_n("1.00", 0);
}
END_TEST

START_TEST(money_parse_n_rejects_cut_after_dot)
{
    assert_refused_n("1.50", 2);
}
END_TEST

/* --- money_format --- */

START_TEST(money_format_writes_two_decimals)
{
    char buf[MONEY_STR_MAX];

    ck_assert_str_eq("0.00", money_format(0, buf, sizeof(buf)));
    ck_assert_str_eq("0.01", money_format(1, buf, sizeof(buf)));
    ck_assert_str_eq("1.50", money_format(150, buf, sizeof(buf)));
    ck_assert_str_eq("899.00", money_format(89900, buf, sizeof(buf)));
    ck_assert_str_eq("9999999999.99", money_format(CENTS_MAX, buf, sizeof(buf)));
}
END_TEST

START_TEST(money_format_returns_buf)
{
    char buf[MONEY_STR_MAX];

    ck_assert_ptr_eq(buf, money_format(100, buf, sizeof(buf)));
}
END_TEST

START_TEST(money_format_round_trips_through_parse)
{
    static const int64_t values[] = { 0, 1, 9, 10, 99, 100, 101, 150, 89900, 123456789, CENTS_MAX };
    char buf[MONEY_STR_MAX];
    size_t i;

    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        ck_assert_int_eq(values[i], parse_ok(money_format(values[i], buf, sizeof(buf))));
}
END_TEST

START_TEST(money_format_canonicalises_parsed_text)
{
    char buf[MONEY_STR_MAX];

    ck_assert_str_eq("1.50", money_format(parse_ok("1.5"), buf, sizeof(buf)));
    ck_assert_str_eq("7.00", money_format(parse_ok("007"), buf, sizeof(buf)));
    ck_assert_str_eq("0.00", money_format(parse_ok("0.0"), buf, sizeof(buf)));
}
END_TEST

START_TEST(money_format_truncates_into_small_buffer)
{
    char buf[5];

    memset(buf, 'x', sizeof(buf));
    ck_assert_str_eq("899.", money_format(89900, buf, sizeof(buf)));
}
END_TEST

START_TEST(money_format_leaves_a_one_byte_buffer_empty)
{
    char buf[1] = { 'x' };

    ck_assert_str_eq("", money_format(89900, buf, sizeof(buf)));
    ck_assert_ptr_null(money_format(89900, NULL, 16));
}
END_TEST

START_TEST(money_format_signs_negative_values)
{
    char buf[32];

    ck_assert_str_eq("-1.50", money_format(-150, buf, sizeof(buf)));
    ck_assert_str_eq("-0.01", money_format(-1, buf, sizeof(buf)));
    ck_assert_str_eq("-92233720368547758.08", money_format(INT64_MIN, buf, sizeof(buf)));
}
END_TEST

/* --- money_mul --- */

START_TEST(money_mul_multiplies_price_by_quantity)
{
    int64_t out = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_OK, money_mul(89900, 1, &out));
    ck_assert_int_eq(89900, out);
    ck_assert_int_eq(MONEY_OK, money_mul(89900, 1000, &out));
    ck_assert_int_eq(89900000, out);
    ck_assert_int_eq(MONEY_OK, money_mul(0, 1000, &out));
    ck_assert_int_eq(0, out);
    ck_assert_int_eq(MONEY_OK, money_mul(89900, 0, &out));
    ck_assert_int_eq(0, out);
}
END_TEST

START_TEST(money_mul_accepts_result_at_maximum)
{
    int64_t out = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_OK, money_mul(CENTS_MAX, 1, &out));
    ck_assert_int_eq(CENTS_MAX, out);
    ck_assert_int_eq(MONEY_OK, money_mul(INT64_C(333333333333), 3, &out));
    ck_assert_int_eq(CENTS_MAX, out);
}
END_TEST

START_TEST(money_mul_rejects_result_above_maximum)
{
    int64_t out = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_INVALID, money_mul(CENTS_MAX, 2, &out));
    ck_assert_int_eq(0, out);
    out = CENTS_SENTINEL;
    ck_assert_int_eq(MONEY_INVALID, money_mul(INT64_C(500000000000), 2, &out));
    ck_assert_int_eq(0, out);
    ck_assert_int_eq(MONEY_INVALID, money_mul(INT64_C(1000000000000), 1, &out));
    ck_assert_int_eq(MONEY_INVALID, money_mul(INT64_C(1000000000000), 0, &out));
}
END_TEST

START_TEST(money_mul_rejects_int64_overflow)
{
    int64_t out = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_INVALID, money_mul(INT64_MAX, INT64_MAX, &out));
    ck_assert_int_eq(0, out);
    ck_assert_int_eq(MONEY_INVALID, money_mul(2, INT64_MAX, &out));
    ck_assert_int_eq(MONEY_INVALID, money_mul(CENTS_MAX, INT64_C(9223372), &out));
}
END_TEST

START_TEST(money_mul_rejects_negative_inputs)
{
    int64_t out = CENTS_SENTINEL;

    ck_assert_int_eq(MONEY_INVALID, money_mul(-1, 1, &out));
    ck_assert_int_eq(0, out);
    ck_assert_int_eq(MONEY_INVALID, money_mul(100, -1, &out));
    ck_assert_int_eq(MONEY_INVALID, money_mul(-100, -1, &out));
    ck_assert_int_eq(MONEY_INVALID, money_mul(INT64_MIN, -1, &out));
    ck_assert_int_eq(MONEY_INVALID, money_mul(100, 1, NULL));
}
END_TEST

static Suite *money_suite(void)
{
    Suite *s = suite_create("money");
    TCase *tc;

    tc = tcase_create("parse_accepts");
    tcase_add_test(tc, money_parse_accepts_two_decimals);
    tcase_add_test(tc, money_parse_reads_one_decimal_as_tenths);
    tcase_add_test(tc, money_parse_accepts_integer_without_fraction);
    tcase_add_test(tc, money_parse_accepts_zero);
    tcase_add_test(tc, money_parse_accepts_leading_zeros);
    tcase_add_test(tc, money_parse_accepts_one_cent);
    tcase_add_test(tc, money_parse_accepts_decimal_12_2_maximum);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse_rejects");
    tcase_add_test(tc, money_parse_rejects_minus_sign);
    tcase_add_test(tc, money_parse_rejects_leading_plus);
    tcase_add_test(tc, money_parse_rejects_exponent);
    tcase_add_test(tc, money_parse_rejects_three_decimals);
    tcase_add_test(tc, money_parse_rejects_eleven_integer_digits);
    tcase_add_test(tc, money_parse_rejects_empty_string);
    tcase_add_test(tc, money_parse_rejects_leading_dot);
    tcase_add_test(tc, money_parse_rejects_trailing_dot);
    tcase_add_test(tc, money_parse_rejects_spaces);
    tcase_add_test(tc, money_parse_rejects_comma_separator);
    tcase_add_test(tc, money_parse_rejects_hex);
    tcase_add_test(tc, money_parse_rejects_unicode_digits);
    tcase_add_test(tc, money_parse_rejects_several_dots);
    tcase_add_test(tc, money_parse_rejects_words);
    tcase_add_test(tc, money_parse_n_rejects_nul_inside_length);
    tcase_add_test(tc, money_parse_rejects_null_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse_n_length");
    tcase_add_test(tc, money_parse_n_reads_only_len_bytes);
    tcase_add_test(tc, money_parse_n_rejects_zero_length);
    tcase_add_test(tc, money_parse_n_rejects_cut_after_dot);
    suite_add_tcase(s, tc);

    tc = tcase_create("format");
    tcase_add_test(tc, money_format_writes_two_decimals);
    tcase_add_test(tc, money_format_returns_buf);
    tcase_add_test(tc, money_format_round_trips_through_parse);
    tcase_add_test(tc, money_format_canonicalises_parsed_text);
    tcase_add_test(tc, money_format_truncates_into_small_buffer);
    tcase_add_test(tc, money_format_leaves_a_one_byte_buffer_empty);
    tcase_add_test(tc, money_format_signs_negative_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("mul");
    tcase_add_test(tc, money_mul_multiplies_price_by_quantity);
    tcase_add_test(tc, money_mul_accepts_result_at_maximum);
    tcase_add_test(tc, money_mul_rejects_result_above_maximum);
    tcase_add_test(tc, money_mul_rejects_int64_overflow);
    tcase_add_test(tc, money_mul_rejects_negative_inputs);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(money_suite, NULL, NULL);
