/* check_order_transitions.c - the order state machine over HTTP:
 * POST /order/{order_no}/ship, /finish and /cancel from every status,
 * legal, duplicate and illegal; cancel giving stock back and turning a
 * paid order's payment into REFUND_REQUIRED; a full lifecycle with its
 * outbox events; and 20 concurrent ships of one order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 30
#define SLOW_TIMEOUT_S 120
#define SHIP_CLIENTS 20
#define PRICE "899.00"

#define A16 "AAAAAAAAAAAAAAAA"
#define ID65 A16 A16 A16 A16 "A"

enum {
    WAIT_PAY = 1,
    PAID = 2,
    SHIPPED = 3,
    FINISHED = 4,
    CANCELED = 9
};

static long long status_of(const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM orders WHERE order_no = '%s'", order_no);
}

static long long events(const char *type, const char *order_no)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = '%s' "
                          "AND order_no = '%s'",
                          type, order_no);
}

static long long stock(void)
{
    return h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'");
}

/* POST /order/<order_no>/<action> with X-Request-Id: rid (none when
 * NULL). The suite log outlives runs, so a test that looks for its own
 * log line sends an id no other run used. */
static void act_as(const char *order_no, const char *action, const char *rid, struct h_resp *r)
{
    char path[160], hdr[96];
    const char *headers[] = { hdr, NULL };

    snprintf(path, sizeof path, "/order/%s/%s", order_no, action);
    snprintf(hdr, sizeof hdr, "X-Request-Id: %s", rid ? rid : "");
    h_http(h_port(), "POST", path, rid ? headers : NULL, "", 0, r);
}

static void act(const char *order_no, const char *action, struct h_resp *r)
{
    act_as(order_no, action, NULL, r);
}

/* A request id unique to this run, for finding its log lines. */
static void unique_rid(char *buf, size_t sz, const char *what)
{
    snprintf(buf, sz, "%s-%lld-%d", what, (long long)time(NULL), (int)getpid());
}

/* Creates an order over HTTP (SHOE-42, quantity q) and returns its
 * order_no (free it). */
static char *create_order(const char *request_id, int q)
{
    char token[H_TOKEN_BUF], *order_no;
    struct h_resp r;

    h_token_apply(h_port(), token);
    h_order_create(h_port(), token, "u1001", request_id, "SHOE-42", q, &r);
    h_assert_status(&r, 201);
    order_no = h_json_get_str(r.body, "order_no");
    h_resp_free(&r);
    ck_assert_ptr_nonnull(order_no);
    return order_no;
}

static void pay(const char *order_no, const char *pay_no, const char *amount)
{
    struct h_resp r;

    h_callback(h_port(), order_no, pay_no, amount, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "result", "PAID");
    h_resp_free(&r);
}

/* Asserts a 200 order reply in status want with the duplicate flag. */
static void assert_moved(const struct h_resp *r, const char *order_no, const char *want,
                         int duplicate)
{
    h_assert_status(r, 200);
    h_assert_json(r);
    h_assert_str(r, "order_no", order_no);
    h_assert_str(r, "status", want);
    h_assert_bool(r, "duplicate", duplicate);
}

/* ---- the table, every cell ----------------------------------------------- */

static const struct {
    const char *action;
    int to;
    const char *to_name;
    const char *event;
} actions[] = {
    { "ship", SHIPPED, "SHIPPED", "order.shipped" },
    { "finish", FINISHED, "FINISHED", "order.finished" },
    { "cancel", CANCELED, "CANCELED", "order.canceled" },
};

static const int statuses[] = { WAIT_PAY, PAID, SHIPPED, FINISHED, CANCELED };

/* The contract's table: 1->2, 1->9, 2->3, 2->9, 3->4. */
static int allowed(int from, int to)
{
    return (from == WAIT_PAY && to == CANCELED) || (from == PAID && to == SHIPPED) ||
           (from == PAID && to == CANCELED) || (from == SHIPPED && to == FINISHED);
}

START_TEST(every_status_and_action_follows_the_table)
{
    int from = statuses[_i / 3];
    const char *action = actions[_i % 3].action;
    int to = actions[_i % 3].to;
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, from);
    act("O1", action, &r);
    if (from == to) {
        assert_moved(&r, "O1", actions[_i % 3].to_name, 1);
        ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM outbox"));
    } else if (allowed(from, to)) {
        assert_moved(&r, "O1", actions[_i % 3].to_name, 0);
        ck_assert_int_eq(to, status_of("O1"));
        ck_assert_int_eq(1, events(actions[_i % 3].event, "O1"));
        ck_assert_int_eq(to == CANCELED ? 101 : 100, stock());
    } else {
        ck_assert_msg(h_check_error(&r, 409, "ILLEGAL_TRANSITION") == NULL, "%s from %d: %s",
                      action, from, h_check_error(&r, 409, "ILLEGAL_TRANSITION"));
        ck_assert_int_eq(from, status_of("O1"));
        ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM outbox"));
        ck_assert_int_eq(100, stock());
    }
    h_resp_free(&r);
}
END_TEST

