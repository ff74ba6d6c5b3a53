/* keyring.c - immutable snapshots of the secrets and keys, reference
 * counted, and the slot that publishes the current one. A request takes
 * its reference under the slot's mutex (a few instructions, once per
 * request); nothing else is shared. */
#include "keyring.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gateway.h"
#include "signature.h"

struct keyslot {
    pthread_mutex_t mu;
    struct keyring *cur;
};

/* The callback secrets, keyed once per snapshot: the current one, then
 * the previous one while a rotation has set it (cfg_load never leaves the
 * current one empty). NULL when memory or OpenSSL fails. */
static struct sig_keys *callback_keys_create(const struct config *cfg)
{
    const char *secrets[] = { cfg->callback_secret, cfg->callback_previous_secret };

    return sig_keys_create(secrets, cfg->callback_previous_secret[0] ? 2 : 1);
}

struct keyring *keyring_create(const struct config *cfg, unsigned long generation, char *err,
                               size_t errsz)
{
    struct keyring *kr = malloc(sizeof(*kr));

    if (kr == NULL) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    memcpy(&kr->cfg, cfg, sizeof(kr->cfg));
    kr->generation = generation;
    atomic_init(&kr->refs, 1);
    kr->callback_keys = NULL;
    if ((kr->gw = gateways_create(&kr->cfg, err, errsz)) == NULL)
        goto fail;
    if ((kr->callback_keys = callback_keys_create(&kr->cfg)) == NULL) {
        snprintf(err, errsz, "cannot key HMAC-SHA256 with the callback secrets");
        goto fail;
    }
    return kr;
fail:
    gateways_destroy(kr->gw);
    OPENSSL_cleanse(&kr->cfg, sizeof(kr->cfg));
    free(kr);
    return NULL;
}

struct keyring *keyring_hold(struct keyring *kr)
{
    atomic_fetch_add_explicit(&kr->refs, 1, memory_order_relaxed);
    return kr;
}

void keyring_release(struct keyring *kr)
{
    if (kr == NULL || atomic_fetch_sub_explicit(&kr->refs, 1, memory_order_acq_rel) != 1)
        return;
    gateways_destroy(kr->gw);
    sig_keys_destroy(kr->callback_keys);
    OPENSSL_cleanse(&kr->cfg, sizeof(kr->cfg)); /* secrets and keys leave no copy */
    free(kr);
}

int keyring_compatible(const struct keyring *cur, const struct keyring *next, char *err,
                       size_t errsz)
{
    size_t i, n = gateways_count(cur->gw);

    if (gateways_count(next->gw) != n) {
        snprintf(err, errsz,
                 "gateways: %zu profiles, %zu running; adding or removing a "
                 "gateway needs a restart",
                 gateways_count(next->gw), n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const struct gateway *a = gateways_at(cur->gw, i), *b = gateways_at(next->gw, i);

        if (strcmp(a->cfg->name, b->cfg->name) != 0 || a->cfg->kind != b->cfg->kind) {
            snprintf(err, errsz,
                     "gateways[%zu] is %s (%s), running %s (%s); renaming, "
                     "reordering or changing the kind of a gateway needs a restart",
                     i, b->cfg->name, gateway_kind_name(b->cfg->kind), a->cfg->name,
                     gateway_kind_name(a->cfg->kind));
            return -1;
        }
    }
    return 0;
}

struct keyslot *keyslot_create(struct keyring *kr)
{
    struct keyslot *s = malloc(sizeof(*s));

    if (s == NULL) {
        keyring_release(kr);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->cur = kr;
    return s;
}

void keyslot_destroy(struct keyslot *s)
{
    if (s == NULL)
        return;
    keyring_release(s->cur);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

struct keyring *keyslot_acquire(struct keyslot *s)
{
    struct keyring *kr;

    pthread_mutex_lock(&s->mu);
    kr = keyring_hold(s->cur);
    pthread_mutex_unlock(&s->mu);
    return kr;
}

void keyslot_publish(struct keyslot *s, struct keyring *next)
{
    struct keyring *prev;

    pthread_mutex_lock(&s->mu);
    prev = s->cur;
    s->cur = next;
    pthread_mutex_unlock(&s->mu);
    keyring_release(prev);
}
