/* check_shards_ops.c - the background work and the operator API of a
 * sharded service (mysql.shards), against the real binary, MariaDB and a
 * local webhook receiver (tests/tools/webhook_receiver.js, as in
 * check_outbox.c). Shard 1 is the test database, shard 2 its _s2 twin
 * (h_shards_env); rows are planted straight into each shard's database,
 * shard 2's tables qualified as paycallback_test_s2.<table>. Both shards'
 * outbox ids start at 1, so every test below also checks that the two
 * events with one row id are never taken for each other. */
#include <cJSON.h>
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define SHOP_SECRET "whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg="
#define S2 H_SHARD2_DB "."
#define TC_TIMEOUT_S 90

/* ---- the shop's webhook ---- */

static struct h_tool rcv;

static void receiver_start(void)
{
    const char *const args[] = { "--secret", SHOP_SECRET, NULL };

    h_tool_start(&rcv, "webhook_receiver.js", args);
}

static void receiver_stop(void)
{
    h_tool_stop(&rcv);
}

/* Lines of the receiver's log holding a (and b, unless NULL). */
static int receiver_count(const char *a, const char *b)
{
    return h_tool_log_lines(&rcv, a, b);
}

/* ---- fixtures ---- */

static char hook_url[512];
static const char *env[12];

/* The receiver, fast relays, a reconciliation pass every second, and
 * shard 2 either the test's _s2 database or a port nothing listens on. */
static void server_up_with(int shard2_down)
{
    int i = 0;

    receiver_start();
    env[i++] = shard2_down ? h_shards_half_down_env() : h_shards_env();
    snprintf(hook_url, sizeof(hook_url), "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:%d/hook",
             rcv.port);
    env[i++] = hook_url;
    env[i++] = "PAYCALLBACK_WEBHOOK_SECRET=" SHOP_SECRET;
    env[i++] = "PAYCALLBACK_WEBHOOK_TIMEOUT_MS=500";
    env[i++] = "PAYCALLBACK_WEBHOOK_BACKOFF_BASE_MS=50";
    env[i++] = "PAYCALLBACK_WEBHOOK_BACKOFF_MAX_MS=200";
    env[i++] = "PAYCALLBACK_WEBHOOK_POLL_MS=50";
    env[i++] = "PAYCALLBACK_RECONCILE_INTERVAL_S=1";
    env[i++] = "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200";
    env[i] = NULL;
    h_fixture_server_up_env(env);
}

static void two_shards_up(void)
{
    server_up_with(0);
}

static void shard2_down_up(void)
{
    server_up_with(1);
}

static void down(void)
{
    h_fixture_server_down();
    receiver_stop();
}

/* ---- helpers ---- */

/* Asserts, for the order.paid events <prefix>1 .. <prefix>n in db ("" shard
 * 1, S2 shard 2), what at-least-once promises: each was answered 200 under
 * its own id, and the shop saw each no more often than its shard's outbox
 * counts attempts of it. Only the relay holding an event's claim POSTs it
 * and records the attempt, so an event taken for another shard's, a POST
 * by a second relay, or a delivery never recorded (then sent again) shows;
 * a retry after an answer later than webhook.timeout_ms is counted on both
 * sides. */
static void assert_each_delivered_within_its_attempts(const char *db, const char *prefix, int n)
{
    for (int i = 1; i <= n; i++) {
        char key[64], order_no[32];
        long long attempts;
        int posts;

        snprintf(order_no, sizeof(order_no), "%s%d", prefix, i);
        snprintf(key, sizeof(key), "\"key\": \"%s:order.paid\"", order_no);
        attempts = h_db_scalar_ll("SELECT COALESCE(MAX(attempts), -1) FROM %soutbox "
                                  "WHERE order_no = '%s' AND event_type = 'order.paid'",
                                  db, order_no);
        posts = receiver_count(key, NULL);
        if (receiver_count(key, "\"answer\": 200") < 1)
            ck_abort_msg("%s:order.paid was never answered 200", order_no);
        if (posts > attempts)
            ck_abort_msg("%s:order.paid was POSTed %d times in %lld recorded attempts", order_no,
                         posts, attempts);
    }
}

