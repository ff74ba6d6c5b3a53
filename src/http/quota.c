/* quota.c - token buckets in a set-associative table. Tokens are counted
 * in thousandths, so a rate of r a second refills r thousandths a
 * millisecond: integers only, exact at any rate. */
#include "quota.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define QUOTA_WAYS 4 /* buckets a client may land in */
#define QUOTA_SETS (QUOTA_SLOTS / QUOTA_WAYS)
#define MILLI 1000LL /* thousandths of a token per request */

struct bucket {
    struct netaddr client;
    int cls;
    bool used;
    long long milli;   /* tokens, in thousandths */
    long long last_ms; /* last refill */
};

struct quota {
    struct quota_limit lim[QUOTA_CLASSES];
    pthread_mutex_t mu;
    struct bucket slot[QUOTA_SLOTS];
};

struct quota *quota_create(const struct quota_limit lim[QUOTA_CLASSES])
{
    struct quota *q = calloc(1, sizeof(*q));

    if (q == NULL)
        return NULL;
    memcpy(q->lim, lim, sizeof(q->lim));
    pthread_mutex_init(&q->mu, NULL);
    return q;
}

void quota_destroy(struct quota *q)
{
    if (q == NULL)
        return;
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static size_t set_of(const struct netaddr *a, int cls)
{
    uint32_t h = 2166136261u ^ (uint32_t)cls; /* FNV-1a */

    for (unsigned i = 0; i < a->len; i++)
        h = (h ^ a->b[i]) * 16777619u;
    return (size_t)(h % QUOTA_SETS) * QUOTA_WAYS;
}

/* The bucket of (a, cls): found, else the set's free or least recently
 * used one, reset to full. Called with mu held. */
static struct bucket *bucket_for(struct quota *q, const struct netaddr *a, int cls,
                                 long long now_ms)
{
    struct bucket *set = &q->slot[set_of(a, cls)], *b = &set[0];

    for (int i = 0; i < QUOTA_WAYS; i++) {
        if (set[i].used && set[i].cls == cls && netaddr_equal(&set[i].client, a))
            return &set[i];
        if (!set[i].used || (b->used && set[i].last_ms < b->last_ms))
            b = &set[i];
    }
    b->used = true;
    b->client = *a;
    b->cls = cls;
    b->milli = q->lim[cls].burst * MILLI;
    b->last_ms = now_ms;
    return b;
}

int quota_take(struct quota *q, enum quota_class cls, const struct netaddr *client,
               long long now_ms)
{
    const struct quota_limit *lim = &q->lim[cls];
    long long cap = lim->burst * MILLI, wait_ms;
    struct bucket *b;
    int secs = 0;

    if (lim->rate_per_s <= 0)
        return 0;
    pthread_mutex_lock(&q->mu);
    b = bucket_for(q, client, (int)cls, now_ms);
    if (now_ms > b->last_ms) {
        b->milli += (now_ms - b->last_ms) * lim->rate_per_s;
        if (b->milli > cap)
            b->milli = cap;
        b->last_ms = now_ms;
    }
    if (b->milli >= MILLI) {
        b->milli -= MILLI;
    } else {
        wait_ms = (MILLI - b->milli + lim->rate_per_s - 1) / lim->rate_per_s;
        secs = (int)((wait_ms + 999) / 1000);
    }
    pthread_mutex_unlock(&q->mu);
    return secs;
}
