/* ids.h - random identifiers: anti-resubmit tokens, lock values and order
 * numbers. The randomness comes from the kernel (getrandom), never from
 * rand(). No other I/O; safe from any thread. */
#ifndef PAYCALLBACK_IDS_H
#define PAYCALLBACK_IDS_H

#include <stddef.h>
#include <time.h>

#define IDS_TOKEN_BYTES 16 /* a token or lock value: 32 hex digits */
#define IDS_TOKEN_BUF (2 * IDS_TOKEN_BYTES + 1)
#define IDS_ORDER_RAND_BYTES 8                               /* random tail of an order number */
#define IDS_ORDER_NO_LEN (1 + 14 + 2 * IDS_ORDER_RAND_BYTES) /* 31 */
#define IDS_ORDER_NO_BUF (IDS_ORDER_NO_LEN + 1)

/* Writes 2 * nbytes lowercase hex digits of kernel randomness and a NUL
 * into out (2 * nbytes + 1 bytes). Returns 0, or -1 when the kernel
 * refuses (out is then the empty string). nbytes is at most 64. */
int ids_random_hex(char *out, size_t nbytes);

/* A 32-hex-digit token (or lock value) into out. 0 or -1, as above. */
int ids_token(char out[IDS_TOKEN_BUF]);

/* An order number unique across instances without coordination:
 * "O" + the UTC time now as yyyymmddHHMMSS + 16 random hex digits, e.g.
 * "O20240501123045" "9f1c0a7e5b3d2c18". Two instances collide only when
 * they draw the same 64 random bits in the same second; the UNIQUE key on
 * orders.order_no catches even that. 0 or -1. */
int ids_order_no(char out[IDS_ORDER_NO_BUF]);

/* Same, at the given time (for tests). */
int ids_order_no_at(char out[IDS_ORDER_NO_BUF], time_t now);

#endif
