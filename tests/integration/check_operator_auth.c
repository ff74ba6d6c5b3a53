/* check_operator_auth.c - the operator credential over HTTP: order reads
 * and transitions and /metrics answer 401 UNAUTHORIZED (JSON, with
 * WWW-Authenticate: Bearer) and change nothing without a configured key;
 * with one they work and the request log names the key, never prints it.
 * Health, readiness, tokens, order creation and callbacks need no key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define LOG_WAIT_MS 5000
#define OPS_KEY "ops-key-5b7e0c1d9a2f4e68"
#define PROM_KEY "prom-key-1c2d3e4f5a6b7c8d"
#define REAL_SECRET "operator-auth-secret-4d1f-0123456789ab"

/* The routes an operator key opens: method and path. */
static const struct {
    const char *method, *path;
} operator_routes[] = {
    { "GET", "/order/OA1" },         { "POST", "/order/OA1/ship" }, { "POST", "/order/OA1/finish" },
    { "POST", "/order/OA1/cancel" }, { "GET", "/metrics" },
};
#define NOPERATOR (sizeof operator_routes / sizeof operator_routes[0])

static long long order_status(const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no);
}

/* Asserts r is a 401 UNAUTHORIZED with the given WWW-Authenticate. */
static void assert_unauthorized(const struct h_resp *r, const char *challenge)
{
    const char *www = h_resp_header(r, "WWW-Authenticate");

    h_assert_error(r, 401, "UNAUTHORIZED");
    ck_assert_msg(www != NULL && strcmp(www, challenge) == 0,
                  "expected WWW-Authenticate: %s, got %s", challenge, www ? www : "(none)");
}

/* Sends operator route i with the given Authorization value (NULL: none). */
static void call_route(size_t i, const char *authorization, struct h_resp *r)
{
    char hdr[256];
    const char *headers[] = { hdr, NULL };

    snprintf(hdr, sizeof hdr, "Authorization: %s", authorization ? authorization : "");
    if (authorization == NULL)
        h_http_key(h_port(), NULL, operator_routes[i].method, operator_routes[i].path, NULL, NULL,
                   0, r);
    else
        h_http(h_port(), operator_routes[i].method, operator_routes[i].path, headers, NULL, 0, r);
}

/* ---- refused without a key --------------------------------------------------- */

START_TEST(operator_route_without_a_key_is_401_and_writes_nothing)
{
    struct h_resp r;

    h_db_insert_order("OA1", "u1", "899.00", 2); /* PAID: ship would work */
    call_route((size_t)_i, NULL, &r);
    assert_unauthorized(&r, "Bearer");
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status("OA1"));
}
END_TEST

START_TEST(operator_route_with_an_unknown_key_is_401_and_writes_nothing)
{
    struct h_resp r;

    h_db_insert_order("OA1", "u1", "899.00", 2);
    call_route((size_t)_i, "Bearer " H_OPERATOR_KEY "-not", &r);
    assert_unauthorized(&r, "Bearer error=\"invalid_token\"");
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status("OA1"));
}
END_TEST

START_TEST(operator_route_with_another_scheme_is_401)
{
    struct h_resp r;

    h_db_insert_order("OA1", "u1", "899.00", 2);
    call_route((size_t)_i, "Basic ZGV2OmRldi1vcGVyYXRvci1rZXk=", &r);
    assert_unauthorized(&r, "Bearer error=\"invalid_request\"");
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status("OA1"));
}
END_TEST

/* ---- accepted with a key ------------------------------------------------------ */

START_TEST(operator_key_ships_the_order_and_is_named_in_the_log)
{
    const char *parts[] = { "path=\"/order/OA1/ship\"", "status=200", "caller=dev", NULL };
    const char *leak[] = { "level=", H_OPERATOR_KEY, NULL }; /* the server's lines */
    struct h_resp r;
    char *line;

    h_db_insert_order("OA1", "u1", "899.00", 2);
    call_route(1, "Bearer " H_OPERATOR_KEY, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(3, order_status("OA1"));
    line = h_log_find(parts, LOG_WAIT_MS);
    ck_assert_msg(line != NULL, "no request line naming caller=dev");
    free(line);
    line = h_log_find(leak, 0);
    ck_assert_msg(line == NULL, "the key is in the log: %s", line);
}
END_TEST

START_TEST(operator_key_reads_metrics)
{
    struct h_resp r;

    call_route(4, "Bearer " H_OPERATOR_KEY, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "# TYPE"));
    h_resp_free(&r);
}
END_TEST

/* ---- open routes --------------------------------------------------------------- */

