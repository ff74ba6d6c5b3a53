/* pubkey.h - RSA public keys of the payment gateways and SHA256withRSA
 * (PKCS#1 v1.5) verification of their base64 signatures. Pure apart from
 * reading a key file at load time. A loaded key is read-only and may be
 * shared by any number of threads. */
#ifndef PAYCALLBACK_PUBKEY_H
#define PAYCALLBACK_PUBKEY_H

#include <stddef.h>

struct pubkey;

/* One piece of a signed message; a message is verified as the
 * concatenation of its parts, so large bodies are never copied. */
struct pubkey_part {
    const void *data;
    size_t len;
};

enum pubkey_status {
    PUBKEY_OK,
    PUBKEY_BAD_SIGNATURE, /* not base64, or does not verify */
    PUBKEY_ERROR          /* OpenSSL failed: not the sender's fault */
};

/* Loads an RSA public key from text: a "PUBLIC KEY" PEM,
 * a "CERTIFICATE" PEM (its subject key is used), or the bare base64 of a
 * DER SubjectPublicKeyInfo, as gateway consoles often show it. Keys below
 * 2048 bits are refused. Returns the key (free with pubkey_destroy), or
 * NULL with a one-line reason in err. */
struct pubkey *pubkey_create(const char *text, char *err, size_t errsz);

/* Same, reading the text from the file at path. */
struct pubkey *pubkey_create_file(const char *path, char *err, size_t errsz);

/* NULL-safe. */
void pubkey_destroy(struct pubkey *k);

/* Verifies sig_b64 (base64 of the signature) over the concatenation of the
 * nparts parts with SHA256withRSA. */
enum pubkey_status pubkey_verify(const struct pubkey *k, const struct pubkey_part *parts,
                                 size_t nparts, const char *sig_b64);

#endif
