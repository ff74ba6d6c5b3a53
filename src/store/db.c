/* db.c - MariaDB/MySQL connection pool, prepared statements, transactions,
 * and the one place where MySQL error codes are classified. Knows nothing
 * of HTTP or JSON.
 *
 * Each pooled connection keeps its prepared statements (one per stmt id,
 * prepared on first use). A lost connection is closed whole, statements
 * and all, and made again on the next attempt: never a silent auto-
 * reconnect in the middle of a transaction. */
#include "db.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "config.h"
#include "metrics.h"
#include "money.h"
#include "monotime.h"
#include "slots.h"

#define DB_PARAMS_MAX DB_PARAMS_MAX_PUBLIC
#define DB_BACKOFF_BASE_MS 20 /* 20, 40, 80 ms between attempts */
#define DB_LOCK_WAIT_S 3      /* innodb_lock_wait_timeout per session */

struct db_conn {
    MYSQL *my; /* NULL while disconnected */
    MYSQL_STMT *st[ST_COUNT];
    struct db_pool *pool;
    bool was_connected;         /* a connect now is a reconnect */
    atomic_ulong server_id;     /* MySQL's id of the session, 0 while disconnected */
    unsigned int err;           /* last failure: MySQL errno, 0 for none */
    char errstr[DB_ERRSTR_MAX]; /* last failure, one line */
    /* Since db_acquire, for the guard: */
    bool guarded;     /* counted in the guard's in-flight requests */
    bool trial;       /* the half-open breaker's one trial */
    bool reached;     /* a statement ran on the server */
    bool unreachable; /* the last connect, read or write failed or timed out */
};

enum breaker {
    BR_CLOSED,
    BR_OPEN,
    BR_HALF_OPEN
};

struct db_guard {
    pthread_mutex_t mu;
    pthread_cond_t slot; /* signalled when a request in flight ends (CLOCK_MONOTONIC) */
    bool on;
    int failures_max, open_ms, max_inflight, stall_ms, probe_timeout_ms;
    bool trust_probe;
    long long probe_since_ms; /* a probe is running since then; 0: none */
    int inflight;
    long long last_done_ms; /* when a request last finished, or the first of a
                                     busy spell came in */
    int failures;           /* consecutive */
    enum breaker br;
    long long open_until_ms;
    bool trial_out;
    enum db_health health;
    struct db_node node;
};

struct db_pool {
    const struct config *cfg;
    struct cfg_shard at; /* the server and database (cfg_endpoints) */
    size_t shard_index;  /* its index in the shard set, for per-shard metrics */
    struct metrics *m;
    struct slots *free; /* which of conns are lent out */
    struct db_conn *conns;
    int size;
    struct db_guard g;
    /* db_pool_on_release, under g.mu: */
    atomic_bool has_on_release;
    void (*on_release)(void *);
    void *on_release_arg;
};

/* The one table of MySQL error codes: what each means to us, and whether
 * the connection is gone (or in an unknown state) and must be remade.
 * Codes not listed are DB_ERROR and drop the link: a bug or a schema
 * problem, after which nothing about the session is trusted. */
struct db_errmap {
    unsigned int err;
    enum db_status st;
    bool drop; /* close the link; the next call reconnects */
};

static const struct db_errmap errmap[] = {
    { ER_DUP_ENTRY, DB_DUPLICATE, false },       /* 1062 */
    { ER_LOCK_DEADLOCK, DB_RETRY, false },       /* 1213 */
    { ER_LOCK_WAIT_TIMEOUT, DB_RETRY, false },   /* 1205 */
    { ER_CON_COUNT_ERROR, DB_RETRY, true },      /* 1040 too many connections */
    { ER_SERVER_SHUTDOWN, DB_RETRY, true },      /* 1053 */
    { 1927, DB_RETRY, true },                    /* MariaDB: connection killed */
    { 4031, DB_RETRY, true },                    /* MySQL 8: idle client disconnected */
    { CR_CONNECTION_ERROR, DB_RETRY, true },     /* 2002 */
    { CR_CONN_HOST_ERROR, DB_RETRY, true },      /* 2003 */
    { CR_SERVER_GONE_ERROR, DB_RETRY, true },    /* 2006 */
    { CR_SERVER_LOST, DB_RETRY, true },          /* 2013 */
    { CR_SERVER_LOST_EXTENDED, DB_RETRY, true }, /* 2055 */
    { CR_COMMANDS_OUT_OF_SYNC, DB_ERROR, true }, /* 2014 */
    /* Galera. 1047: the node is joining, donating or outside the primary
     * component ("WSREP has not yet prepared node for application use");
     * it answers nothing useful until it rejoins, so fail at once (503)
     * rather than retry against it. 1180: the primary was lost at COMMIT,
     * an unknown outcome, re-run like a lost COMMIT. */
    { 1047, DB_UNAVAILABLE, true },
    { ER_ERROR_DURING_COMMIT, DB_RETRY, true }, /* 1180 */
    /* The schema in passing: a procedure replaced by DROP + CREATE (a
     * re-run migration) is missing for a moment (1305), and a table a
     * prepared statement reads was altered under it (1615). Nothing ran,
     * so the re-run is safe, on a fresh link with statements prepared
     * again; still missing after the retries, it is a 503 like any
     * passing state, never a 500. A missing table stays an error: no
     * migration drops one. */
    { ER_SP_DOES_NOT_EXIST, DB_RETRY, true }, /* 1305 */
    { ER_NEED_REPREPARE, DB_RETRY, true },    /* 1615 */
};

/* Looks err up in errmap. */
static struct db_errmap classify(unsigned int err)
{
    struct db_errmap e = { err, DB_ERROR, true };

    if (err == 0) {
        e.st = DB_OK;
        e.drop = false;
        return e;
    }
    for (size_t i = 0; i < ARRAY_SIZE(errmap); i++)
        if (errmap[i].err == err)
            return errmap[i];
    return e;
}

static void stmt_close(MYSQL_STMT *st)
{
    if (st != NULL)
        mysql_stmt_close(st);
}

static void disconnect(struct db_conn *c)
{
    for (int i = 0; i < ST_COUNT; i++) {
        stmt_close(c->st[i]);
        c->st[i] = NULL;
    }
    atomic_store(&c->server_id, 0);
    if (c->my != NULL)
        mysql_close(c->my);
    c->my = NULL;
}

