/* money.h - exact decimal money: "899.00" <-> integer cents.
 * Pure; no I/O, no floating point anywhere. Safe from any thread. */
#ifndef PAYCALLBACK_MONEY_H
#define PAYCALLBACK_MONEY_H

#include <stddef.h>
#include <stdint.h>

#define MONEY_INT_DIGITS_MAX 10 /* integer part: 1..10 digits */
#define MONEY_STR_MAX 16        /* "9999999999.99" plus NUL, with room */

enum money_status {
    MONEY_OK,
    MONEY_INVALID
};

/* Parses a contract amount: 1..10 integer digits, optionally '.' and 1..2
 * fraction digits; no sign, no exponent, no spaces, no leading '+'.
 * Leading zeros are accepted ("0.50", "007.00"). On success stores the
 * value in *cents; on failure *cents is 0. */
enum money_status money_parse(const char *s, int64_t *cents);

/* Same, for a string of known length that need not be NUL-terminated. */
enum money_status money_parse_n(const char *s, size_t len, int64_t *cents);

/* Formats cents (>= 0) as "123.45" into buf (at least MONEY_STR_MAX bytes).
 * Returns buf. */
char *money_format(int64_t cents, char *buf, size_t bufsz);

/* a * b into *out, refusing overflow past the DECIMAL(12,2) range
 * (9999999999.99). Returns MONEY_OK or MONEY_INVALID. */
enum money_status money_mul(int64_t cents, int64_t factor, int64_t *out);

#endif
