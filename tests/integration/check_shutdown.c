/* check_shutdown.c - graceful stop of the real binary. A callback held in
 * flight by a row lock the test owns survives SIGTERM (and SIGINT): the
 * server stops accepting at once, the callback commits and gets its 200,
 * and the process exits 0. An idle server exits promptly. The grace period
 * bounds the wait, and a request cut by it leaves nothing half-written, so
 * the bank's retry pays the order. Each test starts its own server.
 *
 * The test holds the callback with LOCK TABLES orders WRITE rather than a
 * row lock: the server then waits on a metadata lock, which its 3 s
 * innodb_lock_wait_timeout does not bound, and every server here runs
 * with a mysql.io_timeout_s far above any wait of the test, so no step
 * races a server timeout however slow the machine is. The callback is
 * known to be held by its own statement in the processlist: the server's
 * background passes read the orders table too, and wait on the same lock. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define PRICE "899.00"
#define TC_TIMEOUT_S 90
#define BLOCK_WAIT_MS 20000
#define REFUSE_WAIT_MS 5000
#define EXIT_WAIT_MS 20000
#define IDLE_EXIT_MS 2000 /* an idle server is gone within this */
#define IDLE_EXIT_ASAN_MS 5000
#define STOP_ROUNDS 12 /* stops under load, each must exit 0 */
#define HAMMERS 4      /* client threads during each of them */

#define IO_TIMEOUT_ENV "PAYCALLBACK_MYSQL_IO_TIMEOUT_S=300"

/* A server with env (NULL-terminated, at most 3 entries) and an I/O
 * timeout no wait of the test comes near. */
static struct h_server *start(const char *const *env)
{
    const char *all[5] = { IO_TIMEOUT_ENV };
    struct h_server *s;

    for (int i = 0; env != NULL && env[i] != NULL && i < 3; i++)
        all[i + 1] = env[i];
    s = h_server_start(all);

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
                 "Content-Length: %zu\r\n\r\n%s",
                 ts, sig, blen, body);
    ck_assert(n > 0 && (size_t)n < sizeof f->req);
    f->len = (size_t)n;
    ck_assert_int_eq(0, pthread_create(&f->tid, NULL, fly, f));
}

static void land(struct flight *f)
{
    pthread_join(f->tid, NULL);
}

/* 1 when the callback waits for the orders table, i.e. it is blocked on
 * the test's lock: its statement there reads one order by its number (a
 * reconciliation or expiry pass waiting on the same lock reads orders by
 * status, and is not the callback). */
static int callback_blocked(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                          "WHERE ID <> CONNECTION_ID() AND DB = DATABASE() "
                          "AND STATE LIKE 'Waiting for table metadata lock%%' "
                          "AND INFO LIKE '%%FROM orders WHERE order_no =%%'") > 0;
}

static void await_blocked(void)
{
    h_await(callback_blocked(), BLOCK_WAIT_MS, "the callback never reached the orders table");
}

/* Holds the orders table on a connection of the test's own until
 * release_orders. */
static struct h_db *lock_orders(void)
{
    struct h_db *db = h_db_open();

    h_db_sql(db, "LOCK TABLES orders WRITE");
    return db;
}

static void release_orders(struct h_db *db)
{
    h_db_sql(db, "UNLOCK TABLES");
    h_db_close(db);
}

/* Asserts that a new connection to port is refused, waiting a moment for
 * the server to act on its signal. */
static void assert_refused(int port)
{
    struct h_deadline d = h_deadline_in(REFUSE_WAIT_MS);
    struct h_resp r;

    for (;;) {
        int rc = h_http(port, "GET", "/healthz", NULL, NULL, 0, &r);
        int refused = rc != 0 && strstr(r.err, "refused") != NULL;

        if (refused || !h_deadline_wait(&d)) {
            ck_assert_msg(refused, "a new connection after the stop signal got %d %s", r.status,
                          r.err);
            h_resp_free(&r);
            return;
        }
        h_resp_free(&r);
    }
}

static void assert_paid_once(const char *order_no, const char *pay_no)
{
    ck_assert_int_eq(
        1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s'", pay_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'order.paid' AND order_no = '%s'",
                                       order_no));
    ck_assert_int_eq(2,
                     h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no));
}

static const int stop_signals[] = { SIGTERM, SIGINT };