/* Keeps errstr one logfmt-safe line: no quotes, no control characters. */
static void tidy_errstr(struct db_conn *c)
{
    for (char *p = c->errstr; *p != '\0'; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = *p == '"' ? '\'' : ' ';
}

/* Records err against the connection (db_errno, db_errstr), drops the link
 * when the table says so, and returns the classified status. Logs nothing:
 * the caller logs once, with its request id. */
static enum db_status fail(struct db_conn *c, unsigned int err, const char *what, const char *msg)
{
    struct db_errmap e = classify(err);

    c->err = err;
    snprintf(c->errstr, sizeof(c->errstr), "%.60s: %s (errno %u)", what, msg, err);
    tidy_errstr(c);
    if (err == CR_CONNECTION_ERROR || err == CR_CONN_HOST_ERROR || err == CR_SERVER_GONE_ERROR ||
        err == CR_SERVER_LOST || err == CR_SERVER_LOST_EXTENDED || err == 1047)
        c->unreachable = true;
    if (e.drop)
        disconnect(c); /* unknown state: start clean */
    return e.st;
}

unsigned int db_errno(const struct db_conn *c)
{
    return c != NULL ? c->err : 0;
}

const char *db_errstr(const struct db_conn *c)
{
    return c != NULL ? c->errstr : "";
}

enum db_status db_fail(struct db_conn *c, const char *fmt, ...)
{
    va_list ap;

    c->err = 0;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    tidy_errstr(c);
    return DB_ERROR;
}

/* Sets the options every session of ours uses on a fresh handle. The
 * operator's mysql.init_command (e.g. "SET SESSION wsrep_sync_wait = 1" so
 * reads on a Galera node wait for the writes the cluster already ordered)
 * runs after ours; the client library keeps each command and runs them in
 * turn on every connect and reconnect. A failing one fails the connect. */
static void session_options(MYSQL *my, const struct config *cfg)
{
    unsigned int connect_s = (unsigned int)(cfg->mysql_connect_timeout_ms + 999) / 1000;
    unsigned int io_s = (unsigned int)cfg->mysql_io_timeout_s; /* well below the HTTP bounds */
    /* A lock wait must end on the server before the socket times out on
     * our side: a statement we gave up on would otherwise go on waiting
     * there and could still commit after we answered. */
    int lock_s = (int)io_s - 1 < DB_LOCK_WAIT_S ? (int)io_s - 1 : DB_LOCK_WAIT_S;
    char init[128];

    snprintf(init, sizeof(init), "SET time_zone = '+00:00', innodb_lock_wait_timeout = %d", lock_s);
    /* mysql_options copies string values, so init may live on the stack. */
    mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(my, MYSQL_INIT_COMMAND, init);
    if (cfg->mysql_init_command[0] != '\0')
        mysql_options(my, MYSQL_INIT_COMMAND, cfg->mysql_init_command);
    if (cfg->http_event_loop) /* a context for the non-blocking calls */
        mysql_options(my, MYSQL_OPT_NONBLOCK, 0);
}

static enum db_status connect_conn(struct db_conn *c)
{
    const struct config *cfg = c->pool->cfg;
    const struct cfg_shard *at = &c->pool->at;

    if (c->my != NULL)
        return DB_OK;
    if ((c->my = mysql_init(NULL)) == NULL)
        return db_fail(c, "cannot allocate a mysql handle");
    session_options(c->my, cfg);
    if (mysql_real_connect(c->my, at->host, cfg->mysql_user, cfg->mysql_password, at->database,
                           (unsigned int)at->port, NULL, 0) == NULL) {
        c->err = mysql_errno(c->my);
        snprintf(c->errstr, sizeof(c->errstr),
                 "cannot connect to mysql %.64s:%d: %.140s (errno %u)", at->host, at->port,
                 mysql_error(c->my), c->err);
        tidy_errstr(c);
        disconnect(c);
        c->unreachable = true;
        return DB_UNAVAILABLE;
    }
    atomic_store(&c->server_id, mysql_thread_id(c->my));
    metrics_inc(c->pool->m, M_MYSQL_CONNECTS);
    if (c->was_connected) {
        metrics_inc(c->pool->m, M_MYSQL_RECONNECTS);
        metrics_shard_inc(c->pool->m, c->pool->shard_index, MS_RECONNECTS);
    }
    c->was_connected = true;
    return DB_OK;
}

/* The prepared statement for id, preparing it on first use. */
static enum db_status prepared(struct db_conn *c, enum db_stmt id, MYSQL_STMT **out)
{
    enum db_status st;
    MYSQL_STMT *s;

    *out = NULL;
    if ((st = connect_conn(c)) != DB_OK)
        return st;
    if (c->st[id] == NULL) {
        if ((s = mysql_stmt_init(c->my)) == NULL)
            return fail(c, mysql_errno(c->my), "stmt_init", mysql_error(c->my));
        if (mysql_stmt_prepare(s, stmt_sql[id], strlen(stmt_sql[id])) != 0) {
            unsigned int err = mysql_stmt_errno(s);
            char msg[256];
            snprintf(msg, sizeof(msg), "%s", mysql_stmt_error(s));
            mysql_stmt_close(s);
            return fail(c, err, "prepare", msg);
        }
        c->st[id] = s;
    }
    *out = c->st[id];
    return DB_OK;
}

/* Binds params as strings and executes. */
static enum db_status execute(struct db_conn *c, enum db_stmt id, const char *const *params,
                              size_t nparams, MYSQL_STMT **out)
{
    MYSQL_BIND bind[DB_PARAMS_MAX];
    unsigned long len[DB_PARAMS_MAX];
    my_bool null_flag[DB_PARAMS_MAX];
    enum db_status st;
    MYSQL_STMT *s;

    *out = NULL;
    if (nparams > DB_PARAMS_MAX)
        return db_fail(c, "%.60s: too many parameters (%zu)", stmt_sql[id], nparams);
    if ((st = prepared(c, id, &s)) != DB_OK)
        return st;
    if (mysql_stmt_param_count(s) != nparams)
        return db_fail(c, "%.60s: wants %lu parameters, got %zu", stmt_sql[id],
                       mysql_stmt_param_count(s), nparams);
    memset(bind, 0, sizeof(bind));
    for (size_t i = 0; i < nparams; i++) {
        null_flag[i] = params[i] == NULL;
        len[i] = params[i] ? strlen(params[i]) : 0;
        bind[i].buffer_type = MYSQL_TYPE_STRING;
        bind[i].buffer = (void *)(params[i] ? params[i] : "");
        bind[i].buffer_length = len[i];
        bind[i].length = &len[i];
        bind[i].is_null = &null_flag[i];
    }
    if ((nparams > 0 && mysql_stmt_bind_param(s, bind) != 0) || mysql_stmt_execute(s) != 0)
        return fail(c, mysql_stmt_errno(s), stmt_sql[id], mysql_stmt_error(s));
    c->reached = true; /* the last outcome is what the guard counts */
    c->unreachable = false;
    *out = s;
    return DB_OK;
}

enum db_status db_exec(struct db_conn *c, enum db_stmt id, const char *const *params,
                       size_t nparams, uint64_t *affected)
{
    enum db_status st;
    MYSQL_STMT *s;

    if (affected != NULL)
        *affected = 0;
    if ((st = execute(c, id, params, nparams, &s)) != DB_OK)
        return st;
    if (affected != NULL)
        *affected = (uint64_t)mysql_stmt_affected_rows(s);
    return DB_OK;
}

/* A result column read into the caller's buffer instead of a db_row. */
struct long_col {
    unsigned int col;
    char *buf;
    size_t bufsz;
    size_t *len;
};

/* db_query, with lc (may be NULL) naming one column too long for a db_row. */
static enum db_status query(struct db_conn *c, enum db_stmt id, const char *const *params,
                            size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows,
                            const struct long_col *lc)
{
    MYSQL_BIND bind[DB_COLS_MAX];
    unsigned long len[DB_COLS_MAX];
    my_bool null_flag[DB_COLS_MAX];
    struct db_row scratch;
    MYSQL_RES *meta = NULL;
    enum db_status st;
    MYSQL_STMT *s;
    unsigned int ncols;
    int rc;

    *nrows = 0;
    if ((st = execute(c, id, params, nparams, &s)) != DB_OK)
        return st;
    if ((meta = mysql_stmt_result_metadata(s)) == NULL)
        return fail(c, mysql_stmt_errno(s), "result_metadata", mysql_stmt_error(s));
    ncols = mysql_num_fields(meta);
    mysql_free_result(meta);
    if (ncols > DB_COLS_MAX) {
        mysql_stmt_free_result(s);
        return db_fail(c, "%.60s: %u columns, at most %d", stmt_sql[id], ncols, DB_COLS_MAX);
    }
    memset(bind, 0, sizeof(bind));
    for (unsigned int i = 0; i < ncols; i++) {
        bind[i].buffer_type = MYSQL_TYPE_STRING;
        bind[i].buffer = scratch.col[i];
        bind[i].buffer_length = DB_COL_MAX - 1;
        bind[i].length = &len[i];
        bind[i].is_null = &null_flag[i];
        if (lc != NULL && lc->col == i) {
            bind[i].buffer = lc->buf;
            bind[i].buffer_length = lc->bufsz - 1;
        }
    }
    if (mysql_stmt_bind_result(s, bind) != 0)
        return fail(c, mysql_stmt_errno(s), "bind_result", mysql_stmt_error(s));
    while ((rc = mysql_stmt_fetch(s)) == 0) {
        if (*nrows >= max_rows)
            continue;
        struct db_row *r = &rows[*nrows];
        r->ncols = ncols;
        for (unsigned int i = 0; i < ncols; i++) {
            size_t n = null_flag[i] ? 0 : len[i];

            r->is_null[i] = null_flag[i] != 0;
            if (lc != NULL && lc->col == i) {
                lc->buf[n] = '\0';
                *lc->len = n;
                n = 0;
            } else {
                memcpy(r->col[i], scratch.col[i], n);
            }
            r->col[i][n] = '\0';
        }
        (*nrows)++;
    }
    if (rc == MYSQL_DATA_TRUNCATED) {
        mysql_stmt_free_result(s);
        return db_fail(c, "%.60s: a result column is longer than %d bytes", stmt_sql[id],
                       DB_COL_MAX - 1);
    }
    if (rc != MYSQL_NO_DATA)
        return fail(c, mysql_stmt_errno(s), "fetch", mysql_stmt_error(s));
    mysql_stmt_free_result(s);
    /* A CALL ends with a status result after its rows: read it, so the
     * connection is ready for the next statement. */
    while ((rc = mysql_stmt_next_result(s)) == 0)
        mysql_stmt_free_result(s);
    if (rc > 0)
        return fail(c, mysql_stmt_errno(s), "next_result", mysql_stmt_error(s));
    return DB_OK;
}

enum db_status db_query(struct db_conn *c, enum db_stmt id, const char *const *params,
                        size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows)
{
    return query(c, id, params, nparams, rows, max_rows, nrows, NULL);
}

enum db_status db_query_one_long(struct db_conn *c, enum db_stmt id, const char *const *params,
                                 size_t nparams, struct db_row *row, unsigned int long_col,
                                 char *buf, size_t bufsz, size_t *len, bool *found)
{
    struct long_col lc = { long_col, buf, bufsz, len };
    size_t n = 0;
    enum db_status st;

    *len = 0;
    buf[0] = '\0';
    st = query(c, id, params, nparams, row, 1, &n, &lc);
    *found = st == DB_OK && n == 1;
    return st;
}

enum db_status db_query_one(struct db_conn *c, enum db_stmt id, const char *const *params,
                            size_t nparams, struct db_row *row, bool *found)
{
    size_t n = 0;
    enum db_status st = db_query(c, id, params, nparams, row, 1, &n);

    *found = st == DB_OK && n == 1;
    return st;
}

static enum db_status simple(struct db_conn *c, const char *sql)
{
    enum db_status st;

    if ((st = connect_conn(c)) != DB_OK)
        return st;
    if (mysql_real_query(c->my, sql, strlen(sql)) != 0)
        return fail(c, mysql_errno(c->my), sql, mysql_error(c->my));
    return DB_OK;
}

static void backoff(int attempt)
{
    struct timespec now, ts;
    long ms = DB_BACKOFF_BASE_MS << attempt;

    clock_gettime(CLOCK_MONOTONIC, &now); /* jitter: 0..9 ms from the clock */
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000 + now.tv_nsec % 10) * 1000000L;

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The one bounded retry loop. Each attempt runs fn, inside START
 * TRANSACTION ... COMMIT when txn, and a DB_RETRY from any step (a deadlock,
 * a lost link, a lost COMMIT whose outcome the re-run finds out through the
 * unique keys) runs it again after a backoff, on a fresh link if the old
 * one was dropped. Any other status ends the loop. */
static enum db_status run(struct db_conn *c, db_txn_fn fn, void *arg, bool txn)
{
    enum db_status st;

    for (int attempt = 0; attempt < DB_RETRY_MAX; attempt++) {
        if (attempt > 0 && db_pool_outage(c->pool))
            return DB_UNAVAILABLE; /* the shard is out: stop waiting on it */
        if (attempt > 0) {
            metrics_inc(c->pool->m, M_MYSQL_RETRIES);
            backoff(attempt - 1);
        }
        if (txn && (st = simple(c, "START TRANSACTION")) != DB_OK) {
            if (st != DB_RETRY)
                return st;
            continue; /* lost link: reconnect and retry */
        }
        st = fn(c, arg);
        if (txn && st == DB_OK) {
            if ((st = simple(c, "COMMIT")) == DB_OK)
                return DB_OK;
        } else if (txn && c->my != NULL && simple(c, "ROLLBACK") != DB_OK) {
            disconnect(c);
        }
        if (st != DB_RETRY)
            return st;
    }
    return DB_UNAVAILABLE;
}

enum db_status db_txn(struct db_conn *c, db_txn_fn fn, void *arg)
{
    return run(c, fn, arg, true);
}

enum db_status db_retry(struct db_conn *c, db_txn_fn fn, void *arg)
{
    return run(c, fn, arg, false);
}

struct query_job {
    enum db_stmt id;
    const char *const *params;
    size_t nparams;
    struct db_row *rows;
    size_t max_rows;
    size_t *nrows;
};

static enum db_status query_body(struct db_conn *c, void *arg)
{
    struct query_job *q = arg;

    return db_query(c, q->id, q->params, q->nparams, q->rows, q->max_rows, q->nrows);
}

enum db_status db_query_retry(struct db_conn *c, enum db_stmt id, const char *const *params,
                              size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows)
{
    /* cppcheck-suppress ctuuninitvar ; rows is where the rows are written, not read */
    struct query_job q = { id, params, nparams, rows, max_rows, nrows };

    *nrows = 0;
    return run(c, query_body, &q, false);
}

struct exec_job {
    enum db_stmt id;
    const char *const *params;
    size_t nparams;
    uint64_t *affected;
};

static enum db_status exec_body(struct db_conn *c, void *arg)
{
    struct exec_job *e = arg;

    *e->affected = 0;
    return db_exec(c, e->id, e->params, e->nparams, e->affected);
}

enum db_status db_exec_retry(struct db_conn *c, enum db_stmt id, const char *const *params,
                             size_t nparams, uint64_t *affected)
{
    uint64_t rows = 0;
    struct exec_job e = { id, params, nparams, affected != NULL ? affected : &rows };

    return run(c, exec_body, &e, false);
}

/* Reads the wsrep rows of ST_PING into *node. A server built with wsrep
 * but running without a provider shows wsrep_ready (OFF) and no
 * wsrep_local_state: only the latter says Galera is in use. A state that
 * does not read as a number counts as not Synced. */
static void read_node(const struct db_row *rows, size_t n, struct db_node *node)
{
    char name[32], value[32];
    int64_t state;
    int ready = 0;

    for (size_t i = 0; i < n; i++) {
        if (db_row_str(&rows[i], 0, name, sizeof(name)) != 0 ||
            db_row_str(&rows[i], 1, value, sizeof(value)) != 0)
            continue;
        if (strcmp(name, "WSREP_READY") == 0) {
            ready = strcmp(value, "ON") == 0;
        } else if (strcmp(name, "WSREP_LOCAL_STATE") == 0) {
            node->galera = 1;
            node->wsrep_local_state = db_row_int(&rows[i], 1, 0, 255, &state) == 0 ? (int)state : 0;
        }
    }
    node->wsrep_ready = node->galera && ready;
}

enum db_status db_ping(struct db_conn *c, struct db_node *node)
{
    struct db_node seen = { 0, 0, 0 };
    struct db_row rows[2];
    size_t n;
    enum db_status st = db_query_retry(c, ST_PING, NULL, 0, rows, 2, &n);

    if (st == DB_OK)
        read_node(rows, n, &seen);
    if (node != NULL)
        *node = seen;
    if (st != DB_OK)
        return DB_UNAVAILABLE;
    if (seen.galera && (!seen.wsrep_ready || seen.wsrep_local_state != DB_WSREP_SYNCED))
        return DB_UNAVAILABLE;
    return DB_OK;
}

const char *db_param_int(char buf[DB_INT_BUF], int64_t v)
{
    snprintf(buf, DB_INT_BUF, "%" PRId64, v);
    return buf;
}

bool db_row_is_null(const struct db_row *r, unsigned int col)
{
    return col >= r->ncols || col >= DB_COLS_MAX || r->is_null[col];
}

int db_row_int(const struct db_row *r, unsigned int col, int64_t min, int64_t max, int64_t *out)
{
    const char *s;
    char *end = NULL;
    long long v;

    *out = 0;
    if (db_row_is_null(r, col))
        return -1;
    s = r->col[col];
    if (s[0] == '\0' || s[0] == ' ')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int db_row_cents(const struct db_row *r, unsigned int col, int64_t *out)
{
    *out = 0;
    if (db_row_is_null(r, col))
        return -1;
    return money_parse(r->col[col], out) == MONEY_OK ? 0 : -1;
}

int db_row_str(const struct db_row *r, unsigned int col, char *out, size_t outsz)
{
    size_t len;

    if (outsz > 0)
        out[0] = '\0';
    if (db_row_is_null(r, col) || (len = strlen(r->col[col])) >= outsz)
        return -1;
    memcpy(out, r->col[col], len + 1);
    return 0;
}

/* The tables of sql/migrations/ the service reads and writes. */
static const char *const schema_tables[] = {
    "orders",          "payment_record",    "stock",
    "outbox",          "idem_token",        "audit_log",
    "idem_key",        "pay_no_registry",   "checkout_registry",
    "shard_map",       "backfill_progress", "pay_no_fence",
    "order_user_lock", "webhook_delivery",  "refund"
};
#define NSCHEMA_TABLES (ARRAY_SIZE(schema_tables))

/* Lists the names the query answers and finds the first of names[0..n)
 * it lacks. The index of that name, n when none is missing, or -1 when
 * the query fails (the reason in err). */
static long probe_missing(MYSQL *my, const char *sql, const char *what, const char *const *names,
                          size_t n, char *err, size_t errsz)
{
    bool found[16] = { false };
    MYSQL_RES *res;
    MYSQL_ROW row;

    if (mysql_real_query(my, sql, strlen(sql)) != 0 || (res = mysql_store_result(my)) == NULL) {
        snprintf(err, errsz, "cannot list %s: %s", what, mysql_error(my));
        return -1;
    }
    while ((row = mysql_fetch_row(res)) != NULL)
        for (size_t i = 0; i < n; i++)
            if (row[0] != NULL && strcmp(row[0], names[i]) == 0)
                found[i] = true;
    mysql_free_result(res);
    for (size_t i = 0; i < n; i++)
        if (!found[i])
            return (long)i;
    return (long)n;
}

/* Checks that every table of the schema, then every stored procedure of
 * the version this build calls (their names carry the version), exists in
 * the current database. DB_OK, or DB_ERROR with the first missing one (or
 * the error) in err. */
static enum db_status probe_schema(MYSQL *my, char *err, size_t errsz)
{
    _Static_assert(NSCHEMA_TABLES <= 16 && DB_PROC_COUNT <= 16, "probe_missing's found[]");
    long i;

    i = probe_missing(my,
                      "SELECT table_name FROM information_schema.tables "
                      "WHERE table_schema = DATABASE()",
                      "tables", schema_tables, NSCHEMA_TABLES, err, errsz);
    if (i < 0)
        return DB_ERROR;
    if ((size_t)i < NSCHEMA_TABLES) {
        snprintf(err, errsz, "table %s is missing: run paycallback migrate", schema_tables[i]);
        return DB_ERROR;
    }
    i = probe_missing(my,
                      "SELECT routine_name FROM information_schema.routines "
                      "WHERE routine_schema = DATABASE() AND routine_type = 'PROCEDURE'",
                      "procedures", stmt_procedures, DB_PROC_COUNT, err, errsz);
    if (i < 0)
        return DB_ERROR;
    if ((size_t)i < DB_PROC_COUNT) {
        snprintf(err, errsz,
                 "procedure %s is missing (schema too old for this build): run paycallback migrate",
                 stmt_procedures[i]);
        return DB_ERROR;
    }
    return DB_OK;
}

enum db_status db_probe(const struct config *cfg, const struct cfg_shard *at, char *err,
                        size_t errsz)
{
    MYSQL *my = mysql_init(NULL);
    enum db_status st = DB_UNAVAILABLE;

    err[0] = '\0';
    if (my == NULL) {
        snprintf(err, errsz, "out of memory");
        return DB_ERROR;
    }
    session_options(my, cfg);
    if (mysql_real_connect(my, at->host, cfg->mysql_user, cfg->mysql_password, at->database,
                           (unsigned int)at->port, NULL, 0) == NULL) {
        snprintf(err, errsz, "cannot connect: %s (errno %u)", mysql_error(my), mysql_errno(my));
        st = classify(mysql_errno(my)).st == DB_RETRY ? DB_UNAVAILABLE : DB_ERROR;
        goto out;
    }
    st = probe_schema(my, err, errsz);
out:
    mysql_close(my);
    return st;
}

void db_pool_interrupt(struct db_pool *p)
{
    char sql[48];
    MYSQL *my;

    if (p == NULL || (my = mysql_init(NULL)) == NULL)
        return;
    session_options(my, p->cfg);
    if (mysql_real_connect(my, p->at.host, p->cfg->mysql_user, p->cfg->mysql_password,
                           p->at.database, (unsigned int)p->at.port, NULL, 0) != NULL) {
        for (int i = 0; i < p->size; i++) {
            unsigned long id = atomic_load(&p->conns[i].server_id);
            if (id == 0)
                continue;
            snprintf(sql, sizeof(sql), "KILL QUERY %lu", id);
            mysql_real_query(my, sql, strlen(sql)); /* best effort: it may be done */
        }
    }
    mysql_close(my);
}

bool db_retryable(enum db_status st)
{
    return st == DB_UNAVAILABLE || st == DB_RETRY;
}

const char *db_status_str(enum db_status st)
{
    static const char *const names[] = { "OK",          "DUPLICATE", "RETRY",
                                         "UNAVAILABLE", "ERROR",     "ROLLBACK" };
    return (unsigned)st < ARRAY_SIZE(names) ? names[st] : "UNKNOWN";
}

/* The guard's lock and the condition a request at the cap waits on,
 * timed on the monotonic clock (monotime_ms). */
static void guard_init(struct db_guard *g)
{
    pthread_condattr_t a;

    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g->slot, &a);
    pthread_condattr_destroy(&a);
}

struct db_pool *db_pool_create(const struct config *cfg, const struct cfg_shard *at,
                               struct metrics *m)
{
    struct db_pool *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->cfg = cfg;
    p->at = *at;
    p->m = m;
    p->size = cfg->mysql_pool_size;
    if ((p->conns = calloc((size_t)p->size, sizeof(*p->conns))) == NULL ||
        (p->free = slots_create(p->size)) == NULL) {
        free(p->conns);
        free(p);
        return NULL;
    }
    for (int i = 0; i < p->size; i++)
        p->conns[i].pool = p;
    guard_init(&p->g);
    return p;
}

struct db_pool *db_pool_create_probe(const struct config *cfg, const struct cfg_shard *at,
                                     struct metrics *m)
{
    struct db_pool *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->cfg = cfg;
    p->at = *at;
    p->m = m;
    p->size = 1;
    if ((p->conns = calloc(1, sizeof(*p->conns))) == NULL || (p->free = slots_create(1)) == NULL) {
        free(p->conns);
        free(p);
        return NULL;
    }
    p->conns[0].pool = p;
    guard_init(&p->g);
    return p;
}

void db_pool_set_shard_index(struct db_pool *p, size_t idx)
{
    p->shard_index = idx;
}

void db_pool_destroy(struct db_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++)
        disconnect(&p->conns[i]);
    slots_destroy(p->free);
    pthread_mutex_destroy(&p->g.mu);
    pthread_cond_destroy(&p->g.slot);
    free(p->conns);
    free(p);
}

