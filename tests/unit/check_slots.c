/* check_slots.c - the slot pool behind the MySQL and Redis connection pools. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "slots.h"
#include "../check_main.h"

#define SLOTS_N 3
#define THREADS 8
#define ROUNDS_PER_THREAD 2000

START_TEST(slots_lend_each_slot_once_until_put_back)
{
    struct slots *s = slots_create(SLOTS_N);
    int seen[SLOTS_N] = { 0 };
    bool waited = true;

    ck_assert_ptr_nonnull(s);
    for (int k = 0; k < SLOTS_N; k++) {
        int i = slots_take(s, 10, &waited);
        ck_assert_int_ge(i, 0);
        ck_assert_int_lt(i, SLOTS_N);
        ck_assert_int_eq(0, seen[i]);
        ck_assert(!waited);
        seen[i] = 1;
    }
    for (int k = 0; k < SLOTS_N; k++)
        slots_put(s, k);
    slots_destroy(s);
}
END_TEST

START_TEST(slots_take_times_out_when_all_are_lent)
{
    struct slots *s = slots_create(1);
    bool waited = false;
    int first = slots_take(s, 10, NULL);

    ck_assert_int_eq(0, first);
    ck_assert_int_eq(-1, slots_take(s, 20, &waited));
    ck_assert(waited);
    slots_put(s, first);
    ck_assert_int_eq(0, slots_take(s, 20, &waited));
    ck_assert(!waited);
    slots_put(s, 0);
    slots_destroy(s);
}
END_TEST

struct shared {
    struct slots *s;
    atomic_int in_use[SLOTS_N];
    atomic_int overlaps;
    atomic_int timeouts;
};

static void *borrower(void *arg)
{
    struct shared *sh = arg;

    for (int r = 0; r < ROUNDS_PER_THREAD; r++) {
        int i = slots_take(sh->s, 5000, NULL);
        if (i < 0) {
            atomic_fetch_add(&sh->timeouts, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->in_use[i], 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        atomic_fetch_sub(&sh->in_use[i], 1);
        slots_put(sh->s, i);
    }
    return NULL;
}

START_TEST(slots_never_lend_one_slot_to_two_threads)
{
    struct shared sh = { .s = slots_create(SLOTS_N) };
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, borrower, &sh));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(0, atomic_load(&sh.overlaps));
    ck_assert_int_eq(0, atomic_load(&sh.timeouts));
    int held[SLOTS_N];
    for (int k = 0; k < SLOTS_N; k++) { /* all back: take them all again */
        held[k] = slots_take(sh.s, 10, NULL);
        ck_assert_int_ge(held[k], 0);
    }
    ck_assert_int_eq(-1, slots_take(sh.s, 1, NULL));
    for (int k = 0; k < SLOTS_N; k++)
        slots_put(sh.s, held[k]);
    slots_destroy(sh.s);
}
END_TEST

static Suite *slots_suite(void)
{
    Suite *s = suite_create("slots");
    TCase *tc = tcase_create("lending");

    tcase_add_test(tc, slots_lend_each_slot_once_until_put_back);
    tcase_add_test(tc, slots_take_times_out_when_all_are_lent);
    suite_add_tcase(s, tc);
    tc = tcase_create("concurrency");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, slots_never_lend_one_slot_to_two_threads);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(slots_suite, NULL, NULL);
