/* check_pay_callback.c - POST /pay/callback against the real binary, MariaDB
 * and Redis: first payment, replays, a storm of concurrent duplicates, double
 * payments, pay_no conflicts, amount and order checks, authentication, body
 * validation, and a MySQL outage. Each TCase runs its own server. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "../check_main.h"

#define PRICE "899.00" /* SHOE-42, the order amount of every test */
#define STORM_THREADS 100
#define STORM_TOTAL 1000
#define TC_TIMEOUT_S 30
#define SLOW_TIMEOUT_S 120
#define SIG_WINDOW_S 300
#define READY_WAIT_MS 20000 /* the background prober sees a change within this */

#define A16 "AAAAAAAAAAAAAAAA"
#define ID64 A16 A16 A16 A16 /* longest valid identifier */
#define ID65 ID64 "A"
#define PAY64 "P" A16 A16 A16 "AAAAAAAAAAAAAAA"

/* Unchecked fixture: one server per TCase, in the runner process, so no
 * forked test can take it down with it. */
/* Checked fixture: every test starts from the seed data. */
/* Unchecked teardown of the outage TCase: MySQL must be up again whatever
 * the test did, or every later suite fails for the wrong reason. */
static long long records(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM payment_record");
}

static long long order_status(const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no);
}

static long long paid_events(const char *order_no)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = 'order.paid' "
                          "AND order_no = '%s'",
                          order_no);
}

static long long outbox_rows(void)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox");
}

/* Asserts that a rejected callback left order_no (WAIT_PAY) untouched. */
/* Polls /readyz until it answers want, for at most READY_WAIT_MS:
 * readiness is what the background prober last found. r holds the last
 * reply. */
static void await_readyz(int want, struct h_resp *r)
{
    struct h_deadline d = h_deadline_in(READY_WAIT_MS);

    for (;;) {
        h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, r);
        if (r->status == want || !h_deadline_wait(&d))
            return;
        h_resp_free(r);
    }
}

static void assert_nothing_written(const char *order_no)
{
    ck_assert_msg(records() == 0, "expected no payment_record, found %lld", records());
    ck_assert_msg(order_status(order_no) == 1, "expected %s still WAIT_PAY (1), found %lld",
                  order_no, order_status(order_no));
    ck_assert_msg(outbox_rows() == 0, "expected an empty outbox, found %lld rows", outbox_rows());
}

/* Asserts a 200 SUCCESS reply with the given result and duplicate flag. */
static void assert_success(const struct h_resp *r, const char *order_no, const char *pay_no,
                           const char *result, int duplicate)
{
    h_assert_status(r, 200);
    h_assert_json(r);
    h_assert_str(r, "code", "SUCCESS");
    h_assert_str(r, "order_no", order_no);
    h_assert_str(r, "pay_no", pay_no);
    h_assert_str(r, "result", result);
    h_assert_bool(r, "duplicate", duplicate);
}

/* ---- first payment ------------------------------------------------------- */

START_TEST(callback_on_waiting_order_marks_it_paid)
{
    struct h_resp r;
    char *amount, *order_no;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_assert_str(&r, "status", "PAID");
    h_resp_free(&r);

    ck_assert_int_eq(2, order_status("O1"));
    ck_assert_int_eq(1, records());
    amount = h_db_scalar_str("SELECT amount FROM payment_record WHERE pay_no = 'P1'");
    ck_assert_pstr_eq(PRICE, amount);
    free(amount);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'P1'"));
    order_no = h_db_scalar_str("SELECT order_no FROM payment_record WHERE pay_no = 'P1'");
    ck_assert_pstr_eq("O1", order_no);
    free(order_no);
    ck_assert_int_eq(1, paid_events("O1"));
    ck_assert_int_eq(1, outbox_rows());
}
END_TEST

START_TEST(amount_without_cents_matches_the_order)
{
    struct h_resp r;
    char *amount;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", "899", &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    amount = h_db_scalar_str("SELECT amount FROM payment_record WHERE pay_no = 'P1'");
    ck_assert_pstr_eq(PRICE, amount);
    free(amount);
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

START_TEST(identifiers_of_64_chars_are_accepted)
{
    struct h_resp r;

    h_db_insert_order(ID64, "u1001", PRICE, 1);
    h_callback(h_port(), ID64, PAY64, PRICE, &r);
    assert_success(&r, ID64, PAY64, "PAID", 0);
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status(ID64));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record "
                                       "WHERE pay_no = '%s'",
                                       PAY64));
}
END_TEST

START_TEST(unknown_fields_in_the_body_are_ignored)
{
    static const char body[] = "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00\","
                               "\"channel\":\"alipay\",\"extra\":{\"n\":1}}";
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_post_callback(h_port(), H_SECRET, (long long)time(NULL), body, strlen(body), &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

/* ---- replays ------------------------------------------------------------- */

START_TEST(replayed_callback_answers_duplicate_without_writing)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);

    for (int i = 0; i < 3; i++) {
        h_callback(h_port(), "O1", "P1", PRICE, &r);
        assert_success(&r, "O1", "P1", "PAID", 1);
        h_assert_str(&r, "status", "PAID");
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(1, outbox_rows());
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

/* A payment recorded without this process seeing it (another instance, or
 * before a restart) is still answered from its record. */
START_TEST(replay_of_a_payment_recorded_elsewhere_is_a_duplicate)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 2);
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
              "VALUES ('PX', 'O1', " PRICE ", 2, 2)");
    h_callback(h_port(), "O1", "PX", PRICE, &r);
    assert_success(&r, "O1", "PX", "REFUND_REQUIRED", 1);
    h_assert_str(&r, "status", "PAID");
    h_resp_free(&r);

    h_callback(h_port(), "O2", "PX", PRICE, &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(0, outbox_rows());
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT outcome FROM payment_record WHERE pay_no = 'PX'"));
}
END_TEST

