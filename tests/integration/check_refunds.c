/* check_refunds.c - refund records against the real binary, MariaDB and
 * Redis: an operator's (partial) refunds with an Idempotency-Key, up to the
 * payment and not a cent past it, under 50 concurrent requests; the refund
 * a double payment through a Stripe profile makes by itself ("auto") or
 * after an operator's approval; the listing and its pages. Every invariant
 * is checked with SQL on the refund table. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define SECRET "whsec_refund_test_secret"
#define TC_TIMEOUT_S 60
#define PRICE "899.00"
#define PRICE_MINOR "89900"
#define STORM_CLIENTS 50
#define STORM_AMOUNT "20.00" /* 44 fit in 899.00, the 45th would pass it */
#define STORM_FIT 44

static char config_path[H_TEMP_PATH_MAX];

/* The refund ledger's rule, checked after every test of this file: no
 * payment's refunds not FAILED pass the payment, and no settled payment
 * keeps a refund under way. */
static void assert_ledger(void)
{
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record p WHERE p.amount < "
                                       "(SELECT COALESCE(SUM(r.amount), 0) FROM refund r "
                                       "WHERE r.pay_no = p.pay_no AND r.state <> 4)"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM refund r JOIN payment_record p ON "
                                       "p.pay_no = r.pay_no WHERE p.status = 3 AND "
                                       "r.state IN (0, 1, 2, 5)"));
}

/* Two Stripe profiles with a refund API: "stripe" refunds a double
 * payment by itself, "stripe2" waits for an operator. Nothing listens at
 * their refund_url, and the relay is kept idle (below): these cases are
 * about the records. */
static void server_up(void)
{
    /* The relay claims once at start, then waits its longest poll: the
     * refunds made here stay as they were made. */
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET, "TEST_STRIPE_KEY=sk_test_1",
                                       "PAYCALLBACK_REFUNDS_POLL_MS=60000", NULL };

    h_temp_file(config_path, "{\"gateways\": ["
                             "{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\": "
                             "\"TEST_STRIPE_SECRET\", \"refund\": \"auto\", \"refund_url\": "
                             "\"http://127.0.0.1:9\", \"refund_key_env\": \"TEST_STRIPE_KEY\"},"
                             "{\"name\": \"stripe2\", \"kind\": \"stripe\", \"secret_env\": "
                             "\"TEST_STRIPE_SECRET\", \"refund_url\": \"http://127.0.0.1:9\", "
                             "\"refund_key_env\": \"TEST_STRIPE_KEY\"}]}");
    h_fixture_server_up_config(config_path, env);
}

static void server_down(void)
{
    assert_ledger();
    h_fixture_server_down();
    unlink(config_path);
}

/* ---- with a gateway to refund through (tests/tools/refund_gateway.py) ---- */

#define API_KEY "sk_test_refunds"
#define RELAY_WAIT_MS 20000

static struct h_tool gw;
static int down_port; /* where nothing listens until a test starts a gateway there */

/* A port nothing listens on (the kernel's pick, closed again). */
static int unused_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(0, bind(fd, (struct sockaddr *)&a, sizeof a));
    ck_assert_int_eq(0, getsockname(fd, (struct sockaddr *)&a, &len));
    close(fd);
    return ntohs(a.sin_port);
}

/* The relay fast and its gateway's answers short, so that timeouts and
 * backoffs pass in well under a second. */
static const char *const relay_env[] = { "TEST_STRIPE_SECRET=" SECRET,
                                         "TEST_STRIPE_KEY=" API_KEY,
                                         "PAYCALLBACK_REFUNDS_POLL_MS=50",
                                         "PAYCALLBACK_REFUNDS_BATCH=1",
                                         "PAYCALLBACK_REFUNDS_BACKOFF_BASE_MS=50",
                                         "PAYCALLBACK_REFUNDS_BACKOFF_MAX_MS=400",
                                         "PAYCALLBACK_REFUNDS_SWEEP_S=1",
                                         NULL };

/* The gateway up and the config pointing at it (no server). */
static void gateway_up(void)
{
    char cfg[1024];
    static const char *const args[] = { "--stripe-key", API_KEY, NULL };

    h_tool_start(&gw, "refund_gateway.py", args);
    down_port = unused_port();
    snprintf(cfg, sizeof cfg,
             "{\"gateways\": ["
             "{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\": "
             "\"TEST_STRIPE_SECRET\", \"refund\": \"auto\", \"refund_url\": "
             "\"http://127.0.0.1:%d\", \"refund_key_env\": \"TEST_STRIPE_KEY\", "
             "\"refund_timeout_ms\": 500},"
             "{\"name\": \"stripe2\", \"kind\": \"stripe\", \"secret_env\": "
             "\"TEST_STRIPE_SECRET\", \"refund_url\": \"http://127.0.0.1:%d\", "
             "\"refund_key_env\": \"TEST_STRIPE_KEY\", \"refund_timeout_ms\": 500},"
             "{\"name\": \"stripe3\", \"kind\": \"stripe\", \"secret_env\": "
             "\"TEST_STRIPE_SECRET\", \"refund_url\": \"http://127.0.0.1:%d\", "
             "\"refund_key_env\": \"TEST_STRIPE_KEY\", \"refund_timeout_ms\": 500}]}",
             gw.port, gw.port, down_port);
    h_temp_file(config_path, cfg);
}

static void gateway_down(void)
{
    assert_ledger();
    h_tool_stop(&gw);
    unlink(config_path);
}

static void relay_up(void)
{
    gateway_up();
    h_fixture_server_up_config(config_path, relay_env);
}

static void relay_down(void)
{
    assert_ledger();
    h_fixture_server_down();
    gateway_down();
}

/* What the gateway does with pay_no's refunds. */
static void plant(const char *pay_no, const char *mode)
{
    char body[160];
    struct h_resp r = { 0 };

    snprintf(body, sizeof body, "{\"pay_no\":\"%s\",\"mode\":\"%s\"}", pay_no, mode);
    h_http(gw.port, "POST", "/_plant", NULL, body, strlen(body), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* Refunds the gateway made for pay_no (its own record). */
static int gateway_refunds(const char *pay_no)
{
    return h_tool_log_lines(&gw, "\"made\"", pay_no);
}

/* The state of the one refund of pay_no. */
static long long refund_state(const char *pay_no)
{
    return h_db_scalar_ll("SELECT state FROM refund WHERE pay_no = '%s'", pay_no);
}

static void await_state(const char *pay_no, int state)
{
    h_await(refund_state(pay_no) == state, RELAY_WAIT_MS, "refund of %s never reached state %d",
            pay_no, state);
}

/* Posts a signed payment_intent.succeeded of pi for order_no to gateway:
 * minor units of currency (lower-case, as Stripe writes it). */
static void stripe_paid_in(const char *gateway, const char *pi, const char *order_no,
                           const char *minor, const char *currency, struct h_resp *r)
{
    char body[1024], hdr[160], t[24], mac[65], route[64];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(body, sizeof body,
             "{\"id\":\"evt_%s\",\"object\":\"event\",\"type\":\"payment_intent.succeeded\","
             "\"data\":{\"object\":{\"id\":\"%s\",\"object\":\"payment_intent\",\"amount\":"
             "%s,\"amount_received\":%s,\"currency\":\"%s\",\"status\":\"succeeded\","
             "\"metadata\":{\"order_no\":\"%s\"}}}}",
             pi, pi, minor, minor, currency, order_no);
    snprintf(t, sizeof t, "%lld", (long long)time(NULL));
    testkey_hmac_hex(SECRET, t, body, mac);
    snprintf(hdr, sizeof hdr, "Stripe-Signature: t=%s,v1=%s", t, mac);
    snprintf(route, sizeof route, "/pay/callback/%s", gateway);
    h_http(h_port(), "POST", route, headers, body, strlen(body), r);
}

/* Posts a signed payment_intent.succeeded of pi for order_no to gateway. */
static void stripe_paid(const char *gateway, const char *pi, const char *order_no, struct h_resp *r)
{
    stripe_paid_in(gateway, pi, order_no, PRICE_MINOR, "cny", r);
}

/* A PAID order paid by pay_no through gateway (NULL: the native callback). */
static void paid_payment(const char *order_no, const char *pay_no, const char *gateway)
{
    h_db_insert_order(order_no, "u1", PRICE, 2);
    if (gateway != NULL)
        h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome, gateway) "
                  "VALUES ('%s', '%s', %s, 1, 1, '%s')",
                  pay_no, order_no, PRICE, gateway);
    else
        h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
                  "VALUES ('%s', '%s', %s, 1, 1)",
                  pay_no, order_no, PRICE);
}

/* POST /ops/payments/{pay_no}/refunds with Idempotency-Key key (none when
 * NULL) and body. No assertions: storm threads call it. */
static int ask_refund(const char *pay_no, const char *key, const char *body, struct h_resp *r)
{
    char path[128], hdr[300];
    const char *headers[] = { "Content-Type: application/json", key ? hdr : NULL, NULL };

    snprintf(path, sizeof path, "/ops/payments/%s/refunds", pay_no);
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key ? key : "");
    return h_http(h_port(), "POST", path, headers, body, strlen(body), r);
}

static long long refunded_cents(const char *pay_no)
{
    return h_db_scalar_ll("SELECT COALESCE(SUM(amount * 100), 0) FROM refund "
                          "WHERE pay_no = '%s' AND state <> 4",
                          pay_no);
}

/* The outbox event of refund_no says which order, payment, refund, amount
 * and currency: 1 when it does. */
static long long event_complete(const char *type, const char *refund_no, const char *order_no,
                                const char *pay_no, const char *amount)
{
    return h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = '%s' AND subject = '%s' "
                          "AND order_no = '%s' AND payload LIKE '%%\"order_no\":\"%s\"%%' AND "
                          "payload LIKE '%%\"pay_no\":\"%s\"%%' AND payload LIKE "
                          "'%%\"refund_no\":\"%s\"%%' AND payload LIKE '%%\"amount\":\"%s\"%%' "
                          "AND payload LIKE '%%\"currency\":\"CNY\"%%'",
                          type, refund_no, order_no, order_no, pay_no, refund_no, amount);
}

