/* db.h - MariaDB/MySQL connection pool, prepared statements, and the one
 * bounded transaction-retry loop. Knows nothing of HTTP or JSON.
 *
 * Every statement is named by an id from stmts.h and prepared once per
 * connection, on first use. Parameters are bound as strings (MySQL converts
 * them to the column type) and result columns are read back as strings:
 * DECIMAL arrives as "899.00" and goes through money_parse, never a float.
 *
 * Threads: the pool is shared; a connection is used by one thread at a time
 * (between db_acquire and db_release). */
#ifndef PAYCALLBACK_DB_H
#define PAYCALLBACK_DB_H

#include <stddef.h>
#include <stdint.h>
#include "stmts.h"

struct config;
struct metrics;
struct db_pool;
struct db_conn;

enum db_status {
    DB_OK,
    DB_DUPLICATE,                 /* 1062 duplicate key, and only that */
    DB_RETRY,                     /* 1213 deadlock, 1205 lock wait, 2006/2013 lost */
    DB_UNAVAILABLE,               /* cannot connect, or retries exhausted -> 503 */
    DB_ERROR,                     /* anything else: a bug or a schema problem -> 500 */
    DB_ROLLBACK                   /* a txn body asked to roll back (not an error) */
};

#define DB_RETRY_MAX 4            /* attempts of one transaction */
#define DB_COLS_MAX  12
#define DB_COL_MAX   200          /* bytes per result column, NUL included */

/* One result row: every column as a NUL-terminated string. */
struct db_row {
    char col[DB_COLS_MAX][DB_COL_MAX];
    unsigned char is_null[DB_COLS_MAX];
};

/* Creates a pool of cfg->mysql_pool_size connections. Connections are made
 * lazily, so the pool comes up while MySQL is down. NULL on allocation
 * failure. m may be NULL. */
struct db_pool *db_pool_create(const struct config *cfg, struct metrics *m);

/* Closes every connection. All connections must have been released. NULL-safe. */
void db_pool_destroy(struct db_pool *pool);

/* Borrows a connection, waiting at most wait_ms. NULL on timeout. The
 * connection may not be connected yet: db_exec/db_query/db_txn connect it. */
struct db_conn *db_acquire(struct db_pool *pool, int wait_ms);

/* Returns a connection to the pool. NULL-safe. */
void db_release(struct db_pool *pool, struct db_conn *conn);

/* Runs a statement that returns no rows. *affected (may be NULL) gets the
 * affected-row count. */
enum db_status db_exec(struct db_conn *c, enum db_stmt id,
                       const char *const *params, size_t nparams,
                       uint64_t *affected);

/* Runs a query; stores up to max_rows rows in rows and the count in *nrows
 * (rows past max_rows are read and dropped). */
enum db_status db_query(struct db_conn *c, enum db_stmt id,
                        const char *const *params, size_t nparams,
                        struct db_row *rows, size_t max_rows, size_t *nrows);

/* The body of a transaction. It must be safe to run again: it resets its
 * own outputs first. Return DB_OK to commit, DB_ROLLBACK to roll back and
 * stop, DB_RETRY to roll back and run again, anything else to roll back
 * and fail with that status. */
typedef enum db_status (*db_txn_fn)(struct db_conn *c, void *arg);

/* Runs fn between START TRANSACTION and COMMIT, reconnecting and re-running
 * on deadlock and lost connections up to DB_RETRY_MAX attempts with a short
 * backoff. A COMMIT whose outcome is unknown is re-run too: the unique keys
 * make the re-run answer from what the lost commit wrote. Returns DB_OK
 * (committed), DB_ROLLBACK, DB_UNAVAILABLE (retries exhausted or MySQL
 * unreachable), or the body's own failure status. */
enum db_status db_txn(struct db_conn *c, db_txn_fn fn, void *arg);

/* Runs one statement outside an explicit transaction with the same retry
 * rules (for reads: GET /order). */
enum db_status db_query_retry(struct db_conn *c, enum db_stmt id,
                              const char *const *params, size_t nparams,
                              struct db_row *rows, size_t max_rows, size_t *nrows);

/* Connects if needed and pings. DB_OK or DB_UNAVAILABLE. */
enum db_status db_ping(struct db_conn *c);

/* Connects once with cfg's settings, outside any pool, and checks that the
 * tables and the stored procedures (of the version this build calls) of
 * sql/schema.sql exist; at start and for --check-config. Returns DB_OK,
 * DB_UNAVAILABLE (MySQL cannot be reached) or DB_ERROR (refused: wrong
 * credentials, unknown database, missing tables), with a one-line reason
 * in err (errsz bytes) for the last two. Any thread; needs
 * mysql_library_init. */
enum db_status db_probe(const struct config *cfg, char *err, size_t errsz);

/* "OK", "DUPLICATE", ... for logs. */
const char *db_status_str(enum db_status st);

#endif