static void get(const char *path, struct h_resp *r)
{
    h_http(h_port(), "GET", path, NULL, NULL, 0, r);
}

static void post(const char *path, const char *body, struct h_resp *r)
{
    h_http(h_port(), "POST", path, NULL, body, body ? strlen(body) : 0, r);
}

/* An order in db ("" shard 1, S2 shard 2), status 1 WAIT_PAY, made
 * hours_old hours ago. */
static void order(const char *db, const char *order_no, int status, int hours_old)
{
    h_db_exec("INSERT INTO %sorders (order_no, user_id, request_id, sku, quantity, amount, status, "
              "create_time) VALUES ('%s', 'u1', 'req-%s', 'SHOE-42', 1, 899.00, %d, "
              "NOW(3) - INTERVAL %d HOUR)",
              db, order_no, order_no, status, hours_old);
}

static void event(const char *db, const char *order_no, int state)
{
    h_db_exec("INSERT INTO %soutbox (event_type, order_no, payload, state) "
              "VALUES ('order.paid', '%s', '{\"order_no\":\"%s\"}', %d)",
              db, order_no, order_no, state);
}

static void refund_required(const char *db, const char *pay_no, const char *order_no)
{
    h_db_exec("INSERT INTO %spayment_record (pay_no, order_no, amount, status, outcome) "
              "VALUES ('%s', '%s', 899.00, 2, 2)",
              db, pay_no, order_no);
}

/* The number at a dotted path of body ("shards.2.outbox.dead"); -1 when
 * absent. */
static long long json_num(const char *body, const char *path)
{
    cJSON *root = cJSON_Parse(body);
    const cJSON *v = root;
    char buf[128], *save = NULL, *part;
    long long out = -1;

    snprintf(buf, sizeof(buf), "%s", path);
    for (part = strtok_r(buf, ".", &save); v != NULL && part != NULL;
         part = strtok_r(NULL, ".", &save))
        v = cJSON_GetObjectItemCaseSensitive(v, part);
    if (cJSON_IsNumber(v))
        out = (long long)v->valuedouble;
    cJSON_Delete(root);
    return out;
}

/* ---- two shards up ---- */

START_TEST(events_on_both_shards_are_delivered_once_with_distinct_ids)
{
    long long t0 = h_now_ms();

    h_db_exec("INSERT INTO outbox (event_type, order_no, payload) "
              "SELECT 'order.paid', CONCAT('S01-OD', seq), '{}' FROM seq_1_to_30");
    h_db_exec("INSERT INTO " S2 "outbox (event_type, order_no, payload) "
              "SELECT 'order.paid', CONCAT('S02-OD', seq), '{}' FROM seq_1_to_30");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == 30 &&
                h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "outbox WHERE state = 1") == 30,
            30000, "not every event of both shards was delivered");
    printf("shards: 60 events of two shards delivered in %lld ms (webhook.poll_ms 50)\n",
           h_now_ms() - t0);
    /* each under an id the shop can tell apart, POSTed by the relay of
     * its own shard only (the receiver may also get what an earlier suite
     * left undelivered in the test database) */
    assert_each_delivered_within_its_attempts("", "S01-OD", 30);
    assert_each_delivered_within_its_attempts(S2, "S02-OD", 30);
    ck_assert_int_eq(0, receiver_count("\"sig_ok\": false", NULL));
    h_await(h_metric("paycallback_outbox_delivered_total") >= 60, 5000,
            "delivered events not counted");
}
END_TEST

/* Each shard has relays of its own: a backlog on shard 1 does not hold
 * shard 2's events behind it. One relay for both would deliver shard 1's
 * 300 first (about 25 ms each here), seconds after shard 2's were due. */
