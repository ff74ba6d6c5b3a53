/* check_http_limits.c - what keeps the real binary up under abuse and on a
 * bad day: connection caps (global and per client address, refused at
 * once), true header and body deadlines, request framing that cannot be
 * smuggled, JSON for every error it can answer itself, an exclusive listen
 * port, the open-file limit check, and bounded answers while MariaDB is
 * frozen. Latencies are printed, never asserted. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 60
#define FROZEN_TIMEOUT_S 120
#define ATTACK_ADDR "127.0.0.2" /* another client, as far as the server sees */
#define PER_IP_CAP 8
#define GLOBAL_CAP 16
#define DEADLINE_MS 500
#define TRICKLE_MS 100        /* one byte per tick */
#define TRICKLE_MAX_BYTES 100 /* 10 s of trickling, 20 deadlines */
#define SLOW_CONNS 3000
#define LEGIT_REQUESTS 20
#define POLL_MS 20
#define WAIT_MS 10000
#define FROZEN_CALLS 48
#define FROZEN_THREADS 48

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Sends all of s; 0, or -1 once the peer has gone. */
static int send_str(int fd, const char *s)
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

/* Number of HTTP status lines in buf. */
static int count_replies(const char *buf)
{
    int n = 0;

    for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
        n++;
    return n;
}

/* The sum of every sample of /metrics whose line starts with prefix
 * (name and labels up to the value); 0 when there is none. */
