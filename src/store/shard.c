/* shard.c - the shard set: one pool per database, routing by order number
 * and placement by hash. */
#include "shard.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "log.h"
#include "metrics.h"
#include "shardmap.h"

void shard_set_order_by_id(struct shard_set *set)
{
    size_t i, j;

    for (i = 0; i < set->n; i++)
        set->by_id[i] = &set->s[i];
    for (i = 1; i < set->n; i++) /* insertion sort: at most CFG_SHARDS_MAX */
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
    set->cfg = cfg;
    set->m = m;
    pthread_mutex_init(&set->mu, NULL);
    pthread_cond_init(&set->wake, NULL);
    for (i = 0; i < set->n; i++) {
        struct shard *sh = &set->s[i];
        sh->id = at[i].id;
        sh->index = i;
        sh->set = set;
        snprintf(sh->label, sizeof(sh->label), "%d", sh->id);
        sh->pool = db_pool_create(cfg, &at[i], m);
        sh->probe = db_pool_create_probe(cfg, &at[i], m);
        if (sh->pool == NULL || sh->probe == NULL) {
            set->n = i + 1;
            shard_set_close(set);
            return -1;
        }
        db_pool_set_shard_index(sh->pool, i);
        db_pool_set_shard_index(sh->probe, i);
        db_pool_guard(sh->pool, cfg->mysql_breaker_failures, cfg->mysql_breaker_open_ms,
                      shard_max_inflight(cfg), cfg->mysql_shard_stall_ms, set->sharded,
                      cfg->mysql_connect_timeout_ms);
        set->labels[i] = sh->label;
    }
    shard_set_order_by_id(set);
    metrics_set_shards(m, set->labels, set->n);
    return 0;
}

void shard_set_close(struct shard_set *set)
{
    size_t i;

    if (set->cfg == NULL)
        return; /* zeroed, never opened */
    shard_probers_stop(set);
    for (i = 0; i < CFG_SHARDS_MAX; i++) {
        db_pool_destroy(set->s[i].pool);
        db_pool_destroy(set->s[i].probe);
        set->s[i].pool = NULL;
        set->s[i].probe = NULL;
    }
    pthread_mutex_destroy(&set->mu);
    pthread_cond_destroy(&set->wake);
    set->n = 0;
    set->cfg = NULL;
}

int shard_max_inflight(const struct config *cfg)
{
    if (cfg->mysql_shard_max_inflight > 0)
        return cfg->mysql_shard_max_inflight;
    if (cfg->nshards <= 1)
        return 0; /* one database: nothing to keep free for */
    return cfg->workers - cfg->workers / 4 > 0 ? cfg->workers - cfg->workers / 4 : 1;
}

/* ---- the probers ------------------------------------------------------------ */

/* Whether sh's database is still what this instance started on: the
 * identity of its shard and the map of epoch set->map_epoch (sharded), or
 * neither (one database). NULL, or the reason in why; *failed is set when
 * they could not be read (the shard then counts as down, not changed). */
static const char *probe_differs(const struct shard *sh, struct db_conn *c, bool *failed, char *why,
                                 size_t whysz)
{
    const struct shard_set *set = sh->set;
    struct shard_identity id;
    struct shard_map map;
    char ids[SHARD_IDS_MAX];

    *failed = false;
    if (!set->sharded) {
        if (shardmap_read(c, &map) != DB_OK)
            *failed = true;
        if (*failed || !map.found)
            return NULL;
        snprintf(why, whysz, "now holds a shard map (shard %d of %s)", map.shard_id, map.ids);
        return why;
    }
    if (shardmap_read_identity(c, &id) != DB_OK) {
        *failed = true;
        return NULL;
    }
    if (shardmap_identity_differs(&id, set->cfg->mysql_cluster_id, sh->id, why, whysz) != NULL)
        return why;
    if (shardmap_read(c, &map) != DB_OK) {
        *failed = true;
        return NULL;
    }
    shardmap_ids(set->cfg, ids);
    return shardmap_differs(&map, sh->id, ids, set->map_epoch, why, whysz);
}

/* One probe of sh: its health, checking its identity and shard map. A
 * database that is no longer this shard's (blank, another shard's or
 * another cluster's, or holding another map) refuses every request, with
 * one alert line when it starts to. */
static enum db_health probe_once(struct shard *sh, struct db_node *node, bool *map_alerted)
{
    struct db_conn *c = db_acquire(sh->probe, 0);
    char why[256];
    bool failed;
    enum db_health h = DB_HEALTH_DOWN;
    enum db_status st;

    memset(node, 0, sizeof(*node));
    if (c == NULL)
        return DB_HEALTH_DOWN;
    st = db_ping(c, node);
    if (st != DB_OK) {
        h = node->galera ? DB_HEALTH_NOT_SYNCED : DB_HEALTH_DOWN;
        goto out;
    }
    if (probe_differs(sh, c, &failed, why, sizeof(why)) != NULL) {
        h = DB_HEALTH_MAP_STALE;
        if (!*map_alerted)
            log_alert("SHARD_MAP_CHANGED",
                      "shard=%s reason=\"%s\" action=\"the shard refuses "
                      "every request until its database is this shard's again or this "
                      "instance restarts with the stored map\"",
                      sh->label, why);
        *map_alerted = true;
    } else if (!failed) {
        h = DB_HEALTH_UP;
        *map_alerted = false;
    }
out:
    db_release(sh->probe, c);
    return h;
}

