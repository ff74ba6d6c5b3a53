/* fuzz_stripe.c - libFuzzer target for Stripe-style webhooks: the input is
 * "Stripe-Signature\nbody". The header goes through gateway_stripe_header_parse,
 * checked against a plain restatement of its grammar; header and body
 * through gateway_stripe_verify, which must accept exactly when a fresh t and
 * one of the v1 values match the MAC; and the body through
 * gateway_stripe_notice, the read that follows a good signature, whose fields
 * must be the event's own. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "currency.h"
#include "gateway_stripe.h"
#include "signature.h"
#include "gateway_check.h"
#include "../tests/testkeys.h"

#define SECRET "whsec_fuzz"
#define NOW_S 1700000000
#define WINDOW_S GATEWAY_STRIPE_TOLERANCE_S

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int all_of(const char *s, size_t len, const char *set)
{
    size_t i;

    for (i = 0; i < len; i++)
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return 0;
    return 1;
}

/* The grammar restated: comma-separated items; an item without '=' or
 * with another key is ignored; t once, 1..19 digits; every v1 of 64
 * lowercase hex digits kept, the first GATEWAY_STRIPE_V1_MAX of them. */
static void check_header(const char *header, enum gateway_status st,
                         const struct gateway_stripe_header *h)
{
    static const struct gateway_stripe_header zero;
    const char *p = header, *comma, *eq;
    size_t len, nt = 0, nv1 = 0, vl;
    int bad_t = 0;
    char t[GATEWAY_STRIPE_TS_BUF] = "";

    for (; p != NULL && *p != '\0'; p = comma ? comma + 1 : NULL) {
        comma = strchr(p, ',');
        len = comma ? (size_t)(comma - p) : strlen(p);
        if ((eq = memchr(p, '=', len)) == NULL)
            continue;
        vl = len - (size_t)(eq - p) - 1;
        if (eq - p == 1 && p[0] == 't') {
            bad_t |= nt++ > 0 || vl == 0 || vl >= GATEWAY_STRIPE_TS_BUF ||
                     !all_of(eq + 1, vl, "0123456789");
            if (!bad_t)
                memcpy(t, eq + 1, vl);
        } else if (eq - p == 2 && memcmp(p, "v1", 2) == 0 && vl == SIG_HEX_LEN &&
                   all_of(eq + 1, vl, "0123456789abcdef")) {
            if (nv1 < GATEWAY_STRIPE_V1_MAX &&
                (h->v1[nv1] != h->v1_buf[nv1] || strncmp(h->v1[nv1], eq + 1, vl) != 0 ||
                 h->v1[nv1][vl] != '\0') &&
                st == GATEWAY_OK)
                abort(); /* not the nv1-th v1, in order */
            nv1++;
        }
    }
    if (st != (bad_t || nt == 0 || nv1 == 0 ? GATEWAY_SIG_MISSING : GATEWAY_OK))
        abort();
    if (st != GATEWAY_OK) {
        if (memcmp(h, &zero, sizeof(zero)) != 0)
            abort();
        return;
    }
    if (strcmp(h->t, t) != 0 ||
        h->nv1 != (nv1 < GATEWAY_STRIPE_V1_MAX ? nv1 : GATEWAY_STRIPE_V1_MAX))
        abort();
}

/* Accepted exactly when t is fresh and some v1 is the MAC; computed here
 * with testkeys.c's HMAC, not the service's, when the body is a C string. */
static void check_verify(const char *header, const char *body, size_t len)
{
    struct gateway_stripe_header h;
    char mac[SIG_HEX_LEN + 1];
    enum gateway_status want = gateway_stripe_header_parse(header, &h), st;
    size_t i;

    if (want == GATEWAY_OK && !sig_ts_fresh(h.t, NOW_S, WINDOW_S))
        want = GATEWAY_SIG_STALE;
    if (want == GATEWAY_OK) {
        if (memchr(body, '\0', len) == NULL)
            testkey_hmac_hex(SECRET, h.t, body, mac);
        else if (sig_compute(SECRET, h.t, body, len, mac) != 0)
            abort();
        want = GATEWAY_SIG_MISMATCH;
        for (i = 0; i < h.nv1; i++)
            if (strcmp(h.v1[i], mac) == 0)
                want = GATEWAY_OK;
    }
    st = gateway_stripe_verify(SECRET, header, body, len, NOW_S, WINDOW_S);
    if (st != want)
        abort();
    st = gateway_stripe_verify("", header, body, len, NOW_S, WINDOW_S);
    if (st != (want == GATEWAY_OK ? GATEWAY_SIG_MISMATCH : want))
        abort(); /* no secret accepts nothing */
}

/* A header Stripe would send for body, behind a v0 and a stale v1. */
static void check_accepts_own_signature(const char *body, size_t len)
{
    char mac[SIG_HEX_LEN + 1], t[24], header[256];

    snprintf(t, sizeof(t), "%d", NOW_S);
    if (sig_compute(SECRET, t, body, len, mac) != 0)
        abort();
    snprintf(header, sizeof(header), "t=%s,v0=%s,v1=%064d,v1=%s", t, mac, 0, mac);
    if (gateway_stripe_verify(SECRET, header, body, len, NOW_S, WINDOW_S) != GATEWAY_OK)
        abort();
}

static const char *str_member(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* A paying notice took its fields from data.object of a
 * payment_intent.succeeded event, its cents exactly amount_received. */
static void check_paid_from(const char *body, size_t len, const struct gateway_notice *n)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *obj =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "data"), "object");
    const cJSON *got = cJSON_GetObjectItemCaseSensitive(obj, "amount_received");
    char cur[CURRENCY_BUF];
    int64_t minor = -1;

    if (root == NULL || !cJSON_IsNumber(got) ||
        strcmp(str_member(root, "type"), "payment_intent.succeeded") != 0 ||
        strcmp(str_member(obj, "id"), n->pay_no) != 0 ||
        strcmp(str_member(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "order_no"),
               n->order_no) != 0 ||
        currency_normalize(str_member(obj, "currency"), cur) != CURRENCY_OK ||
        strcmp(cur, n->currency) != 0)
        abort();
    if (currency_cents_to_minor(n->currency, n->amount_cents, &minor) != CURRENCY_OK ||
        (double)minor != got->valuedouble)
        abort();
    cJSON_Delete(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t left = size;
    char *header = gateway_take_line(&p, &left), *body = gateway_take_body(p, left);
    struct gateway_stripe_header h;
    struct gateway_notice n;
    enum gateway_status st;

    if (header == NULL || body == NULL)
        goto out;
    st = gateway_stripe_header_parse(header, &h);
    check_header(header, st, &h);
    check_verify(header, body, left);
    check_accepts_own_signature(body, left);
    st = gateway_stripe_notice(body, left, &n);
    gateway_check_notice(st, &n);
    if (st == GATEWAY_OK && n.pays)
        check_paid_from(body, left, &n);
out:
    free(header);
    free(body);
    return 0;
}
