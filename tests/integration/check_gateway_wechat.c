/* check_gateway_wechat.c - POST /pay/callback/{gateway} for a wechatpay_v3
 * profile, against the real binary, MariaDB and Redis: notifications built
 * as WeChat Pay v3 documents them (resource encrypted with
 * AEAD_AES_256_GCM under the APIv3 key, body signed SHA256withRSA over
 * "timestamp\nnonce\nbody\n" by a platform key named in Wechatpay-Serial),
 * the 204 acknowledgement and the {"code":"FAIL"} refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APIV3_KEY      "0123456789abcdefghijklmnopqrstuv"
#define MCHID          "1230000109"
#define APPID          "wxd678efh567hg6787"
#define SERIAL_OLD     "3A1B2C3D4E5F60718293A4B5C6D7E8F901234567"
#define SERIAL_NEW     "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
#define ROUTE          "/pay/callback/wechat"
#define PRICE          "899.00"
#define STORM_TOTAL    100
#define TC_TIMEOUT_S   60
#define SLOW_TIMEOUT_S 120

static struct testkey *platform_old, *platform_new, *impostor;
static char key_old[H_TEMP_PATH_MAX], key_new[H_TEMP_PATH_MAX], config_path[H_TEMP_PATH_MAX];

static void server_up(void)
{
    static const char *const env[] = { "TEST_WECHAT_APIV3_KEY=" APIV3_KEY, NULL };
    char cfg[2048];

    platform_old = testkey_create();
    platform_new = testkey_create();
    impostor = testkey_create();
    h_temp_file(key_old, "");
    h_temp_file(key_new, "");
    testkey_write_public(platform_old, key_old);
    testkey_write_public(platform_new, key_new);
    snprintf(cfg, sizeof cfg, "{\"gateways\": [{\"name\": \"wechat\", \"kind\": \"wechatpay_v3\","
             " \"mchid\": \"" MCHID "\", \"app_id\": \"" APPID "\", \"tolerance_s\": 300,"
             " \"secret_env\": \"TEST_WECHAT_APIV3_KEY\", \"platform_keys\": ["
             "{\"serial\": \"" SERIAL_OLD "\", \"public_key_file\": \"%s\"},"
             "{\"serial\": \"" SERIAL_NEW "\", \"public_key_file\": \"%s\"}]}]}", key_old, key_new);
    h_temp_file(config_path, cfg);
    h_fixture_server_up_config(config_path, env);
}

static void server_down(void)
{
    h_fixture_server_down();
    unlink(config_path);
    unlink(key_old);
    unlink(key_new);
    testkey_destroy(platform_old);
    testkey_destroy(platform_new);
    testkey_destroy(impostor);
}

/* The decrypted transaction of a notification. */
static void transaction(char *out, size_t n, const char *mchid, const char *tx_id,
                        const char *order_no, const char *fen, const char *currency,
                        const char *state)
{
    snprintf(out, n, "{\"mchid\":\"%s\",\"appid\":\"" APPID "\",\"out_trade_no\":\"%s\","
             "\"transaction_id\":\"%s\",\"trade_type\":\"NATIVE\",\"trade_state\":\"%s\","
             "\"trade_state_desc\":\"ok\",\"bank_type\":\"OTHERS\",\"attach\":\"\","
             "\"success_time\":\"2024-01-01T10:00:05+08:00\",\"payer\":{\"openid\":\"o1\"},"
             "\"amount\":{\"total\":%s,\"payer_total\":%s,\"currency\":\"%s\","
             "\"payer_currency\":\"%s\"}}", mchid, order_no, tx_id, state, fen, fen, currency,
             currency);
}

/* The notification body around tx, encrypted with key. */
static void notification(char *out, size_t n, const char *tx, const char *key)
{
    char *ct = testkey_gcm_encrypt_b64(key, "6f9a2c4e8b1d", "transaction", tx);

    snprintf(out, n, "{\"id\":\"EV-1\",\"create_time\":\"2024-01-01T10:00:06+08:00\","
             "\"resource_type\":\"encrypt-resource\",\"event_type\":\"TRANSACTION.SUCCESS\","
             "\"summary\":\"ok\",\"resource\":{\"original_type\":\"transaction\","
             "\"algorithm\":\"AEAD_AES_256_GCM\",\"ciphertext\":\"%s\","
             "\"associated_data\":\"transaction\",\"nonce\":\"6f9a2c4e8b1d\"}}", ct);
    free(ct);
}