START_TEST(partial_refunds_go_up_to_the_payment_and_not_a_cent_past)
{
    struct h_resp r = { 0 };
    char *first;

    paid_payment("OR1", "pi_r1", "stripe");
    ask_refund("pi_r1", "k1", "{\"amount\":\"500.00\",\"reason\":\"damaged\"}", &r);
    h_assert_status(&r, 201);
    h_assert_str(&r, "state", "REQUESTED");
    h_assert_str(&r, "amount", "500.00");
    h_assert_str(&r, "origin", "OPERATOR");
    h_assert_str(&r, "gateway", "stripe");
    first = h_json_get_str(r.body, "refund_no");
    ck_assert_ptr_nonnull(first);
    ck_assert_int_eq('R', first[0]);
    h_resp_free(&r);

    ask_refund("pi_r1", "k1", "{\"amount\":\"500.00\",\"reason\":\"damaged\"}", &r); /* again */
    h_assert_status(&r, 201);
    h_assert_str(&r, "refund_no", first);
    h_resp_free(&r);
    ask_refund("pi_r1", "k1", "{\"amount\":\"1.00\"}", &r); /* the key, another request */
    h_assert_error(&r, 422, "IDEMPOTENCY_KEY_MISMATCH");
    h_resp_free(&r);

    ask_refund("pi_r1", "k2", "{\"amount\":\"399.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    ask_refund("pi_r1", "k3", "{\"amount\":\"0.01\"}", &r);
    h_assert_error(&r, 422, "REFUND_EXCEEDS_PAYMENT");
    h_resp_free(&r);
    ask_refund("pi_r1", "k4", "{}", &r); /* the rest: nothing is left */
    h_assert_error(&r, 422, "REFUND_EXCEEDS_PAYMENT");
    h_resp_free(&r);

    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_r1'"));
    ck_assert_int_eq(89900, refunded_cents("pi_r1"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.request' AND actor = 'dev'"));
    free(first);
}
END_TEST

START_TEST(the_rest_of_a_payment_is_refunded_when_no_amount_is_given)
{
    struct h_resp r = { 0 };

    paid_payment("OR2", "pi_r2", "stripe");
    ask_refund("pi_r2", "a1", "{\"amount\":\"99.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    ask_refund("pi_r2", "a2", "{}", &r);
    h_assert_status(&r, 201);
    h_assert_str(&r, "amount", "800.00");
    h_resp_free(&r);
    ck_assert_int_eq(89900, refunded_cents("pi_r2"));
}
END_TEST

START_TEST(refusals_write_nothing)
{
    struct h_resp r = { 0 };

    paid_payment("OR3", "pi_r3", "stripe");
    paid_payment("OR4", "NATIVE-4", NULL);
    ask_refund("pi_r3", NULL, "{\"amount\":\"1.00\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ask_refund("pi_r3", "b1", "{\"amount\":\"-1.00\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ask_refund("pi_r3", "b2", "{\"amount\":\"1.001\"}", &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    ask_refund("pi_r3", "b3", "{\"amount\":\"899.01\"}", &r);
    h_assert_error(&r, 422, "REFUND_EXCEEDS_PAYMENT");
    h_resp_free(&r);
    ask_refund("NATIVE-4", "b4", "{\"amount\":\"1.00\"}", &r);
    h_assert_error(&r, 409, "REFUND_MANUAL");
    h_resp_free(&r);
    ask_refund("NOPE", "b5", "{\"amount\":\"1.00\"}", &r);
    h_assert_error(&r, 404, "PAYMENT_NOT_FOUND");
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log"));
}
END_TEST

struct storm {
    const char *pay_no, *body;
    int status[STORM_CLIENTS];
};

/* One operator's refund request; an answer to retry (503, or 409 while
 * the first attempt of the key runs) is retried with the same key, as a
 * client would. */
static int storm_call(int i, void *p)
{
    struct storm *s = p;
    char key[32];

    snprintf(key, sizeof key, "storm-%d", i);
    for (int attempt = 1; attempt <= 20; attempt++) {
        struct h_resp r = { 0 };

        ask_refund(s->pay_no, key, s->body, &r);
        s->status[i] = r.status;
        h_resp_free(&r);
        if (s->status[i] != 503 && s->status[i] != 409 && s->status[i] != 0)
            break;
        h_client_backoff(attempt, i);
    }
    return 0;
}

START_TEST(fifty_concurrent_refunds_never_exceed_the_payment)
{
    struct h_storm_stats st;
    struct storm s;
    int created = 0, refused = 0;

    memset(&s, 0, sizeof s);
    s.pay_no = "pi_storm";
    s.body = "{\"amount\":\"" STORM_AMOUNT "\"}";
    paid_payment("OR5", "pi_storm", "stripe");
    ck_assert_int_eq(0, h_storm(STORM_CLIENTS, STORM_CLIENTS, storm_call, &s, &st));
    for (int i = 0; i < STORM_CLIENTS; i++) {
        created += s.status[i] == 201;
        refused += s.status[i] == 422;
    }
    printf("refund storm: %d requests, %d made, %d refused, %.0f req/s, p99 %lld us\n",
           STORM_CLIENTS, created, refused, st.rps, st.p99_us);
    ck_assert_int_eq(STORM_FIT, created);
    ck_assert_int_eq(STORM_CLIENTS - STORM_FIT, refused);
    ck_assert_int_eq(STORM_FIT, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_le(refunded_cents("pi_storm"), 89900);
    ck_assert_int_eq(STORM_FIT * 2000, refunded_cents("pi_storm"));
    ck_assert_int_eq(STORM_FIT, h_db_scalar_ll("SELECT COUNT(DISTINCT refund_no) FROM refund"));
}
END_TEST

START_TEST(a_double_payment_is_refunded_by_itself_under_refund_auto)
{
    struct h_resp r = { 0 };

    h_db_insert_order("OR6", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_first", "OR6", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    stripe_paid("stripe", "pi_second", "OR6", &r); /* the customer paid twice */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    stripe_paid("stripe", "pi_second", "OR6", &r); /* and Stripe resent it */
    h_assert_status(&r, 200);
    h_resp_free(&r);

    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_second' "
                                       "AND origin = 2 AND state = 1 AND amount = 899.00 "
                                       "AND gateway = 'stripe' AND currency = 'CNY'"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record "
                                       "WHERE gateway = 'stripe'"));
}
END_TEST

START_TEST(a_double_payment_waits_for_one_approval)
{
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    h_db_insert_order("OR7", "u1", PRICE, 1);
    stripe_paid("stripe2", "pi_a", "OR7", &r);
    h_resp_free(&r);
    stripe_paid("stripe2", "pi_b", "OR7", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_b' AND state = 0");
    ck_assert_ptr_nonnull(refund_no);

    h_http(h_port(), "GET", "/ops/refund-requests?state=AWAITING_APPROVAL", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, refund_no));
    h_resp_free(&r);

    snprintf(path, sizeof path, "/ops/refund-requests/%s/approve", refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "state", "REQUESTED");
    h_assert_str(&r, "approved_by", "dev");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    h_http(h_port(), "POST", path, NULL, "", 0, &r); /* again */
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.approve' AND subject = '%s'",
                                       refund_no));
    h_http(h_port(), "POST", "/ops/refund-requests/RNOPE/approve", NULL, "", 0, &r);
    h_assert_error(&r, 404, "REFUND_NOT_FOUND");
    h_resp_free(&r);
    free(refund_no);
}
END_TEST

START_TEST(a_waiting_refund_is_made_due_by_a_retry_and_a_final_one_is_not)
{
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    paid_payment("OR9", "pi_rt", "stripe");
    ask_refund("pi_rt", "rt1", "{\"amount\":\"1.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    snprintf(path, sizeof path, "/ops/refund-requests/%s/retry", refund_no);
    /* REQUESTED, waiting (a relay's backoff): due now */
    h_db_exec("UPDATE refund SET state = 1, next_attempt_at = NOW(3) + INTERVAL 1 DAY "
              "WHERE refund_no = '%s'",
              refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "state", "REQUESTED");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE refund_no = '%s' AND "
                                       "next_attempt_at <= NOW(3)",
                                       refund_no));
    h_db_exec("UPDATE refund SET state = 5, next_attempt_at = NOW(3) + INTERVAL 1 DAY "
              "WHERE refund_no = '%s'",
              refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "state", "UNKNOWN");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE refund_no = '%s' AND "
                                       "next_attempt_at <= NOW(3)",
                                       refund_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.retry' AND actor = 'dev' AND subject = '%s' AND "
                                       "detail LIKE '%%UNKNOWN%%'",
                                       refund_no));
    h_db_exec("UPDATE refund SET state = 4 WHERE refund_no = '%s'", refund_no); /* final */
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    ck_assert_int_eq(409, r.status);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.retry'"));
    free(refund_no);
}
END_TEST

START_TEST(refunds_are_listed_by_filter_a_page_at_a_time)
{
    struct h_resp r = { 0 };
    char *next, path[160];

    paid_payment("OR8", "pi_l", "stripe");
    for (int i = 0; i < 3; i++) {
        char key[16];

        snprintf(key, sizeof key, "l%d", i);
        ask_refund("pi_l", key, "{\"amount\":\"1.00\"}", &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
    h_http(h_port(), "GET", "/ops/refund-requests?state=REQUESTED&gateway=stripe&limit=2", NULL,
           NULL, 0, &r);
    h_assert_status(&r, 200);
    next = h_json_get_str(r.body, "next_after");
    ck_assert_ptr_nonnull(next);
    h_resp_free(&r);
    snprintf(path, sizeof path, "/ops/refund-requests?state=REQUESTED&limit=2&after=%s", next);
    h_http(h_port(), "GET", path, NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"refunds\":[{"));
    ck_assert_ptr_null(strstr(r.body, "next_after"));
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/refund-requests?gateway=stripe2", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"refunds\":[]"));
    h_resp_free(&r);
    /* one payment's refunds */
    paid_payment("OR9", "pi_l9", "stripe");
    ask_refund("pi_l9", "l9", "{\"amount\":\"2.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/refund-requests?pay_no=pi_l9", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"pi_l9\""));
    ck_assert_ptr_null(strstr(r.body, "\"pay_no\":\"pi_l\""));
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/refund-requests?pay_no=pi_l&limit=100", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_null(strstr(r.body, "pi_l9"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"pay_no\":\"pi_l\""));
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/refund-requests?pay_no=a%20b", NULL, NULL, 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    h_http(h_port(), "GET", "/ops/refund-requests?state=NOPE", NULL, NULL, 0, &r);
    h_assert_error(&r, 400, "BAD_REQUEST");
    h_resp_free(&r);
    /* by age: none is an hour old, until one is */
    h_http(h_port(), "GET", "/ops/refund-requests?older_than_s=3600", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"refunds\":[]"));
    h_resp_free(&r);
    h_db_exec("UPDATE refund SET create_time = NOW(3) - INTERVAL 2 HOUR ORDER BY id LIMIT 1");
    h_http(h_port(), "GET", "/ops/refund-requests?older_than_s=3600", NULL, NULL, 0, &r);
    h_assert_status(&r, 200);
    {
        cJSON *o = cJSON_Parse(r.body);

        ck_assert_ptr_nonnull(o);
        ck_assert_int_eq(1, cJSON_GetArraySize(cJSON_GetObjectItem(o, "refunds")));
        cJSON_Delete(o);
    }
    h_resp_free(&r);
    free(next);
}
END_TEST

START_TEST(an_auto_refund_of_a_double_payment_succeeds_once_at_the_gateway)
{
    struct h_resp r = { 0 };
    char *refund_no;

    h_db_insert_order("OD1", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_d1", "OD1", &r);
    h_resp_free(&r);
    stripe_paid("stripe", "pi_d2", "OD1", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_d2", 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_d2'");
    ck_assert_int_eq(1, gateway_refunds("pi_d2"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"amount\": \"89900\"", refund_no));
    ck_assert_int_eq(0, gateway_refunds("pi_d1"));
    /* the queue of double payments is settled with the refund's number */
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'pi_d2' AND status = 3 AND settle_reference = '%s'",
                                       refund_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.succeeded' AND order_no = 'OD1' AND subject = "
                                       "'%s' AND payload LIKE '%%\"pay_no\":\"pi_d2\"%%' AND "
                                       "payload LIKE '%%\"amount\":\"899.00\"%%' AND payload "
                                       "LIKE '%%\"currency\":\"CNY\"%%'",
                                       refund_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_d2' AND "
                                       "gateway_refund_id LIKE 're_%%' AND finished_at IS NOT "
                                       "NULL"));
    free(refund_no);
}
END_TEST

START_TEST(an_approved_refund_of_a_double_payment_succeeds_after_one_approval)
{
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    h_db_insert_order("OD2", "u1", PRICE, 1);
    stripe_paid("stripe2", "pi_e1", "OD2", &r);
    h_resp_free(&r);
    stripe_paid("stripe2", "pi_e2", "OD2", &r);
    h_resp_free(&r);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_e2'");
    ck_assert_ptr_nonnull(refund_no);
    ck_assert_int_eq(0, refund_state("pi_e2"));
    ck_assert_int_eq(0, gateway_refunds("pi_e2")); /* nothing before the approval */
    snprintf(path, sizeof path, "/ops/refund-requests/%s/approve", refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_e2", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_e2"));
    free(refund_no);
}
END_TEST

/* 50 concurrent requests of 100.00 against 899.00 with the relay live:
 * 8 refunds, each made once at the gateway, and its own record sums to
 * what the refund table says. */
START_TEST(fifty_concurrent_refunds_end_as_one_refund_each_at_the_gateway)
{
    struct h_storm_stats st;
    struct storm s;
    int created = 0;

    memset(&s, 0, sizeof s);
    s.pay_no = "pi_sg";
    s.body = "{\"amount\":\"100.00\"}";
    paid_payment("OS1", "pi_sg", "stripe");
    ck_assert_int_eq(0, h_storm(STORM_CLIENTS, STORM_CLIENTS, storm_call, &s, &st));
    for (int i = 0; i < STORM_CLIENTS; i++)
        created += s.status[i] == 201;
    ck_assert_int_eq(8, created);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE state = 3") == 8, RELAY_WAIT_MS,
            "the storm's refunds never all succeeded");
    ck_assert_int_eq(8, gateway_refunds("pi_sg"));
    ck_assert_int_eq(
        8, h_tool_log_lines(&gw, "\"pay_no\": \"pi_sg\", \"amount\": \"10000\"", "\"made\""));
    ck_assert_int_eq(80000, refunded_cents("pi_sg"));
    ck_assert_int_eq(8, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.succeeded'"));
}
END_TEST

START_TEST(a_pending_refund_is_asked_about_until_it_succeeds)
{
    struct h_resp r = { 0 };

    paid_payment("OD3", "pi_p", "stripe");
    plant("pi_p", "pending");
    ask_refund("pi_p", "p1", "{\"amount\":\"100.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_p", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_p"));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"GET\"", "/v1/refunds/re_"), 1);
}
END_TEST

START_TEST(a_refusal_fails_the_refund_alerts_and_frees_its_amount)
{
    struct h_resp r = { 0 };
    const char *alert[] = { "alert=REFUND_FAILED", "pay_no=pi_x", "charge_already_refunded", NULL };
    char *line;

    paid_payment("OD4", "pi_x", "stripe");
    plant("pi_x", "refuse");
    ask_refund("pi_x", "x1", "{}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_x", 4);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_x' AND "
                                       "failure_code = 'charge_already_refunded'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.failed' AND order_no = 'OD4'"));
    line = h_log_find(alert, 5000);
    ck_assert_msg(line != NULL, "no REFUND_FAILED alert line");
    free(line);
    ck_assert_int_eq(0, refunded_cents("pi_x"));
    plant("pi_x", "succeed"); /* the merchant fixed it: a new refund, a new number */
    ask_refund("pi_x", "x2", "{}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_x' AND state = 3") == 1,
            RELAY_WAIT_MS, "the second refund never succeeded");
    ck_assert_int_eq(89900, refunded_cents("pi_x"));
}
END_TEST

/* The first submission answered 500 and nothing made: the gateway keeps
 * that 500 under the Idempotency-Key (as Stripe does) and answers it again
 * to the next attempt, so the relay lists the payment's refunds, finds none
 * of ours and submits the same refund number under the next key. */
START_TEST(a_5xx_leaves_the_refund_unknown_then_the_same_number_succeeds)
{
    struct h_resp r = { 0 };
    char *refund_no, key[80];

    paid_payment("OD5", "pi_5", "stripe");
    plant("pi_5", "500_then_succeed");
    ask_refund("pi_5", "f1", "{\"amount\":\"1.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_5", 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_5'");
    /* the 500, the same 500 again under the same key, then the next key */
    ck_assert_int_eq(3, h_tool_log_lines(&gw, "\"POST\"", refund_no));
    snprintf(key, sizeof key, "\"key\": \"%s\"", refund_no);
    ck_assert_int_eq(1, h_tool_log_lines(&gw, key, "\"status\": 500, \"replayed\": true"));
    snprintf(key, sizeof key, "\"key\": \"%s-1\"", refund_no);
    ck_assert_int_eq(1, h_tool_log_lines(&gw, key, "\"made\""));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"list\": \"pi_5\"", "\"found\": 0"), 1);
    ck_assert_int_eq(1, gateway_refunds("pi_5"));
    free(refund_no);
}
END_TEST

/* Stripe keeps a 500 under its Idempotency-Key once the endpoint started,
 * whether or not the refund was made before it failed. Made: the listing
 * of the payment's refunds finds ours by metadata.refund_no, SUCCEEDED
 * with no second submission. Not made, and the gateway failing on: every
 * submission under a spent key gets its kept 500 again; once the gateway
 * works, the next key makes the one refund. */
