/* audit.c - appends to audit_log and lists it. */
#include "audit.h"

#include <stdlib.h>
#include <string.h>

#include "shard.h"

enum db_status audit_append(struct db_conn *c, const char *actor, const char *action,
                            const char *subject, const char *detail, const char *request_id)
{
    const char *p[] = { actor, action, subject, detail, request_id };

    return db_exec(c, ST_AUDIT_INSERT, p, 5, NULL);
}

enum db_status audit_append_retry(struct db_conn *c, const char *actor, const char *action,
                                  const char *subject, const char *detail, const char *request_id)
{
    const char *p[] = { actor, action, subject, detail, request_id };

    return db_exec_retry(c, ST_AUDIT_INSERT, p, 5, NULL);
}

/* Fills e from an enum audit_col row. 0, or -1 when a column is not what
 * the schema promises. */
static int entry_from_row(const struct db_row *r, struct audit_entry *e)
{
    int64_t id = 0;

    memset(e, 0, sizeof(*e));
    if (db_row_int(r, AUC_ID, 1, INT64_MAX, &id) != 0 ||
        db_row_str(r, AUC_ACTOR, e->actor, sizeof(e->actor)) != 0 ||
        db_row_str(r, AUC_ACTION, e->action, sizeof(e->action)) != 0 ||
        db_row_str(r, AUC_SUBJECT, e->subject, sizeof(e->subject)) != 0 ||
        db_row_str(r, AUC_DETAIL, e->detail, sizeof(e->detail)) != 0 ||
        db_row_str(r, AUC_REQUEST_ID, e->request_id, sizeof(e->request_id)) != 0 ||
        db_row_str(r, AUC_CREATE_TIME, e->created_at, sizeof(e->created_at)) != 0)
        return -1;
    e->id = (uint64_t)id;
    return 0;
}

enum db_status audit_list(struct db_conn *c, const struct audit_filter *f, uint64_t after,
                          struct audit_entry *out, size_t max, size_t *n)
{
    char aft[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[] = { db_param_int(aft, (int64_t)after),
                        f->actor,
                        f->actor,
                        f->action,
                        f->action,
                        f->subject,
                        f->subject,
                        db_param_int(lim, (int64_t)max) };
    struct db_row *rows = calloc(max ? max : 1, sizeof(*rows));
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (rows == NULL)
        return db_fail(c, "audit: out of memory");
    st = db_query_retry(c, ST_AUDIT_LIST, p, 8, rows, max, &got);
    for (i = 0; st == DB_OK && i < got; i++)
        if (entry_from_row(&rows[i], &out[i]) != 0)
            st = db_fail(c, "audit: malformed audit_log row");
    free(rows);
    if (st == DB_OK)
        *n = got;
    return st;
}

struct list_job {
    const struct audit_filter *f;
    size_t first;
    uint64_t after;
    struct audit_entry *items;
    size_t limit, n;
};

static enum route_step list_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct list_job *j = arg;
    size_t got = 0, i;
    enum db_status st = audit_list(c, j->f, sh->index == j->first ? j->after : 0, j->items + j->n,
                                   j->limit - j->n, &got);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->items[j->n + i].shard = sh->index;
    j->n += got;
    return j->n == j->limit ? ROUTE_STOP : ROUTE_NEXT;
}

enum route_result audit_route_list(const struct route *rt, const struct audit_filter *f,
                                   size_t first, uint64_t after, struct audit_entry *items,
                                   size_t limit, size_t *n, struct route_scan *sc)
{
    struct list_job j = { f, first, after, items, limit, 0 };
    enum route_result r = route_scan(rt, first, "audit_list", list_shard, &j, sc);

    *n = j.n;
    return r;
}
