/* check_order.c - POST /order/create and GET /order/{order_no} against the
 * real binary, MariaDB and Redis: price from stock, exact amounts, body
 * validation, dedupe on (user_id, request_id) also under concurrency, the
 * oversell storm, the busy stock lock, and a MySQL outage that must not
 * burn the client's token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 30
#define SLOW_TIMEOUT_S 180
#define OVERSELL_STOCK 10
#define OVERSELL_CLIENTS 50
#define DEDUPE_CLIENTS 20
#define CLIENT_TRIES 40 /* attempts of one storm client after 503s */
#define ORDER_NO_LEN 31 /* "O" + yyyymmddHHMMSS + 16 hex */

#define A16 "AAAAAAAAAAAAAAAA"
#define ID65 A16 A16 A16 A16 "A"

static long long orders(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM orders");
}

static long long stock(const char *sku)
{
    return h_db_scalar_ll("SELECT num FROM stock WHERE sku = '%s'", sku);
}

static long long token_in_redis(const char *token)
{
    redisReply *r = h_redis_cmd("EXISTS idem:token:%s", token);
    long long n;

    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_INTEGER, "redis EXISTS failed");
    n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Applies for a token and creates an order with it; the reply is in r. */
static void create(const char *user_id, const char *request_id, const char *sku, int quantity,
                   struct h_resp *r)
{
    char token[H_TOKEN_BUF];

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, user_id, request_id, sku, quantity, r);
}

/* Asserts an order reply: status, the fields, and the duplicate flag. */
static void assert_order(const struct h_resp *r, int status, const char *request_id,
                         const char *sku, const char *amount, int duplicate)
{
    char *order_no = h_json_get_str(r->body, "order_no");

    h_assert_status(r, status);
    h_assert_json(r);
    h_assert_str(r, "user_id", "u1001");
    h_assert_str(r, "request_id", request_id);
    h_assert_str(r, "sku", sku);
    h_assert_str(r, "amount", amount);
    h_assert_str(r, "status", "WAIT_PAY");
    h_assert_bool(r, "duplicate", duplicate);
    ck_assert_msg(order_no != NULL && strlen(order_no) == ORDER_NO_LEN && order_no[0] == 'O',
                  "expected an order_no like O20240501123045 + 16 hex: %s", r->body);
    free(order_no);
}

/* ---- create -------------------------------------------------------------- */

START_TEST(order_is_created_at_the_stock_price)
{
    struct h_resp r;
    char *order_no, *amount;

    create("u1001", "r1", "SOCK-01", 3, &r);
    assert_order(&r, 201, "r1", "SOCK-01", "59.70", 0);
    ck_assert_msg(strstr(r.body, "\"quantity\":3") != NULL, "quantity 3: %s", r.body);
    order_no = h_json_get_str(r.body, "order_no");
    h_resp_free(&r);

    amount = h_db_scalar_str("SELECT amount FROM orders WHERE order_no = '%s'", order_no);
    ck_assert_pstr_eq("59.70", amount);
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no));
    ck_assert_int_eq(497, stock("SOCK-01"));
    ck_assert_int_eq(1, orders());
    free(amount);
    free(order_no);
}
END_TEST

START_TEST(client_cannot_set_the_price)
{
    static const char body[] = "{\"user_id\":\"u1001\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\","
                               "\"quantity\":2,\"amount\":\"0.01\",\"price\":\"0.01\"}";
    char token[H_TOKEN_BUF], hdr[64];
    const char *headers[] = { hdr, NULL };
    struct h_resp r;

    h_token_apply(h_port(), token);
    snprintf(hdr, sizeof hdr, "Idempotent-Token: %s", token);
    h_http(h_port(), "POST", "/order/create", headers, body, strlen(body), &r);
    assert_order(&r, 201, "r1", "SHOE-42", "1798.00", 0);
    h_resp_free(&r);
}
END_TEST

START_TEST(unknown_sku_is_404_and_spends_the_token)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u1001", "r1", "NOSUCH-SKU", 1, &r);
    h_assert_error(&r, 404, "SKU_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
    /* A definite answer keeps the token spent: only a 503 gives it back. */
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 409, "REPEAT_SUBMIT");
    h_resp_free(&r);
}
END_TEST