void db_pool_guard(struct db_pool *p, int breaker_failures, int breaker_open_ms, int max_inflight,
                   int stall_ms, bool trust_probe, int probe_timeout_ms)
{
    p->g.on = true;
    p->g.trust_probe = trust_probe;
    p->g.probe_timeout_ms = probe_timeout_ms;
    p->g.stall_ms = stall_ms;
    p->g.last_done_ms = monotime_ms();
    p->g.failures_max = breaker_failures > 0 ? breaker_failures : 1;
    p->g.open_ms = breaker_open_ms;
    p->g.max_inflight = max_inflight;
}

/* The health as readers see it: a probe overdue is DOWN (g->mu held). */
static enum db_health seen_health(const struct db_pool *p)
{
    if (p->g.probe_since_ms != 0 && p->g.probe_timeout_ms > 0 &&
        monotime_ms() - p->g.probe_since_ms > p->g.probe_timeout_ms)
        return DB_HEALTH_DOWN;
    return p->g.health;
}

void db_pool_probe_begin(struct db_pool *p)
{
    pthread_mutex_lock(&p->g.mu);
    p->g.probe_since_ms = monotime_ms();
    pthread_mutex_unlock(&p->g.mu);
}

/* Opens the breaker (g->mu held). */
static void breaker_open(struct db_pool *p)
{
    if (p->g.br != BR_OPEN)
        metrics_shard_inc(p->m, p->shard_index, MS_BREAKER_OPENS);
    p->g.br = BR_OPEN;
    p->g.open_until_ms = monotime_ms() + p->g.open_ms;
    p->g.trial_out = false;
}

