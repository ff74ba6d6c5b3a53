-- The shard map of a sharded service (docs/sharding.md), one row on every
-- shard: which shard id this database is, every shard id of the set, the
-- placement scheme and the map's epoch. Written at the first start of a
-- sharded service and changed only by `paycallback --write-shard-map`; an
-- instance whose configuration differs refuses to start, and one that finds
-- a newer epoch while running stops using the shard. Empty on one database.
CREATE TABLE IF NOT EXISTS shard_map (
    singleton   TINYINT UNSIGNED NOT NULL DEFAULT 1,
    shard_id    TINYINT UNSIGNED NOT NULL,
    shard_ids   VARCHAR(255)  NOT NULL COMMENT 'every shard id of the set, ascending: 1,2',
    scheme      VARCHAR(64)   NOT NULL,
    epoch       BIGINT UNSIGNED NOT NULL,
    update_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (singleton),
    CONSTRAINT ck_shard_map_singleton CHECK (singleton = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