START_TEST(a_stripe_500_kept_under_the_key_recovers_with_one_refund)
{
    struct h_resp r = { 0 };
    char *made_no, *lost_no, key[80];

    paid_payment("OM5", "pi_m5", "stripe");
    plant("pi_m5", "made_then_500");
    ask_refund("pi_m5", "m5", "{\"amount\":\"6.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    paid_payment("ON5", "pi_n5", "stripe");
    plant("pi_n5", "500");
    ask_refund("pi_n5", "n5", "{\"amount\":\"7.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_m5", 3);
    made_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_m5'");
    ck_assert_int_eq(1, gateway_refunds("pi_m5"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"POST\"", made_no)); /* found, not resubmitted */
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"list\": \"pi_m5\"", "\"found\": 1"), 1);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_m5' AND "
                                       "gateway_refund_id LIKE 're_%%'"));
    /* pi_n5: a spent key answers its kept 500 again, nothing is made */
    lost_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_n5'");
    snprintf(key, sizeof key, "\"key\": \"%s\"", lost_no);
    h_await(h_tool_log_lines(&gw, key, "\"status\": 500, \"replayed\": true") >= 1, RELAY_WAIT_MS,
            "the first key of %s was never answered its kept 500", lost_no);
    ck_assert_msg(refund_state("pi_n5") == 5 || refund_state("pi_n5") == 2, "state %lld",
                  refund_state("pi_n5")); /* UNKNOWN, or SUBMITTED while asked again */
    ck_assert_int_eq(0, gateway_refunds("pi_n5"));
    plant("pi_n5", "succeed");
    await_state("pi_n5", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_n5"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, lost_no, "\"made\""));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, key, "\"made\"")); /* a later key made it */
    free(made_no);
    free(lost_no);
}
END_TEST

START_TEST(a_timeout_leaves_the_refund_unknown_and_the_query_finds_the_one_refund)
{
    struct h_resp r = { 0 };

    paid_payment("OD6", "pi_h", "stripe");
    plant("pi_h", "hang");
    ask_refund("pi_h", "h1", "{\"amount\":\"2.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_h", 3);
    {
        char *refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_h'");
        const char *parts[] = { "refund not decided yet", refund_no, "outcome=UNKNOWN", NULL };
        char *line = h_log_find(parts, 5000);

        ck_assert_msg(line != NULL, "the lost answer never made the refund UNKNOWN");
        free(line);
        free(refund_no);
    }
    ck_assert_int_eq(1, gateway_refunds("pi_h"));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"list\": \"pi_h\"", "\"found\": 1"), 1);
}
END_TEST

/* An order of amount in currency (upper-case), paid through the stripe
 * profile by pi in minor units: the callback converts them exactly. */
static void stripe_order_in(const char *order_no, const char *pi, const char *amount,
                            const char *currency, const char *minor)
{
    struct h_resp r = { 0 };
    char lower[4];

    for (int i = 0; i < 4; i++)
        lower[i] =
            currency[i] >= 'A' && currency[i] <= 'Z' ? (char)(currency[i] + 32) : currency[i];
    h_db_insert_order(order_no, "u1", amount, 1);
    h_db_exec("UPDATE orders SET currency = '%s' WHERE order_no = '%s'", currency, order_no);
    stripe_paid_in("stripe", pi, order_no, minor, lower, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s' "
                                       "AND amount = %s",
                                       pi, amount));
}

/* pay_no's refunds the gateway made of exactly minor units. */
static int made_of(const char *pay_no, const char *minor)
{
    char what[96];

    snprintf(what, sizeof what, "\"pay_no\": \"%s\", \"amount\": \"%s\"", pay_no, minor);
    return h_tool_log_lines(&gw, what, "\"made\"");
}

/* JPY has no minor unit below the yen and KWD has fils (1/1000): the
 * gateway receives 500 for 500 yen and 1250 for 1.25 dinars, through an
 * operator's refund and through the automatic refund of a double payment
 * (the whole payment: 1500 yen). */
