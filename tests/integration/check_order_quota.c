/* check_order_quota.c - the quotas of units on POST /order/create against
 * the real binary and MariaDB, with the shipped defaults unless a case
 * says otherwise: one anonymous client address cannot reserve more units
 * of a sku, or in all, than its quota, whatever user_id it names; a
 * quantity above orders.max_quantity_per_line is refused before the token
 * is spent; a user_id cannot hold more unpaid units than its quota, and a
 * paid order no longer counts. Every refusal is a JSON 4xx that writes
 * nothing. Each case sends from its own loopback address, so the
 * addresses' counts (kept in the server's memory) never meet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define DEFAULT_LINE_MAX 10       /* orders.max_quantity_per_line */
#define DEFAULT_CLIENT_SKU_MAX 20 /* orders.max_open_units_per_client_sku */

/* An anonymous POST /order/create from source address src with token
 * (none when NULL): the status into the return value, the error code (or
 * "") into code. */
static int anon_create(const char *src, const char *token, const char *user_id,
                       const char *request_id, const char *sku, int quantity, char code[40])
{
    char body[256], req[1024], reply[4096], *c, *json;
    int fd, eof = 0, status = 0, n;

    snprintf(body, sizeof body,
             "{\"user_id\":\"%s\",\"request_id\":\"%s\",\"sku\":\"%s\",\"quantity\":%d}", user_id,
             request_id, sku, quantity);
    n = snprintf(req, sizeof req,
                 "POST /order/create HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Content-Type: application/json\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
                 token ? "Idempotent-Token: " : "", token ? token : "", token ? "\r\n" : "",
                 strlen(body), body);
    fd = h_raw_connect(h_port(), src, 5000);
    ck_assert_msg(fd >= 0, "cannot connect from %s", src);
    ck_assert_int_eq(n, (int)send(fd, req, (size_t)n, MSG_NOSIGNAL));
    h_raw_read_all(fd, reply, sizeof reply, &eof);
    close(fd);
    ck_assert_msg(sscanf(reply, "HTTP/1.1 %d", &status) == 1, "no status line: %.80s", reply);
    json = strstr(reply, "\r\n\r\n");
    c = json != NULL ? h_json_get_str(json + 4, "code") : NULL;
    snprintf(code, 40, "%s", c != NULL ? c : "");
    free(c);
    return status;
}

/* anon_create with a fresh token. */
static int anon_order(const char *src, const char *user_id, const char *request_id, const char *sku,
                      int quantity, char code[40])
{
    char token[H_TOKEN_BUF];

    h_token_apply(h_port(), token);
    return anon_create(src, token, user_id, request_id, sku, quantity, code);
}

static long long stock(const char *sku)
{
    return h_db_scalar_ll("SELECT num FROM stock WHERE sku = '%s'", sku);
}

static long long orders(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM orders");
}

/* ---- the shipped defaults ------------------------------------------------ */

/* The attack of a single address: many user_ids, each order at the line's
 * maximum. It reserves its quota of the sku and not one unit more; an
 * order that made nothing (out of stock) used none of it; another
 * address is not affected. */
START_TEST(one_anonymous_client_cannot_reserve_more_than_its_unit_quota)
{
    const char *src = "127.0.0.11";
    long long refused0 =
        h_metric("paycallback_order_unit_quota_refusals_total{bound=\"client_sku\"}");
    char code[40], user[32], rq[32];
    int made = 0;

    /* Made nothing: gives its units back. */
    h_db_exec("UPDATE stock SET num = 5 WHERE sku = 'SHOE-42'");
    ck_assert_int_eq(409, anon_order(src, "u-none", "r-none", "SHOE-42", DEFAULT_LINE_MAX, code));
    ck_assert_str_eq("OUT_OF_STOCK", code);
    h_db_exec("UPDATE stock SET num = 100 WHERE sku = 'SHOE-42'");

    for (int i = 0; i < 10; i++) {
        snprintf(user, sizeof user, "u-hoard-%d", i);
        snprintf(rq, sizeof rq, "r-hoard-%d", i);
        int st = anon_order(src, user, rq, "SHOE-42", DEFAULT_LINE_MAX, code);

        if (st == 201) {
            made++;
            continue;
        }
        ck_assert_int_eq(409, st);
        ck_assert_str_eq("UNIT_QUOTA_EXCEEDED", code);
    }
    ck_assert_int_eq(DEFAULT_CLIENT_SKU_MAX / DEFAULT_LINE_MAX, made);
    ck_assert_int_eq(100 - DEFAULT_CLIENT_SKU_MAX, stock("SHOE-42"));
    ck_assert_int_eq(made, orders());
    ck_assert_int_eq(DEFAULT_CLIENT_SKU_MAX,
                     h_db_scalar_ll("SELECT SUM(quantity) FROM orders WHERE sku = 'SHOE-42'"));
    /* Even one unit more is refused. */
    ck_assert_int_eq(409, anon_order(src, "u-one", "r-one", "SHOE-42", 1, code));
    ck_assert_str_eq("UNIT_QUOTA_EXCEEDED", code);
    ck_assert_int_eq(refused0 + 10 - made + 1,
                     h_metric("paycallback_order_unit_quota_refusals_total{bound=\"client_sku\"}"));
    /* Another sku, and another address, still buy. */
    ck_assert_int_eq(201, anon_order(src, "u-sock", "r-sock", "SOCK-01", 1, code));
    ck_assert_int_eq(201, anon_order("127.0.0.12", "u-other", "r-other", "SHOE-42", 1, code));
    ck_assert_int_eq(100 - DEFAULT_CLIENT_SKU_MAX - 1, stock("SHOE-42"));
}
END_TEST

