/* check_gateway_wechat.c - POST /pay/callback/{gateway} for a wechatpay_v3
 * profile, against the real binary, MariaDB and Redis: notifications built
 * as WeChat Pay v3 documents them (resource encrypted with
 * AEAD_AES_256_GCM under the APIv3 key, body signed SHA256withRSA over
 * "timestamp\nnonce\nbody\n" by a platform key named in Wechatpay-Serial),
 * the 204 acknowledgement and the {"code":"FAIL"} refusals. The driver
 * below runs the shared scenarios of gateway_scenarios.c; a platform key
 * rotation, an unknown serial and a resource under another APIv3 key are
 * WeChat Pay's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway_scenarios.h"
#include "harness.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APIV3_KEY "0123456789abcdefghijklmnopqrstuv"
#define MCHID "1230000109"
#define APPID "wxd678efh567hg6787"
#define SERIAL_OLD "3A1B2C3D4E5F60718293A4B5C6D7E8F901234567"
#define SERIAL_NEW "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
#define ROUTE "/pay/callback/wechat"
#define PRICE GW_PRICE
#define TC_TIMEOUT_S 60
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
    snprintf(cfg, sizeof cfg,
             "{\"gateways\": [{\"name\": \"wechat\", \"kind\": \"wechatpay_v3\","
             " \"mchid\": \"" MCHID "\", \"app_id\": \"" APPID "\", \"tolerance_s\": 300,"
             " \"secret_env\": \"TEST_WECHAT_APIV3_KEY\", \"platform_keys\": ["
             "{\"serial\": \"" SERIAL_OLD "\", \"public_key_file\": \"%s\"},"
             "{\"serial\": \"" SERIAL_NEW "\", \"public_key_file\": \"%s\"}]}]}",
             key_old, key_new);
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
    snprintf(out, n,
             "{\"mchid\":\"%s\",\"appid\":\"" APPID "\",\"out_trade_no\":\"%s\","
             "\"transaction_id\":\"%s\",\"trade_type\":\"NATIVE\",\"trade_state\":\"%s\","
             "\"trade_state_desc\":\"ok\",\"bank_type\":\"OTHERS\",\"attach\":\"\","
             "\"success_time\":\"2024-01-01T10:00:05+08:00\",\"payer\":{\"openid\":\"o1\"},"
             "\"amount\":{\"total\":%s,\"payer_total\":%s,\"currency\":\"%s\","
             "\"payer_currency\":\"%s\"}}",
             mchid, order_no, tx_id, state, fen, fen, currency, currency);
}

/* The notification body around tx, encrypted with key. */
static void notification(char *out, size_t n, const char *tx, const char *key)
{
    char *ct = testkey_gcm_encrypt_b64(key, "6f9a2c4e8b1d", "transaction", tx);

    snprintf(out, n,
             "{\"id\":\"EV-1\",\"create_time\":\"2024-01-01T10:00:06+08:00\","
             "\"resource_type\":\"encrypt-resource\",\"event_type\":\"TRANSACTION.SUCCESS\","
             "\"summary\":\"ok\",\"resource\":{\"original_type\":\"transaction\","
             "\"algorithm\":\"AEAD_AES_256_GCM\",\"ciphertext\":\"%s\","
             "\"associated_data\":\"transaction\",\"nonce\":\"6f9a2c4e8b1d\"}}",
             ct);
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

/* ---- the driver of the shared scenarios ----------------------------------- */

static const char *const idle_states[] = { "NOTPAY", "CLOSED", "PAYERROR", NULL };

static const struct gw_malformed malformed[] = {
    { "not json", 400 },
    { "{}", 400 },
    { "{\"resource\":{\"algorithm\":\"AEAD_AES_256_GCM\"}}", 401 }, /* nothing decrypts */
    { NULL, 0 },
};

/* Copies the signed headers h into rq, all but the one at skip (-1: none). */
static void take_headers(struct gw_request *rq, const struct signed_headers *h, int skip)
{
    int i, n = 0;

    for (i = 0; h->v[i] != NULL; i++)
        if (i != skip)
            snprintf(rq->header[n++], sizeof rq->header[0], "%s", h->v[i]);
    gw_headers(rq, n);
}

static void seal(struct gw_request *rq)
{
    struct signed_headers h;

    sign(&h, platform_new, SERIAL_NEW, (long long)time(NULL), rq->body);
    take_headers(rq, &h, -1);
}

/* A notification is an encrypted transaction in a body signed in headers:
 * the twists change the transaction, the signing, or the body after it. */
static void build(struct gw_request *rq, const struct gw_pay *p, enum gw_twist t)
{
    char tx[1024], fen[24];
    struct signed_headers h;
    long long ts = (long long)time(NULL);

    snprintf(fen, sizeof fen, "%lld", p->amount_cents);
    transaction(tx, sizeof tx, t == GW_OTHER_APP ? "1900000000" : MCHID, p->pay_no, p->order_no,
                fen, t == GW_OTHER_CURRENCY ? "USD" : "CNY",
                p->state != NULL ? p->state
                : t == GW_NUL    ? "SUCCESS\\u0000x"
                                 : "SUCCESS");
    notification(rq->body, sizeof rq->body, tx, APIV3_KEY);
    sign(&h, t == GW_FOREIGN_KEY ? impostor : platform_new, SERIAL_NEW,
         t == GW_STALE ? ts - 306 : ts, rq->body);
    if (t == GW_ALTERED)
        memcpy(strstr(rq->body, "EV-1"), "EV-2", 4);
    take_headers(rq, &h, t == GW_UNSIGNED ? 4 : -1); /* 4: Wechatpay-Signature */
}

static int acked(const struct h_resp *r)
{
    return r->status == 204 && r->body_len == 0;
}

/* WeChat resends on any 4xx/5xx carrying {"code":"FAIL","message":...}. */
static const char *refused(const struct h_resp *r, int status, const char *code)
{
    (void)code; /* always FAIL */
    return h_check_error(r, status, "FAIL");
}

static const struct gw_driver driver = {
    .name = "wechat",
    .currency = "CNY",
    .twists = GW_CAN(GW_FOREIGN_KEY) | GW_CAN(GW_ALTERED) | GW_CAN(GW_UNSIGNED) | GW_CAN(GW_STALE) |
              GW_CAN(GW_OTHER_APP) | GW_CAN(GW_OTHER_CURRENCY) | GW_CAN(GW_NUL),
    .altered_price = PRICE, /* the event id is altered */
    .idle = idle_states,
    .malformed = malformed,
    .build = build,
    .seal = seal,
    .acked = acked,
    .refused = refused,
};

/* ---- what only WeChat Pay does --------------------------------------------- */

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
    gw_assert_refused(&r, status, NULL);
    h_resp_free(&r);
    h_assert_nothing_paid();
    ck_assert_int_eq(before + 1, h_metric(series));
}

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
    gw_assert_ack(&r);
    h_resp_free(&r);
    ck_assert_int_eq(2, h_order_status("O1"));
}
END_TEST