START_TEST(replay_with_amount_spelt_differently_is_a_duplicate)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    h_callback(h_port(), "O1", "P1", "899.0", &r);
    assert_success(&r, "O1", "P1", "PAID", 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
}
END_TEST

/* ---- repeats answered from memory ----------------------------------------- */

/* The server of these tests keeps the replay cache on (the harness turns
 * it off elsewhere: other suites empty the database under their server). */
static void remembering_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_CALLBACK_REPLAY_CACHE_ENTRIES=64",
                                       "PAYCALLBACK_CALLBACK_REPLAY_CACHE_TTL_S=3600", NULL };

    h_fixture_server_up_env(env);
}

/* The same, answering those repeats on the polling thread. */
static void inline_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_CALLBACK_REPLAY_CACHE_ENTRIES=64",
                                       "PAYCALLBACK_HTTP_REPLAYS_INLINE=1", NULL };

    h_fixture_server_up_env(env);
}

static long long cache_hits(void)
{
    long long v = h_metric("paycallback_replay_cache_hits_total");

    ck_assert_msg(v >= 0, "no paycallback_replay_cache_hits_total in /metrics");
    return v;
}

/* Sends the same callback twice: the first answer is read from the
 * database (the hits do not move), the second from memory (one hit);
 * both are the same bytes. */
static void assert_remembered(const char *order_no, const char *pay_no, const char *amount,
                              struct h_resp *db)
{
    long long hits = cache_hits();
    struct h_resp mem;

    h_callback(h_port(), order_no, pay_no, amount, db);
    ck_assert_int_eq(hits, cache_hits());
    h_callback(h_port(), order_no, pay_no, amount, &mem);
    ck_assert_int_eq(hits + 1, cache_hits());
    ck_assert_int_eq(db->status, mem.status);
    ck_assert_pstr_eq(h_resp_header(db, "Content-Type"), h_resp_header(&mem, "Content-Type"));
    ck_assert_uint_eq(db->body_len, mem.body_len);
    ck_assert_msg(memcmp(db->body, mem.body, db->body_len) == 0,
                  "from the database: %s\nfrom memory:      %s", db->body, mem.body);
    h_resp_free(&mem);
}

static const int terminal_status[] = { 4, 9 }; /* FINISHED, CANCELED */

/* A repeat of a payment whose order can no longer move is answered from
 * memory with the bytes the database gave: a replay (also of the amount
 * spelt otherwise), and a conflict, each on its own pay_no. */
START_TEST(repeat_on_a_terminal_order_is_answered_from_memory_byte_for_byte)
{
    int st = terminal_status[_i];
    char p1[16], p2[16]; /* each run its own: the server outlives the emptied tables */
    struct h_resp r;

    snprintf(p1, sizeof p1, "PM-1-%d", _i);
    snprintf(p2, sizeof p2, "PM-2-%d", _i);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_db_insert_order("O2", "u1002", PRICE, 1);
    h_callback(h_port(), "O1", p1, PRICE, &r);
    assert_success(&r, "O1", p1, "PAID", 0);
    h_resp_free(&r);
    h_callback(h_port(), "O2", p2, PRICE, &r);
    assert_success(&r, "O2", p2, "PAID", 0);
    h_resp_free(&r);
    h_db_exec("UPDATE orders SET status = %d", st);

    assert_remembered("O1", p1, PRICE, &r);
    assert_success(&r, "O1", p1, "PAID", 1);
    h_assert_str(&r, "status", st == 4 ? "FINISHED" : "CANCELED");
    h_resp_free(&r);
    h_callback(h_port(), "O1", p1, "899.0", &r); /* from memory too */
    assert_success(&r, "O1", p1, "PAID", 1);
    h_resp_free(&r);

    assert_remembered("O1", p2, PRICE, &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(2, records());
    ck_assert_int_eq(2, outbox_rows());
}
END_TEST

/* A payment whose order can still move is read every time: its answer
 * reports the order's status, which changes. */
START_TEST(repeat_on_an_order_that_can_move_reads_the_database)
{
    long long hits = cache_hits();
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "PM-3", PRICE, &r);
    assert_success(&r, "O1", "PM-3", "PAID", 0);
    h_resp_free(&r);
    for (int i = 0; i < 3; i++) {
        h_callback(h_port(), "O1", "PM-3", PRICE, &r);
        assert_success(&r, "O1", "PM-3", "PAID", 1);
        h_assert_str(&r, "status", "PAID");
        h_resp_free(&r);
    }
    h_db_exec("UPDATE orders SET status = 3 WHERE order_no = 'O1'");
    h_callback(h_port(), "O1", "PM-3", PRICE, &r);
    assert_success(&r, "O1", "PM-3", "PAID", 1);
    h_assert_str(&r, "status", "SHIPPED");
    h_resp_free(&r);
    ck_assert_int_eq(hits, cache_hits());
}
END_TEST

/* A first callback is never answered from memory: only a record read back
 * from the database fills it. */
START_TEST(first_callback_on_a_terminal_order_is_written)
{
    long long hits = cache_hits();
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 4);
    h_callback(h_port(), "O1", "PM-4", PRICE, &r);
    assert_success(&r, "O1", "PM-4", "REFUND_REQUIRED", 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(hits, cache_hits());
}
END_TEST

/* ---- storm --------------------------------------------------------------- */

struct storm_arg {
    int port;
    const char *body;
    size_t len;
    const char *const *headers;
    int status[STORM_TOTAL];
    int duplicate[STORM_TOTAL]; /* 1, 0, or -1 when absent */
    int paid[STORM_TOTAL];      /* result == "PAID" */
};