START_TEST(more_than_the_stock_is_out_of_stock)
{
    struct h_resp r;

    create("u1001", "r1", "HAT-7", 11, &r);
    h_assert_error(&r, 409, "OUT_OF_STOCK");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
    ck_assert_int_eq(10, stock("HAT-7"));

    create("u1001", "r2", "HAT-7", 10, &r);
    assert_order(&r, 201, "r2", "HAT-7", "1295.00", 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, stock("HAT-7"));

    create("u1001", "r3", "HAT-7", 1, &r);
    h_assert_error(&r, 409, "OUT_OF_STOCK");
    h_resp_free(&r);
    ck_assert_int_eq(0, stock("HAT-7"));
    ck_assert_int_eq(1, orders());
}
END_TEST

START_TEST(largest_quantity_is_accepted)
{
    struct h_resp r;

    create("u1001", "r1", "SOCK-01", 500, &r);
    assert_order(&r, 201, "r1", "SOCK-01", "9950.00", 0);
    h_resp_free(&r);
    h_db_exec("UPDATE stock SET num = 1000 WHERE sku = 'SOCK-01'");
    create("u1001", "r2", "SOCK-01", 1000, &r);
    assert_order(&r, 201, "r2", "SOCK-01", "19900.00", 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, stock("SOCK-01"));
}
END_TEST

START_TEST(lock_is_released_after_the_order)
{
    struct h_resp r;
    redisReply *lock;

    create("u1001", "r1", "SHOE-42", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    lock = h_redis_cmd("EXISTS idem:lock:stock:SHOE-42");
    ck_assert_msg(lock != NULL && lock->integer == 0, "the stock lock outlived its order");
    freeReplyObject(lock);
}
END_TEST

/* ---- validation ---------------------------------------------------------- */

static const char *const bad_bodies[] = {
    "",
    "not json",
    "[]",
    "{\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":1}",
    "{\"user_id\":\"u 1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":1}",
    "{\"user_id\":\"u1\",\"sku\":\"SHOE-42\",\"quantity\":1}",
    "{\"user_id\":\"u1\",\"request_id\":\"" ID65 "\",\"sku\":\"SHOE-42\",\"quantity\":1}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"quantity\":1}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":42,\"quantity\":1}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\"}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":0}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":-1}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":1001}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":1.5}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":\"1\"}",
    "{\"user_id\":\"u1\",\"request_id\":\"r1\",\"sku\":\"SHOE-42\",\"quantity\":1e400}",
};

START_TEST(bad_body_is_400_and_keeps_the_token)
{
    char token[H_TOKEN_BUF], hdr[64];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };
    const char *body = bad_bodies[_i];
    struct h_resp r;

    h_token_apply(h_port(), token);
    snprintf(hdr, sizeof hdr, "Idempotent-Token: %s", token);
    h_http(h_port(), "POST", "/order/create", headers, body, strlen(body), &r);
    ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "body %s: %s", body,
                  h_check_error(&r, 400, "BAD_REQUEST"));
    h_resp_free(&r);
    ck_assert_int_eq(1, token_in_redis(token));
    ck_assert_int_eq(0, orders());
    ck_assert_int_eq(100, stock("SHOE-42"));
}
END_TEST

/* ---- dedupe -------------------------------------------------------------- */

