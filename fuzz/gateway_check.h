/* gateway_check.h - what the gateway fuzz targets share: splitting the input
 * into header lines and a body, and the contract of a struct gateway_notice,
 * checked after every read. A broken rule aborts, so the fuzzer reports
 * it like a crash. Header-only: each target is one translation unit. */
#ifndef PAYCALLBACK_FUZZ_GW_CHECK_H
#define PAYCALLBACK_FUZZ_GW_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "currency.h"
#include "gateway_notice.h"
#include "money.h"
#include "validate.h"

#define GATEWAY_CHECK_CENTS_MAX INT64_C(999999999999) /* DECIMAL(12,2) */

/* Splits off the text up to the next '\n' as a malloc'd string, as a
 * header value arrives (no line break inside). NULL when out of memory. */
static inline char *gateway_take_line(const uint8_t **p, size_t *left)
{
    const uint8_t *nl = memchr(*p, '\n', *left);
    size_t n = nl ? (size_t)(nl - *p) : *left;
    char *s = malloc(n + 1);

    if (s != NULL) {
        memcpy(s, *p, n);
        s[n] = '\0';
    }
    *p += nl ? n + 1 : n;
    *left -= nl ? n + 1 : n;
    return s;
}

/* A copy of the remaining bytes with a NUL after them, as http.c hands a
 * body to a handler. NULL when out of memory. */
static inline char *gateway_take_body(const uint8_t *p, size_t left)
{
    char *s = malloc(left + 1);

    if (s != NULL) {
        memcpy(s, p, left);
        s[left] = '\0';
    }
    return s;
}

static inline int gateway_terminated(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

/* The rules every read obeys: a failure leaves *n zeroed; a success
 * names the state; a paying notice carries two contract identifiers, a
 * known upper-case currency and an amount the orders table can hold, and
 * a notice that pays nothing carries nothing else. */
static inline void gateway_check_notice(enum gateway_status st, const struct gateway_notice *n)
{
    static const struct gateway_notice zero;
    char cur[CURRENCY_BUF], buf[MONEY_STR_MAX];
    int64_t again = -1;

    if (!gateway_terminated(n->state, sizeof(n->state)) ||
        !gateway_terminated(n->pay_no, sizeof(n->pay_no)) ||
        !gateway_terminated(n->order_no, sizeof(n->order_no)) ||
        !gateway_terminated(n->currency, sizeof(n->currency)))
        abort();
    if (gateway_status_reason(st) == NULL || gateway_status_str(st) == NULL)
        abort();
    if (st != GATEWAY_OK) {
        if (memcmp(n, &zero, sizeof(zero)) != 0)
            abort(); /* a refusal leaves nothing behind */
        return;
    }
    if (n->state[0] == '\0')
        abort();
    if (!n->pays) {
        if (n->pay_no[0] != '\0' || n->order_no[0] != '\0' || n->amount_cents != 0 ||
            n->currency[0] != '\0')
            abort();
        return;
    }
    if (!validate_id(n->pay_no) || !validate_id(n->order_no))
        abort();
    if (currency_normalize(n->currency, cur) != CURRENCY_OK || strcmp(cur, n->currency) != 0)
        abort();
    if (n->amount_cents < 0 || n->amount_cents > GATEWAY_CHECK_CENTS_MAX)
        abort();
    money_format(n->amount_cents, buf, sizeof(buf));
    if (money_parse(buf, &again) != MONEY_OK || again != n->amount_cents)
        abort(); /* the amount pay_apply would store */
}

#endif
