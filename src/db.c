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
#include <mysql.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "slots.h"

#define DB_PARAMS_MAX        12
#define DB_BACKOFF_BASE_MS   20   /* 20, 40, 80 ms between attempts */
#define DB_IO_TIMEOUT_S      30   /* read/write timeout on a socket */
#define DB_LOCK_WAIT_S       3    /* innodb_lock_wait_timeout per session */

struct db_conn {
    MYSQL *my;                    /* NULL while disconnected */
    MYSQL_STMT *st[ST_COUNT];
    struct db_pool *pool;
    bool was_connected;           /* a connect now is a reconnect */
};

struct db_pool {
    const struct config *cfg;
    struct metrics *m;
    struct slots *free;           /* which of conns are lent out */
    struct db_conn *conns;
    int size;
};

/* Maps a MySQL error number to our status. Lost and refused connections,
 * deadlocks and lock waits are worth another attempt; 1062 is a duplicate
 * and nothing else is. */
static enum db_status classify(unsigned int err)
{
    switch (err) {
    case 0:
        return DB_OK;
    case ER_DUP_ENTRY:                          /* 1062 */
        return DB_DUPLICATE;
    case ER_LOCK_DEADLOCK:                      /* 1213 */
    case ER_LOCK_WAIT_TIMEOUT:                  /* 1205 */
    case CR_SERVER_GONE_ERROR:                  /* 2006 */
    case CR_SERVER_LOST:                        /* 2013 */
    case CR_SERVER_LOST_EXTENDED:               /* 2055 */
    case CR_CONNECTION_ERROR:                   /* 2002 */
    case CR_CONN_HOST_ERROR:                    /* 2003 */
    case ER_SERVER_SHUTDOWN:                    /* 1053 */
    case ER_CON_COUNT_ERROR:                    /* 1040 */
    case 1927:                                  /* MariaDB: connection killed */
    case 4031:                                  /* MySQL 8: idle client disconnected */
        return DB_RETRY;
    default:
        return DB_ERROR;
    }
}

/* True when err means the connection itself is gone and must be remade. */
static bool is_link_error(unsigned int err)
{
    return err == CR_SERVER_GONE_ERROR || err == CR_SERVER_LOST ||
           err == CR_SERVER_LOST_EXTENDED || err == CR_CONNECTION_ERROR ||
           err == CR_CONN_HOST_ERROR || err == ER_SERVER_SHUTDOWN || err == 1927 ||
           err == 4031 || err == CR_COMMANDS_OUT_OF_SYNC;
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
    if (c->my != NULL)
        mysql_close(c->my);
    c->my = NULL;
}

/* Records err against the connection: logs it, drops the link when it is
 * gone, and returns the classified status. */
static enum db_status fail(struct db_conn *c, unsigned int err, const char *what, const char *msg)
{
    enum db_status st = classify(err);

    if (st != DB_DUPLICATE)
        log_write(st == DB_ERROR ? LOG_ERROR : LOG_WARN, "mysql error",
                  "op=%s errno=%u error=\"%s\"", what, err, msg);
    if (is_link_error(err) || st == DB_ERROR)
        disconnect(c);                          /* unknown state: start clean */
    return st;
}

/* Sets the options every session of ours uses on a fresh handle. */
static void session_options(MYSQL *my, const struct config *cfg)
{
    unsigned int connect_s = (unsigned int)(cfg->mysql_connect_timeout_ms + 999) / 1000;
    unsigned int io_s = DB_IO_TIMEOUT_S;
    char init[128];

    snprintf(init, sizeof(init), "SET time_zone = '+00:00', innodb_lock_wait_timeout = %d",
             DB_LOCK_WAIT_S);
    /* mysql_options copies string values, so init may live on the stack. */
    mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_options(my, MYSQL_INIT_COMMAND, init);
}

static enum db_status connect_conn(struct db_conn *c)
{
    const struct config *cfg = c->pool->cfg;
    unsigned int err;