START_TEST(same_request_with_a_fresh_token_answers_the_same_order)
{
    struct h_resp r;
    char *first, *again;

    create("u1001", "r1", "SHOE-42", 2, &r);
    assert_order(&r, 201, "r1", "SHOE-42", "1798.00", 0);
    first = h_json_get_str(r.body, "order_no");
    h_resp_free(&r);

    for (int i = 0; i < 3; i++) {
        create("u1001", "r1", "SHOE-42", 2, &r);
        assert_order(&r, 200, "r1", "SHOE-42", "1798.00", 1);
        again = h_json_get_str(r.body, "order_no");
        ck_assert_pstr_eq(first, again);
        free(again);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(98, stock("SHOE-42"));
    free(first);
}
END_TEST

START_TEST(same_request_id_of_another_user_is_another_order)
{
    struct h_resp r;

    create("u1001", "r1", "SHOE-42", 1, &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    create("u1002", "r1", "SHOE-42", 1, &r);
    h_assert_status(&r, 201);
    h_assert_str(&r, "user_id", "u1002");
    h_resp_free(&r);
    ck_assert_int_eq(2, orders());
    ck_assert_int_eq(98, stock("SHOE-42"));
}
END_TEST

struct dedupe_storm {
    int port;
    char token[DEDUPE_CLIENTS][H_TOKEN_BUF];
    int status[DEDUPE_CLIENTS];
    char order_no[DEDUPE_CLIENTS][40];
};

static int dedupe_call(int i, void *p)
{
    struct dedupe_storm *a = p;
    struct h_resp r;
    char *no;

    h_order_create(a->port, a->token[i], "u1001", "same-request", "SHOE-42", 1, &r);
    a->status[i] = r.status;
    no = h_json_get_str(r.body, "order_no");
    snprintf(a->order_no[i], sizeof a->order_no[i], "%s", no ? no : "");
    free(no);
    h_resp_free(&r);
    return 0;
}

START_TEST(concurrent_retries_of_one_request_make_one_order)
{
    static struct dedupe_storm a;
    struct h_storm_stats st;
    int created = 0, dups = 0, first = -1;

    memset(&a, 0, sizeof a);
    a.port = h_port();
    for (int i = 0; i < DEDUPE_CLIENTS; i++)
        h_token_apply(h_port(), a.token[i]);
    ck_assert_int_eq(0, h_storm(DEDUPE_CLIENTS, DEDUPE_CLIENTS, dedupe_call, &a, &st));
    for (int i = 0; i < DEDUPE_CLIENTS; i++) {
        created += a.status[i] == 201;
        dups += a.status[i] == 200;
        if (a.status[i] == 201)
            first = i;
    }
    ck_assert_int_eq(1, created);
    ck_assert_int_eq(DEDUPE_CLIENTS - 1, dups);
    for (int i = 0; i < DEDUPE_CLIENTS; i++)
        ck_assert_str_eq(a.order_no[first], a.order_no[i]);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, stock("SHOE-42"));
}
END_TEST

/* ---- oversell ------------------------------------------------------------ */

struct oversell {
    int port;
    int status[OVERSELL_CLIENTS]; /* the final answer of each client */
    int tries[OVERSELL_CLIENTS];
    int out_of_stock[OVERSELL_CLIENTS];
    char order_no[OVERSELL_CLIENTS][40];
};

/* One shopper: a token, an order; a 503 (BUSY or UNAVAILABLE) is retried
 * with a fresh token and the same request_id, as a frontend would. */
static int oversell_call(int i, void *p)
{
    struct oversell *a = p;
    char token[H_TOKEN_BUF], request_id[32];
    struct h_resp r;
    char *no;

    snprintf(request_id, sizeof request_id, "buy-%d", i);
    for (a->tries[i] = 1; a->tries[i] <= CLIENT_TRIES; a->tries[i]++) {
        if (h_token_try(a->port, token, NULL) != 0) {
            h_client_backoff(a->tries[i], i);
            continue;
        }
        h_order_create(a->port, token, "u1001", request_id, "HAT-7", 1, &r);
        a->status[i] = r.status;
        if (r.status != 503) {
            a->out_of_stock[i] = h_json_eq_str(r.body, "code", "OUT_OF_STOCK");
            no = h_json_get_str(r.body, "order_no");
            snprintf(a->order_no[i], sizeof a->order_no[i], "%s", no ? no : "");
            free(no);
            h_resp_free(&r);
            return 0;
        }
        h_resp_free(&r);
        h_client_backoff(a->tries[i], i);
    }
    return 1;
}

static int cmp_str40(const void *x, const void *y)
{
    return strcmp((const char *)x, (const char *)y);
}

START_TEST(oversell_storm_sells_exactly_the_stock)
{
    static struct oversell a;
    static char created[OVERSELL_CLIENTS][40];
    struct h_storm_stats st;
    int n201 = 0, n409 = 0, retried = 0, other = 0;

    memset(&a, 0, sizeof a);
    a.port = h_port();
    h_db_exec("UPDATE stock SET num = %d WHERE sku = 'HAT-7'", OVERSELL_STOCK);
    ck_assert_int_eq(0, h_storm(OVERSELL_CLIENTS, OVERSELL_CLIENTS, oversell_call, &a, &st));
    for (int i = 0; i < OVERSELL_CLIENTS; i++) {
        if (a.status[i] == 201)
            memcpy(created[n201++], a.order_no[i], 40);
        else if (a.status[i] == 409 && a.out_of_stock[i])
            n409++;
        else
            other++;
        retried += a.tries[i] > 1;
    }
    printf("oversell storm: stock %d, %d concurrent shoppers: %.0f shoppers/s p50 %.1f ms "
           "p99 %.1f ms max %.1f ms; %d retried after 503\n",
           OVERSELL_STOCK, OVERSELL_CLIENTS, st.rps, st.p50_us / 1000.0, st.p99_us / 1000.0,
           st.max_us / 1000.0, retried);
    ck_assert_int_eq(0, st.errors);
    ck_assert_int_eq(0, other);
    ck_assert_int_eq(OVERSELL_STOCK, n201);
    ck_assert_int_eq(OVERSELL_CLIENTS - OVERSELL_STOCK, n409);
    qsort(created, (size_t)n201, 40, cmp_str40);
    for (int i = 1; i < n201; i++)
        ck_assert_str_ne(created[i - 1], created[i]);
    ck_assert_int_eq(OVERSELL_STOCK, h_db_scalar_ll("SELECT COUNT(*) FROM orders "
                                                    "WHERE sku = 'HAT-7'"));
    ck_assert_int_eq(OVERSELL_STOCK, h_db_scalar_ll("SELECT SUM(quantity) FROM orders "
                                                    "WHERE sku = 'HAT-7'"));
    ck_assert_int_eq(0, stock("HAT-7"));
}
END_TEST

/* ---- the stock lock ------------------------------------------------------ */

START_TEST(held_stock_lock_is_503_busy_and_gives_the_token_back)
{
    char token[H_TOKEN_BUF];
    redisReply *x;
    struct h_resp r;

    x = h_redis_cmd("SET idem:lock:stock:SHOE-42 another-holder PX 30000");
    ck_assert_ptr_nonnull(x);
    freeReplyObject(x);
    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 503, "BUSY");
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "503 BUSY without Retry-After");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
    ck_assert_int_eq(100, stock("SHOE-42"));

    /* Ours was never taken, so the other holder's lock is untouched. */
    x = h_redis_cmd("GET idem:lock:stock:SHOE-42");
    ck_assert_msg(x != NULL && x->type == REDIS_REPLY_STRING &&
                      strcmp(x->str, "another-holder") == 0,
                  "the other holder's lock was touched");
    freeReplyObject(x);
    x = h_redis_cmd("DEL idem:lock:stock:SHOE-42");
    freeReplyObject(x);

    /* The 503 was not the client's fault: the same token works now. */
    ck_assert_int_eq(1, token_in_redis(token));
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    assert_order(&r, 201, "r1", "SHOE-42", "899.00", 0);
    h_resp_free(&r);
}
END_TEST

