/* check_webhooks.c - several webhook endpoints (the "webhooks" array of the
 * configuration) against the real binary, real MariaDB and a shop receiver
 * (tests/tools/webhook_receiver.js) that verifies every delivery with the
 * official `standardwebhooks` npm package, checks every body against its
 * type's schema in docs/openapi.yaml, and serves each endpoint on its own
 * path. Filters, one failing endpoint beside a working one, the rate
 * limit under a backlog, and endpoints added and removed by a reload while
 * events flow. */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../check_main.h"

#define SECRET_A "whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg="
#define SECRET_B "whsec_An+8L2h2Y5co4jpZPoFRjdyYSEaiFD937jmYZf/sq6c="
#define WAIT_MS 20000

static struct h_tool rcv;
static char cfg_path[H_TEMP_PATH_MAX];

static void receiver_start(void)
{
    const char *const args[] = { "--secret", SECRET_A, "--secret", SECRET_B, NULL };

    h_fixture_clean();
    h_tool_start(&rcv, "webhook_receiver.js", args);
}

static void receiver_stop(void)
{
    h_tool_stop(&rcv);
}

/* How path ("/a") answers: "200", "500", "hang", "close" or "slow:<ms>". */
static void mode(const char *path, const char *how)
{
    char url[64];
    struct h_resp r;

    snprintf(url, sizeof(url), "/_mode%s", path);
    h_http(rcv.port, "POST", url, NULL, how, strlen(how), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

static int lines(const char *a, const char *b)
{
    return h_tool_log_lines(&rcv, a, b);
}

/* Writes the configuration: endpoints is the text of the "webhooks" array's
 * members, with %d standing for the receiver's port (each occurrence);
 * batch is webhook.batch. */
static void write_config_batch(const char *endpoints, int batch)
{
    char text[4096], tmp[H_TEMP_PATH_MAX + 8], body[3072];
    const char *p = endpoints;
    size_t n = 0;
    FILE *f;

    while (*p != '\0' && n + 8 < sizeof(body)) {
        if (p[0] == '%' && p[1] == 'd') {
            n += (size_t)snprintf(body + n, sizeof(body) - n, "%d", rcv.port);
            p += 2;
        } else {
            body[n++] = *p++;
        }
    }
    body[n] = '\0';
    snprintf(text, sizeof(text),
             "{\"webhook\": {\"poll_ms\": 50, \"batch\": %d, \"timeout_ms\": 2000,"
             " \"backoff_base_ms\": 100, \"backoff_max_ms\": 400, \"max_attempts\": 1000},"
             " \"webhooks\": [%s]}",
             batch, body);
    if (cfg_path[0] == '\0')
        h_temp_file(cfg_path, "{}");
    snprintf(tmp, sizeof(tmp), "%s.new", cfg_path);
    f = fopen(tmp, "w");
    ck_assert_msg(f != NULL, "fopen %s: %s", tmp, strerror(errno));
    ck_assert_int_eq((int)strlen(text), (int)fwrite(text, 1, strlen(text), f));
    ck_assert_int_eq(0, fclose(f));
    ck_assert_int_eq(0, rename(tmp, cfg_path));
}

/* As write_config_batch with batches of 16: short leases, which a kill -9
 * leaves behind. */
static void write_config(const char *endpoints)
{
    write_config_batch(endpoints, 16);
}

#define EP(name, events, secret, extra)                                                         \
    "{\"name\": \"" name "\", \"url\": \"http://127.0.0.1:%d/" name "\", \"secret\": \"" secret \
    "\"" events extra "}"

/* n paid orders <prefix>1..<prefix>n with their order.paid events, written
 * as the payment callback writes them; ship adds order.shipped after each. */
static void events(const char *prefix, int from, int to, int ship)
{
    h_db_exec("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
              "SELECT CONCAT('%s', seq), 'u', CONCAT('r%s', seq), 'SHOE-42', 1, 899.00, 2 "
              "FROM seq_%d_to_%d",
              prefix, prefix, from, to);
    h_db_exec("INSERT INTO outbox (event_type, order_no, payload) SELECT 'order.paid', "
              "CONCAT('%s', seq), CONCAT('{\"order_no\":\"%s', seq, '\",\"pay_no\":\"P', seq, "
              "'\",\"gateway\":\"native\",\"amount\":\"899.00\"}') FROM seq_%d_to_%d",
              prefix, prefix, from, to);
    if (ship)
        h_db_exec("INSERT INTO outbox (event_type, order_no, payload) SELECT 'order.shipped', "
                  "CONCAT('%s', seq), CONCAT('{\"order_no\":\"%s', seq, "
                  "'\",\"from\":\"PAID\",\"to\":\"SHIPPED\"}') FROM seq_%d_to_%d",
                  prefix, prefix, from, to);
}

/* Ids path answered 200 to, each counted once (the receiver marks a
 * repeat of an id it acknowledged before as dup). */
static int delivered(const char *path)
{
    char p[64];

    snprintf(p, sizeof(p), "\"path\": \"%s\"", path);
    return lines(p, "\"dup\": false, \"answer\": 200");
}

/* Whether, in the receiver's log, path's first 200 for key_a comes before
 * any request for key_b at path. */
static int acked_before(const char *path, const char *key_a, const char *key_b)
{
    FILE *f = fopen(rcv.log, "r");
    char line[4096], pa[64], ka[96], kb[96];
    int acked = 0, ok = 1;

    ck_assert_ptr_nonnull(f);
    snprintf(pa, sizeof(pa), "\"path\": \"%s\"", path);
    snprintf(ka, sizeof(ka), "\"key\": \"%s\"", key_a);
    snprintf(kb, sizeof(kb), "\"key\": \"%s\"", key_b);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, pa) == NULL)
            continue;
        if (strstr(line, ka) != NULL && strstr(line, "\"answer\": 200") != NULL)
            acked = 1;
        if (strstr(line, kb) != NULL && !acked)
            ok = 0;
    }
    fclose(f);
    return ok;
}

