/* check_seen.c - the bounded set of committed pay_nos (a routing hint). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>

#include "seen.h"
#include "../check_main.h"

#define SEEN_THREADS 4
#define KEYS_PER_THREAD 5000

START_TEST(seen_has_only_what_was_added)
{
    struct seen *s = seen_create(1024);

    ck_assert_ptr_nonnull(s);
    ck_assert(!seen_has(s, "PAY-1"));
    seen_add(s, "PAY-1");
    ck_assert(seen_has(s, "PAY-1"));
    ck_assert(!seen_has(s, "PAY-2"));
    ck_assert(!seen_has(s, "pay-1")); /* byte for byte, like the column */
    ck_assert(!seen_has(s, ""));
    seen_destroy(s);
}
END_TEST

START_TEST(seen_stays_bounded_and_forgets_old_keys)
{
    struct seen *s = seen_create(64);
    char key[32];
    int kept = 0;

    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        seen_add(s, key);
    }
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        kept += seen_has(s, key);
    }
    ck_assert_int_le(kept, 64); /* one key per slot at most */
    ck_assert_int_gt(kept, 0);
    ck_assert(seen_has(s, "PAY-9999")); /* the last one added stays */
    seen_destroy(s);
}
END_TEST

START_TEST(seen_is_null_safe)
{
    seen_add(NULL, "PAY-1");
    ck_assert(!seen_has(NULL, "PAY-1"));
    seen_destroy(NULL);
}
END_TEST

struct adder {
    struct seen *s;
    int base;
};

static void *add_keys(void *arg)
{
    struct adder *a = arg;
    char key[32];

    for (int i = 0; i < KEYS_PER_THREAD; i++) {
        snprintf(key, sizeof(key), "T%d-%d", a->base, i);
        seen_add(a->s, key);
    }
    return NULL;
}

START_TEST(seen_keeps_every_key_added_concurrently_when_room)
{
    struct seen *s = seen_create(1 << 20);
    struct adder a[SEEN_THREADS];
    pthread_t t[SEEN_THREADS];
    char key[32];
    int kept = 0;

    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < SEEN_THREADS; i++) {
        a[i] = (struct adder){ s, i };
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, add_keys, &a[i]));
    }
    for (int i = 0; i < SEEN_THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SEEN_THREADS; i++)
        for (int k = 0; k < KEYS_PER_THREAD; k++) {
            snprintf(key, sizeof(key), "T%d-%d", i, k);
            kept += seen_has(s, key);
        }
    /* 20 000 keys in 1M slots: about 200 share a slot with a later key
     * (n^2 / 2m); twice that would mean lost stores or a poor hash. */
    ck_assert_int_ge(kept, SEEN_THREADS * KEYS_PER_THREAD - 400);
    seen_destroy(s);
}
END_TEST

static Suite *seen_suite(void)
{
    Suite *s = suite_create("seen");
    TCase *tc = tcase_create("seen");

    tcase_add_test(tc, seen_has_only_what_was_added);
    tcase_add_test(tc, seen_stays_bounded_and_forgets_old_keys);
    tcase_add_test(tc, seen_is_null_safe);
    tcase_add_test(tc, seen_keeps_every_key_added_concurrently_when_room);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(seen_suite, NULL, NULL);
