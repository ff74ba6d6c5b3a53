/* check_delivery.c - the pure parts of outbox delivery: the retry backoff
 * and the wire format of an event. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "delivery.h"
#include "outbox.h"
#include "../check_main.h"

START_TEST(backoff_doubles_from_the_base)
{
    /* rnd = UINT32_MAX % (d - d/2 + 1) varies; bound it instead: [d/2, d] */
    int64_t want[] = { 1000, 2000, 4000, 8000, 16000 };

    for (int a = 1; a <= 5; a++) {
        for (uint32_t rnd = 0; rnd < 5000; rnd += 7) {
            int64_t d = delivery_backoff_ms(a, 1000, 3600000, rnd);
            ck_assert_int_ge(d, want[a - 1] / 2);
            ck_assert_int_le(d, want[a - 1]);
        }
    }
}
END_TEST

START_TEST(backoff_is_capped_at_the_max)
{
    for (int a = 10; a < 200; a += 13) {
        int64_t d = delivery_backoff_ms(a, 1000, 60000, 0xffffffffu);
        ck_assert_int_ge(d, 30000);
        ck_assert_int_le(d, 60000);
    }
}
END_TEST

START_TEST(backoff_jitter_spans_the_upper_half)
{
    int64_t lo = INT64_MAX, hi = 0;

    for (uint32_t rnd = 0; rnd < 20000; rnd++) {
        int64_t d = delivery_backoff_ms(3, 100, 100000, rnd);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    ck_assert_int_eq(200, lo);
    ck_assert_int_eq(400, hi);
}
END_TEST

START_TEST(backoff_handles_the_first_attempt_and_tiny_bases)
{
    ck_assert_int_eq(1, delivery_backoff_ms(0, 1, 10, 12345));
    ck_assert_int_le(delivery_backoff_ms(1, 10, 10, 3), 10);
    ck_assert_int_ge(delivery_backoff_ms(1, 10, 10, 3), 5);
}
END_TEST

static struct outbox_event sample(const char *payload)
{
    struct outbox_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.id = 42;
    strcpy(ev.event_type, "order.paid");
    strcpy(ev.order_no, "O20261202163110abcdef");
    strcpy(ev.created_at, "2026-12-02T16:31:10.123000Z");
    strcpy(ev.payload, payload);
    return ev;
}

START_TEST(event_body_carries_the_id_type_and_payload)
{
    struct outbox_event ev = sample("{\"order_no\":\"O1\",\"amount\":\"899.00\"}");
    size_t len = 0;
    char *body = delivery_event_body(&ev, &len);
    cJSON *o, *data;
    char id[160];

    ck_assert_ptr_nonnull(body);
    ck_assert_uint_eq(strlen(body), len);
    o = cJSON_Parse(body);
    ck_assert_ptr_nonnull(o);
    delivery_event_id(&ev, id, sizeof(id));
    ck_assert_str_eq("O20261202163110abcdef:order.paid", id);
    ck_assert_str_eq(id, cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring);
    ck_assert_str_eq("order.paid", cJSON_GetObjectItemCaseSensitive(o, "type")->valuestring);
    ck_assert_str_eq("2026-12-02T16:31:10.123000Z",
                     cJSON_GetObjectItemCaseSensitive(o, "created_at")->valuestring);
    data = cJSON_GetObjectItemCaseSensitive(o, "data");
    ck_assert(cJSON_IsObject(data));
    ck_assert_str_eq("899.00", cJSON_GetObjectItemCaseSensitive(data, "amount")->valuestring);
    cJSON_Delete(o);
    free(body);
}
END_TEST

START_TEST(event_body_refuses_a_payload_that_is_not_an_object)
{
    const char *bad[] = { "", "[1]", "{\"a\":", "\"x\"" };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct outbox_event ev = sample(bad[i]);
        size_t len = 7;
        ck_assert_ptr_null(delivery_event_body(&ev, &len));
        ck_assert_uint_eq(0, len);
    }
}
END_TEST

START_TEST(outbox_state_names_round_trip)
{
    for (int s = OUTBOX_PENDING; s <= OUTBOX_DEAD; s++)
        ck_assert_int_eq(s, outbox_state_from_name(outbox_state_name(s)));
    ck_assert_str_eq("UNKNOWN", outbox_state_name(7));
    ck_assert_int_eq(-1, outbox_state_from_name("dead"));
}
END_TEST

static Suite *delivery_suite(void)
{
    Suite *s = suite_create("delivery");
    TCase *tc = tcase_create("backoff");

    tcase_add_test(tc, backoff_doubles_from_the_base);
    tcase_add_test(tc, backoff_is_capped_at_the_max);
    tcase_add_test(tc, backoff_jitter_spans_the_upper_half);
    tcase_add_test(tc, backoff_handles_the_first_attempt_and_tiny_bases);
    suite_add_tcase(s, tc);
    tc = tcase_create("wire");
    tcase_add_test(tc, event_body_carries_the_id_type_and_payload);
    tcase_add_test(tc, event_body_refuses_a_payload_that_is_not_an_object);
    tcase_add_test(tc, outbox_state_names_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(delivery_suite, NULL, NULL);
