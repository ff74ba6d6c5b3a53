/* keyring.h - the secrets and keys a request is checked against, as one
 * immutable snapshot: the callback secrets, the operator keys, the
 * webhook secret and the gateways' keys. SIGHUP builds a new snapshot and
 * publishes it; a request holds the one it started with until it ends,
 * so a rotation never changes the rules under a request in flight. */
#ifndef PAYCALLBACK_KEYRING_H
#define PAYCALLBACK_KEYRING_H

#include <stdatomic.h>

#include "config.h"

struct gateways;
struct sig_keys;

struct keyring {
    struct config cfg;              /* the configuration the snapshot was read with; only
                                     its reloadable keys are read from here */
    struct gateways *gw;            /* loaded from cfg.gateways; owned */
    struct sig_keys *callback_keys; /* callback.secret, then previous_secret if set, each
                                       keyed once for HMAC; owned */
    unsigned long generation;       /* 1 at start, +1 per reload */
    atomic_long refs;
};

/* A copy of cfg with its gateways loaded (keys read, secrets taken from the
 * environment) and its callback secrets keyed, one reference held by the
 * caller. NULL with a one-line reason in err when a gateway does not load
 * or OpenSSL cannot key a secret. */
struct keyring *keyring_create(const struct config *cfg, unsigned long generation, char *err,
                               size_t errsz);

/* Takes one more reference. */
struct keyring *keyring_hold(struct keyring *kr);

/* Drops a reference; the last one frees the snapshot and wipes its secrets.
 * NULL-safe. */
void keyring_release(struct keyring *kr);

/* Whether next may replace cur: the same gateways, by name and kind, in
 * the same order (their metrics and routes were set up at start). 0, or
 * -1 with the reason in err. */
int keyring_compatible(const struct keyring *cur, const struct keyring *next, char *err,
                       size_t errsz);

/* Where the current snapshot is published. */
struct keyslot;

/* A slot holding kr. kr's reference passes to the slot, and is released
 * if the slot cannot be made (NULL: out of memory). */
struct keyslot *keyslot_create(struct keyring *kr);

/* Releases the slot's snapshot and frees it. NULL-safe. */
void keyslot_destroy(struct keyslot *s);

/* The current snapshot, with a reference the caller releases. */
struct keyring *keyslot_acquire(struct keyslot *s);

/* Publishes next (its reference passes to the slot) and releases the
 * previous one: requests that hold it keep it until they end. */
void keyslot_publish(struct keyslot *s, struct keyring *next);

#endif