/* Above the line's maximum: 422 before the token is spent (the same token
 * then makes an order), from a shop backend too; nothing written. */
START_TEST(a_quantity_above_the_line_maximum_is_refused_and_spends_nothing)
{
    const char *src = "127.0.0.21";
    long long refused0 = h_metric("paycallback_order_quantity_limit_refusals_total");
    char token[H_TOKEN_BUF], code[40];
    struct h_resp r;

    h_token_apply(h_port(), token);
    ck_assert_int_eq(422,
                     anon_create(src, token, "u1", "r1", "SHOE-42", DEFAULT_LINE_MAX + 1, code));
    ck_assert_str_eq("QUANTITY_LIMIT", code);
    ck_assert_int_eq(0, orders());
    ck_assert_int_eq(100, stock("SHOE-42"));
    ck_assert_int_eq(201, anon_create(src, token, "u1", "r1", "SHOE-42", DEFAULT_LINE_MAX, code));

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u2", "r2", "SHOE-42", DEFAULT_LINE_MAX + 1, &r);
    h_assert_error(&r, 422, "QUANTITY_LIMIT");
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(100 - DEFAULT_LINE_MAX, stock("SHOE-42"));
    ck_assert_int_eq(refused0 + 2, h_metric("paycallback_order_quantity_limit_refusals_total"));
}
END_TEST

/* ---- lowered quotas -------------------------------------------------------- */

static void low_quotas_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT=15",
                                       "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_USER=12", NULL };

    h_fixture_server_up_env(env);
}

/* The quota of one address over every sku. */
START_TEST(one_anonymous_client_cannot_reserve_more_than_its_quota_in_all)
{
    const char *src = "127.0.0.31";
    char code[40];

    ck_assert_int_eq(201, anon_order(src, "ua", "r1", "SHOE-42", 10, code));
    ck_assert_int_eq(201, anon_order(src, "ub", "r2", "SOCK-01", 5, code));
    ck_assert_int_eq(409, anon_order(src, "uc", "r3", "HAT-7", 1, code));
    ck_assert_str_eq("UNIT_QUOTA_EXCEEDED", code);
    ck_assert_int_eq(10, stock("HAT-7"));
    ck_assert_int_eq(2, orders());
}
END_TEST

/* A shop backend's orders are not counted by its address, but its user's
 * unpaid units are: past 12, 409 and nothing written; once an order is
 * paid its units no longer count. */
START_TEST(a_user_cannot_hold_more_unpaid_units_than_its_quota)
{
    long long refused0 = h_metric("paycallback_order_unit_quota_refusals_total{bound=\"user\"}");
    char token[H_TOKEN_BUF], *no;
    struct h_resp r, p;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-units", "r1", "SHOE-42", 10, &r);
    h_assert_status(&r, 201);
    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-units", "r2", "SOCK-01", 2, &p);
    h_assert_status(&p, 201);
    h_resp_free(&p);
    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-units", "r3", "HAT-7", 1, &p);
    h_assert_error(&p, 409, "UNIT_QUOTA_EXCEEDED");
    h_resp_free(&p);
    ck_assert_int_eq(10, stock("HAT-7"));
    ck_assert_int_eq(2, orders());
    ck_assert_int_eq(refused0 + 1,
                     h_metric("paycallback_order_unit_quota_refusals_total{bound=\"user\"}"));

    no = h_json_get_str(r.body, "order_no");
    h_callback(h_port(), no, "PAY-UNITS-1", "8990.00", &p);
    h_assert_status(&p, 200);
    h_resp_free(&p);
    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-units", "r3", "HAT-7", 1, &p);
    h_assert_status(&p, 201);
    h_resp_free(&p);
    free(no);
    h_resp_free(&r);
}
END_TEST

/* The default of a user's units of one sku: 10. */
START_TEST(a_user_cannot_hold_more_unpaid_units_of_a_sku_than_its_quota)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-sku", "r1", "SOCK-01", 10, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u-sku", "r2", "SOCK-01", 1, &r);
    h_assert_error(&r, 409, "UNIT_QUOTA_EXCEEDED");
    h_resp_free(&r);
    ck_assert_int_eq(490, stock("SOCK-01"));
    ck_assert_int_eq(1, orders());
}
END_TEST

static Suite *order_quota_suite(void)
{
    Suite *s = suite_create("order_quota");
    TCase *tc = h_tcase("shipped quotas", TC_TIMEOUT_S);

    tcase_add_test(tc, one_anonymous_client_cannot_reserve_more_than_its_unit_quota);
    tcase_add_test(tc, a_quantity_above_the_line_maximum_is_refused_and_spends_nothing);
    tcase_add_test(tc, a_user_cannot_hold_more_unpaid_units_of_a_sku_than_its_quota);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("lowered quotas", TC_TIMEOUT_S, low_quotas_up, h_fixture_server_down);
    tcase_add_test(tc, one_anonymous_client_cannot_reserve_more_than_its_quota_in_all);
    tcase_add_test(tc, a_user_cannot_hold_more_unpaid_units_than_its_quota);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(order_quota_suite, NULL, NULL);
