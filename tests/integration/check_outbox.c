/* check_outbox.c - outbox delivery to the shop's webhook, against the real
 * binary, real MariaDB and a local webhook receiver
 * (tests/tools/webhook_receiver.js) that verifies every delivery with the
 * official `standardwebhooks` npm package, dedupes by webhook-id the way a
 * shop should, and can answer 200, 500, hang, close or slowly. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define SHOP_SECRET "whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg="
#define OLD_SECRET "whsec_An+8L2h2Y5co4jpZPoFRjdyYSEaiFD937jmYZf/sq6c="

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

/* Switches how the receiver answers: "200", "500", "hang" or "close". */
static void receiver_mode(const char *mode)
{
    struct h_resp r;

    h_http(rcv.port, "POST", "/_mode", NULL, mode, strlen(mode), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* Lines of the receiver's log containing every one of the parts. */
static int receiver_count(const char *a, const char *b)
{
    return h_tool_log_lines(&rcv, a, b);
}

/* The server's environment: this receiver, fast retries, short leases,
 * attempts that time out after timeout_ms. */
static void env_for(char bufs[][128], const char **env, const char *max_attempts,
                    const char *timeout_ms)
{
    int i = 0;

    snprintf(bufs[i], 128, "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:%d/hook", rcv.port);
    env[i] = bufs[i];
    i++;
    env[i++] = "PAYCALLBACK_WEBHOOK_SECRET=" SHOP_SECRET;
    snprintf(bufs[i], 128, "PAYCALLBACK_WEBHOOK_TIMEOUT_MS=%s", timeout_ms);
    env[i] = bufs[i];
    i++;
    env[i++] = "PAYCALLBACK_WEBHOOK_BACKOFF_BASE_MS=50";
    env[i++] = "PAYCALLBACK_WEBHOOK_BACKOFF_MAX_MS=200";
    env[i++] = "PAYCALLBACK_WEBHOOK_POLL_MS=50";
    env[i++] = "PAYCALLBACK_WEBHOOK_BATCH=1";
    snprintf(bufs[i], 128, "PAYCALLBACK_WEBHOOK_MAX_ATTEMPTS=%s", max_attempts);
    env[i] = bufs[i];
    i++;
    env[i] = NULL;
}

static void up(void)
{
    char bufs[10][128];
    const char *env[12];

    receiver_start();
    env_for(bufs, env, "4", "500");
    h_fixture_server_up_env(env);
}

static void down(void)
{
    h_fixture_server_down();
    receiver_stop();
}

static void pay(const char *order_no, const char *pay_no)
{
    struct h_resp r;

    h_db_insert_order(order_no, "u1", "899.00", 1);
    h_callback(h_port(), order_no, pay_no, "899.00", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "result", "PAID");
    h_resp_free(&r);
}

static long long outbox_ll(const char *col, const char *order_no, const char *type)
{
    return h_db_scalar_ll("SELECT COALESCE(MAX(%s), -1) FROM outbox WHERE order_no = '%s' "
                          "AND event_type = '%s'",
                          col, order_no, type);
}

/* Wall-clock seconds of the receiver's first log line naming key, or 0. */
static double received_at(const char *key)
{
    FILE *f = fopen(rcv.log, "r");
    char line[1024];
    const char *t;
    double v = 0;

    if (f == NULL)
        return 0;
    while (v == 0 && fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, key) != NULL && (t = strstr(line, "\"t\": ")) != NULL)
            v = atof(t + 5);
    fclose(f);
    return v;
}

START_TEST(paid_order_reaches_the_webhook_signed_with_its_event_id)
{
    struct timespec t0;

    clock_gettime(CLOCK_REALTIME, &t0);
    pay("OB1", "PB1");
    h_await(receiver_count("\"key\": \"OB1:order.paid\"", "\"answer\": 200") == 1, 10000,
            "order.paid never reached the webhook");
    printf("delivery: callback sent to event at the webhook in %.1f ms (webhook.poll_ms 50)\n",
           (received_at("OB1:order.paid") - (double)t0.tv_sec - t0.tv_nsec / 1e9) * 1000.0);
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB1:order.paid\"", "\"sig_ok\": true"));
    ck_assert_int_eq(0, receiver_count("\"sig_ok\": false", NULL));
    h_await(outbox_ll("state", "OB1", "order.paid") == 1, 5000, "event not marked delivered");
    ck_assert_int_eq(1, outbox_ll("attempts", "OB1", "order.paid"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'OB1' "
                                       "AND published_at IS NOT NULL"));
}
END_TEST

