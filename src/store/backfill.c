/* backfill.c - the registry rows of the payments and orders a database
 * held before it became a shard (see backfill.h). One connection at a
 * time, as the request paths: a page of rows is read from one shard, then
 * its bindings are written on the shards their keys are placed on, one
 * transaction per shard and page, then the page's last id is saved. */
#include "backfill.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "db.h"
#include "shard.h"
#include "validate.h"

#define BACKFILL_PAGE 200
#define BACKFILL_WAIT_MS 5000

struct tally {
    unsigned long long written, present, conflicts, failures;
};

/* One binding to write: the registry insert and, on a duplicate, the read
 * of what is bound (first column: the order_no). */
struct binding {
    const struct shard *r; /* the shard its key is placed on */
    enum db_stmt ins, get;
    const char *ins_p[5], *get_p[2];
    size_t nins, nget;
    char key[2][ID_BUF]; /* pay_no; or user_id, request_id */
    char order_no[ID_BUF], sku[ID_BUF], qty[DB_INT_BUF];
    char what[2 * ID_BUF + 32];
    /* outcome */
    enum {
        B_FAILED,
        B_WRITTEN,
        B_PRESENT,
        B_CONFLICT
    } res;
    char bound[ID_BUF];
};

/* The bindings of one page placed on one shard, written in one
 * transaction: one commit per page and shard instead of one per row. A
 * duplicate key fails only its own statement, which is then read back. */
struct batch {
    struct binding *b;
    size_t n;
    const struct shard *r;
};

static enum db_status batch_body(struct db_conn *c, void *arg)
{
    struct batch *bt = arg;
    struct db_row row;
    bool found;
    enum db_status st;

    for (size_t i = 0; i < bt->n; i++) {
        struct binding *b = &bt->b[i];

        if (b->r != bt->r)
            continue;
        b->res = B_FAILED;
        if ((st = db_exec(c, b->ins, b->ins_p, b->nins, NULL)) == DB_OK) {
            b->res = B_WRITTEN;
            continue;
        }
        if (st != DB_DUPLICATE)
            return st;
        if ((st = db_query_one(c, b->get, b->get_p, b->nget, &row, &found)) != DB_OK)
            return st;
        if (!found || db_row_str(&row, 0, b->bound, sizeof(b->bound)) != 0)
            return db_fail(c, "%s: the registry row vanished or is malformed", b->what);
        b->res = strcmp(b->bound, b->order_no) == 0 ? B_PRESENT : B_CONFLICT;
    }
    return DB_OK;
}

/* Writes every binding of b[0..n) on its shard, shard by shard. A shard
 * that fails leaves its bindings B_FAILED. */
static void write_page(const struct shard_set *set, struct binding *b, size_t n, FILE *err)
{
    for (size_t s = 0; s < set->n; s++) {
        struct batch bt = { .b = b, .n = n, .r = &set->s[s] };
        struct db_conn *c;
        enum db_status st;
        size_t mine = 0;

        for (size_t i = 0; i < n; i++)
            mine += b[i].r == bt.r;
        if (mine == 0)
            continue;
        if ((c = db_acquire(bt.r->pool, BACKFILL_WAIT_MS)) == NULL) {
            fprintf(err, "paycallback: shard %d: no connection for %zu bindings\n", bt.r->id, mine);
            continue;
        }
        if ((st = db_txn(c, batch_body, &bt)) != DB_OK) {
            fprintf(err, "paycallback: shard %d: %zu bindings not written: %s (errno %u)\n",
                    bt.r->id, mine, db_errstr(c)[0] ? db_errstr(c) : db_status_str(st),
                    db_errno(c));
            for (size_t i = 0; i < n; i++)
                if (b[i].r == bt.r)
                    b[i].res = B_FAILED;
        }
        db_release(bt.r->pool, c);
    }
}

/* Counts a page's outcomes; true when every binding is written or present
 * (the walk may then move past the page). */
static bool count_page(const struct binding *b, size_t n, struct tally *t, FILE *err)
{
    bool all = true;

    for (size_t i = 0; i < n; i++)
        switch (b[i].res) {
        case B_WRITTEN: t->written++; break;
        case B_PRESENT: t->present++; break;
        case B_CONFLICT:
            fprintf(err,
                    "paycallback: conflict: %s is bound to %s on shard %d, and %s also "
                    "holds it\n",
                    b[i].what, b[i].bound, b[i].r->id, b[i].order_no);
            t->conflicts++;
            break;
        case B_FAILED:
            t->failures++;
            all = false;
            break;
        }
    return all;
}

/* Reads the page of stmt after *after_id from c into rows; the count in
 * *n; *after_id moves to its last row. 0, or -1 after reporting. */
