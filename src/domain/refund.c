/* refund.c - refund records: the creating transaction with its sum check,
 * approval, retry, listing, and the state changes the relay and the
 * gateways' notifications make, each with its audit row or outbox event in
 * the same transaction. */
#include "refund.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "currency.h"
#include "gateway.h"
#include "ids.h"
#include "money.h"
#include "order_state.h"
#include "refunds.h"

static const char *const state_names[] = { "AWAITING_APPROVAL", "REQUESTED", "SUBMITTED",
                                           "SUCCEEDED",         "FAILED",    "UNKNOWN" };

const char *refund_state_name(int state)
{
    return state >= 0 && state <= REFUND_UNKNOWN ? state_names[state] : "UNKNOWN_STATE";
}

int refund_state_from_name(const char *name)
{
    for (int i = 0; i <= REFUND_UNKNOWN; i++)
        if (strcmp(name, state_names[i]) == 0)
            return i;
    return -1;
}

const char *refund_origin_name(int origin)
{
    switch (origin) {
    case REFUND_ORIGIN_OPERATOR: return "OPERATOR";
    case REFUND_ORIGIN_DOUBLE_PAYMENT: return "DOUBLE_PAYMENT";
    case REFUND_ORIGIN_CANCEL: return "CANCEL";
    case REFUND_ORIGIN_MANUAL: return "MANUAL";
    default: return "UNKNOWN";
    }
}

static int opt_str(const struct db_row *r, unsigned int col, char *out, size_t outsz)
{
    if (db_row_is_null(r, col)) {
        out[0] = '\0';
        return 0;
    }
    return db_row_str(r, col, out, outsz);
}

static int read_refund(const struct db_row *r, struct refund *e)
{
    int64_t id, state, origin, attempts;

    memset(e, 0, sizeof(*e));
    if (db_row_int(r, RRC_ID, 1, INT64_MAX, &id) != 0 ||
        db_row_str(r, RRC_REFUND_NO, e->refund_no, sizeof(e->refund_no)) != 0 ||
        db_row_str(r, RRC_PAY_NO, e->pay_no, sizeof(e->pay_no)) != 0 ||
        db_row_str(r, RRC_ORDER_NO, e->order_no, sizeof(e->order_no)) != 0 ||
        opt_str(r, RRC_GATEWAY, e->gateway, sizeof(e->gateway)) != 0 ||
        db_row_cents(r, RRC_AMOUNT, &e->amount_cents) != 0 ||
        db_row_str(r, RRC_CURRENCY, e->currency, sizeof(e->currency)) != 0 ||
        db_row_int(r, RRC_STATE, 0, REFUND_UNKNOWN, &state) != 0 ||
        db_row_int(r, RRC_ORIGIN, 1, REFUND_ORIGIN_MANUAL, &origin) != 0 ||
        opt_str(r, RRC_REASON, e->reason, sizeof(e->reason)) != 0 ||
        opt_str(r, RRC_REQUESTED_BY, e->requested_by, sizeof(e->requested_by)) != 0 ||
        opt_str(r, RRC_APPROVED_BY, e->approved_by, sizeof(e->approved_by)) != 0 ||
        opt_str(r, RRC_GATEWAY_REFUND_ID, e->gateway_refund_id, sizeof(e->gateway_refund_id)) !=
            0 ||
        opt_str(r, RRC_FAILURE_CODE, e->failure_code, sizeof(e->failure_code)) != 0 ||
        opt_str(r, RRC_LAST_ERROR, e->last_error, sizeof(e->last_error)) != 0 ||
        db_row_int(r, RRC_ATTEMPTS, 0, INT32_MAX, &attempts) != 0 ||
        db_row_str(r, RRC_CREATE_TIME, e->create_time, sizeof(e->create_time)) != 0 ||
        db_row_str(r, RRC_UPDATE_TIME, e->update_time, sizeof(e->update_time)) != 0 ||
        opt_str(r, RRC_FINISHED_AT, e->finished_at, sizeof(e->finished_at)) != 0 ||
        db_row_str(r, RRC_NEXT_ATTEMPT, e->next_attempt_at, sizeof(e->next_attempt_at)) != 0 ||
        db_row_cents(r, RRC_PAY_AMOUNT, &e->pay_amount_cents) != 0)
        return -1;
    e->id = (uint64_t)id;
    e->state = (int)state;
    e->origin = (int)origin;
    e->attempts = (int)attempts;
    return 0;
}

/* One refund by statement id and its one key parameter. */
static enum db_status get_by(struct db_conn *c, enum db_stmt id, const char *key,
                             struct refund *out, bool *found)
{
    const char *p[] = { key };
    struct db_row row;
    enum db_status st;

    *found = false;
    if ((st = db_query_one(c, id, p, 1, &row, found)) != DB_OK || !*found)
        return st;
    if (read_refund(&row, out) != 0)
        return db_fail(c, "refund: malformed refund row for %s", key);
    return DB_OK;
}

enum db_status refund_get(struct db_conn *c, const char *refund_no, struct refund *out, bool *found)
{
    memset(out, 0, sizeof(*out));
    return get_by(c, ST_RF_GET, refund_no, out, found);
}

enum db_status refund_note_gateway(struct db_conn *c, const char *pay_no, const char *gateway)
{
    const char *p[] = { gateway, pay_no };

    return db_exec_retry(c, ST_PAY_SET_GATEWAY, p, 2, NULL);
}

int refund_event_payload(const struct refund *r, char *out, size_t outsz)
{
    char amount[32];
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    int rc = -1;

    if (o == NULL)
        return -1;
    money_format(r->amount_cents, amount, sizeof(amount));
    if (cJSON_AddStringToObject(o, "order_no", r->order_no) == NULL ||
        cJSON_AddStringToObject(o, "pay_no", r->pay_no) == NULL ||
        cJSON_AddStringToObject(o, "refund_no", r->refund_no) == NULL ||
        cJSON_AddStringToObject(o, "amount", amount) == NULL ||
        cJSON_AddStringToObject(o, "currency", r->currency) == NULL ||
        cJSON_AddStringToObject(o, "gateway", r->gateway) == NULL ||
        cJSON_AddStringToObject(o, "state", refund_state_name(r->state)) == NULL ||
        cJSON_AddStringToObject(o, "origin", refund_origin_name(r->origin)) == NULL)
        goto out;
    if (r->failure_code[0] != '\0' &&
        cJSON_AddStringToObject(o, "failure_code", r->failure_code) == NULL)
        goto out;
    if ((text = cJSON_PrintUnformatted(o)) == NULL || strlen(text) >= outsz)
        goto out;
    memcpy(out, text, strlen(text) + 1);
    rc = 0;
out:
    cJSON_free(text);
    cJSON_Delete(o);
    return rc;
}