START_TEST(failed_attempts_are_retried_until_the_shop_answers)
{
    receiver_mode("500");
    pay("OB2", "PB2");
    h_await(outbox_ll("attempts", "OB2", "order.paid") >= 2, 10000, "no retry after a 500");
    ck_assert_int_eq(0, outbox_ll("state", "OB2", "order.paid"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'OB2' "
                                       "AND last_error = 'webhook answered 500'"));
    receiver_mode("200");
    h_await(outbox_ll("state", "OB2", "order.paid") == 1, 10000, "never delivered after 500s");
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB2:order.paid\"", "\"answer\": 200"));
    ck_assert_int_ge(receiver_count("\"key\": \"OB2:order.paid\"", "\"answer\": 500"), 2);
}
END_TEST

START_TEST(a_hanging_webhook_times_out_and_is_retried)
{
    receiver_mode("hang");
    pay("OB3", "PB3");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'OB3' "
                           "AND last_error LIKE 'timed out%%'") == 1,
            10000, "a hanging webhook did not time out");
    receiver_mode("close");
    h_await(outbox_ll("attempts", "OB3", "order.paid") >= 2, 10000, "no attempt after a timeout");
    receiver_mode("200");
    h_await(outbox_ll("state", "OB3", "order.paid") == 1, 10000, "never delivered");
}
END_TEST

START_TEST(an_event_goes_dead_after_max_attempts)
{
    receiver_mode("500");
    pay("OB4", "PB4");
    h_await(outbox_ll("state", "OB4", "order.paid") == 2, 10000, "event never went dead");
    ck_assert_int_eq(4, outbox_ll("attempts", "OB4", "order.paid"));
    ck_assert_int_eq(4, receiver_count("\"key\": \"OB4:order.paid\"", "\"answer\": 500"));
    receiver_mode("200");
    /* dead stays dead: no further attempt by itself */
    h_db_exec("UPDATE outbox SET next_attempt_at = NOW(3) WHERE order_no = 'OB4'");
    pay("OB4b", "PB4b");
    h_await(outbox_ll("state", "OB4b", "order.paid") == 1, 10000, "later event not delivered");
    ck_assert_int_eq(2, outbox_ll("state", "OB4", "order.paid"));
}
END_TEST

START_TEST(events_of_one_order_go_out_in_order)
{
    receiver_mode("500");
    h_db_insert_order("OB5", "u1", "899.00", 3);
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload, create_time) VALUES "
              "('order.paid', 'OB5', '{\"n\":1}', NOW(3) - INTERVAL 2 SECOND), "
              "('order.shipped', 'OB5', '{\"n\":2}', NOW(3) - INTERVAL 1 SECOND)");
    h_await(outbox_ll("attempts", "OB5", "order.paid") >= 2, 10000, "first event not attempted");
    /* the second waits while the first is undelivered */
    ck_assert_int_eq(0, outbox_ll("attempts", "OB5", "order.shipped"));
    ck_assert_int_eq(0, receiver_count("\"key\": \"OB5:order.shipped\"", NULL));
    receiver_mode("200");
    h_await(outbox_ll("state", "OB5", "order.shipped") == 1, 10000, "second event not delivered");
    {
        FILE *f = fopen(rcv.log, "r");
        char line[1024];
        int paid_ok = 0, order_ok = 1;

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f) != NULL) {
            if (strstr(line, "OB5:order.paid") && strstr(line, "\"answer\": 200"))
                paid_ok = 1;
            if (strstr(line, "OB5:order.shipped") && !paid_ok)
                order_ok = 0;
        }
        fclose(f);
        ck_assert_msg(order_ok,
                      "order.shipped reached the shop before order.paid was acknowledged");
    }
}
END_TEST

