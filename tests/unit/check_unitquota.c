/* check_unitquota.c - the units each client address reserved within a
 * window, on a simulated clock: the caps of one sku and of all, a
 * reservation that counts one window and no longer, one given back,
 * addresses apart, and a full table that forgets the least recently
 * used. */
#include <check.h>
#include <stdio.h>

#include "unitquota.h"
#include "../check_main.h"

#define WINDOW_MS 800000LL /* 8 slots of 100 s */

static struct netaddr client(const char *text)
{
    struct netaddr a;

    ck_assert_int_eq(0, netaddr_parse(text, &a));
    return a;
}

START_TEST(caps_of_one_sku_and_of_all)
{
    struct unitquota *q = unitquota_create(WINDOW_MS);
    struct netaddr a = client("192.0.2.1");
    struct unitquota_hold h;

    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 10, 20, 25, 1000, &h));
    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 10, 20, 25, 1000, &h));
    ck_assert_int_eq(UNITQUOTA_SKU, unitquota_take(q, &a, "SHOE", 1, 20, 25, 1000, &h));
    ck_assert_int_eq(0, h.epoch); /* nothing held */
    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SOCK", 5, 20, 25, 1000, &h));
    ck_assert_int_eq(UNITQUOTA_TOTAL, unitquota_take(q, &a, "HAT", 1, 20, 25, 1000, &h));
    /* Another address is not counted with it; 0 turns a cap off. */
    a = client("192.0.2.2");
    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 20, 20, 25, 1000, &h));
    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "HAT", 1000, 0, 0, 1000, &h));
    unitquota_destroy(q);
}
END_TEST

START_TEST(a_reservation_counts_for_a_window_and_no_longer)
{
    struct unitquota *q = unitquota_create(WINDOW_MS);
    struct netaddr a = client("2001:db8::1");
    struct unitquota_hold h;
    long long t0 = 5000, t;

    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 20, 20, 0, t0, &h));
    /* Refused at every moment of the window after it. */
    for (t = t0; t < t0 + WINDOW_MS; t += 7000)
        ck_assert_int_eq(UNITQUOTA_SKU, unitquota_take(q, &a, "SHOE", 1, 20, 0, t, &h));
    /* Forgotten at the latest 9/8 of a window later. */
    ck_assert_int_eq(UNITQUOTA_OK,
                     unitquota_take(q, &a, "SHOE", 20, 20, 0, t0 + WINDOW_MS * 9 / 8 + 1, &h));
    unitquota_destroy(q);
}
END_TEST

START_TEST(a_reservation_given_back_is_no_longer_counted)
{
    struct unitquota *q = unitquota_create(WINDOW_MS);
    struct netaddr a = client("198.51.100.7");
    struct unitquota_hold h, none;

    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 15, 20, 20, 1000, &h));
    ck_assert_int_eq(UNITQUOTA_SKU, unitquota_take(q, &a, "SHOE", 10, 20, 20, 2000, &none));
    unitquota_give_back(q, &h);
    ck_assert_int_eq(0, h.epoch);
    unitquota_give_back(q, &h); /* twice: nothing more */
    ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 20, 20, 20, 3000, &h));
    unitquota_destroy(q);
}
END_TEST

/* More addresses than the table holds: memory stays fixed, the oldest are
 * forgotten (and said to be), the newest still counted. */
START_TEST(a_full_table_forgets_the_least_recently_used)
{
    struct unitquota *q = unitquota_create(WINDOW_MS);
    struct unitquota_hold h;
    struct netaddr a;
    char text[32];
    long long evicted = 0;
    int n = UNITQUOTA_SLOTS * 2;

    for (int i = 0; i < n; i++) {
        snprintf(text, sizeof text, "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        a = client(text);
        ck_assert_int_eq(UNITQUOTA_OK, unitquota_take(q, &a, "SHOE", 5, 5, 0, 1000 + i, &h));
        evicted += h.evicted;
    }
    ck_assert_int_ge(evicted, n - UNITQUOTA_SLOTS);
    ck_assert_int_eq(UNITQUOTA_SKU, unitquota_take(q, &a, "SHOE", 1, 5, 0, 1000 + n, &h));
    unitquota_destroy(q);
}
END_TEST

static Suite *unitquota_suite(void)
{
    Suite *s = suite_create("unitquota");
    TCase *tc = tcase_create("units");

    tcase_add_test(tc, caps_of_one_sku_and_of_all);
    tcase_add_test(tc, a_reservation_counts_for_a_window_and_no_longer);
    tcase_add_test(tc, a_reservation_given_back_is_no_longer_counted);
    tcase_add_test(tc, a_full_table_forgets_the_least_recently_used);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(unitquota_suite, NULL, NULL);