START_TEST(jpy_and_kwd_refunds_reach_stripe_in_their_minor_units)
{
    struct h_resp r = { 0 };

    stripe_order_in("OJ1", "pi_jpy", "1500.00", "JPY", "1500");
    ask_refund("pi_jpy", "j1", "{\"amount\":\"500\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    stripe_order_in("OK2", "pi_kwd", "12.34", "KWD", "12340");
    ask_refund("pi_kwd", "k1", "{\"amount\":\"1.25\",\"currency\":\"kwd\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    stripe_order_in("OJ3", "pi_jd1", "1500.00", "JPY", "1500");
    stripe_paid_in("stripe", "pi_jd2", "OJ3", "1500", "jpy", &r); /* a double payment */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_jpy", 3);
    await_state("pi_kwd", 3);
    await_state("pi_jd2", 3);
    ck_assert_int_eq(1, made_of("pi_jpy", "500"));
    ck_assert_int_eq(1, made_of("pi_kwd", "1250"));
    ck_assert_int_eq(1, made_of("pi_jd2", "1500"));
    ck_assert_int_eq(1, gateway_refunds("pi_jpy"));
    ck_assert_int_eq(1, gateway_refunds("pi_kwd"));
    ck_assert_int_eq(1, gateway_refunds("pi_jd2"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_jd2' "
                                       "AND currency = 'JPY' AND amount = 1500.00"));
}
END_TEST

/* A refund is in its payment's currency: another one named is 422
 * REFUND_CURRENCY_MISMATCH, an amount with no exact value in the minor
 * unit (100.50 yen) 422 REFUND_AMOUNT_INEXACT; nothing written. */
START_TEST(a_refund_in_another_currency_or_below_its_minor_unit_is_refused)
{
    struct h_resp r = { 0 };

    stripe_order_in("OJ4", "pi_jx", "1500.00", "JPY", "1500");
    ask_refund("pi_jx", "x1", "{\"amount\":\"100\",\"currency\":\"USD\"}", &r);
    h_assert_status(&r, 422);
    ck_assert_ptr_nonnull(strstr(r.body, "REFUND_CURRENCY_MISMATCH"));
    ck_assert_ptr_nonnull(strstr(r.body, "JPY"));
    h_resp_free(&r);
    ask_refund("pi_jx", "x2", "{\"amount\":\"100.50\"}", &r);
    h_assert_status(&r, 422);
    ck_assert_ptr_nonnull(strstr(r.body, "REFUND_AMOUNT_INEXACT"));
    h_resp_free(&r);
    ask_refund("pi_jx", "x3", "{\"amount\":\"100\",\"currency\":\"XYZ\"}", &r);
    h_assert_status(&r, 400);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.request'"));
    ask_refund("pi_jx", "x4", "{\"amount\":\"100\",\"currency\":\"jpy\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_jx", 3);
    ck_assert_int_eq(1, made_of("pi_jx", "100"));
}
END_TEST

/* The metrics by gateway and state, and the age of the oldest double
 * payment not refunded: an approval-waiting double payment two hours old
 * shows its age (a canceled order's older payment does not count), then 0
 * once its refund succeeded. */
START_TEST(refund_metrics_count_by_gateway_and_state_and_age_the_oldest_double_payment)
{
    const char *ok = "paycallback_refunds_total{gateway=\"stripe2\",state=\"SUCCEEDED\"}";
    const char *sub = "paycallback_refunds_total{gateway=\"stripe2\",state=\"SUBMITTED\"}";
    const char *age = "paycallback_refund_oldest_unrefunded_seconds";
    long long ok0 = h_metric(ok), sub0 = h_metric(sub);
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    ck_assert_int_ge(ok0, 0);
    ck_assert_int_eq(3600, h_metric("paycallback_refund_unrefunded_alert_age_seconds"));
    h_db_insert_order("OM1", "u1", PRICE, 1);
    stripe_paid("stripe2", "pi_m1", "OM1", &r);
    h_resp_free(&r);
    stripe_paid("stripe2", "pi_m2", "OM1", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    paid_payment("OM2", "pi_m3", "stripe2"); /* paid three hours ago, its order canceled now */
    h_db_exec("UPDATE payment_record SET status = 2, create_time = NOW(3) - INTERVAL 3 HOUR "
              "WHERE pay_no = 'pi_m3'");
    h_db_exec("UPDATE payment_record SET create_time = NOW(3) - INTERVAL 2 HOUR "
              "WHERE pay_no = 'pi_m2'");
    h_await(h_metric(age) >= 7200, RELAY_WAIT_MS, "the oldest double payment's age never shown");
    ck_assert_int_lt(h_metric(age), 7200 + 60); /* the double payment's, not the cancel's */

    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_m2'");
    ck_assert_ptr_nonnull(refund_no);
    snprintf(path, sizeof path, "/ops/refund-requests/%s/approve", refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_m2", 3);
    h_await(h_metric(age) == 0, RELAY_WAIT_MS, "the refunded double payment still ages");
    ck_assert_int_eq(ok0 + 1, h_metric(ok));
    ck_assert_int_ge(h_metric(sub), sub0 + 1);
    free(refund_no);
}
END_TEST

/* pay_no's refunds answered pending, then notified as succeeded to the
 * service's route of gateway. */
static void plant_notify(const char *pay_no, const char *gateway)
{
    char body[256];
    struct h_resp r = { 0 };

    snprintf(body, sizeof body,
             "{\"pay_no\":\"%s\",\"mode\":\"notify_later\",\"notify\":"
             "\"http://127.0.0.1:%d/pay/callback/%s\"}",
             pay_no, h_port(), gateway);
    h_http(gw.port, "POST", "/_plant", NULL, body, strlen(body), &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
}

/* A refund of pay_no asked for, answered pending and ended by the
 * gateway's own later notification, acknowledged with ack. */
static void refund_ended_by_notification(const char *order_no, const char *pay_no,
                                         const char *gateway, const char *ack)
{
    struct h_resp r = { 0 };
    char *refund_no, notified[96];

    paid_payment(order_no, pay_no, gateway);
    plant_notify(pay_no, gateway);
    ask_refund(pay_no, pay_no, "{\"amount\":\"5.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    await_state(pay_no, 3);
    snprintf(notified, sizeof notified, "\"notified\": \"%s\"", refund_no);
    /* the gateway logs the service's answer once it has it */
    h_await(h_tool_log_lines(&gw, notified, NULL) == 1, RELAY_WAIT_MS, "never notified");
    ck_assert_int_eq(1, h_tool_log_lines(&gw, notified, ack));
    {
        const char *parts[] = { "refund notification applied", refund_no, "changed=1", NULL };
        char *line = h_log_find(parts, 5000);

        ck_assert_msg(line != NULL, "the notification did not end the refund");
        free(line);
    }
    ck_assert_int_eq(1, gateway_refunds(pay_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, order_no, pay_no, "5.00"));
    free(refund_no);
}

START_TEST(a_stripe_refund_is_ended_by_the_gateways_later_notification)
{
    refund_ended_by_notification("OL1", "pi_nl", "stripe", "\"status\": 200");
}
END_TEST

/* Posts a Stripe event of type about a refund object (JSON), signed with
 * secret. */
static void stripe_refund_event(const char *type, const char *object, const char *secret,
                                struct h_resp *r)
{
    char body[2048], hdr[160], t[24], mac[65];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(body, sizeof body,
             "{\"id\":\"evt_r\",\"object\":\"event\",\"type\":\"%s\",\"data\":{\"object\":%s}}",
             type, object);
    snprintf(t, sizeof t, "%lld", (long long)time(NULL));
    testkey_hmac_hex(secret, t, body, mac);
    snprintf(hdr, sizeof hdr, "Stripe-Signature: t=%s,v1=%s", t, mac);
    h_http(h_port(), "POST", "/pay/callback/stripe", headers, body, strlen(body), r);
}

/* A refund of pay_no left pending at the gateway: SUBMITTED, with the
 * gateway's id; its refund_no and that id are returned (malloc'd). */
static void pending_refund(const char *order_no, const char *pay_no, char **refund_no, char **gid)
{
    struct h_resp r = { 0 };

    paid_payment(order_no, pay_no, "stripe");
    plant(pay_no, "stay_pending");
    ask_refund(pay_no, pay_no, "{}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = '%s' AND state = 2 AND "
                           "gateway_refund_id IS NOT NULL",
                           pay_no) == 1,
            RELAY_WAIT_MS, "the refund of %s never went pending", pay_no);
    *refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '%s'", pay_no);
    *gid = h_db_scalar_str("SELECT gateway_refund_id FROM refund WHERE pay_no = '%s'", pay_no);
}

START_TEST(stripe_refund_notifications_move_the_refund_once)
{
    struct h_resp r = { 0 };
    char *refund_no, *gid, obj[512];

    pending_refund("ON1", "pi_n1", &refund_no, &gid);
    snprintf(obj, sizeof obj,
             "{\"id\":\"%s\",\"object\":\"refund\",\"status\":\"succeeded\",\"payment_intent\":"
             "\"pi_n1\",\"metadata\":{\"refund_no\":\"%s\"}}",
             gid, refund_no);
    stripe_refund_event("refund.updated", obj, "whsec_forged", &r); /* not Stripe's */
    h_assert_status(&r, 401);
    h_resp_free(&r);
    ck_assert_int_eq(2, refund_state("pi_n1"));
    stripe_refund_event("refund.updated", obj, SECRET, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(3, refund_state("pi_n1"));
    stripe_refund_event("refund.updated", obj, SECRET, &r); /* replayed */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE subject = '%s'", refund_no));
    ck_assert_int_eq(1, gateway_refunds("pi_n1"));
    free(refund_no);
    free(gid);
}
END_TEST

/* A verified notification that names a refund of ours with another
 * payment or another amount is never applied: audited, alerted,
 * acknowledged; the true one moves the refund. */
START_TEST(a_refund_notification_for_another_payment_or_amount_is_not_applied)
{
    const char *alert[] = { "alert=REFUND_NOTICE_MISMATCH", "notice_pay_no=pi_someone_else", NULL };
    struct h_resp r = { 0 };
    char *refund_no, *gid, obj[512], *line;

    pending_refund("OM9", "pi_mm", &refund_no, &gid);
    snprintf(obj, sizeof obj,
             "{\"id\":\"%s\",\"object\":\"refund\",\"status\":\"succeeded\",\"payment_intent\":"
             "\"pi_someone_else\",\"amount\":" PRICE_MINOR ",\"currency\":\"cny\","
             "\"metadata\":{\"refund_no\":\"%s\"}}",
             gid, refund_no);
    stripe_refund_event("refund.updated", obj, SECRET, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(2, refund_state("pi_mm"));
    line = h_log_find(alert, RELAY_WAIT_MS);
    ck_assert_msg(line != NULL, "no REFUND_NOTICE_MISMATCH alert");
    free(line);
    snprintf(obj, sizeof obj, /* its payment, a cent more than the refund */
             "{\"id\":\"%s\",\"object\":\"refund\",\"status\":\"succeeded\",\"payment_intent\":"
             "\"pi_mm\",\"amount\":89901,\"currency\":\"cny\",\"metadata\":{\"refund_no\":\"%s\"}}",
             gid, refund_no);
    stripe_refund_event("refund.updated", obj, SECRET, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(2, refund_state("pi_mm"));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.mismatch' AND subject = '%s'",
                                       refund_no));
    ck_assert_int_eq(0,
                     h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE subject = '%s'", refund_no));
    snprintf(obj, sizeof obj,
             "{\"id\":\"%s\",\"object\":\"refund\",\"status\":\"succeeded\",\"payment_intent\":"
             "\"pi_mm\",\"amount\":" PRICE_MINOR ",\"currency\":\"cny\",\"metadata\":"
             "{\"refund_no\":\"%s\"}}",
             gid, refund_no);
    stripe_refund_event("refund.updated", obj, SECRET, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(3, refund_state("pi_mm"));
    free(refund_no);
    free(gid);
}
END_TEST

START_TEST(a_charge_refunded_notification_succeeds_the_newest_refund_once)
{
    struct h_resp r = { 0 };
    char *refund_no, *gid, obj[1024];

    pending_refund("ON3", "pi_n3", &refund_no, &gid);
    snprintf(obj, sizeof obj,
             "{\"id\":\"ch_n3\",\"object\":\"charge\",\"payment_intent\":\"pi_n3\","
             "\"amount_refunded\":" PRICE_MINOR ",\"refunded\":true,\"refunds\":{\"object\":"
             "\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"refund\",\"status\":"
             "\"succeeded\",\"metadata\":{\"refund_no\":\"%s\"}}]}}",
             gid, refund_no);
    stripe_refund_event("charge.refunded", obj, "whsec_forged", &r); /* not Stripe's */
    h_assert_status(&r, 401);
    h_resp_free(&r);
    ck_assert_int_eq(2, refund_state("pi_n3"));
    for (int i = 0; i < 2; i++) { /* the event, then Stripe's resend */
        stripe_refund_event("charge.refunded", obj, SECRET, &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
        ck_assert_int_eq(3, refund_state("pi_n3"));
    }
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, "ON3", "pi_n3", PRICE));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox"));
    ck_assert_int_eq(1, gateway_refunds("pi_n3"));
    free(refund_no);
    free(gid);
}
END_TEST

START_TEST(a_stripe_refund_failed_notification_fails_the_refund)
{
    struct h_resp r = { 0 };
    char *refund_no, *gid, obj[512];

    long long failed0 = h_metric("paycallback_refunds_total{gateway=\"stripe\",state=\"FAILED\"}");

    pending_refund("ON2", "pi_n2", &refund_no, &gid);
    snprintf(obj, sizeof obj,
             "{\"id\":\"%s\",\"object\":\"refund\",\"status\":\"failed\",\"failure_reason\":"
             "\"expired_or_canceled_card\",\"metadata\":{\"refund_no\":\"%s\"}}",
             gid, refund_no);
    for (int i = 0; i < 2; i++) { /* the event, then Stripe's resend */
        stripe_refund_event("refund.failed", obj, SECRET, &r);
        h_assert_status(&r, 200);
        h_resp_free(&r);
        ck_assert_int_eq(4, refund_state("pi_n2"));
    }
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE failure_code = "
                                       "'expired_or_canceled_card'"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.failed' AND subject = '%s'",
                                       refund_no));
    ck_assert_int_eq(failed0 + 1,
                     h_metric("paycallback_refunds_total{gateway=\"stripe\",state=\"FAILED\"}"));
    free(refund_no);
    free(gid);
}
END_TEST

START_TEST(a_refund_we_did_not_ask_for_is_recorded_and_alerted)
{
    struct h_resp r = { 0 };
    const char *alert[] = { "alert=REFUND_UNSOLICITED", "re_console_1", NULL };
    const char *unsolicited =
        "paycallback_refund_notifications_unsolicited_total{gateway=\"stripe\"}";
    long long before = h_metric(unsolicited);
    char *line;

    stripe_refund_event("refund.updated",
                        "{\"id\":\"re_console_1\",\"object\":\"refund\",\"status\":\"succeeded\","
                        "\"metadata\":{}}",
                        SECRET, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.unsolicited' AND subject = 're_console_1'"));
    line = h_log_find(alert, 5000);
    ck_assert_msg(line != NULL, "no REFUND_UNSOLICITED alert");
    free(line);
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_eq(before + 1, h_metric(unsolicited));
}
END_TEST

/* The gateway answering 500 to everything for a while: the refunds wait,
 * UNKNOWN, and drain once it is back, one refund each at the gateway. */
START_TEST(a_backlog_of_refunds_drains_when_the_gateway_is_back)
{
    struct h_resp r = { 0 };
    char order_no[16], pay_no[16];

    for (int i = 0; i < 10; i++) {
        snprintf(order_no, sizeof order_no, "OB%d", i);
        snprintf(pay_no, sizeof pay_no, "pi_b%d", i);
        paid_payment(order_no, pay_no, "stripe");
        plant(pay_no, "500");
        ask_refund(pay_no, pay_no, "{\"amount\":\"5.00\"}", &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
    /* UNKNOWN, or SUBMITTED while a sender asks again: never decided */
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE attempts >= 2 AND state IN (2, 5)") ==
                10,
            RELAY_WAIT_MS, "the refunds were not retried while the gateway failed");
    for (int i = 0; i < 10; i++) {
        snprintf(pay_no, sizeof pay_no, "pi_b%d", i);
        plant(pay_no, "succeed");
    }
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE state = 3") == 10, RELAY_WAIT_MS,
            "the backlog never drained");
    for (int i = 0; i < 10; i++) {
        snprintf(pay_no, sizeof pay_no, "pi_b%d", i);
        ck_assert_int_eq(1, gateway_refunds(pay_no));
    }
    ck_assert_int_eq(10, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                        "'refund.succeeded'"));
}
END_TEST

/* The gateway down (nothing listens: every call is refused) while refunds
 * are asked for: they wait UNKNOWN and are tried again; once it is up they
 * drain, one refund each at the gateway, nothing lost. */
START_TEST(refunds_wait_while_the_gateway_is_down_and_drain_when_it_is_up)
{
    const char *args[] = { "--stripe-key", API_KEY, "--port", NULL, NULL };
    struct h_tool up = { 0 };
    struct h_resp r = { 0 };
    char order_no[16], pay_no[16], port[16];

    for (int i = 0; i < 5; i++) {
        snprintf(order_no, sizeof order_no, "OU%d", i);
        snprintf(pay_no, sizeof pay_no, "pi_u%d", i);
        paid_payment(order_no, pay_no, "stripe3");
        ask_refund(pay_no, pay_no, "{\"amount\":\"7.00\"}", &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE attempts >= 2 AND state IN (2, 5)") ==
                5,
            RELAY_WAIT_MS, "the refunds were not tried again while the gateway was down");
    snprintf(port, sizeof port, "%d", down_port);
    args[3] = port;
    h_tool_start(&up, "refund_gateway.py", args);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE state = 3") == 5, RELAY_WAIT_MS,
            "the refunds never drained once the gateway was up");
    for (int i = 0; i < 5; i++) {
        snprintf(pay_no, sizeof pay_no, "pi_u%d", i);
        ck_assert_int_eq(1, h_tool_log_lines(&up, "\"made\"", pay_no));
    }
    ck_assert_int_eq(5, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.succeeded'"));
    ck_assert_int_eq(5, h_db_scalar_ll("SELECT COUNT(DISTINCT refund_no) FROM refund"));
    h_tool_stop(&up);
}
END_TEST

START_TEST(cancelling_a_paid_order_refunds_its_payment)
{
    struct h_resp r = { 0 };

    h_db_insert_order("OC1", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_c1", "OC1", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http(h_port(), "POST", "/order/OC1/cancel", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_c1", 3);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_c1' AND "
                                       "origin = 3 AND amount = 899.00"));
    ck_assert_int_eq(1, gateway_refunds("pi_c1"));
    ck_assert_int_eq(9, h_order_status("OC1"));
}
END_TEST

/* kill -9 between the submission and its answer: the refund is made at
 * the gateway, the service never hears of it; after a restart the same
 * number is asked about and the one refund found. */
START_TEST(a_kill_between_submission_and_answer_leaves_one_refund)
{
    struct h_server *s;
    struct h_resp r = { 0 };
    char *refund_no;

    s = h_server_start_config(config_path, relay_env);
    ck_assert_ptr_nonnull(s);
    paid_payment("OD7", "pi_k", "stripe");
    plant("pi_k", "hang");
    {
        char path[64], hdr[64];
        const char *headers[] = { "Content-Type: application/json", hdr, NULL };

        snprintf(path, sizeof path, "/ops/payments/pi_k/refunds");
        snprintf(hdr, sizeof hdr, "Idempotency-Key: k1");
        h_http(h_server_port(s), "POST", path, headers, "{}", 2, &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
    h_await(gateway_refunds("pi_k") == 1, RELAY_WAIT_MS, "the gateway never saw the refund");
    ck_assert_int_eq(0, h_server_signal(s, SIGKILL));
    h_server_wait(s, 10000);
    /* SUBMITTED, its answer lost with the process (UNKNOWN if the call
     * timed out just before the kill) */
    ck_assert_msg(refund_state("pi_k") == 2 || refund_state("pi_k") == 5, "state %lld",
                  refund_state("pi_k"));
    plant("pi_k", "succeed");
    s = h_server_start_config(config_path, relay_env);
    ck_assert_ptr_nonnull(s);
    await_state("pi_k", 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_k'");
    ck_assert_int_eq(1, gateway_refunds("pi_k"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"list\": \"pi_k\"", "\"found\": 1"), 1);
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"POST\"", refund_no));
    ck_assert_int_eq(0, h_server_stop(s));
    free(refund_no);
}
END_TEST

/* ---- lanes: refunds in flight per gateway profile ------------------------ */

/* POST /ops/payments/{pay_no}/refunds to the server on port, 201 asserted. */
static void refund_at(int port, const char *pay_no, const char *key, const char *body)
{
    char path[128], hdr[160];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };
    struct h_resp r = { 0 };

    snprintf(path, sizeof path, "/ops/payments/%s/refunds", pay_no);
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    h_http(port, "POST", path, headers, body, strlen(body), &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
}

/* Four refunds of each of two payments, each answered 0.4 s late, sent by
 * two instances of the service on one database (each with 4 senders per
 * profile): no two of one payment are at the gateway together (each
 * request says whether another of its payment was in progress when it
 * arrived), while the two payments' refunds are. */
START_TEST(two_refunds_of_one_payment_are_never_in_flight_together)
{
    struct h_server *other = h_server_start_config(config_path, relay_env);
    char key[16];

    ck_assert_ptr_nonnull(other);
    paid_payment("OW1", "pi_w1", "stripe");
    paid_payment("OW2", "pi_w2", "stripe");
    plant("pi_w1", "slow");
    plant("pi_w2", "slow");
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "w1-%d", i);
        refund_at(h_port(), "pi_w1", key, "{\"amount\":\"10.00\"}");
        snprintf(key, sizeof key, "w2-%d", i);
        refund_at(h_server_port(other), "pi_w2", key, "{\"amount\":\"10.00\"}");
    }
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE state = 3") == 8, RELAY_WAIT_MS,
            "the eight refunds never all succeeded");
    ck_assert_int_eq(4, gateway_refunds("pi_w1"));
    ck_assert_int_eq(4, gateway_refunds("pi_w2"));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, "\"overlap\": true", "\"POST\""));
    /* and more than one was in flight at once */
    ck_assert_int_lt(h_tool_log_lines(&gw, "\"concurrent\": 1,", "\"made\""), 8);
    ck_assert_int_eq(0, h_server_stop(other));
}
END_TEST

/* A profile whose gateway hangs (30 s before a call gives up) and one that
 * answers, both through the test gateway. */
static void lanes_config(char path[H_TEMP_PATH_MAX])
{
    char cfg[1024];

    snprintf(cfg, sizeof cfg,
             "{\"gateways\": ["
             "{\"name\": \"stuck\", \"kind\": \"stripe\", \"secret_env\": "
             "\"TEST_STRIPE_SECRET\", \"refund_url\": \"http://127.0.0.1:%d\", "
             "\"refund_key_env\": \"TEST_STRIPE_KEY\", \"refund_timeout_ms\": 30000},"
             "{\"name\": \"healthy\", \"kind\": \"stripe\", \"secret_env\": "
             "\"TEST_STRIPE_SECRET\", \"refund_url\": \"http://127.0.0.1:%d\", "
             "\"refund_key_env\": \"TEST_STRIPE_KEY\", \"refund_timeout_ms\": 30000}]}",
             gw.port, gw.port);
    h_temp_file(path, cfg);
}

/* Eight refunds hang at one profile's gateway (made, never answered); a
 * refund through another profile succeeds meanwhile: it reaches SUCCEEDED
 * while the eight are still SUBMITTED, their calls unanswered (the waits
 * below are far shorter than their 30 s). */
START_TEST(a_hung_gateway_does_not_delay_another_gateways_refund)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET, "TEST_STRIPE_KEY=" API_KEY,
                                       "PAYCALLBACK_REFUNDS_POLL_MS=50",
                                       "PAYCALLBACK_REFUNDS_INFLIGHT=8", NULL };
    char path[H_TEMP_PATH_MAX], order_no[24], pay_no[24];
    struct h_server *s;

    lanes_config(path);
    s = h_server_start_config(path, env);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < 8; i++) {
        snprintf(order_no, sizeof order_no, "OH%d", i);
        snprintf(pay_no, sizeof pay_no, "pi_hung%d", i);
        paid_payment(order_no, pay_no, "stuck");
        plant(pay_no, "hang");
        refund_at(h_server_port(s), pay_no, pay_no, "{\"amount\":\"3.00\"}");
    }
    h_await(h_tool_log_lines(&gw, "\"made\"", "pi_hung") == 8, 5000,
            "the eight refunds never all reached the gateway");
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"concurrent\": 8,", "pi_hung"));
    paid_payment("OK1", "pi_ok", "healthy");
    refund_at(h_server_port(s), "pi_ok", "ok", "{\"amount\":\"4.00\"}");
    h_await(refund_state("pi_ok") == 3, 5000,
            "the healthy profile's refund waited behind the hung ones");
    ck_assert_int_eq(8, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no LIKE "
                                       "'pi_hung%%' AND state = 2 AND attempts = 1"));
    ck_assert_int_eq(1, gateway_refunds("pi_ok"));
    /* the hung calls end when the gateway goes away, so the server stops */
    gateway_down();
    ck_assert_int_eq(0, h_server_stop(s));
    unlink(path);
    gateway_up();
}
END_TEST