/* A request that could not reach the database (g->mu held). */
static void breaker_failure(struct db_pool *p)
{
    p->g.failures++;
    if (p->g.br == BR_HALF_OPEN || p->g.failures >= p->g.failures_max)
        breaker_open(p);
}

static void breaker_close(struct db_pool *p)
{
    p->g.failures = 0;
    p->g.br = BR_CLOSED;
    p->g.trial_out = false;
}

/* Whether the guard lets one more request in; counts it in flight when it
 * does (g->mu held). */
static enum db_refusal guard_admit(struct db_pool *p, bool *trial)
{
    struct db_guard *g = &p->g;

    enum db_health h = seen_health(p);

    *trial = false;
    if (h == DB_HEALTH_MAP_STALE)
        return DB_REFUSED_MAP;
    if (g->trust_probe && (h == DB_HEALTH_DOWN || h == DB_HEALTH_NOT_SYNCED))
        return DB_REFUSED_OUTAGE;
    if (g->br == BR_OPEN) {
        if (monotime_ms() < g->open_until_ms)
            return DB_REFUSED_OUTAGE;
        g->br = BR_HALF_OPEN;
        g->trial_out = false;
    }
    if (g->br == BR_HALF_OPEN) {
        if (g->trial_out)
            return DB_REFUSED_OUTAGE;
        g->trial_out = *trial = true;
    }
    /* The bulkhead holds from the first request: at the cap, nothing more
     * goes in (cap_wait decides whether the caller may wait for a slot). */
    if (g->max_inflight > 0 && g->inflight >= g->max_inflight) {
        if (*trial)
            g->trial_out = *trial = false;
        return DB_REFUSED_BUSY;
    }
    if (g->inflight++ == 0)
        g->last_done_ms = monotime_ms(); /* an idle shard is not a stalled one */
    return DB_REFUSED_NONE;
}