/* ---- create --------------------------------------------------------------- */

struct create_job {
    const struct shard_set *set;
    const struct shard *sh;
    const struct refund_create_req *cr;
    struct refund *out;
    enum refund_result result;
};

/* The payment locked, with its order's currency. */
struct locked_payment {
    char order_no[ID_BUF];
    int64_t amount_cents;
    int status;
    char gateway[33];
    char currency[4];
};

static enum db_status lock_payment(struct db_conn *c, const char *pay_no, struct locked_payment *p,
                                   bool *found)
{
    const char *key[] = { pay_no }, *ord[1];
    struct db_row row;
    int64_t status;
    enum db_status st;
    bool has_order = false;

    memset(p, 0, sizeof(*p));
    if ((st = db_query_one(c, ST_RF_PAY_LOCK, key, 1, &row, found)) != DB_OK || !*found)
        return st;
    if (db_row_str(&row, RPC_ORDER_NO, p->order_no, sizeof(p->order_no)) != 0 ||
        db_row_cents(&row, RPC_AMOUNT, &p->amount_cents) != 0 ||
        db_row_int(&row, RPC_STATUS, PAYMENT_PAID, PAYMENT_REFUND_SETTLED, &status) != 0 ||
        opt_str(&row, RPC_GATEWAY, p->gateway, sizeof(p->gateway)) != 0)
        return db_fail(c, "refund: malformed payment row %s", pay_no);
    p->status = (int)status;
    ord[0] = p->order_no;
    if ((st = db_query_one(c, ST_ORDER_CURRENCY, ord, 1, &row, &has_order)) != DB_OK)
        return st;
    if (!has_order || db_row_str(&row, OCC_CURRENCY, p->currency, sizeof(p->currency)) != 0)
        return db_fail(c, "refund: payment %s has no readable order %s", pay_no, p->order_no);
    return DB_OK;
}

/* The state a new refund starts in: an automatic one as its gateway's
 * profile says, an operator's as asked. */
static int initial_state(const struct refund_create_req *cr, const struct gateway *gw)
{
    bool approved = cr->origin == REFUND_ORIGIN_OPERATOR ? cr->approved : gw->cfg->refund_auto;

    return approved ? REFUND_REQUESTED : REFUND_AWAITING_APPROVAL;
}

/* Inserts the refund under a newly drawn number, written to refund_no. */
static enum db_status insert_refund(struct db_conn *c, struct create_job *j,
                                    const struct locked_payment *p, const char *dedupe,
                                    int64_t amount, int state, char refund_no[ID_BUF])
{
    const struct refund_create_req *cr = j->cr;
    char tail[IDS_ORDER_NO_BUF], amt[32], stb[DB_INT_BUF], orb[DB_INT_BUF];
    const char *ins[] = { refund_no,
                          cr->pay_no,
                          p->order_no,
                          p->gateway,
                          money_format(amount, amt, sizeof(amt)),
                          p->currency,
                          db_param_int(stb, state),
                          db_param_int(orb, cr->origin),
                          dedupe,
                          cr->reason,
                          cr->actor };

    if (ids_order_no(tail) != 0)
        return db_fail(c, "refund: no randomness for a refund number");
    tail[0] = 'R';
    if (shard_order_no(j->set, j->sh, tail, refund_no, ID_BUF) != 0)
        return db_fail(c, "refund: refund number does not fit");
    return db_exec(c, ST_RF_INSERT, ins, 11, NULL);
}

/* The refunds of the payment so far (not FAILED), into *refunded. */
static enum db_status refunded_sum(struct db_conn *c, const char *pay_no, int64_t *refunded)
{
    char failed[DB_INT_BUF];
    const char *p[] = { pay_no, db_param_int(failed, REFUND_FAILED) };
    struct db_row row;
    enum db_status st;
    bool found = false;

