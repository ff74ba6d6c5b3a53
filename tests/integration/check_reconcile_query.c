/* check_reconcile_query.c - the active query of stale WAIT_PAY orders,
 * against the real binary, real MariaDB and a local query endpoint
 * (tests/tools/query_responder.py) that answers PAID, NOTPAY, CLOSED,
 * NOT_FOUND, 500, malformed bodies or nothing at all, as planted per
 * order. Every outcome is read back from the database: a PAID answer pays
 * the order once, through the callback's own path; anything else writes
 * nothing. */
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

#define TOKEN "query-token-0123456789abcdef"
#define TC_TIMEOUT_S 120
#define RACE_ORDERS 20

static struct h_tool rsp;
static char config_path[H_TEMP_PATH_MAX];

static void responder_start(void)
{
    const char *const args[] = { "--token", TOKEN, NULL };

    h_tool_start(&rsp, "query_responder.py", args);
}

static void responder_stop(void)
{
    h_tool_stop(&rsp);
}

/* Plants what the endpoint at path answers about order_no. */
static void plant(const char *path, const char *order_no, const char *mode, const char *pay_no,
                  const char *amount, const char *currency)
{
    char body[512];
    struct h_resp r;

    snprintf(body, sizeof(body),
             "{\"path\":\"%s\",\"order_no\":\"%s\",\"mode\":\"%s\","
             "\"pay_no\":\"%s\",\"amount\":\"%s\",\"currency\":\"%s\"}",
             path, order_no, mode, pay_no, amount, currency);
    h_http(rsp.port, "POST", "/_plant", NULL, body, strlen(body), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* Queries the responder received about order_no (on any path). */
static int queried(const char *order_no)
{
    char want[128];

    snprintf(want, sizeof want, "\"order_no\": \"%s\"", order_no);
    return h_tool_log_lines(&rsp, want, NULL);
}

/* Lines of the responder's log holding both strings. */
static int log_lines(const char *a, const char *b)
{
    return h_tool_log_lines(&rsp, a, b);
}

/* A WAIT_PAY order made two hours ago: older than reconcile.wait_pay_age_s. */
static void stale_order(const char *order_no, const char *amount)
{
    h_db_insert_order(order_no, "u1", amount, 1);
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 10 MINUTE WHERE order_no = '%s'",
              order_no);
}

/* The value of the sample series (name and labels, as rendered) in a
 * /metrics scrape, or 0 when absent. */
static long long sample(const char *series)
{
    struct h_resp r;
    long long v = 0;
    size_t n = strlen(series);

    h_http(h_port(), "GET", "/metrics", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    for (const char *line = r.body; line != NULL && *line != '\0';) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ') {
            v = atoll(line + n + 1);
            break;
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    h_resp_free(&r);
    return v;
}

static long long answers(const char *answer)
{
    char series[96];

    snprintf(series, sizeof(series), "paycallback_reconcile_queries_total{answer=\"%s\"}", answer);
    return sample(series);
}

/* POST /ops/reconcile/query, waiting out a round that is running already
 * (the pass at start). */
static void query_now(const char *body, struct h_resp *r)
{
    struct h_deadline d = h_deadline_in(30000);

    for (;;) {
        h_http(h_port(), "POST", "/ops/reconcile/query", NULL, body, body ? strlen(body) : 0, r);
        if (r->status != 409 || strstr(r->body, "QUERY_IN_PROGRESS") == NULL)
            return;
        h_resp_free(r);
        ck_assert_msg(h_deadline_wait(&d), "a query round never finished");
    }
}

static long long count_where(const char *table, const char *order_no)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s WHERE order_no = '%s'", table, order_no);
}

/* ---- the server: native endpoint, passes only at start ------------------ */

static void env_native(char bufs[][128], const char **env, const char *interval,
                       const char *timeout_ms)
{
    int i = 0;

    snprintf(bufs[i], 128, "PAYCALLBACK_CALLBACK_QUERY_URL=http://127.0.0.1:%d/q", rsp.port);
    env[i] = bufs[i];
    i++;
    env[i++] = "PAYCALLBACK_CALLBACK_QUERY_TOKEN=" TOKEN;
    snprintf(bufs[i], 128, "PAYCALLBACK_CALLBACK_QUERY_TIMEOUT_MS=%s", timeout_ms);
    env[i] = bufs[i];
    i++;
    snprintf(bufs[i], 128, "PAYCALLBACK_RECONCILE_INTERVAL_S=%s", interval);
    env[i] = bufs[i];
    i++;
    env[i++] = "PAYCALLBACK_RECONCILE_WAIT_PAY_AGE_S=60";
    env[i] = NULL;
}

static void native_up(void)
{
    char bufs[6][128];
    const char *env[8];

    responder_start();
    env_native(bufs, env, "3600", "500");
    h_fixture_server_up_env(env);
}

static void native_down(void)
{
    h_fixture_server_down();
    responder_stop();
}

START_TEST(stale_order_answered_paid_is_paid_once_through_the_callback_path)
{
    struct h_resp r;

    stale_order("QA1", "899.00");
    plant("/q", "QA1", "PAID", "QP-A1", "899.00", "CNY");
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"order_no\":\"QA1\"") != NULL &&
                      strstr(r.body, "\"answer\":\"PAID\",\"result\":\"PAID\"") != NULL,
                  "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("QA1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'QP-A1' AND order_no = 'QA1' AND status = 1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE order_no = 'QA1' AND "
                                       "event_type = 'order.paid'"));
    ck_assert_int_eq(1, log_lines("\"order_no\": \"QA1\"", "\"auth_ok\": true"));
    ck_assert_int_eq(1, log_lines("\"query\": \"order_no=QA1\"", NULL));
    /* The operator's round changed the order: audited with the key's name. */
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE actor = 'dev' AND "
                                       "action = 'payment.apply' AND subject = 'QA1' AND "
                                       "detail LIKE 'pay_no=QP-A1 amount=899.00 %%result=PAID'"));
    /* Paid now: the next round does not ask about it again. */
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(1, queried("QA1"));
    ck_assert_int_eq(1, h_payment_records());
}
END_TEST