/* Two endpoints, different filters; b fails for 20 s while a keeps
 * receiving what it subscribed to (and nothing else); then b drains, each
 * order's events in order. */
START_TEST(a_failing_endpoint_never_holds_back_another)
{
    struct h_server *s;
    long long t_end;
    int round = 0;

    write_config(EP("a", ", \"events\": [\"order.paid\"]", SECRET_A, "") ", " EP(
        "b", ", \"events\": [\"order.paid\", \"order.shipped\"]", SECRET_B, ""));
    mode("/b", "500");
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    t_end = h_now_ms() + 20000;
    while (h_now_ms() < t_end) { /* b fails all along */
        char key[64];

        round++;
        events("FA", round * 10 + 1, round * 10 + 10, 1);
        snprintf(key, sizeof(key), "\"key\": \"FA%d:order.paid\"", round * 10 + 10);
        h_await(lines("\"path\": \"/a\"", key) >= 1, WAIT_MS,
                "endpoint a stalled behind the failing endpoint b");
        usleep(500 * 1000);
    }
    ck_assert_int_ge(lines("\"path\": \"/b\"", "\"answer\": 500"), 2);
    ck_assert_int_eq(0, lines("\"path\": \"/b\"", "\"answer\": 200"));
    mode("/b", "200");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b' "
                           "AND state = 1") == round * 20,
            60000, "endpoint b never drained");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == round * 20, WAIT_MS,
            "events not settled as delivered");
    /* each endpoint's deliveries counted on its own series */
    ck_assert_int_eq(round * 10,
                     h_metric_at(h_server_port(s), "paycallback_webhook_deliveries_total"
                                                   "{endpoint=\"a\",result=\"delivered\"}"));
    ck_assert_int_eq(0, h_metric_at(h_server_port(s), "paycallback_webhook_deliveries_total"
                                                      "{endpoint=\"a\",result=\"failed\"}"));
    ck_assert_int_eq(round * 20,
                     h_metric_at(h_server_port(s), "paycallback_webhook_deliveries_total"
                                                   "{endpoint=\"b\",result=\"delivered\"}"));
    ck_assert_int_ge(h_metric_at(h_server_port(s), "paycallback_webhook_deliveries_total"
                                                   "{endpoint=\"b\",result=\"failed\"}"),
                     lines("\"path\": \"/b\"", "\"answer\": 500"));
    h_server_stop(s);
    ck_assert_int_eq(round * 10, delivered("/a"));
    ck_assert_int_eq(0, lines("\"path\": \"/a\"", "order.shipped"));
    ck_assert_int_eq(round * 20, delivered("/b"));
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL)); /* docs/openapi.yaml webhooks */
    for (int i = 11; i <= round * 10 + 10; i++) {
        char paid[32], shipped[32];

        snprintf(paid, sizeof(paid), "FA%d:order.paid", i);
        snprintf(shipped, sizeof(shipped), "FA%d:order.shipped", i);
        ck_assert_msg(acked_before("/b", paid, shipped), "%s went out before %s at b", shipped,
                      paid);
    }
    printf("webhooks: endpoint b failed for 20 s while a received %d events; b drained %d\n",
           round * 10, round * 20);
}
END_TEST

