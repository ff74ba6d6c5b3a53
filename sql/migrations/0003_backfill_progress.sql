-- Where `paycallback --backfill-registries` stopped on this shard: one row
-- per walk ('payments', 'orders') naming the id of the last row whose
-- bindings are all written. A run that is stopped (SIGTERM, SIGINT) or
-- fails resumes after it; a run that finishes deletes it, so the next run
-- checks every row again.
CREATE TABLE IF NOT EXISTS backfill_progress (
    walk        VARCHAR(16)     NOT NULL,
    after_id    BIGINT UNSIGNED NOT NULL,
    update_time DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (walk)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
