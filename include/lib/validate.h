/* validate.h - identifier rules of the contract. Pure; safe from any thread. */
#ifndef PAYCALLBACK_VALIDATE_H
#define PAYCALLBACK_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#define ID_MAX_LEN 64 /* identifiers are 1..64 chars */
#define ID_BUF (ID_MAX_LEN + 1)

/* True when s is 1..64 chars of [A-Za-z0-9_.:-]. NULL is false. */
bool validate_id(const char *s);

/* True when s is exactly 32 lowercase hex digits (a token or lock value). */
bool validate_token(const char *s);

/* True when s is an absolute http:// or https:// URL the service may call:
 * scheme in lower case, a host of [A-Za-z0-9.-] or a bracketed IPv6
 * literal, an optional port 1..65535, then an optional path and query of
 * RFC 3986 characters (percent-escapes well formed). No user info (a
 * credential in a URL ends up in logs), no fragment, no blank or control
 * character. NULL is false. */
bool validate_http_url(const char *s);

/* True when s is 1..max_len characters of the RFC 6750 bearer token
 * alphabet (letters, digits, -._~+/, then '=' padding): it can be sent as
 * "Authorization: Bearer <s>" as it is, and can never end a header line. */
bool validate_bearer_token(const char *s, size_t max_len);

#endif