    if (c->my != NULL)
        return DB_OK;
    if ((c->my = mysql_init(NULL)) == NULL)
        return DB_ERROR;
    session_options(c->my, cfg);
    if (mysql_real_connect(c->my, cfg->mysql_host, cfg->mysql_user, cfg->mysql_password,
                           cfg->mysql_database, (unsigned int)cfg->mysql_port, NULL, 0) == NULL) {
        err = mysql_errno(c->my);
        log_warn("cannot connect to mysql", "host=%s port=%d errno=%u error=\"%s\"",
                 cfg->mysql_host, cfg->mysql_port, err, mysql_error(c->my));
        disconnect(c);
        return DB_UNAVAILABLE;
    }
    metrics_inc(c->pool->m, M_MYSQL_CONNECTS);
    if (c->was_connected)
        metrics_inc(c->pool->m, M_MYSQL_RECONNECTS);
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
        return DB_ERROR;
    if ((st = prepared(c, id, &s)) != DB_OK)
        return st;
    if (mysql_stmt_param_count(s) != nparams) {
        log_error("statement parameter count mismatch", "stmt=%d want=%lu got=%zu", (int)id,
                  mysql_stmt_param_count(s), nparams);
        return DB_ERROR;
    }
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

enum db_status db_query(struct db_conn *c, enum db_stmt id, const char *const *params,
                        size_t nparams, struct db_row *rows, size_t max_rows, size_t *nrows)
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
        return DB_ERROR;
    }
    memset(bind, 0, sizeof(bind));
    for (unsigned int i = 0; i < ncols; i++) {
        bind[i].buffer_type = MYSQL_TYPE_STRING;
        bind[i].buffer = scratch.col[i];
        bind[i].buffer_length = DB_COL_MAX - 1;
        bind[i].length = &len[i];
        bind[i].is_null = &null_flag[i];
    }
    if (mysql_stmt_bind_result(s, bind) != 0)
        return fail(c, mysql_stmt_errno(s), "bind_result", mysql_stmt_error(s));
    while ((rc = mysql_stmt_fetch(s)) == 0) {
        if (*nrows >= max_rows)
            continue;
        struct db_row *r = &rows[*nrows];
        for (unsigned int i = 0; i < ncols; i++) {
            r->is_null[i] = null_flag[i] != 0;
            memcpy(r->col[i], scratch.col[i], null_flag[i] ? 0 : len[i]);
            r->col[i][null_flag[i] ? 0 : len[i]] = '\0';
        }
        (*nrows)++;
    }
    if (rc == MYSQL_DATA_TRUNCATED) {
        mysql_stmt_free_result(s);
        log_error("result column too long", "stmt=%d", (int)id);
        return DB_ERROR;
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

    clock_gettime(CLOCK_MONOTONIC, &now);       /* jitter: 0..9 ms from the clock */
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000 + now.tv_nsec % 10) * 1000000L;

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

enum db_status db_txn(struct db_conn *c, db_txn_fn fn, void *arg)
{
    enum db_status st = DB_UNAVAILABLE;

    for (int attempt = 0; attempt < DB_RETRY_MAX; attempt++) {
        if (attempt > 0) {
            metrics_inc(c->pool->m, M_MYSQL_RETRIES);
            backoff(attempt - 1);
        }
        if ((st = simple(c, "START TRANSACTION")) != DB_OK) {
            if (st == DB_UNAVAILABLE || st == DB_ERROR)
                return st;
            continue;                           /* lost link: reconnect and retry */
        }
        st = fn(c, arg);
        if (st == DB_OK) {
            if ((st = simple(c, "COMMIT")) == DB_OK)
                return DB_OK;
            /* A lost COMMIT has an unknown outcome: the retry finds out
             * through the unique keys. */
        } else if (c->my != NULL) {
            enum db_status rb = simple(c, "ROLLBACK");
            if (rb != DB_OK)
                disconnect(c);
        }
        if (st != DB_RETRY)
            return st;
    }
    return DB_UNAVAILABLE;
}

enum db_status db_query_retry(struct db_conn *c, enum db_stmt id, const char *const *params,
                              size_t nparams, struct db_row *rows, size_t max_rows,
                              size_t *nrows)
{
    enum db_status st = DB_UNAVAILABLE;

    for (int attempt = 0; attempt < DB_RETRY_MAX; attempt++) {
        if (attempt > 0) {
            metrics_inc(c->pool->m, M_MYSQL_RETRIES);
            backoff(attempt - 1);
        }
        st = db_query(c, id, params, nparams, rows, max_rows, nrows);
        if (st != DB_RETRY)
            return st;
    }
    return DB_UNAVAILABLE;
}

enum db_status db_ping(struct db_conn *c)
{
    struct db_row row;
    size_t n;
    enum db_status st = db_query_retry(c, ST_PING, NULL, 0, &row, 1, &n);

    return st == DB_OK && n == 1 ? DB_OK : DB_UNAVAILABLE;
}

/* The tables of sql/schema.sql the service reads and writes. */
static const char *const schema_tables[] = { "orders", "payment_record", "stock", "outbox",
                                             "idem_token" };
#define NSCHEMA_TABLES (sizeof(schema_tables) / sizeof(schema_tables[0]))

/* Checks that the stored procedures of the version this build calls
 * exist in the current database (their names carry the version).
 * DB_OK, or DB_ERROR with the first missing one in err. */