/* ---- Alipay and WeChat Pay v3 through the same test gateway ------------- */

#define APIV3_KEY "0123456789abcdef0123456789abcdef"
#define ALIPAY_APP_ID "2021000000000001"

static const char *const cn_env[] = { "TEST_WECHAT_APIV3=" APIV3_KEY,
                                      "PAYCALLBACK_REFUNDS_POLL_MS=50",
                                      "PAYCALLBACK_REFUNDS_BATCH=1",
                                      "PAYCALLBACK_REFUNDS_BACKOFF_BASE_MS=50",
                                      "PAYCALLBACK_REFUNDS_BACKOFF_MAX_MS=400",
                                      NULL };

/* The profiles: Alipay's public key and WeChat's platform key are the test
 * gateway's platform key; the merchant key is the one it wrote (0600). */
static void cn_config(char *cfg, size_t n, const char *key_file)
{
    snprintf(cfg, n,
             "{\"gateways\": ["
             "{\"name\": \"alipay\", \"kind\": \"alipay\", \"app_id\": \"" ALIPAY_APP_ID "\","
             " \"public_key_file\": \"%s/platform_pub.pem\", \"refund\": \"auto\","
             " \"refund_url\": \"http://127.0.0.1:%d\", \"merchant_key_file\": \"%s\","
             " \"refund_timeout_ms\": 500},"
             "{\"name\": \"wechat\", \"kind\": \"wechatpay_v3\", \"mchid\": \"1900000001\","
             " \"secret_env\": \"TEST_WECHAT_APIV3\", \"platform_keys\": [{\"serial\":"
             " \"PLATFORM-SERIAL-1\", \"public_key_file\": \"%s/platform_pub.pem\"}],"
             " \"refund\": \"auto\", \"refund_url\": \"http://127.0.0.1:%d\","
             " \"merchant_key_file\": \"%s\", \"merchant_serial\": \"MERCHANT-SERIAL-1\","
             " \"refund_timeout_ms\": 500},"
             "{\"name\": \"alipay2\", \"kind\": \"alipay\", \"app_id\": \"" ALIPAY_APP_ID "\","
             " \"public_key_file\": \"%s/platform_pub.pem\","
             " \"refund_url\": \"http://127.0.0.1:%d\", \"merchant_key_file\": \"%s\","
             " \"refund_timeout_ms\": 500},"
             "{\"name\": \"wechat2\", \"kind\": \"wechatpay_v3\", \"mchid\": \"1900000001\","
             " \"secret_env\": \"TEST_WECHAT_APIV3\", \"platform_keys\": [{\"serial\":"
             " \"PLATFORM-SERIAL-1\", \"public_key_file\": \"%s/platform_pub.pem\"}],"
             " \"refund_url\": \"http://127.0.0.1:%d\","
             " \"merchant_key_file\": \"%s\", \"merchant_serial\": \"MERCHANT-SERIAL-1\","
             " \"refund_timeout_ms\": 500}]}",
             gw.dir, gw.port, key_file, gw.dir, gw.port, key_file, gw.dir, gw.port, key_file,
             gw.dir, gw.port, key_file);
}

static void cn_up(void)
{
    char cfg[4096], key_file[128];

    h_tool_start(&gw, "refund_gateway.py", NULL);
    snprintf(key_file, sizeof key_file, "%s/merchant_key.pem", gw.dir);
    cn_config(cfg, sizeof cfg, key_file);
    h_temp_file(config_path, cfg);
    h_fixture_server_up_config(config_path, cn_env);
}

static void cn_down(void)
{
    assert_ledger();
    h_fixture_server_down();
    gateway_down();
}

/* The test gateway's platform signature of message, base64 (malloc'd). */
static char *platform_sign(const char *message)
{
    cJSON *o = cJSON_CreateObject();
    struct h_resp r = { 0 };
    char *body, *sig;

    cJSON_AddStringToObject(o, "message", message);
    body = cJSON_PrintUnformatted(o);
    h_http(gw.port, "POST", "/_sign", NULL, body, strlen(body), &r);
    h_assert_status(&r, 200);
    sig = h_json_get_str(r.body, "signature");
    ck_assert_ptr_nonnull(sig);
    h_resp_free(&r);
    cJSON_free(body);
    cJSON_Delete(o);
    return sig;
}

/* Posts Alipay's notification that trade_no paid order_no (899.00)
 * through gateway. */
static void alipay_paid_to(const char *gateway, const char *trade_no, const char *order_no,
                           struct h_resp *r)
{
    char route[64];
    char content[1024], body[2048];
    char *sig, *esc;
    const char *headers[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                              NULL };

    /* the signed fields, sorted by name (sign and sign_type left out) */
    snprintf(content, sizeof content,
             "app_id=" ALIPAY_APP_ID "&charset=utf-8&notify_type=trade_status_sync&out_trade_no=%s"
             "&total_amount=" PRICE "&trade_no=%s&trade_status=TRADE_SUCCESS",
             order_no, trade_no);
    sig = platform_sign(content);
    esc = testkey_form_escape(sig);
    snprintf(body, sizeof body, "%s&sign_type=RSA2&sign=%s", content, esc);
    snprintf(route, sizeof route, "/pay/callback/%s", gateway);
    h_http(h_port(), "POST", route, headers, body, strlen(body), r);
    free(esc);
    free(sig);
}

static void alipay_paid(const char *trade_no, const char *order_no, struct h_resp *r)
{
    alipay_paid_to("alipay", trade_no, order_no, r);
}

START_TEST(an_alipay_double_payment_is_refunded_once_signed_both_ways)
{
    struct h_resp r = { 0 };
    char *refund_no;

    h_db_insert_order("OA1", "u1", PRICE, 1);
    alipay_paid("2026120322001400001", "OA1", &r);
    h_assert_status(&r, 200);
    ck_assert_str_eq("success", r.body);
    h_resp_free(&r);
    alipay_paid("2026120322001400002", "OA1", &r); /* the second charge */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("2026120322001400002", 3);
    refund_no =
        h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '2026120322001400002'");
    ck_assert_int_eq(1, gateway_refunds("2026120322001400002"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, "\"sig_ok\": false", NULL));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"amount\": \"899.00\"", refund_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE event_type = "
                                       "'refund.succeeded' AND subject = '%s'",
                                       refund_no));
    free(refund_no);
}
END_TEST

START_TEST(an_alipay_answer_lost_is_found_by_the_refund_query)
{
    struct h_resp r = { 0 };

    paid_payment("OA2", "2026120322001400003", "alipay");
    plant("2026120322001400003", "hang");
    ask_refund("2026120322001400003", "a1", "{\"amount\":\"10.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("2026120322001400003", 3);
    {
        char *refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = "
                                          "'2026120322001400003'");
        const char *parts[] = { "refund not decided yet", refund_no, "outcome=UNKNOWN", NULL };
        char *line = h_log_find(parts, 5000);

        ck_assert_msg(line != NULL, "the lost answer never made the refund UNKNOWN");
        free(line);
        free(refund_no);
    }
    ck_assert_int_eq(1, gateway_refunds("2026120322001400003"));
    ck_assert_int_ge(h_tool_log_lines(&gw, "alipay.trade.fastpay.refund.query", NULL), 1);
}
END_TEST

START_TEST(an_alipay_refusal_fails_the_refund_with_its_sub_code)
{
    struct h_resp r = { 0 };

    paid_payment("OA3", "2026120322001400004", "alipay");
    plant("2026120322001400004", "refuse");
    ask_refund("2026120322001400004", "a2", "{}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("2026120322001400004", 4);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE failure_code = "
                                       "'ACQ.TRADE_HAS_CLOSE'"));
}
END_TEST

START_TEST(a_wechat_refund_is_signed_checked_and_succeeds_once)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment("OW1", "4200000001202612030001", "wechat");
    ask_refund("4200000001202612030001", "w1", "{\"amount\":\"100.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("4200000001202612030001", 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = "
                                "'4200000001202612030001'");
    ck_assert_int_eq(1, gateway_refunds("4200000001202612030001"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"total\": 89900", refund_no));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"amount\": 10000", refund_no));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, "\"sig_ok\": false", NULL));
    free(refund_no);
}
END_TEST

START_TEST(a_wechat_answer_lost_is_found_by_the_refund_query)
{
    const char *pay = "4200000001202612030130";
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment("OW13", pay, "wechat");
    plant(pay, "hang");
    ask_refund(pay, "w13", "{\"amount\":\"10.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    await_state(pay, 3);
    {
        const char *parts[] = { "refund not decided yet", refund_no, "outcome=UNKNOWN", NULL };
        char *line = h_log_find(parts, 5000);

        ck_assert_msg(line != NULL, "the lost answer never made the refund UNKNOWN");
        free(line);
    }
    ck_assert_int_eq(1, gateway_refunds(pay));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"GET\"", refund_no), 1);
    free(refund_no);
}
END_TEST

START_TEST(a_processing_wechat_refund_is_asked_about_until_success)
{
    struct h_resp r = { 0 };

    paid_payment("OW2", "4200000001202612030002", "wechat");
    plant("4200000001202612030002", "pending");
    ask_refund("4200000001202612030002", "w2", "{}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("4200000001202612030002", 3);
    ck_assert_int_eq(1, gateway_refunds("4200000001202612030002"));
    ck_assert_int_ge(h_tool_log_lines(&gw, "\"GET\"", "/v3/refund/domestic/refunds/"), 1);
}
END_TEST

START_TEST(wechat_refusals_and_5xx_end_as_the_gateway_says)
{
    struct h_resp r = { 0 };

    paid_payment("OW3", "4200000001202612030003", "wechat");
    paid_payment("OW4", "4200000001202612030004", "wechat");
    plant("4200000001202612030003", "refuse");
    plant("4200000001202612030004", "500_then_succeed");
    ask_refund("4200000001202612030003", "w3", "{}", &r);
    h_resp_free(&r);
    ask_refund("4200000001202612030004", "w4", "{}", &r);
    h_resp_free(&r);
    await_state("4200000001202612030003", 4);
    await_state("4200000001202612030004", 3);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE failure_code = "
                                       "'NOT_ENOUGH'"));
    ck_assert_int_eq(1, gateway_refunds("4200000001202612030004"));
}
END_TEST

/* Posts a WeChat Pay v3 notification of event_type to gateway: plain
 * encrypted with the APIv3 key, the whole signed with the platform key
 * (forged: with a signature of another text). */
static void wechat_notice(const char *gateway, const char *event_type, const char *plain,
                          bool forged, struct h_resp *r)
{
    char body[2048], msg[2200], ts[24], h[4][1200], route[64];
    const char *nonce = "593BEC0C930BF1AFEB40B4A08C8FB242";
    const char *headers[] = { "Content-Type: application/json", h[0], h[1], h[2], h[3], NULL };
    char *ct, *sig;

    ct = testkey_gcm_encrypt_b64(APIV3_KEY, "6f9a2c4e8b1d", "refund", plain);
    snprintf(body, sizeof body,
             "{\"id\":\"EV-R1\",\"create_time\":\"2026-12-03T10:00:06+08:00\","
             "\"resource_type\":\"encrypt-resource\",\"event_type\":\"%s\","
             "\"summary\":\"refund\",\"resource\":{\"original_type\":\"refund\","
             "\"algorithm\":\"AEAD_AES_256_GCM\",\"ciphertext\":\"%s\","
             "\"associated_data\":\"refund\",\"nonce\":\"6f9a2c4e8b1d\"}}",
             event_type, ct);
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    snprintf(msg, sizeof msg, "%s\n%s\n%s\n", ts, nonce, forged ? "{}" : body);
    sig = platform_sign(msg);
    snprintf(h[0], sizeof h[0], "Wechatpay-Timestamp: %s", ts);
    snprintf(h[1], sizeof h[1], "Wechatpay-Nonce: %s", nonce);
    snprintf(h[2], sizeof h[2], "Wechatpay-Serial: PLATFORM-SERIAL-1");
    snprintf(h[3], sizeof h[3], "Wechatpay-Signature: %s", sig);
    snprintf(route, sizeof route, "/pay/callback/%s", gateway);
    h_http(h_port(), "POST", route, headers, body, strlen(body), r);
    free(sig);
    free(ct);
}

/* Posts WeChat Pay's REFUND.<status> notification of out_refund_no. */
static void wechat_refund_notice(const char *out_refund_no, const char *status, struct h_resp *r)
{
    char plain[512], type[32];
    /* the payment of the refund it names, as WeChat sends it; a number of
     * a refund we never asked for names another transaction */
    char *pay_no =
        h_db_scalar_str("SELECT pay_no FROM refund WHERE refund_no = '%s'", out_refund_no);

    snprintf(plain, sizeof plain,
             "{\"mchid\":\"1900000001\",\"out_trade_no\":\"OWN\",\"transaction_id\":"
             "\"%s\",\"out_refund_no\":\"%s\",\"refund_id\":"
             "\"50000000382019052709732678859\",\"refund_status\":\"%s\"}",
             pay_no != NULL ? pay_no : "4200000001202612039999", out_refund_no, status);
    snprintf(type, sizeof type, "REFUND.%s", status);
    wechat_notice("wechat", type, plain, false, r);
    free(pay_no);
}

/* Posts WeChat Pay's TRANSACTION.SUCCESS: transaction_id paid order_no
 * (899.00) through gateway. */
static void wechat_paid(const char *gateway, const char *transaction_id, const char *order_no,
                        struct h_resp *r)
{
    char plain[512];

    snprintf(plain, sizeof plain,
             "{\"mchid\":\"1900000001\",\"out_trade_no\":\"%s\",\"transaction_id\":\"%s\","
             "\"trade_state\":\"SUCCESS\",\"amount\":{\"total\":" PRICE_MINOR
             ",\"currency\":\"CNY\"}}",
             order_no, transaction_id);
    wechat_notice(gateway, "TRANSACTION.SUCCESS", plain, false, r);
}

