/* replays.c - the cache of replay answers: sets of four entries found by a
 * hash of the pay_no, each set under its own mutex; a full set gives up
 * the entry that runs out first. See replays.h for what an entry may
 * answer. */
#include "replays.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "order_state.h"

#define WAYS 4

struct entry {
    char pay_no[ID_BUF]; /* "" when empty */
    struct replay rec;
    long long expires_ms;
};

struct set {
    pthread_mutex_t mu;
    struct entry e[WAYS];
};

struct replays {
    size_t nsets;
    long long ttl_ms;
    int64_t max_age_s; /* records older than this are not cached; < 0: no bound */
    struct set sets[];
};

/* FNV-1a with a final mix, as the seen set hashes. */
static uint64_t hash(const char *key)
{
    uint64_t h = 14695981039346656037ULL;

    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

struct replays *replays_create(size_t entries, int ttl_s, int retention_days)
{
    size_t nsets = (entries + WAYS - 1) / WAYS;
    struct replays *r;

    if (entries == 0 || ttl_s <= 0)
        return NULL;
    if ((r = calloc(1, sizeof(*r) + nsets * sizeof(r->sets[0]))) == NULL)
        return NULL;
    r->nsets = nsets;
    r->ttl_ms = (long long)ttl_s * 1000;
    /* A record of age a is purged (retention - a) seconds later at the
     * earliest; an entry kept ttl_s must run out before then, with an hour
     * to spare for the clocks of several database nodes. */
    r->max_age_s = retention_days > 0 ? (int64_t)retention_days * 86400 - ttl_s - 3600 : -1;
    for (size_t i = 0; i < nsets; i++)
        pthread_mutex_init(&r->sets[i].mu, NULL);
    return r;
}

void replays_destroy(struct replays *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->nsets; i++)
        pthread_mutex_destroy(&r->sets[i].mu);
    free(r);
}

static struct set *set_of(struct replays *r, const char *pay_no)
{
    return &r->sets[hash(pay_no) % r->nsets];
}

void replays_put(struct replays *r, const char *pay_no, const struct replay *rec, int64_t age_s,
                 long long now_ms)
{
    struct set *s;
    struct entry *victim;
    size_t n = strlen(pay_no);

    if (r == NULL || n == 0 || n >= ID_BUF || age_s < 0 ||
        (r->max_age_s >= 0 && age_s > r->max_age_s))
        return;
    s = set_of(r, pay_no);
    pthread_mutex_lock(&s->mu);
    victim = &s->e[0];
    for (int i = 0; i < WAYS; i++) {
        struct entry *e = &s->e[i];

        if (strcmp(e->pay_no, pay_no) == 0) {
            victim = e;
            break;
        }
        if (e->expires_ms < victim->expires_ms)
            victim = e; /* empty entries expire at 0 */
    }
    memcpy(victim->pay_no, pay_no, n + 1);
    victim->rec = *rec;
    victim->expires_ms = now_ms + r->ttl_ms;
    pthread_mutex_unlock(&s->mu);
}

bool replays_get(struct replays *r, const char *pay_no, bool status_in_answer, long long now_ms,
                 struct replay *rec)
{
    struct set *s;
    bool hit = false;

    if (r == NULL || pay_no[0] == '\0')
        return false;
    s = set_of(r, pay_no);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < WAYS; i++) {
        const struct entry *e = &s->e[i];

        if (e->expires_ms > now_ms && strcmp(e->pay_no, pay_no) == 0) {
            hit = !status_in_answer || order_state_terminal(e->rec.order_status);
            if (hit)
                *rec = e->rec;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}
