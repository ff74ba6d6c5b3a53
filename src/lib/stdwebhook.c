/* stdwebhook.c - Standard Webhooks secrets and signatures (OpenSSL 3
 * EVP_MAC HMAC-SHA256, base64 by b64.c). */
#include "stdwebhook.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "b64.h"

#define SWH_MAC_LEN 32

int swh_secret_decode(const char *secret, unsigned char key[SWH_KEY_MAX], size_t *keylen)
{
    size_t plen = strlen(SWH_PREFIX), n = 0;
    unsigned char *raw = NULL;
    int rc = -1;

    *keylen = 0;
    if (secret == NULL || strncmp(secret, SWH_PREFIX, plen) != 0)
        return -1;
    if (b64_decode(secret + plen, strlen(secret + plen), &raw, &n) != 0)
        return -1;
    if (n >= SWH_KEY_MIN && n <= SWH_KEY_MAX) {
        memcpy(key, raw, n);
        *keylen = n;
        rc = 0;
    }
    OPENSSL_cleanse(raw, n);
    free(raw);
    return rc;
}

int swh_sign(const unsigned char *key, size_t keylen, const char *msg_id, const char *ts,
             const char *body, size_t body_len, char out[SWH_SIG_LEN + 1])
{
    EVP_MAC *mac = NULL;
    EVP_MAC_CTX *ctx = NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[2];
    unsigned char md[SWH_MAC_LEN];
    size_t md_len = 0;
    char *b64 = NULL;
    int rc = -1;

    out[0] = '\0';
    if (key == NULL || keylen == 0 || msg_id == NULL || ts == NULL ||
        (body == NULL && body_len > 0))
        return -1;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    if ((mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL || (ctx = EVP_MAC_CTX_new(mac)) == NULL ||
        !EVP_MAC_init(ctx, key, keylen, params) ||
        !EVP_MAC_update(ctx, (const unsigned char *)msg_id, strlen(msg_id)) ||
        !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
        !EVP_MAC_update(ctx, (const unsigned char *)ts, strlen(ts)) ||
        !EVP_MAC_update(ctx, (const unsigned char *)".", 1) ||
        (body_len > 0 && !EVP_MAC_update(ctx, (const unsigned char *)body, body_len)) ||
        !EVP_MAC_final(ctx, md, &md_len, sizeof(md)) || md_len != SWH_MAC_LEN)
        goto out;
    if ((b64 = b64_encode(md, md_len)) == NULL || strlen(b64) != SWH_SIG_LEN - 3)
        goto out;
    memcpy(out, "v1,", 3);
    memcpy(out + 3, b64, SWH_SIG_LEN - 3 + 1);
    rc = 0;
out:
    free(b64);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return rc;
}
