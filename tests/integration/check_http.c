/* check_http.c - the HTTP layer of the real binary: operations endpoints,
 * routing (404, 405 + Allow), the body cap (413, also for chunked uploads),
 * malformed requests, JSON error bodies, and a clean exit on SIGTERM.
 * Nothing here writes to MySQL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 30
#define BODY_MAX_BYTES 1024 /* the cap of the small-body server */
#define OVER_LIMIT_BYTES 2000

static void small_body_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_BODY_MAX_BYTES=1024", NULL };

    h_fixture_server_up_env(env);
}

/* A body of exactly n bytes: a JSON object padded with spaces. */
static char *padded_body(size_t n)
{
    static const char head[] = "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00\"";
    char *b = malloc(n + 1);

    ck_assert_ptr_nonnull(b);
    ck_assert_uint_ge(n, sizeof head);
    memcpy(b, head, sizeof head - 1);
    memset(b + sizeof head - 1, ' ', n - sizeof head);
    b[n - 1] = '}';
    b[n] = '\0';
    return b;
}

/* 1 when the comma-separated Allow value lists method. */
static int allows(const struct h_resp *r, const char *method)
{
    const char *allow = h_resp_header(r, "Allow");
    size_t n = strlen(method);

    for (const char *p = allow; p != NULL && (p = strstr(p, method)) != NULL; p += n)
        if ((p == allow || p[-1] == ' ' || p[-1] == ',') &&
            (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return 1;
    return 0;
}

/* The first occurrence of needle in hay, ignoring case, or NULL. */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);

    for (; *hay != '\0'; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return hay;
    return NULL;
}

/* What a HEAD request got: status, the Content-Length it announced, and
 * how many bytes followed the header block. */
struct head_reply {
    int status;
    long content_length; /* -1 when absent */
    size_t body_bytes;
};

static void head_request(const char *path, struct head_reply *out)
{
    char req[512], buf[8192];
    const char *end, *cl;
    int fd, eof;
    size_t len;

    out->status = 0;
    out->content_length = -1;
    out->body_bytes = 0;
    snprintf(req, sizeof req,
             "HEAD %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
             "Authorization: Bearer " H_OPERATOR_KEY "\r\n\r\n",
             path);
    fd = h_raw_connect(h_port(), NULL, 10000);
    ck_assert_msg(fd >= 0, "cannot connect: %s", strerror(errno));
    ck_assert_int_eq((ssize_t)strlen(req), send(fd, req, strlen(req), MSG_NOSIGNAL));
    len = h_raw_read_all(fd, buf, sizeof buf, &eof);
    close(fd);
    ck_assert_msg((end = strstr(buf, "\r\n\r\n")) != NULL, "no header end in: %s", buf);
    sscanf(buf, "HTTP/1.1 %d", &out->status);
    if ((cl = find_ci(buf, "\r\nContent-Length:")) != NULL && cl < end)
        out->content_length = strtol(cl + 17, NULL, 10);
    out->body_bytes = len - (size_t)(end + 4 - buf);
}

/* ---- operations ---------------------------------------------------------- */

START_TEST(healthz_answers_200_with_a_json_object)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_json(&r);
    ck_assert_msg(h_json_is_object(r.body), "expected a JSON object: %s", r.body);
    h_resp_free(&r);
}
END_TEST

START_TEST(query_string_does_not_change_the_route)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/healthz?probe=1", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_json(&r);
    h_resp_free(&r);
}
END_TEST

START_TEST(readyz_answers_200_while_mysql_is_up)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_json(&r);
    ck_assert_msg(h_json_is_object(r.body), "expected a JSON object: %s", r.body);
    h_resp_free(&r);
}
END_TEST

START_TEST(metrics_are_prometheus_text)
{
    struct h_resp r;
    const char *ct;

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ct = h_resp_header(&r, "Content-Type");
    ck_assert_msg(ct != NULL && strncmp(ct, "text/plain", 10) == 0,
                  "expected Content-Type text/plain, got %s", ct ? ct : "(none)");
    ck_assert_msg(strstr(r.body, "# TYPE ") != NULL, "expected # TYPE lines: %.300s", r.body);
    h_resp_free(&r);
}
END_TEST

/* ---- routing ------------------------------------------------------------- */

static const struct {
    const char *method;
    const char *path;
} unknown_routes[] = {
    { "GET", "/" },      { "GET", "/nope" },
    { "POST", "/nope" }, { "POST", "/pay/callback/extra" },
    { "POST", "/pay" },  { "GET", "/HEALTHZ" },
};

