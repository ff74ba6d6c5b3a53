/* token_store.c - the two token stores and the policy between them.
 *
 * Redis: idem:token:<token> with a TTL; consume is a Lua compare-and-
 * delete (rds_token_consume). MySQL: a row of idem_token with expires_at;
 * consume is one DELETE ... WHERE token = ? AND expires_at > NOW(3) whose
 * affected-row count (1 or 0) says "first use" or not. Expired rows are
 * purged now and then on issue, so no sweeper thread is needed. */
#include "token_store.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "db.h"
#include "log.h"
#include "redis.h"
#include "route.h"
#include "server.h"
#include "shard.h"

/* About one MySQL issue in TOKEN_PURGE_EVERY also purges expired rows. The
 * choice comes from the new token's own random bits: no shared counter. */
#define TOKEN_PURGE_EVERY 64

/* Gives ctx's connection back to its shard. NULL-safe in ctx->conn. */
static void token_ctx_release(struct token_ctx *ctx)
{
    if (ctx->conn != NULL)
        shard_release(ctx->shard, ctx->conn);
    ctx->conn = NULL;
    ctx->shard = NULL;
}

/* A connection of sh for ctx. One connection at a time: a thread that
 * waited for one pool while holding another could deadlock with one doing
 * the reverse. */
static struct db_conn *conn_of(struct token_ctx *ctx, const struct shard *sh)
{
    if (ctx->conn != NULL && ctx->shard != sh)
        token_ctx_release(ctx);
    if (ctx->conn == NULL) {
        ctx->conn = shard_acquire(sh, ctx->srv->cfg->mysql_wait_ms);
        ctx->shard = ctx->conn != NULL ? sh : NULL;
    }
    return ctx->conn;
}

/* A request the token's shard could not serve: counted where every such
 * count is (route.c). */
static void count_unavailable(const struct token_ctx *ctx, const struct shard *sh)
{
    const struct route rt = route_of(ctx->srv, NULL);

    route_count_unavailable(&rt, sh);
}

/* Where a token's MySQL row lives: placed by the token itself, so issue,
 * consume and restore all find it on one shard. */
static const struct shard *token_shard(const struct token_ctx *ctx, const char *token)
{
    return shard_place(&ctx->srv->shards, token);
}

static int64_t ttl_ms_of(const struct server *srv)
{
    return (int64_t)srv->cfg->token_ttl_s * 1000;
}

/* ---- Redis --------------------------------------------------------------- */

static enum token_status from_rds(enum rds_status st)
{
    switch (st) {
    case RDS_OK: return TOKEN_OK;
    case RDS_NOT_FOUND: return TOKEN_USED;
    case RDS_DOWN: return TOKEN_DOWN;
    default: return TOKEN_ERROR;
    }
}

static enum token_status redis_issue(void *self, const char *token, int64_t ttl_ms)
{
    struct token_ctx *ctx = self;

    return from_rds(rds_token_put(ctx->srv->rds, token, ttl_ms));
}

static enum token_status redis_consume(void *self, const char *token, int64_t *remaining_ms)
{
    struct token_ctx *ctx = self;

    return from_rds(rds_token_consume(ctx->srv->rds, token, remaining_ms));
}

static enum token_status redis_restore(void *self, const char *token, int64_t remaining_ms)
{
    struct token_ctx *ctx = self;
    enum rds_status st = rds_token_put(ctx->srv->rds, token, remaining_ms);

    return st == RDS_BUSY ? TOKEN_OK : from_rds(st); /* BUSY: it is there already */
}

const struct token_store token_store_redis = {
    .name = "redis",
    .issue = redis_issue,
    .consume = redis_consume,
    .restore = redis_restore,
};

/* ---- MySQL --------------------------------------------------------------- */

struct token_job {
    const char *token; /* places the row */
    enum db_stmt stmt;
    const char *params[2];
    size_t nparams;
    uint64_t rows;
};