    *refunded = 0;
    if ((st = db_query_one(c, ST_RF_SUM, p, 2, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_cents(&row, 0, refunded) != 0)
        return db_fail(c, "refund: unreadable refund sum of %s", pay_no);
    return DB_OK;
}

/* Refuses (DB_ROLLBACK with j->result set) what may not be refunded:
 * a second automatic refund, a gateway without a refund API, a payment
 * refunded by hand. */
static enum db_status admissible(struct db_conn *c, struct create_job *j,
                                 const struct locked_payment *p, const char *dedupe,
                                 const struct gateway **gw)
{
    const struct refund_create_req *cr = j->cr;
    enum db_status st;
    bool found = false;

    if (dedupe[0] != '\0') {
        if ((st = get_by(c, ST_RF_BY_DEDUPE, dedupe, j->out, &found)) != DB_OK)
            return st;
        if (found) {
            j->result = REFUND_DUPLICATE;
            return DB_ROLLBACK;
        }
    }
    *gw = p->gateway[0] != '\0' && cr->gw != NULL ? gateways_find(cr->gw, p->gateway) : NULL;
    if (*gw == NULL || (*gw)->cfg->refund_url[0] == '\0') {
        j->result = REFUND_MANUAL;
        return DB_ROLLBACK;
    }
    if (p->status == PAYMENT_REFUND_SETTLED) { /* refunded by hand at the gateway */
        j->result = REFUND_ILLEGAL;
        return DB_ROLLBACK;
    }
    return DB_OK;
}

static enum db_status settle_if_full(struct db_conn *c, const char *pay_no, int64_t pay_amount,
                                     const char *reference);

/* An automatic refund (a double payment's, a cancel's) of a payment that
 * other refunds gave back already: none is made, and once they all
 * succeeded the payment leaves the refund queue, settled under the newest
 * of them (else the sweep would ask for it again, every time).
 * REFUND_EXCEEDS, committed. */
static enum db_status nothing_left(struct db_conn *c, struct create_job *j,
                                   const struct locked_payment *p)
{
    char ok[DB_INT_BUF], newest[ID_BUF];
    const char *np[] = { j->cr->pay_no, db_param_int(ok, REFUND_SUCCEEDED) };
    struct db_row row;
    enum db_status st;
    bool found = false;

    snprintf(j->out->pay_no, sizeof(j->out->pay_no), "%s", j->cr->pay_no);
    j->result = REFUND_EXCEEDS;
    if (p->status != PAYMENT_REFUND_REQUIRED)
        return DB_ROLLBACK;
    if ((st = db_query_one(c, ST_RF_NEWEST_IN, np, 2, &row, &found)) != DB_OK)
        return st;
    if (!found)
        return DB_ROLLBACK;
    if (db_row_str(&row, 0, newest, sizeof(newest)) != 0)
        return db_fail(c, "refund: malformed refund row of %s", j->cr->pay_no);
    return settle_if_full(c, j->cr->pay_no, p->amount_cents, newest);
}

/* A refund is in its payment's currency, and its amount is a whole number
 * of that currency's minor units (the gateways are sent those):
 * REFUND_OK, REFUND_CURRENCY or REFUND_INEXACT. */
static enum refund_result currency_refusal(const struct refund_create_req *cr,
                                           const struct locked_payment *p, int64_t amount)
{
    int64_t minor = 0;

    if (cr->currency != NULL && strcmp(cr->currency, p->currency) != 0)
        return REFUND_CURRENCY;
    if (currency_cents_to_minor(p->currency, amount, &minor) != CURRENCY_OK)
        return REFUND_INEXACT;
    return REFUND_OK;
}

static enum db_status create_txn(struct db_conn *c, void *arg)
{
    struct create_job *j = arg;
    const struct refund_create_req *cr = j->cr;
    char dedupe[ID_BUF + 16] = "", detail[200], amt[32], refund_no[ID_BUF];
    const struct gateway *gw = NULL;
    struct locked_payment p;
    int64_t refunded = 0, amount = cr->amount_cents;
    enum db_status st;
    bool found = false, lost = false;
    int state;

    memset(j->out, 0, sizeof(*j->out));
    j->result = REFUND_ERROR;
    if ((st = lock_payment(c, cr->pay_no, &p, &found)) != DB_OK)
        return st;
    if (!found) {
        j->result = REFUND_NOT_FOUND;
        return DB_ROLLBACK;
    }
    if (cr->origin != REFUND_ORIGIN_OPERATOR)
        snprintf(dedupe, sizeof(dedupe), "%s:%s",
                 cr->origin == REFUND_ORIGIN_CANCEL ? "cancel" : "double", cr->pay_no);
    if ((st = admissible(c, j, &p, dedupe, &gw)) != DB_OK)
        return st;
    if ((st = refunded_sum(c, cr->pay_no, &refunded)) != DB_OK)
        return st;
    if (amount == 0)
        amount = p.amount_cents - refunded;
    if (amount <= 0 && cr->origin != REFUND_ORIGIN_OPERATOR)
        return nothing_left(c, j, &p); /* other refunds gave it back, or are giving it back */
    if (amount <= 0 || refunded + amount > p.amount_cents) {
        snprintf(j->out->pay_no, sizeof(j->out->pay_no), "%s", cr->pay_no);
        j->out->amount_cents = amount > 0 ? amount : 0;
        j->out->pay_amount_cents = p.amount_cents - refunded; /* what is left */
        j->result = REFUND_EXCEEDS;
        return DB_ROLLBACK;
    }
    if ((j->result = currency_refusal(cr, &p, amount)) != REFUND_OK) {
        snprintf(j->out->currency, sizeof(j->out->currency), "%s", p.currency);
        j->out->amount_cents = amount;
        return DB_ROLLBACK;
    }
    state = initial_state(cr, gw);
    if ((st = insert_refund(c, j, &p, dedupe[0] ? dedupe : NULL, amount, state, refund_no)) !=
        DB_OK)
        return st == DB_DUPLICATE ? DB_RETRY : st; /* the same 64 random bits: draw again */
    snprintf(detail, sizeof(detail), "pay_no=%s amount=%s origin=%s state=%s", cr->pay_no,
             money_format(amount, amt, sizeof(amt)), refund_origin_name(cr->origin),
             refund_state_name(state));
    if ((st = audit_append(c, cr->actor, "refund.request", refund_no, detail, cr->request_id)) !=
        DB_OK)
        return st;
    if ((st = get_by(c, ST_RF_GET, refund_no, j->out, &found)) != DB_OK)
        return st;
    if (!found)
        return db_fail(c, "refund: %s vanished in its own transaction", refund_no);
    j->result = REFUND_OK;
    if (cr->hook != NULL) {
        st = cr->hook->fn(c, j->out, cr->hook->arg);
        if (st == DB_ROLLBACK)
            lost = true;
        if (st != DB_OK) {
            j->result = lost ? REFUND_ABORTED : REFUND_ERROR;
            return st;
        }
    }
    return DB_OK;
}

enum refund_result refund_create(struct db_conn *c, const struct shard_set *set,
                                 const struct shard *sh, const struct refund_create_req *cr,
                                 struct refund *out)
{
    struct create_job j = { set, sh, cr, out, REFUND_ERROR };
    enum db_status st = db_txn(c, create_txn, &j);

    if (st == DB_OK || st == DB_ROLLBACK)
        return j.result;
    return DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR);
}

/* ---- operator changes ------------------------------------------------------ */

struct change_job {
    const struct refund_change_req *rq;
    struct refund *out;
    enum refund_result result;
};

static const char *const change_actions[] = { "refund.approve", "refund.retry", "refund.reject" };

/* The ledger's word on a change that would send rf: its payment, locked,
 * must not be settled (refunded outside the service, or by another refund
 * in full). DB_ROLLBACK with j->result REFUND_SETTLED otherwise. */
static enum db_status payment_open(struct db_conn *c, struct change_job *j)
{
    struct locked_payment p;
    enum db_status st;
    bool found = false;

    if ((st = lock_payment(c, j->out->pay_no, &p, &found)) != DB_OK)
        return st;
    if (!found)
        return db_fail(c, "refund: %s has no payment %s", j->out->refund_no, j->out->pay_no);
    if (p.status == PAYMENT_REFUND_SETTLED) {
        j->result = REFUND_SETTLED;
        return DB_ROLLBACK;
    }
    return DB_OK;
}

/* Refuses (DB_ROLLBACK with j->result) a change the refund's state, its
 * payment or the four-eyes rule does not allow. */
static enum db_status changeable(struct db_conn *c, struct change_job *j)
{
    const struct refund_change_req *rq = j->rq;
    int from = j->out->state;
    bool rejected = from == REFUND_FAILED && strcmp(j->out->failure_code, REFUND_REJECTED) == 0;

