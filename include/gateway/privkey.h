/* privkey.h - the merchant's RSA private keys, which sign refund requests
 * to Alipay and WeChat Pay (SHA256withRSA, PKCS#1 v1.5, base64). A key is
 * read from a file only, and refused when the file is readable or writable
 * by anyone but its owner, or owned by another user than the service's
 * (effective uid): a merchant key that others can read is a key that
 * others can use. A loaded key is read-only and may be shared by any
 * number of threads. */
#ifndef PAYCALLBACK_PRIVKEY_H
#define PAYCALLBACK_PRIVKEY_H

#include <stddef.h>

struct privkey;

/* Loads the PEM private key ("PRIVATE KEY" or "RSA PRIVATE KEY") at path.
 * Refused, with a one-line reason in err: a file whose mode grants any
 * access to group or others, a file that is not a regular file, a key
 * that is not RSA of 2048 bits or more. Returns the key (free with
 * privkey_destroy), or NULL. */
struct privkey *privkey_load_file(const char *path, char *err, size_t errsz);

/* NULL-safe; the key material is wiped. */
void privkey_destroy(struct privkey *k);

/* The base64 SHA256withRSA signature of len bytes of msg, malloc'd (the
 * caller frees), or NULL when OpenSSL fails. */
char *privkey_sign_b64(const struct privkey *k, const void *msg, size_t len);

#endif