/* The rate limit under a backlog of 5,000 events: the measured rate from
 * the first to the last delivery. Asserted: it does not exceed the limit
 * by more than 10 % (a slower machine only lowers it); printed: the
 * figure. Batches of 100, so that a claim's round trips do not pace the
 * relay below the limit. */
START_TEST(the_rate_limit_holds_under_a_backlog)
{
    struct h_server *s;
    FILE *f;
    char line[4096];
    double first = 0, last = 0, rate;
    int n = 0;

    write_config_batch(EP("r", "", SECRET_A, ", \"rate_per_s\": 500"), 100);
    events("RL", 1, 5000, 0);
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'r' "
                           "AND state = 1") == 5000,
            90000, "the backlog was not delivered");
    h_server_stop(s);
    ck_assert_ptr_nonnull(f = fopen(rcv.log, "r"));
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *t = strstr(line, "\"t\": ");

        if (strstr(line, "\"path\": \"/r\"") == NULL || t == NULL)
            continue;
        last = atof(t + 5);
        if (n++ == 0)
            first = last;
    }
    fclose(f);
    ck_assert_int_ge(n, 5000);
    rate = (n - 1) / (last - first);
    printf("webhooks: rate limit 500/s, 5000-event backlog delivered at %.1f events/s\n", rate);
    ck_assert_msg(rate <= 550.0, "measured %.1f events/s against a limit of 500", rate);
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL)); /* docs/openapi.yaml webhooks */
}
END_TEST

/* While events flow, a reload removes endpoint b (which fails, so events
 * wait for it) and adds c: a gets everything, c everything handed to it
 * after it came, b's waiting events are reported and kept, and go out
 * once b comes back. */
START_TEST(a_reload_adds_and_removes_endpoints_without_losing_events)
{
    const char *removed[] = { "webhook endpoint removed while events wait", "endpoint=b", NULL };
    struct h_server *s;
    char *line;
    long long b_rows;
    int batch = 0;

    write_config(EP("a", "", SECRET_A, "") ", " EP("b", "", SECRET_B, ""));
    mode("/b", "500");
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    for (; batch < 10; batch++) {
        events("RA", batch * 20 + 1, batch * 20 + 20, 0);
        usleep(100 * 1000);
    }
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b'") > 0,
            WAIT_MS, "nothing handed to b");
    write_config(EP("a", "", SECRET_A, "") ", " EP("c", "", SECRET_B, ""));
    ck_assert_int_eq(0, h_server_signal(s, SIGHUP));
    for (; batch < 20; batch++) {
        events("RA", batch * 20 + 1, batch * 20 + 20, 0);
        usleep(100 * 1000);
    }
    line = h_log_find(removed, WAIT_MS);
    ck_assert_msg(line != NULL, "the removal of b with events waiting was not reported");
    free(line);
    h_await(delivered("/a") == 400, 60000, "endpoint a lost events");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'c'") > 0 &&
                h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'c' "
                               "AND state <> 1") == 0,
            60000, "endpoint c did not receive what was handed to it");
    ck_assert_int_eq((int)h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery "
                                         "WHERE endpoint = 'c'"),
                     delivered("/c"));
    b_rows = h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b'");
    ck_assert_int_gt(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b' "
                                    "AND state = 0"),
                     0); /* kept, not dropped */
    mode("/b", "200");
    write_config(
        EP("a", "", SECRET_A, "") ", " EP("b", "", SECRET_B, "") ", " EP("c", "", SECRET_B, ""));
    ck_assert_int_eq(0, h_server_signal(s, SIGHUP));
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b' "
                           "AND state = 1") >= b_rows,
            60000, "b's kept events did not go out when it came back");
    h_server_stop(s);
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL)); /* docs/openapi.yaml webhooks */
    printf("webhooks: reload under load: a got 400, c %lld, b kept %lld and drained them\n",
           h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'c'"), b_rows);
}
END_TEST

