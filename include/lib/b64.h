/* b64.h - strict standard base64 (RFC 4648, '+' '/' and '=' padding) for
 * gateway signatures and ciphertexts. Pure; safe from any thread. */
#ifndef PAYCALLBACK_B64_H
#define PAYCALLBACK_B64_H

#include <stddef.h>

/* Decodes len bytes of base64 text. The length must be a multiple of 4 and
 * padding may only end the text; whitespace and the URL-safe alphabet are
 * refused. On success returns 0 with a malloc'd buffer in *out (caller
 * frees with free; one spare NUL byte follows the data) and its length in
 * *outlen. Returns -1 on malformed input, with *out NULL and *outlen 0. */
int b64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

/* Encodes len bytes. Returns a malloc'd NUL-terminated string (caller
 * frees with free), or NULL when out of memory. */
char *b64_encode(const unsigned char *in, size_t len);

#endif
