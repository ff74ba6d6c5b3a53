/* shardmap.h - the one shard map of a sharded service, stored on every
 * shard (table shard_map, docs/sharding.md "The shard map").
 *
 * Each shard's database carries an identity (table shard_identity: the
 * cluster, mysql.cluster_id, and the shard id that database is), written
 * once by the explicit step `paycallback shards init` and never by a start,
 * a prober or any other path: a blank database is never taken as a shard.
 * A shard's map row names the shard id that database is, every shard id of
 * the set (ascending, "1,2"), the placement scheme (SHARD_SCHEME) and the
 * map's epoch. A start reads every shard's identity and map: a database
 * with no identity, another cluster's or another shard id's, and one whose
 * map differs, stop the start, so an instance missing a shard, listing
 * another shard, or pointing a shard id at a blank, another shard's or
 * another cluster's database never serves. The list's order plays no part:
 * placement follows ids. Changing the map is one explicit step,
 * --write-shard-map, which writes the configuration's map with the next
 * epoch to every shard; running instances that then read a newer epoch
 * stop using that shard (shard.c's prober).
 *
 * One database (no mysql.shards) has no map, and refuses to start on a
 * database that holds one: it is a shard of a sharded service. */
#ifndef PAYCALLBACK_SHARDMAP_H
#define PAYCALLBACK_SHARDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "db.h"

struct config;

#define SHARD_SCHEME "sha256-mod-ascending-ids"
#define SHARD_IDS_MAX 64 /* "1,2,...": 8 ids of 2 digits, commas, NUL */
#define SHARD_SCHEME_MAX 64

#define SHARD_ER_NO_SUCH_TABLE 1146 /* shard_identity absent: never initialised */

/* One shard's identity row. */
struct shard_identity {
    bool found; /* the database holds one */
    char cluster_id[CFG_CLUSTER_ID_MAX];
    int shard_id;
};

/* One shard's row. */
struct shard_map {
    bool found; /* the database holds a row */
    int shard_id;
    char ids[SHARD_IDS_MAX];
    char scheme[SHARD_SCHEME_MAX];
    uint64_t epoch;
};

/* The map a configuration means: its shard ids ascending, "1,2" ("" with
 * one database), into out. */
void shardmap_ids(const struct config *cfg, char out[SHARD_IDS_MAX]);

/* Reads c's row into *m (m->found false when there is none). */
enum db_status shardmap_read(struct db_conn *c, struct shard_map *m);

/* Gives c's database the map (shard_id, ids, SHARD_SCHEME, epoch) when it
 * holds none; a row already there is left alone (read it again). Only
 * shards init calls it, for a cluster's first map. */
enum db_status shardmap_adopt(struct db_conn *c, int shard_id, const char *ids, uint64_t epoch);

/* Reads c's identity into *id (id->found false when there is none, the
 * table included). */
enum db_status shardmap_read_identity(struct db_conn *c, struct shard_identity *id);

/* NULL when id is shard shard_id of cluster cluster_id, else a one-line
 * reason in why (whysz bytes), which it returns. */
const char *shardmap_identity_differs(const struct shard_identity *id, const char *cluster_id,
                                      int shard_id, char *why, size_t whysz);

/* NULL when m is shard shard_id's row of the map (ids, SHARD_SCHEME,
 * epoch), else a one-line reason in why (whysz bytes), which it returns. */
const char *shardmap_differs(const struct shard_map *m, int shard_id, const char *ids,
                             uint64_t epoch, char *why, size_t whysz);

/* At start: reads every shard's identity and map and checks that each is
 * cfg's (cluster, shard id, shard list, one epoch); writes nothing. 0 with
 * the epoch in *epoch; -1 with a one-line reason in err when this instance
 * must not start. A shard that cannot be reached is left to the prober
 * (it checks identity and map before the shard takes requests). Without
 * mysql.shards, the database must hold neither. */
int shardmap_check_start(const struct config *cfg, uint64_t *epoch, char *err, size_t errsz);

/* Before a tool command (--backfill-registries, --check-config): as
 * shardmap_check_start, but every shard must answer; with map_too the maps
 * are checked as well. 0; -1 with a one-line reason in err for a shard
 * whose identity or map is not cfg's, -2 for one that could not be read. */
int shardmap_check_tool(const struct config *cfg, bool map_too, char *err, size_t errsz);

/* shards init: gives every configured shard its identity (mysql.cluster_id
 * and its id). Every shard must answer, and nothing is written when one
 * refuses: a database that is another cluster's or another shard id's; one
 * whose map (stored before identities existed) is another shard's; a blank
 * database for a shard id the cluster already has (a map lists it, or
 * another database is it). A database holding this shard's map is adopted
 * (the upgrade of a deployment sharded before identities); a blank one is
 * initialised; when no shard holds a map yet, every shard is given the
 * first map (epoch 1) once all have their identity. Re-runnable. Reports on out and errs; returns the exit status:
 * 0, 1 when a shard did not answer or could not be written, 2 refused. */
int shardmap_init(const struct config *cfg, FILE *out, FILE *errs);

/* --write-shard-map: writes cfg's map with the next epoch (one more than
 * the highest any shard holds) to every configured shard; every shard must
 * answer and carry its identity. Reports on out and errs; returns the exit
 * status: 0, 1 when a shard could not be written, 2 without mysql.shards
 * or with a shard whose identity is not cfg's. */
int shardmap_write(const struct config *cfg, FILE *out, FILE *errs);

#endif