/* An acknowledgement that comes after the relay's lease ran out marks
 * nothing delivered and counts nothing: the event is pending again (or
 * another relay holds it) and goes out once more. */
START_TEST(an_acknowledgement_after_the_lease_ran_out_is_not_counted)
{
    char bufs[10][128];
    const char *env[12];
    struct h_server *s;
    struct h_resp r;

    env_for(bufs, env, "4", "5000");
    ck_assert_ptr_nonnull(s = h_server_start(env));
    receiver_mode("slow:2000");
    h_db_insert_order("OB7", "u1", "899.00", 1);
    h_callback(h_server_port(s), "OB7", "PB7", "899.00", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_await(receiver_count("\"key\": \"OB7:order.paid\"", NULL) >= 1, 10000, "no attempt began");
    h_db_exec("UPDATE webhook_delivery SET lease_until = NOW(3) - INTERVAL 1 SECOND "
              "WHERE order_no = 'OB7'");
    receiver_mode("200");
    h_await(receiver_count("\"key\": \"OB7:order.paid\"", "\"answer\": 200") >= 2, 15000,
            "an acknowledgement outside the lease was taken as a delivery");
    h_await(outbox_ll("state", "OB7", "order.paid") == 1, 10000, "never marked delivered");
    h_server_stop(s);
    ck_assert_int_eq(2, receiver_count("\"key\": \"OB7:order.paid\"", NULL));
}
END_TEST

/* Standard Webhooks headers: the event id as webhook-id, the timestamp,
 * one v1 signature (no rotation configured), the body's id the same. */
START_TEST(deliveries_carry_standard_webhooks_headers)
{
    pay("OB8", "PB8");
    h_await(receiver_count("\"key\": \"OB8:order.paid\"", "\"answer\": 200") == 1, 10000,
            "order.paid never reached the webhook");
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB8:order.paid\"", "\"legacy\": false"));
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB8:order.paid\"", "\"sig_by\": [true]"));
    ck_assert_int_eq(1,
                     receiver_count("\"key\": \"OB8:order.paid\"", "\"id\": \"OB8:order.paid\""));
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB8:order.paid\"", "\"schema_ok\": true"));
    /* complete: the payment's id, gateway, amount and the order's currency */
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB8:order.paid\"",
                                       "\"data\": {\"order_no\": \"OB8\", \"pay_no\": \"PB8\", "
                                       "\"gateway\": \"native\", \"amount\": \"899.00\", "
                                       "\"currency\": \"CNY\"}"));
}
END_TEST

/* A relay killed while it holds a claim: the lease runs out and the next
 * instance delivers the event. */
