/* check_http_fairness.c - how the connection slots are shared between
 * clients, against the real binary: the reserved part of http.max_connections
 * that only clients holding few connections may take, the eviction of the
 * largest holder's oldest idle connection when every slot is taken, and a
 * trusted proxy that is not capped as one client. Loopback addresses
 * 127.0.0.2 and up stand for other clients. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define TOTAL_CAP 16
#define POLL_MS 20
#define SETTLE_MS 300 /* refused connections are closed well within it */
#define CONNECT_MS 5000

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Polls until the peer closes fd or timeout_ms pass. 1 when it closed. */
static int wait_closed(int fd, int timeout_ms)
{
    long long until = h_now_us() + (long long)timeout_ms * 1000;

    while (h_now_us() < until) {
        if (h_raw_closed(fd))
            return 1;
        sleep_ms(POLL_MS);
    }
    return h_raw_closed(fd);
}

/* Sends all of s; 0, or -1 once the peer has gone. */
static int send_all(int fd, const char *s)
{
    size_t len = strlen(s);

    while (len > 0) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        s += n;
        len -= (size_t)n;
    }
    return 0;
}

/* n connections from src into fds; asserts each connect. */
static void open_from(const char *src, int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        fds[i] = h_raw_connect(h_port(), src, CONNECT_MS);
        ck_assert_msg(fds[i] >= 0, "connect %d from %s: %s", i, src, strerror(errno));
    }
}

/* How many of fds the server has closed once refusals had time to land. */
static int closed_after_settling(const int *fds, int n)
{
    int closed = 0;

    sleep_ms(SETTLE_MS);
    for (int i = 0; i < n; i++)
        closed += h_raw_closed(fds[i]);
    return closed;
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* A request from 127.0.0.1 (the harness's own client) is answered. */
static void assert_served(const char *when)
{
    struct h_resp r;

    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    ck_assert_msg(r.status == 200, "%s: the legitimate client got %d (%s)", when, r.status, r.err);
    h_resp_free(&r);
}

/* ---- the reserved part ---------------------------------------------------- */

static void reserve_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_MAX_CONNECTIONS=16",      "PAYCALLBACK_HTTP_MAX_CONNECTIONS_PER_IP=0",
        "PAYCALLBACK_HTTP_RESERVED_PERCENT=25",     "PAYCALLBACK_HTTP_RESERVED_BELOW=2",
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=60000", NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(few_addresses_cannot_take_the_reserved_part)
{
    int a[TOTAL_CAP], b[TOTAL_CAP], closed;

    /* Two addresses try for every slot: they get the shared 12 at most
     * (plus what admitting threads overshoot), never the reserved 4. */
    open_from("127.0.0.2", a, TOTAL_CAP);
    open_from("127.0.0.3", b, TOTAL_CAP);
    closed = closed_after_settling(a, TOTAL_CAP) + closed_after_settling(b, TOTAL_CAP);
    printf("reserve: 2 addresses opened %d connections, %d refused, %d kept\n", 2 * TOTAL_CAP,
           closed, 2 * TOTAL_CAP - closed);
    ck_assert_msg(2 * TOTAL_CAP - closed <= TOTAL_CAP - 4 + 2,
                  "the large holders kept %d connections of %d", 2 * TOTAL_CAP - closed, TOTAL_CAP);
    ck_assert_int_gt(h_metric("paycallback_http_connections_refused_total{reason=\"reserved\"}"),
                     0);
    for (int i = 0; i < 3; i++)
        assert_served("with the shared part full");
    close_all(a, TOTAL_CAP);
    close_all(b, TOTAL_CAP);
}
END_TEST

/* ---- eviction ------------------------------------------------------------ */

static void evict_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_MAX_CONNECTIONS=16",      "PAYCALLBACK_HTTP_MAX_CONNECTIONS_PER_IP=0",
        "PAYCALLBACK_HTTP_RESERVED_PERCENT=0",      "PAYCALLBACK_HTTP_RESERVED_BELOW=2",
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=60000", NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(full_registry_evicts_the_largest_holders_oldest_waiting_connection)
{
    long long before = h_metric("paycallback_http_connections_evicted_total");
    int a[TOTAL_CAP], busy;

    /* The holder's oldest connection is in the middle of a request (part
     * of a body sent): never the one cut. Its next oldest waits for its
     * headers. Each is older than the next for sure: a request answered
     * after a connection was opened was accepted after it. */
    open_from("127.0.0.2", &busy, 1);
    ck_assert_int_eq(0, send_all(busy, "POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                                       "Content-Length: 100\r\n\r\n{"));
    assert_served("before the registry fills");
    open_from("127.0.0.2", a, 1);
    assert_served("before the registry fills");
    open_from("127.0.0.2", a + 1, TOTAL_CAP - 2);
    ck_assert_int_eq(0, closed_after_settling(a, TOTAL_CAP - 1));

    /* Every slot is taken by 127.0.0.2: a newcomer makes room. */
    assert_served("with every slot taken by one address");
    ck_assert_msg(wait_closed(a[0], 2000), "the oldest waiting connection was not evicted");
    ck_assert_int_eq(0, h_raw_closed(a[TOTAL_CAP - 2]));
    ck_assert_int_eq(0, h_raw_closed(busy));
    ck_assert_int_gt(h_metric("paycallback_http_connections_evicted_total"), before);
    close_all(a, TOTAL_CAP - 1);
    close(busy);
}
END_TEST

/* ---- a trusted proxy ------------------------------------------------------ */

static void proxy_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_MAX_CONNECTIONS_PER_IP=8",
        "PAYCALLBACK_HTTP_TRUSTED_PROXIES=127.0.0.4, 10.0.0.0/8",
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=60000",
        NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(trusted_proxy_is_not_capped_as_one_client)
{
    int p[20], other[12];

    open_from("127.0.0.4", p, 20);
    open_from("127.0.0.5", other, 12);
    ck_assert_int_eq(0, closed_after_settling(p, 20));
    ck_assert_int_ge(closed_after_settling(other, 12), 3); /* 8 kept, give or take overshoot */
    close_all(p, 20);
    close_all(other, 12);
}
END_TEST

static TCase *tcase(const char *name, void (*up)(void))
{
    TCase *tc = tcase_create(name);

    tcase_add_unchecked_fixture(tc, up, h_fixture_server_down);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    return tc;
}

static Suite *fairness_suite(void)
{
    Suite *s = suite_create("http_fairness");
    TCase *tc;

    tc = tcase("the reserved part", reserve_server_up);
    tcase_add_test(tc, few_addresses_cannot_take_the_reserved_part);
    suite_add_tcase(s, tc);
    tc = tcase("eviction", evict_server_up);
    tcase_add_test(tc, full_registry_evicts_the_largest_holders_oldest_waiting_connection);
    suite_add_tcase(s, tc);
    tc = tcase("a trusted proxy", proxy_server_up);
    tcase_add_test(tc, trusted_proxy_is_not_capped_as_one_client);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(fairness_suite, NULL, NULL);
