/* check_monotime.c - unit tests for monotime.c: the clock never goes
 * back, and a deadline is a normalised timespec at least ms ahead. */
#include <check.h>
#include <time.h>

#include "monotime.h"
#include "../check_main.h"

START_TEST(the_clock_never_goes_back)
{
    long long ms = monotime_ms(), us = monotime_us();

    for (int i = 0; i < 1000; i++) {
        long long ms2 = monotime_ms(), us2 = monotime_us();

        ck_assert_int_ge(ms2, ms);
        ck_assert_int_ge(us2, us);
        ms = ms2;
        us = us2;
    }
}
END_TEST

START_TEST(a_deadline_is_normalised_and_at_least_ms_ahead)
{
    static const long long waits[] = { 0, 1, 999, 1000, 1001, 1999, 60000 };

    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        long long before = monotime_ms();
        struct timespec d = monotime_after_ms(waits[i]);
        long long at = (long long)d.tv_sec * 1000 + d.tv_nsec / 1000000;

        ck_assert_int_ge(d.tv_nsec, 0);
        ck_assert_int_lt(d.tv_nsec, 1000000000L);
        ck_assert_int_ge(at, before + waits[i]);
    }
}
END_TEST

static Suite *monotime_suite(void)
{
    Suite *s = suite_create("monotime");
    TCase *tc = tcase_create("clock");

    tcase_add_test(tc, the_clock_never_goes_back);
    tcase_add_test(tc, a_deadline_is_normalised_and_at_least_ms_ahead);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(monotime_suite, NULL, NULL);
