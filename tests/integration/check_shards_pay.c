/* check_shards_pay.c - payments of a sharded service (mysql.shards) against
 * the real binary and MariaDB: shard 1 is the test database, shard 2 its
 * _s2 twin (h_shards_env). Each order is paid on its own shard only; a
 * number naming no shard writes nothing anywhere; a pay_no is bound to one
 * order across shards by pay_no_registry on its placement, which the tests
 * compute with h_shard_place exactly as shard_place_index does; one shard
 * down fails only the payments that need it. The active query of stale
 * orders (tests/tools/query_responder.py as the endpoint) takes every
 * shard's orders in shares and pays each on its shard. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define TC_TIMEOUT_S 120
#define PRICE "899.00"
#define S2(table) H_SHARD2_DB "." table
#define STRIPE_SECRET "whsec_shards_test_secret"
#define STORM_THREADS 20
#define STORM_TOTAL 200
#define RACE_ROUNDS 20

#define QUERY_TOKEN "query-token-0123456789abcdef"

static char config_path[H_TEMP_PATH_MAX];

/* ---- the query endpoint ------------------------------------------------------ */

static struct h_tool rsp;

static void responder_start(void)
{
    const char *const args[] = { "--token", QUERY_TOKEN, NULL };

    h_tool_start(&rsp, "query_responder.py", args);
}

static void responder_stop(void)
{
    h_tool_stop(&rsp);
}

/* Queries the responder received about order_no. */
static int queried(const char *order_no)
{
    char want[128];

    snprintf(want, sizeof want, "\"order_no\": \"%s\"", order_no);
    return h_tool_log_lines(&rsp, want, NULL);
}

/* Plants what the endpoint answers about order_no: mode PAID (with pay_no,
 * PRICE USD) or NOTPAY. */
static void plant(const char *order_no, const char *mode, const char *pay_no)
{
    char body[512];
    struct h_resp r;

    snprintf(body, sizeof body,
             "{\"path\":\"/q\",\"order_no\":\"%s\",\"mode\":\"%s\","
             "\"pay_no\":\"%s\",\"amount\":\"" PRICE "\",\"currency\":\"USD\"}",
             order_no, mode, pay_no);
    ck_assert_int_eq(0, h_http(rsp.port, "POST", "/_plant", NULL, body, strlen(body), &r));
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* ---- the servers ------------------------------------------------------------- */

static void stripe_config(void)
{
    h_temp_file(config_path, "{\"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\","
                             " \"secret_env\": \"TEST_STRIPE_SECRET\", \"tolerance_s\": 300}]}");
}

/* A server over shards (the PAYCALLBACK_MYSQL_SHARDS entry), with a stripe
 * profile and the responder as the native query endpoint; its periodic
 * pass runs every interval seconds over batch orders. */
static void server_up_over(const char *shards, int connect_timeout, const char *interval,
                           const char *batch)
{
    static char url[96], every[64], take[64];
    const char *env[] = { shards,
                          "TEST_STRIPE_SECRET=" STRIPE_SECRET,
                          url,
                          every,
                          take,
                          "PAYCALLBACK_CALLBACK_QUERY_TOKEN=" QUERY_TOKEN,
                          "PAYCALLBACK_CALLBACK_QUERY_TIMEOUT_MS=2000",
                          "PAYCALLBACK_RECONCILE_WAIT_PAY_AGE_S=60",
                          connect_timeout ? "PAYCALLBACK_MYSQL_CONNECT_TIMEOUT_MS=200" : NULL,
                          NULL };

    responder_start();
    snprintf(url, sizeof url, "PAYCALLBACK_CALLBACK_QUERY_URL=http://127.0.0.1:%d/q", rsp.port);
    snprintf(every, sizeof every, "PAYCALLBACK_RECONCILE_INTERVAL_S=%s", interval);
    snprintf(take, sizeof take, "PAYCALLBACK_RECONCILE_QUERY_BATCH=%s", batch);
    stripe_config();
    h_fixture_server_up_config(config_path, env);
}

/* Both shards up. */
static void sharded_server_up(void)
{
    server_up_over(h_shards_env(), 0, "3600", "50");
}

/* Both shards up, a periodic pass every second over 2 orders. */
static void periodic_server_up(void)
{
    server_up_over(h_shards_env(), 0, "1", "2");
}

/* Shard 2 points at a port nothing listens on: a shard that is down. */
static void half_down_server_up(void)
{
    server_up_over(h_shards_half_down_env(), 1, "3600", "50");
}

/* A port where the kernel accepts connections that nobody ever answers:
 * a database host that hangs (a stopped process, a black-holed route). */
static int hung_fd = -1;

static int hung_port_open(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t len = sizeof a;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    hung_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (hung_fd < 0 || bind(hung_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(hung_fd, 512) != 0 || getsockname(hung_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    return ntohs(a.sin_port);
}

/* Shard 2 on a hung host: connects are accepted and never answered. */
static void hung_server_up(void)
{
    static char shards[512];
    int port = hung_port_open();
    const char *db = h_shard_db(1), *my = getenv("PCB_TEST_MYSQL_PORT");

    if (port < 0) {
        fprintf(stderr, "cannot open a hung port\n");
        return;
    }
    snprintf(shards, sizeof shards,
             "PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:%s/%s,"
             "2=127.0.0.1:%d/%s" H_SHARD2_SUFFIX,
             my != NULL ? my : "3307", db, port, db);
    server_up_over(shards, 1, "3600", "50");
}

static void hung_server_down(void)
{
    h_fixture_server_down();
    responder_stop();
    unlink(config_path);
    if (hung_fd >= 0)
        close(hung_fd);
    hung_fd = -1;
}

static void server_down(void)
{
    h_fixture_server_down();
    responder_stop();
    unlink(config_path);
}

/* ---- placement and the two databases -------------------------------------- */

/* The first "stem-N" placed on shard. */
static void pay_no_on(int shard, const char *stem, char out[64])
{
    int i;

    for (i = 0; i < 1000; i++) {
        snprintf(out, 64, "%s-%d", stem, i);
        if (h_shard_place(out) == shard)
            return;
    }
    ck_abort_msg("no pay_no of stem %s lands on shard %d", stem, shard);
}

/* A WAIT_PAY order of PRICE on shard 1 or 2, written straight into its database. */
static void insert_order(int shard, const char *order_no)
{
    h_db_exec("INSERT INTO %s (order_no, user_id, request_id, sku, quantity, amount, currency, "
              "status) VALUES ('%s', 'u1001', LEFT('req-%s', 64), 'SHOE-42', 1, " PRICE
              ", 'USD', 1)",
              shard == 1 ? "orders" : S2("orders"), order_no, order_no);
}

/* Rows of table on shard 1 or 2 matching where. */
static long long rows_on(int shard, const char *table, const char *where)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM %s%s WHERE %s", shard == 1 ? "" : H_SHARD2_DB ".",
                          table, where);
}

static long long rows_anywhere(const char *table, const char *where)
{
    return rows_on(1, table, where) + rows_on(2, table, where);
}

static long long status_on(int shard, const char *order_no)
{
    return h_db_scalar_ll("SELECT status FROM %s WHERE order_no = '%s'",
                          shard == 1 ? "orders" : S2("orders"), order_no);
}

/* A WAIT_PAY order on shard made two hours ago: older than wait_pay_age_s. */
static void stale_order(int shard, const char *order_no)
{
    insert_order(shard, order_no);
    h_db_exec("UPDATE %s SET create_time = NOW(3) - INTERVAL 10 MINUTE WHERE order_no = '%s'",
              shard == 1 ? "orders" : S2("orders"), order_no);
}

/* POST /ops/reconcile/query with body, waiting out a round that is running
 * already (the pass at start). */
static void query_now(const char *body, struct h_resp *r)
{
    struct h_deadline d = h_deadline_in(30000);

    for (;;) {
        ck_assert_int_eq(
            0, h_http(h_port(), "POST", "/ops/reconcile/query", NULL, body, strlen(body), r));
        if (r->status != 409 || strstr(r->body, "QUERY_IN_PROGRESS") == NULL)
            return;
        h_resp_free(r);
        ck_assert_msg(h_deadline_wait(&d), "a query round never finished");
    }
}

static void assert_paid(const struct h_resp *r, int duplicate)
{
    h_assert_status(r, 200);
    h_assert_str(r, "code", "SUCCESS");
    h_assert_str(r, "status", "PAID");
    h_assert_str(r, "result", "PAID");
    h_assert_bool(r, "duplicate", duplicate);
}

/* The order on shard was paid by pay_no there, once, and nothing of it is
 * on the other shard. */
static void assert_paid_on(int shard, const char *order_no, const char *pay_no)
{
    char where[192];
    int other = shard == 1 ? 2 : 1;

    snprintf(where, sizeof where, "pay_no = '%s' AND order_no = '%s'", pay_no, order_no);
    ck_assert_int_eq(2, status_on(shard, order_no));
    ck_assert_int_eq(1, rows_on(shard, "payment_record", where));
    ck_assert_int_eq(0, rows_on(other, "payment_record", where));
    snprintf(where, sizeof where, "order_no = '%s' AND event_type = 'order.paid'", order_no);
    ck_assert_int_eq(1, rows_on(shard, "outbox", where));
    ck_assert_int_eq(0, rows_on(other, "outbox", where));
    snprintf(where, sizeof where, "pay_no = '%s' AND order_no = '%s'", pay_no, order_no);
    ck_assert_int_eq(1, rows_on(h_shard_place(pay_no), "pay_no_registry", where));
    ck_assert_int_eq(0, rows_on(h_shard_place(pay_no) == 1 ? 2 : 1, "pay_no_registry", where));
}

/* ---- each order on its own shard ------------------------------------------ */

START_TEST(each_order_is_paid_on_its_own_shard_only)
{
    struct h_resp r;

    insert_order(1, "S01-O1");
    insert_order(2, "S02-O2");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-O1", "PAY-S1", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S02-O2", "PAY-S2", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);

    assert_paid_on(1, "S01-O1", "PAY-S1");
    assert_paid_on(2, "S02-O2", "PAY-S2");
    ck_assert_int_eq(1, rows_on(1, "payment_record", "1"));
    ck_assert_int_eq(1, rows_on(2, "payment_record", "1"));
    ck_assert_int_eq(2, rows_anywhere("pay_no_registry", "1"));

    /* The bank's retry is answered from the record on the order's shard. */
    ck_assert_int_eq(0, h_callback(h_port(), "S02-O2", "PAY-S2", PRICE, &r));
    assert_paid(&r, 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, rows_on(2, "payment_record", "1"));
}
END_TEST

START_TEST(order_of_no_configured_shard_is_404_and_writes_nothing)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_callback(h_port(), "S05-O1", "PAY-S5", PRICE, &r));
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S00-O1", "PAY-S0", PRICE, &r));
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, rows_anywhere("pay_no_registry", "1"));
    ck_assert_int_eq(0, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(0, rows_anywhere("outbox", "1"));
}
END_TEST

