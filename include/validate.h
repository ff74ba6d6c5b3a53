/* validate.h - identifier rules of the contract. Pure; safe from any thread. */
#ifndef PAYCALLBACK_VALIDATE_H
#define PAYCALLBACK_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#define ID_MAX_LEN 64             /* identifiers are 1..64 chars */
#define ID_BUF     (ID_MAX_LEN + 1)

/* True when s is 1..64 chars of [A-Za-z0-9_.:-]. NULL is false. */
bool validate_id(const char *s);

/* True when s is exactly 32 lowercase hex digits (a token or lock value). */
bool validate_token(const char *s);

#endif
