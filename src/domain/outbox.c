/* outbox.c - the transactional outbox table: appending events inside the
 * payment and status-change transactions, and the relay's claims, leases
 * and delivery states. The HTTP side of delivery is delivery.c's. */
#include "outbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "order_state.h"
#include "route.h"

enum db_status outbox_append(struct db_conn *c, const char *event_type, const char *order_no,
                             const char *payload)
{
    const char *p[] = { event_type, order_no, payload };
    enum db_status st = db_exec(c, ST_OUTBOX_INSERT, p, 3, NULL);

    if (st == DB_DUPLICATE)
        return db_fail(c, "outbox: order %s already has a %s event", order_no, event_type);
    return st;
}

const char *outbox_type_for_status(int to)
{
    switch (to) {
    case ORDER_PAID: return OUTBOX_ORDER_PAID;
    case ORDER_SHIPPED: return OUTBOX_ORDER_SHIPPED;
    case ORDER_FINISHED: return OUTBOX_ORDER_FINISHED;
    case ORDER_CANCELED: return OUTBOX_ORDER_CANCELED;
    default: return NULL;
    }
}

/* ---- delivery: claim under a lease, record each attempt ---- */

struct claim_job {
    const char *owner;
    int lease_s;
    struct outbox_event *evs;
    struct db_row *rows;
    size_t max;
    size_t n;
};

static int read_event(const struct db_row *r, struct outbox_event *ev)
{
    int64_t id, attempts;

    if (db_row_int(r, OBC_ID, 1, INT64_MAX, &id) != 0 ||
        db_row_int(r, OBC_ATTEMPTS, 0, INT32_MAX, &attempts) != 0 ||
        db_row_str(r, OBC_EVENT_TYPE, ev->event_type, sizeof(ev->event_type)) != 0 ||
        db_row_str(r, OBC_ORDER_NO, ev->order_no, sizeof(ev->order_no)) != 0 ||
        db_row_str(r, OBC_PAYLOAD, ev->payload, sizeof(ev->payload)) != 0 ||
        db_row_str(r, OBC_CREATE_TIME, ev->created_at, sizeof(ev->created_at)) != 0)
        return -1;
    ev->id = (uint64_t)id;
    ev->attempts = (int)attempts;
    return 0;
}

static enum db_status claim_txn(struct db_conn *c, void *arg)
{
    struct claim_job *j = arg;
    char lease[DB_INT_BUF], max[DB_INT_BUF], pending[DB_INT_BUF], delivered[DB_INT_BUF];
    const char *up[] = { j->owner, db_param_int(lease, j->lease_s),
                         db_param_int(pending, OUTBOX_PENDING),
                         db_param_int(delivered, OUTBOX_DELIVERED),
                         db_param_int(max, (int64_t)j->max) };
    const char *sel[] = { j->owner, pending };
    enum db_status st;
    size_t n = 0, i;

    j->n = 0;
    if ((st = db_exec(c, ST_OUTBOX_CLAIM, up, 5, NULL)) != DB_OK)
        return st;
    if ((st = db_query(c, ST_OUTBOX_CLAIMED, sel, 2, j->rows, j->max, &n)) != DB_OK)
        return st;
    for (i = 0; i < n; i++)
        if (read_event(&j->rows[i], &j->evs[i]) != 0)
            return db_fail(c, "outbox: malformed claimed event");
    j->n = n;
    return DB_OK;
}

enum db_status outbox_claim(struct db_conn *c, const char *owner, int lease_s,
                            struct outbox_event *evs, size_t max, size_t *n)
{
    struct claim_job j = { .owner = owner, .lease_s = lease_s, .evs = evs, .max = max };
    enum db_status st;

    *n = 0;
    if (max == 0)
        return DB_OK;
    if ((j.rows = calloc(max, sizeof(*j.rows))) == NULL)
        return db_fail(c, "outbox: out of memory");
    st = db_txn(c, claim_txn, &j);
    free(j.rows);
    if (st == DB_OK)
        *n = j.n;
    return st;
}

enum db_status outbox_mark_delivered(struct db_conn *c, uint64_t id, const char *owner, bool *held)
{
    char state[DB_INT_BUF], idb[DB_INT_BUF];
    const char *p[] = { db_param_int(state, OUTBOX_DELIVERED), db_param_int(idb, (int64_t)id),
                        owner };
    uint64_t rows = 0;
    enum db_status st = db_exec_retry(c, ST_OUTBOX_DELIVERED, p, 3, &rows);

    *held = st == DB_OK && rows == 1;
    return st;
}

enum db_status outbox_mark_failed(struct db_conn *c, uint64_t id, const char *owner,
                                  const char *error, int64_t delay_ms, int max_attempts,
                                  int attempts_before, bool *dead)
{
    char maxb[DB_INT_BUF], deadb[DB_INT_BUF], delay[DB_INT_BUF], idb[DB_INT_BUF];
    char err[OUTBOX_ERROR_MAX];
    const char *p[] = { db_param_int(maxb, max_attempts), db_param_int(deadb, OUTBOX_DEAD),
                        db_param_int(delay, delay_ms),    err,
                        db_param_int(idb, (int64_t)id),   owner };
    uint64_t rows = 0;
    enum db_status st;

    snprintf(err, sizeof(err), "%s", error);
    *dead = false;
    st = db_exec_retry(c, ST_OUTBOX_FAILED, p, 6, &rows);
    if (st == DB_OK && rows == 1)
        *dead = attempts_before + 1 >= max_attempts;
    return st;
}