START_TEST(unprefixed_order_made_before_sharding_is_paid_on_shard_1)
{
    struct h_resp r;

    insert_order(1, "LEGACY-1");
    ck_assert_int_eq(0, h_callback(h_port(), "LEGACY-1", "PAY-L1", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    assert_paid_on(1, "LEGACY-1", "PAY-L1");
}
END_TEST

/* ---- one pay_no, one payment ----------------------------------------------- */

struct storm_arg {
    const char *order_no;
    const char *pay_no;
    int status[STORM_TOTAL];
    int first[STORM_TOTAL]; /* answered duplicate:false */
};

static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    struct h_resp r;
    int rc;

    for (int attempt = 1; attempt <= 5; attempt++) {
        rc = h_callback(h_port(), a->order_no, a->pay_no, PRICE, &r);
        a->status[i] = r.status;
        a->first[i] = r.status == 200 && h_json_get_bool(r.body, "duplicate") == 0;
        h_resp_free(&r);
        if (rc == 0 && a->status[i] != 503)
            break;
        h_client_backoff(attempt, i); /* a bank retries a 503 */
    }
    return a->status[i] == 200 ? 0 : 1;
}

START_TEST(storm_of_identical_callbacks_records_one_payment)
{
    struct storm_arg *a = calloc(1, sizeof(*a));
    struct h_storm_stats st;
    char pay_no[64];
    int i, first = 0;

    ck_assert_ptr_nonnull(a);
    pay_no_on(1, "PAY-STORM", pay_no); /* registry on shard 1, order on shard 2 */
    insert_order(2, "S02-STORM");
    a->order_no = "S02-STORM";
    a->pay_no = pay_no;
    ck_assert_int_eq(0, h_storm(STORM_THREADS, STORM_TOTAL, storm_call, a, &st));
    for (i = 0; i < STORM_TOTAL; i++) {
        ck_assert_msg(a->status[i] == 200, "call %d answered %d", i, a->status[i]);
        first += a->first[i];
    }
    printf("shards_pay storm: %d callbacks, %.0f/s, p50 %lld us, p99 %lld us\n", st.total, st.rps,
           st.p50_us, st.p99_us);
    ck_assert_int_eq(1, first);
    assert_paid_on(2, "S02-STORM", pay_no);
    ck_assert_int_eq(1, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", "1"));
    free(a);
}
END_TEST

struct race_arg {
    const char *order_no[2];
    const char *pay_no;
    int status[2];
    char code[2][32];
};

static int race_call(int i, void *p)
{
    struct race_arg *a = p;
    struct h_resp r;
    char *code;

    h_callback(h_port(), a->order_no[i], a->pay_no, PRICE, &r);
    a->status[i] = r.status;
    code = h_json_get_str(r.body, r.status == 200 ? "result" : "code");
    snprintf(a->code[i], sizeof a->code[i], "%s", code != NULL ? code : "");
    free(code);
    h_resp_free(&r);
    return 0;
}

START_TEST(same_pay_no_for_orders_on_both_shards_at_once_pays_one)
{
    long long conflicts = h_metric("paycallback_pay_no_conflicts_total");
    int round;

    for (round = 0; round < RACE_ROUNDS; round++) {
        char o1[32], o2[32], pay_no[64], where[128];
        struct race_arg a = { .order_no = { o1, o2 }, .pay_no = pay_no };
        struct h_storm_stats st;
        int winner;

        snprintf(o1, sizeof o1, "S01-RACE%d", round);
        snprintf(o2, sizeof o2, "S02-RACE%d", round);
        snprintf(pay_no, sizeof pay_no, "PAY-RACE-%d", round);
        insert_order(1, o1);
        insert_order(2, o2);
        ck_assert_int_eq(0, h_storm(2, 2, race_call, &a, &st));
        ck_assert_msg((a.status[0] == 200 && a.status[1] == 409) ||
                          (a.status[0] == 409 && a.status[1] == 200),
                      "round %d: answers %d %s and %d %s", round, a.status[0], a.code[0],
                      a.status[1], a.code[1]);
        winner = a.status[0] == 200 ? 0 : 1;
        ck_assert_str_eq("PAID", a.code[winner]);
        ck_assert_str_eq("PAY_NO_CONFLICT", a.code[1 - winner]);
        snprintf(where, sizeof where, "pay_no = '%s'", pay_no);
        ck_assert_int_eq(1, rows_anywhere("payment_record", where));
        ck_assert_int_eq(1, rows_anywhere("pay_no_registry", where));
        assert_paid_on(winner + 1, a.order_no[winner], pay_no);
        ck_assert_int_eq(1, status_on(2 - winner, a.order_no[1 - winner])); /* still waiting */
    }
    ck_assert_int_eq(RACE_ROUNDS, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(RACE_ROUNDS, h_metric("paycallback_pay_no_conflicts_total") -
                                      (conflicts > 0 ? conflicts : 0));
}
END_TEST

START_TEST(registry_row_left_by_a_crash_lets_the_bank_retry_pay)
{
    struct h_resp r;
    char pay_no[64];

    /* The callback died after binding the pay_no (on shard 1), before the
     * order's shard (2) committed anything. */
    pay_no_on(1, "PAY-CRASH", pay_no);
    insert_order(2, "S02-CRASH");
    h_db_exec("INSERT INTO pay_no_registry (pay_no, order_no) VALUES ('%s', 'S02-CRASH')", pay_no);
    ck_assert_int_eq(0, h_callback(h_port(), "S02-CRASH", pay_no, PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    assert_paid_on(2, "S02-CRASH", pay_no);
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", "1"));
}
END_TEST

START_TEST(a_typo_404_binds_nothing_and_the_corrected_callback_pays)
{
    struct h_resp r;

    /* The bank first sends the pay_no with a mistyped order number (a
     * well-formed number of shard 2 that has no order), then corrects it. */
    insert_order(1, "S01-REAL");
    ck_assert_int_eq(0, h_callback(h_port(), "S02-GONE", "PAY-TYPO", PRICE, &r));
    h_assert_error(&r, 404, "ORDER_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, rows_anywhere("pay_no_registry", "1"));
    ck_assert_int_eq(0, h_callback(h_port(), "S01-REAL", "PAY-TYPO", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    assert_paid_on(1, "S01-REAL", "PAY-TYPO");
    ck_assert_int_eq(1, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", "1"));
}
END_TEST

START_TEST(a_malformed_shard_prefix_is_404_and_writes_nothing)
{
    static const char *const bad[] = {
        "S1-BAD", "s01-BAD", "SAB-BAD", "S001-BAD", "S-BAD", "S01BAD"
    };
    struct h_resp r;
    char pay_no[32];
    size_t i;

    /* Each number is an order on shard 1, where a number with no prefix
     * would be routed: a malformed prefix must not be taken for none. */
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        insert_order(1, bad[i]);
        snprintf(pay_no, sizeof pay_no, "PAY-BADPFX-%zu", i);
        ck_assert_int_eq(0, h_callback(h_port(), bad[i], pay_no, PRICE, &r));
        ck_assert_msg(h_check_error(&r, 404, "ORDER_NOT_FOUND") == NULL, "%s: %d %s", bad[i],
                      r.status, r.body);
        h_resp_free(&r);
        ck_assert_int_eq(1, status_on(1, bad[i]));
    }
    ck_assert_int_eq(0, rows_anywhere("pay_no_registry", "1"));
    ck_assert_int_eq(0, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(0, rows_anywhere("outbox", "1"));
}
END_TEST

START_TEST(a_binding_to_an_order_that_never_existed_is_replaced)
{
    struct h_resp r;
    char where[96];

    /* Left by an earlier version that bound before it knew the order. */
    h_db_exec("INSERT INTO %s.pay_no_registry (pay_no, order_no) VALUES ('PAY-GHOST', "
              "'S02-GHOST')",
              h_shard_db(h_shard_place("PAY-GHOST")));
    insert_order(1, "S01-REAL");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-REAL", "PAY-GHOST", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    assert_paid_on(1, "S01-REAL", "PAY-GHOST");
    snprintf(where, sizeof where, "order_no = 'S02-GHOST'");
    ck_assert_int_eq(0, rows_anywhere("pay_no_registry", where));

    /* A binding to an order that exists is kept: 409. */
    insert_order(2, "S02-OTHER");
    ck_assert_int_eq(0, h_callback(h_port(), "S02-OTHER", "PAY-GHOST", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(1, status_on(2, "S02-OTHER"));
}
END_TEST

START_TEST(a_paid_pay_no_presented_for_other_orders_is_a_conflict_on_either_shard)
{
    struct h_resp r;

    /* PAY-HINT is now in the service's hint of recorded pay_nos: a callback
     * for another order must still be refused, whichever shard it is on. */
    insert_order(1, "S01-H1");
    insert_order(1, "S01-H2");
    insert_order(2, "S02-H3");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-H1", "PAY-HINT", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S02-H3", "PAY-HINT", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S01-H2", "PAY-HINT", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S01-H1", "PAY-HINT", "1.00", &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(1, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(1, status_on(1, "S01-H2"));
    ck_assert_int_eq(1, status_on(2, "S02-H3"));
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", "1"));
}
END_TEST

/* ---- a gateway route ------------------------------------------------------- */

static void post_stripe(const char *pi, const char *order_no, struct h_resp *r)
{
    char body[1024], t[24], mac[65], hdr[160];

    snprintf(body, sizeof body,
             "{\"id\":\"evt_1\",\"object\":\"event\",\"type\":"
             "\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"%s\",\"object\":"
             "\"payment_intent\",\"amount\":89900,\"amount_received\":89900,\"currency\":\"usd\","
             "\"status\":\"succeeded\",\"metadata\":{\"order_no\":\"%s\"}}}}",
             pi, order_no);
    snprintf(t, sizeof t, "%lld", (long long)time(NULL));
    testkey_hmac_hex(STRIPE_SECRET, t, body, mac);
    snprintf(hdr, sizeof hdr, "Stripe-Signature: t=%s,v1=%s", t, mac);
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };
    ck_assert_int_eq(
        0, h_http(h_port(), "POST", "/pay/callback/stripe", headers, body, strlen(body), r));
}

/* ---- releasing a pay_no binding ------------------------------------------- */

#define RELEASE_RACE_ROUNDS 12
#define RELEASE_RACE_CALLBACKS 3

/* POST /ops/pay-no/{pay_no}/release naming order_no; returns the status. */
static int release(const char *pay_no, const char *order_no, struct h_resp *r)
{
    char path[128], body[128];

    snprintf(path, sizeof path, "/ops/pay-no/%s/release", pay_no);
    snprintf(body, sizeof body, "{\"order_no\":\"%s\"}", order_no);
    if (h_http(h_port(), "POST", path, NULL, body, strlen(body), r) != 0)
        return -1;
    return r->status;
}

/* The state of pay_no's binding (1 BOUND, 2 RELEASING, 3 RELEASED), -1 for none. */
static long long binding_state(const char *pay_no, const char *order_no)
{
    return h_db_scalar_ll("SELECT state FROM %s.pay_no_registry WHERE pay_no = '%s' AND "
                          "order_no = '%s'",
                          h_shard_db(h_shard_place(pay_no)), pay_no, order_no);
}

static long long audit_rows(const char *pay_no, const char *action)
{
    char where[160];

    snprintf(where, sizeof where, "actor = 'dev' AND action = '%s' AND subject = '%s'", action,
             pay_no);
    return rows_anywhere("audit_log", where);
}

static long long fences_on(int shard, const char *pay_no, const char *order_no)
{
    char where[160];

    snprintf(where, sizeof where, "pay_no = '%s' AND order_no = '%s'", pay_no, order_no);
    return rows_on(shard, "pay_no_fence", where);
}

/* Binds pay_no to order_no without paying it: the order exists, the
 * amount is wrong (422), and the binding stays. */
static void bind_unpaid(const char *order_no, const char *pay_no)
{
    struct h_resp r;

    ck_assert_int_eq(0, h_callback(h_port(), order_no, pay_no, "1.00", &r));
    h_assert_error(&r, 422, "AMOUNT_MISMATCH");
    h_resp_free(&r);
    ck_assert_int_eq(1, binding_state(pay_no, order_no));
}

/* The bank sent the pay_no with the wrong order first: its corrected
 * callback is a conflict until an operator releases the binding, then
 * pays; the wrong order can never be paid with it. */
START_TEST(a_released_binding_lets_the_corrected_callback_pay)
{
    struct h_resp r;
    char where[128];

    insert_order(1, "S01-WRONG");
    insert_order(2, "S02-RIGHT");
    bind_unpaid("S01-WRONG", "PAY-REL");
    ck_assert_int_eq(0, h_callback(h_port(), "S02-RIGHT", "PAY-REL", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);

    ck_assert_int_eq(200, release("PAY-REL", "S01-WRONG", &r));
    h_assert_str(&r, "state", "RELEASED");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(3, binding_state("PAY-REL", "S01-WRONG"));
    ck_assert_int_eq(1, fences_on(1, "PAY-REL", "S01-WRONG"));
    ck_assert_int_eq(1, audit_rows("PAY-REL", "pay_no.release"));
    ck_assert_int_eq(1, audit_rows("PAY-REL", "pay_no.released"));
    /* The same request again: nothing more written. */
    ck_assert_int_eq(200, release("PAY-REL", "S01-WRONG", &r));
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(2, rows_anywhere("audit_log", "subject = 'PAY-REL'"));

    /* The bank still retrying the wrong callback cannot take it back. */
    ck_assert_int_eq(0, h_callback(h_port(), "S01-WRONG", "PAY-REL", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_RELEASED");
    h_resp_free(&r);
    ck_assert_int_eq(1, status_on(1, "S01-WRONG"));

    ck_assert_int_eq(0, h_callback(h_port(), "S02-RIGHT", "PAY-REL", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    assert_paid_on(2, "S02-RIGHT", "PAY-REL");
    snprintf(where, sizeof where, "pay_no = 'PAY-REL'");
    ck_assert_int_eq(1, rows_anywhere("payment_record", where));
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", where));
    ck_assert_int_eq(1, status_on(1, "S01-WRONG"));
    /* Bound to the right order now: the wrong one is a plain conflict. */
    ck_assert_int_eq(0, h_callback(h_port(), "S01-WRONG", "PAY-REL", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
}
END_TEST

START_TEST(a_release_is_refused_for_a_paid_pay_no_another_order_or_none)
{
    struct h_resp r;

    insert_order(1, "S01-PAID");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-PAID", "PAY-PAID", PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(409, release("PAY-PAID", "S01-PAID", &r));
    h_assert_error(&r, 409, "PAY_NO_PAID");
    h_resp_free(&r);
    ck_assert_int_eq(1, binding_state("PAY-PAID", "S01-PAID"));
    ck_assert_int_eq(0, fences_on(1, "PAY-PAID", "S01-PAID"));
    ck_assert_int_eq(1, audit_rows("PAY-PAID", "pay_no.release"));
    ck_assert_int_eq(1, audit_rows("PAY-PAID", "pay_no.release_refused"));
    ck_assert_int_eq(0, audit_rows("PAY-PAID", "pay_no.released"));
    /* Still paid, once, and a replay is still a replay. */
    assert_paid_on(1, "S01-PAID", "PAY-PAID");
    ck_assert_int_eq(0, h_callback(h_port(), "S01-PAID", "PAY-PAID", PRICE, &r));
    assert_paid(&r, 1);
    h_resp_free(&r);

    ck_assert_int_eq(409, release("PAY-PAID", "S02-OTHER", &r));
    h_assert_error(&r, 409, "PAY_NO_CONFLICT");
    h_resp_free(&r);
    ck_assert_int_eq(404, release("PAY-NONE", "S01-PAID", &r));
    h_assert_error(&r, 404, "BINDING_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0,
                     h_http(h_port(), "POST", "/ops/pay-no/PAY-PAID/release", NULL, "{}", 2, &r));
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ck_assert_int_eq(0, rows_anywhere("pay_no_fence", "1"));
    ck_assert_int_eq(1, binding_state("PAY-PAID", "S01-PAID"));
}
END_TEST

/* A crash between the steps, planted: RELEASING with no fence (after
 * step 1), then with the fence (after step 2). Callbacks of the pay_no
 * wait (503) and the same request resumes. A callback that passed the
 * registry before the release began meets the fence inside its CALL. */
START_TEST(a_release_stopped_between_its_steps_resumes_and_callbacks_wait)
{
    const int reg = h_shard_place("PAY-STEP");
    struct h_resp r;

    insert_order(1, "S01-STEP");
    insert_order(2, "S02-STEP");
    h_db_exec("INSERT INTO %s.pay_no_registry (pay_no, order_no, state) VALUES ('PAY-STEP', "
              "'S01-STEP', 2)",
              h_shard_db(reg));
    ck_assert_int_eq(0, h_callback(h_port(), "S01-STEP", "PAY-STEP", PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_msg(h_resp_header(&r, "Retry-After") != NULL, "no Retry-After: %s", r.body);
    ck_assert_msg(h_resp_header(&r, "X-Shard-Outage") == NULL, "not a shard outage");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_callback(h_port(), "S02-STEP", "PAY-STEP", PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    ck_assert_int_eq(0, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(200, release("PAY-STEP", "S01-STEP", &r));
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    ck_assert_int_eq(3, binding_state("PAY-STEP", "S01-STEP"));
    ck_assert_int_eq(1, fences_on(1, "PAY-STEP", "S01-STEP"));
    ck_assert_int_eq(1, audit_rows("PAY-STEP", "pay_no.released"));

    /* After step 2: the fence stands, the registry still says RELEASING. */
    h_db_exec("UPDATE %s.pay_no_registry SET state = 2 WHERE pay_no = 'PAY-STEP'", h_shard_db(reg));
    ck_assert_int_eq(0, h_callback(h_port(), "S01-STEP", "PAY-STEP", PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_resp_free(&r);
    ck_assert_int_eq(200, release("PAY-STEP", "S01-STEP", &r));
    h_resp_free(&r);
    ck_assert_int_eq(3, binding_state("PAY-STEP", "S01-STEP"));
    ck_assert_int_eq(2, audit_rows("PAY-STEP", "pay_no.released"));

    /* A callback of the released order that read BOUND before the release
     * began reaches its CALL after the fence: refused there, nothing written. */
    h_db_exec("UPDATE %s.pay_no_registry SET state = 1 WHERE pay_no = 'PAY-STEP'", h_shard_db(reg));
    ck_assert_int_eq(0, h_callback(h_port(), "S01-STEP", "PAY-STEP", PRICE, &r));
    h_assert_error(&r, 409, "PAY_NO_RELEASED");
    h_resp_free(&r);
    ck_assert_int_eq(0, rows_anywhere("payment_record", "1"));
    ck_assert_int_eq(1, status_on(1, "S01-STEP"));
    ck_assert_int_eq(0, rows_anywhere("outbox", "1"));
}
END_TEST

/* Exactly one of "paid on order_no" and "released" happened for pay_no,
 * and the answers say which: read from both databases. */
static void assert_paid_xor_released(const char *pay_no, const char *order_no, int shard,
                                     int release_status, const char *what)
{
    char where[160];
    long long paid, fenced, state;

    snprintf(where, sizeof where, "pay_no = '%s'", pay_no);
    paid = rows_anywhere("payment_record", where);
    fenced = fences_on(shard, pay_no, order_no);
    state = binding_state(pay_no, order_no);
    ck_assert_msg(paid <= 1, "%s: %s recorded %lld times", what, pay_no, paid);
    if (paid == 1) {
        ck_assert_msg(release_status == 409 && state == 1 && fenced == 0 &&
                          status_on(shard, order_no) == 2,
                      "%s: paid, yet release %d, state %lld, fence %lld", what, release_status,
                      state, fenced);
        assert_paid_on(shard, order_no, pay_no);
    } else {
        ck_assert_msg(release_status == 200 && state == 3 && fenced == 1 &&
                          status_on(shard, order_no) == 1,
                      "%s: not paid, yet release %d, state %lld, fence %lld", what, release_status,
                      state, fenced);
        snprintf(where, sizeof where, "order_no = '%s'", order_no);
        ck_assert_int_eq(0, rows_anywhere("outbox", where));
    }
}

struct held_callback {
    const char *order_no, *pay_no;
    int rc;
    struct h_resp r;
};

static void *held_callback(void *arg)
{
    struct held_callback *h = arg;

    h->rc = h_callback(h_port(), h->order_no, h->pay_no, PRICE, &h->r);
    return NULL;
}

struct held_release {
    const char *order_no, *pay_no;
    int status;
    struct h_resp r;
};

static void *held_release(void *arg)
{
    struct held_release *h = arg;

    h->status = release(h->pay_no, h->order_no, &h->r);
    return NULL;
}

/* The callback's CALL waits inside the order's shard (a test connection
 * holds the order's row) with its payment inserted, while the release
 * runs: exactly one of the two happens. */
START_TEST(a_callback_held_inside_its_call_and_a_release_never_both_happen)
{
    struct held_callback cb = { .order_no = "S01-HELD", .pay_no = "PAY-HELD" };
    struct held_release rl = { .order_no = "S01-HELD", .pay_no = "PAY-HELD" };
    struct h_deadline d = h_deadline_in(20000);
    struct h_db *holder, *probe;
    pthread_t tc, tr;

    insert_order(1, "S01-HELD");
    bind_unpaid("S01-HELD", "PAY-HELD");
    holder = h_db_open();
    probe = h_db_open();
    h_db_sql(holder, "START TRANSACTION");
    h_db_sql(holder, "SELECT status FROM orders WHERE order_no = 'S01-HELD' FOR UPDATE");
    ck_assert_int_eq(0, pthread_create(&tc, NULL, held_callback, &cb));
    /* The CALL has inserted its payment (uncommitted) once a locking read
     * of it cannot go through. */
    while (h_db_try(probe, "SELECT pay_no FROM payment_record WHERE pay_no = 'PAY-HELD' "
                           "LOCK IN SHARE MODE NOWAIT") == 0)
        ck_assert_msg(h_deadline_wait(&d), "the callback's CALL never wrote its payment");
    ck_assert_int_eq(0, pthread_create(&tr, NULL, held_release, &rl));
    while (binding_state("PAY-HELD", "S01-HELD") == 1 && rl.status == 0)
        ck_assert_msg(h_deadline_wait(&d), "the release never began");
    h_db_sql(holder, "ROLLBACK");
    pthread_join(tc, NULL);
    pthread_join(tr, NULL);
    h_db_close(holder);
    h_db_close(probe);

    ck_assert_int_eq(0, cb.rc);
    ck_assert_msg(cb.r.status == 200 || h_check_error(&cb.r, 409, "PAY_NO_RELEASED") == NULL,
                  "callback: %d %s", cb.r.status, cb.r.body);
    ck_assert_msg(rl.status == 200 || h_check_error(&rl.r, 409, "PAY_NO_PAID") == NULL,
                  "release: %d %s", rl.status, rl.r.body);
    assert_paid_xor_released("PAY-HELD", "S01-HELD", 1, rl.status, "held");
    printf("held call vs release: %s\n", rl.status == 200 ? "released" : "paid");
    ck_assert_int_eq(cb.r.status == 200, rl.status == 409);
    h_resp_free(&cb.r);
    h_resp_free(&rl.r);
}
END_TEST

struct release_race {
    const char *order_no, *pay_no;
    int status[1 + RELEASE_RACE_CALLBACKS];
    char code[1 + RELEASE_RACE_CALLBACKS][32];
};

/* Call 0 releases, the others are the bank's callbacks for the bound order. */
static int release_race_call(int i, void *arg)
{
    struct release_race *a = arg;
    struct h_resp r;
    char *code;

    if (i == 0)
        a->status[0] = release(a->pay_no, a->order_no, &r);
    else {
        h_callback(h_port(), a->order_no, a->pay_no, PRICE, &r);
        a->status[i] = r.status;
    }
    code = r.body != NULL ? h_json_get_str(r.body, r.status == 200 && i > 0 ? "result" : "code")
                          : NULL;
    snprintf(a->code[i], sizeof a->code[i], "%s", code != NULL ? code : "");
    free(code);
    h_resp_free(&r);
    return 0;
}

START_TEST(callbacks_racing_a_release_never_pay_a_released_pay_no)
{
    int round, i, shard, released = 0;

    for (round = 0; round < RELEASE_RACE_ROUNDS; round++) {
        char order_no[32], other[32], pay_no[32], what[64];
        struct release_race a = { .order_no = order_no, .pay_no = pay_no };
        struct h_storm_stats st;
        struct h_resp r;

        shard = round % 2 + 1;
        snprintf(order_no, sizeof order_no, "S0%d-RR%d", shard, round);
        snprintf(other, sizeof other, "S0%d-RRB%d", 3 - shard, round);
        snprintf(pay_no, sizeof pay_no, "PAY-RR-%d", round);
        snprintf(what, sizeof what, "round %d", round);
        insert_order(shard, order_no);
        insert_order(3 - shard, other);
        bind_unpaid(order_no, pay_no);
        ck_assert_int_eq(0, h_storm(1 + RELEASE_RACE_CALLBACKS, 1 + RELEASE_RACE_CALLBACKS,
                                    release_race_call, &a, &st));
        for (i = 1; i <= RELEASE_RACE_CALLBACKS; i++)
            ck_assert_msg((a.status[i] == 200 && strcmp(a.code[i], "PAID") == 0) ||
                              (a.status[i] == 409 && strcmp(a.code[i], "PAY_NO_RELEASED") == 0) ||
                              (a.status[i] == 503 && strcmp(a.code[i], "UNAVAILABLE") == 0),
                          "%s: callback %d answered %d %s", what, i, a.status[i], a.code[i]);
        ck_assert_msg(a.status[0] == 200 ||
                          (a.status[0] == 409 && strcmp(a.code[0], "PAY_NO_PAID") == 0),
                      "%s: release answered %d %s", what, a.status[0], a.code[0]);
        assert_paid_xor_released(pay_no, order_no, shard, a.status[0], what);
        /* The bank's correction: pays the other order only if released. */
        ck_assert_int_eq(0, h_callback(h_port(), other, pay_no, PRICE, &r));
        released += a.status[0] == 200;
        if (a.status[0] == 200)
            assert_paid(&r, 0);
        else
            h_assert_error(&r, 409, "PAY_NO_CONFLICT");
        h_resp_free(&r);
        snprintf(what, sizeof what, "pay_no = '%s'", pay_no);
        ck_assert_int_eq(1, rows_anywhere("payment_record", what));
    }
    printf("release race: %d rounds, %d released, %d paid first\n", RELEASE_RACE_ROUNDS, released,
           RELEASE_RACE_ROUNDS - released);
    /* One payment per pay_no, whichever way each round went. */
    ck_assert_int_eq(RELEASE_RACE_ROUNDS,
                     rows_anywhere("payment_record", "pay_no LIKE 'PAY-RR-%'"));
}
END_TEST

START_TEST(stripe_notification_is_routed_to_shard_2)
{
    struct h_resp r;
    int i;

    insert_order(2, "S02-STRIPE");
    for (i = 0; i < 2; i++) { /* the event, then Stripe's resend */
        post_stripe("pi_shard2", "S02-STRIPE", &r);
        h_assert_status(&r, 200);
        ck_assert_int_eq(1, h_json_get_bool(r.body, "received"));
        h_resp_free(&r);
    }
    assert_paid_on(2, "S02-STRIPE", "pi_shard2");
    ck_assert_int_eq(0, rows_on(1, "payment_record", "1"));

    post_stripe("pi_shard5", "S05-STRIPE", &r);
    ck_assert_int_eq(404, r.status);
    h_resp_free(&r);
    ck_assert_int_eq(1, rows_anywhere("pay_no_registry", "1"));
}
END_TEST

/* ---- the active query of stale orders ---------------------------------------- */

START_TEST(query_pays_stale_orders_of_both_shards_each_on_its_own)
{
    struct h_resp r;

    stale_order(1, "S01-Q1");
    stale_order(2, "S02-Q2");
    plant("S01-Q1", "PAID", "QP-1");
    plant("S02-Q2", "PAID", "QP-2");
    query_now("{\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"order_no\":\"S01-Q1\"") != NULL &&
                      strstr(r.body, "\"order_no\":\"S02-Q2\"") != NULL,
                  "%s", r.body);
    h_resp_free(&r);
    assert_paid_on(1, "S01-Q1", "QP-1");
    assert_paid_on(2, "S02-Q2", "QP-2");
}
END_TEST

START_TEST(query_backlog_of_one_shard_does_not_starve_the_other)
{
    struct h_resp r;
    char order_no[32];
    int i;

    /* Shard 1 has more stale orders than a round takes, all older than
     * shard 2's one; a round of 4 still asks about shard 2's. */
    for (i = 0; i < 6; i++) {
        snprintf(order_no, sizeof order_no, "S01-BL%d", i);
        stale_order(1, order_no);
        plant(order_no, "NOTPAY", "");
    }
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 15 MINUTE");
    stale_order(2, "S02-BL");
    plant("S02-BL", "PAID", "QP-BL");
    query_now("{\"limit\":4}", &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"order_no\":\"S02-BL\"") != NULL, "%s", r.body);
    h_resp_free(&r);
    assert_paid_on(2, "S02-BL", "QP-BL");
    ck_assert_int_eq(6, rows_on(1, "orders", "status = 1"));
}
END_TEST

START_TEST(periodic_pass_rotates_over_both_shards_and_through_each)
{
    char order_no[32];
    int i;

    /* Rounds of 2: shard 1's backlog of 8 older orders is walked through in
     * turn while shard 2's one order is paid at the first round. */
    for (i = 0; i < 8; i++) {
        snprintf(order_no, sizeof order_no, "S01-PR%d", i);
        stale_order(1, order_no);
        plant(order_no, "NOTPAY", "");
    }
    h_db_exec("UPDATE orders SET create_time = NOW(3) - INTERVAL 15 MINUTE");
    stale_order(2, "S02-PR");
    plant("S02-PR", "PAID", "QP-PR");
    h_await(status_on(2, "S02-PR") == 2, 20000, "the periodic pass never paid S02-PR");
    for (i = 0; i < 8; i++) {
        snprintf(order_no, sizeof order_no, "S01-PR%d", i);
        h_await(queried(order_no) >= 1, 30000, "%s was never asked about", order_no);
    }
    assert_paid_on(2, "S02-PR", "QP-PR");
    ck_assert_int_eq(1, queried("S02-PR")); /* paid: never asked again */
    ck_assert_int_eq(8, rows_on(1, "orders", "status = 1"));
}
END_TEST

/* ---- shard 2 hangs -------------------------------------------------------------- */

#define HUNG_CALLS 120

struct hung_arg {
    int status[HUNG_CALLS];
    char outage[HUNG_CALLS][4];
    char order_no[HUNG_CALLS][32];
    char pay_no[HUNG_CALLS][64];
};

static int hung_call(int i, void *p)
{
    struct hung_arg *a = p;
    const char *hdr;
    struct h_resp r;

    h_callback(h_port(), a->order_no[i], a->pay_no[i], PRICE, &r);
    a->status[i] = r.status;
    hdr = h_resp_header(&r, "X-Shard-Outage");
    snprintf(a->outage[i], sizeof a->outage[i], "%s", hdr != NULL ? hdr : "");
    h_resp_free(&r);
    return 0;
}

START_TEST(a_hung_shard_fails_alone_and_fast)
{
    struct hung_arg *a = calloc(1, sizeof(*a));
    struct h_storm_stats st;
    struct h_resp r;
    int i, paid = 0, refused = 0;

    ck_assert_ptr_nonnull(a);
    /* Readiness answers from the prober's state: ready, shard 2 down. */
    ck_assert_int_eq(0, h_http(h_port(), "GET", "/readyz", NULL, NULL, 0, &r));
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"shards\":{\"1\":\"up\",\"2\":\"down\"}") != NULL, "%s", r.body);
    h_resp_free(&r);

    /* Half the storm pays orders of shard 1 with pay_nos bound on shard 1,
     * half pays orders of the hung shard 2. */
    for (i = 0; i < HUNG_CALLS; i++) {
        snprintf(a->order_no[i], sizeof a->order_no[i], "S0%d-HUNG%d", 1 + i % 2, i);
        pay_no_on(1, a->order_no[i], a->pay_no[i]);
        if (i % 2 == 0)
            insert_order(1, a->order_no[i]);
    }
    ck_assert_int_eq(0, h_storm(16, HUNG_CALLS, hung_call, a, &st));
    printf("hung shard storm: %d callbacks, %.0f/s, p50 %lld us, p99 %lld us\n", st.total, st.rps,
           st.p50_us, st.p99_us);
    for (i = 0; i < HUNG_CALLS; i++) {
        if (i % 2 == 0) {
            ck_assert_msg(a->status[i] == 200, "%s answered %d", a->order_no[i], a->status[i]);
            paid++;
        } else {
            ck_assert_msg(a->status[i] == 503, "%s answered %d", a->order_no[i], a->status[i]);
            ck_assert_str_eq("2", a->outage[i]);
            refused++;
        }
    }
    ck_assert_int_eq(HUNG_CALLS / 2, paid);
    ck_assert_int_eq(HUNG_CALLS / 2, refused);
    ck_assert_int_eq(HUNG_CALLS / 2, rows_on(1, "payment_record", "1"));
    ck_assert_int_eq(0, rows_on(2, "payment_record", "1"));
    ck_assert_int_eq(HUNG_CALLS / 2, rows_on(1, "pay_no_registry", "1"));
    ck_assert_int_gt(h_metric("paycallback_shard_fast_fails_total{shard=\"2\"}"), 0);

    /* A gateway's notification for the hung shard: its own format, marked. */
    post_stripe("pi_hung", "S02-HUNG1", &r);
    ck_assert_int_eq(503, r.status);
    ck_assert_str_eq("2", h_resp_header(&r, "X-Shard-Outage"));
    h_resp_free(&r);

    /* The answer names the outage in its body too, with Retry-After. */
    ck_assert_int_eq(0, h_callback(h_port(), "S02-HUNG1", "PAY-HUNG-X", PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    h_assert_str(&r, "shard_outage", "2");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    free(a);
}
END_TEST

/* ---- shard 2 down ----------------------------------------------------------- */

START_TEST(shard_2_down_fails_only_the_payments_that_need_it)
{
    long long before = h_metric("paycallback_shard_unavailable_total{shard=\"2\"}");
    struct h_resp r;
    char on1[64], on2[64], on1b[64], where[160];

    pay_no_on(1, "PAY-DOWN-A", on1);
    pay_no_on(2, "PAY-DOWN-B", on2);
    pay_no_on(1, "PAY-DOWN-C", on1b);
    insert_order(2, "S02-DOWN");
    insert_order(1, "S01-UP");
    insert_order(1, "S01-UP2");

    /* The order's shard is down: 503, retry later. */
    ck_assert_int_eq(0, h_callback(h_port(), "S02-DOWN", on1, PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    ck_assert_int_gt(h_metric("paycallback_shard_unavailable_total{shard=\"2\"}"),
                     before > 0 ? before : 0);

    /* An order of shard 1 whose pay_no is placed on shard 1 is paid. */
    ck_assert_int_eq(0, h_callback(h_port(), "S01-UP", on1b, PRICE, &r));
    assert_paid(&r, 0);
    h_resp_free(&r);
    ck_assert_int_eq(2, status_on(1, "S01-UP"));

    /* An order of shard 1 whose pay_no's registry row lives on shard 2 waits
     * for it (docs/sharding.md says so plainly). */
    ck_assert_int_eq(0, h_callback(h_port(), "S01-UP2", on2, PRICE, &r));
    h_assert_error(&r, 503, "UNAVAILABLE");
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    ck_assert_int_eq(1, status_on(1, "S01-UP2"));

    snprintf(where, sizeof where, "order_no IN ('S02-DOWN', 'S01-UP2')");
    ck_assert_int_eq(0, rows_anywhere("payment_record", where));
    ck_assert_int_eq(0, rows_anywhere("outbox", where));
    ck_assert_int_eq(0, h_metric("paycallback_shard_unavailable_total{shard=\"1\"}"));

    /* The gateway answers in its own format, and asks to be retried. */
    post_stripe("pi_down", "S02-DOWN", &r);
    ck_assert_int_eq(503, r.status);
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
}
END_TEST

START_TEST(query_skips_a_shard_that_is_down_and_pays_the_others)
{
    long long before = h_metric("paycallback_shard_unavailable_total{shard=\"2\"}");
    struct h_resp r;

    stale_order(1, "S01-QD");
    stale_order(2, "S02-QD");
    plant("S01-QD", "PAID", "QP-D1");
    plant("S02-QD", "PAID", "QP-D2");
    query_now("{\"limit\":10}", &r);
    h_assert_status(&r, 200);
    ck_assert_msg(strstr(r.body, "\"order_no\":\"S01-QD\"") != NULL, "%s", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(2, status_on(1, "S01-QD"));
    ck_assert_int_eq(1, status_on(2, "S02-QD"));
    ck_assert_int_eq(0, rows_anywhere("payment_record", "order_no = 'S02-QD'"));
    ck_assert_int_gt(h_metric("paycallback_shard_unavailable_total{shard=\"2\"}"),
                     before > 0 ? before : 0);
}
END_TEST

static Suite *shards_pay_suite(void)
{
    Suite *s = suite_create("shards_pay");
    TCase *tc = h_tcase_with("two shards up", TC_TIMEOUT_S, sharded_server_up, server_down);

    tcase_add_test(tc, each_order_is_paid_on_its_own_shard_only);
    tcase_add_test(tc, order_of_no_configured_shard_is_404_and_writes_nothing);
    tcase_add_test(tc, unprefixed_order_made_before_sharding_is_paid_on_shard_1);
    tcase_add_test(tc, storm_of_identical_callbacks_records_one_payment);
    tcase_add_test(tc, same_pay_no_for_orders_on_both_shards_at_once_pays_one);
    tcase_add_test(tc, registry_row_left_by_a_crash_lets_the_bank_retry_pay);
    tcase_add_test(tc, a_typo_404_binds_nothing_and_the_corrected_callback_pays);
    tcase_add_test(tc, a_malformed_shard_prefix_is_404_and_writes_nothing);
    tcase_add_test(tc, a_binding_to_an_order_that_never_existed_is_replaced);
    tcase_add_test(tc, a_paid_pay_no_presented_for_other_orders_is_a_conflict_on_either_shard);
    tcase_add_test(tc, stripe_notification_is_routed_to_shard_2);
    tcase_add_test(tc, query_pays_stale_orders_of_both_shards_each_on_its_own);
    tcase_add_test(tc, query_backlog_of_one_shard_does_not_starve_the_other);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("releasing a pay_no binding", TC_TIMEOUT_S, sharded_server_up, server_down);
    tcase_add_test(tc, a_released_binding_lets_the_corrected_callback_pay);
    tcase_add_test(tc, a_release_is_refused_for_a_paid_pay_no_another_order_or_none);
    tcase_add_test(tc, a_release_stopped_between_its_steps_resumes_and_callbacks_wait);
    tcase_add_test(tc, a_callback_held_inside_its_call_and_a_release_never_both_happen);
    tcase_add_test(tc, callbacks_racing_a_release_never_pay_a_released_pay_no);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("periodic pass", TC_TIMEOUT_S, periodic_server_up, server_down);
    tcase_add_test(tc, periodic_pass_rotates_over_both_shards_and_through_each);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 hangs", TC_TIMEOUT_S, hung_server_up, hung_server_down);
    tcase_add_test(tc, a_hung_shard_fails_alone_and_fast);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("shard 2 down", TC_TIMEOUT_S, half_down_server_up, server_down);
    tcase_add_test(tc, shard_2_down_fails_only_the_payments_that_need_it);
    tcase_add_test(tc, query_skips_a_shard_that_is_down_and_pays_the_others);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(shards_pay_suite, NULL, NULL);