static long long metric_sum(const char *prefix)
{
    struct h_resp r;
    long long sum = 0;
    size_t n = strlen(prefix);

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    for (const char *line = r.body; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        if (strncmp(line, prefix, n) == 0 && line[n] == ' ')
            sum += strtoll(line + n + 1, NULL, 10);
        line = eol != NULL ? eol + 1 : NULL;
    }
    h_resp_free(&r);
    return sum;
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

/* ---- connection caps ----------------------------------------------------- */

static void capped_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_MAX_CONNECTIONS_PER_IP=8",
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=60000",
        NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(connections_over_the_per_address_cap_are_closed_at_once)
{
    const char *metric =
        "paycallback_http_connections_refused_total{reason=\"max_connections_per_ip\"}";
    long long before = metric_sum(metric), t0, refused_us = -1;
    int fds[PER_IP_CAP], extra;
    struct h_resp r;

    for (int i = 0; i < PER_IP_CAP; i++) {
        fds[i] = h_raw_connect(h_port(), ATTACK_ADDR, 5000);
        ck_assert_msg(fds[i] >= 0, "connect %d: %s", i, strerror(errno));
    }
    /* Accepting threads admit in parallel and may overshoot by one each:
     * a connection that stays open is dropped and the next one tried. */
    for (long long until = h_now_us() + WAIT_MS * 1000LL; refused_us < 0 && h_now_us() < until;) {
        t0 = h_now_us();
        ck_assert_int_ge(extra = h_raw_connect(h_port(), ATTACK_ADDR, 5000), 0);
        if (wait_closed(extra, 500))
            refused_us = h_now_us() - t0;
        close(extra);
    }
    ck_assert_msg(refused_us >= 0, "connections over the per-address cap were kept open");
    printf("per-address cap: refused connection closed %.1f ms after connect\n",
           refused_us / 1000.0);

    /* Another address is served meanwhile. */
    h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_gt(metric_sum(metric), before);
    for (int i = 0; i < PER_IP_CAP; i++)
        close(fds[i]);
}
END_TEST

START_TEST(freed_slots_admit_the_address_again)
{
    int fds[PER_IP_CAP], fd = -1, ok = 0;
    char buf[4096];
    int eof;

    for (int i = 0; i < PER_IP_CAP; i++)
        ck_assert_int_ge(fds[i] = h_raw_connect(h_port(), ATTACK_ADDR, 5000), 0);
    for (int i = 0; i < PER_IP_CAP; i++)
        close(fds[i]);
    for (long long until = h_now_us() + WAIT_MS * 1000LL; !ok && h_now_us() < until;
         sleep_ms(POLL_MS)) {
        if ((fd = h_raw_connect(h_port(), ATTACK_ADDR, 5000)) < 0)
            continue;
        if (send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == 0) {
            h_raw_read_all(fd, buf, sizeof buf, &eof);
            ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
        }
        close(fd);
    }
    ck_assert_msg(ok, "the address was not admitted again after closing its connections");
}
END_TEST

static void small_global_cap_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_MAX_CONNECTIONS=16",      "PAYCALLBACK_HTTP_MAX_CONNECTIONS_PER_IP=0",
        "PAYCALLBACK_HTTP_RESERVED_PERCENT=0", /* the whole cap, for one address */
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=60000", NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(connections_over_the_global_cap_are_closed_at_once)
{
    int fds[GLOBAL_CAP + 8], n = 0, refused = 0;

    /* Fill the cap, then more: the ones over it are closed by the server. */
    for (int i = 0; i < GLOBAL_CAP + 8; i++) {
        fds[i] = h_raw_connect(h_port(), NULL, 5000);
        ck_assert_msg(fds[i] >= 0, "connect %d: %s", i, strerror(errno));
        n++;
    }
    for (int i = 0; i < n; i++)
        refused += wait_closed(fds[i], i < GLOBAL_CAP - 4 ? 50 : 1000);
    printf("global cap %d: %d of %d connections refused\n", GLOBAL_CAP, refused, n);
    ck_assert_msg(refused >= 4, "expected the connections over the cap to be closed, %d were",
                  refused);
    ck_assert_msg(refused <= n - GLOBAL_CAP + 4, "too many refused: %d of %d", refused, n);
    for (int i = 0; i < n; i++)
        close(fds[i]);
}
END_TEST

/* ---- legitimate client under slow connections ------------------------------ */

START_TEST(legit_client_is_served_while_one_address_holds_thousands_of_connections)
{
    static int fds[SLOW_CONNS];
    long long t0, lat, max_us = 0, sum_us = 0;
    int opened = 0;
    struct h_resp r;

    for (int i = 0; i < SLOW_CONNS; i++) {
        fds[i] = h_raw_connect(h_port(), ATTACK_ADDR, 1000);
        if (fds[i] < 0)
            continue;
        opened++;
        send_str(fds[i], "POST /pay/callback HTTP/1.1\r\nHost: x\r\n"); /* and nothing more */
    }
    for (int i = 0; i < LEGIT_REQUESTS; i++) {
        t0 = h_now_us();
        h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
        lat = h_now_us() - t0;
        h_assert_status(&r, 200);
        h_resp_free(&r);
        sum_us += lat;
        if (lat > max_us)
            max_us = lat;
    }
    printf("legit client with %d slow connections from one address open: %d requests, "
           "mean %.2f ms, max %.2f ms\n",
           opened, LEGIT_REQUESTS, sum_us / 1000.0 / LEGIT_REQUESTS, max_us / 1000.0);
    for (int i = 0; i < SLOW_CONNS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}
END_TEST

/* ---- deadlines ----------------------------------------------------------- */

static void deadline_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_HEADER_TIMEOUT_MS=500",
        "PAYCALLBACK_HTTP_BODY_TIMEOUT_MS=500",
        NULL,
    };

    h_fixture_server_up_env(env);
}

/* Trickles s one byte per TRICKLE_MS until the server closes the
 * connection or s runs out. Returns the bytes sent before the close was
 * seen, or -1 when it never closed; *reply gets what the server said. */
static int trickle(int fd, const char *s, char *reply, size_t replysz, long long *took_us)
{
    long long t0 = h_now_us();
    size_t len = strlen(s);
    int eof;

    reply[0] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (h_raw_closed(fd) || send(fd, s + i, 1, MSG_NOSIGNAL) != 1) {
            h_raw_read_all(fd, reply, replysz, &eof);
            *took_us = h_now_us() - t0;
            return (int)i;
        }
        sleep_ms(TRICKLE_MS);
    }
    *took_us = h_now_us() - t0;
    return -1;
}