START_TEST(unknown_serial_is_refused)
{
    char tx[1024], body[4096];
    struct signed_headers h;

    h_db_insert_order_in("O1", PRICE, "CNY");
    transaction(tx, sizeof tx, MCHID, "4200000001", "O1", "89900", "CNY", "SUCCESS");
    notification(body, sizeof body, tx, APIV3_KEY);
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

static Suite *gateway_wechat_suite(void)
{
    Suite *s = suite_create("gateway_wechat");
    TCase *tc;

    tc = h_tcase_with("a successful transaction pays once", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_PAYS, &driver);
    tcase_add_test(tc, the_previous_platform_key_still_verifies_during_a_rotation);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unsigned notifications are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_REFUSED, &driver);
    tcase_add_test(tc, unknown_serial_is_refused);
    tcase_add_test(tc, resource_encrypted_with_another_key_is_refused);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("unmatched payments are refused", TC_TIMEOUT_S, server_up, server_down);
    gw_scenarios_add(tc, GW_UNMATCHED, &driver);
    suite_add_tcase(s, tc);

    tc = h_tcase_with("a mysql outage loses nothing", SLOW_TIMEOUT_S, server_up, server_down);
    tcase_add_unchecked_fixture(tc, NULL, h_fixture_mysql_back);
    gw_scenarios_add(tc, GW_OUTAGE, &driver);
    suite_add_tcase(s, tc);
    return s;
}

CHECK_MAIN(gateway_wechat_suite, NULL, NULL);