START_TEST(illegal_transition_is_alerted_and_counted)
{
    char rid[64], rid_kv[80];
    const char *const parts[] = {
        "alert=ILLEGAL_TRANSITION", "order_no=OILLEGAL", "from=WAIT_PAY", "to=SHIPPED", rid_kv, NULL
    };
    struct h_resp r;
    char *line;

    unique_rid(rid, sizeof rid, "illegal");
    snprintf(rid_kv, sizeof rid_kv, "request_id=%s", rid);
    h_db_insert_order("OILLEGAL", "u1001", PRICE, WAIT_PAY);
    act_as("OILLEGAL", "ship", rid, &r);
    h_assert_error(&r, 409, "ILLEGAL_TRANSITION");
    h_resp_free(&r);
    line = h_log_find(parts, 5000);
    ck_assert_msg(line != NULL, "no ILLEGAL_TRANSITION alert in the log");
    free(line);
    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "paycallback_illegal_transitions_total") != NULL,
                  "no illegal transition counter in /metrics");
    ck_assert_msg(strstr(r.body, "paycallback_illegal_transitions_total 0\n") == NULL,
                  "the illegal transition was not counted");
    h_resp_free(&r);
}
END_TEST

/* ---- cancel -------------------------------------------------------------- */

START_TEST(cancel_gives_the_stock_back)
{
    char *order_no = create_order("r1", 2);
    struct h_resp r;

    ck_assert_int_eq(98, stock());
    act(order_no, "cancel", &r);
    assert_moved(&r, order_no, "CANCELED", 0);
    h_resp_free(&r);
    ck_assert_int_eq(100, stock());

    act(order_no, "cancel", &r); /* a repeat gives nothing back twice */
    assert_moved(&r, order_no, "CANCELED", 1);
    h_resp_free(&r);
    ck_assert_int_eq(100, stock());
    ck_assert_int_eq(1, events("order.canceled", order_no));
    free(order_no);
}
END_TEST

START_TEST(cancel_of_a_paid_order_requires_a_refund)
{
    char *order_no = create_order("r1", 1);
    char rid[64], rid_kv[80];
    const char *parts[] = { "alert=REFUND_REQUIRED", "pay_no=PCANCEL", "reason=order_canceled",
                            rid_kv, NULL };
    char path[128], *line;
    struct h_resp r;

    unique_rid(rid, sizeof rid, "refund");
    snprintf(rid_kv, sizeof rid_kv, "request_id=%s", rid);
    pay(order_no, "PCANCEL", PRICE);
    act_as(order_no, "cancel", rid, &r);
    assert_moved(&r, order_no, "CANCELED", 0);
    h_resp_free(&r);
    ck_assert_int_eq(2,
                     h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'PCANCEL'"));
    ck_assert_int_eq(100, stock());
    line = h_log_find(parts, 5000);
    ck_assert_msg(line != NULL, "no REFUND_REQUIRED alert for the cancelled payment");
    free(line);

    snprintf(path, sizeof path, "/order/%s", order_no);
    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "CANCELED");
    ck_assert_msg(strstr(r.body, "\"pay_no\":\"PCANCEL\",\"amount\":\"899.00\","
                                 "\"status\":\"REFUND_REQUIRED\"") != NULL,
                  "expected PCANCEL REFUND_REQUIRED: %s", r.body);
    h_resp_free(&r);

    /* The bank retries the callback: still answered as the first time. */
    h_callback(h_port(), order_no, "PCANCEL", PRICE, &r);
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    free(order_no);
}
END_TEST

/* ---- a whole life -------------------------------------------------------- */

START_TEST(order_lives_from_create_to_finish)
{
    char *order_no = create_order("r1", 1);
    struct h_resp r;

    pay(order_no, "P1", PRICE);
    ck_assert_int_eq(PAID, status_of(order_no));

    act(order_no, "finish", &r); /* not shipped yet */
    h_assert_error(&r, 409, "ILLEGAL_TRANSITION");
    h_resp_free(&r);

    act(order_no, "ship", &r);
    assert_moved(&r, order_no, "SHIPPED", 0);
    h_assert_str(&r, "amount", PRICE);
    h_assert_str(&r, "user_id", "u1001");
    h_assert_str(&r, "request_id", "r1");
    h_resp_free(&r);
    act(order_no, "ship", &r);
    assert_moved(&r, order_no, "SHIPPED", 1);
    h_resp_free(&r);

    act(order_no, "cancel", &r); /* too late to cancel */
    h_assert_error(&r, 409, "ILLEGAL_TRANSITION");
    h_resp_free(&r);

    act(order_no, "finish", &r);
    assert_moved(&r, order_no, "FINISHED", 0);
    h_resp_free(&r);
    act(order_no, "finish", &r);
    assert_moved(&r, order_no, "FINISHED", 1);
    h_resp_free(&r);

    ck_assert_int_eq(FINISHED, status_of(order_no));
    ck_assert_int_eq(1, events("order.paid", order_no));
    ck_assert_int_eq(1, events("order.shipped", order_no));
    ck_assert_int_eq(1, events("order.finished", order_no));
    ck_assert_int_eq(0, events("order.canceled", order_no));
    ck_assert_int_eq(99, stock());
    free(order_no);
}
END_TEST