START_TEST(an_order_no_that_is_no_identifier_is_skipped_and_the_others_asked)
{
    struct h_resp r;

    /* Only a direct write makes such an order; it is the oldest of the round. */
    stale_order("<b>QB</b>", "1.00");
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 15 MINUTE WHERE order_no = "
              "'<b>QB</b>'");
    stale_order("QB1", "899.00");
    plant("/q", "QB1", "PAID", "QP-B1", "899.00", "CNY");
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"order_no\":\"QB1\"") != NULL, "%s", r.body);
    ck_assert_msg(strstr(r.body, "<b>") == NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("QB1"));
    ck_assert_int_eq(1, h_order_status("<b>QB</b>"));
    ck_assert_int_eq(0, log_lines("<b>", NULL));
}
END_TEST

START_TEST(orders_not_paid_at_the_gateway_stay_waiting)
{
    long long before = answers("not_paid");
    struct h_resp r;

    stale_order("QB1", "899.00");
    stale_order("QB2", "899.00");
    stale_order("QB3", "899.00");
    plant("/q", "QB1", "NOTPAY", "", "", "");
    plant("/q", "QB2", "CLOSED", "", "", "");
    /* QB3 is unknown to the endpoint: NOT_FOUND */
    query_now("{\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"answer\":\"NOTPAY\"") &&
                      strstr(r.body, "\"answer\":\"CLOSED\"") &&
                      strstr(r.body, "\"answer\":\"NOT_FOUND\""),
                  "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_order_status("QB1"));
    ck_assert_int_eq(1, h_order_status("QB2"));
    ck_assert_int_eq(1, h_order_status("QB3"));
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, h_outbox_rows());
    ck_assert_int_eq(before + 3, answers("not_paid"));
}
END_TEST

