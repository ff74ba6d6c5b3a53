/* currency.h - ISO 4217 codes, their minor-unit exponents, and exact
 * conversions between a gateway's minor units (fen, pence, yen) and the
 * service's cents (hundredths of the major unit, as DECIMAL(12,2) stores
 * them). Pure integer arithmetic; safe from any thread. */
#ifndef PAYCALLBACK_CURRENCY_H
#define PAYCALLBACK_CURRENCY_H

#include <stdint.h>

#define CURRENCY_BUF 4 /* three letters and the NUL */
#define CURRENCY_DEFAULT "CNY"

enum currency_status {
    CURRENCY_OK,
    CURRENCY_UNKNOWN, /* not a known ISO 4217 code */
    CURRENCY_INEXACT, /* has no exact value in cents (e.g. 1.005 KWD) */
    CURRENCY_RANGE    /* negative, or beyond 9999999999.99 */
};

/* Copies code into out as three upper-case letters ("usd" -> "USD").
 * Returns CURRENCY_OK for a known code, else CURRENCY_UNKNOWN with out "". */
enum currency_status currency_normalize(const char *code, char out[CURRENCY_BUF]);

/* Minor-unit exponent of a known code (0 for JPY, 2 for CNY, 3 for KWD), or
 * -1 when the code is unknown. Case-insensitive. */
int currency_exponent(const char *code);

/* minor (an amount in code's minor units) as cents in *cents. On failure
 * *cents is 0. */
enum currency_status currency_minor_to_cents(const char *code, int64_t minor, int64_t *cents);

/* The reverse: cents as code's minor units. 100 cents of JPY are 1 yen;
 * 150 cents of JPY have no exact value and give CURRENCY_INEXACT. */
enum currency_status currency_cents_to_minor(const char *code, int64_t cents, int64_t *minor);

#endif
