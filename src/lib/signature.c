/* signature.c - callback authentication: HMAC-SHA256 (OpenSSL 3 EVP_MAC)
 * over X-Timestamp "." raw body, lowercase hex, constant-time comparison.
 * A secret's key schedule can be done once (struct sig_keys) and copied
 * per request. Reads no clock and no config: the caller passes the
 * secrets and the time. */
#include "signature.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "hex.h"

#define SIG_MAC_LEN 32       /* bytes of a SHA-256 MAC */
#define SIG_TS_DIGITS_MAX 19 /* enough for any int64 unix time */

struct sig_keys {
    size_t n;
    EVP_MAC_CTX *keyed[SIG_SECRETS_MAX]; /* never written once built; NULL: an empty secret */
};

/* Feeds ts, "." and body to ctx in three updates, so the body, which can
 * be up to the request cap, is never copied. Returns 0 or -1. */
static int mac_message(EVP_MAC_CTX *ctx, const char *ts, const char *body, size_t body_len)
{
    if (!EVP_MAC_update(ctx, (const unsigned char *)ts, strlen(ts)))
        return -1;
    if (!EVP_MAC_update(ctx, (const unsigned char *)".", 1))
        return -1;
    if (body_len > 0 && !EVP_MAC_update(ctx, (const unsigned char *)body, body_len))
        return -1;
    return 0;
}

/* A new HMAC-SHA256 context with secret's key schedule done: the fetch of
 * the algorithm, the hashing of a long key, the inner and outer pads.
 * NULL for an empty or NULL secret (a MAC under an empty key
 * authenticates nothing) or when OpenSSL fails. Free with
 * EVP_MAC_CTX_free. */
