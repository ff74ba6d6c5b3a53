-- Which numbered migrations of sql/migrations/ this database holds: one row
-- per version, written once the migration's last statement has run.
-- `paycallback migrate` creates this table first and applies, in order,
-- every migration newer than the highest version here; the service starts
-- only on the version it was built with (sql/migrations/README.md).
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INT UNSIGNED  NOT NULL,
    name        VARCHAR(128)  NOT NULL,
    applied_at  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