START_TEST(callback_in_flight_during_stop_signal_completes_and_commits)
{
    int sig = stop_signals[_i];
    struct h_server *s = start(NULL);
    struct flight f;
    struct h_db *db;
    const char *conn;

    h_db_insert_order("OS1", "u1", PRICE, 1);
    db = lock_orders();
    launch(&f, h_server_port(s), "OS1", "PS1");
    await_blocked();

    ck_assert_int_eq(0, h_server_signal(s, sig));
    assert_refused(h_server_port(s)); /* quiesced: no new connections */
    ck_assert_msg(callback_blocked(), "the callback did not wait for the lock");
    release_orders(db); /* the callback may go on */

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
    const char *bin = getenv("PCB_BIN");
    long long limit =
        bin != NULL && strstr(bin, "/asan/") != NULL ? IDLE_EXIT_ASAN_MS : IDLE_EXIT_MS;
    struct h_resp r;
    long long t0, took;

    h_http(h_server_port(s), "GET", "/healthz", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    t0 = h_now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    ck_assert_int_eq(0, h_server_wait(s, EXIT_WAIT_MS));
    took = h_now_ms() - t0;
    fprintf(stderr, "check_shutdown: idle server stopped in %lld ms\n", took);
    ck_assert_msg(took < limit, "an idle server took %lld ms to stop (limit %lld)", took, limit);
}
END_TEST

/* Clients that open a connection per request against port until stop is
 * set, for the stop-under-load test. */
struct hammer {
    int port;
    volatile int stop;
    int sent;
};

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    struct h_resp r;

    while (!h->stop) {
        if (h_http(h->port, "GET", "/healthz", NULL, NULL, 0, &r) == 0)
            h->sent++;
        h_resp_free(&r);
    }
    return NULL;
}

/* A stop signal that arrives while the polling threads are busy with new
 * connections exits 0 every time: no abort inside the HTTP library while
 * it stops listening. */
START_TEST(stop_while_connections_arrive_exits_0_every_time)
{
    for (int round = 0; round < STOP_ROUNDS; round++) {
        struct h_server *s = start(NULL);
        struct hammer h[HAMMERS] = { 0 };
        pthread_t t[HAMMERS];
        struct h_deadline d = h_deadline_in(BLOCK_WAIT_MS);
        int rc;

        for (int i = 0; i < HAMMERS; i++) {
            h[i].port = h_server_port(s);
            ck_assert_int_eq(0, pthread_create(&t[i], NULL, hammer_run, &h[i]));
        }
        while (h[0].sent < 5)
            ck_assert_msg(h_deadline_wait(&d), "no request answered in round %d", round);
        ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
        rc = h_server_wait(s, EXIT_WAIT_MS);
        for (int i = 0; i < HAMMERS; i++) {
            h[i].stop = 1;
            pthread_join(t[i], NULL);
        }
        ck_assert_msg(rc == 0, "round %d: the server exited with %d, not 0", round, rc);
    }
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
    db = lock_orders();
    launch(&f, h_server_port(s), "OG1", "PG1");
    await_blocked();
    t0 = h_now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    ck_assert_int_eq(1, h_server_wait(s, EXIT_WAIT_MS)); /* requests were cut */
    took = h_now_ms() - t0;
    fprintf(stderr, "check_shutdown: grace_s=1, the stop took %lld ms\n", took);
    ck_assert_msg(took >= 900, "grace_s=1 but the stop took %lld ms", took);
    land(&f);
    ck_assert_msg(f.r.status == 0, "the cut request got a reply: %d %s", f.r.status, f.r.body);
    h_resp_free(&f.r);
    release_orders(db);

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
    db = lock_orders();
    launch(&f, h_server_port(s), "OT1", "PT1");
    await_blocked();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    assert_refused(h_server_port(s)); /* the first signal has been taken */
    ck_assert_msg(callback_blocked(), "the callback did not wait for the lock");
    t0 = h_now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGINT));
    /* Left to the first signal, the server would wait its 60 s grace for
     * the callback the test holds. It exits with 1 (requests cut) while
     * the lock is still held, within EXIT_WAIT_MS: the second signal cut
     * the wait. The time is a figure, not a bound: a loaded machine takes
     * what it takes to interrupt the database session and join threads. */
    ck_assert_int_eq(1, h_server_wait(s, EXIT_WAIT_MS));
    took = h_now_ms() - t0;
    fprintf(stderr, "check_shutdown: the second signal stopped the server in %lld ms\n", took);
    land(&f);
    ck_assert_msg(f.r.status == 0, "the cut request got a reply: %d %s", f.r.status, f.r.body);
    h_resp_free(&f.r);
    release_orders(db);
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
    tcase_add_test(tc, stop_while_connections_arrive_exits_0_every_time);
    suite_add_tcase(s, tc);

    tc = tcase("the grace period bounds the stop");
    tcase_add_test(tc, grace_period_bounds_the_stop_and_the_cut_request_leaves_nothing);
    tcase_add_test(tc, second_signal_stops_waiting_for_requests_in_flight);
    suite_add_tcase(s, tc);

    return s;
}

CHECK_MAIN(shutdown_suite, NULL, NULL);