START_TEST(unknown_path_is_404_not_found)
{
    struct h_resp r;

    h_http(h_port(), unknown_routes[_i].method, unknown_routes[_i].path, NULL, NULL, 0, &r);
    ck_assert_msg(h_check_error(&r, 404, "NOT_FOUND") == NULL, "%s %s: %s",
                  unknown_routes[_i].method, unknown_routes[_i].path,
                  h_check_error(&r, 404, "NOT_FOUND"));
    h_resp_free(&r);
}
END_TEST

static const struct {
    const char *method;
    const char *path;
    const char *allowed;
} wrong_methods[] = {
    { "GET", "/pay/callback", "POST" },    { "PUT", "/pay/callback", "POST" },
    { "DELETE", "/pay/callback", "POST" }, { "POST", "/healthz", "GET" },
    { "DELETE", "/metrics", "GET" },       { "GET", "/order/create", "POST" },
    { "POST", "/metrics", "HEAD" },
};

START_TEST(wrong_method_is_405_with_allow)
{
    struct h_resp r;

    h_http(h_port(), wrong_methods[_i].method, wrong_methods[_i].path, NULL, NULL, 0, &r);
    ck_assert_msg(h_check_error(&r, 405, NULL) == NULL, "%s %s: %s", wrong_methods[_i].method,
                  wrong_methods[_i].path, h_check_error(&r, 405, NULL));
    ck_assert_msg(allows(&r, wrong_methods[_i].allowed), "%s %s: expected Allow to list %s, got %s",
                  wrong_methods[_i].method, wrong_methods[_i].path, wrong_methods[_i].allowed,
                  h_resp_header(&r, "Allow") ? h_resp_header(&r, "Allow") : "(none)");
    h_resp_free(&r);
}
END_TEST

START_TEST(get_on_order_create_is_405_not_an_order_lookup)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/order/create", NULL, NULL, 0, &r);
    h_assert_error(&r, 405, NULL);
    ck_assert_msg(allows(&r, "POST"), "expected Allow to list POST, got %s",
                  h_resp_header(&r, "Allow") ? h_resp_header(&r, "Allow") : "(none)");
    ck_assert_msg(!allows(&r, "GET"), "Allow must not list GET: %s", h_resp_header(&r, "Allow"));
    h_resp_free(&r);
}
END_TEST

START_TEST(escaped_slash_does_not_reach_another_route)
{
    struct h_resp r;

    h_db_insert_order("PATHX1", "u1", "899.00", 1);
    h_http(h_port(), "POST", "/order/PATHX1%2Fcancel", NULL, "{}", 2, &r);
    ck_assert_msg(r.status == 400 || r.status == 404, "expected 400 or 404, got %d: %s", r.status,
                  r.body);
    h_assert_json(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'PATHX1'"));
    h_http(h_port(), "POST", "/order/PATHX1%2fcancel", NULL, "{}", 2, &r);
    ck_assert_msg(r.status == 400 || r.status == 404, "lowercase escape: got %d", r.status);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'PATHX1'"));
}
END_TEST

START_TEST(escaped_nul_does_not_cut_the_path)
{
    struct h_resp r;

    h_db_insert_order("PATHA1", "u1", "899.00", 1);
    h_http(h_port(), "GET", "/order/PATHA1%00junk", NULL, NULL, 0, &r);
    ck_assert_msg(r.status == 400 || r.status == 404, "expected 400 or 404, got %d: %s", r.status,
                  r.body);
    h_assert_json(&r);
    ck_assert_msg(strstr(r.body, "PATHA1") == NULL, "order PATHA1 was shown: %s", r.body);
    h_resp_free(&r);
}
END_TEST

static const char *const bad_escapes[] = {
    "/order/A%zz", "/order/A%4", "/order/A%", "/healthz%2F", "/order/%2F/ship",
};

START_TEST(malformed_or_escaped_separator_path_is_400_json)
{
    struct h_resp r;

    h_http(h_port(), "GET", bad_escapes[_i], NULL, NULL, 0, &r);
    ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "%s: %s", bad_escapes[_i],
                  h_check_error(&r, 400, "BAD_REQUEST"));
    h_resp_free(&r);
}
END_TEST

START_TEST(escaped_letters_route_like_plain_ones)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/%68ealthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

START_TEST(path_longer_than_the_limit_is_414_json)
{
    char path[2100];

    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    struct h_resp r;

    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_error(&r, 414, NULL);
    h_resp_free(&r);
}
END_TEST

/* ---- HEAD ---------------------------------------------------------------- */

static const char *const head_paths[] = { "/healthz", "/readyz", "/metrics", "/order/HEAD1",
                                          "/order/NOSUCHORDER" };

