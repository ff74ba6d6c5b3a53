/* pubkey.c - gateway RSA public keys (PEM, certificate or bare base64 DER)
 * and SHA256withRSA verification through OpenSSL's EVP interface. Knows
 * nothing of any gateway's message format. */
#include "pubkey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "b64.h"

#define PUBKEY_BITS_MIN 2048
#define PUBKEY_FILE_MAX_BYTES (64 * 1024L)

struct pubkey {
    EVP_PKEY *pkey;
};

static void set_err(char *err, size_t errsz, const char *msg)
{
    if (err != NULL && errsz > 0)
        snprintf(err, errsz, "%s", msg);
}

static EVP_PKEY *from_pem(const char *text)
{
    BIO *bio = BIO_new_mem_buf(text, -1);
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;

    if (bio == NULL)
        return NULL;
    if (strstr(text, "-----BEGIN CERTIFICATE-----") != NULL) {
        if ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
            pkey = X509_get_pubkey(cert);
    } else {
        pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    }
    X509_free(cert);
    BIO_free(bio);
    return pkey;
}

/* The bare form: base64 of a DER SubjectPublicKeyInfo, possibly wrapped. */
static EVP_PKEY *from_bare_base64(const char *text)
{
    size_t i, n = 0, len = strlen(text), derlen = 0;
    char *clean = malloc(len + 1);
    unsigned char *der = NULL;
    const unsigned char *p;
    EVP_PKEY *pkey = NULL;

    if (clean == NULL)
        return NULL;
    for (i = 0; i < len; i++)
        if (text[i] != '\n' && text[i] != '\r' && text[i] != ' ')
            clean[n++] = text[i];
    clean[n] = '\0';
    if (b64_decode(clean, n, &der, &derlen) == 0) {
        p = der;
        pkey = d2i_PUBKEY(NULL, &p, (long)derlen);
    }
    free(der);
    free(clean);
    return pkey;
}

struct pubkey *pubkey_create(const char *text, char *err, size_t errsz)
{
    struct pubkey *k = NULL;
    EVP_PKEY *pkey = NULL;

    if (text == NULL || text[0] == '\0') {
        set_err(err, errsz, "empty public key");
        return NULL;
    }
    pkey = strstr(text, "-----BEGIN") != NULL ? from_pem(text) : from_bare_base64(text);
    if (pkey == NULL) {
        set_err(err, errsz, "not a PEM public key, certificate or base64 DER key");
        goto fail;
    }
    if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA) {
        set_err(err, errsz, "public key is not RSA");
        goto fail;
    }
    if (EVP_PKEY_get_bits(pkey) < PUBKEY_BITS_MIN) {
        set_err(err, errsz, "RSA public key shorter than 2048 bits");
        goto fail;
    }
    if ((k = malloc(sizeof(*k))) == NULL) {
        set_err(err, errsz, "out of memory");
        goto fail;
    }
    k->pkey = pkey;
    return k;
fail:
    EVP_PKEY_free(pkey);
    return NULL;
}

struct pubkey *pubkey_create_file(const char *path, char *err, size_t errsz)
{
    struct pubkey *k = NULL;
    char buf[PUBKEY_FILE_MAX_BYTES + 1];
    char why[160];
    FILE *f = NULL;
    size_t n;

    if (path == NULL || path[0] == '\0') {
        set_err(err, errsz, "empty public key path");
        return NULL;
    }
    if ((f = fopen(path, "rb")) == NULL) {
        snprintf(why, sizeof(why), "cannot open public key file %.100s", path);
        set_err(err, errsz, why);
        return NULL;
    }
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    if (n == 0 || n > PUBKEY_FILE_MAX_BYTES) {
        snprintf(why, sizeof(why), "public key file %.100s is empty or too large", path);
        set_err(err, errsz, why);
        return NULL;
    }
    buf[n] = '\0';
    if ((k = pubkey_create(buf, why, sizeof(why))) == NULL) {
        char full[320];
        snprintf(full, sizeof(full), "%.100s: %s", path, why);
        set_err(err, errsz, full);
    }
    return k;
}

void pubkey_destroy(struct pubkey *k)
{
    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

enum pubkey_status pubkey_verify(const struct pubkey *k, const struct pubkey_part *parts,
                                 size_t nparts, const char *sig_b64)
{
    enum pubkey_status st = PUBKEY_ERROR;
    EVP_MD_CTX *ctx = NULL;
    unsigned char *sig = NULL;
    size_t siglen = 0, i;
    int r;

    if (k == NULL || (parts == NULL && nparts > 0))
        return PUBKEY_ERROR;
    if (sig_b64 == NULL || b64_decode(sig_b64, strlen(sig_b64), &sig, &siglen) != 0 ||
        siglen == 0) {
        free(sig);
        return PUBKEY_BAD_SIGNATURE;
    }
    if ((ctx = EVP_MD_CTX_new()) == NULL)
        goto out;
    if (EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) != 1)
        goto out;
    for (i = 0; i < nparts; i++)
        if (parts[i].len > 0 && EVP_DigestVerifyUpdate(ctx, parts[i].data, parts[i].len) != 1)
            goto out;
    /* 1 is a match; 0 and negative values both mean the signature is not a
     * valid one for this key (wrong length included). */
    r = EVP_DigestVerifyFinal(ctx, sig, siglen);
    st = r == 1 ? PUBKEY_OK : PUBKEY_BAD_SIGNATURE;
out:
    EVP_MD_CTX_free(ctx);
    free(sig);
    return st;
}
