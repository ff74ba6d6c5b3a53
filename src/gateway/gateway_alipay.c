/* gateway_alipay.c - Alipay notify verification and reading. The signed string
 * is rebuilt from the decoded parameters exactly as Alipay documents it and
 * as its SDKs check a notification (rsaCheckV1): every parameter but sign
 * and sign_type, an empty value kept as "k=" (only the string for signing
 * a request leaves empty values out). The amount is a yuan decimal string
 * read by money.c, never a float. */
#include "gateway_alipay.h"

#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "money.h"
#include "pubkey.h"

static int cmp_field(const void *a, const void *b)
{
    const struct form_field *x = *(const struct form_field *const *)a;
    const struct form_field *y = *(const struct form_field *const *)b;

    return strcmp(x->key, y->key);
}

static int is_signature_field(const char *key)
{
    return strcmp(key, "sign") == 0 || strcmp(key, "sign_type") == 0;
}

char *gateway_alipay_sign_content(const struct form *f)
{
    const struct form_field **sorted = NULL;
    size_t i, n = 0, len = 1, pos = 0;
    char *out = NULL;

    if (f == NULL)
        return NULL;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, sized as such */
    if ((sorted = malloc((f->n + 1) * sizeof(*sorted))) == NULL)
        return NULL;
    for (i = 0; i < f->n; i++) {
        if (is_signature_field(f->field[i].key))
            continue;
        sorted[n++] = &f->field[i];
        len += strlen(f->field[i].key) + strlen(f->field[i].value) + 2;
    }
    qsort(sorted, n, sizeof(*sorted), cmp_field); /* NOLINT(bugprone-sizeof-expression): as above */
    if ((out = malloc(len)) == NULL)
        goto out;
    out[0] = '\0';
    for (i = 0; i < n; i++) {
        size_t kl = strlen(sorted[i]->key), vl = strlen(sorted[i]->value);

        if (i > 0)
            out[pos++] = '&';
        memcpy(out + pos, sorted[i]->key, kl);
        pos += kl;
        out[pos++] = '=';
        memcpy(out + pos, sorted[i]->value, vl);
        pos += vl;
    }
    out[pos] = '\0';
out:
    free(sorted);
    return out;
}

enum gateway_status gateway_alipay_verify(const struct form *f, const struct pubkey *alipay_key)
{
    const char *sign = form_get(f, "sign");
    const char *sign_type = form_get(f, "sign_type");
    struct pubkey_part part;
    enum pubkey_status ps;
    char *content = NULL;

    if (sign == NULL || sign[0] == '\0')
        return GATEWAY_SIG_MISSING;
    if (sign_type != NULL && strcmp(sign_type, "RSA2") != 0)
        return GATEWAY_SIG_MISMATCH; /* RSA (SHA1) is not accepted */
    if ((content = gateway_alipay_sign_content(f)) == NULL)
        return GATEWAY_ERROR;
    part.data = content;
    part.len = strlen(content);
    ps = pubkey_verify(alipay_key, &part, 1, sign);
    free(content);
    if (ps == PUBKEY_ERROR)
        return GATEWAY_ERROR;
    return ps == PUBKEY_OK ? GATEWAY_OK : GATEWAY_SIG_MISMATCH;
}

static int pays(const char *trade_status)
{
    return strcmp(trade_status, "TRADE_SUCCESS") == 0 ||
           strcmp(trade_status, "TRADE_FINISHED") == 0;
}

enum gateway_status gateway_alipay_notice(const struct form *f, const char *app_id,
                                          const char *currency, struct gateway_notice *n)
{
    const char *got_app = form_get(f, "app_id");
    const char *status = form_get(f, "trade_status");
    const char *amount = form_get(f, "total_amount");
    enum gateway_status st = GATEWAY_MALFORMED;

    memset(n, 0, sizeof(*n));
    if (got_app == NULL || app_id == NULL || strcmp(got_app, app_id) != 0)
        return GATEWAY_WRONG_APP;
    if (status == NULL || status[0] == '\0' || strlen(status) >= sizeof(n->state))
        return GATEWAY_MALFORMED;
    memcpy(n->state, status, strlen(status) + 1);
    /* A refund's notification: the trade's status sync with the refund's
     * fields; out_biz_no is the out_request_no the refund was asked with. */
    if (form_get(f, "refund_fee") != NULL && form_get(f, "out_biz_no") != NULL) {
        n->refund = GATEWAY_REFUND_SUCCEEDED;
        gateway_copy_id(n->refund_no, form_get(f, "out_biz_no"));
        gateway_copy_id(n->refund_id, form_get(f, "trade_no"));
        gateway_copy_id(n->pay_no, form_get(f, "trade_no"));
        /* refund_fee: every refund of the trade so far, not this one's */
        n->refund_has_amount =
            money_parse(form_get(f, "refund_fee"), &n->refund_amount_cents) == MONEY_OK;
        n->refund_amount_total = true;
        return GATEWAY_OK;
    }
    if (!pays(status))
        return GATEWAY_OK; /* acknowledged, nothing to apply */
    if (gateway_copy_id(n->pay_no, form_get(f, "trade_no")) != 0 ||
        gateway_copy_id(n->order_no, form_get(f, "out_trade_no")) != 0)
        goto fail;
    st = GATEWAY_BAD_AMOUNT;
    if (amount == NULL || money_parse(amount, &n->amount_cents) != MONEY_OK)
        goto fail;
    st = GATEWAY_BAD_CURRENCY;
    if (currency_normalize(currency, n->currency) != CURRENCY_OK)
        goto fail;
    n->pays = true;
    return GATEWAY_OK;
fail:
    memset(n, 0, sizeof(*n));
    return st;
}
