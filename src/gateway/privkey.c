/* privkey.c - merchant RSA private keys: loaded from owner-only files,
 * SHA256withRSA through OpenSSL's EVP interface. */
#include "privkey.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "b64.h"

#define PRIVKEY_BITS_MIN 2048
#define PRIVKEY_FILE_MAX_BYTES (64 * 1024L)

struct privkey {
    EVP_PKEY *pkey;
};

/* The file's text (malloc'd, NUL-terminated) after its mode is checked on
 * the open descriptor itself, so the file checked is the file read. */
static char *read_owner_only(const char *path, char *err, size_t errsz)
{
    struct stat st;
    char *text = NULL;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        snprintf(err, errsz, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errsz, "%s is not a regular file", path);
        goto out;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errsz,
                 "%s is owned by uid %u, not by the service's user (uid %u): its owner can read "
                 "it too; chown it to the service's user and chmod 600 it",
                 path, (unsigned)st.st_uid, (unsigned)geteuid());
        goto out;
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        snprintf(err, errsz, "%s is accessible to others than its owner (mode %03o): chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
        goto out;
    }
    if (st.st_size <= 0 || st.st_size > PRIVKEY_FILE_MAX_BYTES) {
        snprintf(err, errsz, "%s is empty or larger than %ld bytes", path, PRIVKEY_FILE_MAX_BYTES);
        goto out;
    }
    if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
        snprintf(err, errsz, "out of memory reading %s", path);
        goto out;
    }
    got = read(fd, text, (size_t)st.st_size);
    if (got != (ssize_t)st.st_size) {
        snprintf(err, errsz, "cannot read %s", path);
        free(text);
        text = NULL;
        goto out;
    }
    text[got] = '\0';
out:
    close(fd);
    return text;
}

struct privkey *privkey_load_file(const char *path, char *err, size_t errsz)
{
    char *text = read_owner_only(path, err, errsz);
    struct privkey *k = NULL;
    EVP_PKEY *pkey = NULL;
    BIO *bio = NULL;

    if (text == NULL)
        return NULL;
    if ((bio = BIO_new_mem_buf(text, -1)) == NULL ||
        (pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)) == NULL) {
        snprintf(err, errsz, "%s holds no PEM private key", path);
        goto out;
    }
    if (EVP_PKEY_base_id(pkey) != EVP_PKEY_RSA || EVP_PKEY_bits(pkey) < PRIVKEY_BITS_MIN) {
        snprintf(err, errsz, "%s is not an RSA key of %d bits or more", path, PRIVKEY_BITS_MIN);
        goto out;
    }
    if ((k = calloc(1, sizeof(*k))) == NULL) {
        snprintf(err, errsz, "out of memory");
        goto out;
    }
    k->pkey = pkey;
    pkey = NULL;
out:
    EVP_PKEY_free(pkey);
    BIO_free(bio);
    OPENSSL_cleanse(text, strlen(text));
    free(text);
    return k;
}

void privkey_destroy(struct privkey *k)
{
    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

char *privkey_sign_b64(const struct privkey *k, const void *msg, size_t len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *sig = NULL;
    size_t siglen = 0;
    char *out = NULL;

    if (ctx == NULL)
        return NULL;
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) != 1 ||
        EVP_DigestSign(ctx, NULL, &siglen, msg, len) != 1 || (sig = malloc(siglen)) == NULL ||
        EVP_DigestSign(ctx, sig, &siglen, msg, len) != 1)
        goto out;
    out = b64_encode(sig, siglen);
out:
    free(sig);
    EVP_MD_CTX_free(ctx);
    return out;
}