START_TEST(failed_and_malformed_answers_change_nothing_and_are_counted)
{
    static const char *const modes[] = { "500",         "hang",          "malformed",
                                         "wrong_order", "number_amount", "large" };
    long long err0 = answers("error"), to0 = answers("timeout"), bad0 = answers("malformed");
    char order_no[16];
    struct h_resp r;

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        snprintf(order_no, sizeof(order_no), "QC%zu", i);
        stale_order(order_no, "899.00");
        plant("/q", order_no, modes[i], "QP-C", "899.00", "CNY");
    }
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"failed\":6") != NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE status <> 1"));
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, h_outbox_rows());
    ck_assert_int_eq(err0 + 1, answers("error"));
    ck_assert_int_eq(to0 + 1, answers("timeout"));
    ck_assert_int_eq(bad0 + 4, answers("malformed"));
}
END_TEST

START_TEST(a_paid_answer_with_another_amount_is_a_mismatch_that_writes_nothing)
{
    long long before = sample("paycallback_amount_mismatches_total");
    struct h_resp r;

    stale_order("QD1", "899.00");
    stale_order("QD2", "899.00");
    plant("/q", "QD1", "PAID", "QP-D1", "1.00", "CNY");
    plant("/q", "QD2", "PAID", "QP-D2", "899.00", "USD");
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"result\":\"MISMATCH\"") != NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_order_status("QD1"));
    ck_assert_int_eq(1, h_order_status("QD2"));
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, h_outbox_rows());
    ck_assert_int_eq(before + 2, sample("paycallback_amount_mismatches_total"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log")); /* nothing changed */
}
END_TEST

START_TEST(a_fresh_order_is_not_queried)
{
    struct h_resp r;

    h_db_insert_order("QE1", "u1", "899.00", 1); /* made now */
    plant("/q", "QE1", "PAID", "QP-E1", "899.00", "CNY");
    stale_order("QE2", "899.00"); /* proves the round ran */
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"orders_asked\":1") != NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(1, queried("QE2"));
    ck_assert_int_eq(0, queried("QE1"));
    ck_assert_int_eq(1, h_order_status("QE1"));
    ck_assert_int_eq(0, h_payment_records());
}
END_TEST

/* The storm's calls: 0 runs the query round, the others are the real
 * callbacks of the same payments. */
static int race_call(int i, void *arg)
{
    char order_no[16], pay_no[16];
    struct h_resp r;
    int rc;

    (void)arg;
    if (i == 0) {
        /* A round still running (the pass at start) answers 409: ask again. */
        for (int attempt = 1;; attempt++) {
            h_http(h_port(), "POST", "/ops/reconcile/query", NULL, "{\"limit\":100}", 13, &r);
            if (r.status != 409 || attempt == 200)
                break;
            h_resp_free(&r);
            h_client_backoff(attempt, 0);
        }
    } else {
        snprintf(order_no, sizeof(order_no), "QR%02d", i);
        snprintf(pay_no, sizeof(pay_no), "QRP%02d", i);
        h_callback(h_port(), order_no, pay_no, "899.00", &r);
    }
    rc = r.status == 200 ? 0 : 1;
    h_resp_free(&r);
    return rc;
}