/* A request found the cap reached (g->mu held). While the shard is making
 * progress (a request finished within stall_ms) it waits for one in flight
 * to end, until the shard would count as stalled: true when woken, to try
 * again. False once stalled: refused at once, so a shard that hangs holds
 * at most the cap from its first stuck request, and the threads kept
 * waiting are released within stall_ms of its last progress. */
static bool cap_wait(struct db_pool *p)
{
    long long until = p->g.last_done_ms + p->g.stall_ms;
    struct timespec ts;

    if (monotime_ms() >= until)
        return false;
    ts.tv_sec = (time_t)(until / 1000);
    ts.tv_nsec = (long)(until % 1000) * 1000000L;
    pthread_cond_timedwait(&p->g.slot, &p->g.mu, &ts);
    return true;
}

struct db_conn *db_acquire_why(struct db_pool *p, int wait_ms, enum db_refusal *why)
{
    enum db_refusal r;
    bool waited, trial = false;
    int i;

    if (why != NULL)
        *why = DB_REFUSED_NONE;
    if (p->g.on) {
        pthread_mutex_lock(&p->g.mu);
        while ((r = guard_admit(p, &trial)) == DB_REFUSED_BUSY && cap_wait(p))
            ;
        pthread_mutex_unlock(&p->g.mu);
        if (r != DB_REFUSED_NONE) {
            metrics_shard_inc(p->m, p->shard_index,
                              r == DB_REFUSED_BUSY ? MS_INFLIGHT_REFUSED : MS_FAST_FAILS);
            if (why != NULL)
                *why = r;
            return NULL;
        }
    }
    i = slots_take(p->free, wait_ms, &waited);
    if (waited)
        metrics_inc(p->m, i >= 0 ? M_MYSQL_POOL_WAITS : M_MYSQL_POOL_TIMEOUTS);
    if (i < 0) {
        metrics_shard_inc(p->m, p->shard_index, MS_POOL_TIMEOUTS);
        if (p->g.on) { /* every connection held that long: a failure */
            pthread_mutex_lock(&p->g.mu);
            p->g.inflight--;
            pthread_cond_signal(&p->g.slot); /* one may go in: cap_wait */
            if (trial)
                p->g.trial_out = false;
            breaker_failure(p);
            pthread_mutex_unlock(&p->g.mu);
        }
        if (why != NULL)
            *why = DB_REFUSED_WAIT;
        return NULL;
    }
    p->conns[i].err = 0;
    p->conns[i].errstr[0] = '\0';
    p->conns[i].guarded = p->g.on;
    p->conns[i].trial = trial;
    p->conns[i].reached = false;
    p->conns[i].unreachable = false;
    return &p->conns[i];
}

