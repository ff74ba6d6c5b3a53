/* gateway_stripe.h - Stripe-style webhooks: Stripe-Signature "t=...,v1=..."
 * (any v1 may match), HMAC-SHA256 over t "." body with the endpoint
 * secret, and payment_intent.succeeded events. Pure apart from the
 * caller's clock; thread-safe. */
#ifndef PAYCALLBACK_GW_STRIPE_H
#define PAYCALLBACK_GW_STRIPE_H

#include <stddef.h>
#include <stdint.h>

#include "gateway_notice.h"

#define GATEWAY_STRIPE_TOLERANCE_S 300 /* Stripe's own default */
#define GATEWAY_STRIPE_V1_MAX 8        /* v1 entries considered per header */
#define GATEWAY_STRIPE_TS_BUF 20       /* 19 digits and the NUL */

/* The parts of a Stripe-Signature header that matter. */
struct gateway_stripe_header {
    char t[GATEWAY_STRIPE_TS_BUF];
    const char *v1[GATEWAY_STRIPE_V1_MAX]; /* point into v1_buf */
    size_t nv1;
    char v1_buf[GATEWAY_STRIPE_V1_MAX][65];
};

/* Parses "k=v,k=v,...": t must be 1..19 digits and appear once; every v1
 * that is 64 hex digits is kept (up to GATEWAY_STRIPE_V1_MAX); other schemes
 * (v0) are ignored. Returns GATEWAY_OK, or GATEWAY_SIG_MISSING when the header is
 * absent or has no t or no v1. */
enum gateway_status gateway_stripe_header_parse(const char *header,
                                                struct gateway_stripe_header *h);

/* Verifies header over body: t within tolerance_s of now_s either way,
 * and at least one v1 equal (constant time) to the lowercase hex
 * HMAC-SHA256(secret, t "." body). Returns GATEWAY_OK, GATEWAY_SIG_MISSING,
 * GATEWAY_SIG_STALE, GATEWAY_SIG_MISMATCH or GATEWAY_ERROR. */
enum gateway_status gateway_stripe_verify(const char *secret, const char *header, const char *body,
                                          size_t body_len, int64_t now_s, int64_t tolerance_s);

/* Reads a verified event. payment_intent.succeeded pays data.object.id
 * (pay_no) for data.object.metadata.order_no, amount_received minor units
 * of data.object.currency; any other type is acknowledged only. Returns
 * GATEWAY_OK, GATEWAY_MALFORMED, GATEWAY_BAD_AMOUNT or GATEWAY_BAD_CURRENCY; on failure *n is
 * zeroed. */
enum gateway_status gateway_stripe_notice(const char *body, size_t body_len,
                                          struct gateway_notice *n);

#endif