    switch (rq->op) {
    case REFUND_CHANGE_APPROVE: /* approved before: a duplicate; a FAILED one is final */
        if (from != REFUND_AWAITING_APPROVAL) {
            j->result = from == REFUND_FAILED ? REFUND_ILLEGAL : REFUND_DUPLICATE;
            return DB_ROLLBACK;
        }
        break;
    case REFUND_CHANGE_REJECT: /* only a refund nothing was sent for yet */
        if (from != REFUND_AWAITING_APPROVAL) {
            j->result = rejected ? REFUND_DUPLICATE : REFUND_ILLEGAL;
            return DB_ROLLBACK;
        }
        break;
    default:
        if (from != REFUND_REQUESTED && from != REFUND_SUBMITTED && from != REFUND_UNKNOWN) {
            j->result = REFUND_ILLEGAL;
            return DB_ROLLBACK;
        }
        break;
    }
    if (rq->op == REFUND_CHANGE_APPROVE && rq->approver_must_differ &&
        strcmp(j->out->requested_by, rq->actor) == 0) {
        j->result = REFUND_SAME_ACTOR;
        return DB_ROLLBACK;
    }
    return rq->op == REFUND_CHANGE_REJECT ? DB_OK : payment_open(c, j);
}

static enum db_status change_txn(struct db_conn *c, void *arg)
{
    struct change_job *j = arg;
    const struct refund_change_req *rq = j->rq;
    char a0[DB_INT_BUF], a1[DB_INT_BUF], s0[DB_INT_BUF], s1[DB_INT_BUF], s2[DB_INT_BUF];
    char detail[96], why[REFUND_ERROR_MAX];
    const char *ap[] = { db_param_int(a0, REFUND_REQUESTED), rq->actor, rq->refund_no,
                         db_param_int(a1, REFUND_AWAITING_APPROVAL) };
    const char *rp[] = { rq->refund_no, db_param_int(s0, REFUND_REQUESTED),
                         db_param_int(s1, REFUND_SUBMITTED), db_param_int(s2, REFUND_UNKNOWN) };
    char j0[DB_INT_BUF], j1[DB_INT_BUF];
    const char *jp[] = { db_param_int(j0, REFUND_FAILED), REFUND_REJECTED, why, rq->refund_no,
                         db_param_int(j1, REFUND_AWAITING_APPROVAL) };
    char payload[OUTBOX_PAYLOAD_MAX];
    uint64_t rows = 0;
    enum db_status st;
    bool found = false;
    int from;

    j->result = REFUND_ERROR;
    if ((st = get_by(c, ST_RF_GET, rq->refund_no, j->out, &found)) != DB_OK)
        return st;
    if (!found) {
        j->result = REFUND_NOT_FOUND;
        return DB_ROLLBACK;
    }
    from = j->out->state;
    if ((st = changeable(c, j)) != DB_OK)
        return st;
    snprintf(why, sizeof(why), "rejected by %s", rq->actor);
    switch (rq->op) {
    case REFUND_CHANGE_APPROVE: st = db_exec(c, ST_RF_APPROVE, ap, 4, &rows); break;
    case REFUND_CHANGE_RETRY: st = db_exec(c, ST_RF_DUE_NOW, rp, 4, &rows); break;
    default: st = db_exec(c, ST_RF_REJECT, jp, 5, &rows); break;
    }
    if (st != DB_OK)
        return st;
    if (rows != 1 && rq->op != REFUND_CHANGE_RETRY)
        return DB_RETRY; /* changed between the read and the update */
    snprintf(detail, sizeof(detail), "from=%s", refund_state_name(from));
    if ((st = audit_append(c, rq->actor, change_actions[rq->op], rq->refund_no, detail,
                           rq->request_id)) != DB_OK)
        return st;
    if ((st = get_by(c, ST_RF_GET, rq->refund_no, j->out, &found)) != DB_OK)
        return st;
    if (rq->op == REFUND_CHANGE_REJECT) { /* the shop hears of it as of any refund that failed */
        if (refund_event_payload(j->out, payload, sizeof(payload)) != 0)
            return db_fail(c, "refund: event payload of %s does not fit", rq->refund_no);
        if ((st = outbox_append_subject(c, OUTBOX_REFUND_FAILED, j->out->order_no, rq->refund_no,
                                        payload)) != DB_OK)
            return st;
    }
    j->result = REFUND_OK;
    return DB_OK;
}

enum refund_result refund_change(struct db_conn *c, const struct refund_change_req *rq,
                                 struct refund *out)
{
    struct change_job j = { rq, out, REFUND_ERROR };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    st = db_txn(c, change_txn, &j);
    if (st == DB_OK || st == DB_ROLLBACK)
        return j.result;
    return DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR);
}

/* ---- listing --------------------------------------------------------------- */

enum db_status refund_list(struct db_conn *c, const struct refund_filter *f, uint64_t after_id,
                           struct refund *out, size_t max, size_t *n)
{
    char stb[DB_INT_BUF], age[DB_INT_BUF], after[DB_INT_BUF], lim[DB_INT_BUF];
    const char *state = f->state >= 0 ? db_param_int(stb, f->state) : NULL;
    const char *older = f->older_s > 0 ? db_param_int(age, f->older_s) : NULL;
    const char *p[] = { state,
                        state,
                        f->gateway,
                        f->gateway,
                        older,
                        older,
                        f->pay_no,
                        f->pay_no,
                        db_param_int(after, (int64_t)after_id),
                        db_param_int(lim, (int64_t)max) };
    struct db_row *rows;
    enum db_status st;
    size_t got = 0, i;

    *n = 0;
    if (max > REFUND_LIST_MAX)
        max = REFUND_LIST_MAX;
    if (max == 0)
        return DB_OK;
    if ((rows = calloc(max, sizeof(*rows))) == NULL)
        return db_fail(c, "refund: out of memory");
    st = db_query_retry(c, ST_RF_LIST, p, 10, rows, max, &got);
    for (i = 0; st == DB_OK && i < got; i++)
        if (read_refund(&rows[i], &out[i]) != 0)
            st = db_fail(c, "refund: malformed refund row");
    free(rows);
    if (st == DB_OK)
        *n = got;
    return st;
}

/* ---- the relay's steps ----------------------------------------------------- */

#define CLAIM_SPARE 8 /* candidates read past max, for those another claim takes first */

struct claim_one_job {
    const char *owner;
    int lease_s;
    const char *id, *pay_no;
    struct refund *out;
    bool claimed;
};

/* Leases one due refund, under its payment's lock, when no other refund of
 * the payment holds a lease: the candidates were read without a lock, so
 * two claims may race for two refunds of one payment, and the lock makes
 * the second see the first's lease. A refund whose payment row is gone is
 * left alone. */
