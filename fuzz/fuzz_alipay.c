/* fuzz_alipay.c - libFuzzer target for Alipay notifications: the input is
 * the form body. It goes through form_parse, gateway_alipay_sign_content,
 * gateway_alipay_verify with a key made at start-up (which no input can forge a
 * signature for) and gateway_alipay_notice, the read that follows a good
 * signature. A paying form that carries no sign is then signed here, so the
 * accepting path of the verifier runs too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "gateway_alipay.h"
#include "money.h"
#include "pubkey.h"
#include "gateway_check.h"
#include "../tests/testkeys.h"

#define APP_ID "2021000000000001"
#define CURRENCY "CNY"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct testkey *alipay; /* Alipay's private half */
static struct pubkey *alipay_pub;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[128], *pem;

    (void)argc;
    (void)argv;
    alipay = testkey_create();
    pem = testkey_public_pem(alipay);
    if ((alipay_pub = pubkey_create(pem, err, sizeof(err))) == NULL)
        abort();
    free(pem);
    return 0;
}

static int is_signature_field(const char *key)
{
    return strcmp(key, "sign") == 0 || strcmp(key, "sign_type") == 0;
}

/* The signed string restated: every other field, sorted by key, k=v joined
 * by '&'. Keys are unique, so the order is total. */
static void check_sign_content(const struct form *f, const char *content)
{
    const struct form_field **s = malloc((f->n + 1) * sizeof(*s)), *t;
    size_t i, j, n = 0, pos = 0, kl, vl;

    if (s == NULL)
        abort();
    for (i = 0; i < f->n; i++)
        if (!is_signature_field(f->field[i].key))
            s[n++] = &f->field[i];
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && strcmp(s[j - 1]->key, s[j]->key) > 0; j--) {
            t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    for (i = 0; i < n; i++) {
        kl = strlen(s[i]->key);
        vl = strlen(s[i]->value);
        if ((i > 0 && content[pos++] != '&') || strncmp(content + pos, s[i]->key, kl) != 0 ||
            content[pos + kl] != '=' || strncmp(content + pos + kl + 1, s[i]->value, vl) != 0)
            abort();
        pos += kl + 1 + vl;
    }
    if (content[pos] != '\0')
        abort();
    free(s);
}

/* f with a sign field made by Alipay's key over its signed string, which
 * gateway_alipay_verify must accept unless sign_type names another scheme. */
static void check_accepts_own_signature(const struct form *f, const char *content)
{
    const char *sign_type = form_get(f, "sign_type");
    struct form g = { malloc((f->n + 1) * sizeof(*g.field)), f->n + 1 };
    char *sig = testkey_sign_b64(alipay, content, strlen(content));
    enum gateway_status want =
        sign_type == NULL || strcmp(sign_type, "RSA2") == 0 ? GATEWAY_OK : GATEWAY_SIG_MISMATCH;

    if (g.field == NULL)
        abort();
    memcpy(g.field, f->field, f->n * sizeof(*g.field));
    g.field[f->n].key = (char *)"sign";
    g.field[f->n].value = sig;
    if (gateway_alipay_verify(&g, alipay_pub) != want)
        abort();
    free(sig);
    free(g.field);
}

/* The read after a good signature, and what it must have taken. */
static void check_notice(const struct form *f, const char *content)
{
    struct gateway_notice n;
    enum gateway_status st = gateway_alipay_notice(f, APP_ID, CURRENCY, &n);
    int64_t cents = -1;

    gateway_check_notice(st, &n);
    if (st == GATEWAY_OK && n.pays) {
        if (strcmp(form_get(f, "app_id"), APP_ID) != 0 ||
            strcmp(form_get(f, "trade_no"), n.pay_no) != 0 ||
            strcmp(form_get(f, "out_trade_no"), n.order_no) != 0 ||
            money_parse(form_get(f, "total_amount"), &cents) != MONEY_OK ||
            cents != n.amount_cents || strcmp(n.currency, CURRENCY) != 0)
            abort();
        if (form_get(f, "sign") == NULL)
            check_accepts_own_signature(f, content);
    }
    st = gateway_alipay_notice(f, NULL, CURRENCY, &n);
    if (st != GATEWAY_WRONG_APP)
        abort(); /* no profile app_id matches nothing */
    gateway_check_notice(st, &n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct form *f = NULL;
    const char *sign;
    char *content = NULL;
    enum gateway_status st;

    if (form_parse((const char *)data, size, &f) != FORM_OK)
        return 0; /* fuzz_form's ground */
    if ((content = gateway_alipay_sign_content(f)) == NULL)
        abort();
    check_sign_content(f, content);
    sign = form_get(f, "sign");
    st = gateway_alipay_verify(f, alipay_pub);
    if (sign == NULL || sign[0] == '\0') {
        if (st != GATEWAY_SIG_MISSING)
            abort();
    } else if (st != GATEWAY_SIG_MISMATCH) {
        abort(); /* a forgery passed, or a 500 for bad input */
    }
    check_notice(f, content);
    free(content);
    form_destroy(f);
    return 0;
}