START_TEST(a_wechat_refund_notification_succeeds_the_refund_once)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment("OW5", "4200000001202612030005", "wechat");
    plant("4200000001202612030005", "stay_pending");
    ask_refund("4200000001202612030005", "w5", "{}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    h_await(refund_state("4200000001202612030005") == 2, RELAY_WAIT_MS, "never submitted");
    wechat_refund_notice(refund_no, "SUCCESS", &r);
    h_assert_status(&r, 204); /* WeChat Pay v3's ack */
    h_resp_free(&r);
    ck_assert_int_eq(3, refund_state("4200000001202612030005"));
    wechat_refund_notice(refund_no, "SUCCESS", &r); /* replayed */
    h_assert_status(&r, 204);                       /* WeChat Pay v3's ack */
    h_resp_free(&r);
    ck_assert_int_eq(1,
                     h_db_scalar_ll("SELECT COUNT(*) FROM outbox WHERE subject = '%s'", refund_no));
    free(refund_no);
}
END_TEST

/* A double payment of order_no through a WeChat profile: first, then
 * second, which Tencent resends. */
static void wechat_paid_twice(const char *gateway, const char *order_no, const char *first,
                              const char *second)
{
    struct h_resp r = { 0 };

    h_db_insert_order(order_no, "u1", PRICE, 1);
    wechat_paid(gateway, first, order_no, &r);
    h_assert_status(&r, 204);
    h_resp_free(&r);
    wechat_paid(gateway, second, order_no, &r); /* the customer paid twice */
    h_assert_status(&r, 204);
    h_resp_free(&r);
    wechat_paid(gateway, second, order_no, &r); /* and WeChat Pay resent it */
    h_assert_status(&r, 204);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s' "
                                       "AND outcome = 2",
                                       second));
}

START_TEST(a_wechat_double_payment_is_refunded_by_itself_end_to_end)
{
    const char *pay = "4200000001202612030072";
    char *refund_no;

    wechat_paid_twice("wechat", "OW7", "4200000001202612030071", pay);
    await_state(pay, 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '%s'", pay);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    ck_assert_int_eq(1, gateway_refunds(pay));
    ck_assert_int_eq(0, gateway_refunds("4200000001202612030071"));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, "\"sig_ok\": false", NULL));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"amount\": 89900", refund_no));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = '%s' "
                                       "AND status = 3 AND settle_reference = '%s'",
                                       pay, refund_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, "OW7", pay, PRICE));
    free(refund_no);
}
END_TEST

START_TEST(a_wechat_double_payment_is_refunded_after_one_approval)
{
    const char *pay = "4200000001202612030082";
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    wechat_paid_twice("wechat2", "OW8", "4200000001202612030081", pay);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '%s'", pay);
    ck_assert_ptr_nonnull(refund_no);
    ck_assert_int_eq(0, refund_state(pay));
    ck_assert_int_eq(0, gateway_refunds(pay)); /* nothing before the approval */
    snprintf(path, sizeof path, "/ops/refund-requests/%s/approve", refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state(pay, 3);
    ck_assert_int_eq(1, gateway_refunds(pay));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, "OW8", pay, PRICE));
    free(refund_no);
}
END_TEST

START_TEST(an_alipay_double_payment_is_refunded_after_one_approval)
{
    const char *pay = "2026120322001400012";
    struct h_resp r = { 0 };
    char *refund_no, path[160];

    h_db_insert_order("OA9", "u1", PRICE, 1);
    alipay_paid_to("alipay2", "2026120322001400011", "OA9", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    alipay_paid_to("alipay2", pay, "OA9", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '%s'", pay);
    ck_assert_ptr_nonnull(refund_no);
    ck_assert_int_eq(0, refund_state(pay));
    ck_assert_int_eq(0, gateway_refunds(pay));
    snprintf(path, sizeof path, "/ops/refund-requests/%s/approve", refund_no);
    h_http(h_port(), "POST", path, NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state(pay, 3);
    ck_assert_int_eq(1, gateway_refunds(pay));
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, "OA9", pay, PRICE));
    free(refund_no);
}
END_TEST

/* A WeChat refund left PROCESSING at the gateway; its number (malloc'd). */
static char *wechat_pending_refund(const char *order_no, const char *pay_no)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment(order_no, pay_no, "wechat");
    plant(pay_no, "stay_pending");
    ask_refund(pay_no, pay_no, "{}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    h_await(refund_state(pay_no) == 2 && gateway_refunds(pay_no) == 1, RELAY_WAIT_MS,
            "the refund of %s never went pending", pay_no);
    return refund_no;
}

START_TEST(wechat_abnormal_closed_forged_and_unsolicited_refund_notifications)
{
    const char *unsolicited =
        "paycallback_refund_notifications_unsolicited_total{gateway=\"wechat\"}";
    long long before = h_metric(unsolicited);
    char *abnormal = wechat_pending_refund("OW10", "4200000001202612030100");
    char *closed = wechat_pending_refund("OW11", "4200000001202612030110");
    char plain[512];
    struct h_resp r = { 0 };

    snprintf(plain, sizeof plain,
             "{\"mchid\":\"1900000001\",\"out_refund_no\":\"%s\",\"refund_id\":\"5001\","
             "\"refund_status\":\"SUCCESS\"}",
             abnormal);
    wechat_notice("wechat", "REFUND.SUCCESS", plain, true, &r); /* not WeChat's signature */
    ck_assert_int_ge(r.status, 400);
    h_resp_free(&r);
    ck_assert_int_eq(2, refund_state("4200000001202612030100"));

    for (int i = 0; i < 2; i++) { /* each one, then replayed */
        wechat_refund_notice(abnormal, "ABNORMAL", &r);
        h_assert_status(&r, 204);
        h_resp_free(&r);
        wechat_refund_notice(closed, "CLOSED", &r);
        h_assert_status(&r, 204);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE refund_no = '%s' AND "
                                       "state = 4 AND failure_code = 'ABNORMAL'",
                                       abnormal));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE refund_no = '%s' AND "
                                       "state = 4 AND failure_code = 'CLOSED'",
                                       closed));
    ck_assert_int_eq(
        1, event_complete("refund.failed", abnormal, "OW10", "4200000001202612030100", PRICE));
    ck_assert_int_eq(
        1, event_complete("refund.failed", closed, "OW11", "4200000001202612030110", PRICE));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM outbox"));

    wechat_refund_notice("RCONSOLE0000001", "SUCCESS", &r); /* refunded at the console */
    h_assert_status(&r, 204);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.unsolicited' AND actor = 'wechat'"));
    ck_assert_int_eq(before + 1, h_metric(unsolicited));
    ck_assert_int_eq(2, h_db_scalar_ll("SELECT COUNT(*) FROM refund"));
    free(abnormal);
    free(closed);
}
END_TEST

/* Posts Alipay's trade notify with the refund fields of out_biz_no
 * (forged: signed over another text). */
static void alipay_refund_notice(const char *out_biz_no, const char *trade_no, const char *order_no,
                                 bool forged, struct h_resp *r)
{
    char content[1024], body[2048], *sig, *esc;
    const char *headers[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                              NULL };

    snprintf(content, sizeof content,
             "app_id=" ALIPAY_APP_ID "&charset=utf-8&notify_type=trade_status_sync&out_biz_no=%s"
             "&out_trade_no=%s&refund_fee=1.00&total_amount=" PRICE
             "&trade_no=%s&trade_status=TRADE_SUCCESS",
             out_biz_no, order_no, trade_no);
    sig = platform_sign(forged ? "refund_fee=899.00" : content);
    esc = testkey_form_escape(sig);
    snprintf(body, sizeof body, "%s&sign_type=RSA2&sign=%s", content, esc);
    h_http(h_port(), "POST", "/pay/callback/alipay", headers, body, strlen(body), r);
    free(esc);
    free(sig);
}

START_TEST(alipay_refund_notifications_replayed_forged_and_unsolicited)
{
    const char *unsolicited =
        "paycallback_refund_notifications_unsolicited_total{gateway=\"alipay\"}";
    long long before = h_metric(unsolicited);
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment("OA5", "2026120322001400005", "alipay");
    plant("2026120322001400005", "stay_pending");
    ask_refund("2026120322001400005", "a5", "{\"amount\":\"1.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    h_await(h_tool_log_lines(&gw, "\"made\"", "2026120322001400005") == 1, RELAY_WAIT_MS,
            "never submitted");
    alipay_refund_notice(refund_no, "2026120322001400005", "OA5", true, &r); /* forged */
    ck_assert_int_ge(r.status, 400);
    h_resp_free(&r);
    ck_assert_int_ne(3, refund_state("2026120322001400005"));
    for (int i = 0; i < 2; i++) { /* the notify, then Alipay's resend */
        alipay_refund_notice(refund_no, "2026120322001400005", "OA5", false, &r);
        h_assert_status(&r, 200);
        ck_assert_str_eq("success", r.body);
        h_resp_free(&r);
        ck_assert_int_eq(3, refund_state("2026120322001400005"));
    }
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'2026120322001400005'")); /* not a payment again */
    ck_assert_int_eq(
        1, event_complete("refund.succeeded", refund_no, "OA5", "2026120322001400005", "1.00"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM outbox"));
    ck_assert_int_eq(1, gateway_refunds("2026120322001400005"));

    alipay_refund_notice("RCONSOLE0000002", "2026120322001400005", "OA5", false, &r);
    h_assert_status(&r, 200); /* recorded, and acknowledged */
    ck_assert_str_eq("success", r.body);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.unsolicited' AND actor = 'alipay'"));
    ck_assert_int_eq(before + 1, h_metric(unsolicited));
    free(refund_no);
}
END_TEST

START_TEST(alipay_and_wechat_refunds_are_ended_by_the_gateways_later_notification)
{
    refund_ended_by_notification("OL2", "4200000001202612030140", "wechat", "\"status\": 204");
    refund_ended_by_notification("OL3", "2026120322001400014", "alipay", "\"status\": 200");
}
END_TEST

/* Answers signed with a key that is not the gateway's are not believed:
 * the refund stays UNKNOWN (never SUCCEEDED on a forged word) until a
 * signed answer says so; one refund at the gateway. */
static void forged_answers_are_not_believed(const char *order_no, const char *pay_no,
                                            const char *gateway)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment(order_no, pay_no, gateway);
    plant(pay_no, "forge_answer");
    ask_refund(pay_no, pay_no, "{\"amount\":\"4.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = '%s' AND state = 5 AND "
                           "attempts >= 2",
                           pay_no) == 1,
            RELAY_WAIT_MS, "forged answers about %s were not left UNKNOWN", pay_no);
    plant(pay_no, "succeed");
    await_state(pay_no, 3);
    ck_assert_int_eq(1, gateway_refunds(pay_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, order_no, pay_no, "4.00"));
    free(refund_no);
}

START_TEST(alipay_and_wechat_answers_not_signed_by_the_gateway_are_not_believed)
{
    forged_answers_are_not_believed("OF1", "2026120322001400015", "alipay");
    forged_answers_are_not_believed("OF2", "4200000001202612030150", "wechat");
}
END_TEST

/* The refund made and its answer lost; every query answer about it is
 * signed by the gateway but names another refund number or amount
 * (mode): not believed, the refund stays UNKNOWN (why in last_error),
 * until a true answer ends it with the one refund. */
static void lies_are_not_believed(const char *order_no, const char *pay_no, const char *gateway,
                                  const char *mode, const char *why)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment(order_no, pay_no, gateway);
    plant(pay_no, mode);
    ask_refund(pay_no, pay_no, "{\"amount\":\"4.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = '%s' AND state = 5 AND "
                           "attempts >= 3 AND last_error LIKE '%%%s%%'",
                           pay_no, why) == 1,
            RELAY_WAIT_MS, "%s answers about %s were believed or never came", mode, pay_no);
    ck_assert_int_eq(1, gateway_refunds(pay_no));
    plant(pay_no, "succeed");
    await_state(pay_no, 3);
    ck_assert_int_eq(1, gateway_refunds(pay_no));
    ck_assert_int_eq(1, event_complete("refund.succeeded", refund_no, order_no, pay_no, "4.00"));
    free(refund_no);
}

START_TEST(signed_answers_naming_another_number_or_amount_are_not_believed)
{
    lies_are_not_believed("OL1", "2026120322001400021", "alipay", "lie_number", "not ours");
    lies_are_not_believed("OL2", "2026120322001400022", "alipay", "lie_amount",
                          "is not the refund");
    lies_are_not_believed("OL3", "4200000001202612030161", "wechat", "lie_number", "not ours");
    lies_are_not_believed("OL4", "4200000001202612030162", "wechat", "lie_amount",
                          "is not the refund");
}
END_TEST

/* Alipay's refund API and WeChat Pay's domestic one take CNY only: a
 * refund of a JPY payment through them is FAILED (not_submittable) with an
 * alert, and never reaches the gateway. */
START_TEST(a_refund_in_another_currency_than_cny_is_not_sent_to_alipay_or_wechat)
{
    const char *pays[][3] = { { "OY1", "2026120322001400031", "alipay" },
                              { "OY2", "4200000001202612030171", "wechat" } };
    struct h_resp r = { 0 };

    for (int i = 0; i < 2; i++) {
        paid_payment(pays[i][0], pays[i][1], pays[i][2]);
        h_db_exec("UPDATE orders SET currency = 'JPY' WHERE order_no = '%s'", pays[i][0]);
        ask_refund(pays[i][1], pays[i][1], "{\"amount\":\"100\"}", &r);
        h_assert_status(&r, 201);
        h_resp_free(&r);
    }
    for (int i = 0; i < 2; i++) {
        await_state(pays[i][1], 4);
        ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = '%s' AND "
                                           "failure_code = 'not_submittable' AND last_error "
                                           "LIKE '%%refunds are in CNY%%'",
                                           pays[i][1]));
        ck_assert_int_eq(0, h_tool_log_lines(&gw, pays[i][1], pays[i][1]));
    }
}
END_TEST

/* SIGHUP loads the merchant key again: after the gateway's key changed,
 * a file open to others is refused (the running key stays), then the new
 * key, owner-only, signs the next refund, which the gateway accepts. */
