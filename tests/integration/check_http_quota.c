/* check_http_quota.c - the per-client quotas of the anonymous write
 * routes against the real binary: 429 RATE_LIMITED with Retry-After at the
 * configured rate (measured, within 10 %), counted in /metrics, per client
 * (behind a trusted proxy, the client X-Forwarded-For names; an IPv6
 * client by its /64, over a listener on ::1), and HEAD /token/apply
 * issuing nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define TOKEN_RATE 20
#define TOKEN_BURST 5
#define ORDER_RATE 10
#define ORDER_BURST 3
#define MEASURE_MS 4000

static void quota_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_QUOTA_TOKEN_RATE=20",
        "PAYCALLBACK_QUOTA_TOKEN_BURST=5",
        "PAYCALLBACK_QUOTA_ORDER_RATE=10",
        "PAYCALLBACK_QUOTA_ORDER_BURST=3",
        "PAYCALLBACK_HTTP_TRUSTED_PROXIES=127.0.0.1",
        NULL,
    };

    h_fixture_server_up_env(env);
}

/* Sends method path (with body, and X-Forwarded-For xff unless NULL) as
 * fast as it is answered for MEASURE_MS; counts what got through and what
 * was refused 429, and checks every refusal's shape. Returns the rate that
 * got through, per second, between the first and the last refusal: the
 * bucket is empty at both, so what it granted in between is the rate times
 * the time the client offered requests, whatever the burst and however
 * late the first request was served. A gap between two answers longer
 * than burst/rate (a starved machine serves nothing for a while) counts as
 * burst/rate: a full bucket holds no more, so the rate measured is the
 * service's and not the machine's. *window_ms is the time measured over. */
static double hammer(const char *method, const char *path, const char *body, const char *xff,
                     int rate, int burst, long long *ok_out, long long *refused_out,
                     long long *window_ms)
{
    char hdr[96];
    const char *headers[] = { "Content-Type: application/json", xff ? hdr : NULL, NULL };
    const long long full_us = burst * 1000000LL / rate;
    long long t0 = h_now_us(), prev = t0, now, ok = 0, refused = 0;
    long long granted = 0, window_us = 0, since_ok = 0, since_us = 0;
    struct h_resp r;

    snprintf(hdr, sizeof hdr, "X-Forwarded-For: %s", xff ? xff : "");
    while (h_now_us() - t0 < MEASURE_MS * 1000LL) {
        h_http(h_port(), method, path, headers, body, body ? strlen(body) : 0, &r);
        now = h_now_us();
        since_us += now - prev < full_us ? now - prev : full_us;
        prev = now;
        ck_assert_msg(r.status != 0, "no answer: %s", r.err);
        if (r.status == 429) {
            const char *ra = h_resp_header(&r, "Retry-After");
            ck_assert_msg(h_check_error(&r, 429, "RATE_LIMITED") == NULL, "%s",
                          h_check_error(&r, 429, "RATE_LIMITED"));
            ck_assert_msg(ra != NULL && atoi(ra) >= 1, "429 without Retry-After");
            if (refused++ > 0) {
                granted += since_ok;
                window_us += since_us;
            }
            since_ok = 0;
            since_us = 0;
        } else {
            ok++;
            since_ok++;
        }
        h_resp_free(&r);
    }
    *ok_out = ok;
    *refused_out = refused;
    *window_ms = window_us / 1000;
    return window_us > 0 ? (double)granted / (window_us / 1e6) : 0;
}

START_TEST(token_requests_past_the_rate_are_429_at_the_configured_rate)
{
    long long ok, refused, window_ms;
    long long before = h_metric("paycallback_http_quota_refusals_total{route=\"token\"}");
    double rate = hammer("POST", "/token/apply", NULL, "192.0.2.10", TOKEN_RATE, TOKEN_BURST, &ok,
                         &refused, &window_ms);

    printf("token quota %d/s burst %d: %lld issued, %lld refused 429 in %d ms: %.2f/s over "
           "%lld ms between refusals\n",
           TOKEN_RATE, TOKEN_BURST, ok, refused, MEASURE_MS, rate, window_ms);
    ck_assert_int_gt(refused, 0);
    ck_assert_msg(rate >= TOKEN_RATE * 0.9 && rate <= TOKEN_RATE * 1.1,
                  "%.2f/s got through, configured %d/s", rate, TOKEN_RATE);
    ck_assert_int_eq(before < 0 ? refused : before + refused,
                     h_metric("paycallback_http_quota_refusals_total{route=\"token\"}"));
}
END_TEST