/* The four Wechatpay-* headers of body signed by key at ts. */
struct signed_headers {
    char ts[48], nonce[64], serial[80], sig[512];
    const char *v[6];
};

static void sign(struct signed_headers *h, const struct testkey *key, const char *serial,
                 long long ts, const char *body)
{
    char t[24], *msg, *sig;
    size_t len;

    snprintf(t, sizeof t, "%lld", ts);
    len = strlen(t) + strlen(body) + 64;
    msg = malloc(len);
    snprintf(msg, len, "%s\n%s\n%s\n", t, "593BEC0C930BF1AFEB40B4A08C8FB242", body);
    sig = testkey_sign_b64(key, msg, strlen(msg));
    snprintf(h->ts, sizeof h->ts, "Wechatpay-Timestamp: %s", t);
    snprintf(h->nonce, sizeof h->nonce, "Wechatpay-Nonce: 593BEC0C930BF1AFEB40B4A08C8FB242");
    snprintf(h->serial, sizeof h->serial, "Wechatpay-Serial: %s", serial);
    snprintf(h->sig, sizeof h->sig, "Wechatpay-Signature: %s", sig);
    h->v[0] = "Content-Type: application/json";
    h->v[1] = h->ts;
    h->v[2] = h->nonce;
    h->v[3] = h->serial;
    h->v[4] = h->sig;
    h->v[5] = NULL;
    free(sig);
    free(msg);
}

static void post_signed(const struct signed_headers *h, const char *body, struct h_resp *r)
{
    h_http(h_port(), "POST", ROUTE, h->v, body, strlen(body), r);
}

/* Posts body signed now by the current platform key. */
static void post(const char *body, struct h_resp *r)
{
    struct signed_headers h;

    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    post_signed(&h, body, r);
}

/* A paying notification for order_no of fen in currency, posted signed. */
static void pay(const char *tx_id, const char *order_no, const char *fen, const char *currency,
                struct h_resp *r)
{
    char tx[1024], body[4096];

    transaction(tx, sizeof tx, MCHID, tx_id, order_no, fen, currency, "SUCCESS");
    notification(body, sizeof body, tx, APIV3_KEY);
    post(body, r);
}

static void assert_ack(const struct h_resp *r)
{
    ck_assert_msg(r->status == 204, "expected 204, got %d: %s", r->status, r->body);
    ck_assert_uint_eq(0, r->body_len);
}

/* WeChat resends on any 4xx/5xx carrying {"code":"FAIL","message":...}. */
static void assert_fail(const struct h_resp *r, int status)
{
    ck_assert_msg(h_check_error(r, status, "FAIL") == NULL, "%s", h_check_error(r, status, "FAIL"));
}

/* ---- the happy path, replays and the storm -------------------------------- */

START_TEST(successful_transaction_pays_the_order_and_answers_204)
{
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    pay("4200000000202401010000000001", "O1", "89900", "CNY", &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_db_scalar_ll("SELECT COUNT(*) FROM payment_record WHERE pay_no = "
                                       "'4200000000202401010000000001' AND order_no = 'O1' "
                                       "AND amount = 899.00"));
    ck_assert_int_eq(2, h_order_status("O1"));
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(1, h_metric("paycallback_gateway_notifications_total{gateway=\"wechat\","
                               "result=\"PAID\"}"));
}
END_TEST