static enum db_status claim_one_txn(struct db_conn *c, void *arg)
{
    struct claim_one_job *j = arg;
    char lease[DB_INT_BUF], s0[DB_INT_BUF], s1[DB_INT_BUF], s2[DB_INT_BUF];
    const char *pay[] = { j->pay_no }, *other[] = { j->pay_no, j->id };
    const char *up[] = { j->owner,
                         db_param_int(lease, j->lease_s),
                         j->id,
                         db_param_int(s0, REFUND_REQUESTED),
                         db_param_int(s1, REFUND_SUBMITTED),
                         db_param_int(s2, REFUND_UNKNOWN) };
    const char *key[] = { j->id };
    struct db_row row;
    enum db_status st;
    int64_t leased = 0;
    uint64_t rows = 0;
    bool found = false;

    j->claimed = false;
    if ((st = db_query_one(c, ST_RF_PAY_LOCK, pay, 1, &row, &found)) != DB_OK || !found)
        return st;
    if ((st = db_query_one(c, ST_RF_LEASED_OTHER, other, 2, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_int(&row, 0, 0, INT64_MAX, &leased) != 0)
        return db_fail(c, "refund: unreadable count of leased refunds");
    if (leased > 0)
        return DB_OK;
    if ((st = db_exec(c, ST_RF_LEASE, up, 6, &rows)) != DB_OK || rows != 1)
        return st;
    if ((st = db_query_one(c, ST_RF_BY_ID, key, 1, &row, &found)) != DB_OK)
        return st;
    if (!found || read_refund(&row, j->out) != 0)
        return db_fail(c, "refund: malformed claimed refund %s", j->id);
    j->claimed = true;
    return DB_OK;
}

/* The due refunds of of (ST_RF_DUE or ST_RF_DUE_OTHERS), up to max. */
static enum db_status claim_candidates(struct db_conn *c, const struct refund_claim_of *of,
                                       struct db_row *rows, size_t max, size_t *n)
{
    char s0[DB_INT_BUF], s1[DB_INT_BUF], s2[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[3 + REFUND_CLAIM_OTHERS_MAX + 1] = { db_param_int(s0, REFUND_REQUESTED),
                                                       db_param_int(s1, REFUND_SUBMITTED),
                                                       db_param_int(s2, REFUND_UNKNOWN) };
    size_t i;

    db_param_int(lim, (int64_t)max);
    if (of->gateway != NULL) {
        p[3] = of->gateway;
        p[4] = lim;
        return db_query_retry(c, ST_RF_DUE, p, 5, rows, max, n);
    }
    for (i = 0; i < REFUND_CLAIM_OTHERS_MAX; i++)
        p[3 + i] = i < of->n_others ? of->others[i] : "";
    p[3 + REFUND_CLAIM_OTHERS_MAX] = lim;
    return db_query_retry(c, ST_RF_DUE_OTHERS, p, 3 + REFUND_CLAIM_OTHERS_MAX + 1, rows, max, n);
}

enum db_status refund_claim(struct db_conn *c, const char *owner, int lease_s,
                            const struct refund_claim_of *of, struct refund *out, size_t max,
                            size_t *n)
{
    struct claim_one_job j = { .owner = owner, .lease_s = lease_s };
    char pay_no[ID_BUF], id[DB_INT_BUF];
    struct db_row *rows = NULL;
    size_t got = 0, cand = 0, i, k;
    enum db_status st;
    int64_t v;

    *n = 0;
    if (max == 0)
        return DB_OK;
    if (of->gateway == NULL && of->n_others > REFUND_CLAIM_OTHERS_MAX)
        return db_fail(c, "refund: more than %d gateway profiles to leave out",
                       REFUND_CLAIM_OTHERS_MAX);
    if ((rows = calloc(max + CLAIM_SPARE, sizeof(*rows))) == NULL)
        return db_fail(c, "refund: out of memory");
    if ((st = claim_candidates(c, of, rows, max + CLAIM_SPARE, &cand)) != DB_OK)
        goto out;
    for (i = 0; i < cand && got < max; i++) {
        if (db_row_int(&rows[i], RDC_ID, 1, INT64_MAX, &v) != 0 ||
            db_row_str(&rows[i], RDC_PAY_NO, pay_no, sizeof(pay_no)) != 0) {
            st = db_fail(c, "refund: malformed due refund");
            goto out;
        }
        for (k = 0; k < got && strcmp(out[k].pay_no, pay_no) != 0; k++)
            ;
        if (k < got)
            continue; /* one refund of a payment per claim */
        j.id = db_param_int(id, v);
        j.pay_no = pay_no;
        j.out = &out[got];
        if ((st = db_txn(c, claim_one_txn, &j)) != DB_OK)
            goto out;
        got += j.claimed;
    }
out:
    free(rows);
    *n = got; /* what was leased stays leased, even when a later one failed */
    return st;
}

struct submitting_job {
    uint64_t id;
    const char *owner;
    bool held, refused;
    struct refund rf;
};

static enum db_status refund_finish_in(struct db_conn *c, const char *refund_no, int state,
                                       const char *gateway_refund_id, const char *failure_code,
                                       const char *error, struct refund *out);

/* Whether the ledger has room for rf: its payment (locked) not settled,
 * and its refunds not FAILED, rf's among them, within the payment. */
static enum db_status ledger_room(struct db_conn *c, const struct refund *rf, bool *room)
{
    struct locked_payment p;
    int64_t refunded = 0;
    enum db_status st;
    bool found = false;

    *room = false;
    if ((st = lock_payment(c, rf->pay_no, &p, &found)) != DB_OK)
        return st;
    if (!found || p.status == PAYMENT_REFUND_SETTLED)
        return DB_OK;
    if ((st = refunded_sum(c, rf->pay_no, &refunded)) != DB_OK)
        return st;
    *room = refunded <= p.amount_cents;
    return DB_OK;
}

static enum db_status submitting_txn(struct db_conn *c, void *arg)
{
    struct submitting_job *j = arg;
    char stb[DB_INT_BUF], idb[DB_INT_BUF];
    const char *p[] = { db_param_int(stb, REFUND_SUBMITTED), db_param_int(idb, (int64_t)j->id),
                        j->owner };
    uint64_t rows = 0;
    enum db_status st;
    bool found = false, room = false;

    j->held = j->refused = false;
    if ((st = get_by(c, ST_RF_BY_ID, idb, &j->rf, &found)) != DB_OK || !found)
        return st;
    if ((st = ledger_room(c, &j->rf, &room)) != DB_OK)
        return st;
    if (!room) {
        j->refused = true;
        if (j->rf.state != REFUND_REQUESTED)
            return DB_OK; /* it may have left before: the lease runs out, an operator decides */
        return refund_finish_in(c, j->rf.refund_no, REFUND_FAILED, NULL, REFUND_LEDGER_REFUSED,
                                "its payment was settled or has no room left", &j->rf);
    }
    if ((st = db_exec(c, ST_RF_SUBMITTING, p, 3, &rows)) != DB_OK)
        return st;
    j->held = rows == 1;
    return DB_OK;
}

enum db_status refund_mark_submitting(struct db_conn *c, uint64_t id, const char *owner, bool *held,
                                      bool *refused)
{
    struct submitting_job j = { .id = id, .owner = owner };
    enum db_status st = db_txn(c, submitting_txn, &j);

    *held = st == DB_OK && j.held;
    *refused = st == DB_OK && j.refused;
    return st;
}

enum db_status refund_mark_waiting(struct db_conn *c, uint64_t id, const char *owner, int state,
                                   const char *gateway_refund_id, const char *error,
                                   int64_t delay_ms)
{
    char stb[DB_INT_BUF], delay[DB_INT_BUF], idb[DB_INT_BUF], err[REFUND_ERROR_MAX];
    const char *p[] = { db_param_int(stb, state),
                        gateway_refund_id,
                        err,
                        db_param_int(delay, delay_ms),
                        db_param_int(idb, (int64_t)id),
                        owner };

    snprintf(err, sizeof(err), "%s", error != NULL ? error : "");
    return db_exec_retry(c, ST_RF_WAIT, p, 6, NULL);
}

struct finish_job {
    const char *refund_no, *gateway_refund_id, *failure_code, *error;
    int state;
    bool changed;
    struct refund *out;
};

/* A payment to refund (REFUND_REQUIRED: a double payment, or a canceled
 * order's) that its succeeded refunds gave back in full leaves the refund
 * queue: REFUND_SETTLED with reference (the refund that completed it) as
 * its reference. Nothing while any of it is still to give back. */
static enum db_status settle_if_full(struct db_conn *c, const char *pay_no, int64_t pay_amount,
                                     const char *reference)
{
    char settled[DB_INT_BUF], required[DB_INT_BUF], ok[DB_INT_BUF];
    const char *sp[] = { pay_no, db_param_int(ok, REFUND_SUCCEEDED) };
    const char *p[] = { db_param_int(settled, PAYMENT_REFUND_SETTLED), reference,
                        REFUND_ACTOR_SYSTEM, pay_no,
                        db_param_int(required, PAYMENT_REFUND_REQUIRED) };
    struct db_row row;
    int64_t succeeded = 0;
    enum db_status st;
    bool found = false;

    if ((st = db_query_one(c, ST_RF_STATE_SUM, sp, 2, &row, &found)) != DB_OK)
        return st;
    if (!found || db_row_cents(&row, 0, &succeeded) != 0)
        return db_fail(c, "refund: unreadable refund sum of %s", pay_no);
    if (succeeded < pay_amount)
        return DB_OK;
    return db_exec(c, ST_REFUND_SETTLE, p, 5, NULL);
}

static enum db_status finish_txn(struct db_conn *c, void *arg)
{
    struct finish_job *j = arg;
    char stb[DB_INT_BUF], s0[DB_INT_BUF], s1[DB_INT_BUF], s2[DB_INT_BUF], err[REFUND_ERROR_MAX];
    char payload[OUTBOX_PAYLOAD_MAX];
    const char *p[] = { db_param_int(stb, j->state),
                        j->gateway_refund_id,
                        j->failure_code,
                        err,
                        j->refund_no,
                        db_param_int(s0, REFUND_REQUESTED),
                        db_param_int(s1, REFUND_SUBMITTED),
                        db_param_int(s2, REFUND_UNKNOWN) };
    uint64_t rows = 0;
    enum db_status st;
    bool found = false;

    j->changed = false;
    snprintf(err, sizeof(err), "%s", j->error != NULL ? j->error : "");
    if ((st = db_exec(c, ST_RF_FINISH, p, 8, &rows)) != DB_OK)
        return st;
    if ((st = get_by(c, ST_RF_GET, j->refund_no, j->out, &found)) != DB_OK)
        return st;
    if (!found)
        return db_fail(c, "refund: no refund %s to finish", j->refund_no);
    if (rows == 0)
        return DB_OK; /* final already, or awaiting approval: nothing to announce */
    if (refund_event_payload(j->out, payload, sizeof(payload)) != 0)
        return db_fail(c, "refund: event payload of %s does not fit", j->refund_no);
    if ((st = outbox_append_subject(
             c, j->state == REFUND_SUCCEEDED ? OUTBOX_REFUND_SUCCEEDED : OUTBOX_REFUND_FAILED,
             j->out->order_no, j->refund_no, payload)) != DB_OK)
        return st;
    if (j->state == REFUND_SUCCEEDED &&
        (st = settle_if_full(c, j->out->pay_no, j->out->pay_amount_cents, j->out->refund_no)) !=
            DB_OK)
        return st;
    j->changed = true;
    return DB_OK;
}

/* refund_finish's change inside the caller's transaction. */
static enum db_status refund_finish_in(struct db_conn *c, const char *refund_no, int state,
                                       const char *gateway_refund_id, const char *failure_code,
                                       const char *error, struct refund *out)
{
    struct finish_job j = { refund_no, gateway_refund_id, failure_code, error, state, false, out };

    return finish_txn(c, &j);
}

enum db_status refund_finish(struct db_conn *c, const char *refund_no, int state,
                             const char *gateway_refund_id, const char *failure_code,
                             const char *error, bool *changed, struct refund *out)
{
    struct finish_job j = { refund_no, gateway_refund_id, failure_code, error, state, false, out };
    enum db_status st;

    memset(out, 0, sizeof(*out));
    st = db_txn(c, finish_txn, &j);
    *changed = st == DB_OK && j.changed;
    return st;
}

enum db_status refund_sweep(struct db_conn *c, const struct shard_set *set, const struct shard *sh,
                            const struct gateways *gw, const char *request_id, int *made)
{
    char req[DB_INT_BUF], lim[DB_INT_BUF];
    const char *p[11] = { db_param_int(req, PAYMENT_REFUND_REQUIRED) };
    struct db_row rows[REFUND_UNASKED_MAX];
    size_t n = 0, k = 1, i, ng = gw != NULL ? gateways_count(gw) : 0;
    enum db_status st;

    *made = 0;
    for (i = 0; i < ng && k < 9; i++)
        if (gateways_at(gw, i)->cfg->refund_url[0] != '\0')
            p[k++] = gateways_at(gw, i)->cfg->name;
    if (k == 1)
        return DB_OK; /* no gateway has a refund API */
    while (k < 9)
        p[k++] = NULL;
    p[9] = db_param_int(lim, REFUND_UNASKED_MAX);
    if ((st = db_query_retry(c, ST_RF_UNASKED, p, 10, rows, REFUND_UNASKED_MAX, &n)) != DB_OK)
        return st;
    for (i = 0; i < n; i++) {
        char pay_no[ID_BUF];
        int64_t outcome = 0;
        struct refund out = { .id = 0 };
        struct refund_create_req cr = {
            .pay_no = pay_no, .actor = REFUND_ACTOR_SYSTEM, .request_id = request_id, .gw = gw
        };
        enum refund_result r;

        if (db_row_str(&rows[i], RUC_PAY_NO, pay_no, sizeof(pay_no)) != 0 ||
            db_row_int(&rows[i], RUC_OUTCOME, PAYMENT_PAID, PAYMENT_REFUND_SETTLED, &outcome) != 0)
            return db_fail(c, "refund: malformed payment row to refund");
        /* first answered PAID, refunded now: its order was canceled */
        cr.origin = outcome == PAYMENT_PAID ? REFUND_ORIGIN_CANCEL : REFUND_ORIGIN_DOUBLE_PAYMENT;
        r = refund_create(c, set, sh, &cr, &out);
        if (r == REFUND_OK)
            (*made)++;
        else if (r == REFUND_UNAVAILABLE || r == REFUND_ERROR)
            return r == REFUND_UNAVAILABLE ? DB_UNAVAILABLE : DB_ERROR;
    }
    return DB_OK;
}

enum db_status refund_oldest_unrefunded(struct db_conn *c, int64_t *age_s)
{
    char req[DB_INT_BUF], req2[DB_INT_BUF];
    const char *p[] = { db_param_int(req, PAYMENT_REFUND_REQUIRED),
                        db_param_int(req2, PAYMENT_REFUND_REQUIRED) };
    struct db_row row;
    enum db_status st;
    bool found = false;

    *age_s = 0;
    if ((st = db_query_one(c, ST_RF_OLDEST, p, 2, &row, &found)) != DB_OK || !found)
        return st;
    if (db_row_int(&row, 0, 0, INT64_MAX, age_s) != 0)
        return db_fail(c, "refund: unreadable age of the oldest double payment");
    return DB_OK;
}

enum db_status refund_release(struct db_conn *c, const char *owner)
{
    const char *p[] = { owner };

    return db_exec_retry(c, ST_RF_RELEASE, p, 1, NULL);
}

/* ---- routed ---------------------------------------------------------------- */

static enum refund_result create_on(struct route_hop *h, const struct shard *sh,
                                    const struct refund_create_req *cr,
                                    const struct shard *hook_shard, struct refund *out)
{
    struct refund_create_req local = *cr;
    enum refund_result r;

    if (hook_shard != NULL && hook_shard != sh)
        local.hook = NULL;
    if (route_hop_to(h, sh, "refund_create") == NULL)
        return REFUND_UNAVAILABLE;
    r = refund_create(h->c, h->rt->set, sh, &local, out);
    out->shard = sh->index;
    if (r == REFUND_UNAVAILABLE || r == REFUND_ERROR)
        route_failed(h, r == REFUND_UNAVAILABLE, "refund_create");
    route_hop_release(h);
    return r;
}

enum refund_result refund_route_create(const struct route *rt, const struct refund_create_req *cr,
                                       const struct shard *hook_shard, struct refund *out,
                                       struct route_failure *fail)
{
    const struct shard *sh = rt->set->sharded ? refunds_pay_shard(rt, cr->pay_no) : &rt->set->s[0];
    enum refund_result r;
    struct route_hop h;
    bool missed = false;
    size_t i;

    route_hop_init(&h, rt, fail);
    if (sh != NULL)
        return create_on(&h, sh, cr, hook_shard, out);
    for (i = 0; i < rt->set->n; i++) {
        r = create_on(&h, &rt->set->s[i], cr, hook_shard, out);
        if (r == REFUND_UNAVAILABLE) {
            route_log_failure(fail, rt->request_id);
            fail->logged = true;
            missed = true;
            continue;
        }
        if (r != REFUND_NOT_FOUND)
            return r;
    }
    return missed ? REFUND_UNAVAILABLE : REFUND_NOT_FOUND;
}

/* refund_get on the shard refund_no names. */
enum refund_result refund_route_get(const struct route *rt, const char *refund_no,
                                    struct refund *out, struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, refund_no);
    enum refund_result r;
    struct route_hop h;
    enum db_status st;
    bool found = false;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return REFUND_NOT_FOUND;
    if (route_hop_to(&h, sh, "refund_get") == NULL)
        return REFUND_UNAVAILABLE;
    st = refund_get(h.c, refund_no, out, &found);
    r = st != DB_OK ? DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR)
                    : (found ? REFUND_OK : REFUND_NOT_FOUND);
    out->shard = sh->index;
    if (r == REFUND_UNAVAILABLE || r == REFUND_ERROR)
        route_failed(&h, r == REFUND_UNAVAILABLE, "refund_get");
    route_hop_release(&h);
    return r;
}

enum refund_result refund_route_change(const struct route *rt, const struct refund_change_req *rq,
                                       struct refund *out, struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, rq->refund_no);
    static const char *const steps[] = { "refund_approve", "refund_retry", "refund_reject" };
    enum refund_result r;
    struct route_hop h;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return REFUND_NOT_FOUND;
    if (route_hop_to(&h, sh, steps[rq->op]) == NULL)
        return REFUND_UNAVAILABLE;
    r = refund_change(h.c, rq, out);
    out->shard = sh->index;
    if (r == REFUND_UNAVAILABLE || r == REFUND_ERROR)
        route_failed(&h, r == REFUND_UNAVAILABLE, steps[rq->op]);
    route_hop_release(&h);
    return r;
}

