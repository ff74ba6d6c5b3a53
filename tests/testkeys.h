/* testkeys.h - the gateway's side of a notification, for tests only: RSA
 * key pairs generated on the spot, SHA256withRSA signatures and
 * AES-256-GCM encryption as Alipay and WeChat Pay produce them. Nothing
 * here is used by the service; the keys never touch the disk unless a
 * test writes one. A setup failure aborts the process (usable before
 * the tests start, where a Check assertion could not report). */
#ifndef PAYCALLBACK_TEST_TESTKEYS_H
#define PAYCALLBACK_TEST_TESTKEYS_H

#include <stddef.h>

struct testkey;

/* A fresh 2048-bit RSA key pair. Free with testkey_destroy (NULL-safe). */
struct testkey *testkey_create(void);
void testkey_destroy(struct testkey *k);

/* The public half as a "PUBLIC KEY" PEM (malloc'd; caller frees). */
char *testkey_public_pem(const struct testkey *k);

/* Writes the public PEM to path. */
void testkey_write_public(const struct testkey *k, const char *path);

/* Base64 SHA256withRSA signature of len bytes of msg (malloc'd). */
char *testkey_sign_b64(const struct testkey *k, const void *msg, size_t len);

/* Base64 of AES-256-GCM(key32, nonce, aad) ciphertext || 16-byte tag, the
 * shape of a WeChat Pay v3 resource.ciphertext (malloc'd). */
char *testkey_gcm_encrypt_b64(const char *key32, const char *nonce, const char *aad,
                              const char *plain);

/* Lowercase hex HMAC-SHA256(secret, t "." body) into out (65 bytes). */
void testkey_hmac_hex(const char *secret, const char *t, const char *body, char out[65]);

/* Percent-encodes s for a form body: unreserved bytes as they are, space as
 * '+', everything else %XX (malloc'd). */
char *testkey_form_escape(const char *s);

#endif