/* One statement as its own transaction, for db_txn's bounded retry. */
static enum db_status token_txn(struct db_conn *c, void *arg)
{
    struct token_job *j = arg;

    j->rows = 0;
    return db_exec(c, j->stmt, j->params, j->nparams, &j->rows);
}

/* Runs one token statement. TOKEN_OK with the affected rows in *rows,
 * TOKEN_USED for a duplicate key, or TOKEN_ERROR. */
static enum token_status mysql_run(struct token_ctx *ctx, struct token_job *j, uint64_t *rows)
{
    struct db_conn *c = conn_of(ctx, token_shard(ctx, j->token));
    enum db_status st;

    *rows = 0;
    if (c == NULL) {
        log_warn("no free mysql connection for the token store", "wait_ms=%d",
                 ctx->srv->cfg->mysql_wait_ms);
        return TOKEN_ERROR;
    }
    st = db_txn(c, token_txn, j);
    if (st == DB_DUPLICATE)
        return TOKEN_USED;
    if (st != DB_OK) {
        log_warn("mysql token store failed", "status=%s errno=%u error=\"%s\"", db_status_str(st),
                 db_errno(c), db_errstr(c));
        return TOKEN_ERROR;
    }
    *rows = j->rows;
    return TOKEN_OK;
}

/* Inserts token with ttl_ms, rounded up to whole seconds. */
static enum token_status mysql_insert(struct token_ctx *ctx, const char *token, int64_t ttl_ms)
{
    char ttl_s[24];
    struct token_job j = {
        .token = token, .stmt = ST_TOKEN_INSERT, .params = { token, ttl_s }, .nparams = 2
    };
    uint64_t rows;

    snprintf(ttl_s, sizeof(ttl_s), "%lld", (long long)((ttl_ms + 999) / 1000));
    return mysql_run(ctx, &j, &rows);
}

/* Deletes expired rows (at most the statement's LIMIT) when the token's
 * first byte says so. Failures only cost a log line. */
static void maybe_purge(struct token_ctx *ctx, const char *token)
{
    unsigned int first = 0;
    uint64_t rows = 0;

    if (sscanf(token, "%2x", &first) != 1 || first % TOKEN_PURGE_EVERY != 0)
        return;
    if (ctx->conn == NULL || db_exec(ctx->conn, ST_TOKEN_PURGE, NULL, 0, &rows) != DB_OK)
        return;
    if (rows > 0)
        log_info("expired mysql tokens purged", "rows=%llu", (unsigned long long)rows);
}

static enum token_status mysql_issue(void *self, const char *token, int64_t ttl_ms)
{
    struct token_ctx *ctx = self;
    enum token_status st = mysql_insert(ctx, token, ttl_ms);

    if (st == TOKEN_USED)
        st = TOKEN_ERROR; /* 128 random bits collided: do not hand it out */
    if (st == TOKEN_OK)
        maybe_purge(ctx, token);
    return st;
}

static enum token_status mysql_consume(void *self, const char *token, int64_t *remaining_ms)
{
    struct token_ctx *ctx = self;
    struct token_job j = {
        .token = token, .stmt = ST_TOKEN_CONSUME, .params = { token }, .nparams = 1
    };
    uint64_t rows;
    enum token_status st = mysql_run(ctx, &j, &rows);

    *remaining_ms = 0;
    if (st != TOKEN_OK)
        return st == TOKEN_USED ? TOKEN_ERROR : st; /* a DELETE has no duplicate key */
    if (rows != 1)
        return TOKEN_USED;
    *remaining_ms = ttl_ms_of(ctx->srv); /* unknown: assume a full TTL */
    return TOKEN_OK;
}

static enum token_status mysql_restore(void *self, const char *token, int64_t remaining_ms)
{
    enum token_status st = mysql_insert(self, token, remaining_ms);

    return st == TOKEN_USED ? TOKEN_OK : st; /* already back */
}

