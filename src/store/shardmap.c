/* shardmap.c - the shard map stored on every shard: read, adopted, checked
 * at start and rewritten by --write-shard-map (shardmap.h). */
#include "shardmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define SHARDMAP_WAIT_MS 1000

void shardmap_ids(const struct config *cfg, char out[SHARD_IDS_MAX])
{
    int ids[CFG_SHARDS_MAX], n = cfg->nshards, i, j;
    size_t len = 0;

    for (i = 0; i < n; i++)
        ids[i] = cfg->shards[i].id;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int t = ids[j];

            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    out[0] = '\0';
    for (i = 0; i < n && len < SHARD_IDS_MAX; i++)
        len += (size_t)snprintf(out + len, SHARD_IDS_MAX - len, "%s%d", i ? "," : "", ids[i]);
}

enum db_status shardmap_read(struct db_conn *c, struct shard_map *m)
{
    struct db_row row;
    int64_t id = 0, epoch = 0;
    bool found = false;
    enum db_status st;

    memset(m, 0, sizeof(*m));
    if ((st = db_query_one(c, ST_SHARD_MAP_GET, NULL, 0, &row, &found)) != DB_OK || !found)
        return st;
    if (db_row_int(&row, SMC_SHARD_ID, 0, 255, &id) != 0 ||
        db_row_str(&row, SMC_SHARD_IDS, m->ids, sizeof(m->ids)) != 0 ||
        db_row_str(&row, SMC_SCHEME, m->scheme, sizeof(m->scheme)) != 0 ||
        db_row_int(&row, SMC_EPOCH, 0, INT64_MAX, &epoch) != 0)
        return db_fail(c, "the shard_map row is malformed");
    m->found = true;
    m->shard_id = (int)id;
    m->epoch = (uint64_t)epoch;
    return DB_OK;
}

static enum db_status put(struct db_conn *c, enum db_stmt id, int shard_id, const char *ids,
                          uint64_t epoch)
{
    char sid[DB_INT_BUF], ep[DB_INT_BUF];
    const char *p[] = { db_param_int(sid, shard_id), ids, SHARD_SCHEME,
                        db_param_int(ep, (int64_t)epoch) };

    return db_exec_retry(c, id, p, 4, NULL);
}

enum db_status shardmap_adopt(struct db_conn *c, int shard_id, const char *ids, uint64_t epoch)
{
    return put(c, ST_SHARD_MAP_ADOPT, shard_id, ids, epoch);
}

const char *shardmap_differs(const struct shard_map *m, int shard_id, const char *ids,
                             uint64_t epoch, char *why, size_t whysz)
{
    if (!m->found)
        snprintf(why, whysz, "holds no shard map");
    else if (m->shard_id != shard_id)
        snprintf(why, whysz, "is shard %d of the shard map, configured as shard %d", m->shard_id,
                 shard_id);
    else if (strcmp(m->ids, ids) != 0)
        snprintf(why, whysz, "holds a shard map of shards %s, configured shards are %s", m->ids,
                 ids);
    else if (strcmp(m->scheme, SHARD_SCHEME) != 0)
        snprintf(why, whysz, "holds a shard map with placement %s, this build places by %s",
                 m->scheme, SHARD_SCHEME);
    else if (m->epoch != epoch)
        snprintf(why, whysz, "holds shard map epoch %" PRIu64 ", expected %" PRIu64, m->epoch,
                 epoch);
    else
        return NULL;
    return why;
}

/* One shard's map, read over a connection of its own. DB_OK,
 * DB_UNAVAILABLE (not reachable) or DB_ERROR, with the reason in err. */
struct reading {
    struct cfg_shard at;
    struct db_pool *pool;
    struct db_conn *c;
    enum db_status st;
    struct shard_map m;
};

static void reading_open(const struct config *cfg, struct reading *r)
{
    r->st = DB_UNAVAILABLE;
    if ((r->pool = db_pool_create_probe(cfg, &r->at, NULL)) == NULL ||
        (r->c = db_acquire(r->pool, SHARDMAP_WAIT_MS)) == NULL)
        return;
    r->st = shardmap_read(r->c, &r->m);
}

static void reading_close(struct reading *r)
{
    if (r->pool != NULL) {
        db_release(r->pool, r->c);
        db_pool_destroy(r->pool);
    }
    r->pool = NULL;
    r->c = NULL;
}

static size_t read_all(const struct config *cfg, struct reading *rd)
{
    struct cfg_shard at[CFG_SHARDS_MAX];
    size_t i, n = cfg_endpoints(cfg, at);

    for (i = 0; i < n; i++) {
        memset(&rd[i], 0, sizeof(rd[i]));
        rd[i].at = at[i];
        reading_open(cfg, &rd[i]);
    }
    return n;
}

static void close_all(struct reading *rd, size_t n)
{
    for (size_t i = 0; i < n; i++)
        reading_close(&rd[i]);
}

