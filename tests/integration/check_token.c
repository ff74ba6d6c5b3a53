/* check_token.c - GET|POST /token/apply and the token guard of
 * POST /order/create against the real binary, MariaDB and Redis: issue,
 * single use (also under 50 concurrent submits of one token), expiry in
 * Redis and in the MySQL table, and validation before consumption. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 30
#define SLOW_TIMEOUT_S 120
#define TOKEN_TTL_S 300 /* redis.token_ttl_s of the shipped config */
#define DISTINCT_TOKENS 200
#define EXPIRY_WAIT_MS 5000 /* a 1 s TTL is over well within this */
#define STORM_CLIENTS 50
#define REPEAT_MSG "请勿重复提交: token already used or expired"

static long long orders(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM orders");
}

/* EXISTS idem:token:<token> in Redis: 1 or 0. */
static long long token_in_redis(const char *token)
{
    redisReply *r = h_redis_cmd("EXISTS idem:token:%s", token);
    long long n;

    ck_assert_msg(r != NULL && r->type == REDIS_REPLY_INTEGER, "redis EXISTS failed");
    n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Creates an order for request_id with token and asserts 201. */
static void create_ok(const char *token, const char *request_id)
{
    struct h_resp r;

    h_order_create(h_port(), token, "u1001", request_id, "SHOE-42", 1, &r);
    h_assert_status(&r, 201);
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
}

static void assert_repeat_submit(const struct h_resp *r)
{
    h_assert_error(r, 409, "REPEAT_SUBMIT");
    h_assert_str(r, "message", REPEAT_MSG);
}

/* ---- issue --------------------------------------------------------------- */

START_TEST(get_apply_issues_a_32_hex_token_with_its_ttl)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;
    redisReply *ttl;

    h_http(h_port(), "GET", "/token/apply", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_json(&r);
    ck_assert_msg(strstr(r.body, "\"expires_in\":300") != NULL, "expected expires_in 300: %s",
                  r.body);
    h_resp_free(&r);

    h_token_apply(h_port(), token);
    ck_assert_int_eq(1, token_in_redis(token));
    ttl = h_redis_cmd("PTTL idem:token:%s", token);
    ck_assert_ptr_nonnull(ttl);
    ck_assert_msg(ttl->integer > 0 && ttl->integer <= TOKEN_TTL_S * 1000LL,
                  "expected a TTL in (0, %d] ms, got %lld", TOKEN_TTL_S * 1000, ttl->integer);
    freeReplyObject(ttl);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_token"));
}
END_TEST

START_TEST(post_apply_issues_a_token_too)
{
    struct h_resp r;
    char *token;

    h_http(h_port(), "POST", "/token/apply", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    token = h_json_get_str(r.body, "token");
    ck_assert_msg(token != NULL && strlen(token) == 32, "expected a token: %s", r.body);
    ck_assert_int_eq(1, token_in_redis(token));
    free(token);
    h_resp_free(&r);
}
END_TEST

static int cmp_token(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

START_TEST(tokens_are_never_repeated)
{
    static char tokens[DISTINCT_TOKENS][H_TOKEN_BUF];

    for (int i = 0; i < DISTINCT_TOKENS; i++)
        h_token_apply(h_port(), tokens[i]);
    qsort(tokens, DISTINCT_TOKENS, H_TOKEN_BUF, cmp_token);
    for (int i = 1; i < DISTINCT_TOKENS; i++)
        ck_assert_msg(strcmp(tokens[i - 1], tokens[i]) != 0, "token %s issued twice", tokens[i]);
}
END_TEST

START_TEST(other_methods_on_apply_are_405)
{
    struct h_resp r;
    const char *allow;

    h_http(h_port(), "PUT", "/token/apply", NULL, "", 0, &r);
    h_assert_error(&r, 405, NULL);
    allow = h_resp_header(&r, "Allow");
    ck_assert_msg(allow != NULL && strstr(allow, "GET") && strstr(allow, "POST"),
                  "expected Allow: GET, POST, got %s", allow ? allow : "(none)");
    h_resp_free(&r);
}
END_TEST

/* ---- single use ---------------------------------------------------------- */

START_TEST(used_token_is_refused_as_repeat_submit)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;

    h_token_apply(h_port(), token);
    create_ok(token, "r1");
    ck_assert_int_eq(0, token_in_redis(token));

    /* Another request, same token: the double click is refused outright. */
    h_order_create(h_port(), token, "u1001", "r2", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
}
END_TEST

START_TEST(never_issued_token_is_refused)
{
    struct h_resp r;

    h_order_create(h_port(), "0123456789abcdef0123456789abcdef", "u1001", "r1", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
}
END_TEST

struct token_storm {
    int port;
    char token[H_TOKEN_BUF];
    int status[STORM_CLIENTS];
    int repeat[STORM_CLIENTS];
};

/* One client of the storm: its own request_id, everyone's token. */
static int token_storm_call(int i, void *p)
{
    struct token_storm *a = p;
    char request_id[32];
    struct h_resp r;

    snprintf(request_id, sizeof request_id, "storm-%d", i);
    h_order_create(a->port, a->token, "u1001", request_id, "SHOE-42", 1, &r);
    a->status[i] = r.status;
    a->repeat[i] = h_json_eq_str(r.body, "code", "REPEAT_SUBMIT");
    h_resp_free(&r);
    return 0;
}

START_TEST(fifty_concurrent_submits_of_one_token_make_one_order)
{
    static struct token_storm a;
    struct h_storm_stats st;
    int created = 0, repeats = 0;

    memset(&a, 0, sizeof a);
    a.port = h_port();
    h_token_apply(h_port(), a.token);
    ck_assert_int_eq(0, h_storm(STORM_CLIENTS, STORM_CLIENTS, token_storm_call, &a, &st));
    printf("token storm: %d concurrent submits of one token: %.0f req/s p50 %.1f ms "
           "p99 %.1f ms max %.1f ms\n",
           STORM_CLIENTS, st.rps, st.p50_us / 1000.0, st.p99_us / 1000.0, st.max_us / 1000.0);
    for (int i = 0; i < STORM_CLIENTS; i++) {
        created += a.status[i] == 201;
        repeats += a.status[i] == 409 && a.repeat[i];
    }
    ck_assert_int_eq(1, created);
    ck_assert_int_eq(STORM_CLIENTS - 1, repeats);
    ck_assert_int_eq(1, orders());
    ck_assert_int_eq(99, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
}
END_TEST

/* ---- expiry -------------------------------------------------------------- */

START_TEST(token_expired_in_redis_is_refused)
{
    char token[H_TOKEN_BUF];
    redisReply *r;
    struct h_resp resp;

    h_token_apply(h_port(), token);
    r = h_redis_cmd("PEXPIRE idem:token:%s 1", token);
    ck_assert_msg(r != NULL && r->integer == 1, "PEXPIRE failed");
    freeReplyObject(r);
    h_await(!token_in_redis(token), EXPIRY_WAIT_MS, "token %s outlived PEXPIRE 1", token);
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &resp);
    assert_repeat_submit(&resp);
    h_resp_free(&resp);
    ck_assert_int_eq(0, orders());
}
END_TEST

START_TEST(token_outlives_its_configured_ttl_never)
{
    static const char *const env[] = { "PAYCALLBACK_REDIS_TOKEN_TTL_S=1", NULL };
    struct h_server *s = h_server_start(env);
    char token[H_TOKEN_BUF];
    struct h_resp r;

    ck_assert_msg(s != NULL, "cannot start a server with a 1 s token TTL");
    h_http(h_server_port(s), "GET", "/token/apply", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"expires_in\":1") != NULL, "expected expires_in 1: %s", r.body);
    h_resp_free(&r);
    h_token_apply(h_server_port(s), token);
    h_await(!token_in_redis(token), EXPIRY_WAIT_MS, "token %s outlived its 1 s TTL", token);
    h_order_create(h_server_port(s), token, "u1001", "r1", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_server_stop(s));
    ck_assert_int_eq(0, orders());
}
END_TEST

START_TEST(token_in_the_mysql_table_is_used_once)
{
    static const char token[] = "aaaabbbbccccdddd0000111122223333";
    struct h_resp r;

    /* Issued while Redis was down: the MySQL table holds it. */
    h_db_exec("INSERT INTO idem_token (token, expires_at) VALUES ('%s', "
              "NOW(3) + INTERVAL 60 SECOND)",
              token);
    create_ok(token, "r1");
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM idem_token"));
    h_order_create(h_port(), token, "u1001", "r2", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, orders());
}
END_TEST

START_TEST(expired_token_in_the_mysql_table_is_refused)
{
    static const char token[] = "aaaabbbbccccdddd0000111122224444";
    struct h_resp r;

    h_db_exec("INSERT INTO idem_token (token, expires_at) VALUES ('%s', "
              "NOW(3) - INTERVAL 1 SECOND)",
              token);
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 1, &r);
    assert_repeat_submit(&r);
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
}
END_TEST

/* ---- validation comes before consumption --------------------------------- */

START_TEST(missing_token_header_is_400)
{
    struct h_resp r;

    h_order_create(h_port(), NULL, "u1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    ck_assert_msg(strstr(r.body, "Idempotent-Token") != NULL, "message names the header: %s",
                  r.body);
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
}
END_TEST

static const char *const malformed_tokens[] = {
    "",
    "0123456789ABCDEF0123456789ABCDEF",  /* upper case */
    "0123456789abcdef0123456789abcde",   /* 31 */
    "0123456789abcdef0123456789abcdef0", /* 33 */
    "0123456789abcdef0123456789abcdeg",  /* not hex */
    "0123456789abcdef 123456789abcdef",
};

START_TEST(malformed_token_is_400)
{
    struct h_resp r;

    h_order_create(h_port(), malformed_tokens[_i], "u1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ck_assert_int_eq(0, orders());
}
END_TEST

START_TEST(rejected_body_leaves_the_token_unused)
{
    char token[H_TOKEN_BUF];
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u1001", "r1", "SHOE-42", 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_order_create(h_port(), token, "u 1001", "r1", "SHOE-42", 1, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ck_assert_int_eq(1, token_in_redis(token));
    create_ok(token, "r1");
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *token_suite(void)
{
    Suite *s = suite_create("token");
    TCase *tc;

    tc = h_tcase("apply issues fresh tokens", TC_TIMEOUT_S);
    tcase_add_test(tc, get_apply_issues_a_32_hex_token_with_its_ttl);
    tcase_add_test(tc, post_apply_issues_a_token_too);
    tcase_add_test(tc, tokens_are_never_repeated);
    tcase_add_test(tc, other_methods_on_apply_are_405);
    suite_add_tcase(s, tc);

    tc = h_tcase("a token is used once", SLOW_TIMEOUT_S);
    tcase_add_test(tc, used_token_is_refused_as_repeat_submit);
    tcase_add_test(tc, never_issued_token_is_refused);
    tcase_add_test(tc, fifty_concurrent_submits_of_one_token_make_one_order);
    suite_add_tcase(s, tc);

    tc = h_tcase("an expired token is refused", SLOW_TIMEOUT_S);
    tcase_add_test(tc, token_expired_in_redis_is_refused);
    tcase_add_test(tc, token_outlives_its_configured_ttl_never);
    tcase_add_test(tc, token_in_the_mysql_table_is_used_once);
    tcase_add_test(tc, expired_token_in_the_mysql_table_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase("the request is validated before the token is spent", TC_TIMEOUT_S);
    tcase_add_test(tc, missing_token_header_is_400);
    tcase_add_loop_test(tc, malformed_token_is_400, 0,
                        (int)(sizeof malformed_tokens / sizeof malformed_tokens[0]));
    tcase_add_test(tc, rejected_body_leaves_the_token_unused);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(token_suite, NULL, NULL);