const struct token_store token_store_mysql = {
    .name = "mysql",
    .issue = mysql_issue,
    .consume = mysql_consume,
    .restore = mysql_restore,
};

/* ---- policy -------------------------------------------------------------- */

static enum token_status issue(struct token_ctx *ctx, char token[IDS_TOKEN_BUF],
                               const struct token_store **where)
{
    const struct token_store *store = &token_store_redis;
    int64_t ttl_ms = ttl_ms_of(ctx->srv);
    enum token_status st;

    if (where != NULL)
        *where = NULL;
    if (ids_token(token) != 0) {
        log_error("cannot draw random bytes for a token", "%s", "");
        return TOKEN_ERROR;
    }
    /* Whatever kept Redis from taking it, MySQL can: consume looks there
     * whenever Redis does not know a token. */
    if ((st = store->issue(ctx, token, ttl_ms)) != TOKEN_OK) {
        store = &token_store_mysql;
        st = store->issue(ctx, token, ttl_ms);
    }
    if (st != TOKEN_OK) {
        count_unavailable(ctx, token_shard(ctx, token));
        token[0] = '\0';
        return TOKEN_ERROR;
    }
    if (where != NULL)
        *where = store;
    return TOKEN_OK;
}

static enum token_status consume(struct token_ctx *ctx, const char *token,
                                 struct token_receipt *rcpt)
{
    const struct token_store *store = &token_store_redis;
    int64_t remaining_ms = 0;
    enum token_status st;

    memset(rcpt, 0, sizeof(*rcpt));
    st = store->consume(ctx, token, &remaining_ms);
    if (st == TOKEN_USED || st == TOKEN_DOWN) {
        store = &token_store_mysql;
        st = store->consume(ctx, token, &remaining_ms);
    }
    if (st == TOKEN_DOWN || st == TOKEN_ERROR) {
        if (store == &token_store_mysql)
            count_unavailable(ctx, token_shard(ctx, token));
        return TOKEN_ERROR;
    }
    if (st != TOKEN_OK)
        return st;
    rcpt->store = store;
    snprintf(rcpt->token, sizeof(rcpt->token), "%s", token);
    rcpt->remaining_ms = remaining_ms;
    return TOKEN_OK;
}

static void restore(struct token_ctx *ctx, const struct token_receipt *rcpt)
{
    const struct token_store *store = rcpt->store;
    enum token_status st;

    if (store == NULL)
        return;
    if (rcpt->remaining_ms <= 0) {
        log_info("token expired before it could be restored", "token_store=%s", store->name);
        return;
    }
    st = store->restore(ctx, rcpt->token, rcpt->remaining_ms);
    if (st == TOKEN_DOWN) {
        store = &token_store_mysql;
        st = store->restore(ctx, rcpt->token, rcpt->remaining_ms);
    }
    if (st != TOKEN_OK)
        log_warn("cannot restore a consumed token; its retry will be REPEAT_SUBMIT",
                 "token_store=%s", store->name);
    else
        log_info("token restored after a failure", "token_store=%s remaining_ms=%lld", store->name,
                 (long long)rcpt->remaining_ms);
}

/* Each call gives back the connection it borrowed before it returns, so
 * that its caller never holds one. */
enum token_status token_store_issue(struct token_ctx *ctx, char token[IDS_TOKEN_BUF],
                                    const struct token_store **where)
{
    enum token_status st = issue(ctx, token, where);

    token_ctx_release(ctx);
    return st;
}

enum token_status token_store_consume(struct token_ctx *ctx, const char *token,
                                      struct token_receipt *rcpt)
{
    enum token_status st = consume(ctx, token, rcpt);

    token_ctx_release(ctx);
    return st;
}

void token_store_restore(struct token_ctx *ctx, const struct token_receipt *rcpt)
{
    restore(ctx, rcpt);
    token_ctx_release(ctx);
}