START_TEST(order_creates_past_the_rate_are_429_at_the_configured_rate)
{
    long long ok, refused, window_ms;
    double rate = hammer("POST", "/order/create", "{}", "192.0.2.11", ORDER_RATE, ORDER_BURST, &ok,
                         &refused, &window_ms);

    printf("order quota %d/s burst %d: %lld through (answered by the handler), %lld refused "
           "429 in %d ms: %.2f/s over %lld ms between refusals\n",
           ORDER_RATE, ORDER_BURST, ok, refused, MEASURE_MS, rate, window_ms);
    ck_assert_msg(rate >= ORDER_RATE * 0.9 && rate <= ORDER_RATE * 1.1,
                  "%.2f/s got through, configured %d/s", rate, ORDER_RATE);
    ck_assert_int_gt(h_metric("paycallback_http_quota_refusals_total{route=\"order\"}"), 0);
}
END_TEST

START_TEST(head_token_apply_issues_no_token)
{
    static const char req[] = "HEAD /token/apply HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[4096];
    int fd = h_raw_connect(h_port(), NULL, 5000), eof;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)sizeof(req) - 1, (int)send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL));
    h_raw_read_all(fd, buf, sizeof buf, &eof);
    close(fd);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 405", 12) == 0, "HEAD answered: %.40s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "Allow: GET, POST\r\n"));
}
END_TEST

/* ---- one bucket per client: a slow rate, so a refill between two requests
 * cannot pass for a bucket of its own ---------------------------------------- */

#define SLOW_BURST 5

/* The servers of these tests: 1 token a second, a burst of SLOW_BURST,
 * behind a trusted proxy at the loopback address they listen on. */
static void slow_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_QUOTA_TOKEN_RATE=1",
        "PAYCALLBACK_QUOTA_TOKEN_BURST=5",
        "PAYCALLBACK_HTTP_TRUSTED_PROXIES=127.0.0.1",
        NULL,
    };

    h_fixture_server_up_env(env);
}

static void v6_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_LISTEN_ADDRESS=::1",
        "PAYCALLBACK_QUOTA_TOKEN_RATE=1",
        "PAYCALLBACK_QUOTA_TOKEN_BURST=5",
        "PAYCALLBACK_HTTP_TRUSTED_PROXIES=::1",
        NULL,
    };

    h_fixture_server_up_env(env);
}

/* POST /token/apply to [::1]:port, as forwarded for xff (NULL: none);
 * the HTTP status, or -1 when no answer came. */
static int v6_token(const char *xff)
{
    struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
                               .sin6_port = htons((uint16_t)h_port()),
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    struct timeval tv = { 10, 0 };
    char req[256], buf[512];
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), n, status = -1, eof = 0;
    size_t got;

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    n = snprintf(req, sizeof req,
                 "POST /token/apply HTTP/1.1\r\nHost: [::1]\r\n%s%s%sContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n",
                 xff ? "X-Forwarded-For: " : "", xff ? xff : "", xff ? "\r\n" : "");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
        got = h_raw_read_all(fd, buf, sizeof buf - 1, &eof);
        buf[got] = '\0';
        if (strncmp(buf, "HTTP/1.1 ", 9) == 0)
            status = atoi(buf + 9);
    }
    close(fd);
    return status;
}

/* POST /token/apply as forwarded for xff (NULL: none), over IPv6 when v6;
 * the HTTP status, or -1 when no answer came. */