/* kill -9 while both endpoints are mid-delivery: after a restart every
 * event reaches every endpoint at least once, under the same id. */
START_TEST(kill_9_mid_delivery_reaches_every_endpoint)
{
    struct h_server *s;

    write_config(EP("a", "", SECRET_A, "") ", " EP("b", "", SECRET_B, ""));
    mode("/a", "slow:300");
    mode("/b", "hang");
    events("KL", 1, 40, 1);
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    h_await(lines("\"path\": \"/a\"", NULL) >= 3 && lines("\"path\": \"/b\"", NULL) >= 1, WAIT_MS,
            "no delivery began");
    ck_assert_int_eq(0, h_server_signal(s, SIGKILL));
    ck_assert_int_eq(128 + SIGKILL, h_server_wait(s, 5000));
    mode("/a", "200");
    mode("/b", "200");
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == 80, 60000,
            "not every event reached every endpoint after kill -9");
    h_server_stop(s);
    for (int i = 1; i <= 40; i++)
        for (int t = 0; t < 2; t++) {
            char key[64];

            snprintf(key, sizeof(key), "\"key\": \"KL%d:order.%s\"", i, t ? "shipped" : "paid");
            if (lines("\"path\": \"/a\"", key) < 1 || lines("\"path\": \"/b\"", key) < 1)
                ck_abort_msg("%s did not reach both endpoints", key);
        }
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL)); /* docs/openapi.yaml webhooks */
}
END_TEST

/* Whether GET path (an event's) shows it delivered at a and failing at b. */
static int states_shown(int port, const char *path)
{
    struct h_resp r;
    int ok;

    h_http(port, "GET", path, NULL, NULL, 0, &r);
    ok = r.status == 200 && strstr(r.body, "\"type\":\"payment.double_charged\"") != NULL &&
         strstr(r.body, "{\"endpoint\":\"a\",\"state\":\"DELIVERED\",\"attempts\":1,") != NULL &&
         strstr(r.body, "{\"endpoint\":\"b\",\"state\":\"PENDING\",\"attempts\":") != NULL &&
         strstr(r.body, "\"last_error\":\"webhook answered 500\"}]") != NULL;
    if (!ok)
        fprintf(stderr, "GET %s: %d %s\n", path, r.status, r.body);
    h_resp_free(&r);
    return ok;
}

/* A payment of an order already paid is kept REFUND_REQUIRED and
 * announced as payment.double_charged, one event per such payment (its id
 * names the pay_no; a repeat of the callback adds none), delivered verified
 * and matching its schema. A payment of a canceled order, never paid, is
 * no double charge. GET /ops/outbox/{id} shows the event's state at each
 * endpoint: delivered at a, still failing at b. */