START_TEST(a_backlog_on_one_shard_does_not_delay_another)
{
    long long t0, left;

    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, create_time) "
              "SELECT 'order.paid', CONCAT('S01-OL', seq), '{}', NOW(3) - INTERVAL 1 MINUTE "
              "FROM seq_1_to_300");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") >= 10, 10000,
            "shard 1's backlog is not being delivered");
    t0 = h_now_ms();
    h_db_exec("INSERT INTO " S2 "outbox (event_type, order_no, payload) "
              "SELECT 'order.paid', CONCAT('S02-OL', seq), '{}' FROM seq_1_to_3");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "outbox WHERE state = 1") == 3, 3000,
            "shard 2's events waited behind shard 1's backlog");
    left = h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 0");
    printf("shards: shard 2's 3 events delivered in %lld ms while shard 1 still had %lld of "
           "300 pending\n",
           h_now_ms() - t0, left);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == 300, 30000,
            "shard 1's backlog was not delivered");
}
END_TEST

START_TEST(ops_outbox_lists_both_shards_and_reaches_each_event_by_its_id)
{
    struct h_resp r;
    char *next;

    event("", "S01-OX1", 2); /* row 1 of shard 1 */
    event(S2, "S02-OX2", 2); /* row 1 of shard 2 */
    get("/ops/outbox", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":\"S01-1\",\"shard\":1,"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":\"S02-1\",\"shard\":2,"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[]"));
    h_resp_free(&r);

    /* pages go on from shard to shard */
    get("/ops/outbox?limit=1", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(next = h_json_get_str(r.body, "next_after"));
    ck_assert_str_eq("S01-1", next);
    free(next);
    h_resp_free(&r);
    get("/ops/outbox?limit=1&after=S01-1", &r);
    ck_assert_ptr_nonnull(strstr(r.body, "S02-OX2"));
    ck_assert_ptr_null(strstr(r.body, "S01-OX1"));
    h_resp_free(&r);
    get("/ops/outbox?after=S07-1", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);

    get("/ops/outbox/S02-1", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "order_no", "S02-OX2");
    h_resp_free(&r);
    get("/ops/outbox/1", &r); /* a bare row id is shard 1's */
    h_assert_status(&r, 200);
    h_assert_str(&r, "order_no", "S01-OX1");
    h_resp_free(&r);
    get("/ops/outbox/S03-1", &r);
    h_assert_error(&r, 404, "EVENT_NOT_FOUND");
    h_resp_free(&r);
    get("/ops/outbox/S02-x", &r);
    h_assert_error(&r, 404, "EVENT_NOT_FOUND");
    h_resp_free(&r);

    post("/ops/outbox/S02-1/retry", NULL, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "id", "S02-1");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT state FROM outbox WHERE id = 1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "audit_log "
                                       "WHERE action = 'outbox.retry' AND subject = 'outbox:1'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
    h_await(h_db_scalar_ll("SELECT state FROM " S2 "outbox WHERE id = 1") == 1, 10000,
            "the retried event of shard 2 was not delivered");
    ck_assert_int_eq(1, receiver_count("\"key\": \"S02-OX2:order.paid\"", "\"answer\": 200"));
    ck_assert_int_eq(0, receiver_count("S01-OX1", NULL));
}
END_TEST

START_TEST(refunds_on_both_shards_are_listed_and_settled_by_pay_no)
{
    struct h_resp r;

    refund_required("", "PR-1", "S01-R1"); /* before sharding: no registry row */
    refund_required(S2, "PR-2", "S02-R2");
    /* the registry row is read on placement(pay_no): plant it on both */
    h_db_exec("INSERT INTO pay_no_registry (pay_no, order_no) VALUES ('PR-2', 'S02-R2')");
    h_db_exec("INSERT INTO " S2 "pay_no_registry (pay_no, order_no) VALUES ('PR-2', 'S02-R2')");
    get("/ops/refunds", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "{\"shard\":1,\"pay_no\":\"PR-1\""));
    ck_assert_ptr_nonnull(strstr(r.body, "{\"shard\":2,\"pay_no\":\"PR-2\""));
    h_resp_free(&r);

    post("/ops/refunds/PR-2/settle", "{\"reference\":\"RF-2\"}", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "REFUND_SETTLED");
    ck_assert_int_eq(2, json_num(r.body, "shard"));
    h_resp_free(&r);
    post("/ops/refunds/PR-1/settle", "{\"reference\":\"RF-1\"}", &r);
    h_assert_status(&r, 200);
    ck_assert_int_eq(1, json_num(r.body, "shard"));
    h_resp_free(&r);
    post("/ops/refunds/PR-1/settle", "{\"reference\":\"RF-1\"}", &r);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    post("/ops/refunds/PR-9/settle", "{\"reference\":\"RF-9\"}", &r);
    h_assert_error(&r, 404, "PAYMENT_NOT_FOUND");
    h_resp_free(&r);

    ck_assert_int_eq(
        3, h_db_scalar_ll("SELECT status FROM " S2 "payment_record WHERE pay_no = 'PR-2'"));
    ck_assert_int_eq(3, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'PR-1'"));
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "audit_log WHERE subject = 'PR-2'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE subject = 'PR-1'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE subject = 'PR-2'"));
    get("/ops/refunds?status=REFUND_SETTLED", &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"reference\":\"RF-1\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"reference\":\"RF-2\""));
    h_resp_free(&r);
}
END_TEST

