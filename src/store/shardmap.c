/* shardmap.c - the identity and the shard map stored on every shard:
 * written by shards init, checked at start and by every tool command,
 * rewritten by --write-shard-map (shardmap.h). */
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

enum db_status shardmap_read_identity(struct db_conn *c, struct shard_identity *id)
{
    struct db_row row;
    int64_t sid = 0;
    bool found = false;
    enum db_status st;

    memset(id, 0, sizeof(*id));
    st = db_query_one(c, ST_SHARD_ID_GET, NULL, 0, &row, &found);
    if (st != DB_OK)
        return db_errno(c) == SHARD_ER_NO_SUCH_TABLE ? DB_OK : st; /* never initialised */
    if (!found)
        return DB_OK;
    if (db_row_str(&row, SIC_CLUSTER_ID, id->cluster_id, sizeof(id->cluster_id)) != 0 ||
        db_row_int(&row, SIC_SHARD_ID, 0, 255, &sid) != 0)
        return db_fail(c, "the shard_identity row is malformed");
    id->found = true;
    id->shard_id = (int)sid;
    return DB_OK;
}

const char *shardmap_identity_differs(const struct shard_identity *id, const char *cluster_id,
                                      int shard_id, char *why, size_t whysz)
{
    if (!id->found)
        snprintf(why, whysz,
                 "has no shard identity (a database never given one by paycallback shards "
                 "init is never taken as a shard)");
    else if (strcmp(id->cluster_id, cluster_id) != 0)
        snprintf(why, whysz, "belongs to cluster %s, configured cluster is %s", id->cluster_id,
                 cluster_id);
    else if (id->shard_id != shard_id)
        snprintf(why, whysz, "is shard %d of cluster %s, configured as shard %d", id->shard_id,
                 id->cluster_id, shard_id);
    else
        return NULL;
    return why;
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

/* One shard's identity and map, read over a connection of its own. st is
 * DB_OK, DB_UNAVAILABLE (not reachable) or DB_ERROR (reason on c). */
struct reading {
    struct cfg_shard at;
    struct db_pool *pool;
    struct db_conn *c;
    enum db_status st;
    struct shard_identity id;
    struct shard_map m;
};

static void reading_open(const struct config *cfg, struct reading *r)
{
    r->st = DB_UNAVAILABLE;
    if ((r->pool = db_pool_create_probe(cfg, &r->at, NULL)) == NULL ||
        (r->c = db_acquire(r->pool, SHARDMAP_WAIT_MS)) == NULL)
        return;
    if ((r->st = shardmap_read_identity(r->c, &r->id)) == DB_OK)
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

static const char *reach_why(const struct reading *r)
{
    return r->c != NULL && db_errstr(r->c)[0] != '\0' ? db_errstr(r->c) : "unreachable";
}

/* Every reachable shard's identity must be cfg's (cluster, shard id); with
 * all, every shard must also answer. 0; -1 with a one-line reason for an
 * identity that is not cfg's, -2 for a shard that could not be read. */
static int check_identities(const struct config *cfg, const struct reading *rd, size_t n, bool all,
                            char *err, size_t errsz)
{
    char why[256];

    for (size_t i = 0; i < n; i++) {
        const struct reading *r = &rd[i];

        if (r->st == DB_ERROR || (all && r->st != DB_OK)) {
            snprintf(err, errsz, "shard %d (%s:%d/%s): cannot read its identity: %s", r->at.id,
                     r->at.host, r->at.port, r->at.database, reach_why(r));
            return -2;
        }
        if (r->st == DB_OK && shardmap_identity_differs(&r->id, cfg->mysql_cluster_id, r->at.id,
                                                        why, sizeof(why)) != NULL) {
            snprintf(err, errsz,
                     "shard identity: shard %d (%s:%d/%s) %s; refused (paycallback shards init, "
                     "docs/sharding.md)",
                     r->at.id, r->at.host, r->at.port, r->at.database, why);
            return -1;
        }
    }
    return 0;
}

/* Every reachable shard's map must be cfg's, one epoch for all: *epoch. */
static int check_maps(const struct config *cfg, const struct reading *rd, size_t n, uint64_t *epoch,
                      char *err, size_t errsz)
{
    char ids[SHARD_IDS_MAX], why[256];
    uint64_t e = 0;
    size_t i;

    shardmap_ids(cfg, ids);
    for (i = 0; i < n; i++)
        if (rd[i].st == DB_OK && rd[i].m.found && rd[i].m.epoch > e)
            e = rd[i].m.epoch;
    if (e == 0)
        e = 1; /* no shard answered: the probers compare with the first map */
    for (i = 0; i < n; i++)
        if (rd[i].st == DB_OK &&
            shardmap_differs(&rd[i].m, rd[i].at.id, ids, e, why, sizeof(why)) != NULL) {
            snprintf(err, errsz,
                     "shard map: shard %d (%s:%d/%s) %s; a shard list that differs "
                     "from the stored map is refused (change it with --write-shard-map, "
                     "docs/sharding.md)",
                     rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database, why);
            return -1;
        }
    *epoch = e;
    return 0;
}

/* One database (no mysql.shards): it must hold neither an identity nor a
 * map, which would make it a shard of a sharded service. */
static int check_unsharded(const struct reading *r, char *err, size_t errsz)
{
    if (r->st == DB_OK && (r->m.found || r->id.found)) {
        snprintf(err, errsz,
                 "shard map: database %s:%d/%s is shard %d of %s%s; a service "
                 "without mysql.shards must not write to it",
                 r->at.host, r->at.port, r->at.database,
                 r->m.found ? r->m.shard_id : r->id.shard_id, r->m.found ? "shards " : "cluster ",
                 r->m.found ? r->m.ids : r->id.cluster_id);
        return -1;
    }
    if (r->st == DB_ERROR) {
        snprintf(err, errsz, "database %s:%d/%s: cannot read the shard map: %s", r->at.host,
                 r->at.port, r->at.database, reach_why(r));
        return -1;
    }
    return 0;
}

int shardmap_check_start(const struct config *cfg, uint64_t *epoch, char *err, size_t errsz)
{
    struct reading rd[CFG_SHARDS_MAX];
    size_t n = read_all(cfg, rd);
    int rc;

    *epoch = 0;
    if (cfg->nshards == 0)
        rc = check_unsharded(&rd[0], err, errsz);
    else
        rc = check_identities(cfg, rd, n, false, err, errsz) != 0 ||
                     check_maps(cfg, rd, n, epoch, err, errsz) != 0
                 ? -1
                 : 0; /* a shard that does not answer is left to its prober */
    close_all(rd, n);
    return rc;
}

int shardmap_check_tool(const struct config *cfg, bool map_too, char *err, size_t errsz)
{
    struct reading rd[CFG_SHARDS_MAX];
    size_t n = read_all(cfg, rd);
    uint64_t epoch = 0;
    int rc;

    if (cfg->nshards == 0)
        rc = check_unsharded(&rd[0], err, errsz);
    else if ((rc = check_identities(cfg, rd, n, true, err, errsz)) == 0 && map_too)
        rc = check_maps(cfg, rd, n, &epoch, err, errsz);
    close_all(rd, n);
    return rc;
}

/* shards init on one shard r, checked by the caller (its identity is
 * cfg's or none; a blank one is not a shard the cluster already has):
 * writes its identity. 0 written or already so, -1 a race lost (reason on
 * errs), -2 a database failure. */
static int init_one(const struct config *cfg, struct reading *r, FILE *out, FILE *errs)
{
    char why[256], sid[DB_INT_BUF];
    const char *p[] = { cfg->mysql_cluster_id, db_param_int(sid, r->at.id) };
    const char *what;

    if (r->id.found) {
        fprintf(out, "shard %d: already shard %d of cluster %s\n", r->at.id, r->at.id,
                cfg->mysql_cluster_id);
        return 0;
    }
    what = r->m.found ? "adopted (it holds this shard's map)" : "a blank database, initialised";
    if (db_exec(r->c, ST_SHARD_ID_TABLE, NULL, 0, NULL) != DB_OK ||
        db_exec_retry(r->c, ST_SHARD_ID_PUT, p, 2, NULL) != DB_OK ||
        shardmap_read_identity(r->c, &r->id) != DB_OK) {
        fprintf(errs, "paycallback: shard %d: cannot write its identity: %s\n", r->at.id,
                db_errstr(r->c));
        return -2;
    }
    if (shardmap_identity_differs(&r->id, cfg->mysql_cluster_id, r->at.id, why, sizeof(why)) !=
        NULL) {
        fprintf(errs, "paycallback: shard %d %s (written meanwhile by another run)\n", r->at.id,
                why);
        return -1;
    }
    fprintf(out, "shard %d: shard %d of cluster %s: %s\n", r->at.id, r->at.id,
            cfg->mysql_cluster_id, what);
    return 0;
}

/* Whether any shard holds a map or an identity listing id: a map that
 * names it, or a database already shard id. */
static bool cluster_knows(const struct reading *rd, size_t n, int id)
{
    char want[8];

    for (size_t i = 0; i < n; i++) {
        const char *s = rd[i].m.ids;
        size_t len;

        if (rd[i].id.found && rd[i].id.shard_id == id)
            return true;
        if (!rd[i].m.found)
            continue;
        len = (size_t)snprintf(want, sizeof(want), "%d", id);
        while (*s != '\0') {
            if (strncmp(s, want, len) == 0 && (s[len] == ',' || s[len] == '\0'))
                return true;
            while (*s != '\0' && *s != ',')
                s++;
            if (*s == ',')
                s++;
        }
    }
    return false;
}

/* Reads every configured shard into rd (*n of them): 0 when each
 * answered, else 1 with one line on errs for each that did not. */
static int read_every(const struct config *cfg, struct reading *rd, size_t *n, FILE *errs)
{
    int rc = 0;

    *n = read_all(cfg, rd);
    for (size_t i = 0; i < *n; i++)
        if (rd[i].st != DB_OK) {
            fprintf(errs,
                    "paycallback: shard %d (%s:%d/%s): %s; every shard must answer, nothing "
                    "written\n",
                    rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database,
                    reach_why(&rd[i]));
            rc = 1;
        }
    return rc;
}

int shardmap_init(const struct config *cfg, FILE *out, FILE *errs)
{
    struct reading rd[CFG_SHARDS_MAX];
    char ids[SHARD_IDS_MAX];
    bool fresh = true;
    size_t i, n;
    int rc = 0, one;

    if (cfg->nshards == 0 || cfg->mysql_cluster_id[0] == '\0') {
        fprintf(errs, "paycallback: shards init needs mysql.shards and mysql.cluster_id\n");
        return 2;
    }
    shardmap_ids(cfg, ids);
    if (read_every(cfg, rd, &n, errs) != 0) {
        close_all(rd, n);
        return 1;
    }
    for (i = 0; i < n; i++)
        if (rd[i].m.found)
            fresh = false; /* the cluster has a map: it changes by --write-shard-map */
    /* Every refusal is found before anything is written. */
    for (i = 0; i < n && rc == 0; i++) {
        char why[256];

        if (rd[i].id.found && shardmap_identity_differs(&rd[i].id, cfg->mysql_cluster_id,
                                                        rd[i].at.id, why, sizeof(why)) != NULL) {
            fprintf(errs, "paycallback: shard %d (%s:%d/%s) %s; nothing written\n", rd[i].at.id,
                    rd[i].at.host, rd[i].at.port, rd[i].at.database, why);
            rc = 2;
        } else if (!rd[i].id.found && !rd[i].m.found && cluster_knows(rd, n, rd[i].at.id)) {
            fprintf(errs,
                    "paycallback: shard %d (%s:%d/%s) is a blank database, and the cluster "
                    "already has a shard %d: a blank database never replaces a shard (restore "
                    "that shard's database instead); nothing written\n",
                    rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database, rd[i].at.id);
            rc = 2;
        } else if (!rd[i].id.found && rd[i].m.found && rd[i].m.shard_id != rd[i].at.id) {
            fprintf(errs,
                    "paycallback: shard %d (%s:%d/%s) holds the shard map of shard %d; "
                    "nothing written\n",
                    rd[i].at.id, rd[i].at.host, rd[i].at.port, rd[i].at.database, rd[i].m.shard_id);
            rc = 2;
        }
    }
    for (i = 0; i < n && rc == 0; i++)
        if ((one = init_one(cfg, &rd[i], out, errs)) != 0)
            rc = one == -1 ? 2 : 1;
    /* A new cluster's first map, once every shard has its identity: a run
     * that fails before this leaves no map, and the next run is again a
     * new cluster's; one that fails in this loop is finished by
     * --write-shard-map. */
    for (i = 0; i < n && rc == 0 && fresh; i++)
        if (shardmap_adopt(rd[i].c, rd[i].at.id, ids, 1) != DB_OK) {
            fprintf(errs,
                    "paycallback: shard %d: cannot write the first shard map: %s; run "
                    "--write-shard-map\n",
                    rd[i].at.id, db_errstr(rd[i].c));
            rc = 1;
        }
    if (rc == 0)
        fprintf(out, "cluster %s: shards %s%s\n", cfg->mysql_cluster_id, ids,
                fresh ? ", shard map epoch 1 written" : "");
    close_all(rd, n);
    return rc;
}

int shardmap_write(const struct config *cfg, FILE *out, FILE *errs)
{
    struct reading rd[CFG_SHARDS_MAX];
    char ids[SHARD_IDS_MAX], err[512];
    uint64_t e = 0;
    size_t i, n;
    int rc = 0;

    if (cfg->nshards == 0) {
        fprintf(errs, "paycallback: --write-shard-map needs mysql.shards\n");
        return 2;
    }
    shardmap_ids(cfg, ids);
    rc = read_every(cfg, rd, &n, errs);
    for (i = 0; i < n; i++)
        if (rd[i].st == DB_OK && rd[i].m.found && rd[i].m.epoch > e)
            e = rd[i].m.epoch;
    if (rc == 0 && check_identities(cfg, rd, n, true, err, sizeof(err)) != 0) {
        fprintf(errs, "paycallback: %s; nothing written\n", err);
        rc = 2;
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