/* Wakes every prober for a probe now (SIGHUP): what a reload changes in
 * a shard's database is found at once. Any thread. */
void shard_probers_wake(struct shard_set *set)
{
    pthread_mutex_lock(&set->mu);
    set->wake_gen++;
    pthread_cond_broadcast(&set->wake);
    pthread_mutex_unlock(&set->mu);
}

static void *prober_main(void *arg)
{
    struct shard *sh = arg;
    struct shard_set *set = sh->set;
    enum db_health last = DB_HEALTH_UNKNOWN;
    bool map_alerted = false;

    for (;;) {
        struct db_node node;
        enum db_health h;

        db_pool_probe_begin(sh->pool);
        h = probe_once(sh, &node, &map_alerted);
        struct timespec until;

        db_pool_set_health(sh->pool, h, &node);
        metrics_shard_ready(set->m, sh->index, h == DB_HEALTH_UP);
        if (last == DB_HEALTH_UNKNOWN) {
            pthread_mutex_lock(&set->mu);
            set->probed++;
            pthread_cond_broadcast(&set->wake);
            pthread_mutex_unlock(&set->mu);
        }
        if (h != last && last != DB_HEALTH_UNKNOWN)
            log_write(h == DB_HEALTH_UP ? LOG_INFO : LOG_WARN, "shard health changed",
                      "shard=%s health=%s", sh->label, shard_health_name(h));
        last = h;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += set->cfg->mysql_probe_interval_ms / 1000;
        until.tv_nsec += (long)(set->cfg->mysql_probe_interval_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&set->mu);
        unsigned long gen = set->wake_gen;

        while (!set->stopping && gen == set->wake_gen &&
               pthread_cond_timedwait(&set->wake, &set->mu, &until) != ETIMEDOUT)
            ;
        if (set->stopping) {
            pthread_mutex_unlock(&set->mu);
            return NULL;
        }
        pthread_mutex_unlock(&set->mu);
    }
}

int shard_probers_start(struct shard_set *set, uint64_t map_epoch)
{
    size_t i;

    set->map_epoch = map_epoch;
    set->stopping = false;
    for (i = 0; i < set->n; i++) {
        if (pthread_create(&set->s[i].prober, NULL, prober_main, &set->s[i]) != 0) {
            shard_probers_stop(set);
            return -1;
        }
        set->s[i].probing = true;
    }
    /* The first round: a connect, a reconnect and a read at most. */
    long long wait_ms =
        2LL * set->cfg->mysql_connect_timeout_ms + 1000LL * set->cfg->mysql_io_timeout_s + 500;
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(wait_ms / 1000);
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&set->mu);
    while (set->probed < set->n && pthread_cond_timedwait(&set->wake, &set->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&set->mu);
    return 0;
}

void shard_probers_stop(struct shard_set *set)
{
    size_t i;

    pthread_mutex_lock(&set->mu);
    set->stopping = true;
    pthread_cond_broadcast(&set->wake);
    pthread_mutex_unlock(&set->mu);
    for (i = 0; i < set->n; i++)
        if (set->s[i].probing) {
            pthread_join(set->s[i].prober, NULL);
            set->s[i].probing = false;
        }
}

const char *shard_health_name(enum db_health h)
{
    switch (h) {
    case DB_HEALTH_UP: return "up";
    case DB_HEALTH_DOWN: return "down";
    case DB_HEALTH_NOT_SYNCED: return "not_synced";
    case DB_HEALTH_MAP_STALE: return "map_changed";
    case DB_HEALTH_UNKNOWN: break;
    }
    return "unknown";
}

struct db_conn *shard_acquire(const struct shard *sh, int wait_ms)
{
    return db_acquire(sh->pool, wait_ms);
}

struct db_conn *shard_acquire_why(const struct shard *sh, int wait_ms, enum db_refusal *why)
{
    return db_acquire_why(sh->pool, wait_ms, why);
}

int shard_retry_after_s(const struct shard *sh)
{
    return db_pool_retry_after_s(sh->pool);
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
        return SHARD_MALFORMED; /* "S1-", "s01-", "SAB-", "S001-": never a legacy number */
    *id = (s[1] - '0') * 10 + (s[2] - '0');
    return *id == 0 ? SHARD_MALFORMED : SHARD_PREFIXED;
}

const struct shard *shard_of_order(const struct shard_set *set, const char *order_no)
{
    int id = 1;

    if (set->sharded) {
        switch (shard_parse_order_no(order_no, &id)) {
        case SHARD_NO_PREFIX:
            id = 1; /* made before the service was sharded */
            break;
        case SHARD_PREFIXED: break;
        case SHARD_MALFORMED: return NULL;
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

int shard_order_no(const struct shard_set *set, const struct shard *sh, const char *tail, char *out,
                   size_t outsz)
{
    int n = set->sharded ? snprintf(out, outsz, "S%02d-%s", sh->id, tail)
                         : snprintf(out, outsz, "%s", tail);

    return n < 0 || (size_t)n >= outsz ? -1 : 0;
}
