/* testkeys.c - the signing side of the gateway formats, for the tests.
 * Written straight on OpenSSL's EVP calls, independently of src/, so that
 * a mistake in the service's verifier is not mirrored here. */
#include "testkeys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

/* Setup failures abort: these helpers also run before any test starts,
 * where a Check assertion has nowhere to report. */
#define MUST(cond)                                                                      \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: testkeys: %s failed\n", __FILE__, __LINE__, #cond); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

struct testkey {
    EVP_PKEY *pkey;
};

struct testkey *testkey_create(void)
{
    struct testkey *k = calloc(1, sizeof(*k));

    MUST(k != NULL);
    k->pkey = EVP_RSA_gen(2048);
    MUST(k->pkey != NULL);
    return k;
}

void testkey_destroy(struct testkey *k)
{
    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

char *testkey_public_pem(const struct testkey *k)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL, *out;
    long n;

    MUST(bio != NULL);
    MUST(PEM_write_bio_PUBKEY(bio, k->pkey) == 1);
    n = BIO_get_mem_data(bio, &data);
    MUST(n > 0);
    out = malloc((size_t)n + 1);
    MUST(out != NULL);
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    BIO_free(bio);
    return out;
}

void testkey_write_public(const struct testkey *k, const char *path)
{
    char *pem = testkey_public_pem(k);
    FILE *f = fopen(path, "w");

    MUST(f != NULL);
    MUST(fputs(pem, f) >= 0);
    MUST(fclose(f) == 0);
    free(pem);
}

static char *b64(const unsigned char *in, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);

    MUST(out != NULL);
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    return out;
}

char *testkey_sign_b64(const struct testkey *k, const void *msg, size_t len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char sig[512];
    size_t siglen = sizeof(sig);

    MUST(ctx != NULL);
    MUST(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) == 1);
    MUST(EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1);
    EVP_MD_CTX_free(ctx);
    return b64(sig, siglen);
}

char *testkey_gcm_encrypt_b64(const char *key32, const char *nonce, const char *aad,
                              const char *plain)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    size_t len = strlen(plain);
    unsigned char *buf = malloc(len + 16);
    int n = 0, fin = 0;
    char *out;

    MUST(ctx != NULL);
    MUST(buf != NULL);
    MUST((int)strlen(key32) == 32);
    MUST(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1);
    MUST(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)strlen(nonce), NULL) == 1);
    MUST(EVP_EncryptInit_ex(ctx, NULL, NULL, (const unsigned char *)key32,
                            (const unsigned char *)nonce) == 1);
    if (aad != NULL && aad[0] != '\0')
        MUST(EVP_EncryptUpdate(ctx, NULL, &n, (const unsigned char *)aad, (int)strlen(aad)) == 1);
    MUST(EVP_EncryptUpdate(ctx, buf, &n, (const unsigned char *)plain, (int)len) == 1);
    MUST(EVP_EncryptFinal_ex(ctx, buf + n, &fin) == 1);
    MUST(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, buf + n + fin) == 1);
    out = b64(buf, (size_t)(n + fin) + 16);
    EVP_CIPHER_CTX_free(ctx);
    free(buf);
    return out;
}

void testkey_hmac_hex(const char *secret, const char *t, const char *body, char out[65])
{
    static const char digits[] = "0123456789abcdef";
    size_t tl = strlen(t), bl = strlen(body);
    char *msg = malloc(tl + bl + 2);
    unsigned char md[32];
    unsigned int mdlen = 0, i;

    MUST(msg != NULL);
    memcpy(msg, t, tl);
    msg[tl] = '.';
    memcpy(msg + tl + 1, body, bl + 1);
    MUST(HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg, tl + bl + 1,
              md, &mdlen) != NULL);
    MUST((int)mdlen == 32);
    for (i = 0; i < mdlen; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 0x0f];
    }
    out[64] = '\0';
    free(msg);
}

char *testkey_form_escape(const char *s)
{
    static const char digits[] = "0123456789ABCDEF";
    char *out = malloc(strlen(s) * 3 + 1), *p;

    MUST(out != NULL);
    for (p = out; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '*') {
            *p++ = (char)c;
        } else if (c == ' ') {
            *p++ = '+';
        } else {
            *p++ = '%';
            *p++ = digits[c >> 4];
            *p++ = digits[c & 0x0f];
        }
    }
    *p = '\0';
    return out;
}
