/* check_gw_wechat.c - unit tests for gateway_wechat.c: the signed message,
 * verification by key serial (two keys, as during a rotation), the
 * AEAD_AES_256_GCM resource, and the transaction fields. Keys and
 * ciphertexts are made at test time by testkeys.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_wechat.h"
#include "pubkey.h"
#include "../testkeys.h"
#include "../check_main.h"

#define APIV3_KEY "0123456789abcdef0123456789ABCDEF"
#define MCHID "1230000109"
#define APPID "wxd678efh567hg6787"
#define NOW_S INT64_C(1700000000)
#define TS "1700000000"
#define NONCE "fdasflkja484w"
#define WINDOW_S INT64_C(300)
#define RES_NONCE "fdasflkja484" /* 12 bytes, as WeChat sends */
#define BODY "{\"id\":\"EV-2018022511223320873\",\"event_type\":\"TRANSACTION.SUCCESS\"}"

static struct testkey *platform_old, *platform_new, *impostor;
static struct pubkey *pub_old, *pub_new;
static struct gateway_wechat_key keys[2];

static enum gateway_status verify(const char *ts, const char *nonce, const char *sig,
                                  const char *serial, const char *body)
{
    return gateway_wechat_verify(ts, nonce, sig, serial, body, body == NULL ? 0 : strlen(body),
                                 keys, 2, NOW_S, WINDOW_S);
}

/* Signs ts\nnonce\nbody\n with k, as the platform does. Caller frees. */
static char *sign(const struct testkey *k, const char *ts, const char *nonce, const char *body)
{
    char *msg = gateway_wechat_message(ts, nonce, body, strlen(body));
    char *sig = testkey_sign_b64(k, msg, strlen(msg));

    free(msg);
    return sig;
}

/* A whole notification body whose resource encrypts tx. Caller frees. */
static char *notification(const char *tx, const char *key, const char *algorithm)
{
    char *ct = testkey_gcm_encrypt_b64(key, RES_NONCE, "transaction", tx);
    char *body = malloc(strlen(ct) + 512);

    sprintf(body,
            "{\"id\":\"EV-1\",\"create_time\":\"2015-05-20T13:29:35+08:00\","
            "\"resource_type\":\"encrypt-resource\",\"event_type\":\"TRANSACTION.SUCCESS\","
            "\"summary\":\"ok\",\"resource\":{\"original_type\":\"transaction\","
            "\"algorithm\":\"%s\",\"ciphertext\":\"%s\",\"associated_data\":\"transaction\","
            "\"nonce\":\"" RES_NONCE "\"}}",
            algorithm, ct);
    free(ct);
    return body;
}

static char *transaction(const char *state, const char *amount)
{
    char *tx = malloc(512);

    snprintf(tx, 512,
             "{\"mchid\":\"" MCHID "\",\"appid\":\"" APPID "\","
             "\"out_trade_no\":\"1217752501201407033233368018\","
             "\"transaction_id\":\"4200000000000000000000000001\",\"trade_type\":\"JSAPI\","
             "\"trade_state\":\"%s\",\"amount\":%s}",
             state, amount);
    return tx;
}

START_TEST(gateway_wechat_message_joins_with_newlines)
{
    char *m = gateway_wechat_message(TS, NONCE, "{\"a\":1}", 7);

    ck_assert_str_eq(TS "\n" NONCE "\n{\"a\":1}\n", m);
    free(m);
    m = gateway_wechat_message(TS, NONCE, "", 0);
    ck_assert_str_eq(TS "\n" NONCE "\n\n", m);
    free(m);
    ck_assert_ptr_null(gateway_wechat_message(NULL, NONCE, "", 0));
}
END_TEST

