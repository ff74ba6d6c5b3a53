/* unitquota.c - units reserved per client address within a payment
 * window, in a set-associative table whose entries count in time slots.
 * Integers only. */
#include "unitquota.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define UQ_WAYS 4 /* entries an (address, sku) may land in */
#define UQ_SETS (UNITQUOTA_SLOTS / UQ_WAYS)
#define UQ_EPOCHS 9     /* time slots an entry keeps: the window is 8 of them */
#define UQ_PER_WINDOW 8 /* slots per window */
#define UQ_ALL 0        /* the sku hash of an address's entry of all skus */

struct entry {
    struct netaddr client;
    uint64_t sku; /* FNV-1a of the sku, never UQ_ALL; or UQ_ALL */
    bool used;
    long long last_ms; /* last take, for the least recently used */
    int64_t epoch[UQ_EPOCHS];
    int64_t units[UQ_EPOCHS];
};

struct unitquota {
    long long slot_ms; /* an eighth of the window, rounded up */
    pthread_mutex_t mu;
    struct entry e[UNITQUOTA_SLOTS];
};

struct unitquota *unitquota_create(long long window_ms)
{
    struct unitquota *q;

    if (window_ms <= 0 || (q = calloc(1, sizeof(*q))) == NULL)
        return NULL;
    q->slot_ms = (window_ms + UQ_PER_WINDOW - 1) / UQ_PER_WINDOW;
    pthread_mutex_init(&q->mu, NULL);
    return q;
}

void unitquota_destroy(struct unitquota *q)
{
    if (q == NULL)
        return;
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* The hash of a sku name: never UQ_ALL. */
static uint64_t sku_hash(const char *sku)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a, 64 bits */

    for (const unsigned char *p = (const unsigned char *)sku; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h == UQ_ALL ? 1 : h;
}

static size_t set_of(const struct netaddr *a, uint64_t sku)
{
    uint64_t h = 14695981039346656037ull ^ sku;

    for (unsigned i = 0; i < a->len; i++)
        h = (h ^ a->b[i]) * 1099511628211ull;
    return (size_t)(h % UQ_SETS) * UQ_WAYS;
}

/* The units an entry counts at epoch now: those of its last UQ_EPOCHS
 * slots. */
static int64_t held(const struct entry *e, int64_t now)
{
    int64_t sum = 0;

    for (int i = 0; i < UQ_EPOCHS; i++)
        if (e->epoch[i] > now - UQ_EPOCHS)
            sum += e->units[i];
    return sum;
}

static struct entry *find(struct unitquota *q, const struct netaddr *a, uint64_t sku)
{
    struct entry *set = &q->e[set_of(a, sku)];

    for (int i = 0; i < UQ_WAYS; i++)
        if (set[i].used && set[i].sku == sku && netaddr_equal(&set[i].client, a))
            return &set[i];
    return NULL;
}

/* The entry of (a, sku), found or made in place of a free one, one that
 * counts nothing, or else the least recently used (never avoid, the
 * other entry of the same take). Called with mu held. */
static struct entry *entry_for(struct unitquota *q, const struct netaddr *a, uint64_t sku,
                               int64_t now, const struct entry *avoid, int *evicted)
{
    struct entry *set = &q->e[set_of(a, sku)], *victim = NULL, *e;

    if ((e = find(q, a, sku)) != NULL)
        return e;
    for (int i = 0; i < UQ_WAYS; i++) {
        if (&set[i] == avoid)
            continue;
        if (!set[i].used || held(&set[i], now) == 0) {
            victim = &set[i];
            break;
        }
        if (victim == NULL || set[i].last_ms < victim->last_ms)
            victim = &set[i];
    }
    if (victim->used && held(victim, now) > 0)
        (*evicted)++;
    memset(victim, 0, sizeof(*victim));
    victim->used = true;
    victim->client = *a;
    victim->sku = sku;
    return victim;
}

static void add(struct entry *e, int64_t now, int64_t units, long long now_ms)
{
    int i = (int)(now % UQ_EPOCHS);

    if (e->epoch[i] != now) {
        e->epoch[i] = now;
        e->units[i] = 0;
    }
    e->units[i] += units;
    e->last_ms = now_ms;
}

enum unitquota_result unitquota_take(struct unitquota *q, const struct netaddr *client,
                                     const char *sku, int64_t units, int64_t max_sku,
                                     int64_t max_total, long long now_ms,
                                     struct unitquota_hold *hold)
{
    int64_t now = now_ms / q->slot_ms + 1; /* epochs start at 1: 0 is an empty slot */
    uint64_t h = sku_hash(sku);
    struct entry *of_sku = NULL, *all = NULL;
    enum unitquota_result r = UNITQUOTA_OK;

    memset(hold, 0, sizeof(*hold));
    if (max_sku <= 0 && max_total <= 0)
        return UNITQUOTA_OK;
    pthread_mutex_lock(&q->mu);
    if (max_sku > 0)
        of_sku = entry_for(q, client, h, now, NULL, &hold->evicted);
    if (max_total > 0)
        all = entry_for(q, client, UQ_ALL, now, of_sku, &hold->evicted);
    if (of_sku != NULL && held(of_sku, now) + units > max_sku)
        r = UNITQUOTA_SKU;
    else if (all != NULL && held(all, now) + units > max_total)
        r = UNITQUOTA_TOTAL;
    if (r == UNITQUOTA_OK) {
        if (of_sku != NULL)
            add(of_sku, now, units, now_ms);
        if (all != NULL)
            add(all, now, units, now_ms);
        hold->client = *client;
        hold->sku_hash = h;
        hold->units = units;
        hold->epoch = now;
    }
    pthread_mutex_unlock(&q->mu);
    return r;
}

/* Takes units back from e's slot of epoch, never below zero. */
static void sub(struct entry *e, int64_t epoch, int64_t units)
{
    int i = (int)(epoch % UQ_EPOCHS);

    if (e == NULL || e->epoch[i] != epoch)
        return;
    e->units[i] = e->units[i] > units ? e->units[i] - units : 0;
}

void unitquota_give_back(struct unitquota *q, struct unitquota_hold *hold)
{
    if (q == NULL || hold->epoch == 0)
        return;
    pthread_mutex_lock(&q->mu);
    sub(find(q, &hold->client, hold->sku_hash), hold->epoch, hold->units);
    sub(find(q, &hold->client, UQ_ALL), hold->epoch, hold->units);
    pthread_mutex_unlock(&q->mu);
    memset(hold, 0, sizeof(*hold));
}
