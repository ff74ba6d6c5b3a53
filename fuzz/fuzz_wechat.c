/* fuzz_wechat.c - libFuzzer target for WeChat Pay v3 notifications: the
 * input is "Wechatpay-Timestamp\nWechatpay-Nonce\nWechatpay-Signature\n
 * Wechatpay-Serial\nbody". The headers and body go through
 * gateway_wechat_verify with a platform key made at start-up (no input can
 * forge its signature), and the body through gateway_wechat_notice as the
 * envelope it is. Since no input can forge a GCM tag either, the body is
 * also read as the transaction itself: encrypted here under the APIv3 key
 * and wrapped in an envelope, it reaches the reading that follows
 * decryption. When the signature line is empty and that transaction pays,
 * its envelope is signed here too, so the accepting path of the verifier
 * runs as well. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "currency.h"
#include "gateway_wechat.h"
#include "pubkey.h"
#include "signature.h"
#include "gateway_check.h"
#include "../tests/testkeys.h"

#define NOW_S 1700000000
#define WINDOW_S 300
#define SERIAL "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
#define APIV3_KEY "0123456789abcdef0123456789abcdef"
#define MCHID "1230000109"
#define APPID "wxd678efh567hg6787"
#define RES_NONCE "fuzzresnonce"
#define RES_AAD "transaction"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct testkey *platform; /* WeChat's private half */
static struct pubkey *platform_pub;
static struct gateway_wechat_key keys[1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[128], *pem;

    (void)argc;
    (void)argv;
    platform = testkey_create();
    pem = testkey_public_pem(platform);
    if ((platform_pub = pubkey_create(pem, err, sizeof(err))) == NULL)
        abort();
    free(pem);
    keys[0].serial = SERIAL;
    keys[0].key = platform_pub;
    return 0;
}

static int empty(const char *s)
{
    return s[0] == '\0';
}

/* The signed message is exactly ts \n nonce \n body \n. */
static void check_message(const char *ts, const char *nonce, const char *body, size_t len)
{
    char *m = gateway_wechat_message(ts, nonce, body, len);
    size_t tl = strlen(ts), nl = strlen(nonce);

    if (m == NULL || memcmp(m, ts, tl) != 0 || m[tl] != '\n' ||
        memcmp(m + tl + 1, nonce, nl) != 0 || m[tl + 1 + nl] != '\n' ||
        memcmp(m + tl + nl + 2, body, len) != 0 || m[tl + nl + 2 + len] != '\n' ||
        m[tl + nl + 3 + len] != '\0')
        abort();
    free(m);
}

/* Headers the fuzzer wrote: refused for the first reason that applies, and
 * never accepted, since the key was made after the input. */
static void check_verify(const char *ts, const char *nonce, const char *sig, const char *serial,
                         const char *body, size_t len)
{
    enum gateway_status want, st;

    if (empty(ts) || empty(nonce) || empty(sig) || empty(serial))
        want = GATEWAY_SIG_MISSING;
    else if (!sig_ts_fresh(ts, NOW_S, WINDOW_S))
        want = GATEWAY_SIG_STALE;
    else if (strcmp(serial, SERIAL) != 0)
        want = GATEWAY_SIG_UNKNOWN_KEY;
    else
        want = GATEWAY_SIG_MISMATCH;
    st = gateway_wechat_verify(ts, nonce, sig, serial, body, len, keys, 1, NOW_S, WINDOW_S);
    if (st != want)
        abort();
    st = gateway_wechat_verify(ts, nonce, sig, serial, body, len, keys, 0, NOW_S, WINDOW_S);
    if (st != (want == GATEWAY_SIG_MISMATCH ? GATEWAY_SIG_UNKNOWN_KEY : want))
        abort(); /* no key configured accepts nothing */
}