START_TEST(gateway_wechat_verify_picks_the_key_by_serial)
{
    char *sig_old = sign(platform_old, TS, NONCE, BODY),
         *sig_new = sign(platform_new, TS, NONCE, BODY);

    ck_assert_int_eq(GATEWAY_OK, verify(TS, NONCE, sig_old, "SERIAL-OLD", BODY));
    ck_assert_int_eq(GATEWAY_OK, verify(TS, NONCE, sig_new, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify(TS, NONCE, sig_old, "SERIAL-NEW", BODY));
    free(sig_old);
    free(sig_new);
}
END_TEST

START_TEST(gateway_wechat_verify_refuses_an_unknown_serial)
{
    char *sig = sign(platform_new, TS, NONCE, BODY);

    ck_assert_int_eq(GATEWAY_SIG_UNKNOWN_KEY, verify(TS, NONCE, sig, "SERIAL-GONE", BODY));
    free(sig);
}
END_TEST

START_TEST(gateway_wechat_verify_refuses_another_key_or_altered_parts)
{
    char *forged = sign(impostor, TS, NONCE, BODY), *sig = sign(platform_new, TS, NONCE, BODY);

    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify(TS, NONCE, forged, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify(TS, NONCE, sig, "SERIAL-NEW", BODY " "));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify(TS, "other", sig, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISMATCH, verify("1700000001", NONCE, sig, "SERIAL-NEW", BODY));
    free(forged);
    free(sig);
}
END_TEST

START_TEST(gateway_wechat_verify_refuses_a_stale_timestamp)
{
    char *sig = sign(platform_new, "1699999699", NONCE, BODY);

    ck_assert_int_eq(GATEWAY_SIG_STALE, verify("1699999699", NONCE, sig, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_STALE, verify("17000003O1", NONCE, sig, "SERIAL-NEW", BODY));
    free(sig);
    sig = sign(platform_new, "1699999700", NONCE, BODY);
    ck_assert_int_eq(GATEWAY_OK, verify("1699999700", NONCE, sig, "SERIAL-NEW", BODY));
    free(sig);
}
END_TEST

START_TEST(gateway_wechat_verify_needs_all_four_headers)
{
    char *sig = sign(platform_new, TS, NONCE, BODY);

    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify(NULL, NONCE, sig, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify(TS, NULL, sig, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify(TS, NONCE, NULL, "SERIAL-NEW", BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify(TS, NONCE, sig, NULL, BODY));
    ck_assert_int_eq(GATEWAY_SIG_MISSING, verify(TS, NONCE, "", "SERIAL-NEW", BODY));
    free(sig);
}
END_TEST

START_TEST(gateway_wechat_decrypt_opens_the_resource)
{
    char *ct = testkey_gcm_encrypt_b64(APIV3_KEY, RES_NONCE, "transaction", "{\"x\":1}");
    char *plain = NULL;
    size_t len = 0;

    ck_assert_int_eq(GATEWAY_OK,
                     gateway_wechat_decrypt(APIV3_KEY, "transaction", RES_NONCE, ct, &plain, &len));
    ck_assert_uint_eq(7, len);
    ck_assert_str_eq("{\"x\":1}", plain);
    free(plain);
    free(ct);
}
END_TEST

START_TEST(gateway_wechat_decrypt_refuses_wrong_key_aad_nonce_or_bytes)
{
    char *ct = testkey_gcm_encrypt_b64(APIV3_KEY, RES_NONCE, "transaction", "{\"x\":1}");
    char *plain = (char *)"sentinel";
    size_t len = 9;

    ck_assert_int_eq(GATEWAY_DECRYPT_FAILED,
                     gateway_wechat_decrypt("0123456789abcdef0123456789ABCDEX", "transaction",
                                            RES_NONCE, ct, &plain, &len));
    ck_assert_ptr_null(plain);
    ck_assert_uint_eq(0, len);
    ck_assert_int_eq(GATEWAY_DECRYPT_FAILED,
                     gateway_wechat_decrypt(APIV3_KEY, "refund", RES_NONCE, ct, &plain, &len));
    ck_assert_int_eq(
        GATEWAY_DECRYPT_FAILED,
        gateway_wechat_decrypt(APIV3_KEY, "transaction", "fdasflkja485", ct, &plain, &len));
    ct[2] = ct[2] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(GATEWAY_DECRYPT_FAILED,
                     gateway_wechat_decrypt(APIV3_KEY, "transaction", RES_NONCE, ct, &plain, &len));
    ck_assert_int_eq(GATEWAY_DECRYPT_FAILED,
                     gateway_wechat_decrypt("short", "transaction", RES_NONCE, ct, &plain, &len));
    ck_assert_int_eq(
        GATEWAY_DECRYPT_FAILED,
        gateway_wechat_decrypt(APIV3_KEY, "transaction", RES_NONCE, "AAAA", &plain, &len));
    ck_assert_ptr_null(plain);
    free(ct);
}
END_TEST

START_TEST(gateway_wechat_notice_reads_a_successful_transaction)
{
    char *tx = transaction("SUCCESS", "{\"total\":100,\"payer_total\":100,\"currency\":\"CNY\","
                                      "\"payer_currency\":\"CNY\"}");
    char *body = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, APPID, &n));
    ck_assert(n.pays);
    ck_assert_str_eq("SUCCESS", n.state);
    ck_assert_str_eq("4200000000000000000000000001", n.pay_no);
    ck_assert_str_eq("1217752501201407033233368018", n.order_no);
    ck_assert_int_eq(100, n.amount_cents);
    ck_assert_str_eq("CNY", n.currency);
    free(body);
    free(tx);
}
END_TEST

START_TEST(gateway_wechat_notice_acknowledges_other_states)
{
    char *tx = transaction("CLOSED", "{\"total\":100,\"currency\":\"CNY\"}");
    char *body = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_OK,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, NULL, &n));
    ck_assert(!n.pays);
    ck_assert_str_eq("CLOSED", n.state);
    free(body);
    free(tx);
}
END_TEST