struct db_conn *db_acquire(struct db_pool *p, int wait_ms)
{
    return db_acquire_why(p, wait_ms, NULL);
}

void db_release(struct db_pool *p, struct db_conn *c)
{
    if (c == NULL)
        return;
    if (c->guarded) {
        pthread_mutex_lock(&p->g.mu);
        p->g.inflight--;
        pthread_cond_signal(&p->g.slot); /* one may go in: cap_wait */
        if (!c->unreachable)
            p->g.last_done_ms = monotime_ms(); /* progress: the shard is not stalled */
        if (c->unreachable)
            breaker_failure(p);
        else if (c->reached)
            breaker_close(p);
        else if (c->trial)
            p->g.trial_out = false; /* the trial ran nothing: another may try */
        pthread_mutex_unlock(&p->g.mu);
        c->guarded = false;
    }
    slots_put(p->free, (int)(c - p->conns));
    if (atomic_load(&p->has_on_release)) { /* under the mutex: never after it is unset */
        pthread_mutex_lock(&p->g.mu);
        if (p->on_release != NULL)
            p->on_release(p->on_release_arg);
        pthread_mutex_unlock(&p->g.mu);
    }
}

void db_pool_on_release(struct db_pool *p, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&p->g.mu);
    p->on_release = fn;
    p->on_release_arg = arg;
    atomic_store(&p->has_on_release, fn != NULL);
    pthread_mutex_unlock(&p->g.mu);
}