struct list_job {
    const struct refund_filter *f;
    size_t first;
    uint64_t after;
    struct refund *items;
    size_t limit, n;
};

static enum route_step list_shard(struct db_conn *c, const struct shard *sh, void *arg)
{
    struct list_job *j = arg;
    uint64_t after = sh->index == j->first ? j->after : 0;
    size_t got = 0, i;
    enum db_status st = refund_list(c, j->f, after, j->items + j->n, j->limit - j->n, &got);

    if (st != DB_OK)
        return route_retryable(st) ? ROUTE_MISSED : ROUTE_ERROR;
    for (i = 0; i < got; i++)
        j->items[j->n + i].shard = sh->index;
    j->n += got;
    return j->n >= j->limit ? ROUTE_STOP : ROUTE_NEXT;
}

enum route_result refund_route_list(const struct route *rt, const struct refund_filter *f,
                                    size_t first, uint64_t after, struct refund *items,
                                    size_t limit, size_t *n, struct route_scan *sc)
{
    struct list_job j = { f, first, after, items, limit, 0 };
    enum route_result r = route_scan(rt, first, "refund_list", list_shard, &j, sc);

    *n = j.n;
    return r;
}

enum refund_result refund_route_after_payment(const struct route *rt, const struct refund_paid *p,
                                              struct refund *out, struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, p->order_no);
    const struct refund_create_req cr = { .pay_no = p->pay_no,
                                          .origin = REFUND_ORIGIN_DOUBLE_PAYMENT,
                                          .actor = REFUND_ACTOR_SYSTEM,
                                          .request_id = rt->request_id,
                                          .gw = p->gw };
    enum refund_result r = REFUND_OK;
    struct route_hop h;
    enum db_status st;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return REFUND_NOT_FOUND;
    if (route_hop_to(&h, sh, "refund_note_gateway") == NULL)
        return REFUND_UNAVAILABLE;
    if ((st = refund_note_gateway(h.c, p->pay_no, p->gateway)) != DB_OK) {
        route_failed(&h, route_retryable(st), "refund_note_gateway");
        r = DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR);
    } else if (p->double_payment) {
        r = refund_create(h.c, rt->set, sh, &cr, out);
        out->shard = sh->index;
        if (r == REFUND_UNAVAILABLE || r == REFUND_ERROR)
            route_failed(&h, r == REFUND_UNAVAILABLE, "refund_create");
    }
    route_hop_release(&h);
    return r;
}

