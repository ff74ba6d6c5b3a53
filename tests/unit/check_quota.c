/* check_quota.c - the per-client token buckets of the anonymous write
 * routes, on a simulated clock: the burst, the rate, Retry-After, clients
 * and classes kept apart, and a table that stays bounded. */
#include <check.h>
#include <stdio.h>

#include "quota.h"
#include "../check_main.h"

static struct netaddr client(const char *text)
{
    struct netaddr a;

    ck_assert_int_eq(0, netaddr_parse(text, &a));
    return a;
}

START_TEST(burst_then_rate)
{
    const struct quota_limit lim[QUOTA_CLASSES] = { { 10, 5 }, { 0, 1 } };
    struct quota *q = quota_create(lim);
    struct netaddr a = client("192.0.2.1");
    long long t, ok = 0;

    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(0, quota_take(q, QUOTA_TOKEN, &a, 1000));
    ck_assert_int_eq(1, quota_take(q, QUOTA_TOKEN, &a, 1000)); /* Retry-After: 1 */
    ck_assert_int_eq(1, quota_take(q, QUOTA_TOKEN, &a, 1099));
    ck_assert_int_eq(0, quota_take(q, QUOTA_TOKEN, &a, 1100)); /* 100 ms = one request */
    /* Asked every millisecond for 10 s: the burst refilled meanwhile,
     * then 10 a second get through. */
    for (t = 2000; t < 12000; t++)
        ok += quota_take(q, QUOTA_TOKEN, &a, t) == 0;
    ck_assert_int_ge(ok, 5 + 99);
    ck_assert_int_le(ok, 5 + 100);
    /* The other class has no quota. */
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(0, quota_take(q, QUOTA_ORDER, &a, 12000));
    quota_destroy(q);
}
END_TEST

START_TEST(retry_after_covers_a_slow_rate)
{
    const struct quota_limit lim[QUOTA_CLASSES] = { { 1, 1 }, { 1, 1 } };
    struct quota *q = quota_create(lim);
    struct netaddr a = client("192.0.2.1");

    ck_assert_int_eq(0, quota_take(q, QUOTA_ORDER, &a, 0));
    ck_assert_int_eq(1, quota_take(q, QUOTA_ORDER, &a, 1));
    ck_assert_int_eq(0, quota_take(q, QUOTA_ORDER, &a, 1000));
    quota_destroy(q);
}
END_TEST

START_TEST(clients_and_classes_have_their_own_buckets)
{
    const struct quota_limit lim[QUOTA_CLASSES] = { { 1, 2 }, { 1, 2 } };
    struct quota *q = quota_create(lim);
    struct netaddr a = client("192.0.2.1"), b = client("192.0.2.2");

    ck_assert_int_eq(0, quota_take(q, QUOTA_TOKEN, &a, 0));
    ck_assert_int_eq(0, quota_take(q, QUOTA_TOKEN, &a, 0));
    ck_assert_int_ne(0, quota_take(q, QUOTA_TOKEN, &a, 0));
    ck_assert_int_eq(0, quota_take(q, QUOTA_TOKEN, &b, 0));
    ck_assert_int_eq(0, quota_take(q, QUOTA_ORDER, &a, 0));
    quota_destroy(q);
}
END_TEST

START_TEST(many_clients_stay_within_the_table)
{
    const struct quota_limit lim[QUOTA_CLASSES] = { { 1, 1 }, { 1, 1 } };
    struct quota *q = quota_create(lim);
    struct netaddr a = client("10.0.0.0");
    int refused = 0;

    /* Four times as many clients as buckets: each is new, or forgotten
     * and back with a full bucket, never refused for another's use. */
    for (unsigned i = 0; i < 4u * QUOTA_SLOTS; i++) {
        a.b[1] = (unsigned char)(i >> 16);
        a.b[2] = (unsigned char)(i >> 8);
        a.b[3] = (unsigned char)i;
        refused += quota_take(q, QUOTA_TOKEN, &a, i) != 0;
    }
    ck_assert_int_eq(0, refused);
    quota_destroy(q);
}
END_TEST

static Suite *quota_suite(void)
{
    Suite *s = suite_create("quota");
    TCase *tc = tcase_create("quota");

    tcase_add_test(tc, burst_then_rate);
    tcase_add_test(tc, retry_after_covers_a_slow_rate);
    tcase_add_test(tc, clients_and_classes_have_their_own_buckets);
    tcase_add_test(tc, many_clients_stay_within_the_table);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(quota_suite, NULL, NULL);