/* The envelope WeChat wraps around an encrypted transaction. */
static char *envelope(const char *ciphertext)
{
    cJSON *root = cJSON_CreateObject(), *res = cJSON_CreateObject();
    char *out;

    if (root == NULL || res == NULL || !cJSON_AddItemToObject(root, "resource", res))
        abort();
    if (cJSON_AddStringToObject(root, "id", "EV-1") == NULL ||
        cJSON_AddStringToObject(root, "event_type", "TRANSACTION.SUCCESS") == NULL ||
        cJSON_AddStringToObject(res, "algorithm", "AEAD_AES_256_GCM") == NULL ||
        cJSON_AddStringToObject(res, "ciphertext", ciphertext) == NULL ||
        cJSON_AddStringToObject(res, "associated_data", RES_AAD) == NULL ||
        cJSON_AddStringToObject(res, "nonce", RES_NONCE) == NULL ||
        (out = cJSON_PrintUnformatted(root)) == NULL)
        abort();
    cJSON_Delete(root);
    return out;
}

static const char *str_member(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* A paying notice took its fields from the transaction, and its cents are
 * exactly amount.total minor units. */
static void check_paid_from(const char *tx_text, const struct gateway_notice *n)
{
    cJSON *tx = cJSON_Parse(tx_text);
    const cJSON *amount = cJSON_GetObjectItemCaseSensitive(tx, "amount");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(amount, "total");
    int64_t minor = -1;

    if (tx == NULL || !cJSON_IsNumber(total) ||
        strcmp(str_member(tx, "trade_state"), "SUCCESS") != 0 ||
        strcmp(str_member(tx, "mchid"), MCHID) != 0 ||
        strcmp(str_member(tx, "appid"), APPID) != 0 ||
        strcmp(str_member(tx, "transaction_id"), n->pay_no) != 0 ||
        strcmp(str_member(tx, "out_trade_no"), n->order_no) != 0)
        abort();
    if (currency_cents_to_minor(n->currency, n->amount_cents, &minor) != CURRENCY_OK ||
        (double)minor != total->valuedouble)
        abort();
    cJSON_Delete(tx);
}

/* A good signature over env, made with the platform key, is accepted. */
static void check_accepts_own_signature(const char *env)
{
    char ts[24], *msg, *sig;

    snprintf(ts, sizeof(ts), "%d", NOW_S);
    msg = gateway_wechat_message(ts, RES_NONCE, env, strlen(env));
    sig = testkey_sign_b64(platform, msg, strlen(msg));
    if (gateway_wechat_verify(ts, RES_NONCE, sig, SERIAL, env, strlen(env), keys, 1, NOW_S,
                              WINDOW_S) != GATEWAY_OK)
        abort();
    free(sig);
    free(msg);
}

/* body read as the decrypted transaction. */
static void check_transaction(const char *body, int sign_it)
{
    char *ct = testkey_gcm_encrypt_b64(APIV3_KEY, RES_NONCE, RES_AAD, body);
    char *env = envelope(ct);
    struct gateway_notice n;
    enum gateway_status st = gateway_wechat_notice(env, strlen(env), APIV3_KEY, MCHID, APPID, &n);

    gateway_check_notice(st, &n);
    if (st == GATEWAY_DECRYPT_FAILED || st == GATEWAY_ERROR)
        abort(); /* its own ciphertext must open */
    if (st == GATEWAY_OK && n.pays) {
        check_paid_from(body, &n);
        if (sign_it)
            check_accepts_own_signature(env);
    }
    st = gateway_wechat_notice(env, strlen(env), "0123456789abcdef0123456789abcdeX", MCHID, APPID,
                               &n);
    if (st != GATEWAY_DECRYPT_FAILED)
        abort(); /* another APIv3 key opens nothing */
    gateway_check_notice(st, &n);
    cJSON_free(env);
    free(ct);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t left = size;
    char *ts = gateway_take_line(&p, &left), *nonce = gateway_take_line(&p, &left);
    char *sig = gateway_take_line(&p, &left), *serial = gateway_take_line(&p, &left);
    char *body = gateway_take_body(p, left);
    struct gateway_notice n;
    enum gateway_status st;

    if (ts == NULL || nonce == NULL || sig == NULL || serial == NULL || body == NULL)
        goto out;
    check_message(ts, nonce, body, left);
    check_verify(ts, nonce, sig, serial, body, left);
    st = gateway_wechat_notice(body, left, APIV3_KEY, MCHID, APPID, &n);
    gateway_check_notice(st, &n);
    check_transaction(body, empty(sig));
out:
    free(ts);
    free(nonce);
    free(sig);
    free(serial);
    free(body);
    return 0;
}