START_TEST(header_deadline_is_total_not_reset_by_each_byte)
{
    char hdr[TRICKLE_MAX_BYTES + 64], reply[4096];
    long long took;
    int fd, sent;

    snprintf(hdr, sizeof hdr, "GET /healthz HTTP/1.1\r\nX-Slow: ");
    memset(hdr + strlen(hdr), 'a', TRICKLE_MAX_BYTES);
    hdr[sizeof hdr - 1] = '\0';
    ck_assert_int_ge(fd = h_raw_connect(h_port(), NULL, 2000), 0);
    sent = trickle(fd, hdr, reply, sizeof reply, &took);
    close(fd);
    ck_assert_msg(sent >= 0, "a header trickled at one byte per %d ms was never cut off",
                  TRICKLE_MS);
    printf("header deadline %d ms: slow sender cut after %d bytes, %.0f ms\n", DEADLINE_MS, sent,
           took / 1000.0);
    ck_assert_int_gt(metric_sum("paycallback_http_deadline_closes_total{phase=\"header\"}"), 0);
}
END_TEST

START_TEST(idle_connection_is_closed_after_the_header_deadline)
{
    long long t0 = h_now_us();
    int fd = h_raw_connect(h_port(), NULL, 2000);

    ck_assert_int_ge(fd, 0);
    ck_assert_msg(wait_closed(fd, WAIT_MS), "an idle connection was kept open");
    printf("header deadline %d ms: idle connection closed after %.0f ms\n", DEADLINE_MS,
           (h_now_us() - t0) / 1000.0);
    close(fd);
}
END_TEST

START_TEST(body_deadline_is_total_not_reset_by_each_byte)
{
    char head[256], body[TRICKLE_MAX_BYTES + 1], reply[4096];
    long long took;
    int fd, sent;

    snprintf(head, sizeof head,
             "POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
             "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n",
             TRICKLE_MAX_BYTES);
    memset(body, ' ', TRICKLE_MAX_BYTES);
    body[TRICKLE_MAX_BYTES] = '\0';
    ck_assert_int_ge(fd = h_raw_connect(h_port(), NULL, 2000), 0);
    ck_assert_int_eq(0, send_str(fd, head));
    sent = trickle(fd, body, reply, sizeof reply, &took);
    close(fd);
    ck_assert_msg(sent >= 0, "a body trickled at one byte per %d ms was never cut off", TRICKLE_MS);
    printf("body deadline %d ms: slow body cut after %d bytes, %.0f ms: %.40s\n", DEADLINE_MS, sent,
           took / 1000.0, reply);
    /* Cut by a 408 reply when a byte arrived past the deadline, or closed
     * by the reaper; either way never a late 2xx. */
    ck_assert_msg(reply[0] == '\0' || strstr(reply, "HTTP/1.1 408") == reply,
                  "expected 408 or a closed connection, got %.80s", reply);
    if (reply[0] != '\0')
        ck_assert_msg(strstr(reply, "\"REQUEST_TIMEOUT\"") != NULL, "408 not JSON: %s", reply);
}
END_TEST

/* A body trickled below http.min_body_rate_bps is cut once the grace has
 * passed, long before its (here one minute) deadline; a body sent at once
 * on the same server is answered. */
static void body_rate_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_HTTP_BODY_TIMEOUT_MS=60000",
        "PAYCALLBACK_HTTP_MIN_BODY_RATE_BPS=1024",
        "PAYCALLBACK_HTTP_BODY_RATE_GRACE_MS=500",
        NULL,
    };

    h_fixture_server_up_env(env);
}