START_TEST(a_query_racing_the_real_callbacks_records_each_payment_once)
{
    struct h_storm_stats st;
    char order_no[16], pay_no[16];

    for (int i = 1; i <= RACE_ORDERS; i++) {
        snprintf(order_no, sizeof(order_no), "QR%02d", i);
        snprintf(pay_no, sizeof(pay_no), "QRP%02d", i);
        stale_order(order_no, "899.00");
        plant("/q", order_no, "PAID", pay_no, "899.00", "CNY");
    }
    ck_assert_int_eq(0, h_storm(8, RACE_ORDERS + 1, race_call, NULL, &st));
    ck_assert_msg(st.errors == 0, "%d calls of the race failed", st.errors);
    ck_assert_int_eq(RACE_ORDERS, h_payment_records());
    ck_assert_int_eq(RACE_ORDERS, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE "
                                                 "status = 1 AND outcome = 1"));
    ck_assert_int_eq(RACE_ORDERS, h_db_scalar_ll("SELECT COUNT(*) FROM orders WHERE status = 2"));
    ck_assert_int_eq(RACE_ORDERS, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE "
                                                 "event_type = 'order.paid'"));
    for (int i = 1; i <= RACE_ORDERS; i++) {
        snprintf(order_no, sizeof(order_no), "QR%02d", i);
        ck_assert_int_eq(1, count_where("payment_record", order_no));
    }
}
END_TEST

