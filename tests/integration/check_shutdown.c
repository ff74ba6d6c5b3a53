/* check_shutdown.c - graceful stop of the real binary. A callback held in
 * flight by a row lock the test owns survives SIGTERM (and SIGINT): the
 * server stops accepting at once, the callback commits and gets its 200,
 * and the process exits 0. An idle server exits promptly. The grace period
 * bounds the wait, and a request cut by it leaves nothing half-written, so
 * the bank's retry pays the order. Each test starts its own server. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define PRICE            "899.00"
#define TC_TIMEOUT_S     90
#define BLOCK_WAIT_MS    2500     /* < the server's 3 s innodb_lock_wait_timeout */
#define REFUSE_WAIT_MS   1000
#define COMMIT_AFTER_MS  300      /* the lock is released this long after the signal */
#define EXIT_WAIT_MS     20000
#define IDLE_EXIT_MS     2000     /* an idle server is gone within this */
#define IDLE_EXIT_ASAN_MS 5000

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

static struct h_server *start(const char *const *env)
{
    struct h_server *s = h_server_start(env);

    ck_assert_msg(s != NULL, "cannot start the server; see var/test-logs/");
    return s;
}

/* ---- a callback in flight ------------------------------------------------ */

/* One signed callback sent from its own thread on a keep-alive connection,
 * so the reply shows whether the server asked it to close. */
struct flight {
    pthread_t tid;
    int port;
    char req[1024];
    size_t len;
    struct h_resp r;
};

static void *fly(void *p)
{
    struct flight *f = p;

    h_http_raw(f->port, f->req, f->len, &f->r);
    return NULL;
}

static void launch(struct flight *f, int port, const char *order_no, const char *pay_no)
{
    char body[256], ts[32], sig[H_SIG_HEX_LEN + 1];
    size_t blen = h_callback_body(body, sizeof body, order_no, pay_no, PRICE);
    int n;

    memset(f, 0, sizeof *f);
    f->port = port;
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    h_sign(H_SECRET, ts, body, blen, sig);
    n = snprintf(f->req, sizeof f->req,
                 "POST /pay/callback HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
                 "Content-Type: application/json\r\nX-Timestamp: %s\r\nX-Signature: %s\r\n"
                 "Content-Length: %zu\r\n\r\n%s", ts, sig, blen, body);
    ck_assert(n > 0 && (size_t)n < sizeof f->req);
    f->len = (size_t)n;
    ck_assert_int_eq(0, pthread_create(&f->tid, NULL, fly, f));
}

static void land(struct flight *f)
{
    pthread_join(f->tid, NULL);
}

/* Waits until a server session of the test database is inside the
 * callback's SELECT ... FOR UPDATE, i.e. blocked on the test's row lock. */
static void await_blocked(void)
{
    long long deadline = now_ms() + BLOCK_WAIT_MS;

    while (h_db_scalar_ll("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                          "WHERE ID <> CONNECTION_ID() AND DB = DATABASE() "
                          "AND INFO LIKE '%%FROM orders WHERE order_no%%FOR UPDATE%%'") < 1) {
        ck_assert_msg(now_ms() < deadline, "the callback never reached the order's row lock");
        sleep_ms(20);
    }
}

/* Holds the row lock of order_no in a transaction of the test's own. */
static struct h_db *lock_order(const char *order_no)
{
    struct h_db *db = h_db_open();

    h_db_sql(db, "START TRANSACTION");
    h_db_sql(db, "SELECT id FROM orders WHERE order_no = '%s' FOR UPDATE", order_no);
    return db;
}

/* Asserts that a new connection to port is refused, waiting a moment for
 * the server to act on its signal. */
static void assert_refused(int port)
{
    long long deadline = now_ms() + REFUSE_WAIT_MS;
    struct h_resp r;

    for (;;) {
        int rc = h_http(port, "GET", "/healthz", NULL, NULL, 0, &r);
        int refused = rc != 0 && strstr(r.err, "refused") != NULL;

        if (refused || now_ms() >= deadline) {
            ck_assert_msg(refused, "a new connection after the stop signal got %d %s",
                          r.status, r.err);
            h_resp_free(&r);
            return;
        }
        h_resp_free(&r);
        sleep_ms(20);
    }
}

static void assert_paid_once(const char *order_no, const char *pay_no)
{
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s'",
                                       pay_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'order.paid' AND order_no = '%s'", order_no));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'",
                                       order_no));
}

static const int stop_signals[] = { SIGTERM, SIGINT };