static EVP_MAC_CTX *keyed_ctx(const char *secret)
{
    EVP_MAC *mac = NULL;
    EVP_MAC_CTX *ctx = NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[2];

    if (secret == NULL || secret[0] == '\0')
        return NULL;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    if ((mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL)
        goto fail;
    if ((ctx = EVP_MAC_CTX_new(mac)) == NULL)
        goto fail;
    if (!EVP_MAC_init(ctx, (const unsigned char *)secret, strlen(secret), params))
        goto fail;
    EVP_MAC_free(mac); /* ctx holds its own reference */
    return ctx;
fail:
    EVP_MAC_CTX_free(ctx); /* both NULL-safe */
    EVP_MAC_free(mac);
    return NULL;
}

/* Finishes the MAC of ts "." body on ctx (a keyed context, used up by
 * this call) and writes it as hex into out. Returns 0 or -1. */
static int mac_hex(EVP_MAC_CTX *ctx, const char *ts, const char *body, size_t body_len,
                   char out[SIG_HEX_LEN + 1])
{
    unsigned char md[SIG_MAC_LEN];
    size_t md_len = 0;

    if (mac_message(ctx, ts, body, body_len) != 0)
        return -1;
    if (!EVP_MAC_final(ctx, md, &md_len, sizeof(md)) || md_len != SIG_MAC_LEN)
        return -1;
    hex_encode(md, md_len, out);
    return 0;
}

/* An empty secret is refused (-1): a MAC under an empty key authenticates
 * nothing, and the caller is expected to skip verification instead. The
 * key schedule is done afresh on every call. */
int sig_compute(const char *secret, const char *ts, const char *body, size_t body_len,
                char out[SIG_HEX_LEN + 1])
{
    EVP_MAC_CTX *ctx = NULL;
    int rc;

    if (out == NULL)
        return -1;
    out[0] = '\0';
    if (ts == NULL || (body == NULL && body_len > 0) || (ctx = keyed_ctx(secret)) == NULL)
        return -1;
    rc = mac_hex(ctx, ts, body, body_len, out);
    EVP_MAC_CTX_free(ctx);
    return rc;
}

struct sig_keys *sig_keys_create(const char *const *secrets, size_t nsecrets)
{
    struct sig_keys *k;
    size_t i;

    if (secrets == NULL || nsecrets > SIG_SECRETS_MAX || (k = calloc(1, sizeof(*k))) == NULL)
        return NULL;
    k->n = nsecrets;
    for (i = 0; i < nsecrets; i++) {
        k->keyed[i] = keyed_ctx(secrets[i]);
        if (k->keyed[i] == NULL && secrets[i] != NULL && secrets[i][0] != '\0') {
            sig_keys_destroy(k); /* OpenSSL failed on a real secret */
            return NULL;
        }
    }
    return k;
}

void sig_keys_destroy(struct sig_keys *k)
{
    size_t i;

    if (k == NULL)
        return;
    for (i = 0; i < k->n; i++)
        EVP_MAC_CTX_free(k->keyed[i]);
    free(k);
}

/* The prepared context is only read: each call finishes its own copy
 * (EVP_MAC_CTX_dup), which is what lets threads share k. */
int sig_keys_compute(const struct sig_keys *k, size_t i, const char *ts, const char *body,
                     size_t body_len, char out[SIG_HEX_LEN + 1])
{
    EVP_MAC_CTX *ctx = NULL;
    int rc;

    if (out == NULL)
        return -1;
    out[0] = '\0';
    if (k == NULL || i >= k->n || k->keyed[i] == NULL || ts == NULL ||
        (body == NULL && body_len > 0) || (ctx = EVP_MAC_CTX_dup(k->keyed[i])) == NULL)
        return -1;
    rc = mac_hex(ctx, ts, body, body_len, out);
    EVP_MAC_CTX_free(ctx);
    return rc;
}

/* Parses 1..19 ASCII digits into *out. A 19-digit value above INT64_MAX
 * is refused. Returns false for anything else, including a sign. */
static bool parse_ts(const char *ts, int64_t *out)
{
    uint64_t v = 0;
    size_t n;

    for (n = 0; ts[n] != '\0'; n++) {
        if (n == SIG_TS_DIGITS_MAX || ts[n] < '0' || ts[n] > '9')
            return false;
        v = v * 10 + (uint64_t)(ts[n] - '0'); /* <= 19 digits fit */
    }
    if (n == 0 || v > (uint64_t)INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

/* |now - ts| <= window, computed in uint64_t: the distance between two
 * int64_t values always fits there, so no subtraction can overflow. */
static bool within_window(int64_t ts, int64_t now_s, int64_t window_s)
{
    uint64_t dist;

    if (window_s < 0)
        return false;
    dist = ts >= now_s ? (uint64_t)ts - (uint64_t)now_s : (uint64_t)now_s - (uint64_t)ts;
    return dist <= (uint64_t)window_s;
}

/* The checks run in the order of the statuses: missing headers, then the
 * timestamp, then the MAC. An empty or NULL secret yields SIG_MISMATCH,
 * never SIG_OK, so a misconfigured caller fails closed. */
enum sig_status sig_verify(const char *secret, const char *ts, const char *sig, const char *body,
                           size_t body_len, int64_t now_s, int64_t window_s)
{
    return sig_verify_any(&secret, 1, ts, sig, body, body_len, now_s, window_s);
}

/* Each key's MAC is computed and compared whatever the earlier ones gave;
 * the results are OR-ed as integers, so no branch depends on which secret
 * matched. The length check and the header checks depend only on what
 * the caller sent. */
enum sig_status sig_keys_verify(const struct sig_keys *k, const char *ts, const char *sig,
                                const char *body, size_t body_len, int64_t now_s, int64_t window_s)
{
    char expected[SIG_HEX_LEN + 1];
    unsigned int matched = 0;
    size_t i;

    if (ts == NULL || ts[0] == '\0' || sig == NULL || sig[0] == '\0')
        return SIG_MISSING;
    if (!sig_ts_fresh(ts, now_s, window_s))
        return SIG_BAD_TIMESTAMP;
    if (strlen(sig) != SIG_HEX_LEN || k == NULL)
        return SIG_MISMATCH;
    for (i = 0; i < k->n; i++) {
        int ok = sig_keys_compute(k, i, ts, body, body_len, expected) == 0;

        /* A failed MAC (empty secret) still gets compared, against a
         * zeroed buffer that no 64-hex signature equals. */
        if (!ok)
            memset(expected, 0, sizeof(expected));
        matched |=
            (unsigned int)ok & (unsigned int)(CRYPTO_memcmp(expected, sig, SIG_HEX_LEN) == 0);
    }
    OPENSSL_cleanse(expected, sizeof(expected));
    return matched ? SIG_OK : SIG_MISMATCH;
}

/* The keys are prepared for this one call. Too many secrets, like an
 * OpenSSL failure, leave no keys, and the call fails closed after the
 * header checks. */
enum sig_status sig_verify_any(const char *const *secrets, size_t nsecrets, const char *ts,
                               const char *sig, const char *body, size_t body_len, int64_t now_s,
                               int64_t window_s)
{
    struct sig_keys *k = sig_keys_create(secrets, nsecrets);
    enum sig_status st = sig_keys_verify(k, ts, sig, body, body_len, now_s, window_s);

    sig_keys_destroy(k);
    return st;
}

bool sig_ts_fresh(const char *ts, int64_t now_s, int64_t window_s)
{
    int64_t ts_s;

    return ts != NULL && parse_ts(ts, &ts_s) && within_window(ts_s, now_s, window_s);
}

const char *sig_status_str(enum sig_status st)
{
    switch (st) {
    case SIG_OK: return "signature ok";
    case SIG_MISSING: return "missing X-Timestamp or X-Signature header";
    case SIG_BAD_TIMESTAMP: return "X-Timestamp is not a unix time within the allowed window";
    case SIG_MISMATCH: return "signature does not match";
    }
    return "unknown signature status";
}