START_TEST(kill_9_mid_delivery_loses_nothing)
{
    char bufs[10][128];
    const char *env[12];
    struct h_server *s;
    struct h_resp r;

    env_for(bufs, env, "4", "500");
    ck_assert_ptr_nonnull(s = h_server_start(env));
    receiver_mode("hang");
    h_db_insert_order("OB6", "u1", "899.00", 1);
    h_callback(h_server_port(s), "OB6", "PB6", "899.00", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_await(receiver_count("\"key\": \"OB6:order.paid\"", NULL) >= 1, 10000, "no attempt began");
    ck_assert_int_eq(0, h_server_signal(s, SIGKILL));
    ck_assert_int_eq(128 + SIGKILL, h_server_wait(s, 5000)); /* frees s */
    ck_assert_int_eq(0, outbox_ll("state", "OB6", "order.paid"));
    ck_assert_int_eq(0, outbox_ll("attempts", "OB6", "order.paid"));
    receiver_mode("200");
    ck_assert_ptr_nonnull(s = h_server_start(env));
    h_await(outbox_ll("state", "OB6", "order.paid") == 1, 15000,
            "the event claimed by the killed relay was never delivered");
    ck_assert_int_eq(1, receiver_count("\"key\": \"OB6:order.paid\"", "\"answer\": 200"));
    h_server_stop(s);
}
END_TEST

/* Asserts, for the events <prefix>1 .. <prefix>n of type order.paid, what
 * at-least-once promises: each was answered 200 under its own id, and the
 * shop saw each no more often than the outbox counts attempts of it. Only
 * the relay holding an event's claim POSTs it and records the attempt, so
 * a POST by a second relay while the claim holds, or a delivery never
 * recorded (then sent again), shows as more POSTs than attempts; a retry
 * after an answer that came later than webhook.timeout_ms is counted on
 * both sides. */
static void assert_each_delivered_within_its_attempts(const char *prefix, int n)
{
    for (int i = 1; i <= n; i++) {
        char key[64], order_no[32];
        long long attempts;
        int posts;

        snprintf(order_no, sizeof(order_no), "%s%d", prefix, i);
        snprintf(key, sizeof(key), "\"key\": \"%s:order.paid\"", order_no);
        attempts = outbox_ll("attempts", order_no, "order.paid");
        posts = receiver_count(key, NULL);
        if (receiver_count(key, "\"answer\": 200") < 1)
            ck_abort_msg("%s:order.paid was never answered 200", order_no);
        if (posts > attempts)
            ck_abort_msg("%s:order.paid was POSTed %d times in %lld recorded attempts", order_no,
                         posts, attempts);
    }
}

/* Two instances on one database: every event is delivered, and none is
 * attempted by both under one claim. With a shop that answers well within
 * webhook.timeout_ms each event is POSTed once; the assertion is what the
 * contract promises whatever the machine's load: a shop answering later
 * than the timeout gets the event again, after its attempt was recorded. */
START_TEST(two_instances_never_claim_one_event_twice)
{
    char bufs[10][128];
    const char *env[12];
    struct h_server *first, *second;

    env_for(bufs, env, "4", "5000");
    ck_assert_ptr_nonnull(first = h_server_start(env));
    ck_assert_ptr_nonnull(second = h_server_start(env));
    receiver_mode("500"); /* hold delivery while the events land */
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
              "SELECT CONCAT('OT', seq), 'u', CONCAT('r', seq), 'SHOE-42', 1, 899.00, 2 "
              "FROM seq_1_to_200");
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload) "
              "SELECT 'order.paid', CONCAT('OT', seq), '{}' FROM seq_1_to_200");
    receiver_mode("200");
    h_await(h_db_scalar_ll(
                "SELECT COUNT(*) FROM outbox WHERE state = 1 AND order_no LIKE 'OT%%'") == 200,
            30000, "not every event was delivered");
    h_server_stop(first);
    h_server_stop(second);
    assert_each_delivered_within_its_attempts("OT", 200);
    ck_assert_int_eq(0, receiver_count("\"sig_ok\": false", NULL));
}
END_TEST

/* Rotation: while webhook.previous_secret is within its overlap every
 * delivery carries both signatures, so a shop verifying with either
 * secret accepts it; after webhook.previous_secret_until only the new
 * secret signs. The receiver verifies with each secret on its own. */
