/* shard.h - the databases a service spreads orders over, and where each
 * row lives (docs/sharding.md).
 *
 * Without mysql.shards the service has one database, shard 1, and order
 * numbers carry no prefix: everything is as on one server. With it, every
 * order number starts with "S" + its shard id in two digits + "-"
 * ("S02-O20261202170301" "9f1c0a7e5b3d2c18"), so a callback, a transition
 * or a read is routed by its order_no alone, with no lookup. Rows that
 * must be unique across shards (a pay_no's owner, a checkout's order) are
 * placed by a hash of their key over the configured shard ids in ascending
 * order, never over the order of the list: two instances listing the same
 * shards differently place every key alike.
 *
 * The set is built once at start and read-only afterwards: any thread. */
#ifndef PAYCALLBACK_SHARD_H
#define PAYCALLBACK_SHARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "db.h"

struct db_pool;
struct metrics;

#define SHARD_PREFIX_LEN 4 /* "S07-" */

struct shard {
    int id;                /* as configured: written into order numbers */
    size_t index;          /* position in the set: the metrics' shard index */
    char label[4];         /* the id as text, for metrics and logs */
    struct db_pool *pool;  /* guarded: breaker, cap, health (db.h) */
    struct db_pool *probe; /* the prober's own connection */
    pthread_t prober;
    bool probing; /* prober is running */
    struct shard_set *set;
};

struct shard_set {
    bool sharded; /* mysql.shards is set: order numbers are prefixed */
    size_t n;
    struct shard s[CFG_SHARDS_MAX];
    const char *labels[CFG_SHARDS_MAX];  /* s[i].label, for the metrics registry */
    struct shard *by_id[CFG_SHARDS_MAX]; /* s[] by ascending id: what placement indexes */
    /* The probers' shared state. */
    const struct config *cfg;
    struct metrics *m;
    uint64_t map_epoch; /* the shard map this instance started with */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stopping;
    size_t probed;          /* probers done with their first probe */
    unsigned long wake_gen; /* shard_probers_wake: each prober probes now */
};

/* Starts one background prober per shard: every mysql.probe_interval_ms
 * it pings the shard over a connection of its own (db_ping: answers and,
 * on Galera, is Synced) and reads its shard map, and records the outcome
 * as the pool's health (db_pool_set_health) and the shard's
 * paycallback_shard_ready gauge. A shard whose map is not the one this
 * instance started with (epoch map_epoch; a newer epoch means the map was
 * changed with --write-shard-map), or whose identity is not this shard of
 * mysql.cluster_id (none, another cluster's, another shard id: its
 * database was replaced), is DB_HEALTH_MAP_STALE and refuses every request
 * (503) with an alert line; nothing is ever written to a shard's identity
 * or map here. Readiness reads these states
 * and never waits on a database. Returns once every shard was probed once
 * (or after the longest a probe can take), so the first /readyz knows.
 * 0, or -1 when a thread could not start (those started are stopped). */
int shard_probers_start(struct shard_set *set, uint64_t map_epoch);

/* Has every prober probe now rather than at its next interval (SIGHUP).
 * Any thread. */
void shard_probers_wake(struct shard_set *set);

/* Stops and joins the probers. Safe on a set whose probers never started. */
void shard_probers_stop(struct shard_set *set);

/* The cap on requests in flight on one shard: mysql.shard_max_inflight,
 * or when 0, three quarters of the workers with several shards (the rest
 * stay free for the other shards) and no cap with one database. */
int shard_max_inflight(const struct config *cfg);

/* "up", "down", "not_synced", "map_changed", "unknown": /readyz's words. */
const char *shard_health_name(enum db_health h);

/* Fills set->by_id from set->s[0..n). shard_set_open calls it; for a set
 * built by hand (tests). */
void shard_set_order_by_id(struct shard_set *set);

/* Opens one pool per shard (lazily connected), or the one pool of mysql.*
 * as shard 1 without mysql.shards. 0, or -1 on allocation failure (set is
 * then destroyed). */
int shard_set_open(struct shard_set *set, const struct config *cfg, struct metrics *m);

/* Closes every pool. Safe on a zeroed or failed set. */
void shard_set_close(struct shard_set *set);

/* Borrows a connection of sh's pool, waiting at most wait_ms; NULL when
 * none frees up. Every request path borrows here, so what guards a shard
 * guards it everywhere. Give it back with shard_release (NULL-safe). */
struct db_conn *shard_acquire(const struct shard *sh, int wait_ms);
void shard_release(const struct shard *sh, struct db_conn *c);

/* shard_acquire, saying in *why (may be NULL) why it gave none: the
 * guard of the shard's pool (db.h) refuses at once while the shard is down,
 * its breaker open, its cap reached or its map changed. */
struct db_conn *shard_acquire_why(const struct shard *sh, int wait_ms, enum db_refusal *why);

/* Seconds a client should wait before retrying a request sh refused: what
 * is left of its breaker's open time, at least 1. */
int shard_retry_after_s(const struct shard *sh);

/* Pings sh's database over a connection borrowed within wait_ms (node gets
 * its Galera state): DB_OK when it takes writes; DB_UNAVAILABLE when no
 * connection frees up. */
enum db_status shard_ping(const struct shard *sh, int wait_ms, struct db_node *node);

/* The shard with this id, or NULL. */
const struct shard *shard_by_id(const struct shard_set *set, int id);

/* What an order number says of its shard: SHARD_PREFIXED with the id in
 * *id (1..99) for "S" + 2 digits + "-" + at least one more character;
 * SHARD_MALFORMED for any other number that starts with "S" or "s"
 * ("S00-", "S1-", "s01-", "SAB-", "S001-", "S01"), which are neither a
 * shard's number nor one this service made before sharding (those start
 * with "O"); SHARD_NO_PREFIX otherwise. Pure. */
enum shard_parse {
    SHARD_NO_PREFIX,
    SHARD_PREFIXED,
    SHARD_MALFORMED
};
enum shard_parse shard_parse_order_no(const char *order_no, int *id);

/* The shard an order lives on, or NULL when its number names none of this
 * service's shards (the caller answers 404 and writes nothing). Unsharded,
 * every order is on shard 1. Sharded, a prefixed number is routed by its
 * prefix and an unprefixed one (made before sharding) to shard 1, if
 * configured. */
const struct shard *shard_of_order(const struct shard_set *set, const char *order_no);

/* Where the row keyed by key is placed: the first 8 bytes of SHA-256(key),
 * big-endian, modulo the number of shards, indexing the shards by
 * ascending id (placement scheme SHARD_SCHEME, stored in the shard map).
 * Pure given the set of ids; the order of the configured list plays no
 * part. shard_place_index is the position in that ascending order. */
size_t shard_place_index(const char *key, size_t nshards);
const struct shard *shard_place(const struct shard_set *set, const char *key);

/* The order number of a new order on sh: tail itself when the set is not
 * sharded, else "Sdd-" + tail. out has outsz bytes. 0, or -1 when it does
 * not fit. */
int shard_order_no(const struct shard_set *set, const struct shard *sh, const char *tail, char *out,
                   size_t outsz);

#endif