START_TEST(head_answers_like_get_without_a_body)
{
    struct head_reply hr;
    struct h_resp r;

    h_db_insert_order("HEAD1", "u1", "899.00", 1);
    h_http(h_port(), "GET", head_paths[_i], NULL, NULL, 0, &r);
    ck_assert_msg(r.status != 0, "GET %s failed: %s", head_paths[_i], r.err);
    head_request(head_paths[_i], &hr);
    ck_assert_msg(r.status == hr.status, "HEAD %s: expected %d like GET, got %d", head_paths[_i],
                  r.status, hr.status);
    ck_assert_msg(hr.status != 405, "HEAD %s is not routed", head_paths[_i]);
    ck_assert_msg(0 == hr.body_bytes, "HEAD %s sent %zu body bytes", head_paths[_i], hr.body_bytes);
    ck_assert_msg(hr.content_length > 0, "HEAD %s: expected the GET body's Content-Length",
                  head_paths[_i]);
    h_resp_free(&r);
}
END_TEST

START_TEST(head_on_a_post_route_is_405)
{
    struct head_reply hr;

    head_request("/pay/callback", &hr);
    ck_assert_int_eq(405, hr.status);
    ck_assert_uint_eq(0, hr.body_bytes);
}
END_TEST

/* ---- malformed requests -------------------------------------------------- */

START_TEST(unsigned_callback_is_401_json)
{
    static const char body[] = "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}";
    static const char *const headers[] = { "Content-Type: application/json", NULL };
    struct h_resp r;

    h_http(h_port(), "POST", "/pay/callback", headers, body, strlen(body), &r);
    h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
}
END_TEST