START_TEST(a_body_below_the_least_rate_is_cut_after_the_grace)
{
    const char *head = "POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{";
    long long cut0 = metric_sum("paycallback_http_deadline_closes_total{phase=\"body_rate\"}");
    long long t0 = h_now_us();
    struct h_resp r;
    int fd;

    ck_assert_int_ge(fd = h_raw_connect(h_port(), NULL, 2000), 0);
    ck_assert_int_eq(0, send_str(fd, head));
    ck_assert_msg(wait_closed(fd, 10000), "a body at 1 byte in 10 s was not cut");
    printf("least body rate 1024 B/s after 500 ms: a trickled body cut after %.0f ms\n",
           (h_now_us() - t0) / 1000.0);
    close(fd);
    ck_assert_int_eq(cut0 + 1,
                     metric_sum("paycallback_http_deadline_closes_total{phase=\"body_rate\"}"));
    h_callback(h_port(), "NO-SUCH-ORDER", "PAY-RATE-1", "1.00", &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

START_TEST(keep_alive_connection_serves_requests_within_the_deadline)
{
    char buf[8192];
    int fd, eof;

    ck_assert_int_ge(fd = h_raw_connect(h_port(), NULL, 5000), 0);
    ck_assert_int_eq(0, send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ck_assert_int_eq(0,
                     send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    h_raw_read_all(fd, buf, sizeof buf, &eof);
    close(fd);
    ck_assert_int_eq(2, count_replies(buf));
}
END_TEST

/* ---- framing and library errors ----------------------------------------- */

/* Sends raw and reads everything the server says until it closes. */
static void exchange(const char *raw, char *buf, size_t sz, int *eof)
{
    int fd = h_raw_connect(h_port(), NULL, 5000);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(0, send_str(fd, raw));
    h_raw_read_all(fd, buf, sz, eof);
    close(fd);
}

START_TEST(content_length_with_transfer_encoding_is_400_and_closes)
{
    static const char smuggle[] = "POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                                  "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[8192];
    int eof;

    exchange(smuggle, buf, sizeof buf, &eof);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400", 12) == 0, "expected 400, got %.80s", buf);
    ck_assert_msg(strstr(buf, "\"code\":\"BAD_REQUEST\"") != NULL, "not JSON: %s", buf);
    ck_assert_msg(1 == count_replies(buf), "the smuggled request was answered: %s", buf);
    ck_assert_int_eq(1, eof);
}
END_TEST

START_TEST(two_content_lengths_are_400)
{
    static const char req[] = "POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                              "Content-Length: 40\r\n\r\n{}";
    char buf[8192];
    int eof;

    exchange(req, buf, sizeof buf, &eof);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400", 12) == 0, "expected 400, got %.80s", buf);
    ck_assert_msg(strstr(buf, "\"code\":\"BAD_REQUEST\"") != NULL, "not JSON: %s", buf);
    ck_assert_int_eq(1, eof);
}
END_TEST

static const char *const codings[] = { "gzip", "chunked, gzip", "identity", "xchunked" };

START_TEST(unknown_transfer_coding_is_501_json)
{
    char req[256], buf[8192];
    int eof;

    snprintf(req, sizeof req,
             "POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
             "Transfer-Encoding: %s\r\n\r\n",
             codings[_i]);
    exchange(req, buf, sizeof buf, &eof);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 501", 12) == 0, "%s: expected 501, got %.80s", codings[_i],
                  buf);
    ck_assert_msg(strstr(buf, "\"code\":\"NOT_IMPLEMENTED\"") != NULL, "not JSON: %s", buf);
    ck_assert_int_eq(1, eof);
}
END_TEST

START_TEST(headers_over_our_limit_are_431_json)
{
    char req[12000], buf[8192];
    int n, eof;

    n = snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(req + n, 'a', 10000);
    strcpy(req + n + 10000, "\r\n\r\n");
    exchange(req, buf, sizeof buf, &eof);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 431", 12) == 0, "expected 431, got %.80s", buf);
    ck_assert_msg(strstr(buf, "\"code\":\"HEADER_TOO_LARGE\"") != NULL, "not JSON: %s", buf);
}
END_TEST

/* libmicrohttpd answers a malformed Content-Length before any of our code
 * sees the request, with its own HTML page; what we can do is count it.
 * The README lists this case under "Guarantees and limits". */
START_TEST(malformed_content_length_is_400_and_counted)
{
    static const char req[] =
        "POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n";
    const char *prefix =
        "paycallback_http_requests_total{route=\"unmatched\",method=\"other\",code=\"400\"}";
    long long before = metric_sum(prefix), after = before;
    char buf[8192];
    int eof;

    exchange(req, buf, sizeof buf, &eof);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400", 12) == 0, "expected 400, got %.80s", buf);
    for (long long until = h_now_us() + WAIT_MS * 1000LL; after == before && h_now_us() < until;
         sleep_ms(POLL_MS))
        after = metric_sum(prefix);
    ck_assert_msg(after > before, "the library's 400 was not counted in /metrics");
}
END_TEST

/* ---- listening ----------------------------------------------------------- */

START_TEST(second_instance_on_a_port_in_use_fails_to_start)
{
    static const char *const args[] = { "-c", "config/paycallback.json", NULL };
    char port_env[64];
    const char *env[] = { port_env, NULL };
    struct h_run run;

    snprintf(port_env, sizeof port_env, "PAYCALLBACK_LISTEN_PORT=%d", h_port());
    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status != 0 && run.status != -1, "expected a non-zero exit, got %d: %s",
                  run.status, run.err);
    ck_assert_msg(strstr(run.err, "cannot start http daemon") != NULL, "no clear reason: %s",
                  run.err);
    h_run_free(&run);
}
END_TEST

/* A crashed instance leaves its closed connections in TIME_WAIT; the one
 * started in its place must still get the port. */
START_TEST(restart_after_kill_9_gets_the_same_port)
{
    struct h_server *a = h_server_start(NULL), *b;
    char port_env[64];
    const char *env[] = { port_env, NULL };
    struct h_resp r;

    ck_assert_msg(a != NULL, "cannot start the first instance");
    for (int i = 0; i < 5; i++) { /* the server closes: TIME_WAIT on its side */
        h_http(h_server_port(a), "GET", "/healthz", NULL, NULL, 0, &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
    }
    snprintf(port_env, sizeof port_env, "PAYCALLBACK_LISTEN_PORT=%d", h_server_port(a));
    ck_assert_int_eq(0, h_server_signal(a, SIGKILL));
    ck_assert_int_eq(128 + SIGKILL, h_server_wait(a, 10000));
    b = h_server_start(env);
    ck_assert_msg(b != NULL, "the restarted instance could not bind the port; see var/test-logs/");
    ck_assert_int_eq(0, h_server_stop(b));
}
END_TEST

START_TEST(reuse_port_lets_two_instances_share_a_port_on_purpose)
{
    static const char *const first_env[] = { "PAYCALLBACK_LISTEN_REUSE_PORT=1", NULL };
    struct h_server *a = h_server_start(first_env), *b;
    char port_env[64];
    const char *env[] = { port_env, "PAYCALLBACK_LISTEN_REUSE_PORT=1", NULL };

    ck_assert_msg(a != NULL, "cannot start the first instance");
    snprintf(port_env, sizeof port_env, "PAYCALLBACK_LISTEN_PORT=%d", h_server_port(a));
    b = h_server_start(env);
    ck_assert_msg(b != NULL, "the second instance with listen.reuse_port=1 did not start");
    ck_assert_int_eq(h_server_port(a), h_server_port(b));
    ck_assert_int_eq(0, h_server_stop(b));
    ck_assert_int_eq(0, h_server_stop(a));
}
END_TEST

START_TEST(cap_above_the_open_file_limit_stops_the_start)
{
    static const char *const args[] = { "-c", "config/paycallback.json", NULL };
    static const char *const env[] = { "PAYCALLBACK_LISTEN_PORT=0",
                                       "PAYCALLBACK_HTTP_MAX_CONNECTIONS=1000000", NULL };
    struct h_run run;

    h_run(args, env, 20000, &run);
    ck_assert_msg(run.status == 1, "expected exit 1, got %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.err, "open-file limit") != NULL, "no clear reason: %s", run.err);
    h_run_free(&run);
}
END_TEST

/* ---- a frozen MariaDB ---------------------------------------------------- */

static pid_t mysqld_pid(void)
{
    char path[4096];
    const char *root = getenv("PCB_ROOT");
    long pid = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/var/mysql/mysqld.pid", root != NULL ? root : ".");
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return (pid_t)pid;
}

/* Whether every thread of process pid is stopped: kill(SIGSTOP) returns
 * before a thread running on another core has stopped, and a statement it
 * serves meanwhile is answered. */
static bool all_threads_stopped(pid_t pid)
{
    char path[64], line[512];
    struct dirent *e;
    bool stopped = true;
    DIR *d;

    snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
    if ((d = opendir(path)) == NULL)
        return false;
    while (stopped && (e = readdir(d)) != NULL) {
        char *state;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/task/%.20s/stat", (long)pid, e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue; /* the thread has ended */
        if (fgets(line, sizeof line, f) != NULL && (state = strrchr(line, ')')) != NULL)
            stopped = state[1] == ' ' && (state[2] == 'T' || state[2] == 't');
        fclose(f);
    }
    closedir(d);
    return stopped;
}

static void mysql_freeze(pid_t pid)
{
    ck_assert_int_eq(0, kill(pid, SIGSTOP));
    for (long long until = h_now_us() + 1000LL * WAIT_MS; !all_threads_stopped(pid); sleep_ms(1))
        ck_assert_msg(h_now_us() < until, "mysqld %ld did not stop", (long)pid);
}

/* Unchecked teardown: whatever the test did, MariaDB runs again and
 * answers before the next suite. */
static void mysql_thaw(void)
{
    pid_t pid = mysqld_pid();

    if (pid > 0)
        kill(pid, SIGCONT);
    for (long long until = h_now_us() + 30000000LL; h_now_us() < until; sleep_ms(100))
        if (h_db_scalar_ll("SELECT 1") == 1)
            break;
    h_fixture_server_down();
}

static void frozen_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_MYSQL_IO_TIMEOUT_S=2",
        "PAYCALLBACK_HTTP_QUEUE_WAIT_MS=1000",
        NULL,
    };

    h_fixture_server_up_env(env);
}

struct frozen_stats {
    _Atomic long long call_max_us, health_max_us;
    atomic_int unanswered, not_503, health_bad;
    atomic_int other_status; /* the last answer that was not a 503 */
};

static struct frozen_stats fz;

/* One call of the frozen storm: every tenth is a /healthz probe, the rest
 * are callbacks that need MySQL. */
static int frozen_call(int i, void *arg)
{
    char pay_no[32];
    struct h_resp r;
    long long t0 = h_now_us(), us;
    int bad;

    (void)arg;
    if (i % 10 == 0) {
        h_http(h_port(), "GET", "/healthz", NULL, NULL, 0, &r);
        us = h_now_us() - t0;
        if (us > atomic_load(&fz.health_max_us))
            atomic_store(&fz.health_max_us, us);
        bad = r.status != 200;
        atomic_fetch_add(&fz.health_bad, bad);
        h_resp_free(&r);
        return bad;
    }
    snprintf(pay_no, sizeof pay_no, "FROZEN-%d", i);
    h_callback(h_port(), "FROZEN-ORDER", pay_no, "899.00", &r);
    us = h_now_us() - t0;
    if (us > atomic_load(&fz.call_max_us))
        atomic_store(&fz.call_max_us, us);
    bad = r.status != 503 || h_resp_header(&r, "Retry-After") == NULL;
    atomic_fetch_add(&fz.unanswered, r.status == 0);
    atomic_fetch_add(&fz.not_503, r.status != 0 && bad);
    if (r.status != 0 && bad) {
        atomic_store(&fz.other_status, r.status);
        fprintf(stderr, "frozen mysql: %s answered %d: %s\n", pay_no, r.status,
                r.body != NULL ? r.body : "");
    }
    h_resp_free(&r);
    return bad;
}

/* The bank's retry of callback i of the frozen storm after the thaw,
 * repeated while the service still answers 503 (its breaker and prober
 * catch up within a few seconds). Returns the last answer. */
static void frozen_retry(int i, struct h_resp *r)
{
    char pay_no[32];

    snprintf(pay_no, sizeof pay_no, "FROZEN-%d", i);
    for (long long until = h_now_us() + 1000LL * WAIT_MS * 3;; sleep_ms(POLL_MS * 10)) {
        h_callback(h_port(), "FROZEN-ORDER", pay_no, "899.00", r);
        if (r->status != 503 || h_now_us() >= until)
            return;
        h_resp_free(r);
    }
}

/* A CALL written to a frozen MariaDB cannot be taken back: the server reads
 * it when it thaws and commits it, after the service has answered 503. The
 * contract for that 503 is "nothing half-written, and the retry is safe":
 * the call commits whole or not at all, and the bank's retry of the same
 * pay_no replays it. A callback for no order first leaves one pooled
 * connection open (the pool lends the last one returned first), so the
 * storm's first callback writes its CALL into the frozen server. */
START_TEST(frozen_mysql_gets_503_with_retry_after_and_healthz_stays_up)
{
    struct h_storm_stats st;
    struct h_resp r, m;
    long long t0, ready_us, metrics_us;
    int calls = 0, paid = 0;
    pid_t pid = mysqld_pid();

    ck_assert_msg(pid > 0, "no var/mysql/mysqld.pid");
    h_db_insert_order("FROZEN-ORDER", "u1", "899.00", 1);
    h_callback(h_port(), "FROZEN-NO-ORDER", "FROZEN-WARM", "899.00", &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND"); /* a pooled connection open */
    h_resp_free(&r);
    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    mysql_freeze(pid);
    ck_assert_int_eq(0, h_storm(FROZEN_THREADS, FROZEN_CALLS, frozen_call, NULL, &st));
    t0 = h_now_us();
    h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r);
    ready_us = h_now_us() - t0;
    t0 = h_now_us();
    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &m);
    metrics_us = h_now_us() - t0;
    kill(pid, SIGCONT);
    printf("frozen mysql: %d calls, callbacks answered within %.0f ms (max), /healthz max "
           "%.1f ms, /readyz %d in %.0f ms, /metrics %d in %.0f ms\n",
           st.total, atomic_load(&fz.call_max_us) / 1000.0, atomic_load(&fz.health_max_us) / 1000.0,
           r.status, ready_us / 1000.0, m.status, metrics_us / 1000.0);
    h_assert_status(&m, 200);
    h_resp_free(&m);
    ck_assert_int_eq(0, atomic_load(&fz.unanswered));
    ck_assert_msg(atomic_load(&fz.not_503) == 0, "%d callbacks not answered 503 (last: %d)",
                  atomic_load(&fz.not_503), atomic_load(&fz.other_status));
    ck_assert_int_eq(0, atomic_load(&fz.health_bad));
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);

    /* The bank retries every callback it got a 503 for. */
    for (int i = 0; i < FROZEN_CALLS; i++) {
        if (i % 10 == 0)
            continue; /* a /healthz probe */
        calls++;
        frozen_retry(i, &r);
        h_assert_status(&r, 200);
        h_assert_str(&r, "code", "SUCCESS");
        paid += h_json_eq_str(r.body, "result", "PAID");
        h_resp_free(&r);
    }
    /* Each pay_no recorded once, whether its frozen CALL or its retry wrote
     * it; the order paid once, its first payment the one PAID, each other
     * one announced once as a double charge. */
    ck_assert_int_eq(calls, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record"));
    ck_assert_int_eq(calls, h_db_scalar_ll("SELECT COUNT(DISTINCT pay_no) FROM payment_record "
                                           "WHERE order_no = 'FROZEN-ORDER'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE status = 1"));
    ck_assert_int_eq(calls - 1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record "
                                               "WHERE status = 2"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM orders "
                                       "WHERE order_no = 'FROZEN-ORDER'"));
    ck_assert_int_eq(
        1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox "
                          "WHERE order_no = 'FROZEN-ORDER' AND event_type = 'order.paid'"));
    ck_assert_int_eq(calls - 1, h_db_scalar_ll("SELECT COUNT(DISTINCT subject) FROM outbox "
                                               "WHERE order_no = 'FROZEN-ORDER' AND "
                                               "event_type = 'payment.double_charged'"));
    ck_assert_int_eq(calls, h_db_scalar_ll("SELECT COUNT(*) FROM outbox "
                                           "WHERE order_no = 'FROZEN-ORDER'"));
    ck_assert_int_eq(1, paid);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static TCase *tcase(const char *name, void (*up)(void), void (*down)(void), int timeout_s)
{
    TCase *tc = tcase_create(name);

    if (up != NULL)
        tcase_add_unchecked_fixture(tc, up, down);
    tcase_set_timeout(tc, timeout_s);
    return tc;
}

