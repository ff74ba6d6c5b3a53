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
    return outbox_append_subject(c, event_type, order_no, "", payload);
}

enum db_status outbox_append_subject(struct db_conn *c, const char *event_type,
                                     const char *order_no, const char *subject, const char *payload)
{
    const char *p[] = { event_type, order_no, subject, payload };
    enum db_status st = db_exec(c, ST_OUTBOX_INSERT, p, 4, NULL);

    if (st == DB_DUPLICATE)
        return db_fail(c, "outbox: order %s already has a %s event for '%s'", order_no, event_type,
                       subject);
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

/* ---- delivery: fan-out to endpoints, claim under a lease, record attempts ---- */

struct fanout_job {
    const struct webhook_endpoint_cfg *eps;
    size_t neps, max, n;
    struct db_row *rows;
};

static enum db_status fanout_txn(struct db_conn *c, void *arg)
{
    struct fanout_job *j = arg;
    char pending[DB_INT_BUF], max[DB_INT_BUF], idb[DB_INT_BUF];
    const char *sel[] = { db_param_int(pending, OUTBOX_PENDING),
                          db_param_int(max, (int64_t)j->max) };
    char type[OUTBOX_TYPE_MAX + 1];
    enum db_status st;
    size_t n = 0;

    j->n = 0;
    if ((st = db_query(c, ST_FANOUT_SELECT, sel, 2, j->rows, j->max, &n)) != DB_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        int64_t id;
        unsigned bit;

        if (db_row_int(&j->rows[i], FOC_ID, 1, INT64_MAX, &id) != 0 ||
            db_row_str(&j->rows[i], FOC_EVENT_TYPE, type, sizeof(type)) != 0)
            return db_fail(c, "outbox: malformed event row");
        db_param_int(idb, id);
        bit = webhook_event_bit(type);
        for (size_t e = 0; e < j->neps; e++) {
            const char *ins[] = { j->eps[e].name, idb };

            if ((j->eps[e].events & bit) == 0)
                continue;
            if ((st = db_exec(c, ST_FANOUT_INSERT, ins, 2, NULL)) != DB_OK)
                return st;
        }
        {
            const char *done[] = { idb };

            if ((st = db_exec(c, ST_FANOUT_DONE, done, 1, NULL)) != DB_OK)
                return st;
        }
    }
    j->n = n;
    return DB_OK;
}

enum db_status outbox_fanout(struct db_conn *c, const struct webhook_endpoint_cfg *eps, size_t neps,
                             size_t max, size_t *n)
{
    struct fanout_job j = { .eps = eps, .neps = neps, .max = max };
    enum db_status st;

    *n = 0;
    if (max == 0 || neps == 0)
        return DB_OK;
    if ((j.rows = calloc(max, sizeof(*j.rows))) == NULL)
        return db_fail(c, "outbox: out of memory");
    st = db_txn(c, fanout_txn, &j);
    free(j.rows);
    if (st == DB_OK)
        *n = j.n;
    return st;
}

enum db_status outbox_settle(struct db_conn *c, size_t max, uint64_t *n)
{
    char dead[DB_INT_BUF], delivered[DB_INT_BUF], pending[DB_INT_BUF], maxb[DB_INT_BUF];
    const char *p[] = {
        db_param_int(dead, OUTBOX_DEAD),       dead,    db_param_int(delivered, OUTBOX_DELIVERED),
        db_param_int(pending, OUTBOX_PENDING), pending, db_param_int(maxb, (int64_t)max)
    };

    *n = 0;
    return db_exec_retry(c, ST_FANOUT_SETTLE, p, 6, n);
}

struct claim_job {
    const char *endpoint, *owner;
    int lease_s;
    struct outbox_event *evs;
    struct db_row *rows;
    size_t max;
    size_t n;
};

static int read_event(const struct db_row *r, struct outbox_event *ev)
{
    int64_t id, attempts;

    memset(ev, 0, sizeof(*ev));
    if (db_row_int(r, OBC_ID, 1, INT64_MAX, &id) != 0 ||
        db_row_int(r, OBC_ATTEMPTS, 0, INT32_MAX, &attempts) != 0 ||
        db_row_str(r, OBC_EVENT_TYPE, ev->event_type, sizeof(ev->event_type)) != 0 ||
        db_row_str(r, OBC_ORDER_NO, ev->order_no, sizeof(ev->order_no)) != 0 ||
        db_row_str(r, OBC_SUBJECT, ev->subject, sizeof(ev->subject)) != 0 ||
        db_row_str(r, OBC_PAYLOAD, ev->payload, sizeof(ev->payload)) != 0 ||
        db_row_str(r, OBC_CREATE_TIME, ev->created_at, sizeof(ev->created_at)) != 0 ||
        (!db_row_is_null(r, OBC_CURRENCY) &&
         db_row_str(r, OBC_CURRENCY, ev->currency, sizeof(ev->currency)) != 0))
        return -1;
    ev->id = (uint64_t)id;
    ev->attempts = (int)attempts;
    return 0;
}

static enum db_status claim_txn(struct db_conn *c, void *arg)
{
    struct claim_job *j = arg;
    char lease[DB_INT_BUF], max[DB_INT_BUF], pending[DB_INT_BUF], delivered[DB_INT_BUF];
    const char *up[] = { j->owner,
                         db_param_int(lease, j->lease_s),
                         j->endpoint,
                         db_param_int(pending, OUTBOX_PENDING),
                         db_param_int(delivered, OUTBOX_DELIVERED),
                         pending,
                         db_param_int(max, (int64_t)j->max) };
    const char *sel[] = { j->owner, j->endpoint, pending };
    enum db_status st;
    size_t n = 0, i;

    j->n = 0;
    if ((st = db_exec(c, ST_DELIVERY_CLAIM, up, 7, NULL)) != DB_OK)
        return st;
    if ((st = db_query(c, ST_DELIVERY_CLAIMED, sel, 3, j->rows, j->max, &n)) != DB_OK)
        return st;
    for (i = 0; i < n; i++)
        if (read_event(&j->rows[i], &j->evs[i]) != 0)
            return db_fail(c, "outbox: malformed claimed event");
    j->n = n;
    return DB_OK;
}

enum db_status outbox_claim(struct db_conn *c, const char *endpoint, const char *owner, int lease_s,
                            struct outbox_event *evs, size_t max, size_t *n)
{
    struct claim_job j = {
        .endpoint = endpoint, .owner = owner, .lease_s = lease_s, .evs = evs, .max = max
    };
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

/* One attempt's record on c, inside the batch's transaction. */
static enum db_status record_one(struct db_conn *c, const char *endpoint, const char *owner,
                                 struct outbox_attempt *a)
{
    char idb[DB_INT_BUF], state[DB_INT_BUF], maxb[DB_INT_BUF], deadb[DB_INT_BUF];
    char delay[DB_INT_BUF], att[DB_INT_BUF], err[OUTBOX_ERROR_MAX];
    uint64_t rows = 0;
    enum db_status st;

    db_param_int(idb, (int64_t)a->id);
    if (a->ok) {
        const char *p[] = { db_param_int(state, OUTBOX_DELIVERED), endpoint, idb, owner };

        if ((st = db_exec(c, ST_DELIVERY_DELIVERED, p, 4, &rows)) == DB_OK)
            a->held = rows == 1;
        return st;
    }
    snprintf(err, sizeof(err), "%s", a->error);
    {
        const char *p[] = { db_param_int(maxb, a->max_attempts),
                            db_param_int(deadb, OUTBOX_DEAD),
                            db_param_int(delay, a->delay_ms),
                            err,
                            endpoint,
                            idb,
                            owner };
        const char *note[] = { db_param_int(att, a->attempts_before + 1), err, idb };

        if ((st = db_exec(c, ST_DELIVERY_FAILED, p, 7, &rows)) != DB_OK || rows != 1)
            return st;
        a->held = true;
        a->dead = a->attempts_before + 1 >= a->max_attempts;
        return db_exec(c, ST_DELIVERY_NOTE, note, 3, NULL);
    }
}

struct record_job {
    const char *endpoint, *owner;
    struct outbox_attempt *a;
    size_t n;
    char *ids;   /* "id,id,..." of the acknowledged attempts, for one statement */
    size_t nids; /* how many */
};

/* The acknowledged attempts in one statement when every one still holds
 * its lease (the rows it changed are all of them); else DB_ROLLBACK, and
 * the caller records them one by one to learn which did. */
static enum db_status record_acked(struct db_conn *c, struct record_job *j)
{
    char delivered[DB_INT_BUF];
    const char *p[] = { db_param_int(delivered, OUTBOX_DELIVERED), j->owner, j->endpoint, j->ids };
    uint64_t rows = 0;
    enum db_status st;

    if (j->nids == 0)
        return DB_OK;
    if ((st = db_exec(c, ST_DELIVERY_ACKED, p, 4, &rows)) != DB_OK)
        return st;
    if (rows != j->nids)
        return DB_ROLLBACK;
    for (size_t i = 0; i < j->n; i++)
        if (j->a[i].ok)
            j->a[i].held = true;
    return DB_OK;
}

static enum db_status record_txn(struct db_conn *c, void *arg)
{
    struct record_job *j = arg;
    enum db_status st;

    for (size_t i = 0; i < j->n; i++)
        j->a[i].held = j->a[i].dead = false;
    if (j->ids != NULL && (st = record_acked(c, j)) != DB_OK)
        return st;
    for (size_t i = 0; i < j->n; i++)
        if ((j->ids == NULL || !j->a[i].ok) &&
            (st = record_one(c, j->endpoint, j->owner, &j->a[i])) != DB_OK)
            return st;
    return DB_OK;
}

enum db_status outbox_record(struct db_conn *c, const char *endpoint, const char *owner,
                             struct outbox_attempt *a, size_t n)
{
    struct record_job j = { .endpoint = endpoint, .owner = owner, .a = a, .n = n };
    size_t len = 0;
    enum db_status st;

    if (n == 0)
        return DB_OK;
    if ((j.ids = malloc(n * DB_INT_BUF + 1)) != NULL) {
        j.ids[0] = '\0';
        for (size_t i = 0; i < n; i++)
            if (a[i].ok) {
                len += (size_t)snprintf(j.ids + len, DB_INT_BUF + 1, "%s%llu", j.nids ? "," : "",
                                        (unsigned long long)a[i].id);
                j.nids++;
            }
    }
    st = db_txn(c, record_txn, &j);
    if (st == DB_ROLLBACK) { /* a lease ran out: one by one */
        free(j.ids);
        j.ids = NULL;
        st = db_txn(c, record_txn, &j);
    }
    free(j.ids);
    return st;
}

enum db_status outbox_release(struct db_conn *c, const char *owner)
{
    char pending[DB_INT_BUF];
    const char *p[] = { owner, db_param_int(pending, OUTBOX_PENDING) };

    return db_exec_retry(c, ST_DELIVERY_RELEASE, p, 2, NULL);
}

enum db_status outbox_waiting(struct db_conn *c, const char *endpoint, int64_t *n)
{
    char pending[DB_INT_BUF];
    const char *p[] = { endpoint, db_param_int(pending, OUTBOX_PENDING) };
    struct db_row row;
    bool found = false;
    enum db_status st = db_query_one(c, ST_DELIVERY_WAITING, p, 2, &row, &found);

    *n = 0;
    if (st == DB_OK && found && db_row_int(&row, 0, 0, INT64_MAX, n) != 0)
        return db_fail(c, "outbox: malformed count");
    return st;
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
    if ((st = db_exec(c, ST_DELIVERY_REVIVE, p, 3, NULL)) != DB_OK)
        return st;
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

/* ---- replay: send delivered or dead events again ---------------------------- */

/* Makes event id pending again at endpoint, whatever its delivery there
 * was (a new delivery when it had none), and its outbox row pending when
 * it had been handed out. */
static enum db_status replay_to(struct db_conn *c, uint64_t id, const char *endpoint)
{
    char idb[DB_INT_BUF], pending[DB_INT_BUF];
    const char *up[] = { endpoint, db_param_int(idb, (int64_t)id),
                         db_param_int(pending, OUTBOX_PENDING) };
    const char *row[] = { pending, idb, pending };
    enum db_status st;

    if ((st = db_exec(c, ST_REPLAY_UPSERT, up, 3, NULL)) != DB_OK)
        return st;
    return db_exec(c, ST_REPLAY_PENDING, row, 3, NULL);
}

struct replay_job {
    uint64_t id;
    const struct webhook_endpoint_cfg *eps;
    size_t neps;
    const char *actor, *request_id;
    bool found;
    size_t sent;
};

static enum db_status replay_txn(struct db_conn *c, void *arg)
{
    struct replay_job *j = arg;
    struct outbox_entry e;
    char subject[32], detail[255];
    size_t used = 0;
    enum db_status st;
    unsigned bit;

    j->found = false;
    j->sent = 0;
    if ((st = outbox_get(c, j->id, &e, &j->found)) != DB_OK || !j->found)
        return st == DB_OK ? DB_ROLLBACK : st;
    bit = webhook_event_bit(e.event_type);
    detail[0] = '\0';
    for (size_t i = 0; i < j->neps; i++) {
        if ((j->eps[i].events & bit) == 0)
            continue;
        if ((st = replay_to(c, j->id, j->eps[i].name)) != DB_OK)
            return st;
        used += (size_t)snprintf(detail + used, used < sizeof(detail) ? sizeof(detail) - used : 0,
                                 "%s%s", j->sent ? "," : "to ", j->eps[i].name);
        j->sent++;
    }
    if (j->sent == 0)
        return DB_ROLLBACK;
    snprintf(subject, sizeof(subject), "outbox:%llu", (unsigned long long)j->id);
    return audit_append(c, j->actor, "outbox.replay", subject, detail, j->request_id);
}

enum db_status outbox_replay(struct db_conn *c, uint64_t id, const struct webhook_endpoint_cfg *eps,
                             size_t neps, const char *actor, const char *request_id, bool *found,
                             size_t *sent)
{
    struct replay_job j = {
        .id = id, .eps = eps, .neps = neps, .actor = actor, .request_id = request_id
    };
    enum db_status st = db_txn(c, replay_txn, &j);

    *found = j.found;
    *sent = st == DB_OK ? j.sent : 0;
    return st == DB_ROLLBACK ? DB_OK : st;
}

struct since_job {
    const struct outbox_replay_since *q;
    const char *actor, *request_id;
    struct db_row *rows;
    size_t n, read;
    uint64_t last;
};

static enum db_status since_txn(struct db_conn *c, void *arg)
{
    struct since_job *j = arg;
    const struct outbox_replay_since *q = j->q;
    char after[DB_INT_BUF], max[DB_INT_BUF], detail[255], idb[DB_INT_BUF];
    const char *p[] = { q->since, db_param_int(after, (int64_t)q->after),
                        db_param_int(max, (int64_t)q->max) };
    char type[OUTBOX_TYPE_MAX + 1];
    size_t got = 0;
    enum db_status st;

    j->n = 0;
    j->last = q->after;
    if ((st = db_query(c, ST_REPLAY_SINCE, p, 3, j->rows, q->max, &got)) != DB_OK)
        return st;
    j->read = got;
    for (size_t i = 0; i < got; i++) {
        int64_t id;
        unsigned bit;
        bool sent = false;

        if (db_row_int(&j->rows[i], FOC_ID, 1, INT64_MAX, &id) != 0 ||
            db_row_str(&j->rows[i], FOC_EVENT_TYPE, type, sizeof(type)) != 0)
            return db_fail(c, "outbox: malformed event row");
        j->last = (uint64_t)id;
        bit = webhook_event_bit(type);
        if ((q->types & bit) == 0)
            continue;
        for (size_t e = 0; e < q->neps; e++) {
            if ((q->eps[e].events & bit) == 0)
                continue;
            if ((st = replay_to(c, (uint64_t)id, q->eps[e].name)) != DB_OK)
                return st;
            sent = true;
        }
        j->n += sent;
    }
    if (j->n == 0)
        return DB_OK; /* nothing changed: nothing to audit */
    snprintf(detail, sizeof(detail), "since %s after %s: %zu events to %zu endpoints", q->since,
             db_param_int(idb, (int64_t)q->after), j->n, q->neps);
    return audit_append(c, j->actor, "outbox.replay", "outbox:since", detail, j->request_id);
}

enum db_status outbox_replay_since(struct db_conn *c, const struct outbox_replay_since *q,
                                   const char *actor, const char *request_id, size_t *n,
                                   size_t *read, uint64_t *last)
{
    struct since_job j = { .q = q, .actor = actor, .request_id = request_id };
    enum db_status st;

    *n = 0;
    *read = 0;
    *last = q->after;
    if (q->max == 0)
        return DB_OK;
    if ((j.rows = calloc(q->max, sizeof(*j.rows))) == NULL)
        return db_fail(c, "outbox: out of memory");
    st = db_txn(c, since_txn, &j);
    free(j.rows);
    if (st == DB_OK) {
        *n = j.n;
        *read = j.read;
        *last = j.last;
    }
    return st;
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

enum db_status outbox_deliveries(struct db_conn *c, struct outbox_entry *e)
{
    char idb[DB_INT_BUF];
    const char *p[] = { db_param_int(idb, (int64_t)e->id) };
    struct db_row rows[WEBHOOKS_MAX];
    size_t got = 0;
    enum db_status st = db_query_retry(c, ST_OUTBOX_DELIVERIES, p, 1, rows, WEBHOOKS_MAX, &got);

    e->ndeliveries = 0;
    for (size_t i = 0; st == DB_OK && i < got; i++) {
        struct outbox_delivery *d = &e->deliveries[i];
        int64_t state, attempts;

        memset(d, 0, sizeof(*d));
        if (db_row_str(&rows[i], ODC_ENDPOINT, d->endpoint, sizeof(d->endpoint)) != 0 ||
            db_row_int(&rows[i], ODC_STATE, OUTBOX_PENDING, OUTBOX_DEAD, &state) != 0 ||
            db_row_int(&rows[i], ODC_ATTEMPTS, 0, INT32_MAX, &attempts) != 0 ||
            db_row_str(&rows[i], ODC_NEXT_ATTEMPT, d->next_attempt_at,
                       sizeof(d->next_attempt_at)) != 0 ||
            opt_str(&rows[i], ODC_PUBLISHED, d->delivered_at, sizeof(d->delivered_at)) != 0 ||
            opt_str(&rows[i], ODC_LAST_ERROR, d->last_error, sizeof(d->last_error)) != 0) {
            st = db_fail(c, "outbox: malformed delivery row");
            break;
        }
        d->state = (int)state;
        d->attempts = (int)attempts;
        e->ndeliveries = i + 1;
    }
    return st;
}

enum db_status outbox_list_filtered(struct db_conn *c, const struct outbox_filter *f,
                                    uint64_t after_id, struct outbox_entry *out, size_t max,
                                    size_t *n)
{
    char stb[DB_INT_BUF], after[DB_INT_BUF], lim[DB_INT_BUF];
    const char *state = f->state < 0 ? NULL : db_param_int(stb, f->state);
    const char *po[] = { f->order_no, state, state, db_param_int(after, (int64_t)after_id),
                         db_param_int(lim, (int64_t)max) };
    const char *pe[] = { f->endpoint, state, after, lim };
    struct db_row *rows;
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (f->order_no == NULL && f->endpoint == NULL) {
        st = outbox_list(c, f->state, after_id, out, max, &got);
    } else {
        if ((rows = calloc(max ? max : 1, sizeof(*rows))) == NULL)
            return db_fail(c, "outbox: out of memory");
        if (f->order_no != NULL)
            st = db_query_retry(c, ST_OUTBOX_LIST_ORDER, po, 5, rows, max, &got);
        else
            st = db_query_retry(c, ST_OUTBOX_LIST_AT, pe, 4, rows, max, &got);
        for (i = 0; st == DB_OK && i < got; i++)
            if (read_entry(&rows[i], &out[i], false) != 0)
                st = db_fail(c, "outbox: malformed event row");
        free(rows);
    }
    for (i = 0; st == DB_OK && i < got; i++)
        st = outbox_deliveries(c, &out[i]);
    if (st == DB_OK)
        *n = got;
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

/* One filtered listing over the shards. */
struct filtered_job {
    const struct outbox_filter *f;
    size_t first;
    uint64_t after;
    struct outbox_entry *items;
    size_t limit, n;
};

static enum route_step filtered_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct filtered_job *j = arg;
    size_t got = 0, i;
    enum db_status st = outbox_list_filtered(c, j->f, sh->index == j->first ? j->after : 0,
                                             j->items + j->n, j->limit - j->n, &got);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->items[j->n + i].shard = sh->index;
    j->n += got;
    return j->n == j->limit ? ROUTE_STOP : ROUTE_NEXT;
}

enum route_result outbox_route_list(const struct route *rt, const struct outbox_filter *f,
                                    size_t first, uint64_t after, struct outbox_entry *items,
                                    size_t limit, size_t *n, struct route_scan *sc)
{
    struct filtered_job j = { f, first, after, items, limit, 0 };
    enum route_result r = ROUTE_OK;
    const struct shard *sh;
    struct route_hop h;
    enum db_status st;

    *n = 0;
    if (f->order_no == NULL) {
        r = route_scan(rt, first, "outbox_list", filtered_shard, &j, sc);
        *n = j.n;
        return r;
    }
    /* An order lives on one shard: only that one is read. */
    memset(sc, 0, sizeof(*sc));
    if ((sh = shard_of_order(rt->set, f->order_no)) == NULL)
        return ROUTE_OK;
    sc->asked = 1;
    route_hop_init(&h, rt, &sc->fail);
    if (route_hop_to(&h, sh, "outbox_list") == NULL)
        return ROUTE_UNAVAILABLE;
    if ((st = outbox_list_filtered(h.c, f, after, items, limit, n)) != DB_OK) {
        route_failed(&h, route_retryable(st), "outbox_list");
        r = route_retryable(st) ? ROUTE_UNAVAILABLE : ROUTE_FAILED;
        *n = 0;
    }
    for (size_t i = 0; i < *n; i++)
        items[i].shard = sh->index;
    route_hop_release(&h);
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
    if ((st = outbox_get(h.c, id, e, found)) != DB_OK ||
        (*found && (st = outbox_deliveries(h.c, e)) != DB_OK)) {
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

enum route_result outbox_route_replay(const struct route *rt, const struct shard *sh, uint64_t id,
                                      const struct webhook_endpoint_cfg *eps, size_t neps,
                                      const char *actor, bool *found, size_t *sent,
                                      struct route_failure *fail)
{
    enum route_result r = ROUTE_OK;
    struct route_hop h;
    enum db_status st;

    *found = false;
    *sent = 0;
    route_hop_init(&h, rt, fail);
    if (route_hop_to(&h, sh, "outbox_replay") == NULL)
        return ROUTE_UNAVAILABLE;
    if ((st = outbox_replay(h.c, id, eps, neps, actor, rt->request_id, found, sent)) != DB_OK) {
        route_failed(&h, route_retryable(st), "outbox_replay");
        r = route_retryable(st) ? ROUTE_UNAVAILABLE : ROUTE_FAILED;
    }
    route_hop_release(&h);
    return r;
}

/* A replay since a time over the shards, from shard index first on. */
struct since_scan {
    struct outbox_replay_since q;
    size_t first, limit, n, read;
    const char *actor, *request_id;
    size_t last_shard;
    uint64_t last;
};

static enum route_step since_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct since_scan *j = arg;
    struct outbox_replay_since q = j->q;
    size_t got = 0, read = 0;
    uint64_t last = 0;
    enum db_status st;

    q.after = sh->index == j->first ? j->q.after : 0;
    q.max = j->limit - j->read;
    st = outbox_replay_since(c, &q, j->actor, j->request_id, &got, &read, &last);
    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    j->n += got;
    j->read += read;
    j->last_shard = sh->index;
    j->last = last;
    return j->read >= j->limit ? ROUTE_STOP : ROUTE_NEXT;
}

enum route_result outbox_route_replay_since(const struct route *rt,
                                            const struct outbox_replay_since *q, size_t first,
                                            const char *actor, size_t *n, size_t *last_shard,
                                            uint64_t *last, bool *more, struct route_scan *sc)
{
    struct since_scan j = { .q = *q,
                            .first = first,
                            .limit = q->max,
                            .actor = actor,
                            .request_id = rt->request_id,
                            .last_shard = first,
                            .last = q->after };
    enum route_result r = route_scan(rt, first, "outbox_replay_since", since_shard, &j, sc);

    *n = j.n;
    *last_shard = j.last_shard;
    *last = j.last;
    *more = j.read >= j.limit;
    return r;
}