static int slow_token(int v6, const char *xff)
{
    char hdr[96];
    const char *headers[] = { hdr, NULL };
    struct h_resp r;
    int st;

    if (v6)
        return v6_token(xff);
    snprintf(hdr, sizeof hdr, "X-Forwarded-For: %s", xff ? xff : "");
    st = h_http(h_port(), "POST", "/token/apply", xff ? headers : NULL, NULL, 0, &r) == 0 ? r.status
                                                                                          : -1;
    h_resp_free(&r);
    return st;
}

/* Requests of xff until the first 429 (at most 3 bursts); asserts it came. */
static void exhaust(int v6, const char *xff)
{
    int i, st = 0;

    for (i = 0; i < 3 * SLOW_BURST && st != 429; i++) {
        st = slow_token(v6, xff);
        ck_assert_msg(st == 200 || st == 429, "%s: answered %d", xff ? xff : "the proxy", st);
    }
    ck_assert_msg(st == 429, "%s was never refused", xff ? xff : "the proxy");
}

/* How many of SLOW_BURST requests of xff got a token: all of them from a
 * full bucket; from one just emptied, only what 1/s refilled meanwhile. */
static int granted(int v6, const char *xff)
{
    int i, ok = 0;

    for (i = 0; i < SLOW_BURST; i++)
        ok += slow_token(v6, xff) == 200;
    return ok;
}

/* Behind a trusted proxy, each client named in X-Forwarded-For has its own
 * bucket; entries a client wrote itself (left of the proxy's) are ignored. */
START_TEST(forwarded_clients_have_their_own_buckets)
{
    int forged, other;

    exhaust(0, "198.51.100.1");
    forged = granted(0, "203.0.113.9, 198.51.100.1"); /* the bucket just emptied */
    other = granted(0, "198.51.100.2");
    printf("forwarded clients: %d of %d granted to a forged entry before the emptied client, "
           "%d of %d to another client\n",
           forged, SLOW_BURST, other, SLOW_BURST);
    ck_assert_int_eq(SLOW_BURST, other);
    ck_assert_msg(forged < SLOW_BURST, "the forged entry had a full bucket of its own");
}
END_TEST

/* The service listening on ::1, behind a trusted proxy at ::1: the quota
 * counts an IPv6 client by its /64 (http.ipv6_prefix), so a host that
 * walks its /64 is one client, and the next /64 is another. */
START_TEST(ipv6_clients_are_counted_by_their_64_over_an_ipv6_listener)
{
    int same, other;

    exhaust(1, NULL); /* the proxy itself, over IPv6 */
    exhaust(1, "2001:db8:0:1::a");
    same = granted(1, "2001:db8:0:1:ffff:ffff:ffff:ffff");
    other = granted(1, "2001:db8:0:2::a");
    printf("ipv6 quota: %d of %d granted in the same /64 after it was emptied, %d of %d in "
           "the next /64\n",
           same, SLOW_BURST, other, SLOW_BURST);
    ck_assert_int_eq(SLOW_BURST, other);
    ck_assert_msg(same < SLOW_BURST, "the same /64 had a full bucket of its own");
}
END_TEST

static Suite *quota_suite(void)
{
    Suite *s = suite_create("http_quota");
    TCase *tc = tcase_create("quotas");

    tcase_add_unchecked_fixture(tc, quota_server_up, h_fixture_server_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, token_requests_past_the_rate_are_429_at_the_configured_rate);
    tcase_add_test(tc, order_creates_past_the_rate_are_429_at_the_configured_rate);
    tcase_add_test(tc, head_token_apply_issues_no_token);
    suite_add_tcase(s, tc);

    tc = tcase_create("a bucket per forwarded client");
    tcase_add_unchecked_fixture(tc, slow_server_up, h_fixture_server_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, forwarded_clients_have_their_own_buckets);
    suite_add_tcase(s, tc);

    tc = tcase_create("over IPv6");
    tcase_add_unchecked_fixture(tc, v6_server_up, h_fixture_server_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, ipv6_clients_are_counted_by_their_64_over_an_ipv6_listener);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(quota_suite, NULL, NULL);
