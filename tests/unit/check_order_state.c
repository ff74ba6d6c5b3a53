/* check_order_state.c - unit tests for order_state.c: the whole transition
 * matrix, pair by pair, against the contract's table, plus names. */
#include <check.h>
#include <stdbool.h>

#include "order_state.h"
#include "../check_main.h"

/* Every code the matrix walks: the five statuses and unknown neighbours. */
static const int codes[] = { -1, 0, 1, 2, 3, 4, 5, 8, 9, 10 };
#define NCODES (sizeof(codes) / sizeof(codes[0]))

/* The contract, written out independently of order_state.c's table. */
static bool contract_allows(int from, int to)
{
    return (from == 1 && to == 2) || (from == 1 && to == 9) || (from == 2 && to == 3) ||
           (from == 2 && to == 9) || (from == 3 && to == 4);
}

START_TEST(order_state_allows_each_contract_transition)
{
    ck_assert(order_state_allowed(ORDER_WAIT_PAY, ORDER_PAID));
    ck_assert(order_state_allowed(ORDER_WAIT_PAY, ORDER_CANCELED));
    ck_assert(order_state_allowed(ORDER_PAID, ORDER_SHIPPED));
    ck_assert(order_state_allowed(ORDER_PAID, ORDER_CANCELED));
    ck_assert(order_state_allowed(ORDER_SHIPPED, ORDER_FINISHED));
}
END_TEST

START_TEST(order_state_matrix_matches_contract_pair_by_pair)
{
    size_t i, j;

    for (i = 0; i < NCODES; i++) {
        for (j = 0; j < NCODES; j++) {
            ck_assert_msg(contract_allows(codes[i], codes[j]) ==
                              order_state_allowed(codes[i], codes[j]),
                          "%d -> %d disagrees with the contract", codes[i], codes[j]);
        }
    }
}
END_TEST

START_TEST(order_state_refuses_staying_in_place)
{
    ck_assert(!order_state_allowed(ORDER_WAIT_PAY, ORDER_WAIT_PAY));
    ck_assert(!order_state_allowed(ORDER_PAID, ORDER_PAID));
    ck_assert(!order_state_allowed(ORDER_SHIPPED, ORDER_SHIPPED));
    ck_assert(!order_state_allowed(ORDER_FINISHED, ORDER_FINISHED));
    ck_assert(!order_state_allowed(ORDER_CANCELED, ORDER_CANCELED));
}
END_TEST

START_TEST(order_state_refuses_leaving_final_states)
{
    size_t j;

    for (j = 0; j < NCODES; j++) {
        ck_assert(!order_state_allowed(ORDER_FINISHED, codes[j]));
        ck_assert(!order_state_allowed(ORDER_CANCELED, codes[j]));
    }
}
END_TEST

START_TEST(order_state_refuses_skipping_and_going_back)
{
    ck_assert(!order_state_allowed(ORDER_WAIT_PAY, ORDER_SHIPPED));
    ck_assert(!order_state_allowed(ORDER_WAIT_PAY, ORDER_FINISHED));
    ck_assert(!order_state_allowed(ORDER_PAID, ORDER_FINISHED));
    ck_assert(!order_state_allowed(ORDER_SHIPPED, ORDER_CANCELED));
    ck_assert(!order_state_allowed(ORDER_PAID, ORDER_WAIT_PAY));
    ck_assert(!order_state_allowed(ORDER_SHIPPED, ORDER_PAID));
    ck_assert(!order_state_allowed(ORDER_FINISHED, ORDER_SHIPPED));
    ck_assert(!order_state_allowed(ORDER_CANCELED, ORDER_WAIT_PAY));
}
END_TEST

START_TEST(order_state_refuses_unknown_codes)
{
    ck_assert(!order_state_allowed(0, ORDER_PAID));
    ck_assert(!order_state_allowed(ORDER_WAIT_PAY, 0));
    ck_assert(!order_state_allowed(ORDER_WAIT_PAY, 5));
    ck_assert(!order_state_allowed(5, ORDER_CANCELED));
    ck_assert(!order_state_allowed(ORDER_PAID, 10));
    ck_assert(!order_state_allowed(10, ORDER_FINISHED));
}
END_TEST

START_TEST(order_state_valid_knows_exactly_five_codes)
{
    size_t i;

    for (i = 0; i < NCODES; i++) {
        bool expected =
            codes[i] == 1 || codes[i] == 2 || codes[i] == 3 || codes[i] == 4 || codes[i] == 9;
        ck_assert_msg(expected == order_state_valid(codes[i]), "order_state_valid(%d)", codes[i]);
    }
}
END_TEST

START_TEST(order_state_final_is_finished_and_canceled)
{
    size_t i;

    for (i = 0; i < NCODES; i++) {
        bool expected = codes[i] == 4 || codes[i] == 9;
        ck_assert_msg(expected == order_state_final(codes[i]), "order_state_final(%d)", codes[i]);
    }
}
END_TEST