START_TEST(gateway_wechat_notice_refuses_another_merchant_or_app)
{
    char *tx = transaction("SUCCESS", "{\"total\":100,\"currency\":\"CNY\"}");
    char *body = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_WRONG_APP,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, "1900000000", APPID, &n));
    ck_assert_int_eq(GATEWAY_WRONG_APP,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, "wx0000", &n));
    ck_assert_int_eq(GATEWAY_OK,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, "", &n));
    free(body);
    free(tx);
}
END_TEST

START_TEST(gateway_wechat_notice_refuses_bad_amounts_and_currencies)
{
    const char *amounts[] = { "{\"total\":1.5,\"currency\":\"CNY\"}",
                              "{\"total\":-1,\"currency\":\"CNY\"}",
                              "{\"total\":\"100\",\"currency\":\"CNY\"}", "100" };
    char *tx, *body;
    struct gateway_notice n;
    size_t i;

    for (i = 0; i < sizeof(amounts) / sizeof(amounts[0]); i++) {
        tx = transaction("SUCCESS", amounts[i]);
        body = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
        ck_assert_int_eq(GATEWAY_BAD_AMOUNT,
                         gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, APPID, &n));
        free(body);
        free(tx);
    }
    tx = transaction("SUCCESS", "{\"total\":100,\"currency\":\"XXY\"}");
    body = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
    ck_assert_int_eq(GATEWAY_BAD_CURRENCY,
                     gateway_wechat_notice(body, strlen(body), APIV3_KEY, MCHID, APPID, &n));
    free(body);
    free(tx);
}
END_TEST

START_TEST(gateway_wechat_notice_refuses_malformed_or_undecryptable_bodies)
{
    char *tx = transaction("SUCCESS", "{\"total\":100,\"currency\":\"CNY\"}");
    char *other_alg = notification(tx, APIV3_KEY, "AEAD_AES_128_GCM");
    char *other_key = notification(tx, "ffffffffffffffffffffffffffffffff", "AEAD_AES_256_GCM");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_wechat_notice("{", 1, APIV3_KEY, MCHID, APPID, &n));
    ck_assert_int_eq(GATEWAY_MALFORMED,
                     gateway_wechat_notice("{}", 2, APIV3_KEY, MCHID, APPID, &n));
    ck_assert_int_eq(GATEWAY_MALFORMED, gateway_wechat_notice(other_alg, strlen(other_alg),
                                                              APIV3_KEY, MCHID, APPID, &n));
    ck_assert_int_eq(GATEWAY_DECRYPT_FAILED, gateway_wechat_notice(other_key, strlen(other_key),
                                                                   APIV3_KEY, MCHID, APPID, &n));
    ck_assert(!n.pays);
    free(other_alg);
    free(other_key);
    free(tx);
}
END_TEST