START_TEST(open_routes_need_no_key)
{
    static const char *const paths[] = { "/healthz", "/readyz", "/token/apply" };
    char token[H_TOKEN_BUF] = "";
    struct h_resp r;

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        h_http_key(h_port(), NULL, "GET", paths[i], NULL, NULL, 0, &r);
        h_assert_status(&r, 200);
        if (i == 2) {
            char *t = h_json_get_str(r.body, "token");
            ck_assert_ptr_nonnull(t);
            snprintf(token, sizeof token, "%s", t);
            free(t);
        }
        h_resp_free(&r);
    }
    {
        char hdr[96], body[256];
        const char *headers[] = { "Content-Type: application/json", hdr, NULL };
        int n = snprintf(body, sizeof body,
                         "{\"user_id\":\"u9\",\"request_id\":\"oa-r1\","
                         "\"sku\":\"SHOE-42\",\"quantity\":1}");

        snprintf(hdr, sizeof hdr, "Idempotent-Token: %s", token);
        h_http_key(h_port(), NULL, "POST", "/order/create", headers, body, (size_t)n, &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
}
END_TEST

START_TEST(callbacks_stay_signed_and_need_no_key)
{
    struct h_resp r;

    h_db_insert_order("OA1", "u1", "899.00", 1);
    h_callback(h_port(), "OA1", "PAY-OA1", "899.00", &r); /* signed, no key needed */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status("OA1"));
}
END_TEST

/* ---- configured keys outside development -------------------------------------- */

static void keyed_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_DEV=0",
        "PAYCALLBACK_CALLBACK_SECRET=" REAL_SECRET,
        "PAYCALLBACK_AUTH_KEYS=ops:" OPS_KEY ",prometheus:" PROM_KEY,
        NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(each_configured_key_is_logged_by_its_own_name)
{
    const char *ops[] = { "path=\"/order/OA1\"", "status=200", "caller=ops", NULL };
    const char *prom[] = { "path=\"/metrics\"", "status=200", "caller=prometheus", NULL };
    /* Only the server's own lines: the harness logs the environment it
     * starts the server with. */
    const char *leak_ops[] = { "level=", OPS_KEY, NULL };
    const char *leak_prom[] = { "level=", PROM_KEY, NULL };
    struct h_resp r;
    char *line;

    h_db_insert_order("OA1", "u1", "899.00", 1);
    h_http_key(h_port(), OPS_KEY, "GET", "/order/OA1", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http_key(h_port(), PROM_KEY, "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_msg((line = h_log_find(ops, LOG_WAIT_MS)) != NULL, "no line with caller=ops");
    free(line);
    ck_assert_msg((line = h_log_find(prom, LOG_WAIT_MS)) != NULL, "no line with caller=prometheus");
    free(line);
    ck_assert_ptr_null(h_log_find(leak_ops, 0));
    ck_assert_ptr_null(h_log_find(leak_prom, 0));
}
END_TEST

START_TEST(the_development_key_is_refused_when_keys_are_configured)
{
    struct h_resp r;

    h_http_key(h_port(), H_OPERATOR_KEY, "GET", "/metrics", NULL, NULL, 0, &r);
    assert_unauthorized(&r, "Bearer error=\"invalid_token\"");
    h_resp_free(&r);
}
END_TEST

START_TEST(callbacks_signed_with_the_development_secret_are_refused)
{
    struct h_resp r;
    char body[256];
    size_t n = h_callback_body(body, sizeof body, "OA1", "PAY-OA2", "899.00");

    h_db_insert_order("OA1", "u1", "899.00", 1);
    h_post_callback(h_port(), H_SECRET, (long long)time(NULL), body, n, &r);
    h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
    h_post_callback(h_port(), REAL_SECRET, (long long)time(NULL), body, n, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

static Suite *operator_auth_suite(void)
{
    Suite *s = suite_create("operator_auth");
    TCase *tc;

    tc = h_tcase("operator routes refuse a missing or wrong key", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, operator_route_without_a_key_is_401_and_writes_nothing, 0,
                        (int)NOPERATOR);
    tcase_add_loop_test(tc, operator_route_with_an_unknown_key_is_401_and_writes_nothing, 0,
                        (int)NOPERATOR);
    tcase_add_loop_test(tc, operator_route_with_another_scheme_is_401, 0, (int)NOPERATOR);
    suite_add_tcase(s, tc);

    tc = h_tcase("an operator key opens them", TC_TIMEOUT_S);
    tcase_add_test(tc, operator_key_ships_the_order_and_is_named_in_the_log);
    tcase_add_test(tc, operator_key_reads_metrics);
    suite_add_tcase(s, tc);

    tc = h_tcase("shopper and bank routes stay open", TC_TIMEOUT_S);
    tcase_add_test(tc, open_routes_need_no_key);
    tcase_add_test(tc, callbacks_stay_signed_and_need_no_key);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("configured keys outside development", TC_TIMEOUT_S, keyed_server_up,
                      h_fixture_server_down);
    tcase_add_test(tc, each_configured_key_is_logged_by_its_own_name);
    tcase_add_test(tc, the_development_key_is_refused_when_keys_are_configured);
    tcase_add_test(tc, callbacks_signed_with_the_development_secret_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(operator_auth_suite, NULL, NULL);