START_TEST(the_previous_platform_key_still_verifies_during_a_rotation)
{
    char tx[1024], body[4096];
    struct signed_headers h;
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    transaction(tx, sizeof tx, MCHID, "4200000001", "O1", "89900", "CNY", "SUCCESS");
    notification(body, sizeof body, tx, APIV3_KEY);
    sign(&h, platform_old, SERIAL_OLD, (long long)time(NULL), body);
    post_signed(&h, body, &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

START_TEST(replayed_notification_answers_204_and_writes_once)
{
    struct h_resp r;
    int i;

    h_db_insert_order_in("O1", PRICE, "CNY");
    for (i = 0; i < 3; i++) {
        pay("4200000001", "O1", "89900", "CNY", &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
}
END_TEST

struct storm_arg {
    const char *body;
    const char *const *headers;
    int status[STORM_TOTAL];
};

static int storm_call(int i, void *p)
{
    struct storm_arg *a = p;
    struct h_resp r;
    int rc = h_http(h_port(), "POST", ROUTE, a->headers, a->body, strlen(a->body), &r);

    a->status[i] = r.status;
    h_resp_free(&r);
    return rc != 0 || a->status[i] != 204;
}

START_TEST(storm_of_identical_notifications_pays_exactly_once)
{
    static struct storm_arg a;
    static char tx[1024], body[4096];
    static struct signed_headers h;
    struct h_storm_stats st;
    int i, ok = 0;

    h_db_insert_order_in("OSTORM", PRICE, "CNY");
    transaction(tx, sizeof tx, MCHID, "4200000STORM", "OSTORM", "89900", "CNY", "SUCCESS");
    notification(body, sizeof body, tx, APIV3_KEY);
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    a.body = body;
    a.headers = h.v;
    ck_assert_int_eq(0, h_storm(STORM_TOTAL, STORM_TOTAL, storm_call, &a, &st));
    for (i = 0; i < STORM_TOTAL; i++)
        ok += a.status[i] == 204;
    printf("wechat storm: %d identical notifications, %d answered 204, %.0f req/s\n",
           STORM_TOTAL, ok, st.rps);
    ck_assert_int_eq(STORM_TOTAL, ok);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(1, h_outbox_rows());
    ck_assert_int_eq(2, h_order_status("OSTORM"));
}
END_TEST

START_TEST(non_paying_states_answer_204_and_change_nothing)
{
    const char *states[] = { "NOTPAY", "CLOSED", "PAYERROR" };
    char tx[1024], body[4096];
    struct h_resp r;
    size_t i;

    h_db_insert_order_in("O1", PRICE, "CNY");
    for (i = 0; i < sizeof states / sizeof states[0]; i++) {
        transaction(tx, sizeof tx, MCHID, "4200000001", "O1", "89900", "CNY", states[i]);
        notification(body, sizeof body, tx, APIV3_KEY);
        post(body, &r);
        assert_ack(&r);
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
    ck_assert_int_eq(1, h_order_status("O1"));
}
END_TEST

/* ---- signature failures ---------------------------------------------------- */

static void assert_refused(const struct signed_headers *h, const char *body, int status,
                           const char *reason)
{
    char series[160];
    struct h_resp r;
    long long before;

    snprintf(series, sizeof series,
             "paycallback_gateway_rejected_total{gateway=\"wechat\",reason=\"%s\"}", reason);
    before = h_metric(series);
    if (before < 0)
        before = 0;
    post_signed(h, body, &r);
    assert_fail(&r, status);
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(before + 1, h_metric(series));
}

/* A good paying notification for O1 into body. */
static void good_body(char *body, size_t n)
{
    char tx[1024];

    h_db_insert_order_in("O1", PRICE, "CNY");
    transaction(tx, sizeof tx, MCHID, "4200000001", "O1", "89900", "CNY", "SUCCESS");
    notification(body, n, tx, APIV3_KEY);
}

START_TEST(notification_signed_with_another_key_is_refused)
{
    char body[4096];
    struct signed_headers h;

    good_body(body, sizeof body);
    sign(&h, impostor, SERIAL_NEW, (long long)time(NULL), body);
    assert_refused(&h, body, 401, "signature_mismatch");
}
END_TEST

START_TEST(altered_body_is_refused)
{
    char body[4096];
    struct signed_headers h;

    good_body(body, sizeof body);
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    memcpy(strstr(body, "EV-1"), "EV-2", 4);
    assert_refused(&h, body, 401, "signature_mismatch");
}
END_TEST

START_TEST(stale_timestamp_is_refused)
{
    char body[4096];
    struct signed_headers h;

    good_body(body, sizeof body);
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL) - 306, body);
    assert_refused(&h, body, 401, "timestamp_stale");
}
END_TEST

START_TEST(missing_header_is_refused)
{
    char body[4096];
    struct signed_headers h;

    good_body(body, sizeof body);
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    h.v[4] = NULL;                            /* no Wechatpay-Signature */
    assert_refused(&h, body, 401, "signature_missing");
}
END_TEST

START_TEST(unknown_serial_is_refused)
{
    char body[4096];
    struct signed_headers h;

    good_body(body, sizeof body);
    sign(&h, platform_new, "00000000000000000000000000000000000000FF", (long long)time(NULL), body);
    assert_refused(&h, body, 401, "unknown_serial");
}
END_TEST

START_TEST(resource_encrypted_with_another_key_is_refused)
{
    char tx[1024], body[4096];
    struct signed_headers h;

    h_db_insert_order_in("O1", PRICE, "CNY");
    transaction(tx, sizeof tx, MCHID, "4200000001", "O1", "89900", "CNY", "SUCCESS");
    notification(body, sizeof body, tx, "vutsrqponmlkjihgfedcba9876543210");
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    assert_refused(&h, body, 401, "decrypt_failed");
}
END_TEST

START_TEST(another_merchant_is_refused)
{
    char tx[1024], body[4096];
    struct signed_headers h;

    h_db_insert_order_in("O1", PRICE, "CNY");
    transaction(tx, sizeof tx, "1900000000", "4200000001", "O1", "89900", "CNY", "SUCCESS");
    notification(body, sizeof body, tx, APIV3_KEY);
    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), body);
    assert_refused(&h, body, 403, "wrong_app");
}
END_TEST

START_TEST(malformed_json_is_refused)
{
    const char *bodies[] = { "not json", "{}", "{\"resource\":{\"algorithm\":\"AEAD_AES_256_GCM\"}}" };
    struct h_resp r;
    size_t i;

    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        post(bodies[i], &r);
        ck_assert_msg(r.status == 400 || r.status == 401, "body %s: got %d", bodies[i], r.status);
        assert_fail(&r, r.status);
        h_resp_free(&r);
    }
    h_assert_nothing_paid();
}
END_TEST

