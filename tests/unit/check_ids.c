/* check_ids.c - unit tests for ids.c: tokens and lock values are 32
 * lowercase hex digits from the kernel and do not repeat; order numbers
 * are "O" + UTC yyyymmddHHMMSS + 16 random hex digits. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "validate.h"
#include "../check_main.h"

#define DRAWS 10000

static int cmp_token(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

START_TEST(token_is_32_lowercase_hex_digits)
{
    char t[IDS_TOKEN_BUF];

    ck_assert_int_eq(0, ids_token(t));
    ck_assert_uint_eq(32, strlen(t));
    ck_assert(validate_token(t));
}
END_TEST

START_TEST(tokens_do_not_repeat)
{
    static char t[DRAWS][IDS_TOKEN_BUF];

    for (int i = 0; i < DRAWS; i++)
        ck_assert_int_eq(0, ids_token(t[i]));
    qsort(t, DRAWS, IDS_TOKEN_BUF, cmp_token);
    for (int i = 1; i < DRAWS; i++)
        ck_assert_str_ne(t[i - 1], t[i]);
}
END_TEST

START_TEST(random_hex_refuses_sizes_out_of_range)
{
    char buf[200] = "x";

    ck_assert_int_eq(-1, ids_random_hex(buf, 0));
    ck_assert_str_eq("", buf);
    ck_assert_int_eq(-1, ids_random_hex(buf, 65));
    ck_assert_int_eq(0, ids_random_hex(buf, 64));
    ck_assert_uint_eq(128, strlen(buf));
}
END_TEST

START_TEST(order_no_is_utc_time_then_random_hex)
{
    char o[IDS_ORDER_NO_BUF];

    ck_assert_int_eq(0, ids_order_no_at(o, (time_t)1714566645)); /* 2024-05-01 12:30:45 UTC */
    ck_assert_uint_eq(IDS_ORDER_NO_LEN, strlen(o));
    ck_assert_int_eq(0, strncmp(o, "O20240501123045", 15));
    for (size_t i = 15; i < IDS_ORDER_NO_LEN; i++)
        ck_assert_msg((o[i] >= '0' && o[i] <= '9') || (o[i] >= 'a' && o[i] <= 'f'),
                      "not lowercase hex at %zu: %s", i, o);
    ck_assert(validate_id(o));
}
END_TEST

START_TEST(order_nos_of_one_second_do_not_repeat)
{
    static char o[DRAWS][IDS_ORDER_NO_BUF];

    for (int i = 0; i < DRAWS; i++)
        ck_assert_int_eq(0, ids_order_no_at(o[i], (time_t)1714566645));
    qsort(o, DRAWS, IDS_ORDER_NO_BUF, cmp_token);
    for (int i = 1; i < DRAWS; i++)
        ck_assert_str_ne(o[i - 1], o[i]);
}
END_TEST

START_TEST(order_no_now_is_a_valid_identifier)
{
    char o[IDS_ORDER_NO_BUF];

    ck_assert_int_eq(0, ids_order_no(o));
    ck_assert_uint_eq(IDS_ORDER_NO_LEN, strlen(o));
    ck_assert_int_eq('O', o[0]);
    ck_assert(validate_id(o));
}
END_TEST

static Suite *ids_suite(void)
{
    Suite *s = suite_create("ids");
    TCase *tc;

    tc = tcase_create("tokens");
    tcase_add_test(tc, token_is_32_lowercase_hex_digits);
    tcase_add_test(tc, tokens_do_not_repeat);
    tcase_add_test(tc, random_hex_refuses_sizes_out_of_range);
    suite_add_tcase(s, tc);

    tc = tcase_create("order numbers");
    tcase_add_test(tc, order_no_is_utc_time_then_random_hex);
    tcase_add_test(tc, order_nos_of_one_second_do_not_repeat);
    tcase_add_test(tc, order_no_now_is_a_valid_identifier);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(ids_suite, NULL, NULL);