START_TEST(merchant_keys_reload_on_sighup_and_an_open_file_is_refused)
{
    const char *ok = "paycallback_config_reloads_total{result=\"ok\"}";
    const char *failed = "paycallback_config_reloads_total{result=\"failed\"}";
    const char *why[] = { "reload refused", "chmod 600", NULL };
    long long ok0 = h_metric(ok), failed0 = h_metric(failed);
    char key_file[128], rotated[160], *line, *refund_no;
    struct h_resp r = { 0 };

    snprintf(key_file, sizeof key_file, "%s/merchant_key.pem", gw.dir);
    snprintf(rotated, sizeof rotated, "%s/merchant_key_rotated.pem", gw.dir);
    h_http(gw.port, "POST", "/_rotate_merchant", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(0, chmod(rotated, 0644));
    ck_assert_int_eq(0, rename(rotated, key_file));
    ck_assert_int_eq(0, kill(h_server_pid(h_srv), SIGHUP));
    h_await(h_metric(failed) == failed0 + 1, RELAY_WAIT_MS, "the open key file was not refused");
    line = h_log_find(why, 5000);
    ck_assert_msg(line != NULL, "no reload refusal naming the key file's mode");
    free(line);

    ck_assert_int_eq(0, chmod(key_file, 0600));
    ck_assert_int_eq(0, kill(h_server_pid(h_srv), SIGHUP));
    h_await(h_metric(ok) == ok0 + 1, RELAY_WAIT_MS, "the new merchant key was not loaded");
    paid_payment("OW12", "4200000001202612030120", "wechat");
    ask_refund("4200000001202612030120", "w12", "{\"amount\":\"3.00\"}", &r);
    h_assert_status(&r, 201);
    refund_no = h_json_get_str(r.body, "refund_no");
    h_resp_free(&r);
    await_state("4200000001202612030120", 3);
    ck_assert_int_eq(1, h_tool_log_lines(&gw, "\"sig_ok\": true", refund_no));
    ck_assert_int_eq(0, h_tool_log_lines(&gw, "\"sig_ok\": false", NULL));
    free(refund_no);
}
END_TEST

/* A merchant key that others can read stops the start. */
START_TEST(a_merchant_key_readable_by_others_is_refused)
{
    char cfg[4096], key_file[128], copy[160], cmd[600];
    const char *args[] = { "-c", config_path, "--check-config", NULL };
    struct h_run run;

    snprintf(key_file, sizeof key_file, "%s/merchant_key.pem", gw.dir);
    snprintf(copy, sizeof copy, "%s/open_key.pem", gw.dir);
    snprintf(cmd, sizeof cmd, "cp %s %s && chmod 644 %s", key_file, copy, copy);
    ck_assert_int_eq(0, system(cmd));
    cn_config(cfg, sizeof cfg, copy);
    h_temp_file(config_path, cfg);
    h_run(args, cn_env, 20000, &run);
    ck_assert_int_ne(0, run.status);
    ck_assert_msg(strstr(run.err, "chmod 600") != NULL, "stderr: %s", run.err);
    h_run_free(&run);
    if (geteuid() != 0)
        return; /* only root can give a file to another user */
    /* owner-only, but the owner is another user: refused too */
    ck_assert_int_eq(0, chmod(copy, 0600));
    ck_assert_int_eq(0, chown(copy, 65534, 65534));
    h_run(args, cn_env, 20000, &run);
    ck_assert_int_ne(0, run.status);
    ck_assert_msg(strstr(run.err, "not by the service's user") != NULL, "stderr: %s", run.err);
    h_run_free(&run);
}
END_TEST

/* ---- the shop's side: the refund events as delivered ------------------------ */

#define SHOP_SECRET "whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg="

/* A double payment refunded (refund.succeeded) and a refund refused
 * (refund.failed) reach a shop endpoint that verifies each delivery with
 * the standardwebhooks package and checks its body against the event's
 * schema in docs/openapi.yaml (tests/tools/webhook_receiver.js). */
START_TEST(the_shop_receives_the_refund_events_signed_and_as_documented)
{
    static const char *const rcv_args[] = { "--secret", SHOP_SECRET, NULL };
    struct h_tool rcv;
    struct h_resp r = { 0 };
    char cfg[1536], shop_cfg[H_TEMP_PATH_MAX], *refund_no;

    h_tool_start(&rcv, "webhook_receiver.js", rcv_args);
    snprintf(cfg, sizeof cfg,
             "{\"webhook\": {\"poll_ms\": 50},"
             " \"webhooks\": [{\"name\": \"shop\", \"url\": \"http://127.0.0.1:%d/shop\","
             " \"secret\": \"" SHOP_SECRET "\", \"events\": [\"payment.double_charged\","
             " \"refund.succeeded\", \"refund.failed\"]}],"
             " \"gateways\": [{\"name\": \"stripe\", \"kind\": \"stripe\", \"secret_env\":"
             " \"TEST_STRIPE_SECRET\", \"refund\": \"auto\", \"refund_url\":"
             " \"http://127.0.0.1:%d\", \"refund_key_env\": \"TEST_STRIPE_KEY\","
             " \"refund_timeout_ms\": 500}]}",
             rcv.port, gw.port);
    h_temp_file(shop_cfg, cfg);
    h_fixture_server_up_config(shop_cfg, relay_env);

    h_db_insert_order("OW1", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_w1", "OW1", &r);
    h_resp_free(&r);
    stripe_paid("stripe", "pi_w2", "OW1", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_w2", 3);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_w2'");
    ck_assert_ptr_nonnull(refund_no);

    paid_payment("OW2", "pi_w3", "stripe");
    plant("pi_w3", "refuse");
    ask_refund("pi_w3", "w3", "{\"amount\":\"100.00\"}", &r);
    h_assert_status(&r, 201);
    h_resp_free(&r);
    await_state("pi_w3", 4);

    h_await(h_tool_log_lines(&rcv, "\"answer\": 200", NULL) == 3, RELAY_WAIT_MS,
            "the shop did not receive the three events");
    ck_assert_int_eq(1, h_tool_log_lines(&rcv, "\"type\": \"payment.double_charged\"",
                                         "\"pay_no\": \"pi_w2\", \"gateway\": \"stripe\""));
    ck_assert_int_eq(1, h_tool_log_lines(&rcv, "\"type\": \"refund.succeeded\"", refund_no));
    ck_assert_int_eq(1, h_tool_log_lines(&rcv, "\"type\": \"refund.succeeded\"",
                                         "\"amount\": \"899.00\", \"currency\": \"CNY\""));
    ck_assert_int_eq(1, h_tool_log_lines(&rcv, "\"type\": \"refund.failed\"",
                                         "\"failure_code\": \"charge_already_refunded\""));
    ck_assert_int_eq(3, h_tool_log_lines(&rcv, "\"sig_ok\": true", "\"schema_ok\": true"));
    h_fixture_server_down();
    h_tool_stop(&rcv);
    unlink(shop_cfg);
    free(refund_no);
}
END_TEST

/* ---- one ledger per payment: settle, approve, reject, the relay's check ---- */

static void settle(const char *pay_no, const char *reference, struct h_resp *r)
{
    char path[128], body[128];

    snprintf(path, sizeof path, "/ops/refunds/%s/settle", pay_no);
    snprintf(body, sizeof body, "{\"reference\":\"%s\"}", reference);
    h_http(h_port(), "POST", path, NULL, body, strlen(body), r);
}

static void refund_change(const char *refund_no, const char *change, struct h_resp *r)
{
    char path[160];

    snprintf(path, sizeof path, "/ops/refund-requests/%s/%s", refund_no, change);
    h_http(h_port(), "POST", path, NULL, "", 0, r);
}

/* A double payment of order_no through stripe2 (approval): the second
 * payment's refund, AWAITING_APPROVAL; its number (free it). */
static char *awaiting_double(const char *order_no, const char *first, const char *second)
{
    struct h_resp r = { 0 };
    char *refund_no;

    h_db_insert_order(order_no, "u1", PRICE, 1);
    stripe_paid("stripe2", first, order_no, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    stripe_paid("stripe2", second, order_no, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    refund_no =
        h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = '%s' AND state = 0", second);
    ck_assert_ptr_nonnull(refund_no);
    return refund_no;
}

/* An operator refunds the double charge by hand while its refund waits for
 * approval: the settle is refused naming the refund, so the approval that
 * follows is the one refund at the gateway, and a settle after it is
 * refused too. */
START_TEST(a_settle_over_a_refund_under_way_is_refused_and_money_leaves_once)
{
    struct h_resp r = { 0 };
    char *refund_no = awaiting_double("OL1", "pi_led_l1", "pi_led_l2");

    settle("pi_led_l2", "RF-HAND-1", &r);
    h_assert_error(&r, 409, "REFUND_IN_PROGRESS");
    ck_assert_ptr_nonnull(strstr(r.body, refund_no));
    h_resp_free(&r);
    ck_assert_int_eq(
        2, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = 'pi_led_l2'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.settle'"));

    refund_change(refund_no, "approve", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_led_l2", 3);
    settle("pi_led_l2", "RF-HAND-1", &r); /* settled by the refund itself, under its number */
    h_assert_error(&r, 409, "ALREADY_SETTLED");
    h_resp_free(&r);
    ck_assert_int_eq(1, gateway_refunds("pi_led_l2"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_l2'"));
    free(refund_no);
}
END_TEST

/* The other order: a payment settled by hand before its refund's approval
 * (as a settle made before the ledger left it) is never refunded again:
 * approve and retry are refused and nothing reaches the gateway. */
START_TEST(an_approval_after_a_settle_by_hand_is_refused_and_sends_nothing)
{
    struct h_resp r = { 0 };
    char *refund_no = awaiting_double("OL2", "pi_led_m1", "pi_led_m2");

    h_db_exec("UPDATE payment_record SET status = 3, settle_reference = 'RF-HAND-2', "
              "settled_by = 'ops', settled_at = NOW(3) WHERE pay_no = 'pi_led_m2'");
    refund_change(refund_no, "approve", &r);
    h_assert_error(&r, 409, "PAYMENT_SETTLED");
    h_resp_free(&r);
    ck_assert_int_eq(0, refund_state("pi_led_m2"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.approve'"));
    /* its way out: rejected, never sent */
    refund_change(refund_no, "reject", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "state", "FAILED");
    h_assert_str(&r, "failure_code", "rejected");
    h_assert_bool(&r, "duplicate", 0);
    h_resp_free(&r);
    refund_change(refund_no, "reject", &r);
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    refund_change(refund_no, "approve", &r);
    h_assert_error(&r, 409, "REFUND_ILLEGAL_STATE");
    h_resp_free(&r);
    ck_assert_int_eq(1, event_complete("refund.failed", refund_no, "OL2", "pi_led_m2", PRICE));
    ck_assert_int_eq(0, gateway_refunds("pi_led_m2"));
    free(refund_no);
}
END_TEST

/* Rejected first, then settled by hand: the settle records what went back
 * outside the service in the ledger (a SUCCEEDED refund of origin MANUAL
 * with the reference), and no refund of any path finds room after it. */
START_TEST(a_settle_is_a_ledger_entry_that_leaves_no_room)
{
    struct h_resp r = { 0 };
    char *refund_no = awaiting_double("OL3", "pi_led_n1", "pi_led_n2");

    refund_change(refund_no, "reject", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    settle("pi_led_n2", "RF-HAND-3", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "status", "REFUND_SETTLED");
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_n2' AND "
                                       "origin = 4 AND state = 3 AND amount = 899.00 AND "
                                       "gateway_refund_id = 'RF-HAND-3' AND requested_by = 'dev'"));
    ask_refund("pi_led_n2", "after-settle", "{\"amount\":\"1.00\"}", &r);
    ck_assert_int_eq(409, r.status);
    h_resp_free(&r);
    settle("pi_led_n2", "RF-HAND-3", &r);
    h_assert_status(&r, 200);
    h_assert_bool(&r, "duplicate", 1);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_n2' AND "
                                       "state <> 4"));
    ck_assert_int_eq(0, gateway_refunds("pi_led_n2"));
    free(refund_no);
}
END_TEST

/* A refund the relay claims whose payment was settled behind it (rows as
 * a settle made before the ledger left them): nothing is sent, the refund
 * FAILS as ledger_refused with its event, and an alert is logged. */
START_TEST(the_relay_reads_the_ledger_again_before_a_refund_leaves)
{
    const char *alert[] = { "alert=REFUND_LEDGER_REFUSED", "refund_no=RLEDGER1", NULL };
    char *line;

    h_db_insert_order("OL4", "u1", PRICE, 9);
    h_db_exec("INSERT INTO payment_record (pay_no, order_no, amount, status, outcome, gateway, "
              "settle_reference, settled_by, settled_at) VALUES ('pi_led_o1', 'OL4', %s, 3, 2, "
              "'stripe', 'RF-HAND-4', 'ops', NOW(3))",
              PRICE);
    h_db_exec(
        "INSERT INTO refund (refund_no, pay_no, order_no, gateway, amount, currency, state, "
        "origin, requested_by) VALUES ('RLEDGER1', 'pi_led_o1', 'OL4', 'stripe', %s, 'CNY', 1, "
        "1, 'ops')",
        PRICE);
    await_state("pi_led_o1", 4);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE refund_no = 'RLEDGER1' "
                                       "AND failure_code = 'ledger_refused' AND attempts = 0"));
    ck_assert_int_eq(1, event_complete("refund.failed", "RLEDGER1", "OL4", "pi_led_o1", PRICE));
    line = h_log_find(alert, RELAY_WAIT_MS);
    ck_assert_msg(line != NULL, "no REFUND_LEDGER_REFUSED alert");
    free(line);
    ck_assert_int_eq(0, gateway_refunds("pi_led_o1"));
}
END_TEST

struct approvals {
    const char *refund_no;
    int status[2], duplicate[2];
};

static int approve_call(int i, void *p)
{
    struct approvals *a = p;
    struct h_resp r = { 0 };

    refund_change(a->refund_no, "approve", &r);
    a->status[i] = r.status;
    a->duplicate[i] = r.body != NULL && strstr(r.body, "\"duplicate\":true") != NULL;
    h_resp_free(&r);
    return 0;
}

/* Two operators approve the same refund at once: one approval, one
 * duplicate, one refund at the gateway. */
START_TEST(two_approvals_at_once_send_one_refund)
{
    struct h_storm_stats st;
    struct approvals a = { .refund_no = NULL };
    char *refund_no = awaiting_double("OL5", "pi_led_p1", "pi_led_p2");

    a.refund_no = refund_no;
    ck_assert_int_eq(0, h_storm(2, 2, approve_call, &a, &st));
    ck_assert_int_eq(200, a.status[0]);
    ck_assert_int_eq(200, a.status[1]);
    ck_assert_int_eq(1, a.duplicate[0] + a.duplicate[1]);
    await_state("pi_led_p2", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_led_p2"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.approve' AND subject = '%s'",
                                       refund_no));
    free(refund_no);
}
END_TEST

struct race {
    const char *pay_no;
    int status[2];
};

/* Call 0 cancels the order, call 1 asks an operator refund of the rest. */
static int cancel_or_refund(int i, void *p)
{
    struct race *rc = p;
    struct h_resp r = { 0 };

    if (i == 0)
        h_http(h_port(), "POST", "/order/OL6/cancel", NULL, "", 0, &r);
    else
        ask_refund(rc->pay_no, "race-rest", "{}", &r);
    rc->status[i] = r.status;
    h_resp_free(&r);
    return 0;
}

/* The cancel of a PAID order (its refund made by the sweep, origin CANCEL)
 * races an operator's refund of the whole payment, and the order was paid
 * twice (the double payment refunded by itself): each payment gives back
 * at most what it took, at the gateway and in the ledger. */
START_TEST(a_cancel_a_double_charge_and_an_operator_refund_together_refund_each_payment_once)
{
    struct h_storm_stats st;
    struct race rc = { .pay_no = "pi_led_q1" };
    struct h_resp r = { 0 };

    h_db_insert_order("OL6", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_led_q1", "OL6", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    stripe_paid("stripe", "pi_led_q2", "OL6", &r); /* the double charge, refund auto */
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(0, h_storm(2, 2, cancel_or_refund, &rc, &st));
    ck_assert_int_eq(200, rc.status[0]);
    /* the operator's refund is made (201) unless the sweep made the
     * cancel's first (422: nothing left): one refund of pi_led_q1 either way */
    ck_assert_msg(rc.status[1] == 201 || rc.status[1] == 422, "refund answered %d", rc.status[1]);
    await_state("pi_led_q2", 3);
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_q1' AND "
                           "state = 3") == 1,
            RELAY_WAIT_MS, "the refund of pi_led_q1 never succeeded");
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_q1' AND "
                                       "state <> 4 AND origin = %d",
                                       rc.status[1] == 201 ? 1 : 3));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM refund WHERE pay_no = 'pi_led_q1' AND "
                                       "state <> 4"));
    /* given back in full, the payment leaves the refund queue, settled
     * under that refund's number (the sweep asks for no second) */
    h_await(h_db_scalar_ll("SELECT COUNT(*) FROM payment_record p JOIN refund r ON r.refund_no = "
                           "p.settle_reference WHERE p.pay_no = 'pi_led_q1' AND p.status = 3 AND "
                           "r.pay_no = 'pi_led_q1' AND r.state = 3") == 1,
            RELAY_WAIT_MS, "pi_led_q1 never left the refund queue");
    ck_assert_int_eq(1, gateway_refunds("pi_led_q1"));
    ck_assert_int_eq(1, gateway_refunds("pi_led_q2"));
    ck_assert_int_le(refunded_cents("pi_led_q1"), 89900);
    ck_assert_int_le(refunded_cents("pi_led_q2"), 89900);
}
END_TEST

