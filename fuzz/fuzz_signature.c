/* fuzz_signature.c - libFuzzer target for the callback signature headers:
 * the input is "X-Timestamp\nX-Signature\nbody". sig_verify must never
 * accept a signature that differs from the one sig_compute makes, and must
 * accept that one whenever the timestamp is a valid one in the window. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "signature.h"

#define SECRET "fuzz-secret"
#define NOW_S 1700000000
#define WINDOW 300

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits off the text up to the next '\n' as a malloc'd string. */
static char *take_line(const uint8_t **p, size_t *left)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t left = size;
    char *ts = take_line(&p, &left), *sig = take_line(&p, &left);
    char good[SIG_HEX_LEN + 1];
    enum sig_status st, st_good;

    if (ts == NULL || sig == NULL)
        goto out;
    st = sig_verify(SECRET, ts, sig, (const char *)p, left, NOW_S, WINDOW);
    if (sig_compute(SECRET, ts, (const char *)p, left, good) != 0)
        goto out;
    st_good = sig_verify(SECRET, ts, good, (const char *)p, left, NOW_S, WINDOW);
    if (st == SIG_OK && strcmp(sig, good) != 0)
        abort(); /* a forged signature passed */
    if (st_good != SIG_OK && st_good != SIG_BAD_TIMESTAMP && st_good != SIG_MISSING)
        abort(); /* the right MAC was refused */
    if (st == SIG_OK && st_good != SIG_OK)
        abort();
    (void)sig_status_str(st);
out:
    free(ts);
    free(sig);
    return 0;
}