START_TEST(callback_in_flight_during_stop_signal_completes_and_commits)
{
    int sig = stop_signals[_i];
    struct h_server *s = start(NULL);
    struct flight f;
    struct h_db *db;
    long long t_sig;
    const char *conn;

    h_db_insert_order("OS1", "u1", PRICE, 1);
    db = lock_order("OS1");
    launch(&f, h_server_port(s), "OS1", "PS1");
    await_blocked();

    ck_assert_int_eq(0, h_server_signal(s, sig));
    t_sig = now_ms();
    assert_refused(h_server_port(s));             /* quiesced: no new connections */
    if (now_ms() - t_sig < COMMIT_AFTER_MS)
        sleep_ms((int)(COMMIT_AFTER_MS - (now_ms() - t_sig)));
    h_db_sql(db, "COMMIT");                        /* the callback may go on */
    h_db_close(db);

    land(&f);
    h_assert_status(&f.r, 200);
    h_assert_str(&f.r, "code", "SUCCESS");
    h_assert_str(&f.r, "result", "PAID");
    h_assert_str(&f.r, "status", "PAID");
    h_assert_bool(&f.r, "duplicate", 0);
    conn = h_resp_header(&f.r, "Connection");
    ck_assert_msg(conn != NULL && strcasecmp(conn, "close") == 0,
                  "a reply after the stop signal must close its connection, got Connection: %s",
                  conn ? conn : "(none)");
    h_resp_free(&f.r);
    ck_assert_int_eq(0, h_server_wait(s, EXIT_WAIT_MS));
    assert_paid_once("OS1", "PS1");
}
END_TEST

START_TEST(idle_server_exits_0_promptly)
{
    struct h_server *s = start(NULL);
    const char *bin = getenv("PAYCALLBACK_BIN");
    long long limit = bin != NULL && strstr(bin, "/asan/") != NULL ? IDLE_EXIT_ASAN_MS : IDLE_EXIT_MS;
    struct h_resp r;
    long long t0, took;

    h_http(h_server_port(s), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    t0 = now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    ck_assert_int_eq(0, h_server_wait(s, EXIT_WAIT_MS));
    took = now_ms() - t0;
    fprintf(stderr, "check_shutdown: idle server stopped in %lld ms\n", took);
    ck_assert_msg(took < limit, "an idle server took %lld ms to stop (limit %lld)", took, limit);
}
END_TEST

START_TEST(grace_period_bounds_the_stop_and_the_cut_request_leaves_nothing)
{
    static const char *const env[] = { "PAYCALLBACK_GRACE_S=1", NULL };
    struct h_server *s = start(env), *again;
    struct flight f;
    struct h_db *db;
    struct h_resp r;
    long long t0, took;

    h_db_insert_order("OG1", "u1", PRICE, 1);
    db = lock_order("OG1");
    launch(&f, h_server_port(s), "OG1", "PG1");
    await_blocked();
    t0 = now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    ck_assert_int_eq(1, h_server_wait(s, EXIT_WAIT_MS));     /* requests were cut */
    took = now_ms() - t0;
    ck_assert_msg(took >= 900 && took < 2500, "grace_s=1 but the stop took %lld ms", took);
    land(&f);
    ck_assert_msg(f.r.status == 0, "the cut request got a reply: %d %s", f.r.status, f.r.body);
    h_resp_free(&f.r);
    h_db_sql(db, "COMMIT");
    h_db_close(db);

    /* The bank retries against the next instance: the cut transaction
     * rolled back whole, so this is a first payment, not a replay. */
    again = start(NULL);
    h_callback(h_server_port(again), "OG1", "PG1", PRICE, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "result", "PAID");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_server_stop(again));
    assert_paid_once("OG1", "PG1");
}
END_TEST

START_TEST(second_signal_stops_waiting_for_requests_in_flight)
{
    static const char *const env[] = { "PAYCALLBACK_GRACE_S=60", NULL };
    struct h_server *s = start(env);
    struct flight f;
    struct h_db *db;
    long long t0, took;

    h_db_insert_order("OT1", "u1", PRICE, 1);
    db = lock_order("OT1");
    launch(&f, h_server_port(s), "OT1", "PT1");
    await_blocked();
    t0 = now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    sleep_ms(COMMIT_AFTER_MS);
    ck_assert_int_eq(0, h_server_signal(s, SIGINT));
    ck_assert_int_eq(1, h_server_wait(s, EXIT_WAIT_MS));
    took = now_ms() - t0;
    ck_assert_msg(took < 2000, "the second signal took %lld ms to stop the server", took);
    land(&f);
    h_resp_free(&f.r);
    h_db_sql(db, "ROLLBACK");
    h_db_close(db);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static TCase *tcase(const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    return tc;
}

static Suite *shutdown_suite(void)
{
    Suite *s = suite_create("shutdown");
    TCase *tc;

    tc = tcase("a request in flight survives the stop signal");
    tcase_add_loop_test(tc, callback_in_flight_during_stop_signal_completes_and_commits, 0,
                        (int)(sizeof stop_signals / sizeof stop_signals[0]));
    suite_add_tcase(s, tc);

    tc = tcase("an idle server stops at once");
    tcase_add_test(tc, idle_server_exits_0_promptly);
    suite_add_tcase(s, tc);

    tc = tcase("the grace period bounds the stop");
    tcase_add_test(tc, grace_period_bounds_the_stop_and_the_cut_request_leaves_nothing);
    tcase_add_test(tc, second_signal_stops_waiting_for_requests_in_flight);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(shutdown_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