/* ---- who may move money: four eyes and the cancel of a paid order ---------- */

#define ALICE_KEY "alice-key-0123456789abcdef"
#define BOB_KEY "bob-key-0123456789abcdef0"
#define SHIP_KEY "ship-key-0123456789abcdef"
#define ALL_KEY "all-key-0123456789abcdef0"

static void keyed_up(void)
{
    static const char *const env[] = { "TEST_STRIPE_SECRET=" SECRET,
                                       "TEST_STRIPE_KEY=" API_KEY,
                                       "PAYCALLBACK_REFUNDS_POLL_MS=50",
                                       "PAYCALLBACK_REFUNDS_BACKOFF_BASE_MS=50",
                                       "PAYCALLBACK_REFUNDS_BACKOFF_MAX_MS=400",
                                       "PAYCALLBACK_REFUNDS_SWEEP_S=1",
                                       "PAYCALLBACK_REFUNDS_APPROVER_MUST_DIFFER=1",
                                       "PAYCALLBACK_AUTH_KEYS=alice:" ALICE_KEY ":refunds+read,"
                                       "bob:" BOB_KEY ":refunds+read,shipper:" SHIP_KEY
                                       ":orders+read,ops:" ALL_KEY,
                                       NULL };

    gateway_up();
    h_fixture_server_up_config(config_path, env);
}

static void keyed_ask(const char *key, const char *pay_no, const char *idem, struct h_resp *r)
{
    char path[128], hdr[160];
    const char *headers[] = { "Content-Type: application/json", hdr, NULL };

    snprintf(path, sizeof path, "/ops/payments/%s/refunds", pay_no);
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", idem);
    h_http_key(h_port(), key, "POST", path, headers, "{}", 2, r);
}

static void keyed_change(const char *key, const char *refund_no, const char *change,
                         struct h_resp *r)
{
    char path[160];

    snprintf(path, sizeof path, "/ops/refund-requests/%s/%s", refund_no, change);
    h_http_key(h_port(), key, "POST", path, NULL, "", 0, r);
}

/* Under refunds.approver_must_differ an operator's refund waits for
 * another key: the key that asked cannot approve it, another can, and the
 * gateway refunds once. */
START_TEST(four_eyes_a_refund_is_approved_by_another_key)
{
    struct h_resp r = { 0 };
    char *refund_no;

    paid_payment("OE1", "pi_eyes", "stripe");
    keyed_ask(ALICE_KEY, "pi_eyes", "eyes-1", &r);
    h_assert_status(&r, 201);
    h_assert_str(&r, "state", "AWAITING_APPROVAL");
    h_assert_str(&r, "requested_by", "alice");
    h_resp_free(&r);
    refund_no = h_db_scalar_str("SELECT refund_no FROM refund WHERE pay_no = 'pi_eyes'");
    ck_assert_ptr_nonnull(refund_no);

    keyed_change(ALICE_KEY, refund_no, "approve", &r);
    h_assert_error(&r, 403, "APPROVER_MUST_DIFFER");
    h_resp_free(&r);
    ck_assert_int_eq(0, refund_state("pi_eyes"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'refund.approve'"));

    keyed_change(BOB_KEY, refund_no, "approve", &r);
    h_assert_status(&r, 200);
    h_assert_str(&r, "approved_by", "bob");
    h_resp_free(&r);
    await_state("pi_eyes", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_eyes"));
    free(refund_no);
}
END_TEST

/* Cancelling a PAID order gives its money back: a key with the orders
 * scope alone is refused (nothing written) and may still cancel an unpaid
 * order; a key that may move money cancels it and the payment is refunded
 * once. */
START_TEST(cancelling_a_paid_order_needs_the_refunds_scope)
{
    struct h_resp r = { 0 };

    h_db_insert_order("OE2", "u1", PRICE, 1);
    stripe_paid("stripe", "pi_cancel_scope", "OE2", &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/OE2/cancel", NULL, "", 0, &r);
    h_assert_error(&r, 403, "FORBIDDEN");
    ck_assert_ptr_nonnull(strstr(r.body, "refunds"));
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("OE2"));
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT status FROM payment_record WHERE pay_no = "
                                       "'pi_cancel_scope'"));
    ck_assert_int_eq(0, h_db_scalar_ll("SELECT COUNT(*) FROM audit_log WHERE action = "
                                       "'order.cancel'"));

    h_db_insert_order("OE3", "u1", PRICE, 1);
    h_http_key(h_port(), SHIP_KEY, "POST", "/order/OE3/cancel", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    ck_assert_int_eq(9, h_order_status("OE3"));

    h_http_key(h_port(), ALL_KEY, "POST", "/order/OE2/cancel", NULL, "", 0, &r);
    h_assert_status(&r, 200);
    h_resp_free(&r);
    await_state("pi_cancel_scope", 3);
    ck_assert_int_eq(1, gateway_refunds("pi_cancel_scope"));
}
END_TEST

static Suite *refunds_suite(void)
{
    Suite *s = suite_create("refunds");
    TCase *tc = h_tcase_with("refund records", TC_TIMEOUT_S, server_up, server_down);

    tcase_add_test(tc, partial_refunds_go_up_to_the_payment_and_not_a_cent_past);
    tcase_add_test(tc, the_rest_of_a_payment_is_refunded_when_no_amount_is_given);
    tcase_add_test(tc, refusals_write_nothing);
    tcase_add_test(tc, fifty_concurrent_refunds_never_exceed_the_payment);
    tcase_add_test(tc, a_double_payment_is_refunded_by_itself_under_refund_auto);
    tcase_add_test(tc, a_double_payment_waits_for_one_approval);
    tcase_add_test(tc, refunds_are_listed_by_filter_a_page_at_a_time);
    tcase_add_test(tc, a_waiting_refund_is_made_due_by_a_retry_and_a_final_one_is_not);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("the relay through a stripe refund API", TC_TIMEOUT_S, relay_up, relay_down);
    tcase_add_test(tc, an_auto_refund_of_a_double_payment_succeeds_once_at_the_gateway);
    tcase_add_test(tc, an_approved_refund_of_a_double_payment_succeeds_after_one_approval);
    tcase_add_test(tc, a_pending_refund_is_asked_about_until_it_succeeds);
    tcase_add_test(tc, fifty_concurrent_refunds_end_as_one_refund_each_at_the_gateway);
    tcase_add_test(tc, a_refusal_fails_the_refund_alerts_and_frees_its_amount);
    tcase_add_test(tc, a_5xx_leaves_the_refund_unknown_then_the_same_number_succeeds);
    tcase_add_test(tc, a_stripe_500_kept_under_the_key_recovers_with_one_refund);
    tcase_add_test(tc, jpy_and_kwd_refunds_reach_stripe_in_their_minor_units);
    tcase_add_test(tc, a_refund_in_another_currency_or_below_its_minor_unit_is_refused);
    tcase_add_test(tc, a_timeout_leaves_the_refund_unknown_and_the_query_finds_the_one_refund);
    tcase_add_test(tc, cancelling_a_paid_order_refunds_its_payment);
    tcase_add_test(tc, a_backlog_of_refunds_drains_when_the_gateway_is_back);
    tcase_add_test(tc, refunds_wait_while_the_gateway_is_down_and_drain_when_it_is_up);
    tcase_add_test(tc, stripe_refund_notifications_move_the_refund_once);
    tcase_add_test(tc, a_stripe_refund_failed_notification_fails_the_refund);
    tcase_add_test(tc, a_charge_refunded_notification_succeeds_the_newest_refund_once);
    tcase_add_test(tc, a_stripe_refund_is_ended_by_the_gateways_later_notification);
    tcase_add_test(tc, a_refund_we_did_not_ask_for_is_recorded_and_alerted);
    tcase_add_test(tc, refund_metrics_count_by_gateway_and_state_and_age_the_oldest_double_payment);
    tcase_add_test(tc, a_refund_notification_for_another_payment_or_amount_is_not_applied);
    tcase_add_test(tc, a_settle_over_a_refund_under_way_is_refused_and_money_leaves_once);
    tcase_add_test(tc, an_approval_after_a_settle_by_hand_is_refused_and_sends_nothing);
    tcase_add_test(tc, a_settle_is_a_ledger_entry_that_leaves_no_room);
    tcase_add_test(tc, the_relay_reads_the_ledger_again_before_a_refund_leaves);
    tcase_add_test(tc, two_approvals_at_once_send_one_refund);
    tcase_add_test(
        tc, a_cancel_a_double_charge_and_an_operator_refund_together_refund_each_payment_once);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("alipay and wechat pay v3", TC_TIMEOUT_S, cn_up, cn_down);
    tcase_add_test(tc, an_alipay_double_payment_is_refunded_once_signed_both_ways);
    tcase_add_test(tc, an_alipay_answer_lost_is_found_by_the_refund_query);
    tcase_add_test(tc, an_alipay_refusal_fails_the_refund_with_its_sub_code);
    tcase_add_test(tc, a_wechat_refund_is_signed_checked_and_succeeds_once);
    tcase_add_test(tc, a_processing_wechat_refund_is_asked_about_until_success);
    tcase_add_test(tc, a_wechat_answer_lost_is_found_by_the_refund_query);
    tcase_add_test(tc, wechat_refusals_and_5xx_end_as_the_gateway_says);
    tcase_add_test(tc, a_wechat_refund_notification_succeeds_the_refund_once);
    tcase_add_test(tc, alipay_refund_notifications_replayed_forged_and_unsolicited);
    tcase_add_test(tc, a_wechat_double_payment_is_refunded_by_itself_end_to_end);
    tcase_add_test(tc, a_wechat_double_payment_is_refunded_after_one_approval);
    tcase_add_test(tc, an_alipay_double_payment_is_refunded_after_one_approval);
    tcase_add_test(tc, wechat_abnormal_closed_forged_and_unsolicited_refund_notifications);
    tcase_add_test(tc, alipay_and_wechat_refunds_are_ended_by_the_gateways_later_notification);
    tcase_add_test(tc, alipay_and_wechat_answers_not_signed_by_the_gateway_are_not_believed);
    tcase_add_test(tc, signed_answers_naming_another_number_or_amount_are_not_believed);
    tcase_add_test(tc, a_refund_in_another_currency_than_cny_is_not_sent_to_alipay_or_wechat);
    tcase_add_test(tc, merchant_keys_reload_on_sighup_and_an_open_file_is_refused); /* last */
    suite_add_tcase(s, tc);

    tc = h_tcase_with("merchant keys", TC_TIMEOUT_S, gateway_up, gateway_down);
    tcase_add_test(tc, a_merchant_key_readable_by_others_is_refused);
    tcase_add_test(tc, the_shop_receives_the_refund_events_signed_and_as_documented);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("who may move money", TC_TIMEOUT_S, keyed_up, relay_down);
    tcase_add_test(tc, four_eyes_a_refund_is_approved_by_another_key);
    tcase_add_test(tc, cancelling_a_paid_order_needs_the_refunds_scope);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("lanes", TC_TIMEOUT_S, relay_up, relay_down);
    tcase_add_test(tc, two_refunds_of_one_payment_are_never_in_flight_together);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a hung gateway", TC_TIMEOUT_S, gateway_up, gateway_down);
    tcase_add_test(tc, a_hung_gateway_does_not_delay_another_gateways_refund);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a crash mid-submission", TC_TIMEOUT_S, gateway_up, gateway_down);
    tcase_add_test(tc, a_kill_between_submission_and_answer_leaves_one_refund);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(refunds_suite, NULL, NULL);