START_TEST(rotation_signs_with_both_secrets_until_the_stated_time)
{
    const char *const two[] = { "--secret", OLD_SECRET, "--secret", SHOP_SECRET, NULL };
    struct h_tool both = { 0 };
    char url[128], until[64];
    const char *env[10];
    struct h_server *s;
    time_t end = time(NULL) + 5;
    struct tm tm;
    int i = 0;

    h_tool_start(&both, "webhook_receiver.js", two);
    snprintf(url, sizeof(url), "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:%d/hook", both.port);
    gmtime_r(&end, &tm);
    strftime(until, sizeof(until), "PAYCALLBACK_WEBHOOK_PREVIOUS_SECRET_UNTIL=%Y-%m-%dT%H:%M:%SZ",
             &tm);
    env[i++] = url;
    env[i++] = "PAYCALLBACK_WEBHOOK_SECRET=" SHOP_SECRET;
    env[i++] = "PAYCALLBACK_WEBHOOK_PREVIOUS_SECRET=" OLD_SECRET;
    env[i++] = until;
    env[i++] = "PAYCALLBACK_WEBHOOK_POLL_MS=50";
    env[i] = NULL;
    ck_assert_ptr_nonnull(s = h_server_start(env));
    h_db_insert_order("OR1", "u1", "899.00", 1);
    h_db_insert_order("OR2", "u1", "899.00", 1);
    {
        struct h_resp r;

        h_callback(h_server_port(s), "OR1", "PR1", "899.00", &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
        h_await(h_tool_log_lines(&both, "\"key\": \"OR1:order.paid\"", "\"answer\": 200") == 1,
                10000, "OR1 never delivered");
        h_await(time(NULL) > end, 10000, "the overlap never ended");
        h_callback(h_server_port(s), "OR2", "PR2", "899.00", &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
        h_await(h_tool_log_lines(&both, "\"key\": \"OR2:order.paid\"", "\"answer\": 200") == 1,
                10000, "OR2 never delivered");
    }
    h_server_stop(s);
    ck_assert_int_eq(
        1, h_tool_log_lines(&both, "\"key\": \"OR1:order.paid\"", "\"sig_by\": [true, true]"));
    ck_assert_int_eq(
        1, h_tool_log_lines(&both, "\"key\": \"OR2:order.paid\"", "\"sig_by\": [false, true]"));
    h_tool_stop(&both);
}
END_TEST

/* webhook.format legacy keeps X-Timestamp and the hex X-Signature. */
START_TEST(the_legacy_format_keeps_x_signature)
{
    const char *const plain[] = { "--secret", "shop-legacy-secret", NULL };
    struct h_tool legacy = { 0 };
    char url[128];
    const char *env[6];
    struct h_server *s;
    struct h_resp r;

    h_tool_start(&legacy, "webhook_receiver.js", plain);
    snprintf(url, sizeof(url), "PAYCALLBACK_WEBHOOK_URL=http://127.0.0.1:%d/hook", legacy.port);
    env[0] = url;
    env[1] = "PAYCALLBACK_WEBHOOK_SECRET=shop-legacy-secret";
    env[2] = "PAYCALLBACK_WEBHOOK_FORMAT=legacy";
    env[3] = "PAYCALLBACK_WEBHOOK_POLL_MS=50";
    env[4] = NULL;
    ck_assert_ptr_nonnull(s = h_server_start(env));
    h_db_insert_order("OL1", "u1", "899.00", 1);
    h_callback(h_server_port(s), "OL1", "PL1", "899.00", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_await(h_tool_log_lines(&legacy, "\"key\": \"OL1:order.paid\"", "\"answer\": 200") == 1, 10000,
            "OL1 never delivered");
    h_server_stop(s);
    ck_assert_int_eq(1, h_tool_log_lines(&legacy, "\"key\": \"OL1:order.paid\"",
                                         "\"legacy\": true, \"dup\": false"));
    ck_assert_int_eq(
        1, h_tool_log_lines(&legacy, "\"key\": \"OL1:order.paid\"", "\"sig_by\": [true]"));
    h_tool_stop(&legacy);
}
END_TEST

static Suite *outbox_suite(void)
{
    Suite *s = suite_create("outbox");
    TCase *tc = tcase_create("delivery");

    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_add_unchecked_fixture(tc, up, down);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, paid_order_reaches_the_webhook_signed_with_its_event_id);
    tcase_add_test(tc, failed_attempts_are_retried_until_the_shop_answers);
    tcase_add_test(tc, a_hanging_webhook_times_out_and_is_retried);
    tcase_add_test(tc, an_event_goes_dead_after_max_attempts);
    tcase_add_test(tc, events_of_one_order_go_out_in_order);
    tcase_add_test(tc, deliveries_carry_standard_webhooks_headers);
    suite_add_tcase(s, tc);

    tc = tcase_create("instances"); /* each test runs its own servers */
    tcase_add_checked_fixture(tc, h_fixture_clean, NULL);
    tcase_add_unchecked_fixture(tc, receiver_start, receiver_stop);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, kill_9_mid_delivery_loses_nothing);
    tcase_add_test(tc, two_instances_never_claim_one_event_twice);
    tcase_add_test(tc, an_acknowledgement_after_the_lease_ran_out_is_not_counted);
    tcase_add_test(tc, rotation_signs_with_both_secrets_until_the_stated_time);
    tcase_add_test(tc, the_legacy_format_keeps_x_signature);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(outbox_suite, NULL, NULL);
