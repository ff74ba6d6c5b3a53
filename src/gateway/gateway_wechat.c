/* gateway_wechat.c - WeChat Pay v3 notification verification, decryption and
 * reading. The body is signed as sent, so it is verified before it is
 * parsed; the resource is only trusted once its GCM tag checks. */
#include "gateway_wechat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "b64.h"
#include "jsonutil.h"
#include "pubkey.h"
#include "signature.h"

char *gateway_wechat_message(const char *ts, const char *nonce, const char *body, size_t body_len)
{
    size_t tl, nl;
    char *m;

    if (ts == NULL || nonce == NULL || (body == NULL && body_len > 0))
        return NULL;
    tl = strlen(ts);
    nl = strlen(nonce);
    if ((m = malloc(tl + nl + body_len + 4)) == NULL)
        return NULL;
    memcpy(m, ts, tl);
    m[tl] = '\n';
    memcpy(m + tl + 1, nonce, nl);
    m[tl + 1 + nl] = '\n';
    if (body_len > 0)
        memcpy(m + tl + nl + 2, body, body_len);
    m[tl + nl + 2 + body_len] = '\n';
    m[tl + nl + 3 + body_len] = '\0';
    return m;
}

static int empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

enum gateway_status gateway_wechat_verify(const char *ts, const char *nonce, const char *signature,
                                          const char *serial, const char *body, size_t body_len,
                                          const struct gateway_wechat_key *keys, size_t nkeys,
                                          int64_t now_s, int64_t tolerance_s)
{
    const struct pubkey *key = NULL;
    struct pubkey_part parts[6];
    enum pubkey_status ps;
    size_t i;

    if (empty(ts) || empty(nonce) || empty(signature) || empty(serial))
        return GATEWAY_SIG_MISSING;
    if (body == NULL && body_len > 0)
        return GATEWAY_MALFORMED;
    if (!sig_ts_fresh(ts, now_s, tolerance_s))
        return GATEWAY_SIG_STALE;
    for (i = 0; i < nkeys && key == NULL; i++)
        if (keys[i].serial != NULL && strcmp(keys[i].serial, serial) == 0)
            key = keys[i].key;
    if (key == NULL)
        return GATEWAY_SIG_UNKNOWN_KEY;
    parts[0] = (struct pubkey_part){ ts, strlen(ts) };
    parts[1] = (struct pubkey_part){ "\n", 1 };
    parts[2] = (struct pubkey_part){ nonce, strlen(nonce) };
    parts[3] = (struct pubkey_part){ "\n", 1 };
    parts[4] = (struct pubkey_part){ body, body_len };
    parts[5] = (struct pubkey_part){ "\n", 1 };
    /* The same bytes as gateway_wechat_message, fed in pieces so the body,
     * which may be as large as the request cap, is never copied. */
    ps = pubkey_verify(key, parts, 6, signature);
    if (ps == PUBKEY_OK)
        return GATEWAY_OK;
    return ps == PUBKEY_ERROR ? GATEWAY_ERROR : GATEWAY_SIG_MISMATCH;
}

enum gateway_status gateway_wechat_decrypt(const char *apiv3_key, const char *associated_data,
                                           const char *nonce, const char *ciphertext_b64,
                                           char **plain, size_t *plain_len)
{
    enum gateway_status st = GATEWAY_DECRYPT_FAILED;
    EVP_CIPHER_CTX *ctx = NULL;
    unsigned char *ct = NULL, *pt = NULL;
    size_t ctlen = 0, datalen;
    int n = 0, fin = 0;

    if (plain != NULL)
        *plain = NULL;
    if (plain_len != NULL)
        *plain_len = 0;
    if (plain == NULL || plain_len == NULL || apiv3_key == NULL || empty(nonce) ||
        ciphertext_b64 == NULL || strlen(apiv3_key) != GATEWAY_WECHAT_APIV3_KEY_LEN)
        return GATEWAY_DECRYPT_FAILED;
    if (b64_decode(ciphertext_b64, strlen(ciphertext_b64), &ct, &ctlen) != 0 ||
        ctlen < GATEWAY_WECHAT_TAG_LEN || ctlen > INT32_MAX)
        goto out;
    datalen = ctlen - GATEWAY_WECHAT_TAG_LEN;
    st = GATEWAY_ERROR;
    if ((pt = malloc(datalen + 1)) == NULL || (ctx = EVP_CIPHER_CTX_new()) == NULL)
        goto out;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)strlen(nonce), NULL) != 1 ||
        EVP_DecryptInit_ex(ctx, NULL, NULL, (const unsigned char *)apiv3_key,
                           (const unsigned char *)nonce) != 1)
        goto out;
    if (!empty(associated_data) &&
        EVP_DecryptUpdate(ctx, NULL, &n, (const unsigned char *)associated_data,
                          (int)strlen(associated_data)) != 1)
        goto out;
    if (EVP_DecryptUpdate(ctx, pt, &n, ct, (int)datalen) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, GATEWAY_WECHAT_TAG_LEN, ct + datalen) != 1)
        goto out;
    /* Final is where GCM checks the tag: a failure here is a forged or
     * corrupted resource, or a wrong APIv3 key, never an internal error. */
    if (EVP_DecryptFinal_ex(ctx, pt + n, &fin) != 1) {
        st = GATEWAY_DECRYPT_FAILED;
        goto out;
    }
    pt[n + fin] = '\0';
    *plain = (char *)pt;
    *plain_len = (size_t)n + (size_t)fin;
    pt = NULL;
    st = GATEWAY_OK;
out:
    EVP_CIPHER_CTX_free(ctx);
    free(ct);
    free(pt);
    return st;
}

