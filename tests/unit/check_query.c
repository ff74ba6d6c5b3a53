/* check_query.c - unit tests for the strict parser of a query endpoint's
 * answer (query_parse_answer): what each status needs, and every way an
 * answer can break the contract; and the shares a round takes of each
 * shard's stale orders (query_share). No servers. */
#include <check.h>
#include <string.h>

#include "query.h"
#include "../check_main.h"

static struct query_answer ans;
static char why[160];

static enum query_status parse(const char *body, const char *order_no)
{
    return query_parse_answer(body, strlen(body), order_no, &ans, why, sizeof(why));
}

static void assert_malformed(const char *body, const char *reason)
{
    ck_assert_msg(parse(body, "O1") == QUERY_MALFORMED, "accepted: %s", body);
    ck_assert_int_eq(QUERY_MALFORMED, ans.status);
    ck_assert_msg(strstr(why, reason) != NULL, "reason \"%s\" lacks \"%s\"", why, reason);
    ck_assert_str_eq("", ans.pay_no);
    ck_assert_int_eq(0, ans.amount_cents);
}

START_TEST(query_answer_paid_gives_payment_amount_and_currency)
{
    ck_assert_int_eq(QUERY_PAID, parse("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":"
                                       "\"2026120222001\",\"amount\":\"899.00\",\"currency\":"
                                       "\"CNY\",\"extra\":{\"x\":1}}",
                                       "O1"));
    ck_assert_int_eq(QUERY_PAID, ans.status);
    ck_assert_str_eq("2026120222001", ans.pay_no);
    ck_assert_int_eq(89900, ans.amount_cents);
    ck_assert_str_eq("CNY", ans.currency);
    ck_assert_int_eq(QUERY_PAID, parse("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":"
                                       "\"pi_1\",\"amount\":\"0.5\",\"currency\":\"usd\"}",
                                       "O1"));
    ck_assert_int_eq(50, ans.amount_cents);
    ck_assert_str_eq("USD", ans.currency);
}
END_TEST

START_TEST(query_answer_reads_the_unpaid_statuses)
{
    ck_assert_int_eq(QUERY_NOTPAY, parse("{\"order_no\":\"O1\",\"status\":\"NOTPAY\"}", "O1"));
    ck_assert_int_eq(QUERY_CLOSED, parse(" {\"status\":\"CLOSED\",\"order_no\":\"O1\"}\n", "O1"));
    ck_assert_int_eq(QUERY_NOT_FOUND, parse("{\"order_no\":\"O1\",\"status\":\"NOT_FOUND\","
                                            "\"amount\":12}",
                                            "O1"));
    ck_assert_str_eq("", ans.pay_no);
}
END_TEST

START_TEST(query_answer_refuses_what_is_not_one_object)
{
    assert_malformed("", "not one JSON object");
    assert_malformed("[]", "not one JSON object");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"NOTPAY\"} {}", "not one JSON object");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"NOTPAY\"", "not one JSON object");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"NOT\\u0000PAY\"}", "not one JSON object");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"NOTPAY\",\"status\":\"PAID\"}",
                     "appears twice");
}
END_TEST

START_TEST(query_answer_must_be_about_the_order_asked)
{
    assert_malformed("{\"status\":\"NOTPAY\"}", "order_no is not the order asked about");
    assert_malformed("{\"order_no\":\"O2\",\"status\":\"PAID\",\"pay_no\":\"P\",\"amount\":"
                     "\"1.00\",\"currency\":\"CNY\"}",
                     "order_no is not the order asked about");
    assert_malformed("{\"order_no\":\"o1\",\"status\":\"NOTPAY\"}", "order_no is not");
    assert_malformed("{\"order_no\":1,\"status\":\"NOTPAY\"}", "order_no is not");
}
END_TEST

START_TEST(query_answer_refuses_unknown_statuses)
{
    assert_malformed("{\"order_no\":\"O1\"}", "status must be");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"SUCCESS\"}", "status must be");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"paid\"}", "status must be");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"MALFORMED\"}", "status must be");
    assert_malformed("{\"order_no\":\"O1\",\"status\":2}", "status must be");
}
END_TEST

START_TEST(query_answer_paid_needs_a_valid_payment)
{
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"amount\":\"1.00\",\"currency\":"
                     "\"CNY\"}",
                     "pay_no");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P 1\",\"amount\":"
                     "\"1.00\",\"currency\":\"CNY\"}",
                     "pay_no");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "899.00,\"currency\":\"CNY\"}",
                     "amount");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"1e3\",\"currency\":\"CNY\"}",
                     "amount");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"8.999\",\"currency\":\"CNY\"}",
                     "amount");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"0.00\",\"currency\":\"CNY\"}",
                     "amount");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"-1.00\",\"currency\":\"CNY\"}",
                     "amount");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"1.00\"}",
                     "currency");
    assert_malformed("{\"order_no\":\"O1\",\"status\":\"PAID\",\"pay_no\":\"P1\",\"amount\":"
                     "\"1.00\",\"currency\":\"XXQ\"}",
                     "currency");
}
END_TEST

START_TEST(query_status_names_are_stable)
{
    ck_assert_str_eq("PAID", query_status_name(QUERY_PAID));
    ck_assert_str_eq("NOT_FOUND", query_status_name(QUERY_NOT_FOUND));
    ck_assert_str_eq("TIMEOUT", query_status_name(QUERY_TIMEOUT));
    ck_assert_str_eq("UNKNOWN", query_status_name((enum query_status)42));
}
END_TEST

START_TEST(query_share_splits_what_is_left_evenly_rounding_up)
{
    ck_assert_uint_eq(20, query_share(20, 1)); /* one shard: all of it */
    ck_assert_uint_eq(10, query_share(20, 2));
    ck_assert_uint_eq(11, query_share(21, 2)); /* the first shard visited gets more */
    ck_assert_uint_eq(10, query_share(10, 1)); /* the rest, to the last */
    ck_assert_uint_eq(1, query_share(1, 3));   /* never 0 while orders are left */
    ck_assert_uint_eq(0, query_share(0, 2));
    ck_assert_uint_eq(0, query_share(5, 0));
}
END_TEST

START_TEST(query_share_hands_a_short_shard_s_rest_to_the_next)
{
    size_t limit = 20, taken = 0, have[] = { 3, 100, 100 }, n = 3, k;

    /* What list_orders does: shard 0 has only 3 stale orders, so shards 1
     * and 2 share the other 17 (9 and 8): the page is filled. */
    for (k = 0; k < n; k++) {
        size_t share = query_share(limit - taken, n - k);

        taken += have[k] < share ? have[k] : share;
    }
    ck_assert_uint_eq(limit, taken);
    ck_assert_uint_eq(9, query_share(17, 2));
}
END_TEST

static Suite *query_suite(void)
{
    Suite *s = suite_create("query");
    TCase *tc = tcase_create("answer");

    tcase_add_test(tc, query_answer_paid_gives_payment_amount_and_currency);
    tcase_add_test(tc, query_answer_reads_the_unpaid_statuses);
    tcase_add_test(tc, query_answer_refuses_what_is_not_one_object);
    tcase_add_test(tc, query_answer_must_be_about_the_order_asked);
    tcase_add_test(tc, query_answer_refuses_unknown_statuses);
    tcase_add_test(tc, query_answer_paid_needs_a_valid_payment);
    tcase_add_test(tc, query_status_names_are_stable);
    tcase_add_test(tc, query_share_splits_what_is_left_evenly_rounding_up);
    tcase_add_test(tc, query_share_hands_a_short_shard_s_rest_to_the_next);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(query_suite, NULL, NULL);