START_TEST(a_payment_is_found_by_pay_no_on_either_shard)
{
    struct h_resp r;

    refund_required("", "PF-1", "S01-F1");
    refund_required(S2, "PF-2", "S02-F2");
    get("/ops/payments/PF-2", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "order_no", "S02-F2");
    h_resp_free(&r);
    get("/ops/payments/PF-1", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "order_no", "S01-F1");
    h_resp_free(&r);
    get("/ops/payments/PF-3", &r);
    h_assert_error(&r, 404, "PAYMENT_NOT_FOUND");
    h_resp_free(&r);
}
END_TEST

START_TEST(cancel_stale_cancels_stale_orders_on_every_shard)
{
    struct h_resp r;

    order("", "S01-C1", 1, 3); /* stale */
    order("", "S01-C2", 1, 0); /* fresh */
    order(S2, "S02-C3", 1, 4); /* stale, the oldest */
    order(S2, "S02-C4", 2, 3); /* old but PAID */
    post("/ops/orders/cancel-stale", "{\"older_than_s\":3600,\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_int_eq(2, json_num(r.body, "canceled"));
    /* the oldest first, whatever its shard */
    ck_assert_ptr_nonnull(strstr(r.body, "\"orders\":[{\"shard\":2,\"order_no\":\"S02-C3\","
                                         "\"result\":\"OK\",\"status\":\"CANCELED\"},"
                                         "{\"shard\":1,\"order_no\":\"S01-C1\""));
    h_resp_free(&r);
    ck_assert_int_eq(9, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'S01-C1'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'S01-C2'"));
    ck_assert_int_eq(9,
                     h_db_scalar_ll("SELECT status FROM " S2 "orders WHERE order_no = 'S02-C3'"));
    ck_assert_int_eq(2,
                     h_db_scalar_ll("SELECT status FROM " S2 "orders WHERE order_no = 'S02-C4'"));
    /* each shard's own stock and events */
    ck_assert_int_eq(101, h_db_scalar_ll("SELECT num FROM stock WHERE sku = 'SHOE-42'"));
    ck_assert_int_eq(101, h_db_scalar_ll("SELECT num FROM " S2 "stock WHERE sku = 'SHOE-42'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "outbox WHERE order_no = "
                                       "'S02-C3' AND event_type = 'order.canceled'"));
    ck_assert_int_eq(
        1, h_db_scalar_ll("SELECT COUNT(*) FROM " S2 "audit_log WHERE subject = 'S02-C3'"));

    /* limit takes the oldest across shards */
    order("", "S01-C5", 1, 5);
    order(S2, "S02-C6", 1, 6);
    post("/ops/orders/cancel-stale", "{\"older_than_s\":3600,\"limit\":1}", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "S02-C6"));
    ck_assert_ptr_null(strstr(r.body, "S01-C5"));
    h_resp_free(&r);
}
END_TEST

START_TEST(reconcile_report_per_shard_numbers_add_up_to_its_totals)
{
    struct h_resp r;
    static const char *const counts[][3] = {
        { "wait_pay_stale.count", "shards.1.wait_pay_stale", "shards.2.wait_pay_stale" },
        { "refund_required.count", "shards.1.refund_required", "shards.2.refund_required" },
        { "outbox.dead", "shards.1.outbox.dead", "shards.2.outbox.dead" },
        { "outbox.pending", "shards.1.outbox.pending", "shards.2.outbox.pending" },
    };

    order("", "S01-Q1", 1, 3);
    order(S2, "S02-Q2", 1, 3);
    order(S2, "S02-Q3", 1, 4);
    refund_required("", "PQ-1", "S01-Q9");
    refund_required(S2, "PQ-2", "S02-Q9");
    refund_required(S2, "PQ-3", "S02-Q8");
    refund_required(S2, "PQ-4", "S02-Q7");
    event("", "S01-E1", 2);
    event(S2, "S02-E2", 2);
    event(S2, "S02-E3", 2);
    /* pending, and not due for an hour: it stays pending */
    h_db_exec("INSERT INTO " S2 "outbox (event_type, order_no, payload, next_attempt_at) "
              "VALUES ('order.paid', 'S02-E4', '{}', NOW(3) + INTERVAL 1 HOUR)");
    get("/ops/reconcile", &r);
    h_assert_status(&r, 200);
    ck_assert_int_eq(3, json_num(r.body, "wait_pay_stale.count"));
    ck_assert_int_eq(4, json_num(r.body, "refund_required.count"));
    ck_assert_int_eq(3, json_num(r.body, "outbox.dead"));
    ck_assert_int_eq(1, json_num(r.body, "outbox.pending"));
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        ck_assert_msg(json_num(r.body, counts[i][0]) ==
                          json_num(r.body, counts[i][1]) + json_num(r.body, counts[i][2]),
                      "%s is not %s + %s: %s", counts[i][0], counts[i][1], counts[i][2], r.body);
    ck_assert_int_eq(2, json_num(r.body, "shards.2.wait_pay_stale"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":\"S02-2\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[]"));
    h_resp_free(&r);

    /* the periodic pass: totals, and each shard's own series */
    h_await(h_metric("paycallback_outbox_dead") == 3 &&
                h_metric("paycallback_shard_outbox_dead{shard=\"2\"}") == 2 &&
                h_metric("paycallback_shard_reconcile_refund_unsettled{shard=\"1\"}") == 1 &&
                h_metric("paycallback_shard_outbox_pending{shard=\"2\"}") == 1,
            10000, "the pass did not publish the per-shard counts");
    ck_assert_int_eq(4, h_metric("paycallback_reconcile_refund_unsettled"));
    ck_assert_int_eq(0, h_metric("paycallback_shard_reconcile_failures_total{shard=\"2\"}"));
}
END_TEST

/* ---- shard 2 down ---- */

START_TEST(with_shard_2_down_shard_1_events_are_still_delivered)
{
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload) "
              "SELECT 'order.paid', CONCAT('S01-OW', seq), '{}' FROM seq_1_to_5");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == 5, 15000,
            "shard 1's events were held back by shard 2");
    assert_each_delivered_within_its_attempts("", "S01-OW", 5);
    h_await(h_metric("paycallback_shard_outbox_claim_failures_total{shard=\"2\"}") >= 1, 10000,
            "shard 2's failed claims are not counted");
    ck_assert_int_eq(0, h_metric("paycallback_shard_outbox_claim_failures_total{shard=\"1\"}"));
    h_await(h_metric("paycallback_shard_reconcile_failures_total{shard=\"2\"}") >= 1, 10000,
            "the pass does not report shard 2");
    h_await(h_metric("paycallback_shard_reconcile_last_success_timestamp_seconds{shard=\"1\"}") > 0,
            10000, "the pass stopped at shard 2");
    ck_assert_int_eq(0, h_metric("paycallback_shard_reconcile_last_success_timestamp_seconds"
                                 "{shard=\"2\"}"));
}
END_TEST

