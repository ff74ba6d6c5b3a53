/* shardmap.h - the one shard map of a sharded service, stored on every
 * shard (table shard_map, docs/sharding.md "The shard map").
 *
 * A shard's row names the shard id that database is, every shard id of
 * the set (ascending, "1,2"), the placement scheme (SHARD_SCHEME) and the
 * map's epoch. A start reads every shard's row: a database with none is
 * given this configuration's map (the first start, or a new empty shard
 * database); one whose row differs stops the start, so an instance missing
 * a shard, listing another shard, or pointing a shard id at another
 * shard's database never serves. The list's order plays no part:
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

#include "db.h"

struct config;

#define SHARD_SCHEME "sha256-mod-ascending-ids"
#define SHARD_IDS_MAX 64 /* "1,2,...": 8 ids of 2 digits, commas, NUL */
#define SHARD_SCHEME_MAX 64

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
 * holds none; a row already there is left alone (read it again). */
enum db_status shardmap_adopt(struct db_conn *c, int shard_id, const char *ids, uint64_t epoch);

/* NULL when m is shard shard_id's row of the map (ids, SHARD_SCHEME,
 * epoch), else a one-line reason in why (whysz bytes), which it returns. */
const char *shardmap_differs(const struct shard_map *m, int shard_id, const char *ids,
                             uint64_t epoch, char *why, size_t whysz);

/* At start: reads every shard's map, gives one to each reachable shard
 * that has none, and checks that all agree with cfg. 0 with the epoch in
 * *epoch; -1 with a one-line reason in err when this instance must not
 * start. A shard that cannot be reached is left to the prober (it checks
 * the map before the shard takes requests). */
int shardmap_check_start(const struct config *cfg, uint64_t *epoch, char *err, size_t errsz);

/* --write-shard-map: writes cfg's map with the next epoch (one more than
 * the highest any shard holds) to every configured shard; every shard must
 * answer. Reports on out and errs; returns the exit status: 0, 1 when a
 * shard could not be written, 2 without mysql.shards. */
int shardmap_write(const struct config *cfg, FILE *out, FILE *errs);

#endif
