/* check_replays.c - the cache of replay answers: what it answers, for how
 * long, how much it keeps, and what it refuses to keep. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "order_state.h"
#include "replays.h"
#include "../check_main.h"

#define NOW 1000000LL /* a monotonic instant, in ms */

static struct replay record(const char *order_no, int status)
{
    struct replay r = { .amount_cents = 89900, .outcome = PAYMENT_PAID, .order_status = status };

    snprintf(r.order_no, sizeof(r.order_no), "%s", order_no);
    return r;
}

START_TEST(replays_answers_a_terminal_order_with_its_record)
{
    struct replays *c = replays_create(64, 60, 0);
    struct replay in = record("ORD-1", ORDER_FINISHED), out;

    ck_assert_ptr_nonnull(c);
    ck_assert(!replays_get(c, "PAY-1", true, NOW, &out));
    replays_put(c, "PAY-1", &in, 5, NOW);
    memset(&out, 0, sizeof(out));
    ck_assert(replays_get(c, "PAY-1", true, NOW + 1, &out));
    ck_assert_str_eq("ORD-1", out.order_no);
    ck_assert_int_eq(89900, out.amount_cents);
    ck_assert_int_eq(PAYMENT_PAID, out.outcome);
    ck_assert_int_eq(ORDER_FINISHED, out.order_status);
    ck_assert(!replays_get(c, "pay-1", true, NOW + 1, &out)); /* byte for byte */
    ck_assert(!replays_get(c, "PAY-2", true, NOW + 1, &out));
    replays_destroy(c);
}
END_TEST

/* A status that can still move answers only a caller whose answer does not
 * carry it. */
START_TEST(replays_answers_a_moving_status_only_without_status)
{
    static const int moving[] = { ORDER_WAIT_PAY, ORDER_PAID, ORDER_SHIPPED, 0 };
    struct replays *c = replays_create(64, 60, 0);
    struct replay in, out;
    char key[16];

    ck_assert_ptr_nonnull(c);
    for (size_t i = 0; i < sizeof(moving) / sizeof(moving[0]); i++) {
        snprintf(key, sizeof(key), "PAY-%zu", i);
        in = record("ORD-1", moving[i]);
        replays_put(c, key, &in, 0, NOW);
        ck_assert_msg(!replays_get(c, key, true, NOW, &out), "status %d answered", moving[i]);
        ck_assert(replays_get(c, key, false, NOW, &out));
        ck_assert_int_eq(moving[i], out.order_status);
    }
    replays_destroy(c);
}
END_TEST

START_TEST(replays_forgets_at_its_ttl)
{
    struct replays *c = replays_create(64, 60, 0);
    struct replay in = record("ORD-1", ORDER_CANCELED), out;

    ck_assert_ptr_nonnull(c);
    replays_put(c, "PAY-1", &in, 0, NOW);
    ck_assert(replays_get(c, "PAY-1", true, NOW + 59999, &out));
    ck_assert(!replays_get(c, "PAY-1", true, NOW + 60000, &out));
    replays_destroy(c);
}
END_TEST

/* With retention.payment_days set, a record that retention could purge
 * before the entry runs out (an hour spared for clocks) is not kept. */
START_TEST(replays_keeps_nothing_retention_could_purge)
{
    struct replays *c = replays_create(64, 60, 35);
    struct replay in = record("ORD-1", ORDER_FINISHED), out;
    int64_t limit = 35LL * 86400 - 60 - 3600;

    ck_assert_ptr_nonnull(c);
    replays_put(c, "PAY-OLD", &in, limit + 1, NOW);
    ck_assert(!replays_get(c, "PAY-OLD", true, NOW, &out));
    replays_put(c, "PAY-YOUNG", &in, limit, NOW);
    ck_assert(replays_get(c, "PAY-YOUNG", true, NOW, &out));
    replays_put(c, "PAY-CLOCK", &in, -1, NOW); /* a clock gone backwards */
    ck_assert(!replays_get(c, "PAY-CLOCK", true, NOW, &out));
    replays_destroy(c);
}
END_TEST