static int read_page(const struct shard *sh, struct db_conn *c, enum db_stmt stmt,
                     int64_t *after_id, struct db_row *rows, size_t *n, FILE *err)
{
    char after[DB_INT_BUF], limit[DB_INT_BUF];
    const char *p[] = { db_param_int(after, *after_id), db_param_int(limit, BACKFILL_PAGE) };
    enum db_status st = db_query_retry(c, stmt, p, 2, rows, BACKFILL_PAGE, n);

    if (st != DB_OK) {
        fprintf(err, "paycallback: shard %d: cannot read: %s (errno %u)\n", sh->id,
                db_errstr(c)[0] ? db_errstr(c) : db_status_str(st), db_errno(c));
        return -1;
    }
    if (*n > 0 && db_row_int(&rows[*n - 1], 0, 0, INT64_MAX, after_id) != 0) {
        fprintf(err, "paycallback: shard %d: a row id is malformed\n", sh->id);
        return -1;
    }
    return 0;
}

/* Fills b from a payment_record row. 0, or -1 when it is malformed. */
static int payment_binding(const struct shard_set *set, const struct db_row *row, struct binding *b)
{
    memset(b, 0, sizeof(*b));
    if (db_row_str(row, PPC_PAY_NO, b->key[0], sizeof(b->key[0])) != 0 ||
        db_row_str(row, PPC_ORDER_NO, b->order_no, sizeof(b->order_no)) != 0)
        return -1;
    b->r = shard_place(set, b->key[0]);
    b->ins = ST_PAY_NO_REGISTER;
    b->ins_p[0] = b->key[0];
    b->ins_p[1] = b->order_no;
    b->nins = 2;
    b->get = ST_PAY_NO_OWNER;
    b->get_p[0] = b->key[0];
    b->nget = 1;
    snprintf(b->what, sizeof(b->what), "pay_no %s", b->key[0]);
    return 0;
}

/* Fills b from an orders row. 0, or -1 when it is malformed. */
static int order_binding(const struct shard_set *set, const struct db_row *row, struct binding *b)
{
    memset(b, 0, sizeof(*b));
    if (db_row_str(row, OPC_USER_ID, b->key[0], sizeof(b->key[0])) != 0 ||
        db_row_str(row, OPC_REQUEST_ID, b->key[1], sizeof(b->key[1])) != 0 ||
        db_row_str(row, OPC_ORDER_NO, b->order_no, sizeof(b->order_no)) != 0 ||
        db_row_str(row, OPC_SKU, b->sku, sizeof(b->sku)) != 0 ||
        db_row_str(row, OPC_QUANTITY, b->qty, sizeof(b->qty)) != 0)
        return -1;
    b->r = shard_place(set, b->key[0]);
    b->ins = ST_CHECKOUT_INSERT;
    b->ins_p[0] = b->key[0];
    b->ins_p[1] = b->key[1];
    b->ins_p[2] = b->order_no;
    b->ins_p[3] = b->sku;
    b->ins_p[4] = b->qty;
    b->nins = 5;
    b->get = ST_CHECKOUT_GET;
    b->get_p[0] = b->key[0];
    b->get_p[1] = b->key[1];
    b->nget = 2;
    snprintf(b->what, sizeof(b->what), "checkout (%s, %s)", b->key[0], b->key[1]);
    return 0;
}

/* What one walk reads and binds. */
struct walk {
    const char *name; /* its row in backfill_progress */
    enum db_stmt page;
    int (*binding)(const struct shard_set *, const struct db_row *, struct binding *);
};

static const struct walk walks[] = {
    { "payments", ST_PAY_PAGE, payment_binding },
    { "orders", ST_ORDER_PAGE, order_binding },
};

/* Runs one walk over sh from where it last stopped, page by page: each
 * page's bindings are written, then its last id is saved on sh. Stops
 * before the next page when stop() says so (the position is kept: the next
 * run resumes there) or when a page could not be written whole; a walk
 * that reaches the end deletes its position. Returns 0 done, 1 stopped,
 * -1 failed. */
static int run_walk(const struct shard_set *set, const struct shard *sh, const struct walk *w,
                    struct db_row *rows, struct binding *b, unsigned long long *seen,
                    struct tally *t, bool (*stop)(void), FILE *out, FILE *err)
{
    const char *wp[] = { w->name };
    struct db_conn *c = NULL;
    struct db_row row;
    int64_t after = 0;
    bool found = false;
    size_t n = 0, i;
    int rc = -1;