/* ---- concurrency --------------------------------------------------------- */

struct ship_storm {
    int port;
    const char *order_no;
    int status[SHIP_CLIENTS];
    int duplicate[SHIP_CLIENTS];
};

static int ship_call(int i, void *p)
{
    struct ship_storm *a = p;
    char path[128];
    struct h_resp r;

    snprintf(path, sizeof path, "/order/%s/ship", a->order_no);
    h_http(a->port, "POST", path, NULL, "", 0, &r);
    a->status[i] = r.status;
    a->duplicate[i] = h_json_get_bool(r.body, "duplicate");
    h_resp_free(&r);
    return a->status[i] != 200;
}

START_TEST(concurrent_ships_of_one_order_ship_it_once)
{
    static struct ship_storm a;
    struct h_storm_stats st;
    int ok = 0, fresh = 0, dups = 0;

    memset(&a, 0, sizeof a);
    a.port = h_port();
    a.order_no = "OSHIP";
    h_db_insert_order("OSHIP", "u1001", PRICE, PAID);
    ck_assert_int_eq(0, h_storm(SHIP_CLIENTS, SHIP_CLIENTS, ship_call, &a, &st));
    printf("ship storm: %d concurrent ships of one order: p50 %.1f ms p99 %.1f ms\n", SHIP_CLIENTS,
           st.p50_us / 1000.0, st.p99_us / 1000.0);
    for (int i = 0; i < SHIP_CLIENTS; i++) {
        ok += a.status[i] == 200;
        fresh += a.status[i] == 200 && a.duplicate[i] == 0;
        dups += a.status[i] == 200 && a.duplicate[i] == 1;
    }
    ck_assert_int_eq(SHIP_CLIENTS, ok);
    ck_assert_int_eq(1, fresh);
    ck_assert_int_eq(SHIP_CLIENTS - 1, dups);
    ck_assert_int_eq(SHIPPED, status_of("OSHIP"));
    ck_assert_int_eq(1, events("order.shipped", "OSHIP"));
}
END_TEST

/* ---- unknown and malformed ----------------------------------------------- */

START_TEST(action_on_an_unknown_order_is_404)
{
    struct h_resp r;

    act("NOSUCH", actions[_i].action, &r);
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

START_TEST(action_on_a_malformed_order_no_is_400)
{
    struct h_resp r;

    act(ID65, actions[_i].action, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    act("a!b", actions[_i].action, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
}
END_TEST

START_TEST(get_on_an_action_is_405)
{
    char path[64];
    struct h_resp r;

    h_db_insert_order("O1", "u1001", PRICE, PAID);
    snprintf(path, sizeof path, "/order/O1/%s", actions[_i].action);
    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_error(&r, 405, NULL);
    ck_assert_msg(h_resp_header(&r, "Allow") != NULL, "405 without Allow");
    h_resp_free(&r);
    ck_assert_int_eq(PAID, status_of("O1"));
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *order_state_suite(void)
{
    Suite *s = suite_create("order_state_http");
    TCase *tc;
    int nactions = (int)(sizeof actions / sizeof actions[0]);

    tc = h_tcase("every transition follows the table", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, every_status_and_action_follows_the_table, 0,
                        (int)(sizeof statuses / sizeof statuses[0]) * nactions);
    tcase_add_test(tc, illegal_transition_is_alerted_and_counted);
    suite_add_tcase(s, tc);

    tc = h_tcase("cancel undoes the order", TC_TIMEOUT_S);
    tcase_add_test(tc, cancel_gives_the_stock_back);
    tcase_add_test(tc, cancel_of_a_paid_order_requires_a_refund);
    suite_add_tcase(s, tc);

    tc = h_tcase("an order lives once", TC_TIMEOUT_S);
    tcase_add_test(tc, order_lives_from_create_to_finish);
    suite_add_tcase(s, tc);

    tc = h_tcase("concurrent ships ship once", SLOW_TIMEOUT_S);
    tcase_add_test(tc, concurrent_ships_of_one_order_ship_it_once);
    suite_add_tcase(s, tc);

    tc = h_tcase("unknown and malformed orders", TC_TIMEOUT_S);
    tcase_add_loop_test(tc, action_on_an_unknown_order_is_404, 0, nactions);
    tcase_add_loop_test(tc, action_on_a_malformed_order_no_is_400, 0, nactions);
    tcase_add_loop_test(tc, get_on_an_action_is_405, 0, nactions);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(order_state_suite, NULL, NULL);