static enum db_status probe_procedures(MYSQL *my, char *err, size_t errsz)
{
    static const char sql[] = "SELECT routine_name FROM information_schema.routines "
                              "WHERE routine_schema = DATABASE() AND routine_type = 'PROCEDURE'";
    bool found[DB_PROC_COUNT] = { false };
    MYSQL_RES *res;
    MYSQL_ROW row;

    if (mysql_real_query(my, sql, sizeof(sql) - 1) != 0 || (res = mysql_store_result(my)) == NULL) {
        snprintf(err, errsz, "cannot list procedures: %s", mysql_error(my));
        return DB_ERROR;
    }
    while ((row = mysql_fetch_row(res)) != NULL)
        for (size_t i = 0; i < DB_PROC_COUNT; i++)
            if (row[0] != NULL && strcmp(row[0], stmt_procedures[i]) == 0)
                found[i] = true;
    mysql_free_result(res);
    for (size_t i = 0; i < DB_PROC_COUNT; i++) {
        if (!found[i]) {
            snprintf(err, errsz, "procedure %s is missing (schema too old for this build): "
                     "apply sql/schema.sql", stmt_procedures[i]);
            return DB_ERROR;
        }
    }
    return DB_OK;
}

/* Checks that every table of the schema exists in the current database.
 * DB_OK, or DB_ERROR with the first missing table (or the error) in err. */
static enum db_status probe_schema(MYSQL *my, char *err, size_t errsz)
{
    static const char sql[] = "SELECT table_name FROM information_schema.tables "
                              "WHERE table_schema = DATABASE()";
    bool found[NSCHEMA_TABLES] = { false };
    MYSQL_RES *res;
    MYSQL_ROW row;

    if (mysql_real_query(my, sql, sizeof(sql) - 1) != 0 || (res = mysql_store_result(my)) == NULL) {
        snprintf(err, errsz, "cannot list tables: %s", mysql_error(my));
        return DB_ERROR;
    }
    while ((row = mysql_fetch_row(res)) != NULL)
        for (size_t i = 0; i < NSCHEMA_TABLES; i++)
            if (row[0] != NULL && strcmp(row[0], schema_tables[i]) == 0)
                found[i] = true;
    mysql_free_result(res);
    for (size_t i = 0; i < NSCHEMA_TABLES; i++) {
        if (!found[i]) {
            snprintf(err, errsz, "table %s is missing: apply sql/schema.sql", schema_tables[i]);
            return DB_ERROR;
        }
    }
    return probe_procedures(my, err, errsz);
}

enum db_status db_probe(const struct config *cfg, char *err, size_t errsz)
{
    MYSQL *my = mysql_init(NULL);
    enum db_status st = DB_UNAVAILABLE;

    err[0] = '\0';
    if (my == NULL) {
        snprintf(err, errsz, "out of memory");
        return DB_ERROR;
    }
    session_options(my, cfg);
    if (mysql_real_connect(my, cfg->mysql_host, cfg->mysql_user, cfg->mysql_password,
                           cfg->mysql_database, (unsigned int)cfg->mysql_port, NULL, 0) == NULL) {
        snprintf(err, errsz, "cannot connect: %s (errno %u)", mysql_error(my), mysql_errno(my));
        st = classify(mysql_errno(my)) == DB_RETRY ? DB_UNAVAILABLE : DB_ERROR;
        goto out;
    }
    st = probe_schema(my, err, errsz);
out:
    mysql_close(my);
    return st;
}

const char *db_status_str(enum db_status st)
{
    static const char *const names[] = { "OK", "DUPLICATE", "RETRY", "UNAVAILABLE",
                                         "ERROR", "ROLLBACK" };
    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "UNKNOWN";
}

struct db_pool *db_pool_create(const struct config *cfg, struct metrics *m)
{
    struct db_pool *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->cfg = cfg;
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
    return p;
}

void db_pool_destroy(struct db_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++)
        disconnect(&p->conns[i]);
    slots_destroy(p->free);
    free(p->conns);
    free(p);
}

struct db_conn *db_acquire(struct db_pool *p, int wait_ms)
{
    bool waited;
    int i = slots_take(p->free, wait_ms, &waited);

    if (waited)
        metrics_inc(p->m, i >= 0 ? M_MYSQL_POOL_WAITS : M_MYSQL_POOL_TIMEOUTS);
    return i >= 0 ? &p->conns[i] : NULL;
}

void db_release(struct db_pool *p, struct db_conn *c)
{
    if (c != NULL)
        slots_put(p->free, (int)(c - p->conns));
}