START_TEST(signed_callback_that_is_not_json_is_400_json)
{
    static const char body[] = "<xml>not json</xml>";
    struct h_resp r;

    h_post_callback(h_port(), H_SECRET, (long long)time(NULL), body, strlen(body), &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
}
END_TEST

/* libmicrohttpd answers these itself, before any of our code runs, so only
 * the status is ours to check, not the body. */
START_TEST(malformed_request_line_is_answered_400)
{
    static const char req[] = "GET  HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    struct h_resp r;

    h_http_raw(h_port(), req, strlen(req), &r);
    h_assert_status(&r, 400);
    h_resp_free(&r);
}
END_TEST

START_TEST(garbage_request_does_not_stop_the_server)
{
    static const char garbage[] = "GARBAGE\r\n\r\n";
    struct h_resp r;

    /* Refused either with a 400 or by closing the connection unanswered. */
    h_http_raw(h_port(), garbage, strlen(garbage), &r);
    ck_assert_msg(r.status == 400 || (r.status == 0 && r.body_len == 0),
                  "expected 400 or a closed connection, got %d %s: %s", r.status, r.err, r.body);
    h_resp_free(&r);
    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}
END_TEST

/* ---- body cap ------------------------------------------------------------ */

START_TEST(body_over_the_limit_is_413_json)
{
    char *body = padded_body(OVER_LIMIT_BYTES);
    struct h_resp r;

    h_post_callback(h_port(), H_SECRET, (long long)time(NULL), body, OVER_LIMIT_BYTES, &r);
    h_assert_error(&r, 413, NULL);
    h_resp_free(&r);
    free(body);
}
END_TEST

START_TEST(chunked_body_over_the_limit_is_413_json)
{
    char *body = padded_body(OVER_LIMIT_BYTES);
    size_t half = OVER_LIMIT_BYTES / 2, n;
    char *req = malloc(OVER_LIMIT_BYTES + 512);
    struct h_resp r;

    ck_assert_ptr_nonnull(req);
    n = (size_t)sprintf(req,
                        "POST /pay/callback HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Connection: close\r\nContent-Type: application/json\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n%zx\r\n",
                        half);
    memcpy(req + n, body, half);
    n += half;
    n += (size_t)sprintf(req + n, "\r\n%zx\r\n", (size_t)OVER_LIMIT_BYTES - half);
    memcpy(req + n, body + half, OVER_LIMIT_BYTES - half);
    n += OVER_LIMIT_BYTES - half;
    n += (size_t)sprintf(req + n, "\r\n0\r\n\r\n");
    h_http_raw(h_port(), req, n, &r);
    h_assert_error(&r, 413, NULL);
    h_resp_free(&r);
    free(req);
    free(body);
}
END_TEST

START_TEST(declared_length_over_the_limit_is_413_before_the_body)
{
    static const char req[] = "POST /pay/callback HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Connection: close\r\nContent-Type: application/json\r\n"
                              "Content-Length: 1000000000\r\n\r\n";
    struct h_resp r;

    /* No body follows: a server that waited for it would time out here. */
    h_http_raw(h_port(), req, strlen(req), &r);
    h_assert_error(&r, 413, NULL);
    h_resp_free(&r);
}
END_TEST

START_TEST(body_at_the_limit_passes_the_cap)
{
    static const char *const headers[] = { "Content-Type: application/json", NULL };
    char *body = padded_body(BODY_MAX_BYTES);
    struct h_resp r;

    /* Unsigned, so the next check along answers: proof the cap let it in. */
    h_http(h_port(), "POST", "/pay/callback", headers, body, BODY_MAX_BYTES, &r);
    h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
    free(body);
}
END_TEST

START_TEST(server_keeps_serving_after_413)
{
    char *body = padded_body(OVER_LIMIT_BYTES);
    struct h_resp r;

    for (int i = 0; i < 3; i++) {
        h_post_callback(h_port(), H_SECRET, (long long)time(NULL), body, OVER_LIMIT_BYTES, &r);
        h_assert_status(&r, 413);
        h_resp_free(&r);
    }
    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    free(body);
}
END_TEST

/* ---- graceful stop ------------------------------------------------------- */

START_TEST(sigterm_stops_the_server_with_exit_code_0)
{
    struct h_server *own = h_server_start(NULL);
    struct h_resp r;
    int p;

    ck_assert_msg(own != NULL, "cannot start the server; see var/test-logs/");
    p = h_server_port(own);
    h_http(p, "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_server_stop(own));
    ck_assert_int_eq(-1, h_http(p, "GET", "/healthz", NULL, NULL, 0, &r));
    h_resp_free(&r);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static TCase *tcase(const char *name, void (*up)(void))
{
    TCase *tc = tcase_create(name);

    if (up != NULL)
        tcase_add_unchecked_fixture(tc, up, h_fixture_server_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    return tc;
}

static Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc;

    tc = tcase("operations endpoints answer", h_fixture_server_up);
    tcase_add_test(tc, healthz_answers_200_with_a_json_object);
    tcase_add_test(tc, query_string_does_not_change_the_route);
    tcase_add_test(tc, readyz_answers_200_while_mysql_is_up);
    tcase_add_test(tc, metrics_are_prometheus_text);
    suite_add_tcase(s, tc);

    tc = tcase("routing answers 404 and 405 in JSON", h_fixture_server_up);
    tcase_add_loop_test(tc, unknown_path_is_404_not_found, 0,
                        (int)(sizeof unknown_routes / sizeof unknown_routes[0]));
    tcase_add_loop_test(tc, wrong_method_is_405_with_allow, 0,
                        (int)(sizeof wrong_methods / sizeof wrong_methods[0]));
    suite_add_tcase(s, tc);

    tc = h_tcase("routing works on the decoded path", TC_TIMEOUT_S);
    tcase_add_test(tc, get_on_order_create_is_405_not_an_order_lookup);
    tcase_add_test(tc, escaped_slash_does_not_reach_another_route);
    tcase_add_test(tc, escaped_nul_does_not_cut_the_path);
    tcase_add_loop_test(tc, malformed_or_escaped_separator_path_is_400_json, 0,
                        (int)(sizeof bad_escapes / sizeof bad_escapes[0]));
    tcase_add_test(tc, escaped_letters_route_like_plain_ones);
    tcase_add_test(tc, path_longer_than_the_limit_is_414_json);
    suite_add_tcase(s, tc);

    tc = h_tcase("HEAD answers like GET without a body", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, head_answers_like_get_without_a_body, 0,
                        (int)(sizeof head_paths / sizeof head_paths[0]));
    tcase_add_test(tc, head_on_a_post_route_is_405);
    suite_add_tcase(s, tc);

    tc = tcase("bad requests get JSON errors", h_fixture_server_up);
    tcase_add_test(tc, unsigned_callback_is_401_json);
    tcase_add_test(tc, signed_callback_that_is_not_json_is_400_json);
    tcase_add_test(tc, malformed_request_line_is_answered_400);
    tcase_add_test(tc, garbage_request_does_not_stop_the_server);
    suite_add_tcase(s, tc);

    tc = tcase("the body cap answers 413", small_body_server_up);
    tcase_add_test(tc, body_over_the_limit_is_413_json);
    tcase_add_test(tc, chunked_body_over_the_limit_is_413_json);
    tcase_add_test(tc, declared_length_over_the_limit_is_413_before_the_body);
    tcase_add_test(tc, body_at_the_limit_passes_the_cap);
    tcase_add_test(tc, server_keeps_serving_after_413);
    suite_add_tcase(s, tc);

    tc = tcase("SIGTERM stops cleanly", NULL);
    tcase_add_test(tc, sigterm_stops_the_server_with_exit_code_0);
    suite_add_tcase(s, tc);

    return s;
}

CHECK_MAIN(http_suite, NULL, NULL);