/* One storm request: no Check assertions here, this runs on many threads. */
static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    struct h_resp r;
    int rc = h_http(a->port, "POST", "/pay/callback", a->headers, a->body, a->len, &r);

    a->status[i] = r.status;
    a->duplicate[i] = h_json_get_bool(r.body, "duplicate");
    a->paid[i] = h_json_eq_str(r.body, "result", "PAID");
    h_resp_free(&r);
    return rc != 0 || a->status[i] != 200;
}

START_TEST(storm_of_identical_callbacks_pays_exactly_once)
{
    static struct storm_arg a;
    char body[256], ts[32], sig[H_SIG_HEX_LEN + 1], ts_hdr[64], sig_hdr[96];
    const char *headers[] = { "Content-Type: application/json", ts_hdr, sig_hdr, NULL };
    struct h_storm_stats st;
    int ok = 0, fresh = 0, dup = 0, paid = 0, first_bad = -1;

    h_db_insert_order("OSTORM", "u1001", PRICE, 1);
    a.port = h_port();
    a.len = h_callback_body(body, sizeof body, "OSTORM", "PSTORM", PRICE);
    a.body = body;
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    h_sign(H_SECRET, ts, body, a.len, sig);
    snprintf(ts_hdr, sizeof ts_hdr, "X-Timestamp: %s", ts);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    a.headers = headers;

    ck_assert_int_eq(0, h_storm(STORM_THREADS, STORM_TOTAL, storm_call, &a, &st));
    printf("storm: %.0f req/s p50 %.1f ms p99 %.1f ms (%d clients, %d requests, max %.1f ms)\n",
           st.rps, st.p50_us / 1000.0, st.p99_us / 1000.0, STORM_THREADS, STORM_TOTAL,
           st.max_us / 1000.0);
    for (int i = 0; i < STORM_TOTAL; i++) {
        ok += a.status[i] == 200;
        fresh += a.duplicate[i] == 0;
        dup += a.duplicate[i] == 1;
        paid += a.paid[i];
        if (a.status[i] != 200 && first_bad < 0)
            first_bad = i;
    }
    ck_assert_msg(ok == STORM_TOTAL, "expected %d x 200, got %d (request %d: HTTP %d)", STORM_TOTAL,
                  ok, first_bad, first_bad >= 0 ? a.status[first_bad] : 0);
    ck_assert_int_eq(1, fresh);
    ck_assert_int_eq(STORM_TOTAL - 1, dup);
    ck_assert_int_eq(STORM_TOTAL, paid);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(2, order_status("OSTORM"));
    ck_assert_int_eq(1, paid_events("OSTORM"));
    ck_assert_int_eq(1, outbox_rows());
}
END_TEST

/* ---- double payment ------------------------------------------------------ */

START_TEST(second_pay_no_on_paid_order_requires_refund)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);

    h_callback(h_port(), "O1", "P2", PRICE, &r);
    assert_success(&r, "O1", "P2", "REFUND_REQUIRED", 0);
    h_assert_str(&r, "status", "PAID");
    h_resp_free(&r);

    ck_assert_int_eq(2, records());
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'P2'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'P1'"));
    ck_assert_int_eq(2, order_status("O1"));
    ck_assert_int_eq(1, paid_events("O1"));
    /* and the shop is told, in the same transaction */
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'O1' AND "
                                       "event_type = 'payment.double_charged' AND subject = 'P2'"));
    ck_assert_int_eq(2, outbox_rows());
}
END_TEST

START_TEST(replayed_second_pay_no_repeats_refund_required)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    h_resp_free(&r);
    h_callback(h_port(), "O1", "P2", PRICE, &r);
    assert_success(&r, "O1", "P2", "REFUND_REQUIRED", 0);
    h_resp_free(&r);

    h_callback(h_port(), "O1", "P2", PRICE, &r);
    assert_success(&r, "O1", "P2", "REFUND_REQUIRED", 1);
    h_resp_free(&r);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 1);
    h_resp_free(&r);

    ck_assert_int_eq(2, records());
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'P2'"));
    ck_assert_int_eq(2, outbox_rows()); /* order.paid, one payment.double_charged */
}
END_TEST

/* Orders no longer waiting for payment: PAID by an earlier pay_no (written
 * directly), SHIPPED, FINISHED, CANCELED. A payment of one that was paid is
 * a double charge, announced by a payment.double_charged event; of a
 * CANCELED one (never paid), none. */
static const int closed_status[] = { 2, 3, 4, 9 };

START_TEST(callback_on_closed_order_requires_refund)
{
    int st = closed_status[_i];
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, st);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "REFUND_REQUIRED", 0);
    h_resp_free(&r);
    ck_assert_int_eq(st, order_status("O1"));
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'P1'"));
    ck_assert_int_eq(st == 9 ? 0 : 1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'O1' AND "
                                    "event_type = 'payment.double_charged' AND subject = 'P1'"));
    ck_assert_int_eq(st == 9 ? 0 : 1, outbox_rows());
}
END_TEST

/* ---- pay_no conflicts ---------------------------------------------------- */

START_TEST(same_pay_no_with_another_amount_conflicts)
{
    struct h_resp r;
    char *amount;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    h_resp_free(&r);

    h_callback(h_port(), "O1", "P1", "19.90", &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);

    ck_assert_int_eq(1, records());
    amount = h_db_scalar_str("SELECT amount FROM payment_record WHERE pay_no = 'P1'");
    ck_assert_pstr_eq(PRICE, amount);
    free(amount);
    ck_assert_int_eq(2, order_status("O1"));
    ck_assert_int_eq(1, outbox_rows());
}
END_TEST

START_TEST(same_pay_no_for_another_order_conflicts)
{
    struct h_resp r;
    char *order_no;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_db_insert_order("O2", "u1002", PRICE, 1);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    h_resp_free(&r);

    h_callback(h_port(), "O2", "P1", PRICE, &r);
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);

    ck_assert_int_eq(1, records());
    order_no = h_db_scalar_str("SELECT order_no FROM payment_record WHERE pay_no = 'P1'");
    ck_assert_pstr_eq("O1", order_no);
    free(order_no);
    ck_assert_int_eq(1, order_status("O2"));
    ck_assert_int_eq(0, paid_events("O2"));
    ck_assert_int_eq(1, outbox_rows());
}
END_TEST