void db_pool_set_health(struct db_pool *p, enum db_health h, const struct db_node *node)
{
    pthread_mutex_lock(&p->g.mu);
    p->g.health = h;
    p->g.probe_since_ms = 0;
    if (node != NULL)
        p->g.node = *node;
    if (h == DB_HEALTH_UP && p->g.br != BR_CLOSED)
        breaker_close(p);
    else if ((h == DB_HEALTH_DOWN || h == DB_HEALTH_NOT_SYNCED) && p->g.on && p->g.trust_probe)
        breaker_open(p);
    pthread_mutex_unlock(&p->g.mu);
}

enum db_health db_pool_health(struct db_pool *p, struct db_node *node)
{
    enum db_health h;

    pthread_mutex_lock(&p->g.mu);
    h = seen_health(p);
    if (node != NULL)
        *node = p->g.node;
    pthread_mutex_unlock(&p->g.mu);
    return h;
}

bool db_pool_outage(struct db_pool *p)
{
    bool out;

    if (!p->g.on)
        return false;
    pthread_mutex_lock(&p->g.mu);
    enum db_health h = seen_health(p);
    out = (p->g.trust_probe && (h == DB_HEALTH_DOWN || h == DB_HEALTH_NOT_SYNCED)) ||
          h == DB_HEALTH_MAP_STALE || (p->g.br == BR_OPEN && monotime_ms() < p->g.open_until_ms);
    pthread_mutex_unlock(&p->g.mu);
    return out;
}

int db_pool_retry_after_s(struct db_pool *p)
{
    long long left;

    pthread_mutex_lock(&p->g.mu);
    left = p->g.br == BR_OPEN ? p->g.open_until_ms - monotime_ms() : 0;
    pthread_mutex_unlock(&p->g.mu);
    return left > 1000 ? (int)((left + 999) / 1000) : 1;
}

int db_pool_inflight(struct db_pool *p)
{
    int n;

    pthread_mutex_lock(&p->g.mu);
    n = p->g.inflight;
    pthread_mutex_unlock(&p->g.mu);
    return n;
}

const char *db_refusal_str(enum db_refusal why)
{
    static const char *const names[] = { "none", "wait", "outage", "busy", "map" };

    return (unsigned)why < ARRAY_SIZE(names) ? names[why] : "unknown";
}

/* ---- non-blocking -------------------------------------------------------- */

struct db_conn *db_try_acquire(struct db_pool *p, enum db_refusal *why)
{
    enum db_refusal r;
    bool trial = false;
    int i;

    *why = DB_REFUSED_NONE;
    if (p->g.on) {
        pthread_mutex_lock(&p->g.mu);
        r = guard_admit(p, &trial);
        pthread_mutex_unlock(&p->g.mu);
        if (r != DB_REFUSED_NONE) {
            *why = r;
            return NULL;
        }
    }
    if ((i = slots_take(p->free, 0, NULL)) < 0) {
        if (p->g.on) { /* not a failure: the caller waits its turn */
            pthread_mutex_lock(&p->g.mu);
            p->g.inflight--;
            pthread_cond_signal(&p->g.slot); /* one may go in: cap_wait */
            if (trial)
                p->g.trial_out = false;
            pthread_mutex_unlock(&p->g.mu);
        }
        *why = DB_REFUSED_WAIT;
        return NULL;
    }
    p->conns[i].err = 0;
    p->conns[i].errstr[0] = '\0';
    p->conns[i].guarded = p->g.on;
    p->conns[i].trial = trial;
    p->conns[i].reached = false;
    p->conns[i].unreachable = false;
    return &p->conns[i];
}

bool db_call_ready(const struct db_conn *c, enum db_stmt id)
{
    return c->my != NULL && c->st[id] != NULL && c->pool->cfg->http_event_loop;
}

void db_leave_to_retry(struct db_conn *c)
{
    c->unreachable = false;
}

bool db_unreachable(const struct db_conn *c)
{
    return c->unreachable;
}

enum db_call_step {
    DC_EXEC,
    DC_FETCH,
    DC_FREE,
    DC_NEXT,
    DC_DONE
};

static int to_io(int w)
{
    return ((w & MYSQL_WAIT_READ) ? DB_IO_READ : 0) | ((w & MYSQL_WAIT_WRITE) ? DB_IO_WRITE : 0) |
           ((w & MYSQL_WAIT_EXCEPT) ? DB_IO_EXCEPT : 0) |
           ((w & MYSQL_WAIT_TIMEOUT) ? DB_IO_TIMEOUT : 0);
}

static int from_io(int e)
{
    return ((e & DB_IO_READ) ? MYSQL_WAIT_READ : 0) | ((e & DB_IO_WRITE) ? MYSQL_WAIT_WRITE : 0) |
           ((e & DB_IO_EXCEPT) ? MYSQL_WAIT_EXCEPT : 0) |
           ((e & DB_IO_TIMEOUT) ? MYSQL_WAIT_TIMEOUT : 0);
}

static int call_done(struct db_call *q, enum db_status st)
{
    q->st = st;
    q->step = DC_DONE;
    return 0;
}