START_TEST(a_second_payment_of_a_paid_order_is_announced_once)
{
    const char *pays[][2] = { { "DC1", "PDC1" },
                              { "DC1", "PDC2" },
                              { "DC1", "PDC3" },
                              { "DC1", "PDC2" },
                              { "DC2", "PDC4" } };
    struct h_server *s;
    struct h_resp r;
    char path[64];

    write_config(EP("a", ", \"events\": [\"payment.double_charged\"]", SECRET_A,
                    "") ", " EP("b", ", \"events\": [\"payment.double_charged\"]", SECRET_B, ""));
    mode("/b", "500");
    h_db_insert_order("DC1", "u1", "899.00", 1);
    h_db_insert_order("DC2", "u1", "899.00", 9);
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    for (size_t i = 0; i < sizeof(pays) / sizeof(pays[0]); i++) {
        h_callback(h_server_port(s), pays[i][0], pays[i][1], "899.00", &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
    }
    h_await(delivered("/a") == 2, WAIT_MS, "the double charges were not delivered");
    h_await(lines("\"path\": \"/b\"", "\"answer\": 500") >= 2, WAIT_MS, "b was not tried");
    snprintf(path, sizeof(path), "/ops/outbox/%lld",
             h_db_scalar_ll("SELECT id FROM outbox WHERE subject = 'PDC2'"));
    h_await(states_shown(h_server_port(s), path), WAIT_MS, "per-endpoint state not shown");
    h_server_stop(s);
    ck_assert_int_eq(2, (int)h_db_scalar_ll("SELECT COUNT(*) FROM outbox "
                                            "WHERE event_type = 'payment.double_charged'"));
    ck_assert_int_eq(2, (int)h_db_scalar_ll("SELECT COUNT(*) FROM payment_record "
                                            "WHERE order_no = 'DC1' AND status = 2"));
    ck_assert_int_eq(1, lines("\"path\": \"/a\", \"key\": \"DC1:payment.double_charged:PDC2\"",
                              "\"pay_no\": \"PDC2\", \"gateway\": \"native\", "
                              "\"amount\": \"899.00\", \"currency\": \"CNY\""));
    ck_assert_int_eq(1,
                     lines("\"path\": \"/a\", \"key\": \"DC1:payment.double_charged:PDC3\"", NULL));
    ck_assert_int_eq(0, lines("\"path\": \"/a\"", "order.paid"));
    ck_assert_int_eq(0, lines("PDC4", NULL));
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL)); /* docs/openapi.yaml webhooks */
}
END_TEST

/* POSTs body to path with the operator key; the answer in *r. */
static void ops_post(const struct h_server *s, const char *path, const char *body, struct h_resp *r)
{
    h_http(h_server_port(s), "POST", path, NULL, body, strlen(body), r);
}

/* Replay: one delivered event again (same id; the shop sees a repeat),
 * then everything since a time, bounded per request; each audited. */
START_TEST(replay_sends_a_delivered_event_and_everything_since_a_time)
{
    struct h_server *s;
    struct h_resp r;
    char path[64], body[128], *since;
    long long id;

    write_config(
        EP("a", "", SECRET_A, "") ", " EP("b", ", \"events\": [\"order.shipped\"]", SECRET_B, ""));
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    events("RP", 1, 3, 0);
    h_await(delivered("/a") == 3, WAIT_MS, "first events not delivered");
    id = h_db_scalar_ll("SELECT id FROM outbox WHERE order_no = 'RP2'");
    snprintf(path, sizeof(path), "/ops/outbox/%lld/replay", id);
    ops_post(s, path, "{}", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"replayed_to\":[\"a\"]"));
    h_resp_free(&r);
    h_await(lines("\"key\": \"RP2:order.paid\"", "\"dup\": true, \"answer\": 200") == 1, WAIT_MS,
            "the replayed event never came again");
    ops_post(s, path, "{\"endpoint\": \"b\"}", &r); /* b does not take order.paid */
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ops_post(s, path, "{\"endpoint\": \"nobody\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ops_post(s, "/ops/outbox/999999/replay", "{}", &r);
    h_assert_error(&r, 404, "EVENT_NOT_FOUND");
    h_resp_free(&r);

    /* since a time: only what was written from then on */
    since = h_db_scalar_str(
        "SELECT DATE_FORMAT(NOW() + INTERVAL 1 SECOND, '%%Y-%%m-%%dT%%H:%%i:%%sZ')");
    h_await(
        h_db_scalar_ll("SELECT NOW() >= STR_TO_DATE('%s', '%%Y-%%m-%%dT%%H:%%i:%%sZ')", since) == 1,
        5000, "the clock did not move");
    events("RP", 4, 6, 0);
    h_await(delivered("/a") == 6, WAIT_MS, "later events not delivered");
    snprintf(body, sizeof(body),
             "{\"since\": \"%s\", \"endpoint\": \"a\", \"types\": [\"order.paid\"]}", since);
    ops_post(s, "/ops/outbox/replay", body, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"replayed\":3"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"next_after\":null"));
    h_resp_free(&r);
    for (int i = 4; i <= 6; i++) {
        char key[64];

        snprintf(key, sizeof(key), "\"key\": \"RP%d:order.paid\"", i);
        h_await(lines(key, "\"dup\": true, \"answer\": 200") == 1, WAIT_MS,
                "RP%d was not sent again", i);
    }
    ck_assert_int_eq(0, lines("\"key\": \"RP1:order.paid\"", "\"dup\": true"));
    /* the bound of one request, and where the next goes on */
    ops_post(s, "/ops/outbox/replay", "{\"since\": \"2000-01-01T00:00:00Z\", \"limit\": 2}", &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"replayed\":2"));
    ck_assert_ptr_null(strstr(r.body, "\"next_after\":null"));
    h_resp_free(&r);
    ops_post(s, "/ops/outbox/replay", "{\"since\": \"yesterday\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE state = 1") == 6, WAIT_MS,
            "replayed events not settled");
    h_server_stop(s);
    ck_assert_int_eq(0, lines("\"sig_ok\": false", NULL));
    ck_assert_int_eq(0, lines("\"schema_ok\": false", NULL));
    ck_assert_int_eq(3, (int)h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                            "'outbox.replay' AND actor = 'dev'"));
    free(since);
}
END_TEST

