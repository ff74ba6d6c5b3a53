/* db.h - MariaDB/MySQL connection pool, prepared statements, typed row
 * accessors, the one bounded retry loop and the one table of MySQL error
 * codes. Knows nothing of HTTP or JSON, and logs nothing about a failed
 * statement: the detail stays on the connection (db_errno, db_errstr,
 * hiredis style) for the caller to log once, with its request id.
 *
 * Every statement is named by an id from stmts.h and prepared once per
 * connection, on first use. Parameters are bound as strings (MySQL converts
 * them to the column type; db_param_int formats integers and statuses) and
 * result columns are read back as strings through the db_row_* accessors:
 * DECIMAL arrives as "899.00" and goes through money_parse, never a float.
 *
 * Threads: the pool is shared; a connection is used by one thread at a time
 * (between db_acquire and db_release). */
#ifndef PAYCALLBACK_DB_H
#define PAYCALLBACK_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "stmts.h"

struct config;
struct cfg_shard;
struct metrics;
struct db_pool;
struct db_conn;
struct db_node;

enum db_status {
    DB_OK,
    DB_DUPLICATE,   /* 1062 duplicate key, and only that */
    DB_RETRY,       /* deadlock, lock wait, lost link, schema in passing: run it again */
    DB_UNAVAILABLE, /* cannot connect, node not ready, retries exhausted -> 503 */
    DB_ERROR,       /* anything else: a bug, a schema problem, a bad row -> 500 */
    DB_ROLLBACK     /* a txn body asked to roll back (not an error) */
};

#define DB_RETRY_MAX 4 /* attempts of one transaction or read */
#define DB_COLS_MAX 24
#define DB_COL_MAX \
    600                         /* bytes per result column, NUL included: an outbox
                                     payload (OUTBOX_PAYLOAD_MAX) fits */
#define DB_ERRSTR_MAX 256       /* db_errstr text, NUL included */
#define DB_INT_BUF 24           /* db_param_int text: any int64 and the NUL */
#define DB_PARAMS_MAX_PUBLIC 12 /* parameters of one statement */

/* One result row: every column as a NUL-terminated string. Read it with
 * the db_row_* accessors, by the column enum of its statement (stmts.h). */
struct db_row {
    char col[DB_COLS_MAX][DB_COL_MAX];
    unsigned char is_null[DB_COLS_MAX];
    unsigned int ncols; /* columns the statement returned */
};

/* Creates a pool of cfg->mysql_pool_size connections to the server and
 * database of at (one of cfg_endpoints). Connections are made lazily, so
 * the pool comes up while MySQL is down. NULL on allocation failure. m may
 * be NULL. */
struct db_pool *db_pool_create(const struct config *cfg, const struct cfg_shard *at,
                               struct metrics *m);

/* Names the pool's index in the shard set, for the per-shard metrics
 * (0 by default). Before the pool is shared. */
void db_pool_set_shard_index(struct db_pool *pool, size_t idx);

/* Closes every connection. All connections must have been released. NULL-safe. */
void db_pool_destroy(struct db_pool *pool);

/* Asks MySQL, over a connection of its own, to abort the statement each
 * pooled session is running (KILL QUERY; idle sessions are unaffected).
 * For a stop that cuts requests in flight: a CALL runs to its COMMIT on
 * the server even after its client is gone, so without this a cut request
 * could still commit after the process exited. Best effort, blocking (at
 * most the connect timeout); any thread, while the pool exists. */
void db_pool_interrupt(struct db_pool *pool);

/* Borrows a connection, waiting at most wait_ms. NULL on timeout, or at
 * once when the pool's guard refuses (see below). The connection may not
 * be connected yet: db_exec/db_query/db_txn connect it. Its error detail
 * is cleared. */
struct db_conn *db_acquire(struct db_pool *pool, int wait_ms);

/* Returns a connection to the pool. NULL-safe. */
void db_release(struct db_pool *pool, struct db_conn *conn);