START_TEST(operator_query_checks_its_body_and_its_key)
{
    int before = log_lines("\"order_no\"", NULL);
    struct h_resp r;

    stale_order("QK1", "899.00");

    query_now("{\"limit\":0}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    query_now("{\"older_than_s\":1}", &r); /* below reconcile.wait_pay_age_s */
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    query_now("[1]", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_http_key(h_port(), NULL, "POST", "/ops/reconcile/query", NULL, "", 0, &r);
    h_assert_error(&r, 401, "UNAUTHORIZED");
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/reconcile/query", NULL, NULL, 0, &r);
    h_assert_status(&r, 405);
    h_resp_free(&r);
    ck_assert_int_eq(before, log_lines("\"order_no\"", NULL));
    ck_assert_int_eq(0, queried("QK1"));
}
END_TEST

/* A stop signal while a query waits on an endpoint that never answers
 * (timeout 60 s): the service still stops at once, cleanly. */
START_TEST(stop_does_not_wait_for_a_hanging_endpoint)
{
    char bufs[6][128];
    const char *env[8];
    struct h_server *s;
    long long t0;
    int rc;

    stale_order("QH1", "899.00");
    plant("/q", "QH1", "hang", "", "", "");
    env_native(bufs, env, "1", "60000");
    s = h_server_start(env);
    ck_assert_ptr_nonnull(s);
    h_await(queried("QH1") >= 1, 20000, "the hanging endpoint was never asked");
    t0 = h_now_ms();
    ck_assert_int_eq(0, h_server_signal(s, SIGTERM));
    rc = h_server_wait(s, 30000);
    ck_assert_int_eq(0, rc);
    ck_assert_msg(h_now_ms() - t0 < 10000, "the stop took %lld ms", h_now_ms() - t0);
    ck_assert_int_eq(1, h_order_status("QH1"));
}
END_TEST

/* ---- the periodic pass -------------------------------------------------- */

static void periodic_up(void)
{
    char bufs[6][128];
    const char *env[8];

    responder_start();
    env_native(bufs, env, "1", "500");
    h_fixture_server_up_env(env);
}

START_TEST(the_periodic_pass_pays_a_stale_order_the_gateway_saw_paid)
{
    stale_order("QP1", "899.00");
    stale_order("QP2", "899.00");
    plant("/q", "QP1", "PAID", "QP-P1", "899.00", "CNY");
    plant("/q", "QP2", "NOTPAY", "", "", "");
    h_await(h_order_status("QP1") == 2, 20000, "the periodic pass never paid QP1");
    h_await(queried("QP2") >= 2, 20000, "QP2 was not asked again by a later pass");
    ck_assert_int_eq(1, h_order_status("QP2"));
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, count_where("outbox", "QP1"));
    ck_assert_int_eq(1, queried("QP1")); /* paid: never asked again */
    /* The service's own pass is no operator's change. */
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
}
END_TEST

/* ---- a gateway profile's endpoint beside the native one ------------------ */

static void gateway_up(void)
{
    char bufs[6][128], text[512];
    const char *env[10];
    int i;

    responder_start();
    env_native(bufs, env, "3600", "500");
    for (i = 0; env[i] != NULL; i++)
        ;
    env[i++] = "TEST_STRIPE_SECRET=whsec_query_test_secret";
    env[i++] = "TEST_STRIPE_QUERY_TOKEN=" TOKEN;
    env[i] = NULL;
    snprintf(text, sizeof(text),
             "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\", "
             "\"secret_env\": \"TEST_STRIPE_SECRET\", \"query_url\": "
             "\"http://127.0.0.1:%d/stripe?account=acct_1\", \"query_token_env\": "
             "\"TEST_STRIPE_QUERY_TOKEN\", \"query_timeout_ms\": 500}]}",
             rsp.port);
    h_temp_file(config_path, text);
    h_fixture_server_up_config(config_path, env);
}

static void gateway_down(void)
{
    native_down();
    unlink(config_path);
}

START_TEST(every_endpoint_is_asked_and_the_one_that_saw_the_payment_pays)
{
    struct h_resp r;

    h_db_insert_order_in("QG1", "899.00", "USD");
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 10 MINUTE WHERE order_no = 'QG1'");
    plant("/stripe", "QG1", "PAID", "pi_QG1", "899.00", "usd");
    query_now(NULL, &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "{\"endpoint\":\"native\",\"answer\":\"NOT_FOUND\"}") != NULL &&
                      strstr(r.body, "{\"endpoint\":\"stripe\",\"answer\":\"PAID\",\"result\":"
                                     "\"PAID\"}") != NULL,
                  "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(
        1, log_lines("\"path\": \"/stripe\"", "\"query\": \"account=acct_1&order_no=QG1\""));
    ck_assert_int_eq(1, log_lines("\"path\": \"/q\"", "\"order_no\": \"QG1\""));
    ck_assert_int_eq(2, h_order_status("QG1"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'pi_QG1' AND status = 1"));
    ck_assert_int_eq(1, count_where("outbox", "QG1"));
}
END_TEST

/* ---- without any query_url ------------------------------------------------ */

static void plain_up(void)
{
    static const char *const env[] = { "PAYCALLBACK_RECONCILE_INTERVAL_S=1",
                                       "PAYCALLBACK_RECONCILE_WAIT_PAY_AGE_S=60", NULL };

    responder_start();
    h_fixture_server_up_env(env);
}

START_TEST(without_a_query_url_stale_orders_are_only_reported)
{
    long long last;
    struct h_resp r;

    stale_order("QN1", "899.00");
    plant("/q", "QN1", "PAID", "QP-N1", "899.00", "CNY");
    h_await(sample("paycallback_reconcile_wait_pay_stale") == 1, 20000,
            "the pass never reported the stale order");
    last = sample("paycallback_reconcile_last_success_timestamp_seconds");
    h_await(sample("paycallback_reconcile_last_success_timestamp_seconds") > last, 20000,
            "no second pass");
    query_now(NULL, &r);
    h_assert_error(&r, 409, "QUERY_NOT_CONFIGURED");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_order_status("QN1"));
    ck_assert_int_eq(0, h_payment_records());
    ck_assert_int_eq(0, queried("QN1"));
    ck_assert_int_eq(0, answers("not_paid") + answers("paid") + answers("error"));
}
END_TEST

/* ---- fail closed at start ------------------------------------------------- */

static void check_config(const char *config, const char *const *env, struct h_run *out)
{
    const char *with[] = { "--check-config", "-c", config, NULL };
    const char *without[] = { "--check-config", NULL };

    h_run(config != NULL ? with : without, env, 60000, out);
}

START_TEST(a_query_url_without_its_token_stops_the_start)
{
    static const char *const env[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=http://127.0.0.1:9/q",
                                       NULL };
    static const char *const bad_url[] = { "PAYCALLBACK_CALLBACK_QUERY_URL=ftp://127.0.0.1/q",
                                           "PAYCALLBACK_CALLBACK_QUERY_TOKEN=" TOKEN, NULL };
    struct h_run r;

    check_config(NULL, env, &r);
    ck_assert_int_eq(2, r.status);
    ck_assert_msg(strstr(r.err, "callback.query_token is empty") != NULL, "%s", r.err);
    h_run_free(&r);
    check_config(NULL, bad_url, &r);
    ck_assert_int_eq(2, r.status);
    ck_assert_msg(strstr(r.err, "callback.query_url must be an http") != NULL, "%s", r.err);
    h_run_free(&r);
}
END_TEST

START_TEST(a_gateway_query_url_without_its_token_stops_the_start)
{
    static const char *const unset[] = { "TEST_STRIPE_SECRET=whsec_x", NULL };
    static const char *const empty[] = { "TEST_STRIPE_SECRET=whsec_x",
                                         "PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN=", NULL };
    static const char *const set[] = { "TEST_STRIPE_SECRET=whsec_x",
                                       "PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN=" TOKEN, NULL };
    struct h_run r;

    h_temp_file(config_path, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\", "
                             "\"secret_env\": \"TEST_STRIPE_SECRET\", "
                             "\"query_url\": \"https://query.example/stripe\"}]}");
    check_config(config_path, unset, &r);
    ck_assert_int_eq(2, r.status);
    ck_assert_msg(strstr(r.err, "PAYCALLBACK_GATEWAY_STRIPE_QUERY_TOKEN is not set") != NULL, "%s",
                  r.err);
    h_run_free(&r);
    check_config(config_path, empty, &r);
    ck_assert_int_eq(2, r.status);
    h_run_free(&r);
    check_config(config_path, set, &r);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "query endpoint stripe: token ok") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, TOKEN) == NULL && strstr(r.err, TOKEN) == NULL,
                  "the token was printed");
    h_run_free(&r);
    unlink(config_path);
}
END_TEST

