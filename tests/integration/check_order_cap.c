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
#define CAP 2
#define STORM_USERS 8    /* rounds, one user each */
#define STORM_CREATES 12 /* creates of that user at once */

static void cap_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_ORDERS_MAX_OPEN_PER_USER=2",
                                       "PAYCALLBACK_QUOTA_ORDER_BURST=1000",
                                       "PAYCALLBACK_QUOTA_TOKEN_BURST=1000", NULL };

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

/* Three skus: each has its own stock lock, so the creates really run at
 * once rather than one sku's in turn. */
static const char *const skus[] = { "SHOE-42", "SOCK-01", "HAT-7" };

struct cap_storm {
    const char *user_id;
    char tokens[STORM_CREATES][H_TOKEN_BUF];
    int status[STORM_CREATES];
    char code[STORM_CREATES][32];
};

static int storm_create(int i, void *arg)
{
    struct cap_storm *a = arg;
    char request_id[32], *code;
    struct h_resp r;

    snprintf(request_id, sizeof request_id, "storm-%d", i);
    h_order_create(h_port(), a->tokens[i], a->user_id, request_id, skus[i % 3], 1, &r);
    a->status[i] = r.status;
    code = r.body != NULL ? h_json_get_str(r.body, "code") : NULL;
    snprintf(a->code[i], sizeof a->code[i], "%s", code != NULL ? code : "");
    free(code);
    h_resp_free(&r);
    return 0;
}

static long long all_stock(void)
{
    return h_db_scalar_ll("SELECT SUM(num) FROM stock");
}

/* Creates of one user sent all at once, each with its own request_id:
 * exactly the cap of them make orders, whatever their interleaving. */
START_TEST(creates_of_one_user_at_once_never_pass_the_cap)
{
    long long before, made = 0;
    int round, i, created, refused;

    h_db_exec("UPDATE stock SET num = 1000"); /* no create fails for stock */
    before = all_stock();

    for (round = 0; round < STORM_USERS; round++) {
        struct cap_storm a;
        struct h_storm_stats st;
        char user[32];

        snprintf(user, sizeof user, "u-storm-%d", round);
        memset(&a, 0, sizeof a);
        a.user_id = user;
        for (i = 0; i < STORM_CREATES; i++)
            h_token_apply(h_port(), a.tokens[i]);
        ck_assert_int_eq(0, h_storm(STORM_CREATES, STORM_CREATES, storm_create, &a, &st));
        created = refused = 0;
        for (i = 0; i < STORM_CREATES; i++) {
            created += a.status[i] == 201;
            refused += a.status[i] == 409 && strcmp(a.code[i], "TOO_MANY_OPEN_ORDERS") == 0;
            ck_assert_msg(a.status[i] == 201 || a.status[i] == 409,
                          "round %d: create %d answered %d %s", round, i, a.status[i], a.code[i]);
        }
        ck_assert_msg(created == CAP && refused == STORM_CREATES - CAP,
                      "round %d: %d created, %d refused, cap %d", round, created, refused, CAP);
        ck_assert_int_eq(CAP,
                         h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE user_id = '%s'", user));
        made += created;
    }
    printf("cap %d: %d users x %d creates at once, %lld orders made\n", CAP, STORM_USERS,
           STORM_CREATES, made);
    ck_assert_int_eq(before - made, all_stock());
}
END_TEST

static Suite *cap_suite(void)
{
    Suite *s = suite_create("order_cap");
    TCase *tc = h_tcase_with("cap of 2", TC_TIMEOUT_S, cap_up, h_fixture_server_down);

    tcase_add_test(tc, a_user_at_the_cap_is_refused_until_an_order_is_paid_or_cancelled);
    tcase_add_test(tc, creates_of_one_user_at_once_never_pass_the_cap);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(cap_suite, NULL, NULL);
