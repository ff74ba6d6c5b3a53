/* migrate.h - versioned schema migrations: the numbered SQL files of
 * sql/migrations/, embedded in the binary at build time, the table
 * schema_migrations that records which of them a database holds, and the
 * check that a database is at exactly the version this build runs on.
 * Only `paycallback migrate` changes a schema; a start never does. */
#ifndef PAYCALLBACK_MIGRATE_H
#define PAYCALLBACK_MIGRATE_H

#include <stddef.h>
#include <stdio.h>

struct config;
struct cfg_shard;

enum migrate_state {
    MIGRATE_CURRENT,     /* at the version of this build */
    MIGRATE_BEHIND,      /* older (or no schema_migrations): run migrate */
    MIGRATE_AHEAD,       /* newer than this build: upgrade the binary */
    MIGRATE_UNREACHABLE, /* MySQL did not answer */
    MIGRATE_ERROR        /* refused, or a history with a gap */
};

/* The schema version this build runs on: its highest migration. */
int migrate_latest(void);

/* Connects once to the server and database of at (one of cfg_endpoints)
 * and reads its schema version into *version (0: none recorded). The state
 * compared with migrate_latest(), with a one-line reason in err for every
 * state but MIGRATE_CURRENT. Needs mysql_library_init. */
enum migrate_state migrate_check(const struct config *cfg, const struct cfg_shard *at, int *version,
                                 char *err, size_t errsz);

/* `paycallback migrate`: on every endpoint of cfg in turn, creates
 * schema_migrations if missing and applies, in order, each migration newer
 * than the version recorded there, recording each once its last statement
 * has run. Re-running applies nothing. A database newer than this build is
 * left alone. Progress on out, failures on errf. Returns the exit status:
 * 0 done, 1 MySQL unreachable or a statement failed (the migration is
 * applied again from its start by the next run; migrations are written to
 * be re-runnable), 2 a database newer than this build. */
int migrate_run(const struct config *cfg, FILE *out, FILE *errf);

#endif