static Suite *query_suite(void)
{
    Suite *s = suite_create("query");
    TCase *tc = h_tcase_with("native", TC_TIMEOUT_S, native_up, native_down);

    tcase_add_test(tc, stale_order_answered_paid_is_paid_once_through_the_callback_path);
    tcase_add_test(tc, orders_not_paid_at_the_gateway_stay_waiting);
    tcase_add_test(tc, an_order_no_that_is_no_identifier_is_skipped_and_the_others_asked);
    tcase_add_test(tc, failed_and_malformed_answers_change_nothing_and_are_counted);
    tcase_add_test(tc, a_paid_answer_with_another_amount_is_a_mismatch_that_writes_nothing);
    tcase_add_test(tc, a_fresh_order_is_not_queried);
    tcase_add_test(tc, a_query_racing_the_real_callbacks_records_each_payment_once);
    tcase_add_test(tc, operator_query_checks_its_body_and_its_key);
    tcase_add_test(tc, stop_does_not_wait_for_a_hanging_endpoint);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("periodic", TC_TIMEOUT_S, periodic_up, native_down);
    tcase_add_test(tc, the_periodic_pass_pays_a_stale_order_the_gateway_saw_paid);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("gateway", TC_TIMEOUT_S, gateway_up, gateway_down);
    tcase_add_test(tc, every_endpoint_is_asked_and_the_one_that_saw_the_payment_pays);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("report only", TC_TIMEOUT_S, plain_up, native_down);
    tcase_add_test(tc, without_a_query_url_stale_orders_are_only_reported);
    suite_add_tcase(s, tc);

    tc = tcase_create("fail closed");
    tcase_set_timeout(tc, TC_TIMEOUT_S);
    tcase_add_test(tc, a_query_url_without_its_token_stops_the_start);
    tcase_add_test(tc, a_gateway_query_url_without_its_token_stops_the_start);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(query_suite, NULL, NULL);