/* Records a refund notification that names no refund of ours, on shard 1. */
static enum refund_result record_unsolicited(const struct route *rt, const struct refund_notice *rn,
                                             struct route_failure *fail)
{
    char detail[200];
    struct route_hop h;
    enum db_status st;

    route_hop_init(&h, rt, fail);
    if (route_hop_to(&h, &rt->set->s[0], "refund_unsolicited") == NULL)
        return REFUND_UNAVAILABLE;
    snprintf(detail, sizeof(detail), "gateway=%s refund_id=%s state=%s", rn->gateway, rn->refund_id,
             refund_state_name(rn->state));
    st = audit_append(h.c, rn->gateway, "refund.unsolicited",
                      rn->refund_no[0] ? rn->refund_no : rn->refund_id, detail,
                      rt->request_id != NULL ? rt->request_id : "");
    if (st != DB_OK)
        route_failed(&h, route_retryable(st), "refund_unsolicited");
    route_hop_release(&h);
    if (st != DB_OK)
        return DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR);
    return REFUND_NOT_FOUND;
}

/* Whether a notification says what the refund it names is: the same
 * payment, and its amount (or, for a running total, at least its amount and
 * at most the payment). What it does not say is not compared. */
static bool notice_matches(const struct refund_notice *rn, const struct refund *rf)
{
    if (rn->pay_no != NULL && rn->pay_no[0] != '\0' && strcmp(rn->pay_no, rf->pay_no) != 0)
        return false;
    if (!rn->has_amount)
        return true;
    if (rn->amount_total)
        return rn->amount_cents >= rf->amount_cents && rn->amount_cents <= rf->pay_amount_cents;
    return rn->amount_cents == rf->amount_cents;
}