/* ---- amount and order checks --------------------------------------------- */

static const char *const wrong_amounts[] = { "19.90", "899.01", "898.99", "8990.00", "0.00" };

START_TEST(amount_other_than_the_order_is_rejected)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", wrong_amounts[_i], &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    assert_nothing_written("O1");
}
END_TEST

START_TEST(rejected_amount_leaves_the_pay_no_unused)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_callback(h_port(), "O1", "P1", "19.90", &r);
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

START_TEST(callback_for_unknown_order_is_not_found)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    for (int i = 0; i < 2; i++) { /* the bank retries: still not found */
        h_callback(h_port(), "NOSUCH", "P1", PRICE, &r);
        h_assert_error(&r, 404, "ORDER_NOT_FOUND");
        h_resp_free(&r);
    }
    assert_nothing_written("O1");
}
END_TEST

/* ---- authentication ------------------------------------------------------ */

/* Posts body to /pay/callback with exactly the given headers, then asserts
 * 401 BAD_SIGNATURE and that O1 was left alone. */
static void assert_rejected_401(const char *body, const char *ts_hdr, const char *sig_hdr)
{
    const char *headers[4] = { "Content-Type: application/json", NULL, NULL, NULL };
    size_t n = 1;
    struct h_resp r;

    if (ts_hdr != NULL)
        headers[n++] = ts_hdr;
    if (sig_hdr != NULL)
        headers[n++] = sig_hdr;
    h_http(h_port(), "POST", "/pay/callback", headers, body, strlen(body), &r);
    h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
    assert_nothing_written("O1");
}

/* Formats "X-Timestamp: ts" and "X-Signature: HMAC(secret, sign_ts.body)". */
static void signed_headers(const char *secret, long long ts, long long sign_ts, const char *body,
                           char ts_hdr[64], char sig_hdr[96])
{
    char tsbuf[32], sig[H_SIG_HEX_LEN + 1];

    snprintf(tsbuf, sizeof tsbuf, "%lld", sign_ts);
    h_sign(secret, tsbuf, body, strlen(body), sig);
    snprintf(ts_hdr, 64, "X-Timestamp: %lld", ts);
    snprintf(sig_hdr, 96, "X-Signature: %s", sig);
}

static const char good_body[] = "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}";

START_TEST(wrong_secret_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers("not-the-secret", now, now, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(missing_signature_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, now, now, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, NULL);
}
END_TEST

START_TEST(missing_timestamp_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, now, now, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, NULL, sig_hdr);
}
END_TEST

START_TEST(missing_both_headers_is_rejected)
{
    h_db_insert_order("O1", "u1001", PRICE, 1);
    assert_rejected_401(good_body, NULL, NULL);
}
END_TEST

