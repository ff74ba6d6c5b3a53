/* ids.c - tokens, lock values and order numbers from kernel randomness.
 * getrandom(2) without flags blocks only until the kernel pool is first
 * seeded at boot, and never returns short for requests of 256 bytes or
 * less, so one call is one answer. */
#include "ids.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "hex.h"

#define IDS_RANDOM_MAX_BYTES 64

int ids_random_hex(char *out, size_t nbytes)
{
    unsigned char r[IDS_RANDOM_MAX_BYTES];
    ssize_t n;

    out[0] = '\0';
    if (nbytes == 0 || nbytes > sizeof(r))
        return -1;
    while ((n = getrandom(r, nbytes, 0)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)nbytes)
        return -1;
    hex_encode(r, nbytes, out);
    return 0;
}

int ids_token(char out[IDS_TOKEN_BUF])
{
    return ids_random_hex(out, IDS_TOKEN_BYTES);
}

int ids_order_no_at(char out[IDS_ORDER_NO_BUF], time_t now)
{
    char tail[2 * IDS_ORDER_RAND_BYTES + 1];
    struct tm tm;
    int n;

    out[0] = '\0';
    if (gmtime_r(&now, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1000)
        return -1;
    if (ids_random_hex(tail, IDS_ORDER_RAND_BYTES) != 0)
        return -1;
    n = snprintf(out, IDS_ORDER_NO_BUF, "O%04d%02d%02d%02d%02d%02d%s", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tail);
    if (n != IDS_ORDER_NO_LEN) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int ids_order_no(char out[IDS_ORDER_NO_BUF])
{
    return ids_order_no_at(out, time(NULL));
}