enum db_status outbox_release(struct db_conn *c, const char *owner)
{
    char pending[DB_INT_BUF];
    const char *p[] = { owner, db_param_int(pending, OUTBOX_PENDING) };

    return db_exec_retry(c, ST_OUTBOX_RELEASE, p, 2, NULL);
}

struct retry_job {
    uint64_t id;
    const char *actor, *request_id;
    bool changed;
};

static enum db_status retry_txn(struct db_conn *c, void *arg)
{
    struct retry_job *j = arg;
    char pending[DB_INT_BUF], idb[DB_INT_BUF], dead[DB_INT_BUF], subject[32];
    const char *p[] = { db_param_int(pending, OUTBOX_PENDING), db_param_int(idb, (int64_t)j->id),
                        db_param_int(dead, OUTBOX_DEAD) };
    uint64_t rows = 0;
    enum db_status st;

    j->changed = false;
    if ((st = db_exec(c, ST_OUTBOX_RETRY, p, 3, &rows)) != DB_OK)
        return st;
    if (rows != 1)
        return DB_ROLLBACK; /* not a dead event: nothing to do */
    snprintf(subject, sizeof(subject), "outbox:%llu", (unsigned long long)j->id);
    if ((st = audit_append(c, j->actor, "outbox.retry", subject, "DEAD -> PENDING",
                           j->request_id)) != DB_OK)
        return st;
    j->changed = true;
    return DB_OK;
}

enum db_status outbox_retry(struct db_conn *c, uint64_t id, const char *actor,
                            const char *request_id, bool *changed)
{
    struct retry_job j = { .id = id, .actor = actor, .request_id = request_id };
    enum db_status st = db_txn(c, retry_txn, &j);

    *changed = st == DB_OK && j.changed;
    return st == DB_ROLLBACK ? DB_OK : st;
}

/* Optional text column: "" for NULL. */
static int opt_str(const struct db_row *r, unsigned int col, char *out, size_t outsz)
{
    if (db_row_is_null(r, col)) {
        out[0] = '\0';
        return 0;
    }
    return db_row_str(r, col, out, outsz);
}

static int read_entry(const struct db_row *r, struct outbox_entry *e, bool payload)
{
    int64_t id, state, attempts;

    memset(e, 0, sizeof(*e));
    if (db_row_int(r, OLS_ID, 1, INT64_MAX, &id) != 0 ||
        db_row_int(r, OLS_STATE, OUTBOX_PENDING, OUTBOX_DEAD, &state) != 0 ||
        db_row_int(r, OLS_ATTEMPTS, 0, INT32_MAX, &attempts) != 0 ||
        db_row_str(r, OLS_EVENT_TYPE, e->event_type, sizeof(e->event_type)) != 0 ||
        db_row_str(r, OLS_ORDER_NO, e->order_no, sizeof(e->order_no)) != 0 ||
        db_row_str(r, OLS_CREATE_TIME, e->created_at, sizeof(e->created_at)) != 0 ||
        db_row_str(r, OLS_NEXT_ATTEMPT, e->next_attempt_at, sizeof(e->next_attempt_at)) != 0 ||
        opt_str(r, OLS_PUBLISHED, e->published_at, sizeof(e->published_at)) != 0 ||
        opt_str(r, OLS_LAST_ERROR, e->last_error, sizeof(e->last_error)) != 0 ||
        (payload && db_row_str(r, OLS_PAYLOAD, e->payload, sizeof(e->payload)) != 0))
        return -1;
    e->id = (uint64_t)id;
    e->state = (int)state;
    e->attempts = (int)attempts;
    return 0;
}

enum db_status outbox_list(struct db_conn *c, int state, uint64_t after_id,
                           struct outbox_entry *out, size_t max, size_t *n)
{
    char stb[DB_INT_BUF], after[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[] = { db_param_int(stb, state), db_param_int(after, (int64_t)after_id),
                        db_param_int(lim, (int64_t)max) };
    struct db_row *rows = calloc(max ? max : 1, sizeof(*rows));
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (rows == NULL)
        return db_fail(c, "outbox: out of memory");
    st = db_query_retry(c, ST_OUTBOX_LIST, p, 3, rows, max, &got);
    for (i = 0; st == DB_OK && i < got; i++)
        if (read_entry(&rows[i], &out[i], false) != 0)
            st = db_fail(c, "outbox: malformed event row");
    if (st == DB_OK)
        *n = got;
    free(rows);
    return st;
}

enum db_status outbox_get(struct db_conn *c, uint64_t id, struct outbox_entry *out, bool *found)
{
    char idb[DB_INT_BUF];
    const char *p[] = { db_param_int(idb, (int64_t)id) };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_OUTBOX_GET, p, 1, &row, 1, &n);