/* ---- MySQL outage -------------------------------------------------------- */

START_TEST(mysql_outage_is_503_and_gives_the_token_back)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_services("stop-mysql");
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "503 without Retry-After");
    h_resp_free(&r);
    ck_assert_int_eq(1, token_in_redis(token));
    h_services("start-mysql");

    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    assert_order(&r, 201, "r1", "SHOE-42", "899.00", 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, stock("SHOE-42"));
}
END_TEST

/* ---- GET /order/{order_no} ----------------------------------------------- */

START_TEST(get_shows_the_order_and_its_payments)
{
    struct h_resp r;
    char path[128], *order_no, *ct;

    create("u1001", "r1", "SHOE-42", 1, &r);
    order_no = h_json_get_str(r.body, "order_no");
    h_resp_free(&r);
    snprintf(path, sizeof path, "/order/%s", order_no);

    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "order_no", order_no);
    h_assert_str(&r, "status", "WAIT_PAY");
    h_assert_str(&r, "amount", "899.00");
    ct = h_json_get_str(r.body, "create_time");
    ck_assert_msg(ct != NULL && strlen(ct) >= 20 && ct[10] == 'T', "create_time: %s", r.body);
    free(ct);
    ck_assert_msg(strstr(r.body, "\"payments\":[]") != NULL, "no payments yet: %s", r.body);
    h_resp_free(&r);

    h_callback(h_port(), order_no, "P1", "899.00", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "PAID");
    ck_assert_msg(strstr(r.body, "\"pay_no\":\"P1\"") != NULL &&
                      strstr(r.body, "\"status\":\"PAID\",\"create_time\"") != NULL,
                  "expected payment P1 PAID: %s", r.body);
    h_resp_free(&r);
    free(order_no);
}
END_TEST