START_TEST(stale_timestamp_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long then = (long long)time(NULL) - SIG_WINDOW_S - 1;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, then, then, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(future_timestamp_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long later =
        (long long)time(NULL) + SIG_WINDOW_S + 5; /* the server reads its clock later */

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, later, later, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(timestamp_inside_the_window_is_accepted)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_post_callback(h_port(), H_SECRET, (long long)time(NULL) - SIG_WINDOW_S + 10, good_body,
                    strlen(good_body), &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
}
END_TEST

START_TEST(signature_over_another_body_is_rejected)
{
    static const char other[] = "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"1.00\"}";
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, now, now, other, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(signature_over_another_timestamp_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, now, now - 5, good_body, ts_hdr, sig_hdr);
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(truncated_signature_is_rejected)
{
    char ts_hdr[64], sig_hdr[96];
    long long now = (long long)time(NULL);

    h_db_insert_order("O1", "u1001", PRICE, 1);
    signed_headers(H_SECRET, now, now, good_body, ts_hdr, sig_hdr);
    sig_hdr[strlen(sig_hdr) - 1] = '\0';
    assert_rejected_401(good_body, ts_hdr, sig_hdr);
}
END_TEST

START_TEST(non_numeric_timestamp_is_rejected)
{
    char sig[H_SIG_HEX_LEN + 1], sig_hdr[96];

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_sign(H_SECRET, "yesterday", good_body, strlen(good_body), sig);
    snprintf(sig_hdr, sizeof sig_hdr, "X-Signature: %s", sig);
    assert_rejected_401(good_body, "X-Timestamp: yesterday", sig_hdr);
}
END_TEST

/* ---- body validation ----------------------------------------------------- */

/* Correctly signed bodies that must each be refused with 400 BAD_REQUEST.
 * field, when set, must be named in the message. */
static const struct bad_body {
    const char *body;
    const char *field;
} bad_bodies[] = {
    { "order_no=O1&pay_no=P1&amount=899.00", NULL }, /* form, not JSON */
    { "", NULL },
    { "{\"order_no\":\"O1\",", NULL }, /* truncated */
    { "[{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}]", NULL },
    { "\"O1\"", NULL },
    { "null", NULL },
    { "42", NULL },
    { "{}", NULL },
    { "{\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":\"O1\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":899.00}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":899}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.001\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"-1.00\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"1e3\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"+899.00\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\" 899.00\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.00 \"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899.\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\".50\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"899,00\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"12345678901.00\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"0x383\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":\"NaN\"}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":null}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":true}", "amount" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\",\"amount\":[\"899.00\"]}", "amount" },
    { "{\"order_no\":\"" ID65 "\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":\"\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":\"O 1\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    /* An escaped NUL would silently cut order_no to "O1"; refusing the whole
     * body is as good as naming the field. */
    { "{\"order_no\":\"O1\\u0000x\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}", NULL },
    { "{\"order_no\":\"\\u8ba2\\u5355\",\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":1,\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":{\"id\":\"O1\"},\"pay_no\":\"P1\",\"amount\":\"899.00\"}", "order_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P 1\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P/1\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1'--\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"P1\\n\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":\"" ID65 "\",\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":true,\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":null,\"amount\":\"899.00\"}", "pay_no" },
    { "{\"order_no\":\"O1\",\"pay_no\":12345,\"amount\":\"899.00\"}", "pay_no" },
};

START_TEST(malformed_body_is_rejected_with_400)
{
    const struct bad_body *b = &bad_bodies[_i];
    struct h_resp r;
    char *msg;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_post_callback(h_port(), H_SECRET, (long long)time(NULL), b->body, strlen(b->body), &r);
    ck_assert_msg(h_check_error(&r, 400, "BAD_REQUEST") == NULL, "body %s: %s", b->body,
                  h_check_error(&r, 400, "BAD_REQUEST"));
    msg = h_json_get_str(r.body, "message");
    ck_assert_msg(b->field == NULL || (msg != NULL && strstr(msg, b->field) != NULL),
                  "body %s: expected the message to name %s: %s", b->body, b->field, r.body);
    free(msg);
    h_resp_free(&r);
    assert_nothing_written("O1");
}
END_TEST

/* ---- MySQL outage -------------------------------------------------------- */

START_TEST(mysql_outage_answers_503_and_loses_nothing)
{
    struct h_resp r;
    const char *retry;
    char *end = NULL;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_db_insert_order("O2", "u1002", PRICE, 1);
    h_services("stop-mysql");

    h_callback(h_port(), "O1", "P1", PRICE, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    retry = h_resp_header(&r, "Retry-After");
    ck_assert_msg(retry != NULL, "expected a Retry-After header: %s", r.body);
    ck_assert_msg(strtol(retry, &end, 10) > 0 && *end == '\0',
                  "expected Retry-After to be positive seconds, got \"%s\"", retry);
    h_resp_free(&r);
    await_readyz(503, &r);
    h_assert_status(&r, 503);
    h_assert_json(&r);
    h_resp_free(&r);

    h_services("start-mysql");
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(2, order_status("O1"));
    ck_assert_int_eq(1, paid_events("O1"));

    /* And the service keeps working for everyone else. */
    h_callback(h_port(), "O2", "P2", PRICE, &r);
    assert_success(&r, "O2", "P2", "PAID", 0);
    h_resp_free(&r);
    await_readyz(200, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(2, records());
    ck_assert_int_eq(2, outbox_rows());
}
END_TEST

/* ---- a schema being re-provisioned ---------------------------------------- */

/* While a server is re-provisioned its procedure is dropped and made again
 * (DROP PROCEDURE + CREATE PROCEDURE, MariaDB's only way to replace one):
 * a callback in between meets errno 1305. That is a passing state, so the
 * answer is 503 with Retry-After, nothing written, and the retry pays. */
START_TEST(a_callback_while_the_procedure_is_missing_is_503_and_the_retry_pays)
{
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, 1);
    h_db_exec("DROP PROCEDURE pay_callback_v3");

    h_callback(h_port(), "O1", "P1", PRICE, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "expected Retry-After: %s", r.body);
    h_resp_free(&r);
    assert_nothing_written("O1");

    h_services("provision");
    h_callback(h_port(), "O1", "P1", PRICE, &r);
    assert_success(&r, "O1", "P1", "PAID", 0);
    h_resp_free(&r);
    ck_assert_int_eq(1, records());
}
END_TEST

/* A restart of MariaDB does not re-provision a database already at the
 * schema of the tree: that would drop the procedure under live callbacks.
 * The seed's INSERT IGNORE would bring back a deleted stock row. */
START_TEST(a_restarted_mariadb_is_not_reprovisioned)
{
    h_db_exec("DELETE FROM stock WHERE sku = 'HAT-7'");
    h_services("stop-mysql");
    h_services("start-mysql");
    ck_assert_msg(h_db_scalar_ll("SELECT COUNT(*) FROM stock WHERE sku = 'HAT-7'") == 0,
                  "start-mysql re-provisioned a database already at the tree's schema");
    h_services("start-mysql"); /* running: nothing to do either */
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM stock WHERE sku = 'HAT-7'"));
}
END_TEST

/* ---- secret rotation ------------------------------------------------------ */

#define ROTATION_NEW "rotation-new-secret-2f9c-0123456789ab"
#define ROTATION_OLD "rotation-old-secret-77a1-0123456789ab"

/* A server outside development mode holding two secrets, as during a
 * rotation: the bank may sign with either until it has switched. */
static void rotation_server_up(void)
{
    static const char *const env[] = {
        "PAYCALLBACK_DEV=0",
        "PAYCALLBACK_CALLBACK_SECRET=" ROTATION_NEW,
        "PAYCALLBACK_CALLBACK_PREVIOUS_SECRET=" ROTATION_OLD,
        "PAYCALLBACK_AUTH_KEYS=ops:rotation-operator-key-01",
        NULL,
    };

    h_fixture_server_up_env(env);
}

/* Posts good_body for O1 signed with secret; returns the status. */
static int post_signed_with(const char *secret)
{
    struct h_resp r;
    int status;

    h_post_callback(h_port(), secret, (long long)time(NULL), good_body, strlen(good_body), &r);
    status = r.status;
    if (status == 401)
        h_assert_error(&r, 401, "BAD_SIGNATURE");
    h_resp_free(&r);
    return status;
}

START_TEST(rotation_accepts_the_current_secret)
{
    h_db_insert_order("O1", "u1001", PRICE, 1);
    ck_assert_int_eq(200, post_signed_with(ROTATION_NEW));
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

START_TEST(rotation_accepts_the_previous_secret)
{
    h_db_insert_order("O1", "u1001", PRICE, 1);
    ck_assert_int_eq(200, post_signed_with(ROTATION_OLD));
    ck_assert_int_eq(2, order_status("O1"));
}
END_TEST

START_TEST(rotation_refuses_any_other_secret)
{
    h_db_insert_order("O1", "u1001", PRICE, 1);
    ck_assert_int_eq(401, post_signed_with(H_SECRET));
    ck_assert_int_eq(401, post_signed_with(ROTATION_NEW "x"));
    assert_nothing_written("O1");
}
END_TEST

/* ---- lock waits ----------------------------------------------------------- */

struct held_call {
    int port;
    int rc;
    struct h_resp r;
};

static void *send_held_callback(void *arg)
{
    struct held_call *h = arg;

    h->rc = h_callback(h->port, "OLOCK", "PLOCK", PRICE, &h->r);
    return NULL;
}

/* paycallback_mysql_retries_total from /metrics, or -1. */
static long long mysql_retries(void)
{
    static const char name[] = "\npaycallback_mysql_retries_total ";
    struct h_resp r;
    const char *p;
    long long n = -1;

    if (h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r) == 0 && r.body != NULL &&
        (p = strstr(r.body, name)) != NULL)
        n = strtoll(p + sizeof(name) - 1, NULL, 10);
    h_resp_free(&r);
    return n;
}

/* Another transaction holds the order's row lock past MySQL's lock wait
 * timeout: the callback's attempt fails with 1205 and rolls back whole,
 * the retry runs it again once the lock is gone, and it pays once. */
START_TEST(callback_behind_a_held_order_lock_is_retried_and_pays_once)
{
    struct held_call h = { .port = h_port() };
    struct h_deadline d = h_deadline_in(20000);
    long long before = mysql_retries();
    struct h_db *db;
    pthread_t t;

    ck_assert_int_ge(before, 0);
    h_db_insert_order("OLOCK", "u1001", PRICE, 1);
    db = h_db_open();
    h_db_sql(db, "START TRANSACTION");
    h_db_sql(db, "SELECT status FROM orders WHERE order_no = 'OLOCK' FOR UPDATE");
    ck_assert_int_eq(0, pthread_create(&t, NULL, send_held_callback, &h));
    while (mysql_retries() <= before)
        ck_assert_msg(h_deadline_wait(&d), "the callback was never retried");
    ck_assert_int_eq(0, records()); /* the failed attempt left nothing */
    h_db_sql(db, "ROLLBACK");
    pthread_join(t, NULL);
    h_db_close(db);

    ck_assert_int_eq(0, h.rc);
    assert_success(&h.r, "OLOCK", "PLOCK", "PAID", 0);
    h_resp_free(&h.r);
    ck_assert_int_eq(1, records());
    ck_assert_int_eq(2, order_status("OLOCK"));
    ck_assert_int_eq(1, paid_events("OLOCK"));
}
END_TEST

/* ---- on the event loops (http.event_loop) ------------------------------- */

/* The server of these tests answers /pay/callback on its event loops. */
static void loop_server_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_HTTP_EVENT_LOOP=1", NULL };

    h_fixture_server_up_env(env);
}

/* One callback of the sequence below. */
struct seq_step {
    const char *order_no, *pay_no, *amount;
};

/* Every answer the route gives, in an order that reaches each: a first
 * payment, repeats (read back through the hint), a second charge, a
 * conflict, a mismatch, the pay_no it left unused, an unknown order, a
 * canceled order. */
static const struct seq_step answer_seq[] = { { "OS1", "PS1", PRICE },   { "OS1", "PS1", PRICE },
                                              { "OS1", "PS1", "899" },   { "OS1", "PS2", PRICE },
                                              { "OS1", "PS2", PRICE },   { "OS2", "PS1", PRICE },
                                              { "OS2", "PS3", "1.00" },  { "OS2", "PS3", PRICE },
                                              { "OS2", "PS3", PRICE },   { "NOPE", "PS4", PRICE },
                                              { "OS3", "PS5", PRICE },   { "OS3", "PS5", PRICE },
                                              { "OS2", "PS3", "900.00" } };
#define ANSWER_SEQ_N (sizeof answer_seq / sizeof answer_seq[0])

/* Runs answer_seq on a fresh database against the running server, with
 * fixed request ids, keeping each status and body (malloc'd). */
static void run_answer_seq(int status[ANSWER_SEQ_N], char *body[ANSWER_SEQ_N])
{
    char b[256], ts[32], sig[H_SIG_HEX_LEN + 1], h_ts[64], h_sig[128], h_id[64];
    const char *hdrs[] = { h_ts, h_sig, h_id, "Content-Type: application/json", NULL };
    struct h_resp r;
    size_t len;

    h_fixture_clean();
    h_db_insert_order("OS1", "u1", PRICE, 1);
    h_db_insert_order("OS2", "u2", PRICE, 1);
    h_db_insert_order("OS3", "u3", PRICE, 9);
    for (size_t i = 0; i < ANSWER_SEQ_N; i++) {
        len = h_callback_body(b, sizeof b, answer_seq[i].order_no, answer_seq[i].pay_no,
                              answer_seq[i].amount);
        snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
        h_sign(H_SECRET, ts, b, len, sig);
        snprintf(h_ts, sizeof h_ts, "X-Timestamp: %s", ts);
        snprintf(h_sig, sizeof h_sig, "X-Signature: %s", sig);
        snprintf(h_id, sizeof h_id, "X-Request-Id: seq-%zu", i);
        h_http(h_port(), "POST", "/pay/callback", hdrs, b, len, &r);
        status[i] = r.status;
        body[i] = strdup(r.body);
        h_resp_free(&r);
    }
}

/* Connections MariaDB closed under the pool (a node restarted, a
 * failover): a callback on the loop meeting a closed link is re-run on a
 * handler thread, which connects again, as a handler thread's own
 * callback would be; none is answered 503 once the server is back. */
START_TEST(event_loop_reconnects_a_connection_the_server_closed)
{
    char order[16], pay[16];
    struct h_resp r;
    long long id = 0, killed = 0;

    h_fixture_clean();
    loop_server_up();
    for (int i = 0; i < 3; i++) { /* the pool's connections in use, prepared */
        snprintf(order, sizeof order, "OK%d", i);
        snprintf(pay, sizeof pay, "PK%d", i);
        h_db_insert_order(order, "u1", PRICE, 1);
        h_callback(h_port(), order, pay, PRICE, &r);
        assert_success(&r, order, pay, "PAID", 0);
        h_resp_free(&r);
    }
    /* Every connection of the service's user but this one, closed. */
    while ((id = h_db_scalar_ll(
                "SELECT COALESCE(MIN(id), 0) FROM information_schema.PROCESSLIST "
                "WHERE user = SUBSTRING_INDEX(USER(), '@', 1) AND id <> CONNECTION_ID() "
                "AND id > %lld",
                id)) > 0) {
        h_db_exec("KILL CONNECTION %lld", id);
        killed++;
    }
    ck_assert_int_ge(killed, 1);
    for (int i = 3; i < 8; i++) {
        snprintf(order, sizeof order, "OK%d", i);
        snprintf(pay, sizeof pay, "PK%d", i);
        h_db_insert_order(order, "u1", PRICE, 1);
        h_callback(h_port(), order, pay, PRICE, &r);
        ck_assert_msg(r.status == 200, "callback %d after the server closed its links: %d %s", i,
                      r.status, r.body);
        assert_success(&r, order, pay, "PAID", 0);
        h_resp_free(&r);
    }
    h_fixture_server_down();
    ck_assert_int_eq(8, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE status = 1"));
}
END_TEST

/* The same callbacks get the same answers, byte for byte, from a handler
 * thread and from the event loop; the loop answered them itself. */
START_TEST(event_loop_answers_byte_for_byte_as_the_handler_threads)
{
    static const char *const off[] = { "PAYCALLBACK_HTTP_EVENT_LOOP=0", NULL };
    static const char *const on[] = { "PAYCALLBACK_HTTP_EVENT_LOOP=1", NULL };
    int st_off[ANSWER_SEQ_N], st_on[ANSWER_SEQ_N];
    char *b_off[ANSWER_SEQ_N], *b_on[ANSWER_SEQ_N];
    long long answered;

    h_fixture_server_up_env(off);
    run_answer_seq(st_off, b_off);
    h_fixture_server_down();
    h_fixture_server_up_env(on);
    /* The first use of each pooled connection runs on a handler thread,
     * which prepares its statements; the last run is compared. */
    for (int run = 0; run < 3; run++) {
        if (run > 0)
            for (size_t i = 0; i < ANSWER_SEQ_N; i++)
                free(b_on[i]);
        run_answer_seq(st_on, b_on);
    }
    answered = h_metric("paycallback_http_loop_answered_total");
    h_fixture_server_down();
    for (size_t i = 0; i < ANSWER_SEQ_N; i++) {
        ck_assert_msg(st_off[i] == st_on[i] && strcmp(b_off[i], b_on[i]) == 0,
                      "callback %zu: %d %s from a handler thread, %d %s from the loop", i,
                      st_off[i], b_off[i], st_on[i], b_on[i]);
        free(b_off[i]);
        free(b_on[i]);
    }
    ck_assert_msg(answered >= (long long)ANSWER_SEQ_N,
                  "the loop answered %lld callbacks itself, expected at least %zu", answered,
                  ANSWER_SEQ_N);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *pay_callback_suite(void)
{
    Suite *s = suite_create("pay_callback");
    TCase *tc;

    tc = h_tcase("first callback pays the order", TC_TIMEOUT_S);
    tcase_add_test(tc, callback_on_waiting_order_marks_it_paid);
    tcase_add_test(tc, amount_without_cents_matches_the_order);
    tcase_add_test(tc, identifiers_of_64_chars_are_accepted);
    tcase_add_test(tc, unknown_fields_in_the_body_are_ignored);
    suite_add_tcase(s, tc);

    tc = h_tcase("replays are answered from the record", TC_TIMEOUT_S);
    tcase_add_test(tc, replayed_callback_answers_duplicate_without_writing);
    tcase_add_test(tc, replay_with_amount_spelt_differently_is_a_duplicate);
    tcase_add_test(tc, replay_of_a_payment_recorded_elsewhere_is_a_duplicate);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("repeats that cannot change are answered from memory", TC_TIMEOUT_S,
                      remembering_server_up, h_fixture_server_down);
    tcase_add_loop_test(tc, repeat_on_a_terminal_order_is_answered_from_memory_byte_for_byte, 0,
                        (int)(sizeof terminal_status / sizeof terminal_status[0]));
    tcase_add_test(tc, repeat_on_an_order_that_can_move_reads_the_database);
    tcase_add_test(tc, first_callback_on_a_terminal_order_is_written);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("repeats from memory are answered on the polling thread", TC_TIMEOUT_S,
                      inline_server_up, h_fixture_server_down);
    tcase_add_loop_test(tc, repeat_on_a_terminal_order_is_answered_from_memory_byte_for_byte, 0,
                        (int)(sizeof terminal_status / sizeof terminal_status[0]));
    tcase_add_test(tc, repeat_on_an_order_that_can_move_reads_the_database);
    suite_add_tcase(s, tc);

    tc = h_tcase("a held lock is waited out and retried", TC_TIMEOUT_S);
    tcase_add_test(tc, callback_behind_a_held_order_lock_is_retried_and_pays_once);
    suite_add_tcase(s, tc);

    tc = h_tcase("a storm of duplicates pays once", SLOW_TIMEOUT_S);
    tcase_add_test(tc, storm_of_identical_callbacks_pays_exactly_once);
    suite_add_tcase(s, tc);

    tc = h_tcase("a second charge requires a refund", TC_TIMEOUT_S);
    tcase_add_test(tc, second_pay_no_on_paid_order_requires_refund);
    tcase_add_test(tc, replayed_second_pay_no_repeats_refund_required);
    tcase_add_loop_test(tc, callback_on_closed_order_requires_refund, 0,
                        (int)(sizeof closed_status / sizeof closed_status[0]));
    suite_add_tcase(s, tc);

    tc = h_tcase("a reused pay_no conflicts", TC_TIMEOUT_S);
    tcase_add_test(tc, same_pay_no_with_another_amount_conflicts);
    tcase_add_test(tc, same_pay_no_for_another_order_conflicts);
    suite_add_tcase(s, tc);

    tc = h_tcase("amount and order are checked", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, amount_other_than_the_order_is_rejected, 0,
                        (int)(sizeof wrong_amounts / sizeof wrong_amounts[0]));
    tcase_add_test(tc, rejected_amount_leaves_the_pay_no_unused);
    tcase_add_test(tc, callback_for_unknown_order_is_not_found);
    suite_add_tcase(s, tc);

    tc = h_tcase("unsigned callbacks are refused", TC_TIMEOUT_S);
    tcase_add_test(tc, wrong_secret_is_rejected);
    tcase_add_test(tc, missing_signature_is_rejected);
    tcase_add_test(tc, missing_timestamp_is_rejected);
    tcase_add_test(tc, missing_both_headers_is_rejected);
    tcase_add_test(tc, stale_timestamp_is_rejected);
    tcase_add_test(tc, future_timestamp_is_rejected);
    tcase_add_test(tc, timestamp_inside_the_window_is_accepted);
    tcase_add_test(tc, signature_over_another_body_is_rejected);
    tcase_add_test(tc, signature_over_another_timestamp_is_rejected);
    tcase_add_test(tc, truncated_signature_is_rejected);
    tcase_add_test(tc, non_numeric_timestamp_is_rejected);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("two secrets during a rotation", TC_TIMEOUT_S, rotation_server_up,
                      h_fixture_server_down);
    tcase_add_test(tc, rotation_accepts_the_current_secret);
    tcase_add_test(tc, rotation_accepts_the_previous_secret);
    tcase_add_test(tc, rotation_refuses_any_other_secret);
    suite_add_tcase(s, tc);

    tc = h_tcase("malformed bodies are refused", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, malformed_body_is_rejected_with_400, 0,
                        (int)(sizeof bad_bodies / sizeof bad_bodies[0]));
    suite_add_tcase(s, tc);

    tc = h_tcase_with("every callback case on the event loop", SLOW_TIMEOUT_S, loop_server_up,
                      h_fixture_server_down);
    tcase_add_test(tc, callback_on_waiting_order_marks_it_paid);
    tcase_add_test(tc, amount_without_cents_matches_the_order);
    tcase_add_test(tc, identifiers_of_64_chars_are_accepted);
    tcase_add_test(tc, replayed_callback_answers_duplicate_without_writing);
    tcase_add_test(tc, replay_with_amount_spelt_differently_is_a_duplicate);
    tcase_add_test(tc, replay_of_a_payment_recorded_elsewhere_is_a_duplicate);
    tcase_add_test(tc, callback_behind_a_held_order_lock_is_retried_and_pays_once);
    tcase_add_test(tc, storm_of_identical_callbacks_pays_exactly_once);
    tcase_add_test(tc, second_pay_no_on_paid_order_requires_refund);
    tcase_add_test(tc, replayed_second_pay_no_repeats_refund_required);
    tcase_add_loop_test(tc, callback_on_closed_order_requires_refund, 0,
                        (int)(sizeof closed_status / sizeof closed_status[0]));
    tcase_add_test(tc, same_pay_no_with_another_amount_conflicts);
    tcase_add_test(tc, same_pay_no_for_another_order_conflicts);
    tcase_add_loop_test(tc, amount_other_than_the_order_is_rejected, 0,
                        (int)(sizeof wrong_amounts / sizeof wrong_amounts[0]));
    tcase_add_test(tc, rejected_amount_leaves_the_pay_no_unused);
    tcase_add_test(tc, callback_for_unknown_order_is_not_found);
    tcase_add_test(tc, wrong_secret_is_rejected);
    tcase_add_test(tc, stale_timestamp_is_rejected);
    tcase_add_loop_test(tc, malformed_body_is_rejected_with_400, 0,
                        (int)(sizeof bad_bodies / sizeof bad_bodies[0]));
    suite_add_tcase(s, tc);

    tc = h_tcase_with("the event loop answers as the handler threads do", TC_TIMEOUT_S, NULL, NULL);
    tcase_add_test(tc, event_loop_answers_byte_for_byte_as_the_handler_threads);
    tcase_add_test(tc, event_loop_reconnects_a_connection_the_server_closed);
    suite_add_tcase(s, tc);

    tc = h_tcase("a mysql outage loses nothing", SLOW_TIMEOUT_S);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, mysql_outage_answers_503_and_loses_nothing);
    tcase_add_test(tc, a_restarted_mariadb_is_not_reprovisioned);
    suite_add_tcase(s, tc);

    tc = h_tcase("a schema being re-provisioned", TC_TIMEOUT_S);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_schema_back);
    tcase_add_test(tc, a_callback_while_the_procedure_is_missing_is_503_and_the_retry_pays);
    suite_add_tcase(s, tc);

    return s;
}

CHECK_MAIN(pay_callback_suite, NULL, NULL);