static Suite *limits_suite(void)
{
    Suite *s = suite_create("http_limits");
    TCase *tc;

    tc = tcase("caps refuse connections at once", capped_server_up, h_fixture_server_down,
               TC_TIMEOUT_S);
    tcase_add_test(tc, connections_over_the_per_address_cap_are_closed_at_once);
    tcase_add_test(tc, freed_slots_admit_the_address_again);
    tcase_add_test(tc, legit_client_is_served_while_one_address_holds_thousands_of_connections);
    suite_add_tcase(s, tc);

    tc = tcase("the global cap", small_global_cap_up, h_fixture_server_down, TC_TIMEOUT_S);
    tcase_add_test(tc, connections_over_the_global_cap_are_closed_at_once);
    suite_add_tcase(s, tc);

    tc =
        tcase("header and body deadlines", deadline_server_up, h_fixture_server_down, TC_TIMEOUT_S);
    tcase_add_test(tc, header_deadline_is_total_not_reset_by_each_byte);
    tcase_add_test(tc, idle_connection_is_closed_after_the_header_deadline);
    tcase_add_test(tc, body_deadline_is_total_not_reset_by_each_byte);
    tcase_add_test(tc, keep_alive_connection_serves_requests_within_the_deadline);
    suite_add_tcase(s, tc);

    tc = tcase("the least body rate", body_rate_server_up, h_fixture_server_down, TC_TIMEOUT_S);
    tcase_add_test(tc, a_body_below_the_least_rate_is_cut_after_the_grace);
    suite_add_tcase(s, tc);

    tc = tcase("framing is never ambiguous", h_fixture_server_up, h_fixture_server_down,
               TC_TIMEOUT_S);
    tcase_add_test(tc, content_length_with_transfer_encoding_is_400_and_closes);
    tcase_add_test(tc, two_content_lengths_are_400);
    tcase_add_loop_test(tc, unknown_transfer_coding_is_501_json, 0,
                        (int)(sizeof codings / sizeof codings[0]));
    tcase_add_test(tc, headers_over_our_limit_are_431_json);
    tcase_add_test(tc, malformed_content_length_is_400_and_counted);
    suite_add_tcase(s, tc);

    tc = tcase("the listen port is exclusive", h_fixture_server_up, h_fixture_server_down,
               TC_TIMEOUT_S);
    tcase_add_test(tc, second_instance_on_a_port_in_use_fails_to_start);
    tcase_add_test(tc, restart_after_kill_9_gets_the_same_port);
    tcase_add_test(tc, reuse_port_lets_two_instances_share_a_port_on_purpose);
    tcase_add_test(tc, cap_above_the_open_file_limit_stops_the_start);
    suite_add_tcase(s, tc);

    tc = tcase("a frozen MariaDB", frozen_server_up, mysql_thaw, FROZEN_TIMEOUT_S);
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_add_test(tc, frozen_mysql_gets_503_with_retry_after_and_healthz_stays_up);
    suite_add_tcase(s, tc);

    return s;
}

CHECK_MAIN(limits_suite, NULL, NULL);