/* ---- a shard's guard ------------------------------------------------------
 * Every borrowing of a shard's pool goes through db_acquire, so that one
 * place keeps the shard from taking the service down with it:
 *  - health, set by the shard's background prober (db_pool_set_health): a
 *    shard that is down, not synced, or whose shard map changed refuses at
 *    once, without waiting on a connection;
 *  - a circuit breaker: breaker_failures consecutive requests that could
 *    not reach the database (connect, read or write timeout, lost link, or
 *    no free connection within the wait) open it; open, it refuses at once
 *    for breaker_open_ms, then lets one request through as a trial
 *    (half-open): its success, or a successful probe, closes it, its
 *    failure opens it again;
 *  - a cap on requests in flight (borrowed or waiting for a connection),
 *    counted when a request is admitted, before it waits or calls, so a
 *    shard that hangs holds at most that many of the service's workers
 *    from its first stuck request (not only once it is seen stalled). A
 *    request that finds the cap reached waits for a request in flight to
 *    end while the shard makes progress, and is refused at once when it
 *    does not: once no request has finished for stall_ms (a stalled
 *    shard), and never later than that.
 * A pool starts with no guard (db_pool_create); shard_set_open arms it. */

/* Why db_acquire_why gave no connection. */
enum db_refusal {
    DB_REFUSED_NONE,
    DB_REFUSED_WAIT,   /* no free connection within wait_ms */
    DB_REFUSED_OUTAGE, /* the shard is down or its breaker is open */
    DB_REFUSED_BUSY,   /* its cap on requests in flight is reached */
    DB_REFUSED_MAP     /* its shard map differs from this instance's */
};

/* What the prober last found. */
enum db_health {
    DB_HEALTH_UNKNOWN, /* not probed yet: requests go through */
    DB_HEALTH_UP,
    DB_HEALTH_DOWN,       /* does not answer */
    DB_HEALTH_NOT_SYNCED, /* a Galera node that is not Synced */
    DB_HEALTH_MAP_STALE   /* answers, but its shard map is not ours */
};

/* Arms the guard; max_inflight 0 means no cap. trust_probe: a shard the
 * prober finds down (or whose probe is overdue) refuses at once; without
 * it (one database: there is no other shard to keep workers for) the
 * probe only informs readiness and the breaker alone fails fast.
 * probe_timeout_ms: a probe running longer reads as down. Before the pool
 * is shared. */
void db_pool_guard(struct db_pool *pool, int breaker_failures, int breaker_open_ms,
                   int max_inflight, int stall_ms, bool trust_probe, int probe_timeout_ms);

/* The prober is about to probe: until db_pool_set_health, a probe that
 * runs past probe_timeout_ms reads as DB_HEALTH_DOWN (a hung host answers
 * no ping, and its probe waits out the read timeout). */
void db_pool_probe_begin(struct db_pool *pool);

/* db_acquire, saying why it gave none in *why (may be NULL). */
struct db_conn *db_acquire_why(struct db_pool *pool, int wait_ms, enum db_refusal *why);

/* Records a probe: UP closes the breaker; with trust_probe, DOWN and
 * NOT_SYNCED open it (refusing until the next successful probe). node may
 * be NULL. Any thread. */
void db_pool_set_health(struct db_pool *pool, enum db_health h, const struct db_node *node);

/* The last probe's finding, and its node state in *node (may be NULL). */
enum db_health db_pool_health(struct db_pool *pool, struct db_node *node);

/* True while requests to the pool are refused at once: down, not synced,
 * map changed, or breaker open (not half-open). Any thread. */
bool db_pool_outage(struct db_pool *pool);

/* Seconds until the pool's open breaker lets a trial through, rounded up;
 * 1 when it is not open. */
int db_pool_retry_after_s(struct db_pool *pool);

/* Requests in flight on the pool (for tests and /readyz). */
int db_pool_inflight(struct db_pool *pool);

/* A pool of one connection with no guard, for a background prober. */
struct db_pool *db_pool_create_probe(const struct config *cfg, const struct cfg_shard *at,
                                     struct metrics *m);

/* "none", "wait", "outage", "busy", "map" for logs. */
const char *db_refusal_str(enum db_refusal why);

/* The MySQL error number of the last failure on c (0 for none, or for a
 * failure that had no MySQL number, such as a malformed row), and its
 * one-line description ("" for none). Set by every failing call; a
 * succeeding call leaves it alone, so after a failed db_txn it names the
 * failure that ended it. The string lives until the next call on c.
 * NULL-safe (0 and ""). */
unsigned int db_errno(const struct db_conn *c);
const char *db_errstr(const struct db_conn *c);

/* Records a failure found above the statement level (a malformed row, a
 * broken invariant) on c, so that it travels up like a MySQL error: the
 * printf-style text goes to db_errstr, db_errno becomes 0. Returns
 * DB_ERROR, for `return db_fail(c, "...")`. */