static int check_sharded(const struct config *cfg, struct reading *rd, size_t n, uint64_t *epoch,
                         char *err, size_t errsz)
{
    char ids[SHARD_IDS_MAX], why[256];
    uint64_t e = 0;
    size_t i;

    shardmap_ids(cfg, ids);
    for (i = 0; i < n; i++) {
        if (rd[i].st == DB_ERROR) {
            snprintf(err, errsz, "shard %d (%s:%d/%s): cannot read the shard map: %s", rd[i].at.id,
                     rd[i].at.host, rd[i].at.port, rd[i].at.database, db_errstr(rd[i].c));
            return -1;
        }
        if (rd[i].st == DB_OK && rd[i].m.found && rd[i].m.epoch > e)
            e = rd[i].m.epoch;
    }
    if (e == 0)
        e = 1; /* no shard holds one: the first map */
    /* Every map found must be this one before any blank shard is given it. */
    for (i = 0; i < n; i++)
        if (rd[i].st == DB_OK && rd[i].m.found &&
            shardmap_differs(&rd[i].m, rd[i].at.id, ids, e, why, sizeof(why)) != NULL) {
            snprintf(err, errsz,
                     "shard map: shard %d (%s:%d/%s) %s; a shard list that differs "
                     "from the stored map is refused (change it with --write-shard-map, "
                     "docs/sharding.md)",
                     rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database, why);
            return -1;
        }
    for (i = 0; i < n; i++) {
        if (rd[i].st != DB_OK || rd[i].m.found)
            continue;
        if (shardmap_adopt(rd[i].c, rd[i].at.id, ids, e) != DB_OK ||
            shardmap_read(rd[i].c, &rd[i].m) != DB_OK) {
            snprintf(err, errsz, "shard %d: cannot write the shard map: %s", rd[i].at.id,
                     db_errstr(rd[i].c));
            return -1;
        }
        if (shardmap_differs(&rd[i].m, rd[i].at.id, ids, e, why, sizeof(why)) != NULL) {
            snprintf(err, errsz,
                     "shard map: shard %d %s (written meanwhile by another "
                     "instance)",
                     rd[i].at.id, why);
            return -1;
        }
    }
    *epoch = e;
    return 0;
}

int shardmap_check_start(const struct config *cfg, uint64_t *epoch, char *err, size_t errsz)
{
    struct reading rd[CFG_SHARDS_MAX];
    size_t n = read_all(cfg, rd);
    int rc = 0;

    *epoch = 0;
    if (cfg->nshards > 0)
        rc = check_sharded(cfg, rd, n, epoch, err, errsz);
    else if (rd[0].st == DB_OK && rd[0].m.found) {
        snprintf(err, errsz,
                 "shard map: database %s:%d/%s is shard %d of shards %s; a service "
                 "without mysql.shards must not write to it",
                 rd[0].at.host, rd[0].at.port, rd[0].at.database, rd[0].m.shard_id, rd[0].m.ids);
        rc = -1;
    }
    close_all(rd, n);
    return rc;
}

int shardmap_write(const struct config *cfg, FILE *out, FILE *errs)
{
    struct reading rd[CFG_SHARDS_MAX];
    char ids[SHARD_IDS_MAX];
    uint64_t e = 0;
    size_t i, n;
    int rc = 0;

    if (cfg->nshards == 0) {
        fprintf(errs, "paycallback: --write-shard-map needs mysql.shards\n");
        return 2;
    }
    shardmap_ids(cfg, ids);
    n = read_all(cfg, rd);
    for (i = 0; i < n; i++) {
        if (rd[i].st != DB_OK) {
            fprintf(errs,
                    "paycallback: shard %d (%s:%d/%s): %s; every shard must answer, "
                    "nothing written\n",
                    rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database,
                    rd[i].c != NULL ? db_errstr(rd[i].c) : "unreachable");
            rc = 1;
        } else if (rd[i].m.found && rd[i].m.epoch > e)
            e = rd[i].m.epoch;
    }
    e++;
    for (i = 0; rc == 0 && i < n; i++) {
        if (put(rd[i].c, ST_SHARD_MAP_PUT, rd[i].at.id, ids, e) != DB_OK) {
            fprintf(errs, "paycallback: shard %d: cannot write the shard map: %s\n", rd[i].at.id,
                    db_errstr(rd[i].c));
            rc = 1;
            continue;
        }
        if (rd[i].m.found)
            fprintf(out,
                    "shard %d: shard map epoch %" PRIu64 " (shards %s) -> epoch %" PRIu64
                    " (shards %s)\n",
                    rd[i].at.id, rd[i].m.epoch, rd[i].m.ids, e, ids);
        else
            fprintf(out, "shard %d: shard map epoch %" PRIu64 " (shards %s) written\n", rd[i].at.id,
                    e, ids);
    }
    if (rc == 0)
        fprintf(out,
                "shard map epoch %" PRIu64 ": shards %s, placement %s; restart every "
                "instance with this list\n",
                e, ids, SHARD_SCHEME);
    close_all(rd, n);
    return rc;
}