static const char *str_member(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* The decrypted transaction, checked against the profile. */
static enum gateway_status read_transaction(const cJSON *tx, const char *mchid, const char *app_id,
                                            struct gateway_notice *n)
{
    const char *state = str_member(tx, "trade_state");
    const char *got_mchid = str_member(tx, "mchid");
    const char *got_app = str_member(tx, "appid");
    const cJSON *amount = cJSON_GetObjectItemCaseSensitive(tx, "amount");
    int64_t fen = 0;

    if (!cJSON_IsObject(tx))
        return GATEWAY_MALFORMED;
    if (got_mchid == NULL || mchid == NULL || strcmp(got_mchid, mchid) != 0)
        return GATEWAY_WRONG_APP;
    if (!empty(app_id) && (got_app == NULL || strcmp(got_app, app_id) != 0))
        return GATEWAY_WRONG_APP;
    if (empty(state) || strlen(state) >= sizeof(n->state))
        return GATEWAY_MALFORMED;
    memcpy(n->state, state, strlen(state) + 1);
    if (strcmp(state, "SUCCESS") != 0)
        return GATEWAY_OK; /* acknowledged, nothing to apply */
    if (gateway_copy_id(n->pay_no, str_member(tx, "transaction_id")) != 0 ||
        gateway_copy_id(n->order_no, str_member(tx, "out_trade_no")) != 0)
        return GATEWAY_MALFORMED;
    if (!cJSON_IsObject(amount) ||
        gateway_json_amount(cJSON_GetObjectItemCaseSensitive(amount, "total"), INT64_MAX, &fen) !=
            0)
        return GATEWAY_BAD_AMOUNT;
    if (currency_normalize(str_member(amount, "currency"), n->currency) != CURRENCY_OK)
        return GATEWAY_BAD_CURRENCY;
    if (currency_minor_to_cents(n->currency, fen, &n->amount_cents) != CURRENCY_OK)
        return GATEWAY_BAD_AMOUNT;
    n->pays = true;
    return GATEWAY_OK;
}

/* A decrypted refund resource (REFUND.SUCCESS / ABNORMAL / CLOSED), checked
 * against the profile's merchant id. */
static enum gateway_status read_refund_resource(const cJSON *tx, const char *mchid,
                                                struct gateway_notice *n)
{
    const char *got = str_member(tx, "mchid"), *st = str_member(tx, "refund_status");
    const cJSON *amount;
    int64_t fen = 0;

    if (got == NULL || mchid == NULL || strcmp(got, mchid) != 0)
        return GATEWAY_WRONG_APP;
    if (st == NULL)
        return GATEWAY_MALFORMED;
    n->refund = strcmp(st, "SUCCESS") == 0 ? GATEWAY_REFUND_SUCCEEDED
                : strcmp(st, "CLOSED") == 0 || strcmp(st, "ABNORMAL") == 0 ? GATEWAY_REFUND_FAILED
                                                                           : GATEWAY_REFUND_PENDING;
    gateway_copy_id(n->refund_no, str_member(tx, "out_refund_no"));
    gateway_copy_id(n->refund_id, str_member(tx, "refund_id"));
    gateway_copy_id(n->pay_no, str_member(tx, "transaction_id"));
    /* amount.refund: this refund's, in fen (WeChat Pay refunds CNY) */
    amount = cJSON_GetObjectItemCaseSensitive(tx, "amount");
    if (cJSON_IsObject(amount) &&
        gateway_json_amount(cJSON_GetObjectItemCaseSensitive(amount, "refund"), INT64_MAX, &fen) ==
            0 &&
        currency_minor_to_cents(CURRENCY_DEFAULT, fen, &n->refund_amount_cents) == CURRENCY_OK)
        n->refund_has_amount = true;
    if (n->refund == GATEWAY_REFUND_FAILED)
        snprintf(n->refund_code, sizeof(n->refund_code), "%s", st);
    return GATEWAY_OK;
}

enum gateway_status gateway_wechat_notice(const char *body, size_t body_len, const char *apiv3_key,
                                          const char *mchid, const char *app_id,
                                          struct gateway_notice *n)
{
    enum gateway_status st = GATEWAY_MALFORMED;
    cJSON *root = NULL, *tx = NULL;
    const cJSON *res;
    const char *algo;
    char *plain = NULL;
    size_t plain_len = 0;

    memset(n, 0, sizeof(*n));
    /* As the native reader: a NUL or \u0000 (where cJSON would cut a
     * string) is refused, outside the resource and inside it. */
    if (body == NULL || json_parse_object(body, body_len, &root) != JSON_OK)
        goto out;
    res = cJSON_GetObjectItemCaseSensitive(root, "resource");
    if (!cJSON_IsObject(res))
        goto out;
    algo = str_member(res, "algorithm");
    if (algo == NULL || strcmp(algo, "AEAD_AES_256_GCM") != 0)
        goto out;
    st = gateway_wechat_decrypt(apiv3_key, str_member(res, "associated_data"),
                                str_member(res, "nonce"), str_member(res, "ciphertext"), &plain,
                                &plain_len);
    if (st != GATEWAY_OK)
        goto out;
    st = GATEWAY_MALFORMED;
    if (json_parse_object(plain, plain_len, &tx) != JSON_OK)
        goto out;
    if (str_member(root, "event_type") != NULL &&
        strncmp(str_member(root, "event_type"), "REFUND.", 7) == 0) {
        snprintf(n->state, sizeof(n->state), "%.40s", str_member(root, "event_type"));
        st = read_refund_resource(tx, mchid, n);
        goto out;
    }
    st = read_transaction(tx, mchid, app_id, n);
out:
    if (st != GATEWAY_OK)
        memset(n, 0, sizeof(*n));
    cJSON_Delete(tx);
    cJSON_Delete(root);
    free(plain);
    return st;
}