enum db_status db_fail(struct db_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs a statement that returns no rows. *affected (may be NULL) gets the
 * affected-row count. */
enum db_status db_exec(struct db_conn *c, enum db_stmt id, const char *const *params,
                       size_t nparams, uint64_t *affected);

/* Runs a query; stores up to max_rows rows in rows and the count in *nrows
 * (rows past max_rows are read and dropped). */
enum db_status db_query(struct db_conn *c, enum db_stmt id, const char *const *params,
                        size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows);

/* db_query for at most one row: *found says whether there was one. */
enum db_status db_query_one(struct db_conn *c, enum db_stmt id, const char *const *params,
                            size_t nparams, struct db_row *row, bool *found);

/* db_query_one for a row with one column too long for a db_row (a stored
 * reply): column long_col goes into buf (bufsz bytes, NUL-terminated, its
 * length in *len) and reads as "" in *row. A value that does not fit is
 * DB_ERROR. */
enum db_status db_query_one_long(struct db_conn *c, enum db_stmt id, const char *const *params,
                                 size_t nparams, struct db_row *row, unsigned int long_col,
                                 char *buf, size_t bufsz, size_t *len, bool *found);

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

/* Runs fn outside an explicit transaction (autocommit), with the same retry
 * rules as db_txn: for reads that need no snapshot and for single
 * statements. Same returns as db_txn. */
enum db_status db_retry(struct db_conn *c, db_txn_fn fn, void *arg);

/* db_exec under db_retry, for one statement on its own (autocommit);
 * *affected (may be NULL) gets the affected-row count of the run that
 * succeeded. */
enum db_status db_exec_retry(struct db_conn *c, enum db_stmt id, const char *const *params,
                             size_t nparams, uint64_t *affected);

/* db_query under db_retry, for one read. */
enum db_status db_query_retry(struct db_conn *c, enum db_stmt id, const char *const *params,
                              size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows);

/* What a readiness probe learnt about the server behind a connection. */
struct db_node {
    int galera;            /* 1 when a wsrep provider is loaded (wsrep_local_state exists) */
    int wsrep_ready;       /* wsrep_ready = ON */
    int wsrep_local_state; /* 4 = Synced; 0 when not Galera */
};

#define DB_WSREP_SYNCED 4 /* wsrep_local_state of a node that takes writes */

/* Connects if needed and checks that the server can take writes: it
 * answers a bounded query (one second of statement time), and where
 * Galera's status variables exist, wsrep_ready is ON and wsrep_local_state
 * is 4 (Synced), since a joining, donor or non-primary node still answers
 * SELECT 1. Fills *node (may be NULL) with what it saw. DB_OK or
 * DB_UNAVAILABLE. */
enum db_status db_ping(struct db_conn *c, struct db_node *node);

/* Formats v as a statement parameter into buf and returns buf. For counts
 * and for the statuses of order_state.h: SQL text carries no status
 * literal, the caller binds the enum's value. */
const char *db_param_int(char buf[DB_INT_BUF], int64_t v);

/* Typed column accessors. Each returns 0 with the value in *out, or -1 when
 * the column is missing, NULL, or not what the accessor expects (then *out
 * is zeroed and the caller answers DB_ERROR through db_fail): a malformed
 * value is an error, never a silent 0. */

/* A base-10 integer in [min, max]. */
int db_row_int(const struct db_row *r, unsigned int col, int64_t min, int64_t max, int64_t *out);

/* A DECIMAL(12,2) amount, as integer cents (money_parse rules). */
int db_row_cents(const struct db_row *r, unsigned int col, int64_t *out);

/* The text of the column, copied into out (outsz bytes); -1 also when it
 * does not fit. */
int db_row_str(const struct db_row *r, unsigned int col, char *out, size_t outsz);

/* True when the column is SQL NULL (or missing). */
bool db_row_is_null(const struct db_row *r, unsigned int col);

/* Connects once with cfg's settings to the server and database of at (one
 * of cfg_endpoints), outside any pool, and checks that the
 * tables and the stored procedures (of the version this build calls) of
 * sql/migrations/ exist; at start and for --check-config. Returns DB_OK,
 * DB_UNAVAILABLE (MySQL cannot be reached) or DB_ERROR (refused: wrong
 * credentials, unknown database, missing tables), with a one-line reason
 * in err (errsz bytes) for the last two. Any thread; needs
 * mysql_library_init. */
enum db_status db_probe(const struct config *cfg, const struct cfg_shard *at, char *err,
                        size_t errsz);

/* "OK", "DUPLICATE", ... for logs. */
const char *db_status_str(enum db_status st);

/* True when a failed st means MySQL is unreachable or busy (DB_UNAVAILABLE,
 * DB_RETRY after the retries): the caller answers "try again later" (503),
 * nothing written. Any other failure is an error (500). */
bool db_retryable(enum db_status st);

/* A module's failure result for a failed st: its unavailable value when
 * db_retryable(st), its error value otherwise. */
#define DB_FAILURE(st, unavailable, error) (db_retryable(st) ? (unavailable) : (error))

/* ---- non-blocking (http.event_loop) ---------------------------------------
 * One statement at a time on a borrowed connection, driven by an event
 * loop with MariaDB's non-blocking API (MYSQL_OPT_NONBLOCK, set on every
 * connection of a pool whose config has http.event_loop on; blocking calls
 * still work on it). The caller waits on db_call_fd for the events the
 * start or continue call returned, or until db_call_timeout_ms passes
 * when DB_IO_TIMEOUT is among them, and continues with what happened.
 * No retry here: a failure is reported like db_query's (db_errno,
 * db_errstr, the link dropped where the error table says so), and the
 * caller decides. */

#define DB_IO_READ 1    /* wait until the socket is readable */
#define DB_IO_WRITE 2   /* wait until the socket is writable */
#define DB_IO_EXCEPT 4  /* wait for out-of-band data */
#define DB_IO_TIMEOUT 8 /* wait at most db_call_timeout_ms (the read timeout) */

/* A statement in flight. The params strings must live until it is done. */
struct db_call {
    struct db_conn *c;
    enum db_stmt id;
    int step;
    void *stmt;         /* the connection's prepared MYSQL_STMT */
    struct db_row *row; /* where the first row goes */
    size_t nrows;       /* rows the statement answered */
    enum db_status st;  /* when done */
    bool timed_out;     /* a wait ran out: the server did not answer within its bound */
    unsigned int ncols;
    unsigned long plen[DB_PARAMS_MAX_PUBLIC];
    char pnull[DB_PARAMS_MAX_PUBLIC];
    unsigned long rlen[DB_COLS_MAX];
    char rnull[DB_COLS_MAX];
    char rerr[DB_COLS_MAX];
    struct db_row scratch;
};

/* Calls fn(arg) on the releasing thread after every db_release of pool,
 * under the pool's mutex (fn must be short and take no pool's lock): an
 * event loop whose requests wait for a connection looks again. fn NULL
 * unsets it; once that returns, fn is not called any more. */
void db_pool_on_release(struct db_pool *pool, void (*fn)(void *), void *arg);

/* db_acquire without waiting and without a miss counting against the
 * shard: NULL with *why DB_REFUSED_WAIT when every connection is lent
 * out, or the guard's refusal. */
struct db_conn *db_try_acquire(struct db_pool *pool, enum db_refusal *why);

/* True when c is connected with the non-blocking API on and statement id
 * prepared: db_call_start can run it. Otherwise the blocking calls
 * (which connect and prepare) must run first. */
bool db_call_ready(const struct db_conn *c, enum db_stmt id);

/* Starts statement id on c (db_call_ready) with string params, the first
 * result row into *row. Returns the DB_IO_* events to wait for, or 0
 * when done: then q->st is DB_OK (q->nrows rows, the first in *row) or
 * the failure, classified as db_query's. */
int db_call_start(struct db_call *q, struct db_conn *c, enum db_stmt id, const char *const *params,
                  size_t nparams, struct db_row *row);

/* Continues after the DB_IO_* events that happened (DB_IO_TIMEOUT when
 * the wait ran out). Same returns as db_call_start. */
int db_call_cont(struct db_call *q, int events);

/* The socket to wait on, and the wait's bound in ms when DB_IO_TIMEOUT
 * was asked for. */
int db_call_fd(const struct db_call *q);
int db_call_timeout_ms(const struct db_call *q);
/* Whether q failed because a wait of its ran out (DB_IO_TIMEOUT), not
 * because the server answered or closed the link. */
bool db_call_timed_out(const struct db_call *q);

/* True when the last failure on c was a connect, read or write failure
 * or timeout: the server did not answer. */
bool db_unreachable(const struct db_conn *c);

/* c's failure is left to a blocking retry of the same work, which
 * connects again and judges the server itself: released, c counts no
 * failure for the circuit breaker. */
void db_leave_to_retry(struct db_conn *c);

#endif
