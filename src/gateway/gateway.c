/* gateway.c - turns the gateway profiles of the config into usable
 * gateways: public keys parsed, secrets taken from the environment. Every
 * check that can fail does so here, at start, and never on a request. */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "config.h"
#include "privkey.h"
#include "pubkey.h"

struct gateways {
    struct gateway gw[GATEWAYS_MAX];
    struct pubkey *keys[GATEWAYS_MAX][GATEWAY_KEYS_MAX]; /* owned */
    struct privkey *merchant[GATEWAYS_MAX];              /* owned */
    size_t n;
    const char *names[GATEWAYS_MAX]; /* metrics labels */
};

static struct pubkey *load_key(const struct gateway_key_cfg *k, char *err, size_t errsz)
{
    return k->file[0] != '\0' ? pubkey_create_file(k->file, err, errsz)
                              : pubkey_create(k->text, err, errsz);
}

/* The secret of p from its environment variable into gw->secret. */
static int load_secret(const struct gateway_profile_cfg *p, struct gateway *gw, char *err,
                       size_t errsz)
{
    const char *v = getenv(p->secret_env);

    if (v == NULL || v[0] == '\0') {
        snprintf(err, errsz,
                 "gateway %s: %s is not set; the %s secret must come from the "
                 "environment",
                 p->name, p->secret_env,
                 p->kind == GATEWAY_WECHATPAY_V3 ? "APIv3 key" : "endpoint");
        return -1;
    }
    if (strlen(v) >= sizeof(gw->secret)) {
        snprintf(err, errsz, "gateway %s: %s is longer than %d bytes", p->name, p->secret_env,
                 GATEWAY_SECRET_MAX - 1);
        return -1;
    }
    if (p->kind == GATEWAY_WECHATPAY_V3 && strlen(v) != GATEWAY_WECHAT_APIV3_KEY_LEN) {
        snprintf(err, errsz, "gateway %s: %s must hold the 32-byte APIv3 key, got %zu bytes",
                 p->name, p->secret_env, strlen(v));
        return -1;
    }
    memcpy(gw->secret, v, strlen(v) + 1);
    return 0;
}

/* What a profile with a refund_url signs its refund requests with:
 * Stripe's secret API key from refund_key_env into gw->refund_key; the
 * merchant's private key file (owner-only) for Alipay and WeChat Pay. */
static int load_refund_key(const struct gateway_profile_cfg *p, struct gateways *g,
                           struct gateway *gw, char *err, size_t errsz)
{
    const char *v;

    if (p->refund_url[0] == '\0')
        return 0;
    if (p->kind != GATEWAY_STRIPE) {
        char why[384];

        g->merchant[g->n] = privkey_load_file(p->merchant_key_file, why, sizeof(why));
        if (g->merchant[g->n] == NULL) {
            snprintf(err, errsz, "gateway %s: merchant_key_file: %s", p->name, why);
            return -1;
        }
        gw->merchant_key = g->merchant[g->n];
        return 0;
    }
    v = getenv(p->refund_key_env);
    if (v == NULL || v[0] == '\0') {
        snprintf(err, errsz,
                 "gateway %s: %s is not set; refunds need the secret API key from the "
                 "environment",
                 p->name, p->refund_key_env);
        return -1;
    }
    if (strlen(v) >= sizeof(gw->refund_key)) {
        snprintf(err, errsz, "gateway %s: %s is longer than %d bytes", p->name, p->refund_key_env,
                 GATEWAY_SECRET_MAX - 1);
        return -1;
    }
    memcpy(gw->refund_key, v, strlen(v) + 1);
    return 0;
}

static int load_gateway(struct gateways *g, const struct gateway_profile_cfg *p, char *err,
                        size_t errsz)
{
    struct gateway *gw = &g->gw[g->n];
    char why[384];
    size_t i;

    gw->cfg = p;
    gw->index = g->n;
    g->names[g->n] = p->name;
    for (i = 0; i < p->nkeys; i++) {
        if ((g->keys[g->n][i] = load_key(&p->keys[i], why, sizeof(why))) == NULL) {
            snprintf(err, errsz, "gateway %s: key %zu%s%s: %s", p->name, i,
                     p->keys[i].serial[0] ? " serial " : "", p->keys[i].serial, why);
            return -1;
        }
        gw->wechat_keys[i].serial = p->keys[i].serial;
        gw->wechat_keys[i].key = g->keys[g->n][i];
    }
    if (p->kind == GATEWAY_ALIPAY)
        gw->alipay_key = g->keys[g->n][0];
    else if (p->kind == GATEWAY_WECHATPAY_V3)
        gw->nwechat_keys = p->nkeys;
    if (p->kind != GATEWAY_ALIPAY && load_secret(p, gw, err, errsz) != 0)
        return -1;
    return load_refund_key(p, g, gw, err, errsz);
}

struct gateways *gateways_create(const struct config *cfg, char *err, size_t errsz)
{
    struct gateways *g = calloc(1, sizeof(*g));
    size_t i;

    if (g == NULL) {
        snprintf(err, errsz, "out of memory loading gateways");
        return NULL;
    }
    for (i = 0; i < cfg->gateways.n; i++) {
        if (load_gateway(g, &cfg->gateways.profile[i], err, errsz) != 0) {
            g->n++; /* so its keys are freed too */
            gateways_destroy(g);
            return NULL;
        }
        g->n++;
    }
    return g;
}

void gateways_destroy(struct gateways *g)
{
    size_t i, j;

    if (g == NULL)
        return;
    for (i = 0; i < g->n; i++) {
        for (j = 0; j < GATEWAY_KEYS_MAX; j++)
            pubkey_destroy(g->keys[i][j]);
        privkey_destroy(g->merchant[i]);
    }
    /* The secrets go with the memory; wipe them so a core dump of a later
     * allocation does not show them. */
    for (i = 0; i < g->n; i++) {
        OPENSSL_cleanse(g->gw[i].secret, sizeof(g->gw[i].secret));
        OPENSSL_cleanse(g->gw[i].refund_key, sizeof(g->gw[i].refund_key));
    }
    free(g);
}

const struct gateway *gateways_find(const struct gateways *g, const char *name)
{
    size_t i;

    if (g == NULL || name == NULL)
        return NULL;
    for (i = 0; i < g->n; i++)
        if (strcmp(g->gw[i].cfg->name, name) == 0)
            return &g->gw[i];
    return NULL;
}

size_t gateways_count(const struct gateways *g)
{
    return g == NULL ? 0 : g->n;
}

const struct gateway *gateways_at(const struct gateways *g, size_t i)
{
    return g == NULL || i >= g->n ? NULL : &g->gw[i];
}

const char *const *gateways_names(const struct gateways *g, size_t *n)
{
    *n = g->n;
    return g->names;
}
