/* stdwebhook.h - Standard Webhooks signatures (www.standardwebhooks.com,
 * the scheme of Svix and the `standardwebhooks` libraries): the
 * signature of a message is "v1," and the base64 of HMAC-SHA256, keyed
 * with the secret's bytes, over "<webhook-id>.<webhook-timestamp>.<body>".
 * A secret is written "whsec_" and the base64 of 24 to 64 random bytes.
 * Pure; safe from any thread. */
#ifndef PAYCALLBACK_STDWEBHOOK_H
#define PAYCALLBACK_STDWEBHOOK_H

#include <stddef.h>

#define SWH_PREFIX "whsec_"
#define SWH_KEY_MIN 24 /* bytes of a secret, decoded */
#define SWH_KEY_MAX 64
#define SWH_SIG_LEN 47 /* "v1," and 44 base64 characters of a 32-byte MAC */

/* Decodes a "whsec_<base64>" secret into key (SWH_KEY_MAX bytes), with its
 * length in *keylen. Returns 0, or -1 when the prefix is missing, the
 * base64 is malformed or the key is not SWH_KEY_MIN..SWH_KEY_MAX bytes. */
int swh_secret_decode(const char *secret, unsigned char key[SWH_KEY_MAX], size_t *keylen);

/* Writes "v1,<base64 MAC>" of msg_id "." ts "." body under key into out
 * (SWH_SIG_LEN + 1 bytes, NUL-terminated). Returns 0, or -1 when OpenSSL
 * fails or an argument is missing. */
int swh_sign(const unsigned char *key, size_t keylen, const char *msg_id, const char *ts,
             const char *body, size_t body_len, char out[SWH_SIG_LEN + 1]);

#endif