/* The native reader's rule: no \u0000 in any string, outside or inside
 * the encrypted resource (cJSON would cut the string there). */
START_TEST(gateway_wechat_notice_refuses_nul_in_any_string)
{
    char *tx = transaction("SUCCESS\\u0000x", "{\"total\":100,\"currency\":\"CNY\"}");
    char *inner = notification(tx, APIV3_KEY, "AEAD_AES_256_GCM");
    char *ok_tx = transaction("SUCCESS", "{\"total\":100,\"currency\":\"CNY\"}");
    char *outer = notification(ok_tx, APIV3_KEY, "AEAD_AES_256_GCM\\u0000");
    struct gateway_notice n;

    ck_assert_int_eq(GATEWAY_MALFORMED,
                     gateway_wechat_notice(inner, strlen(inner), APIV3_KEY, MCHID, APPID, &n));
    ck_assert(!n.pays);
    ck_assert_int_eq(GATEWAY_MALFORMED,
                     gateway_wechat_notice(outer, strlen(outer), APIV3_KEY, MCHID, APPID, &n));
    free(tx);
    free(inner);
    free(ok_tx);
    free(outer);
}
END_TEST

static Suite *gateway_wechat_suite(void)
{
    Suite *s = suite_create("gateway_wechat");
    TCase *tc = tcase_create("message");

    tcase_add_test(tc, gateway_wechat_message_joins_with_newlines);
    suite_add_tcase(s, tc);
    tc = tcase_create("verify");
    tcase_add_test(tc, gateway_wechat_verify_picks_the_key_by_serial);
    tcase_add_test(tc, gateway_wechat_verify_refuses_an_unknown_serial);
    tcase_add_test(tc, gateway_wechat_verify_refuses_another_key_or_altered_parts);
    tcase_add_test(tc, gateway_wechat_verify_refuses_a_stale_timestamp);
    tcase_add_test(tc, gateway_wechat_verify_needs_all_four_headers);
    suite_add_tcase(s, tc);
    tc = tcase_create("decrypt");
    tcase_add_test(tc, gateway_wechat_decrypt_opens_the_resource);
    tcase_add_test(tc, gateway_wechat_decrypt_refuses_wrong_key_aad_nonce_or_bytes);
    suite_add_tcase(s, tc);
    tc = tcase_create("notice");
    tcase_add_test(tc, gateway_wechat_notice_reads_a_successful_transaction);
    tcase_add_test(tc, gateway_wechat_notice_refuses_nul_in_any_string);
    tcase_add_test(tc, gateway_wechat_notice_acknowledges_other_states);
    tcase_add_test(tc, gateway_wechat_notice_refuses_another_merchant_or_app);
    tcase_add_test(tc, gateway_wechat_notice_refuses_bad_amounts_and_currencies);
    tcase_add_test(tc, gateway_wechat_notice_refuses_malformed_or_undecryptable_bodies);
    suite_add_tcase(s, tc);
    return s;
}

static struct pubkey *load(const struct testkey *k)
{
    char err[256], *pem = testkey_public_pem(k);
    struct pubkey *pk = pubkey_create(pem, err, sizeof(err));

    if (pk == NULL)
        fprintf(stderr, "cannot load the test key: %s\n", err);
    free(pem);
    return pk;
}

/* The platform's old and new certificates and an impostor, for the run. */
static int keys_up(void)
{
    platform_old = testkey_create();
    platform_new = testkey_create();
    impostor = testkey_create();
    if ((pub_old = load(platform_old)) == NULL || (pub_new = load(platform_new)) == NULL)
        return -1;
    keys[0] = (struct gateway_wechat_key){ "SERIAL-OLD", pub_old };
    keys[1] = (struct gateway_wechat_key){ "SERIAL-NEW", pub_new };
    return 0;
}

static void keys_down(void)
{
    pubkey_destroy(pub_old);
    pubkey_destroy(pub_new);
    testkey_destroy(platform_old);
    testkey_destroy(platform_new);
    testkey_destroy(impostor);
}

CHECK_MAIN(gateway_wechat_suite, keys_up, keys_down);