START_TEST(with_shard_2_down_merged_routes_name_it_and_its_own_routes_answer_503)
{
    struct h_resp r;
    long long unavailable0 = h_metric("paycallback_shard_unavailable_total{shard=\"2\"}");

    event("", "S01-OY1", 2);
    refund_required("", "PY-1", "S01-Y1");
    order("", "S01-Y2", 1, 3);

    get("/ops/outbox", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":\"S01-1\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[2]"));
    h_resp_free(&r);
    get("/ops/refunds", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "PY-1"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[2]"));
    h_resp_free(&r);
    get("/ops/reconcile", &r);
    h_assert_status(&r, 200);
    ck_assert_int_eq(1, json_num(r.body, "refund_required.count"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"2\":{\"status\":\"unavailable\"}"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[2]"));
    h_resp_free(&r);
    post("/ops/orders/cancel-stale", "{\"older_than_s\":3600,\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_int_eq(1, json_num(r.body, "canceled"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"unavailable_shards\":[2]"));
    h_resp_free(&r);
    ck_assert_int_eq(9, h_db_scalar_ll("SELECT status FROM orders WHERE order_no = 'S01-Y2'"));

    /* what needs shard 2 alone waits for it */
    get("/ops/outbox/S02-1", &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    post("/ops/outbox/S02-1/retry", NULL, &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    /* a payment found on no shard that answered may be on shard 2 */
    post("/ops/refunds/PY-9/settle", "{\"reference\":\"RF-9\"}", &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    get("/ops/payments/PY-9", &r);
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    get("/ops/payments/PY-1", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    /* while one that shard 1 has is settled */
    post("/ops/refunds/PY-1/settle", "{\"reference\":\"RF-1\"}", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_ge(h_metric("paycallback_shard_unavailable_total{shard=\"2\"}"),
                     unavailable0 + 3);
    ck_assert_int_eq(0, h_metric("paycallback_shard_unavailable_total{shard=\"1\"}"));
}
END_TEST

static Suite *shards_ops_suite(void)
{
    Suite *s = suite_create("shards_ops");
    TCase *tc = h_tcase_with("two shards", TC_TIMEOUT_S, two_shards_up, down);

    tcase_add_test(tc, events_on_both_shards_are_delivered_once_with_distinct_ids);
    tcase_add_test(tc, a_backlog_on_one_shard_does_not_delay_another);
    tcase_add_test(tc, ops_outbox_lists_both_shards_and_reaches_each_event_by_its_id);
    tcase_add_test(tc, refunds_on_both_shards_are_listed_and_settled_by_pay_no);
    tcase_add_test(tc, a_payment_is_found_by_pay_no_on_either_shard);
    tcase_add_test(tc, cancel_stale_cancels_stale_orders_on_every_shard);
    tcase_add_test(tc, reconcile_report_per_shard_numbers_add_up_to_its_totals);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 down", TC_TIMEOUT_S, shard2_down_up, down);
    tcase_add_test(tc, with_shard_2_down_shard_1_events_are_still_delivered);
    tcase_add_test(tc, with_shard_2_down_merged_routes_name_it_and_its_own_routes_answer_503);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(shards_ops_suite, NULL, NULL);
