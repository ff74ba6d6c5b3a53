/* gateway.h - the configured payment gateways at run time: each profile of
 * config "gateways" with its public keys loaded and its secret read from
 * the environment. Built once at start (or by --check-config), read-only
 * afterwards, so any thread may look a gateway up. */
#ifndef PAYCALLBACK_GATEWAY_H
#define PAYCALLBACK_GATEWAY_H

#include <stddef.h>

#include "gateway_cfg.h"
#include "gateway_wechat.h"

struct config;
struct privkey;
struct pubkey;

#define GATEWAY_SECRET_MAX 256

/* One usable gateway. Borrowed from the registry until gateways_destroy. */
struct gateway {
    const struct gateway_profile_cfg *cfg; /* borrowed from the config */
    size_t index;                          /* position: its metrics label slot */
    const struct pubkey *alipay_key;       /* alipay: Alipay's public key */
    struct gateway_wechat_key wechat_keys[GATEWAY_KEYS_MAX];
    size_t nwechat_keys;                 /* wechatpay_v3: platform keys */
    char secret[GATEWAY_SECRET_MAX];     /* stripe: endpoint secret;
                                                   wechatpay_v3: the APIv3 key */
    char refund_key[GATEWAY_SECRET_MAX]; /* stripe with a refund_url: the secret API key */
    const struct privkey *merchant_key;  /* alipay, wechatpay_v3 with a refund_url */
};

struct gateways;

/* Loads every key and secret of cfg->gateways. Fails closed: a key file
 * that is missing or not an RSA key of 2048 bits or more, an empty secret,
 * or an APIv3 key that is not 32 bytes stops here with a one-line reason
 * in err naming the gateway. Returns the registry (free with
 * gateways_destroy; cfg must outlive it), or NULL. */
struct gateways *gateways_create(const struct config *cfg, char *err, size_t errsz);

/* NULL-safe. */
void gateways_destroy(struct gateways *g);

/* The gateway called name, or NULL. */
const struct gateway *gateways_find(const struct gateways *g, const char *name);

/* Number of gateways and the i-th one (i < count), for start-up logs and
 * --check-config. */
size_t gateways_count(const struct gateways *g);
const struct gateway *gateways_at(const struct gateways *g, size_t i);

/* The gateway names, in registry order (i-th is gateways_at(g, i)), for
 * metrics labels; *n is set to their number. Borrowed until
 * gateways_destroy. */
const char *const *gateways_names(const struct gateways *g, size_t *n);

#endif
