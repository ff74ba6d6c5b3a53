/* check_order_cap.c - orders.max_open_per_user against the real binary
 * and MariaDB: a user_id holding the cap of WAIT_PAY orders gets 409
 * TOO_MANY_OPEN_ORDERS and nothing is written, a repeat of a request
 * that made an order still gets it, other users are not affected, and a
 * paid or cancelled order frees a place. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60

static void cap_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_ORDERS_MAX_OPEN_PER_USER=2", NULL };

    h_fixture_server_up_env(env);
}

/* One order of SHOE-42 through the API; the order_no (or "") in no. */
static int create(const char *user_id, const char *request_id, char no[64], struct h_resp *r)
{
    char token[H_TOKEN_BUF], *n;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, user_id, request_id, "SHOE-42", 1, r);
    n = h_json_get_str(r->body, "order_no");
    snprintf(no, 64, "%s", n != NULL ? n : "");
    free(n);
    return r->status;
}

static long long stock(void)
{
    return h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'");
}

START_TEST(a_user_at_the_cap_is_refused_until_an_order_is_paid_or_cancelled)
{
    char o1[64], o2[64], o3[64], again[64];
    long long refused0 = h_metric("paycallback_open_order_cap_refusals_total");
    struct h_resp r;

    ck_assert_int_eq(201, create("u-cap", "c1", o1, &r));
    h_resp_free(&r);
    ck_assert_int_eq(201, create("u-cap", "c2", o2, &r));
    h_resp_free(&r);
    long long full = stock();

    create("u-cap", "c3", o3, &r);
    h_assert_error(&r, 409, "TOO_MANY_OPEN_ORDERS");
    h_resp_free(&r);
    ck_assert_int_eq(full, stock());
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE user_id = 'u-cap'"));
    ck_assert_int_eq(refused0 + 1, h_metric("paycallback_open_order_cap_refusals_total"));

    /* A repeat of a request that made an order is answered with it. */
    ck_assert_int_eq(200, create("u-cap", "c1", again, &r));
    h_assert_bool(&r, "duplicate", 1);
    ck_assert_str_eq(o1, again);
    h_resp_free(&r);

    /* Another shopper is not affected. */
    ck_assert_int_eq(201, create("u-other", "c1", again, &r));
    h_resp_free(&r);

    /* Paid: one place frees up. */
    h_callback(h_port(), o1, "PAY-CAP-1", "899.00", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(201, create("u-cap", "c3", o3, &r));
    h_resp_free(&r);
    create("u-cap", "c4", again, &r);
    h_assert_error(&r, 409, "TOO_MANY_OPEN_ORDERS");
    h_resp_free(&r);

    /* Cancelled: another one. */
    {
        char path[128];

        snprintf(path, sizeof path, "/order/%s/cancel", o2);
        h_http(h_port(), "POST", path, NULL, "", 0, &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
    }
    ck_assert_int_eq(201, create("u-cap", "c4", again, &r));
    h_resp_free(&r);
}
END_TEST

static Suite *cap_suite(void)
{
    Suite *s = suite_create("order_cap");
    TCase *tc = h_tcase_with("cap of 2", TC_TIMEOUT_S, cap_up, h_fixture_server_down);

    tcase_add_test(tc, a_user_at_the_cap_is_refused_until_an_order_is_paid_or_cancelled);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(cap_suite, NULL, NULL);
