/* money.c - exact decimal money: contract strings to integer cents and back.
 * Every step is integer arithmetic on int64_t; nothing here is ever a
 * binary fraction. No I/O and no state, so any thread may call it. */
#include "money.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The largest amount DECIMAL(12,2) can hold, 9999999999.99, in cents. */
#define CENTS_MAX INT64_C(999999999999)

#define FRAC_DIGITS_MAX 2

/* True for the ASCII digits only. isdigit() is not used because it depends
 * on the locale, and the contract knows nothing but '0'..'9'. */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads between 1 and max digits starting at s[*pos] (stopping at len),
 * adds them to *acc, and advances *pos. Returns the number of digits
 * read, which is 0 when s[*pos] is not a digit and max + 1 when there are
 * too many, so the caller can reject both. */
static size_t read_digits(const char *s, size_t len, size_t *pos, size_t max, int64_t *acc)
{
    size_t n = 0;

    while (*pos < len && is_digit(s[*pos])) {
        if (++n > max)
            return n;
        *acc = *acc * 10 + (s[*pos] - '0');
        (*pos)++;
    }
    return n;
}

enum money_status money_parse_n(const char *s, size_t len, int64_t *cents)
{
    int64_t units = 0, frac = 0;
    size_t pos = 0, int_digits, frac_digits;

    if (cents == NULL)
        return MONEY_INVALID;
    *cents = 0;
    if (s == NULL)
        return MONEY_INVALID;

    int_digits = read_digits(s, len, &pos, MONEY_INT_DIGITS_MAX, &units);
    if (int_digits == 0 || int_digits > MONEY_INT_DIGITS_MAX)
        return MONEY_INVALID;
    if (pos < len) {
        /* Anything after the integer part must be '.' and 1..2 digits;
         * a NUL byte, a sign or an exponent all stop here. */
        if (s[pos++] != '.')
            return MONEY_INVALID;
        frac_digits = read_digits(s, len, &pos, FRAC_DIGITS_MAX, &frac);
        if (frac_digits == 0 || frac_digits > FRAC_DIGITS_MAX || pos != len)
            return MONEY_INVALID;
        if (frac_digits == 1)
            frac *= 10; /* "1.5" is 150 cents */
    }
    /* At most 10 digits, so units * 100 + 99 <= CENTS_MAX: no overflow. */
    *cents = units * 100 + frac;
    return MONEY_OK;
}

enum money_status money_parse(const char *s, int64_t *cents)
{
    if (s == NULL) {
        if (cents != NULL)
            *cents = 0;
        return MONEY_INVALID;
    }
    return money_parse_n(s, strlen(s), cents);
}

/* Negative amounts are outside the contract, but a value read back from
 * the database is formatted rather than trusted, so they are written with a
 * leading '-' instead of being mangled. The magnitude goes through uint64_t
 * so that INT64_MIN is handled too. A buffer that is too small gets a
 * truncated, NUL-terminated string, as snprintf() gives. */
char *money_format(int64_t cents, char *buf, size_t bufsz)
{
    char tmp[32]; /* "-", 18 digits, ".", 2 digits, NUL: room */
    char *p = tmp + sizeof(tmp);
    uint64_t mag;
    size_t n;

    if (buf == NULL || bufsz == 0)
        return buf;
    mag = cents < 0 ? (uint64_t)0 - (uint64_t)cents : (uint64_t)cents;
    /* Right to left, with no snprintf: every callback formats its amount
     * three times, and the format parser cost more than the digits. */
    *--p = (char)('0' + mag % 10);
    *--p = (char)('0' + mag / 10 % 10);
    *--p = '.';
    mag /= 100;
    do {
        *--p = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag > 0);
    if (cents < 0)
        *--p = '-';
    n = (size_t)(tmp + sizeof(tmp) - p);
    if (n > bufsz - 1)
        n = bufsz - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

enum money_status money_mul(int64_t cents, int64_t factor, int64_t *out)
{
    if (out == NULL)
        return MONEY_INVALID;
    *out = 0;
    if (cents < 0 || factor < 0 || cents > CENTS_MAX)
        return MONEY_INVALID;
    /* Divide instead of multiplying first, so the check itself can never
     * overflow. */
    if (factor != 0 && cents > CENTS_MAX / factor)
        return MONEY_INVALID;
    *out = cents * factor;
    return MONEY_OK;
}