    *found = false;
    if (st != DB_OK || n == 0)
        return st;
    if (read_entry(&row, out, true) != 0)
        return db_fail(c, "outbox: malformed event row");
    *found = true;
    return DB_OK;
}

enum db_status outbox_stats(struct db_conn *c, int lag_s, struct outbox_stats *out)
{
    char pending[DB_INT_BUF], dead[DB_INT_BUF], lag[DB_INT_BUF];
    const char *p[] = { db_param_int(pending, OUTBOX_PENDING),
                        db_param_int(dead, OUTBOX_DEAD),
                        pending,
                        pending,
                        db_param_int(lag, lag_s),
                        pending,
                        dead };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_OUTBOX_STATS, p, 7, &row, 1, &n);

    memset(out, 0, sizeof(*out));
    if (st != DB_OK)
        return st;
    if (n != 1 || db_row_int(&row, OSC_PENDING, 0, INT64_MAX, &out->pending) != 0 ||
        db_row_int(&row, OSC_DEAD, 0, INT64_MAX, &out->dead) != 0 ||
        db_row_int(&row, OSC_OLDEST_MS, INT64_MIN, INT64_MAX, &out->oldest_pending_ms) != 0 ||
        db_row_int(&row, OSC_LAGGING, 0, INT64_MAX, &out->lagging) != 0)
        return db_fail(c, "outbox: malformed stats row");
    if (out->oldest_pending_ms < 0)
        out->oldest_pending_ms = 0; /* clock skew between writers */
    return DB_OK;
}

static const char *const state_names[] = {
    [OUTBOX_PENDING] = "PENDING", [OUTBOX_DELIVERED] = "DELIVERED", [OUTBOX_DEAD] = "DEAD"
};

const char *outbox_state_name(int state)
{
    if (state < OUTBOX_PENDING || state > OUTBOX_DEAD)
        return "UNKNOWN";
    return state_names[state];
}

int outbox_state_from_name(const char *name)
{
    for (int i = OUTBOX_PENDING; i <= OUTBOX_DEAD; i++)
        if (strcmp(name, state_names[i]) == 0)
            return i;
    return -1;
}

/* ---- routed ---------------------------------------------------------------- */

/* One listing over the shards: where it starts, and what it gathered. */
struct list_job {
    int state;
    size_t first;
    uint64_t after;
    struct outbox_entry *items;
    size_t limit, n;
};

static enum route_step list_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct list_job *j = arg;
    size_t got = 0, i;
    enum db_status st = outbox_list(c, j->state, sh->index == j->first ? j->after : 0,
                                    j->items + j->n, j->limit - j->n, &got);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->items[j->n + i].shard = sh->index;
    j->n += got;
    return j->n == j->limit ? ROUTE_STOP : ROUTE_NEXT;
}

enum route_result outbox_route_list(const struct route *rt, int state, size_t first, uint64_t after,
                                    struct outbox_entry *items, size_t limit, size_t *n,
                                    struct route_scan *sc)
{
    struct list_job j = { state, first, after, items, limit, 0 };
    enum route_result r = route_scan(rt, first, "outbox_list", list_shard, &j, sc);

    *n = j.n;
    return r;
}

enum route_result outbox_route_get(const struct route *rt, const struct shard *sh, uint64_t id,
                                   struct outbox_entry *e, bool *found, struct route_failure *fail)
{
    enum route_result r = ROUTE_OK;
    struct route_hop h;
    enum db_status st;

    *found = false;
    route_hop_init(&h, rt, fail);
    if (route_hop_to(&h, sh, "outbox_get") == NULL)
        return ROUTE_UNAVAILABLE;
    if ((st = outbox_get(h.c, id, e, found)) != DB_OK) {
        route_failed(&h, route_retryable(st), "outbox_get");
        r = route_retryable(st) ? ROUTE_UNAVAILABLE : ROUTE_FAILED;
    } else if (*found) {
        e->shard = sh->index;
    }
    route_hop_release(&h);
    return r;
}

enum route_result outbox_route_retry(const struct route *rt, const struct shard *sh, uint64_t id,
                                     const char *actor, bool *changed, struct outbox_entry *e,
                                     bool *found, struct route_failure *fail)
{
    const char *step = "outbox_retry";
    enum route_result r = ROUTE_OK;
    struct route_hop h;
    enum db_status st;

    *changed = false;
    *found = false;
    route_hop_init(&h, rt, fail);
    if (route_hop_to(&h, sh, step) == NULL)
        return ROUTE_UNAVAILABLE;
    st = outbox_retry(h.c, id, actor, rt->request_id, changed);
    if (st == DB_OK && (st = outbox_get(h.c, id, e, found)) != DB_OK)
        step = "outbox_get";
    if (st != DB_OK) {
        route_failed(&h, route_retryable(st), step);
        r = route_retryable(st) ? ROUTE_UNAVAILABLE : ROUTE_FAILED;
    } else if (*found) {
        e->shard = sh->index;
    }
    route_hop_release(&h);
    return r;
}