START_TEST(replays_stays_bounded)
{
    struct replays *c = replays_create(64, 60, 0);
    struct replay in = record("ORD-1", ORDER_FINISHED), out;
    char key[32];
    int kept = 0;

    ck_assert_ptr_nonnull(c);
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        replays_put(c, key, &in, 0, NOW + i);
    }
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        kept += replays_get(c, key, true, NOW + 10000, &out);
    }
    ck_assert_int_le(kept, 64);
    ck_assert_int_gt(kept, 0);
    ck_assert(replays_get(c, "PAY-9999", true, NOW + 10000, &out)); /* the newest stays */
    replays_destroy(c);
}
END_TEST

/* A second put of the same pay_no replaces its entry, never a neighbour. */
START_TEST(replays_refills_in_place)
{
    struct replays *c = replays_create(4, 60, 0); /* one set of four */
    struct replay in = record("ORD-1", ORDER_FINISHED), out;
    char key[16];

    ck_assert_ptr_nonnull(c);
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        replays_put(c, key, &in, 0, NOW);
    }
    in = record("ORD-2", ORDER_CANCELED);
    replays_put(c, "PAY-0", &in, 0, NOW + 1);
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof(key), "PAY-%d", i);
        ck_assert_msg(replays_get(c, key, true, NOW + 2, &out), "%s lost", key);
    }
    ck_assert(replays_get(c, "PAY-0", true, NOW + 2, &out));
    ck_assert_str_eq("ORD-2", out.order_no);
    replays_destroy(c);
}
END_TEST

START_TEST(replays_off_and_null_safe)
{
    struct replay in = record("ORD-1", ORDER_FINISHED), out;
    char longest[ID_BUF + 1];

    ck_assert_ptr_null(replays_create(0, 60, 0));
    replays_put(NULL, "PAY-1", &in, 0, NOW);
    ck_assert(!replays_get(NULL, "PAY-1", true, NOW, &out));
    replays_destroy(NULL);

    struct replays *c = replays_create(8, 60, 0);
    ck_assert_ptr_nonnull(c);
    memset(longest, 'P', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0'; /* one more than an id may be */
    replays_put(c, longest, &in, 0, NOW);
    ck_assert(!replays_get(c, longest, true, NOW, &out));
    replays_destroy(c);
}
END_TEST

struct filler {
    struct replays *c;
    int base;
};

static void *fill(void *arg)
{
    struct filler *f = arg;
    struct replay in = record("ORD-1", ORDER_FINISHED), out;
    char key[32];

    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "T%d-%d", f->base, i);
        replays_put(f->c, key, &in, 0, NOW);
        if (replays_get(f->c, key, true, NOW, &out) && strcmp(out.order_no, "ORD-1") != 0)
            return (void *)1;
    }
    return NULL;
}

START_TEST(replays_concurrent_puts_keep_whole_entries)
{
    struct replays *c = replays_create(1 << 16, 60, 0);
    struct filler f[4];
    pthread_t t[4];
    struct replay out;
    char key[32];
    int kept = 0;
    void *bad;

    ck_assert_ptr_nonnull(c);
    for (int i = 0; i < 4; i++) {
        f[i] = (struct filler){ c, i };
        ck_assert_int_eq(0, pthread_create(&t[i], NULL, fill, &f[i]));
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(0, pthread_join(t[i], &bad));
        ck_assert_ptr_null(bad);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5000; j++) {
            snprintf(key, sizeof(key), "T%d-%d", i, j);
            kept += replays_get(c, key, true, NOW, &out);
        }
    ck_assert_int_gt(kept, 4 * 5000 * 9 / 10); /* room for all: few collisions evict */
    replays_destroy(c);
}
END_TEST

static Suite *replays_suite(void)
{
    Suite *s = suite_create("replays");
    TCase *tc = tcase_create("replays");

    tcase_add_test(tc, replays_answers_a_terminal_order_with_its_record);
    tcase_add_test(tc, replays_answers_a_moving_status_only_without_status);
    tcase_add_test(tc, replays_forgets_at_its_ttl);
    tcase_add_test(tc, replays_keeps_nothing_retention_could_purge);
    tcase_add_test(tc, replays_stays_bounded);
    tcase_add_test(tc, replays_refills_in_place);
    tcase_add_test(tc, replays_off_and_null_safe);
    tcase_add_test(tc, replays_concurrent_puts_keep_whole_entries);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(replays_suite, NULL, NULL);
