/* currency.c - the ISO 4217 table the gateways need and exact minor-unit
 * conversions. The service stores hundredths of the major unit; a gateway
 * sends its currency's minor units, so 100 fen are 100 cents of CNY, 5 yen
 * are 500 cents of JPY and 1230 fils are 123 cents of KWD. No floats. */
#include "currency.h"

#include <stddef.h>
#include <string.h>

#include "array.h"

/* The largest amount DECIMAL(12,2) can hold, 9999999999.99, in cents. */
#define CENTS_MAX INT64_C(999999999999)
#define CENTS_EXPONENT 2

struct currency_info {
    const char *code;
    int exponent;
};

/* ISO 4217 codes whose exponent is not 2, and the common two-decimal ones.
 * A code that is absent is refused rather than guessed. */
static const struct currency_info currencies[] = {
    { "AED", 2 }, { "AUD", 2 }, { "BHD", 3 }, { "BIF", 0 }, { "BRL", 2 }, { "CAD", 2 },
    { "CHF", 2 }, { "CLP", 0 }, { "CNY", 2 }, { "CZK", 2 }, { "DJF", 0 }, { "DKK", 2 },
    { "EUR", 2 }, { "GBP", 2 }, { "GNF", 0 }, { "HKD", 2 }, { "HUF", 2 }, { "IDR", 2 },
    { "ILS", 2 }, { "INR", 2 }, { "IQD", 3 }, { "ISK", 0 }, { "JOD", 3 }, { "JPY", 0 },
    { "KMF", 0 }, { "KRW", 0 }, { "KWD", 3 }, { "LYD", 3 }, { "MGA", 2 }, { "MOP", 2 },
    { "MXN", 2 }, { "MYR", 2 }, { "NOK", 2 }, { "NZD", 2 }, { "OMR", 3 }, { "PHP", 2 },
    { "PLN", 2 }, { "PYG", 0 }, { "RWF", 0 }, { "SAR", 2 }, { "SEK", 2 }, { "SGD", 2 },
    { "THB", 2 }, { "TND", 3 }, { "TRY", 2 }, { "TWD", 2 }, { "UGX", 0 }, { "USD", 2 },
    { "VND", 0 }, { "VUV", 0 }, { "XAF", 0 }, { "XOF", 0 }, { "XPF", 0 }, { "ZAR", 2 },
};

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static const struct currency_info *lookup(const char *code, char out[CURRENCY_BUF])
{
    size_t i;

    out[0] = '\0';
    if (code == NULL || strlen(code) != 3)
        return NULL;
    for (i = 0; i < 3; i++)
        out[i] = upper(code[i]);
    out[3] = '\0';
    for (i = 0; i < ARRAY_SIZE(currencies); i++)
        if (memcmp(currencies[i].code, out, CURRENCY_BUF) == 0)
            return &currencies[i];
    out[0] = '\0';
    return NULL;
}

enum currency_status currency_normalize(const char *code, char out[CURRENCY_BUF])
{
    char tmp[CURRENCY_BUF];

    if (lookup(code, tmp) == NULL) {
        if (out != NULL)
            out[0] = '\0';
        return CURRENCY_UNKNOWN;
    }
    if (out != NULL)
        memcpy(out, tmp, CURRENCY_BUF);
    return CURRENCY_OK;
}

int currency_exponent(const char *code)
{
    char tmp[CURRENCY_BUF];
    const struct currency_info *ci = lookup(code, tmp);

    return ci == NULL ? -1 : ci->exponent;
}

/* 10^n for the small n of the table (n <= 3). */
static int64_t pow10_small(int n)
{
    int64_t p = 1;

    while (n-- > 0)
        p *= 10;
    return p;
}

/* Rescales v >= 0 from units of 10^-from_exp to units of 10^-to_exp,
 * exactly: going to a coarser unit must leave no remainder, and going to a
 * finer one must not overflow int64_t. */
static enum currency_status rescale(int64_t v, int from_exp, int to_exp, int64_t *out)
{
    int64_t f;

    if (v < 0)
        return CURRENCY_RANGE;
    if (from_exp <= to_exp) {
        f = pow10_small(to_exp - from_exp);
        if (v > INT64_MAX / f)
            return CURRENCY_RANGE;
        *out = v * f;
        return CURRENCY_OK;
    }
    f = pow10_small(from_exp - to_exp);
    if (v % f != 0)
        return CURRENCY_INEXACT;
    *out = v / f;
    return CURRENCY_OK;
}

enum currency_status currency_minor_to_cents(const char *code, int64_t minor, int64_t *cents)
{
    int exp = currency_exponent(code);
    enum currency_status st;
    int64_t v = 0;

    if (cents == NULL)
        return CURRENCY_RANGE;
    *cents = 0;
    if (exp < 0)
        return CURRENCY_UNKNOWN;
    if ((st = rescale(minor, exp, CENTS_EXPONENT, &v)) != CURRENCY_OK)
        return st;
    if (v > CENTS_MAX)
        return CURRENCY_RANGE;
    *cents = v;
    return CURRENCY_OK;
}

enum currency_status currency_cents_to_minor(const char *code, int64_t cents, int64_t *minor)
{
    int exp = currency_exponent(code);

    if (minor == NULL)
        return CURRENCY_RANGE;
    *minor = 0;
    if (exp < 0)
        return CURRENCY_UNKNOWN;
    if (cents > CENTS_MAX)
        return CURRENCY_RANGE;
    return rescale(cents, CENTS_EXPONENT, exp, minor);
}