/* Terminal: no allowed move out, checked against the table pair by pair,
 * so it is FINISHED and CANCELED today and follows the table tomorrow. */
START_TEST(order_state_terminal_has_no_move_out)
{
    size_t i, j;

    for (i = 0; i < NCODES; i++) {
        bool can_move = false;

        for (j = 0; j < NCODES; j++)
            can_move = can_move || order_state_allowed(codes[i], codes[j]);
        ck_assert_msg(order_state_terminal(codes[i]) == (order_state_valid(codes[i]) && !can_move),
                      "order_state_terminal(%d)", codes[i]);
    }
    ck_assert(order_state_terminal(ORDER_FINISHED));
    ck_assert(order_state_terminal(ORDER_CANCELED));
    ck_assert(!order_state_terminal(ORDER_PAID));
    ck_assert(!order_state_terminal(ORDER_SHIPPED));
    ck_assert(!order_state_terminal(0)); /* no order: not a status at all */
}
END_TEST

START_TEST(order_state_name_spells_contract_names)
{
    ck_assert_str_eq("WAIT_PAY", order_state_name(1));
    ck_assert_str_eq("PAID", order_state_name(2));
    ck_assert_str_eq("SHIPPED", order_state_name(3));
    ck_assert_str_eq("FINISHED", order_state_name(4));
    ck_assert_str_eq("CANCELED", order_state_name(9));
}
END_TEST

START_TEST(order_state_name_of_unknown_code_is_unknown)
{
    ck_assert_str_eq("UNKNOWN", order_state_name(0));
    ck_assert_str_eq("UNKNOWN", order_state_name(5));
    ck_assert_str_eq("UNKNOWN", order_state_name(10));
    ck_assert_str_eq("UNKNOWN", order_state_name(-1));
}
END_TEST

START_TEST(order_state_from_name_inverts_name)
{
    ck_assert_int_eq(1, order_state_from_name("WAIT_PAY"));
    ck_assert_int_eq(2, order_state_from_name("PAID"));
    ck_assert_int_eq(3, order_state_from_name("SHIPPED"));
    ck_assert_int_eq(4, order_state_from_name("FINISHED"));
    ck_assert_int_eq(9, order_state_from_name("CANCELED"));
}
END_TEST

START_TEST(order_state_from_name_rejects_unknown_names)
{
    ck_assert_int_eq(-1, order_state_from_name("paid"));
    ck_assert_int_eq(-1, order_state_from_name("CANCELLED"));
    ck_assert_int_eq(-1, order_state_from_name("UNKNOWN"));
    ck_assert_int_eq(-1, order_state_from_name(""));
    ck_assert_int_eq(-1, order_state_from_name(NULL));
}
END_TEST

START_TEST(payment_status_names_the_three_payment_statuses)
{
    ck_assert_str_eq("PAID", payment_status_name(PAYMENT_PAID));
    ck_assert_str_eq("REFUND_REQUIRED", payment_status_name(PAYMENT_REFUND_REQUIRED));
    ck_assert_str_eq("REFUND_SETTLED", payment_status_name(PAYMENT_REFUND_SETTLED));
    ck_assert_str_eq("UNKNOWN", payment_status_name(0));
    ck_assert_str_eq("UNKNOWN", payment_status_name(4));
    ck_assert(payment_status_valid(PAYMENT_PAID));
    ck_assert(payment_status_valid(PAYMENT_REFUND_REQUIRED));
    ck_assert(payment_status_valid(PAYMENT_REFUND_SETTLED));
    ck_assert(!payment_status_valid(0));
    ck_assert(!payment_status_valid(4));
}
END_TEST

static Suite *order_state_suite(void)
{
    Suite *s = suite_create("order_state");
    TCase *tc;

    tc = tcase_create("allowed");
    tcase_add_test(tc, order_state_allows_each_contract_transition);
    tcase_add_test(tc, order_state_matrix_matches_contract_pair_by_pair);
    suite_add_tcase(s, tc);

    tc = tcase_create("refused");
    tcase_add_test(tc, order_state_refuses_staying_in_place);
    tcase_add_test(tc, order_state_refuses_leaving_final_states);
    tcase_add_test(tc, order_state_refuses_skipping_and_going_back);
    tcase_add_test(tc, order_state_refuses_unknown_codes);
    suite_add_tcase(s, tc);

    tc = tcase_create("classify");
    tcase_add_test(tc, order_state_valid_knows_exactly_five_codes);
    tcase_add_test(tc, order_state_final_is_finished_and_canceled);
    tcase_add_test(tc, order_state_terminal_has_no_move_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("names");
    tcase_add_test(tc, order_state_name_spells_contract_names);
    tcase_add_test(tc, order_state_name_of_unknown_code_is_unknown);
    tcase_add_test(tc, order_state_from_name_inverts_name);
    tcase_add_test(tc, order_state_from_name_rejects_unknown_names);
    tcase_add_test(tc, payment_status_names_the_three_payment_statuses);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(order_state_suite, NULL, NULL);
