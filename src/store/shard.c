/* shard.c - the shard set: one pool per database, routing by order number
 * and placement by hash. */
#include "shard.h"

#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "metrics.h"

void shard_set_order_by_id(struct shard_set *set)
{
    size_t i, j;

    for (i = 0; i < set->n; i++)
        set->by_id[i] = &set->s[i];
    for (i = 1; i < set->n; i++)            /* insertion sort: at most CFG_SHARDS_MAX */
        for (j = i; j > 0 && set->by_id[j - 1]->id > set->by_id[j]->id; j--) {
            struct shard *t = set->by_id[j];

            set->by_id[j] = set->by_id[j - 1];
            set->by_id[j - 1] = t;
        }
}

int shard_set_open(struct shard_set *set, const struct config *cfg, struct metrics *m)
{
    struct cfg_shard at[CFG_SHARDS_MAX];
    size_t i;

    memset(set, 0, sizeof(*set));
    set->sharded = cfg->nshards > 0;
    set->n = cfg_endpoints(cfg, at);
    for (i = 0; i < set->n; i++) {
        struct shard *sh = &set->s[i];
        sh->id = at[i].id;
        sh->index = i;
        snprintf(sh->label, sizeof(sh->label), "%d", sh->id);
        sh->pool = db_pool_create(cfg, &at[i], m);
        if (sh->pool == NULL) {
            shard_set_close(set);
            return -1;
        }
        db_pool_set_shard_index(sh->pool, i);
        set->labels[i] = sh->label;
    }
    shard_set_order_by_id(set);
    metrics_set_shards(m, set->labels, set->n);
    return 0;
}

void shard_set_close(struct shard_set *set)
{
    size_t i;

    for (i = 0; i < CFG_SHARDS_MAX; i++) {
        db_pool_destroy(set->s[i].pool);
        set->s[i].pool = NULL;
    }
    set->n = 0;
}

struct db_conn *shard_acquire(const struct shard *sh, int wait_ms)
{
    return db_acquire(sh->pool, wait_ms);
}

void shard_release(const struct shard *sh, struct db_conn *c)
{
    db_release(sh->pool, c);
}

enum db_status shard_ping(const struct shard *sh, int wait_ms, struct db_node *node)
{
    struct db_conn *c = shard_acquire(sh, wait_ms);
    enum db_status st = c != NULL ? db_ping(c, node) : DB_UNAVAILABLE;

    shard_release(sh, c);
    return st;
}

const struct shard *shard_by_id(const struct shard_set *set, int id)
{
    size_t i;

    for (i = 0; i < set->n; i++)
        if (set->s[i].id == id)
            return &set->s[i];
    return NULL;
}

enum shard_parse shard_parse_order_no(const char *s, int *id)
{
    *id = 0;
    if (s[0] != 'S' && s[0] != 's')
        return SHARD_NO_PREFIX;
    if (s[0] != 'S' || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9' || s[3] != '-' ||
        s[4] == '\0')
        return SHARD_MALFORMED;          /* "S1-", "s01-", "SAB-", "S001-": never a legacy number */
    *id = (s[1] - '0') * 10 + (s[2] - '0');
    return *id == 0 ? SHARD_MALFORMED : SHARD_PREFIXED;
}

const struct shard *shard_of_order(const struct shard_set *set, const char *order_no)
{
    int id = 1;

    if (set->sharded) {
        switch (shard_parse_order_no(order_no, &id)) {
        case SHARD_NO_PREFIX:
            id = 1;                       /* made before the service was sharded */
            break;
        case SHARD_PREFIXED:
            break;
        case SHARD_MALFORMED:
            return NULL;
        }
    }
    return shard_by_id(set, id);
}

size_t shard_place_index(const char *key, size_t nshards)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    uint64_t h = 0;
    int i;

    if (nshards <= 1)
        return 0;
    SHA256((const unsigned char *)key, strlen(key), md);
    for (i = 0; i < 8; i++)
        h = (h << 8) | md[i];
    return (size_t)(h % nshards);
}

const struct shard *shard_place(const struct shard_set *set, const char *key)
{
    return set->by_id[shard_place_index(key, set->n)];
}

int shard_order_no(const struct shard_set *set, const struct shard *sh, const char *tail,
                   char *out, size_t outsz)
{
    int n = set->sharded ? snprintf(out, outsz, "S%02d-%s", sh->id, tail)
                         : snprintf(out, outsz, "%s", tail);

    return n < 0 || (size_t)n >= outsz ? -1 : 0;
}
