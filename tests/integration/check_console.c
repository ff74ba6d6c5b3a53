/* check_console.c - the operator console's documents and the routes made
 * for it, against the real binary: the documents of console.dir with
 * their type, ETag (304 when current) and the console's strict
 * Content-Security-Policy, no path reaching outside the directory, every
 * API answer under a policy of its own; GET /ops/whoami names the key and
 * its scopes (never the key), GET /ops/summary counts what came in, GET
 * /ops/payments/{pay_no} names the order a payment paid; a
 * service without console.dir answers 404 under /console/. The browser
 * side is tests/console (make test-console). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define READ_KEY "console-read-key-0123456789"
#define METRICS_KEY "console-metrics-key-0123456"

static void console_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_AUTH_KEYS=ops:" H_OPERATOR_KEY ",reader:" READ_KEY ":read,"
        "scraper:" METRICS_KEY ":metrics",
        NULL,
    };

    h_fixture_server_up_env(env);
}

static void console_off_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_CONSOLE_DIR=", NULL };

    h_fixture_server_up_env(env);
}

static void get_raw(const char *path, const char *extra, struct h_resp *r)
{
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
                     path, extra ? extra : "");

    ck_assert_int_eq(0, h_http_raw(h_port(), req, (size_t)n, r));
}

static void assert_header(const struct h_resp *r, const char *name, const char *want)
{
    const char *v = h_resp_header(r, name);

    ck_assert_msg(v != NULL && strcmp(v, want) == 0, "%s: want \"%s\", got \"%s\"", name, want,
                  v ? v : "(none)");
}

static void assert_console_policy(const struct h_resp *r)
{
    const char *csp = h_resp_header(r, "Content-Security-Policy");

    ck_assert_ptr_nonnull(csp);
    ck_assert_ptr_nonnull(strstr(csp, "default-src 'self'"));
    ck_assert_ptr_nonnull(strstr(csp, "frame-ancestors 'none'"));
    ck_assert_ptr_null(strstr(csp, "unsafe"));
    assert_header(r, "Referrer-Policy", "no-referrer");
    assert_header(r, "X-Content-Type-Options", "nosniff");
}

START_TEST(the_page_and_its_modules_are_served_with_type_etag_and_policy)
{
    struct h_resp r;
    char etag[64], inm[96];

    get_raw("/console/", NULL, &r);
    h_assert_status(&r, 200);
    assert_header(&r, "Content-Type", "text/html; charset=utf-8");
    assert_header(&r, "Cache-Control", "no-cache");
    assert_console_policy(&r);
    ck_assert_ptr_nonnull(strstr(r.body, "<script type=\"module\" src=\"app.js\">"));
    h_resp_free(&r);

    get_raw("/console/app.js", NULL, &r);
    h_assert_status(&r, 200);
    assert_header(&r, "Content-Type", "text/javascript; charset=utf-8");
    assert_console_policy(&r);
    ck_assert_ptr_nonnull(h_resp_header(&r, "ETag"));
    snprintf(etag, sizeof(etag), "%s", h_resp_header(&r, "ETag"));
    h_resp_free(&r);

    snprintf(inm, sizeof(inm), "If-None-Match: W/\"0\", %s\r\n", etag);
    get_raw("/console/app.js", inm, &r);
    h_assert_status(&r, 304);
    ck_assert_uint_eq(0, r.body_len);
    assert_console_policy(&r);
    h_resp_free(&r);

    get_raw("/console/console.css", "If-None-Match: \"0000000000000000\"\r\n", &r);
    h_assert_status(&r, 200);
    assert_header(&r, "Content-Type", "text/css; charset=utf-8");
    h_resp_free(&r);
}
END_TEST

/* Only a file of the directory, by its exact name: never a path. */
START_TEST(no_path_reaches_outside_the_directory)
{
    static const char *const paths[] = {
        "/console/..",       "/console/../Makefile", "/console/%2e%2e",
        "/console/..%2fsrc", "/console/.gitignore",  "/console/Makefile",
        "/console/app.js/",  "/console/a/app.js",    "/console/app.js%00.html",
        "/console/APP.JS",   "/console//etc/passwd", "/console/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    };
    struct h_resp r;

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        get_raw(paths[i], NULL, &r);
        ck_assert_msg(r.status == 404 || r.status == 400, "%s: %d", paths[i], r.status);
        ck_assert_msg(strstr(r.body, "root:") == NULL && strstr(r.body, "<html") == NULL &&
                          strstr(r.body, "import") == NULL,
                      "%s served a file", paths[i]);
        ck_assert_ptr_nonnull(
            strstr(h_resp_header(&r, "Content-Security-Policy"), "frame-ancestors 'none'"));
        h_resp_free(&r);
    }
    get_raw("/console/app.js", "X: y\r\n", &r); /* and the real one still is */
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

/* The API's JSON is under a policy too: it loads nothing, frames nowhere. */
START_TEST(api_answers_carry_a_policy_of_their_own)
{
    struct h_resp r;

    get_raw("/healthz", NULL, &r);
    h_assert_status(&r, 200);
    assert_header(&r, "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
    assert_header(&r, "Referrer-Policy", "no-referrer");
    assert_header(&r, "X-Content-Type-Options", "nosniff");
    assert_header(&r, "Cache-Control", "no-store");
    h_resp_free(&r);
}
END_TEST

START_TEST(whoami_names_the_key_and_its_scopes_never_the_key)
{
    struct h_resp r;

    h_http_key(h_port(), READ_KEY, "GET", "/ops/whoami", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_str_eq("{\"name\":\"reader\",\"scopes\":[\"read\"]}", r.body);
    h_resp_free(&r);
    /* any key may ask, whatever its scopes */
    h_http_key(h_port(), METRICS_KEY, "GET", "/ops/whoami", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "name", "scraper");
    ck_assert_ptr_null(strstr(r.body, METRICS_KEY));
    h_resp_free(&r);
    h_http_key(h_port(), "not-a-key-of-this-service", "GET", "/ops/whoami", NULL, NULL, 0, &r);
    h_assert_status(&r, 401);
    h_assert_str(&r, "code", "UNAUTHORIZED");
    h_resp_free(&r);
    h_http_key(h_port(), NULL, "GET", "/ops/whoami", NULL, NULL, 0, &r);
    h_assert_status(&r, 401);
    h_resp_free(&r);
}
END_TEST

START_TEST(summary_counts_callbacks_refusals_and_double_payments)
{
    const char *body = "{\"order_no\":\"CS1\",\"pay_no\":\"CSP9\",\"amount\":\"899.00\"}";
    struct h_resp r;

    h_db_insert_order("CS1", "u1", "899.00", 1);
    h_callback(h_port(), "CS1", "CSP1", "899.00", &r);
    h_resp_free(&r);
    h_callback(h_port(), "CS1", "CSP2", "899.00", &r); /* charged twice */
    h_resp_free(&r);
    h_post_callback(h_port(), "not-the-secret", 0, body, strlen(body), &r);
    h_assert_status(&r, 401);
    h_resp_free(&r);

    h_http_key(h_port(), READ_KEY, "GET", "/ops/summary", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(
        strstr(r.body, "{\"gateway\":\"json\",\"result\":\"SUCCESS\",\"count\":2}"));
    ck_assert_ptr_nonnull(
        strstr(r.body, "{\"gateway\":\"json\",\"reason\":\"signature_mismatch\",\"count\":1}"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"signature_rejections\":1,"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"double_payments\":1,"));
    h_resp_free(&r);

    h_http_key(h_port(), METRICS_KEY, "GET", "/ops/summary", NULL, NULL, 0, &r);
    h_assert_status(&r, 403);
    h_resp_free(&r);
}
END_TEST

START_TEST(a_payment_is_found_by_its_pay_no)
{
    struct h_resp r;

    h_db_insert_order("CS2", "u1", "899.00", 1);
    h_callback(h_port(), "CS2", "CSP21", "899.00", &r);
    h_resp_free(&r);
    h_http_key(h_port(), READ_KEY, "GET", "/ops/payments/CSP21", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_str_eq("{\"pay_no\":\"CSP21\",\"order_no\":\"CS2\"}", r.body);
    h_resp_free(&r);
    h_http_key(h_port(), READ_KEY, "GET", "/ops/payments/CSP-NONE", NULL, NULL, 0, &r);
    h_assert_status(&r, 404);
    h_assert_str(&r, "code", "PAYMENT_NOT_FOUND");
    h_resp_free(&r);
    h_http_key(h_port(), READ_KEY, "GET", "/ops/payments/a%20b", NULL, NULL, 0, &r);
    h_assert_status(&r, 404);
    h_resp_free(&r);
    h_http_key(h_port(), METRICS_KEY, "GET", "/ops/payments/CSP21", NULL, NULL, 0, &r);
    h_assert_status(&r, 403);
    h_resp_free(&r);
}
END_TEST

START_TEST(without_console_dir_the_console_is_not_served)
{
    struct h_resp r;

    get_raw("/console/", NULL, &r);
    h_assert_status(&r, 404);
    h_assert_str(&r, "code", "NOT_FOUND");
    h_resp_free(&r);
    get_raw("/console/app.js", NULL, &r);
    h_assert_status(&r, 404);
    h_resp_free(&r);
    get_raw("/healthz", NULL, &r); /* the service itself serves */
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

static Suite *console_suite(void)
{
    Suite *s = suite_create("console");
    TCase *tc = h_tcase_with("console", TC_TIMEOUT_S, console_up, h_fixture_server_down);
    TCase *off = h_tcase_with("console off", TC_TIMEOUT_S, console_off_up, h_fixture_server_down);

    tcase_add_test(tc, the_page_and_its_modules_are_served_with_type_etag_and_policy);
    tcase_add_test(tc, no_path_reaches_outside_the_directory);
    tcase_add_test(tc, api_answers_carry_a_policy_of_their_own);
    tcase_add_test(tc, whoami_names_the_key_and_its_scopes_never_the_key);
    tcase_add_test(tc, summary_counts_callbacks_refusals_and_double_payments);
    tcase_add_test(tc, a_payment_is_found_by_its_pay_no);
    suite_add_tcase(s, tc);
    tcase_add_test(off, without_console_dir_the_console_is_not_served);
    suite_add_tcase(s, off);
    return s;
}

CHECK_MAIN(console_suite, NULL, NULL);