    if ((c = db_acquire(sh->pool, BACKFILL_WAIT_MS)) == NULL) {
        fprintf(err, "paycallback: shard %d: no free connection\n", sh->id);
        return -1;
    }
    if (db_query_one(c, ST_BACKFILL_AT, wp, 1, &row, &found) != DB_OK ||
        (found && db_row_int(&row, 0, 0, INT64_MAX, &after) != 0)) {
        fprintf(err, "paycallback: shard %d: cannot read backfill_progress: %s\n", sh->id,
                db_errstr(c));
        goto out;
    }
    if (after > 0)
        fprintf(out, "shard %d: %s resumed after id %lld\n", sh->id, w->name, (long long)after);
    for (;;) {
        char at[DB_INT_BUF];
        const char *sp[] = { w->name, at };

        if (stop != NULL && stop()) {
            fprintf(out, "shard %d: %s stopped after id %lld; run again to resume\n", sh->id,
                    w->name, (long long)after);
            rc = 1;
            goto out;
        }
        int64_t next = after;
        if (read_page(sh, c, w->page, &next, rows, &n, err) != 0)
            goto out;
        if (n == 0)
            break;
        db_release(sh->pool, c); /* one connection at a time */
        c = NULL;
        size_t nb = 0;
        for (i = 0; i < n; i++) {
            if (w->binding(set, &rows[i], &b[nb]) != 0) {
                fprintf(err, "paycallback: shard %d: a %s row is malformed\n", sh->id, w->name);
                t->failures++;
                continue;
            }
            nb++;
        }
        write_page(set, b, nb, err);
        *seen += n;
        bool whole = count_page(b, nb, t, err) && nb == n;
        if ((c = db_acquire(sh->pool, BACKFILL_WAIT_MS)) == NULL) {
            fprintf(err, "paycallback: shard %d: no free connection\n", sh->id);
            return -1;
        }
        if (!whole) {
            fprintf(err,
                    "paycallback: shard %d: %s stopped after id %lld: a page could not be "
                    "written whole; run again to resume\n",
                    sh->id, w->name, (long long)after);
            goto out;
        }
        after = next;
        db_param_int(at, after);
        if (db_exec_retry(c, ST_BACKFILL_SAVE, sp, 2, NULL) != DB_OK) {
            fprintf(err, "paycallback: shard %d: cannot save backfill_progress: %s\n", sh->id,
                    db_errstr(c));
            goto out;
        }
        if (n < BACKFILL_PAGE)
            break;
    }
    if (db_exec_retry(c, ST_BACKFILL_DONE, wp, 1, NULL) != DB_OK) {
        fprintf(err, "paycallback: shard %d: cannot clear backfill_progress: %s\n", sh->id,
                db_errstr(c));
        goto out;
    }
    rc = 0;
out:
    db_release(sh->pool, c);
    return rc;
}

int backfill_registries(const struct config *cfg, bool (*stop)(void), FILE *out, FILE *err)
{
    struct shard_set set;
    struct db_row *rows;
    struct binding *b;
    struct tally tally[2] = { { 0 }, { 0 } };
    unsigned long long total = 0;
    struct timespec t0, t1;
    int stopped = 0, failed = 0;
    size_t i, w;

    if (cfg->nshards == 0) {
        fprintf(err, "paycallback: --backfill-registries needs mysql.shards: without it there "
                     "are no registries to fill\n");
        return 2;
    }
    rows = calloc(BACKFILL_PAGE, sizeof(*rows));
    b = calloc(BACKFILL_PAGE, sizeof(*b));
    if (rows == NULL || b == NULL || shard_set_open(&set, cfg, NULL) != 0) {
        fprintf(err, "paycallback: out of memory\n");
        free(rows);
        free(b);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < set.n && !stopped && !failed; i++) {
        unsigned long long seen[2] = { 0, 0 };

        for (w = 0; w < 2 && !stopped && !failed; w++) {
            int rc =
                run_walk(&set, &set.s[i], &walks[w], rows, b, &seen[w], &tally[w], stop, out, err);
            stopped = rc == 1;
            failed = rc < 0;
        }
        fprintf(out, "shard %d: %llu payments, %llu orders read\n", set.s[i].id, seen[0], seen[1]);
        total += seen[0] + seen[1];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(out, "pay_no_registry: %llu written, %llu present, %llu conflicts, %llu failures\n",
            tally[0].written, tally[0].present, tally[0].conflicts, tally[0].failures);
    fprintf(out, "checkout_registry: %llu written, %llu present, %llu conflicts, %llu failures\n",
            tally[1].written, tally[1].present, tally[1].conflicts, tally[1].failures);
    fprintf(out, "%llu rows in %.2f s (%.0f rows/s)%s\n", total, secs,
            secs > 0 ? (double)total / secs : 0.0, stopped ? "; stopped, run again to resume" : "");
    shard_set_close(&set);
    free(rows);
    free(b);
    if (stopped)
        return 3;
    return failed || tally[0].conflicts + tally[0].failures + tally[1].conflicts +
                             tally[1].failures !=
                         0
               ? 1
               : 0;
}
