/* redis.h - Redis for the two things it does here: single-use tokens and the
 * per-sku stock lock. A pool of hiredis connections, Lua scripts called by
 * EVALSHA, and the degraded state: when Redis cannot be reached every call
 * answers RDS_DOWN at once and the caller serves the operation without
 * Redis (tokens in MySQL, no stock lock). Knows nothing of HTTP or MySQL.
 *
 * Threads: every function may be called from any thread; each command
 * borrows one pooled connection for its duration only. */
#ifndef PAYCALLBACK_REDIS_H
#define PAYCALLBACK_REDIS_H

#include <stdbool.h>
#include <stdint.h>

struct config;
struct metrics;
struct rds_pool;

enum rds_status {
    RDS_OK,
    RDS_NOT_FOUND, /* token absent, used or expired; lock not ours */
    RDS_BUSY,      /* lock held by someone else past the wait bound */
    RDS_DOWN,      /* Redis unreachable: serve without it */
    RDS_ERROR      /* Redis answered with an unexpected error */
};

#define RDS_PROBE_INTERVAL_MS 1000 /* while degraded, try Redis this seldom */
#define RDS_KEY_MAX 128
#define RDS_TOKEN_PREFIX "idem:token:"
#define RDS_LOCK_PREFIX "idem:lock:"

/* Creates a pool of cfg->redis_pool_size connections to cfg->redis_host,
 * port and db, with cfg->redis_timeout_ms as connect and command timeout.
 * Connections are made lazily, so the pool comes up while Redis is down.
 * m may be NULL. NULL on allocation failure. */
struct rds_pool *rds_pool_create(const struct config *cfg, struct metrics *m);

/* Closes every connection. No call may be in progress. NULL-safe. */
void rds_pool_destroy(struct rds_pool *p);

/* True while Redis is considered unreachable (since the last failure and
 * until a later command succeeds). */
bool rds_degraded(struct rds_pool *p);

/* PINGs Redis, which also moves the degraded state either way (at most one
 * attempt a second while degraded). RDS_OK or RDS_DOWN. */
enum rds_status rds_ping(struct rds_pool *p);

/* Stores the token as idem:token:<token> for ttl_ms (> 0) unless it
 * exists (SET NX PX). RDS_OK, RDS_BUSY when the key already exists,
 * RDS_DOWN or RDS_ERROR. Issues a token, and puts back a consumed one. */
enum rds_status rds_token_put(struct rds_pool *p, const char *token, int64_t ttl_ms);

/* Consumes the token atomically (a Lua compare-and-delete). RDS_OK with the
 * milliseconds it had left in *remaining_ms when this call was its first
 * use; RDS_NOT_FOUND when it is unknown, used or expired; RDS_DOWN;
 * RDS_ERROR. *remaining_ms is 0 unless RDS_OK. */
enum rds_status rds_token_consume(struct rds_pool *p, const char *token, int64_t *remaining_ms);

/* Takes the lock key (SET key value NX PX ttl_ms). value must be unique to
 * this holder (32 random hex digits). While someone else holds it, tries
 * again every few milliseconds for at most wait_ms. RDS_OK (held),
 * RDS_BUSY (still held by another after wait_ms), RDS_DOWN, RDS_ERROR. */
enum rds_status rds_lock_acquire(struct rds_pool *p, const char *key, const char *value, int ttl_ms,
                                 int wait_ms);

/* Releases the lock key if and only if it still holds value (a Lua
 * compare-and-delete): a holder whose lock expired can never delete the
 * next holder's. RDS_OK (deleted), RDS_NOT_FOUND (expired or another
 * holder's), RDS_DOWN, RDS_ERROR. */
enum rds_status rds_lock_release(struct rds_pool *p, const char *key, const char *value);

/* "OK", "NOT_FOUND", ... for logs. */
const char *rds_status_str(enum rds_status st);

#endif