/* ---- payments that do not match ------------------------------------------ */

START_TEST(notification_in_another_currency_is_amount_mismatch)
{
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    pay("4200000001", "O1", "89900", "USD", &r);
    assert_fail(&r, 422);
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

START_TEST(notification_with_another_amount_is_amount_mismatch)
{
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    pay("4200000001", "O1", "89800", "CNY", &r);
    assert_fail(&r, 422);
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

START_TEST(notification_for_an_unknown_order_is_refused)
{
    struct h_resp r;

    pay("4200000001", "NOPE", "89900", "CNY", &r);
    assert_fail(&r, 404);
    h_resp_free(&r);
    h_assert_nothing_paid();
}
END_TEST

/* ---- MySQL outage ---------------------------------------------------------- */

START_TEST(mysql_outage_answers_fail_so_wechat_retries)
{
    struct h_resp r;

    h_db_insert_order_in("O1", PRICE, "CNY");
    h_services("stop-mysql");
    pay("4200000001", "O1", "89900", "CNY", &r);
    assert_fail(&r, 503);
    ck_assert_ptr_nonnull(h_resp_header(&r, "Retry-After"));
    h_resp_free(&r);
    h_services("start-mysql");
    pay("4200000001", "O1", "89900", "CNY", &r);
    assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(1, h_payment_records());
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

static Suite *gateway_wechat_suite(void)
{
    Suite *s = suite_create("gateway_wechat");
    TCase *tc;

    tc = h_tcase_with("a successful transaction pays once", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, successful_transaction_pays_the_order_and_answers_204);
    tcase_add_test(tc, the_previous_platform_key_still_verifies_during_a_rotation);
    tcase_add_test(tc, replayed_notification_answers_204_and_writes_once);
    tcase_add_test(tc, storm_of_identical_notifications_pays_exactly_once);
    tcase_add_test(tc, non_paying_states_answer_204_and_change_nothing);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned notifications are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, notification_signed_with_another_key_is_refused);
    tcase_add_test(tc, altered_body_is_refused);
    tcase_add_test(tc, stale_timestamp_is_refused);
    tcase_add_test(tc, missing_header_is_refused);
    tcase_add_test(tc, unknown_serial_is_refused);
    tcase_add_test(tc, resource_encrypted_with_another_key_is_refused);
    tcase_add_test(tc, another_merchant_is_refused);
    tcase_add_test(tc, malformed_json_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    tcase_add_test(tc, notification_in_another_currency_is_amount_mismatch);
    tcase_add_test(tc, notification_with_another_amount_is_amount_mismatch);
    tcase_add_test(tc, notification_for_an_unknown_order_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    tcase_add_test(tc, mysql_outage_answers_fail_so_wechat_retries);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_wechat_suite, NULL, NULL);