START_TEST(get_unknown_order_is_404)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/order/O20240101000000ffffffffffffffff", NULL, NULL, 0, &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

START_TEST(get_with_a_bad_order_no_is_400)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/order/" ID65, NULL, NULL, 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_http(h_port(), "GET", "/order/a!b", NULL, NULL, 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

/* The cases of prices, stock and concurrency take quantities up to 1000
 * and many units for one user_id: the quotas of units are turned off
 * (check_order_quota.c tests them). */
static void unquoted_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_ORDERS_MAX_QUANTITY_PER_LINE=1000",
                                       "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_USER_SKU=0",
                                       "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_USER=0",
                                       "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT_SKU=0",
                                       "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT=0",
                                       NULL };

    h_fixture_server_up_env(env);
}

static Suite *order_suite(void)
{
    Suite *s = suite_create("order");
    TCase *tc;

    tc = h_tcase_with("an order is created at the stock price", TC_TIMEOUT_S, unquoted_up,
                      h_fixture_server_down);
    tcase_add_test(tc, order_is_created_at_the_stock_price);
    tcase_add_test(tc, client_cannot_set_the_price);
    tcase_add_test(tc, unknown_sku_is_404_and_spends_the_token);
    tcase_add_test(tc, more_than_the_stock_is_out_of_stock);
    tcase_add_test(tc, largest_quantity_is_accepted);
    tcase_add_test(tc, lock_is_released_after_the_order);
    suite_add_tcase(s, tc);

    tc = h_tcase("a bad body is refused before the token is spent", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, bad_body_is_400_and_keeps_the_token, 0,
                        (int)(sizeof bad_bodies / sizeof bad_bodies[0]));
    suite_add_tcase(s, tc);

    tc = h_tcase("one request makes one order", SLOW_TIMEOUT_S);
    tcase_add_test(tc, same_request_with_a_fresh_token_answers_the_same_order);
    tcase_add_test(tc, same_request_id_of_another_user_is_another_order);
    tcase_add_test(tc, concurrent_retries_of_one_request_make_one_order);
    suite_add_tcase(s, tc);

    tc =
        h_tcase_with("stock is never oversold", SLOW_TIMEOUT_S, unquoted_up, h_fixture_server_down);
    tcase_add_test(tc, oversell_storm_sells_exactly_the_stock);
    suite_add_tcase(s, tc);

    tc = h_tcase("a busy stock lock is 503 BUSY", TC_TIMEOUT_S);
    tcase_add_test(tc, held_stock_lock_is_503_busy_and_gives_the_token_back);
    suite_add_tcase(s, tc);

    tc = h_tcase("a mysql outage does not burn the token", SLOW_TIMEOUT_S);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, mysql_outage_is_503_and_gives_the_token_back);
    suite_add_tcase(s, tc);

    tc = h_tcase("get shows an order", TC_TIMEOUT_S);
    tcase_add_test(tc, get_shows_the_order_and_its_payments);
    tcase_add_test(tc, get_unknown_order_is_404);
    tcase_add_test(tc, get_with_a_bad_order_no_is_400);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(order_suite, NULL, NULL);
