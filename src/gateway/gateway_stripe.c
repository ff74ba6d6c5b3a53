/* gateway_stripe.c - Stripe-style webhook verification and reading. The MAC is
 * signature.c's (HMAC-SHA256 of t "." body, lowercase hex); this module
 * adds the header grammar, several v1 values for secret rotation, and the
 * payment_intent event. */
#include "gateway_stripe.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "jsonutil.h"
#include "signature.h"

static int is_hex64(const char *s, size_t len)
{
    size_t i;

    if (len != SIG_HEX_LEN)
        return 0;
    for (i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int is_ts(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len >= GATEWAY_STRIPE_TS_BUF)
        return 0;
    for (i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* Takes one "k=v" item of the header into h. A second t makes the header
 * ambiguous, so it is refused (-1). */
static int take_item(const char *p, size_t len, struct gateway_stripe_header *h)
{
    const char *eq = memchr(p, '=', len);
    size_t kl, vl;

    if (eq == NULL)
        return 0; /* not k=v: ignored like unknown schemes */
    kl = (size_t)(eq - p);
    vl = len - kl - 1;
    if (kl == 1 && p[0] == 't') {
        if (h->t[0] != '\0' || !is_ts(eq + 1, vl))
            return -1;
        memcpy(h->t, eq + 1, vl);
        h->t[vl] = '\0';
    } else if (kl == 2 && memcmp(p, "v1", 2) == 0 && is_hex64(eq + 1, vl) &&
               h->nv1 < GATEWAY_STRIPE_V1_MAX) {
        memcpy(h->v1_buf[h->nv1], eq + 1, vl);
        h->v1_buf[h->nv1][vl] = '\0';
        h->v1[h->nv1] = h->v1_buf[h->nv1];
        h->nv1++;
    }
    return 0;
}

enum gateway_status gateway_stripe_header_parse(const char *header, struct gateway_stripe_header *h)
{
    const char *p, *comma;

    memset(h, 0, sizeof(*h));
    if (header == NULL || header[0] == '\0')
        return GATEWAY_SIG_MISSING;
    for (p = header;; p = comma + 1) {
        comma = strchr(p, ',');
        if (take_item(p, comma != NULL ? (size_t)(comma - p) : strlen(p), h) != 0) {
            memset(h, 0, sizeof(*h));
            return GATEWAY_SIG_MISSING;
        }
        if (comma == NULL)
            break;
    }
    if (h->t[0] == '\0' || h->nv1 == 0) {
        memset(h, 0, sizeof(*h));
        return GATEWAY_SIG_MISSING;
    }
    return GATEWAY_OK;
}

enum gateway_status gateway_stripe_verify(const char *secret, const char *header, const char *body,
                                          size_t body_len, int64_t now_s, int64_t tolerance_s)
{
    struct gateway_stripe_header h;
    char expected[SIG_HEX_LEN + 1];
    enum gateway_status st;
    int match = 0;
    size_t i;

    if ((st = gateway_stripe_header_parse(header, &h)) != GATEWAY_OK)
        return st;
    if (!sig_ts_fresh(h.t, now_s, tolerance_s))
        return GATEWAY_SIG_STALE;
    if (secret == NULL || secret[0] == '\0')
        return GATEWAY_SIG_MISMATCH; /* fail closed */
    if (sig_compute(secret, h.t, body, body_len, expected) != 0)
        return GATEWAY_ERROR;
    /* Every candidate is compared, so the time taken does not reveal which
     * one matched. */
    for (i = 0; i < h.nv1; i++)
        match |= CRYPTO_memcmp(expected, h.v1[i], SIG_HEX_LEN) == 0;
    return match ? GATEWAY_OK : GATEWAY_SIG_MISMATCH;
}

static const char *str_member(const cJSON *obj, const char *name)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static enum gateway_status read_intent(const cJSON *obj, struct gateway_notice *n)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    int64_t minor = 0;

    if (gateway_copy_id(n->pay_no, str_member(obj, "id")) != 0 || !cJSON_IsObject(meta) ||
        gateway_copy_id(n->order_no, str_member(meta, "order_no")) != 0)
        return GATEWAY_MALFORMED;
    if (currency_normalize(str_member(obj, "currency"), n->currency) != CURRENCY_OK)
        return GATEWAY_BAD_CURRENCY;
    if (gateway_json_amount(cJSON_GetObjectItemCaseSensitive(obj, "amount_received"), INT64_MAX,
                            &minor) != 0 ||
        currency_minor_to_cents(n->currency, minor, &n->amount_cents) != CURRENCY_OK)
        return GATEWAY_BAD_AMOUNT;
    n->pays = true;
    return GATEWAY_OK;
}

/* The refund's amount, in its currency's minor units: kept only when it
 * converts exactly (a notification without one is matched without it). */
static void refund_amount(const cJSON *obj, struct gateway_notice *n)
{
    char currency[CURRENCY_BUF];
    int64_t minor = 0;

    if (currency_normalize(str_member(obj, "currency"), currency) == CURRENCY_OK &&
        gateway_json_amount(cJSON_GetObjectItemCaseSensitive(obj, "amount"), INT64_MAX, &minor) ==
            0 &&
        currency_minor_to_cents(currency, minor, &n->refund_amount_cents) == CURRENCY_OK)
        n->refund_has_amount = true;
}

/* A refund object (refund.updated, refund.failed, or the newest refund of
 * a charge.refunded charge): our refund number is its
 * metadata.refund_no, which the service sets when it submits. */
static void read_refund(const cJSON *obj, struct gateway_notice *n)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *status = str_member(obj, "status"), *reason = str_member(obj, "failure_reason");

    if (status == NULL)
        return;
    if (strcmp(status, "succeeded") == 0)
        n->refund = GATEWAY_REFUND_SUCCEEDED;
    else if (strcmp(status, "failed") == 0 || strcmp(status, "canceled") == 0)
        n->refund = GATEWAY_REFUND_FAILED;
    else
        n->refund = GATEWAY_REFUND_PENDING;
    if (cJSON_IsObject(meta))
        gateway_copy_id(n->refund_no, str_member(meta, "refund_no"));
    gateway_copy_id(n->refund_id, str_member(obj, "id"));
    gateway_copy_id(n->pay_no, str_member(obj, "payment_intent"));
    refund_amount(obj, n);
    snprintf(n->refund_code, sizeof(n->refund_code), "%.60s",
             reason != NULL ? reason : (n->refund == GATEWAY_REFUND_FAILED ? status : ""));
}

/* charge.refunded, refund.updated, refund.failed: the refund they carry. */
static void read_refund_event(const char *type, const cJSON *obj, struct gateway_notice *n)
{
    const cJSON *list, *data;

    if (strcmp(type, "charge.refunded") != 0) {
        read_refund(obj, n);
        return;
    }
    list = cJSON_GetObjectItemCaseSensitive(obj, "refunds");
    data = cJSON_IsObject(list) ? cJSON_GetObjectItemCaseSensitive(list, "data") : NULL;
    if (cJSON_IsArray(data) && cJSON_IsObject(cJSON_GetArrayItem(data, 0)))
        read_refund(cJSON_GetArrayItem(data, 0), n); /* Stripe lists the newest first */
}

static bool refund_event(const char *type)
{
    return strcmp(type, "charge.refunded") == 0 || strcmp(type, "refund.updated") == 0 ||
           strcmp(type, "refund.failed") == 0;
}

enum gateway_status gateway_stripe_notice(const char *body, size_t body_len,
                                          struct gateway_notice *n)
{
    enum gateway_status st = GATEWAY_MALFORMED;
    const cJSON *data, *obj;
    const char *type;
    cJSON *root = NULL;

    memset(n, 0, sizeof(*n));
    /* The native reader's parser: no NUL or \u0000 anywhere, at which
     * cJSON would cut a string ("payment_intent.succeeded\u0000x"). */
    if (body == NULL || json_parse_object(body, body_len, &root) != JSON_OK)
        goto out;
    type = str_member(root, "type");
    if (type == NULL || type[0] == '\0' || strlen(type) >= sizeof(n->state))
        goto out;
    memcpy(n->state, type, strlen(type) + 1);
    if (refund_event(type)) {
        data = cJSON_GetObjectItemCaseSensitive(root, "data");
        obj = cJSON_IsObject(data) ? cJSON_GetObjectItemCaseSensitive(data, "object") : NULL;
        if (cJSON_IsObject(obj))
            read_refund_event(type, obj, n);
        st = GATEWAY_OK;
        goto out;
    }
    if (strcmp(type, "payment_intent.succeeded") != 0) {
        st = GATEWAY_OK; /* acknowledged, nothing to apply */
        goto out;
    }
    data = cJSON_GetObjectItemCaseSensitive(root, "data");
    obj = cJSON_IsObject(data) ? cJSON_GetObjectItemCaseSensitive(data, "object") : NULL;
    if (!cJSON_IsObject(obj))
        goto out;
    st = read_intent(obj, n);
out:
    if (st != GATEWAY_OK)
        memset(n, 0, sizeof(*n));
    cJSON_Delete(root);
    return st;
}
