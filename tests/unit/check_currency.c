/* check_currency.c - unit tests for currency.c: codes, exponents, and the
 * exact minor-unit <-> cents conversions (fen, yen, fils) with their
 * refusals for inexact and out-of-range amounts. */
#include <check.h>
#include <stdint.h>

#include "currency.h"
#include "../check_main.h"

#define CENTS_MAX INT64_C(999999999999)

START_TEST(currency_normalize_uppercases_known_codes)
{
    char out[CURRENCY_BUF] = "x";

    ck_assert_int_eq(CURRENCY_OK, currency_normalize("usd", out));
    ck_assert_str_eq("USD", out);
    ck_assert_int_eq(CURRENCY_OK, currency_normalize("CNY", out));
    ck_assert_str_eq("CNY", out);
    ck_assert_int_eq(CURRENCY_OK, currency_normalize("jPy", out));
    ck_assert_str_eq("JPY", out);
}
END_TEST

START_TEST(currency_normalize_refuses_unknown_codes)
{
    char out[CURRENCY_BUF] = "x";

    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_normalize("XYZ", out));
    ck_assert_str_eq("", out);
    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_normalize("US", out));
    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_normalize("USDX", out));
    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_normalize("", out));
    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_normalize(NULL, out));
}
END_TEST

START_TEST(currency_exponent_follows_iso4217)
{
    ck_assert_int_eq(2, currency_exponent("CNY"));
    ck_assert_int_eq(2, currency_exponent("usd"));
    ck_assert_int_eq(0, currency_exponent("JPY"));
    ck_assert_int_eq(0, currency_exponent("KRW"));
    ck_assert_int_eq(3, currency_exponent("KWD"));
    ck_assert_int_eq(3, currency_exponent("BHD"));
    ck_assert_int_eq(-1, currency_exponent("ABC"));
}
END_TEST

START_TEST(currency_minor_to_cents_maps_fen_one_to_one)
{
    int64_t cents = -1;

    ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents("CNY", 8888, &cents));
    ck_assert_int_eq(8888, cents);
    ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents("CNY", 1, &cents));
    ck_assert_int_eq(1, cents);
    ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents("CNY", CENTS_MAX, &cents));
    ck_assert_int_eq(CENTS_MAX, cents);
}
END_TEST

START_TEST(currency_minor_to_cents_scales_zero_and_three_decimal_currencies)
{
    int64_t cents = -1;

    ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents("JPY", 500, &cents));
    ck_assert_int_eq(50000, cents);
    ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents("KWD", 1230, &cents));
    ck_assert_int_eq(123, cents);
}
END_TEST

START_TEST(currency_minor_to_cents_refuses_inexact_and_out_of_range)
{
    int64_t cents = 7;

    ck_assert_int_eq(CURRENCY_INEXACT, currency_minor_to_cents("KWD", 1235, &cents));
    ck_assert_int_eq(0, cents);
    ck_assert_int_eq(CURRENCY_RANGE, currency_minor_to_cents("CNY", CENTS_MAX + 1, &cents));
    ck_assert_int_eq(CURRENCY_RANGE, currency_minor_to_cents("JPY", CENTS_MAX / 100 + 1, &cents));
    ck_assert_int_eq(CURRENCY_RANGE, currency_minor_to_cents("CNY", -1, &cents));
    ck_assert_int_eq(CURRENCY_RANGE, currency_minor_to_cents("JPY", INT64_MAX, &cents));
    ck_assert_int_eq(CURRENCY_UNKNOWN, currency_minor_to_cents("ABC", 1, &cents));
    ck_assert_int_eq(0, cents);
}
END_TEST

START_TEST(currency_cents_to_minor_is_the_exact_inverse)
{
    int64_t minor = -1, back = -1;
    const char *codes[] = { "CNY", "JPY", "KWD", "USD" };
    const int64_t amounts[] = { 0, 100, 8800, 123400, CENTS_MAX - 99 };
    size_t i, j;

    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        for (j = 0; j < sizeof(amounts) / sizeof(amounts[0]); j++) {
            ck_assert_int_eq(CURRENCY_OK, currency_cents_to_minor(codes[i], amounts[j], &minor));
            ck_assert_int_eq(CURRENCY_OK, currency_minor_to_cents(codes[i], minor, &back));
            ck_assert_int_eq(amounts[j], back);
        }
    }
    ck_assert_int_eq(CURRENCY_OK, currency_cents_to_minor("KWD", 123, &minor));
    ck_assert_int_eq(1230, minor);
}
END_TEST

START_TEST(currency_cents_to_minor_refuses_fractions_of_a_yen)
{
    int64_t minor = 7;

    ck_assert_int_eq(CURRENCY_INEXACT, currency_cents_to_minor("JPY", 150, &minor));
    ck_assert_int_eq(0, minor);
    ck_assert_int_eq(CURRENCY_RANGE, currency_cents_to_minor("CNY", -1, &minor));
    ck_assert_int_eq(CURRENCY_RANGE, currency_cents_to_minor("CNY", CENTS_MAX + 1, &minor));
}
END_TEST

static Suite *currency_suite(void)
{
    Suite *s = suite_create("currency");
    TCase *tc = tcase_create("codes");

    tcase_add_test(tc, currency_normalize_uppercases_known_codes);
    tcase_add_test(tc, currency_normalize_refuses_unknown_codes);
    tcase_add_test(tc, currency_exponent_follows_iso4217);
    suite_add_tcase(s, tc);
    tc = tcase_create("conversions");
    tcase_add_test(tc, currency_minor_to_cents_maps_fen_one_to_one);
    tcase_add_test(tc, currency_minor_to_cents_scales_zero_and_three_decimal_currencies);
    tcase_add_test(tc, currency_minor_to_cents_refuses_inexact_and_out_of_range);
    tcase_add_test(tc, currency_cents_to_minor_is_the_exact_inverse);
    tcase_add_test(tc, currency_cents_to_minor_refuses_fractions_of_a_yen);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(currency_suite, NULL, NULL);