/* The audit row of a notification that names a refund of ours with
 * another payment or amount: kept, never applied. */
static enum db_status record_mismatch(struct db_conn *c, const struct route *rt,
                                      const struct refund_notice *rn, const struct refund *rf)
{
    char detail[256], amt[32] = "-";

    if (rn->has_amount)
        money_format(rn->amount_cents, amt, sizeof(amt));
    snprintf(detail, sizeof(detail),
             "gateway=%s refund_id=%s pay_no=%s amount=%s%s; the refund's pay_no=%s", rn->gateway,
             rn->refund_id, rn->pay_no != NULL && rn->pay_no[0] ? rn->pay_no : "-", amt,
             rn->amount_total ? " (total)" : "", rf->pay_no);
    return audit_append(c, rn->gateway, "refund.mismatch", rf->refund_no, detail,
                        rt->request_id != NULL ? rt->request_id : "");
}

enum refund_result refund_route_notice(const struct route *rt, const struct refund_notice *rn,
                                       bool *changed, struct refund *out,
                                       struct route_failure *fail)
{
    const struct shard *sh = rn->refund_no[0] ? shard_of_order(rt->set, rn->refund_no) : NULL;
    enum refund_result r = REFUND_OK;
    struct route_hop h;
    enum db_status st;
    bool found = false;

    *changed = false;
    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return record_unsolicited(rt, rn, fail);
    if (route_hop_to(&h, sh, "refund_notice") == NULL)
        return REFUND_UNAVAILABLE;
    st = refund_get(h.c, rn->refund_no, out, &found);
    if (st == DB_OK && found && strcmp(out->gateway, rn->gateway) == 0 &&
        !notice_matches(rn, out)) {
        r = REFUND_MISMATCH;
        st = record_mismatch(h.c, rt, rn, out);
    } else if (st == DB_OK && found && strcmp(out->gateway, rn->gateway) == 0) {
        st = refund_finish(h.c, rn->refund_no, rn->state, rn->refund_id[0] ? rn->refund_id : NULL,
                           rn->state == REFUND_FAILED ? rn->code : NULL, "notified", changed, out);
    } else if (st == DB_OK) {
        r = REFUND_NOT_FOUND;
    }
    if (st != DB_OK) {
        route_failed(&h, route_retryable(st), "refund_notice");
        r = DB_FAILURE(st, REFUND_UNAVAILABLE, REFUND_ERROR);
    }
    out->shard = sh->index;
    route_hop_release(&h);
    if (r == REFUND_NOT_FOUND)
        return record_unsolicited(rt, rn, fail);
    return r;
}
