/* hex.h - lowercase hexadecimal text of bytes: the form of every digest,
 * token and generated id the service writes. Pure; thread-safe. */
#ifndef PAYCALLBACK_HEX_H
#define PAYCALLBACK_HEX_H

#include <stddef.h>

/* Writes the 2 * len lowercase hex digits of in[0..len) and a NUL to out
 * (2 * len + 1 bytes). */
void hex_encode(const unsigned char *in, size_t len, char *out);

#endif
