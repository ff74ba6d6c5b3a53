/* backfill.h - paycallback --backfill-registries: the registry rows of the
 * payments and orders a database held before it became a shard.
 *
 * A sharded service binds every pay_no and every checkout (user_id,
 * request_id) in a registry placed by hash before it touches the order's
 * shard (docs/sharding.md). Rows written before mysql.shards was set have
 * no binding, so a pay_no paid before sharding could be presented again
 * for an order on another shard and be accepted there. This walks every
 * shard's payment_record and orders and writes the missing bindings,
 * exactly as the service would have. Re-runnable: a binding already there
 * and equal is counted as present; one naming another order is a
 * conflict, reported and left alone. */
#ifndef PAYCALLBACK_BACKFILL_H
#define PAYCALLBACK_BACKFILL_H

#include <stdbool.h>
#include <stdio.h>

struct config;

/* Runs the walk with cfg's shards, printing one line per shard, a summary
 * and the rate (rows/s) on out and each conflict or failure on err. Each
 * page's bindings are written in one transaction per target shard; then
 * the page's last id is saved on the walked shard (backfill_progress), so
 * a run stopped between two pages (stop() returns true: SIGTERM, SIGINT)
 * or failed resumes there, and a walk that finishes deletes its position.
 * stop may be NULL. Returns the exit status: 0 every binding written or
 * present, 1 a conflict or a database failure, 2 cfg is not sharded, 3
 * stopped (run again to resume). Needs mysql_library_init. */
int backfill_registries(const struct config *cfg, bool (*stop)(void), FILE *out, FILE *err);

#endif