/* The delivery of event i of body's "events" at endpoint, or NULL. */
static const cJSON *delivery_at(const cJSON *body, int i, const char *endpoint)
{
    const cJSON *ev = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "events"), i), *d;

    ck_assert_ptr_nonnull(ev);
    cJSON_ArrayForEach (d, cJSON_GetObjectItem(ev, "deliveries"))
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "endpoint")), endpoint) == 0)
            return d;
    return NULL;
}

static cJSON *ops_get(const struct h_server *s, const char *path, int status)
{
    struct h_resp r;
    cJSON *o;

    h_http(h_server_port(s), "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, status);
    o = cJSON_Parse(r.body);
    ck_assert_ptr_nonnull(o);
    h_resp_free(&r);
    return o;
}

/* An order's events, each with its delivery at every endpoint it went
 * to; and the events waiting at one endpoint. */
START_TEST(the_outbox_lists_an_order_s_events_with_their_delivery_per_endpoint)
{
    struct h_server *s;
    const cJSON *d;
    cJSON *o;

    write_config(
        EP("a", "", SECRET_A, "") ", " EP("b", ", \"events\": [\"order.shipped\"]", SECRET_B, ""));
    mode("/b", "500");
    ck_assert_ptr_nonnull(s = h_server_start_config(cfg_path, NULL));
    events("OL", 1, 2, 1);
    h_await(delivered("/a") == 4, WAIT_MS, "a did not receive the four events");
    /* a's answers are recorded after it received them, a batch at a time */
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'a' "
                           "AND state = 1") == 4,
            WAIT_MS, "a's deliveries were never recorded");
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = 'b' "
                           "AND attempts > 0 AND last_error IS NOT NULL") == 2,
            WAIT_MS, "b was never tried");

    o = ops_get(s, "/ops/outbox?order_no=OL1", 200); /* any state */
    ck_assert_int_eq(2, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    ck_assert_str_eq("order.paid",
                     cJSON_GetStringValue(cJSON_GetObjectItem(
                         cJSON_GetArrayItem(cJSON_GetObjectItem(o, "events"), 0), "type")));
    ck_assert_ptr_nonnull(d = delivery_at(o, 0, "a"));
    ck_assert_str_eq("DELIVERED", cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")));
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "delivered_at")));
    ck_assert_ptr_null(delivery_at(o, 0, "b")); /* b takes order.shipped only */
    ck_assert_ptr_nonnull(d = delivery_at(o, 1, "a"));
    ck_assert_str_eq("DELIVERED", cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")));
    ck_assert_ptr_nonnull(d = delivery_at(o, 1, "b"));
    ck_assert_str_eq("PENDING", cJSON_GetStringValue(cJSON_GetObjectItem(d, "state")));
    ck_assert_int_ge((int)cJSON_GetNumberValue(cJSON_GetObjectItem(d, "attempts")), 1);
    ck_assert_ptr_nonnull(
        strstr(cJSON_GetStringValue(cJSON_GetObjectItem(d, "last_error")), "500"));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "delivered_at")));
    cJSON_Delete(o);

    /* by the event's own state: order.paid is settled DELIVERED (a was its
     * only endpoint), order.shipped stays PENDING while b fails */
    h_await(h_db_scalar_ll("SELECT state FROM outbox WHERE order_no = 'OL1' AND "
                           "event_type = 'order.paid'") == 1,
            WAIT_MS, "order.paid of OL1 never settled");
    o = ops_get(s, "/ops/outbox?order_no=OL1&state=DELIVERED", 200);
    ck_assert_int_eq(1, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    ck_assert_str_eq("order.paid",
                     cJSON_GetStringValue(cJSON_GetObjectItem(
                         cJSON_GetArrayItem(cJSON_GetObjectItem(o, "events"), 0), "type")));
    cJSON_Delete(o);
    o = ops_get(s, "/ops/outbox?order_no=OL1&state=PENDING", 200);
    ck_assert_int_eq(1, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    ck_assert_str_eq("order.shipped",
                     cJSON_GetStringValue(cJSON_GetObjectItem(
                         cJSON_GetArrayItem(cJSON_GetObjectItem(o, "events"), 0), "type")));
    cJSON_Delete(o);
    o = ops_get(s, "/ops/outbox?order_no=NOSUCH", 200);
    ck_assert_int_eq(0, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    cJSON_Delete(o);

    /* by endpoint: what is pending at b, and what a received, one page */
    o = ops_get(s, "/ops/outbox?endpoint=b&state=PENDING", 200);
    ck_assert_int_eq(2, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq("order.shipped",
                         cJSON_GetStringValue(cJSON_GetObjectItem(
                             cJSON_GetArrayItem(cJSON_GetObjectItem(o, "events"), i), "type")));
    cJSON_Delete(o);
    o = ops_get(s, "/ops/outbox?endpoint=a&state=DELIVERED&limit=3", 200);
    ck_assert_int_eq(3, cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "next_after")));
    cJSON_Delete(o);

    /* the event alone carries its deliveries too */
    {
        char path[64];

        snprintf(path, sizeof(path), "/ops/outbox/%lld",
                 h_db_scalar_ll("SELECT id FROM outbox WHERE order_no = 'OL2' AND "
                                "event_type = 'order.shipped'"));
        o = ops_get(s, path, 200);
        ck_assert_int_eq(2, cJSON_GetArraySize(cJSON_GetObjectItem(o, "deliveries")));
        cJSON_Delete(o);
    }
    cJSON_Delete(ops_get(s, "/ops/outbox?endpoint=B%20C", 400));
    cJSON_Delete(ops_get(s, "/ops/outbox?order_no=OL1&endpoint=a", 400));
    h_server_stop(s);
}
END_TEST

static Suite *webhooks_suite(void)
{
    Suite *s = suite_create("webhooks");
    TCase *tc = tcase_create("endpoints");

    tcase_add_checked_fixture(tc, receiver_start, receiver_stop);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, a_failing_endpoint_never_holds_back_another);
    tcase_add_test(tc, the_rate_limit_holds_under_a_backlog);
    tcase_add_test(tc, a_reload_adds_and_removes_endpoints_without_losing_events);
    tcase_add_test(tc, kill_9_mid_delivery_reaches_every_endpoint);
    tcase_add_test(tc, replay_sends_a_delivered_event_and_everything_since_a_time);
    tcase_add_test(tc, the_outbox_lists_an_order_s_events_with_their_delivery_per_endpoint);
    tcase_add_test(tc, a_second_payment_of_a_paid_order_is_announced_once);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(webhooks_suite, NULL, NULL);