/* Binds the result columns as strings into q->scratch (db_query's way). */
static int bind_results(struct db_call *q, MYSQL_STMT *s)
{
    MYSQL_BIND bind[DB_COLS_MAX];
    MYSQL_RES *meta = mysql_stmt_result_metadata(s);

    if (meta == NULL)
        return call_done(q,
                         fail(q->c, mysql_stmt_errno(s), "result_metadata", mysql_stmt_error(s))) -
               1;
    q->ncols = mysql_num_fields(meta);
    mysql_free_result(meta);
    if (q->ncols > DB_COLS_MAX)
        return call_done(q, db_fail(q->c, "%.60s: %u columns, at most %d", stmt_sql[q->id],
                                    q->ncols, DB_COLS_MAX)) -
               1;
    memset(bind, 0, sizeof(bind));
    for (unsigned int i = 0; i < q->ncols; i++) {
        bind[i].buffer_type = MYSQL_TYPE_STRING;
        bind[i].buffer = q->scratch.col[i];
        bind[i].buffer_length = DB_COL_MAX - 1;
        bind[i].length = &q->rlen[i];
        bind[i].is_null = (my_bool *)&q->rnull[i];
        bind[i].error = (my_bool *)&q->rerr[i];
    }
    if (mysql_stmt_bind_result(s, bind) != 0)
        return call_done(q, fail(q->c, mysql_stmt_errno(s), "bind_result", mysql_stmt_error(s))) -
               1;
    return 0;
}

/* The copy db_query makes of a fetched row. */
static void keep_row(struct db_call *q)
{
    struct db_row *r = q->row;

    r->ncols = q->ncols;
    for (unsigned int i = 0; i < q->ncols; i++) {
        size_t n = q->rnull[i] ? 0 : q->rlen[i];

        r->is_null[i] = q->rnull[i] != 0;
        memcpy(r->col[i], q->scratch.col[i], n);
        r->col[i][n] = '\0';
    }
}

/* Runs the steps of q until one must wait (its MYSQL_WAIT_* events) or
 * the statement is done (0). wait: the events that happened, 0 to start
 * the current step. */
static int call_run(struct db_call *q, int wait)
{
    MYSQL_STMT *s = q->stmt;
    int w, ret = 0;
    my_bool bret = 0;

    for (;;) {
        switch (q->step) {
        case DC_EXEC:
            w = wait ? mysql_stmt_execute_cont(&ret, s, wait) : mysql_stmt_execute_start(&ret, s);
            if (w != 0)
                return w;
            if (ret != 0)
                return call_done(
                    q, fail(q->c, mysql_stmt_errno(s), stmt_sql[q->id], mysql_stmt_error(s)));
            q->c->reached = true;
            q->c->unreachable = false;
            if (bind_results(q, s) != 0)
                return 0;
            q->step = DC_FETCH;
            break;
        case DC_FETCH:
            w = wait ? mysql_stmt_fetch_cont(&ret, s, wait) : mysql_stmt_fetch_start(&ret, s);
            if (w != 0)
                return w;
            if (ret == 0) {
                if (q->nrows++ == 0)
                    keep_row(q);
                break;
            }
            if (ret == MYSQL_DATA_TRUNCATED) { /* the rest of the result is unread */
                disconnect(q->c);
                return call_done(q, db_fail(q->c, "%.60s: a result column is longer than %d bytes",
                                            stmt_sql[q->id], DB_COL_MAX - 1));
            }
            if (ret != MYSQL_NO_DATA)
                return call_done(q, fail(q->c, mysql_stmt_errno(s), "fetch", mysql_stmt_error(s)));
            q->step = DC_FREE;
            break;
        case DC_FREE:
            w = wait ? mysql_stmt_free_result_cont(&bret, s, wait)
                     : mysql_stmt_free_result_start(&bret, s);
            if (w != 0)
                return w;
            q->step = DC_NEXT;
            break;
        case DC_NEXT:
            /* A CALL ends with a status result after its rows. */
            w = wait ? mysql_stmt_next_result_cont(&ret, s, wait)
                     : mysql_stmt_next_result_start(&ret, s);
            if (w != 0)
                return w;
            if (ret > 0)
                return call_done(
                    q, fail(q->c, mysql_stmt_errno(s), "next_result", mysql_stmt_error(s)));
            if (ret < 0)
                return call_done(q, DB_OK);
            q->step = DC_FREE;
            break;
        default: return 0;
        }
        wait = 0;
    }
}

int db_call_start(struct db_call *q, struct db_conn *c, enum db_stmt id, const char *const *params,
                  size_t nparams, struct db_row *row)
{
    MYSQL_BIND bind[DB_PARAMS_MAX];
    MYSQL_STMT *s = c->st[id];

    q->c = c;
    q->id = id;
    q->step = DC_EXEC;
    q->stmt = s;
    q->row = row;
    q->nrows = 0;
    q->ncols = 0;
    q->st = DB_ERROR;
    q->timed_out = false;
    if (nparams > DB_PARAMS_MAX || mysql_stmt_param_count(s) != nparams)
        return call_done(q, db_fail(c, "%.60s: wants %lu parameters, got %zu", stmt_sql[id],
                                    mysql_stmt_param_count(s), nparams));
    memset(bind, 0, sizeof(bind));
    for (size_t i = 0; i < nparams; i++) {
        q->pnull[i] = params[i] == NULL;
        q->plen[i] = params[i] ? strlen(params[i]) : 0;
        bind[i].buffer_type = MYSQL_TYPE_STRING;
        bind[i].buffer = (void *)(params[i] ? params[i] : "");
        bind[i].buffer_length = q->plen[i];
        bind[i].length = &q->plen[i];
        bind[i].is_null = (my_bool *)&q->pnull[i];
    }
    if (nparams > 0 && mysql_stmt_bind_param(s, bind) != 0)
        return call_done(q, fail(c, mysql_stmt_errno(s), stmt_sql[id], mysql_stmt_error(s)));
    return to_io(call_run(q, 0));
}

int db_call_cont(struct db_call *q, int events)
{
    if (q->step == DC_DONE)
        return 0;
    if (events & DB_IO_TIMEOUT)
        q->timed_out = true;
    return to_io(call_run(q, from_io(events)));
}

bool db_call_timed_out(const struct db_call *q)
{
    return q->timed_out;
}

int db_call_fd(const struct db_call *q)
{
    return q->c->my != NULL ? (int)mysql_get_socket(q->c->my) : -1;
}

int db_call_timeout_ms(const struct db_call *q)
{
    return q->c->my != NULL ? (int)mysql_get_timeout_value_ms(q->c->my) : 0;
}
