/* gateway_wechat.h - WeChat Pay API v3 notifications: SHA256withRSA over
 * "timestamp\nnonce\nbody\n" with the platform key named by
 * Wechatpay-Serial, then the resource decrypted with AEAD_AES_256_GCM under
 * the merchant's APIv3 key. Pure apart from the caller's clock; thread-safe. */
#ifndef PAYCALLBACK_GW_WECHAT_H
#define PAYCALLBACK_GW_WECHAT_H

#include <stddef.h>
#include <stdint.h>

#include "gateway_notice.h"

struct pubkey;

#define GATEWAY_WECHAT_APIV3_KEY_LEN 32 /* bytes of the APIv3 key (AES-256) */
#define GATEWAY_WECHAT_TAG_LEN 16       /* GCM tag appended to the ciphertext */

/* One platform key and the serial WeChat sends in Wechatpay-Serial. */
struct gateway_wechat_key {
    const char *serial;
    const struct pubkey *key;
};

/* The signed message "timestamp\nnonce\nbody\n" as a malloc'd string
 * (caller frees), or NULL when out of memory or an argument is NULL. */
char *gateway_wechat_message(const char *ts, const char *nonce, const char *body, size_t body_len);

/* Verifies the four Wechatpay-* header values over body. The key is the
 * one of keys[0..nkeys) whose serial equals serial; ts must be unix seconds
 * within tolerance_s of now_s either way. Returns GATEWAY_OK, GATEWAY_SIG_MISSING,
 * GATEWAY_SIG_STALE, GATEWAY_SIG_UNKNOWN_KEY, GATEWAY_SIG_MISMATCH or GATEWAY_ERROR. */
enum gateway_status gateway_wechat_verify(const char *ts, const char *nonce, const char *signature,
                                          const char *serial, const char *body, size_t body_len,
                                          const struct gateway_wechat_key *keys, size_t nkeys,
                                          int64_t now_s, int64_t tolerance_s);

/* Decrypts ciphertext_b64 (base64 of ciphertext || 16-byte tag) with
 * AES-256-GCM under apiv3_key (32 bytes), nonce as IV and associated_data
 * as AAD (NULL = none). On GATEWAY_OK *plain is a malloc'd NUL-terminated buffer
 * (caller frees) of *plain_len bytes; otherwise GATEWAY_DECRYPT_FAILED (tag
 * mismatch, bad base64, wrong key length) or GATEWAY_ERROR, with *plain NULL. */
enum gateway_status gateway_wechat_decrypt(const char *apiv3_key, const char *associated_data,
                                           const char *nonce, const char *ciphertext_b64,
                                           char **plain, size_t *plain_len);

/* Reads a verified notification body: decrypts its resource, checks mchid
 * (and appid when app_id is not NULL or ""), and maps transaction_id,
 * out_trade_no, amount.total (fen) and amount.currency into *n. Only
 * trade_state SUCCESS pays; any other state is acknowledged only. Returns
 * GATEWAY_OK, GATEWAY_MALFORMED, GATEWAY_DECRYPT_FAILED, GATEWAY_WRONG_APP, GATEWAY_BAD_AMOUNT,
 * GATEWAY_BAD_CURRENCY or GATEWAY_ERROR; on failure *n is zeroed. */
enum gateway_status gateway_wechat_notice(const char *body, size_t body_len, const char *apiv3_key,
                                          const char *mchid, const char *app_id,
                                          struct gateway_notice *n);

#endif
