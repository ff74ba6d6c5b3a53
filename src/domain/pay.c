/* pay.c - applies a payment: the dedupe insert, the order lock, the amount
 * check and the state machine's compare-and-set, in one transaction, plus
 * the alert lines and counters of each result. Knows nothing of HTTP.
 *
 * Two lines of defence: the payment_record insert (UNIQUE pay_no; a
 * duplicate key, and only that, means "seen before"), then the CAS
 * WAIT_PAY -> PAID with its order.paid outbox row. Either all of it
 * commits or none of it does, so any retry is safe. The transaction runs
 * inside MariaDB as one CALL of pay_callback_v3 (sql/migrations/0010_double_charged.sql): one
 * client/server round trip instead of six.
 *
 * pay_route runs it on the order's shard. Sharded, a third line comes
 * first: the pay_no's row in pay_no_registry on its placement, so that
 * two shards' UNIQUE(pay_no) can never each record the same payment. */
#include "pay.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "gateway.h"
#include "gateway_notice.h"
#include "log.h"
#include "metrics.h"
#include "monotime.h"
#include "money.h"
#include "order_state.h"
#include "outbox.h"
#include "replays.h"
#include "seen.h"
#include "route.h"
#include "shard.h"

/* pay_callback_v3 (sql/migrations/0010_double_charged.sql) writes these codes as literals. */
_Static_assert(ORDER_WAIT_PAY == 1 && ORDER_PAID == 2 && PAYMENT_PAID == 1 &&
                   PAYMENT_REFUND_REQUIRED == 2,
               "status codes changed: change pay_callback_v3 (sql/migrations/) with them");

/* One CALL of the procedure: the request, and the row it answered. */
struct pay_call {
    const struct pay_request *req;
    struct db_row row;
    bool found;
};

/* Reads the record of req->pay_no into out->stored_*, out->outcome and
 * out->order_status, and its age into *age_s. *found is false when there
 * is none. */
static enum db_status record_from_row(struct db_conn *c, const struct pay_request *req,
                                      const struct db_row *row, struct pay_outcome *out,
                                      int64_t *age_s)
{
    int64_t outcome = 0, status = 0;

    if (db_row_str(row, PSC_ORDER_NO, out->stored_order_no, sizeof(out->stored_order_no)) != 0 ||
        db_row_cents(row, PSC_AMOUNT, &out->stored_amount_cents) != 0 ||
        db_row_int(row, PSC_OUTCOME, PAYMENT_PAID, PAYMENT_REFUND_REQUIRED, &outcome) != 0 ||
        (!db_row_is_null(row, PSC_ORDER_STATUS) &&
         (db_row_int(row, PSC_ORDER_STATUS, 0, 99, &status) != 0 ||
          !order_state_valid((int)status))) ||
        db_row_int(row, PSC_AGE_S, INT64_MIN, INT64_MAX, age_s) != 0)
        return db_fail(c, "payment_record of pay_no %s is malformed", req->pay_no);
    out->outcome = (int)outcome;
    out->order_status = (int)status;
    return DB_OK;
}

static enum db_status load_record(struct db_conn *c, const struct pay_request *req,
                                  struct pay_outcome *out, bool *found, int64_t *age_s)
{
    const char *p[] = { req->pay_no };
    struct db_row row;
    size_t n = 0;
    enum db_status st = db_query_retry(c, ST_PAY_SELECT, p, 1, &row, 1, &n);

    *found = false;
    if (st != DB_OK || n == 0)
        return st;
    if ((st = record_from_row(c, req, &row, out, age_s)) != DB_OK)
        return st;
    *found = true;
    return DB_OK;
}

/* Answers a recorded pay_no: the same payment again is a replay of the
 * first outcome; the same pay_no with another order or amount is a
 * conflict. */
static enum pay_result record_result(const struct pay_request *req, const struct pay_outcome *out)
{
    if (strcmp(out->stored_order_no, req->order_no) != 0 ||
        out->stored_amount_cents != req->amount_cents)
        return PAY_CONFLICT;
    return PAY_REPLAY;
}

/* The body run under db_retry: the whole transaction as one CALL, which
 * commits or rolls back inside MariaDB. A deadlock or lock wait there is
 * rolled back by the procedure and comes out as DB_RETRY, so the retry
 * re-runs the CALL; a lost link before the answer is re-run too, and the
 * insert-first makes a re-run of a committed call answer as a replay. */
static void call_params(const struct pay_request *req, char amount[MONEY_STR_MAX],
                        char payload[OUTBOX_PAYLOAD_MAX])
{
    money_format(req->amount_cents, amount, MONEY_STR_MAX);
    /* The order's currency is added at delivery (it never changes once the
     * order is made): the procedure reads nothing more for the event. */
    snprintf(payload, OUTBOX_PAYLOAD_MAX,
             "{\"order_no\":\"%s\",\"pay_no\":\"%s\",\"gateway\":\"%s\",\"amount\":\"%s\"}",
             req->order_no, req->pay_no, req->gateway != NULL ? req->gateway : "native", amount);
}

static enum db_status pay_call_body(struct db_conn *c, void *arg)
{
    struct pay_call *j = arg;
    const struct pay_request *req = j->req;
    char amount[MONEY_STR_MAX], payload[OUTBOX_PAYLOAD_MAX];
    const char *p[] = { req->pay_no, req->order_no, amount, payload };
    enum db_status st;

    call_params(req, amount, payload);
    st = db_query_one(c, ST_PAY_CALL, p, 4, &j->row, &j->found);
    if (st == DB_DUPLICATE) /* the record's own 1062 is caught inside */
        return db_fail(c, "order %s already has an order.paid event", req->order_no);
    return st;
}

/* Maps the procedure's row (enum pay_call_col) to a result and out. */
static enum pay_result from_call(struct db_conn *c, const struct pay_request *req,
                                 const struct db_row *row, struct pay_outcome *out)
{
    int64_t outcome = 0, status = 0, stored = 0;

    if (db_row_int(row, PCC_OUTCOME, PAY_CALL_PAID, PAY_CALL_RELEASED, &outcome) != 0 ||
        (!db_row_is_null(row, PCC_ORDER_STATUS) &&
         (db_row_int(row, PCC_ORDER_STATUS, 0, 99, &status) != 0 ||
          !order_state_valid((int)status))))
        goto malformed;
    out->order_status = (int)status;
    switch (outcome) {
    case PAY_CALL_PAID: out->outcome = PAYMENT_PAID; return PAY_PAID;
    case PAY_CALL_REFUND: out->outcome = PAYMENT_REFUND_REQUIRED; return PAY_REFUND_REQUIRED;
    case PAY_CALL_NOT_FOUND: return PAY_NOT_FOUND;
    case PAY_CALL_RELEASED:
        out->released = 1;
        snprintf(out->stored_order_no, sizeof(out->stored_order_no), "%s", req->order_no);
        out->stored_amount_cents = -1;
        return PAY_CONFLICT;
    case PAY_CALL_MISMATCH:
        if (db_row_cents(row, PCC_ORDER_AMOUNT, &out->order_amount_cents) != 0)
            goto malformed;
        return PAY_MISMATCH;
    default: /* PAY_CALL_SEEN */
        if (db_row_is_null(row, PCC_STORED_ORDER_NO)) {
            db_fail(c, "pay_no %s is a duplicate key, yet has no record", req->pay_no);
            return PAY_ERROR;
        }
        if (db_row_str(row, PCC_STORED_ORDER_NO, out->stored_order_no,
                       sizeof(out->stored_order_no)) != 0 ||
            db_row_cents(row, PCC_STORED_AMOUNT, &out->stored_amount_cents) != 0 ||
            db_row_int(row, PCC_STORED_OUTCOME, PAYMENT_PAID, PAYMENT_REFUND_REQUIRED, &stored) !=
                0)
            goto malformed;
        out->outcome = (int)stored;
        return record_result(req, out);
    }
malformed:
    db_fail(c, "%s answered a malformed row for pay_no %s", DB_PROC_PAY_CALLBACK, req->pay_no);
    return PAY_ERROR;
}

/* A payment that states its currency is checked against the order's
 * before the call. The read is outside the call's transaction, which is
 * safe because an order's currency is set when it is made and never
 * changes. An absent order is left to the call (NOT_FOUND). Returns
 * PAY_PAID to mean "go on", PAY_MISMATCH with out filled, or a failure. */
static enum pay_result check_currency(struct db_conn *c, const struct pay_request *req,
                                      struct pay_outcome *out)
{
    const char *p[] = { req->order_no };
    struct db_row row;
    bool found = false;
    enum db_status st;

    if (req->currency[0] == '\0')
        return PAY_PAID;
    if ((st = db_query_one(c, ST_ORDER_CURRENCY, p, 1, &row, &found)) != DB_OK)
        return DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
    if (!found)
        return PAY_PAID;
    if (db_row_str(&row, OCC_CURRENCY, out->order_currency, sizeof(out->order_currency)) != 0 ||
        db_row_cents(&row, OCC_AMOUNT, &out->order_amount_cents) != 0) {
        db_fail(c, "order %s is malformed", req->order_no);
        return PAY_ERROR;
    }
    if (strcmp(out->order_currency, req->currency) == 0)
        return PAY_PAID;
    out->currency_mismatch = 1;
    return PAY_MISMATCH;
}

/* A record read committed fills the replay cache, which keeps it only as
 * long as replays.h allows. */
static void remember(const struct pay_memory *mem, const struct pay_request *req,
                     const struct pay_outcome *out, int64_t age_s)
{
    struct replay rec;

    memcpy(rec.order_no, out->stored_order_no, sizeof(rec.order_no));
    rec.amount_cents = out->stored_amount_cents;
    rec.outcome = out->outcome;
    rec.order_status = out->order_status;
    replays_put(mem->answers, req->pay_no, &rec, age_s, monotime_ms());
}

/* The cheap path of a pay_no this process saw recorded: one indexed read.
 * True when the record answered (a replay or a conflict) or the read
 * failed, with the result in *r; false when there is no record, so the
 * hint was wrong. A record read here is committed: it fills the replay
 * cache, which keeps it only as long as replays.h allows. */
static bool hinted(struct db_conn *c, const struct pay_memory *mem, const struct pay_request *req,
                   struct pay_outcome *out, enum pay_result *r)
{
    enum db_status st;
    bool found = false;
    int64_t age_s = 0;

    if ((st = load_record(c, req, out, &found, &age_s)) != DB_OK) {
        *r = DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
        return true;
    }
    if (!found)
        return false;
    *r = record_result(req, out);
    remember(mem, req, out, age_s);
    return true;
}

/* A repeat answered from the replay cache, with no database at all: the
 * answer hinted() would give, from the same record (replays.h says why it
 * is equal). */
static bool remembered(const struct pay_memory *mem, const struct pay_request *req,
                       struct pay_outcome *out, enum pay_result *r)
{
    struct replay rec;

    if (!replays_get(mem->answers, req->pay_no, !req->ack_only, monotime_ms(), &rec))
        return false;
    memcpy(out->stored_order_no, rec.order_no, sizeof(out->stored_order_no));
    out->stored_amount_cents = rec.amount_cents;
    out->outcome = rec.outcome;
    out->order_status = rec.order_status;
    *r = record_result(req, out);
    return true;
}

/* The answer of the one call's row; a record it found or wrote is
 * remembered as seen. */
static enum pay_result called(struct db_conn *c, const struct pay_memory *mem,
                              const struct pay_request *req, const struct db_row *row,
                              struct pay_outcome *out)
{
    enum pay_result r = from_call(c, req, row, out);

    if (r == PAY_PAID || r == PAY_REFUND_REQUIRED || r == PAY_REPLAY ||
        (r == PAY_CONFLICT && !out->released))
        seen_add(mem->recent, req->pay_no); /* a record exists, committed */
    return r;
}

/* The currency check and the one call, which inserts first. */
static enum pay_result call(struct db_conn *c, const struct pay_memory *mem,
                            const struct pay_request *req, struct pay_outcome *out)
{
    struct pay_call j = { .req = req };
    enum pay_result r;
    enum db_status st;

    if ((r = check_currency(c, req, out)) != PAY_PAID)
        return r;
    if ((st = db_retry(c, pay_call_body, &j)) != DB_OK)
        return DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
    if (!j.found) {
        db_fail(c, "%s answered no row", DB_PROC_PAY_CALLBACK);
        return PAY_ERROR;
    }
    return called(c, mem, req, &j.row, out);
}

enum pay_result pay_apply(struct db_conn *c, const struct pay_memory *mem,
                          const struct pay_request *req, struct pay_outcome *out)
{
    enum pay_result r;

    memset(out, 0, sizeof(*out));
    if (remembered(mem, req, out, &r))
        return r;
    memset(out, 0, sizeof(*out));
    /* A pay_no this process saw committed is most likely a gateway retry:
     * one indexed read answers it without a write. Anything else goes
     * straight to the one call, which inserts first; it stays the
     * authority, so a wrong hint only costs the read. */
    if (seen_has(mem->recent, req->pay_no) && hinted(c, mem, req, out, &r))
        return r;
    return call(c, mem, req, out);
}

/* ---- routed by shard ----------------------------------------------------- */

/* A failed step of a routed payment, recorded in the hop's failure (and
 * counted for the shard when retryable). Other results pass through. */
static enum pay_result failed(struct route_hop *h, enum pay_result r, const char *step)
{
    if (r == PAY_UNAVAILABLE || r == PAY_ERROR)
        route_failed(h, r == PAY_UNAVAILABLE, step);
    return r;
}

#define PAY_REGISTER_TRIES 3 /* a released binding taken by another callback meanwhile */

/* Takes a binding an operator released for req->order_no, only if it is
 * still RELEASED. *taken says whether this call took it. */
static enum db_status retake(struct db_conn *c, const struct pay_request *req, bool *taken)
{
    char bound[DB_INT_BUF], released[DB_INT_BUF];
    const char *p[] = { req->order_no, db_param_int(bound, PAY_NO_BOUND), req->pay_no,
                        db_param_int(released, PAY_NO_RELEASED) };
    uint64_t affected = 0;
    enum db_status st = db_exec_retry(c, ST_PAY_NO_RETAKE, p, 4, &affected);

    *taken = st == DB_OK && affected == 1;
    return st;
}

/* Binds req->pay_no to req->order_no in pay_no_registry, or reads whom it
 * is bound to. PAY_PAID means "bound to this order: go on". A lost link
 * after the insert committed re-runs it into the duplicate, which reads
 * back this very order. A binding being released is PAY_UNAVAILABLE with
 * out->releasing; one released from this very order is PAY_CONFLICT with
 * out->released; one released from another order is taken (an alert line
 * says so). */
static enum pay_result register_pay_no(struct db_conn *c, const struct pay_request *req,
                                       struct pay_outcome *out)
{
    const char *p[] = { req->pay_no, req->order_no };
    struct db_row row;
    int64_t state = 0;
    size_t n = 0;
    bool taken = false;
    enum db_status st;

    for (int attempt = 0; attempt < PAY_REGISTER_TRIES; attempt++) {
        if ((st = db_exec_retry(c, ST_PAY_NO_REGISTER, p, 2, NULL)) == DB_OK)
            return PAY_PAID;
        if (st != DB_DUPLICATE)
            return DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
        if ((st = db_query_retry(c, ST_PAY_NO_OWNER, p, 1, &row, 1, &n)) != DB_OK)
            return DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
        if (n == 0)
            continue; /* purged meanwhile: insert again */
        if (db_row_str(&row, PNC_ORDER_NO, out->stored_order_no, sizeof(out->stored_order_no)) !=
                0 ||
            db_row_int(&row, PNC_STATE, PAY_NO_BOUND, PAY_NO_RELEASED, &state) != 0) {
            db_fail(c, "pay_no_registry row of pay_no %s is malformed", req->pay_no);
            return PAY_ERROR;
        }
        out->stored_amount_cents = -1; /* the registry keeps the order only */
        if (state == PAY_NO_RELEASING) {
            out->releasing = 1;
            return PAY_UNAVAILABLE;
        }
        if (state == PAY_NO_BOUND)
            return strcmp(out->stored_order_no, req->order_no) == 0 ? PAY_PAID : PAY_CONFLICT;
        if (strcmp(out->stored_order_no, req->order_no) == 0) {
            out->released = 1; /* the bank still retrying the wrong callback */
            return PAY_CONFLICT;
        }
        if ((st = retake(c, req, &taken)) != DB_OK)
            return DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR);
        if (taken) {
            log_alert("PAY_NO_REBOUND", "pay_no=%s order_no=%s prior_order_no=%s reason=%s",
                      req->pay_no, req->order_no, out->stored_order_no, "released by an operator");
            memset(out, 0, sizeof(*out));
            return PAY_PAID;
        }
    }
    db_fail(c, "pay_no_registry row of pay_no %s keeps changing", req->pay_no);
    return PAY_UNAVAILABLE;
}

/* Whether order_no is an order on its shard: PAY_PAID when it is,
 * PAY_NOT_FOUND when it is not (or names no shard of ours), else the
 * failure of the read. Leaves h on the order's shard. */
static enum pay_result order_exists(struct route_hop *h, const char *order_no, const char *step)
{
    const struct shard *sh = shard_of_order(h->rt->set, order_no);
    const char *p[] = { order_no };
    struct db_row row;
    size_t n = 0;
    enum db_status st;

    if (sh == NULL)
        return PAY_NOT_FOUND;
    if (route_hop_to(h, sh, step) == NULL)
        return PAY_UNAVAILABLE;
    if ((st = db_query_retry(h->c, ST_ORDER_EXISTS, p, 1, &row, 1, &n)) != DB_OK)
        return failed(h, DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR), step);
    return n > 0 ? PAY_PAID : PAY_NOT_FOUND;
}

/* The pay_no is bound to prior, an order that does not exist (a binding
 * written by a version that bound before it knew the order): moves the
 * binding to req->order_no, only if it still names prior. A binding that
 * changed meanwhile is read again. */
static enum pay_result rebind(struct route_hop *h, const struct shard *reg,
                              const struct pay_request *req, const char *prior,
                              struct pay_outcome *out)
{
    char bound[DB_INT_BUF];
    const char *p[] = { req->order_no, req->pay_no, prior, db_param_int(bound, PAY_NO_BOUND) };
    uint64_t affected = 0;
    enum db_status st;

    if (route_hop_to(h, reg, "pay_no registry") == NULL)
        return PAY_UNAVAILABLE;
    if ((st = db_exec_retry(h->c, ST_PAY_NO_REBIND, p, 4, &affected)) != DB_OK)
        return failed(h, DB_FAILURE(st, PAY_UNAVAILABLE, PAY_ERROR), "pay_no registry");
    if (affected == 1) {
        log_alert("PAY_NO_REBOUND", "pay_no=%s order_no=%s prior_order_no=%s reason=%s",
                  req->pay_no, req->order_no, prior, "prior order does not exist");
        return PAY_PAID;
    }
    return failed(h, register_pay_no(h->c, req, out), "pay_no registry");
}

/* The sharded path: the hint's one read on the order's shard, else the
 * order's existence there, the registry on the pay_no's placement, then
 * the call on the order's shard. */
static enum pay_result route_sharded(struct route_hop *h, const struct pay_memory *mem,
                                     const struct shard *sh, const struct pay_request *req,
                                     struct pay_outcome *out)
{
    const struct shard *reg = shard_place(h->rt->set, req->pay_no);
    char prior[ID_BUF];
    enum pay_result r;

    /* Only a replay of this very payment skips the registry: it writes
     * nothing, and its record on the order's shard was written after the
     * binding. A record of another order or amount goes the full way, so
     * the registry, not the hint, decides every conflict. */
    if (seen_has(mem->recent, req->pay_no)) {
        if (route_hop_to(h, sh, "pay_apply") == NULL)
            return PAY_UNAVAILABLE;
        if (hinted(h->c, mem, req, out, &r) && r != PAY_CONFLICT)
            return failed(h, r, "pay_apply");
        memset(out, 0, sizeof(*out));
    }
    /* An order that does not exist binds nothing: the bank's corrected
     * callback must find its pay_no free. Orders are never deleted, so
     * one seen here is still there at the call. */
    if ((r = order_exists(h, req->order_no, "order lookup")) != PAY_PAID)
        return r;
    if (route_hop_to(h, reg, "pay_no registry") == NULL)
        return PAY_UNAVAILABLE;
    r = register_pay_no(h->c, req, out);
    if (r == PAY_CONFLICT && !out->released) {
        /* Bound to another order: kept unless that order never existed. */
        snprintf(prior, sizeof(prior), "%s", out->stored_order_no);
        r = order_exists(h, prior, "pay_no owner lookup");
        if (r == PAY_PAID) {
            snprintf(out->stored_order_no, sizeof(out->stored_order_no), "%s", prior);
            return PAY_CONFLICT;
        }
        if (r != PAY_NOT_FOUND || (r = rebind(h, reg, req, prior, out)) != PAY_PAID)
            return r;
    } else if (r != PAY_PAID)
        return out->releasing ? r : failed(h, r, "pay_no registry");
    memset(out, 0, sizeof(*out));
    if (route_hop_to(h, sh, "pay_apply") == NULL)
        return PAY_UNAVAILABLE;
    return failed(h, call(h->c, mem, req, out), "pay_apply");
}

bool pay_remembered(const struct route *rt, const struct pay_memory *mem,
                    const struct pay_request *req, bool replay_only, struct pay_outcome *out,
                    enum pay_result *r)
{
    memset(out, 0, sizeof(*out));
    if (shard_of_order(rt->set, req->order_no) == NULL)
        return false;
    /* Sharded, as on the hinted read, only a replay is answered here: the
     * registry decides every conflict. */
    if (remembered(mem, req, out, r) && (*r == PAY_REPLAY || (!replay_only && !rt->set->sharded))) {
        metrics_inc(rt->m, M_REPLAY_CACHE_HITS);
        return true;
    }
    memset(out, 0, sizeof(*out));
    return false;
}

enum pay_result pay_route(const struct route *rt, const struct pay_memory *mem,
                          const struct pay_request *req, struct pay_outcome *out,
                          struct route_failure *fail)
{
    const struct shard *sh = shard_of_order(rt->set, req->order_no);
    struct route_hop h;
    enum pay_result r;

    memset(out, 0, sizeof(*out));
    route_hop_init(&h, rt, fail);
    if (sh == NULL)
        return PAY_NOT_FOUND; /* names no shard of ours: nothing written anywhere */
    if (pay_remembered(rt, mem, req, false, out, &r))
        return r; /* before any connection is borrowed */
    if (rt->set->sharded)
        r = route_sharded(&h, mem, sh, req, out);
    else if (route_hop_to(&h, sh, "pay_apply") == NULL)
        r = PAY_UNAVAILABLE;
    else
        r = failed(&h, pay_apply(h.c, mem, req, out), "pay_apply");
    route_hop_release(&h);
    return r;
}

void pay_report(struct metrics *m, const struct pay_request *req, enum pay_result r,
                const struct pay_outcome *out, const char *request_id)
{
    char amount[MONEY_STR_MAX], other[MONEY_STR_MAX];
    const char *gw = req->gateway != NULL ? req->gateway : "native";

    money_format(req->amount_cents, amount, sizeof(amount));
    switch (r) {
    case PAY_PAID:
        log_info("order paid", "order_no=%s pay_no=%s amount=%s request_id=%s", req->order_no,
                 req->pay_no, amount, request_id);
        break;
    case PAY_REFUND_REQUIRED:
        metrics_inc(m, M_DOUBLE_PAYMENT);
        log_alert("REFUND_REQUIRED",
                  "gateway=%s order_no=%s pay_no=%s amount=%s order_status=%s "
                  "request_id=%s",
                  gw, req->order_no, req->pay_no, amount, order_state_name(out->order_status),
                  request_id);
        break;
    case PAY_REPLAY: metrics_inc(m, M_DUP_CALLBACK); break;
    case PAY_CONFLICT:
        metrics_inc(m, M_PAY_NO_CONFLICT);
        if (out->released) {
            log_alert("PAY_NO_RELEASED", "gateway=%s pay_no=%s order_no=%s amount=%s request_id=%s",
                      gw, req->pay_no, req->order_no, amount, request_id);
            break;
        }
        log_alert("PAY_NO_CONFLICT",
                  "gateway=%s pay_no=%s order_no=%s amount=%s stored_order_no=%s stored_amount=%s "
                  "request_id=%s",
                  gw, req->pay_no, req->order_no, amount, out->stored_order_no,
                  out->stored_amount_cents < 0
                      ? "-"
                      : money_format(out->stored_amount_cents, other, sizeof(other)),
                  request_id);
        break;
    case PAY_NOT_FOUND:
        log_alert("ORDER_NOT_FOUND", "gateway=%s order_no=%s pay_no=%s amount=%s request_id=%s", gw,
                  req->order_no, req->pay_no, amount, request_id);
        break;
    case PAY_MISMATCH:
        metrics_inc(m, M_AMOUNT_MISMATCH);
        log_alert("AMOUNT_MISMATCH",
                  "gateway=%s order_no=%s pay_no=%s amount=%s currency=%s order_amount=%s "
                  "order_currency=%s request_id=%s",
                  gw, req->order_no, req->pay_no, amount, req->currency[0] ? req->currency : "-",
                  money_format(out->order_amount_cents, other, sizeof(other)),
                  out->order_currency[0] ? out->order_currency : "-", request_id);
        break;
    case PAY_UNAVAILABLE:
    case PAY_ERROR: break; /* the caller logs these with db_errstr */
    }
}

/* Result label values of the gateway counters, in enum pay_result order,
 * then IGNORED. */
static const char *const gateway_result_labels[] = { "PAID",        "REFUND_REQUIRED", "REPLAY",
                                                     "CONFLICT",    "NOT_FOUND",       "MISMATCH",
                                                     "UNAVAILABLE", "ERROR",           "IGNORED" };
_Static_assert(ARRAY_SIZE(gateway_result_labels) == PAY_RESULT_IGNORED + 1,
               "IGNORED follows enum pay_result");

void pay_register_gateway_metrics(const struct gateways *g, struct metrics *m)
{
    size_t nnames = 0, nreasons = 0;
    const char *const *names = gateways_names(g, &nnames);
    const char *const *reasons = gateway_failure_reasons(&nreasons);

    metrics_set_gateways(m, names, nnames, gateway_result_labels, ARRAY_SIZE(gateway_result_labels),
                         reasons, nreasons);
}

const char *pay_result_str(enum pay_result r)
{
    static const char *const names[] = { "PAID",      "REFUND_REQUIRED", "REPLAY",      "CONFLICT",
                                         "NOT_FOUND", "MISMATCH",        "UNAVAILABLE", "ERROR" };

    return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "UNKNOWN";
}

/* ---- non-blocking (http.event_loop) -------------------------------------- */

/* The buffers of a statement in flight (about 30 KiB: two rows), held
 * only with a connection, so requests waiting for one cost little. */
struct pay_async_io {
    struct db_row row;
    struct db_call q;
};

enum pay_async_phase {
    PA_NONE,
    PA_HINT, /* the hinted read of a pay_no seen before */
    PA_CALL  /* the one CALL */
};

/* The answer is r: the connection goes back, a failure is recorded as
 * pay_route records it. */
static enum pay_step async_done(struct pay_async *a, enum pay_result r)
{
    struct route_hop h;

    a->r = r;
    if (r == PAY_UNAVAILABLE || r == PAY_ERROR) {
        route_hop_init(&h, &a->rt, &a->fail);
        h.sh = a->sh;
        h.c = a->c;
        route_failed(&h, r == PAY_UNAVAILABLE, "pay_apply");
    }
    shard_release(a->sh, a->c);
    a->c = NULL;
    free(a->io);
    a->io = NULL;
    return PAY_STEP_DONE;
}

/* Back to pay_route on a thread: nothing was answered. */
static enum pay_step async_blocking(struct pay_async *a)
{
    shard_release(a->sh, a->c);
    a->c = NULL;
    free(a->io);
    a->io = NULL;
    memset(&a->out, 0, sizeof(a->out));
    return PAY_STEP_BLOCKING;
}

static enum pay_step async_wait(struct pay_async *a, int w)
{
    a->wait = w;
    return PAY_STEP_WAIT;
}

static enum pay_step async_finish(struct pay_async *a);

/* Starts statement id of phase on the held connection. */
static enum pay_step async_run(struct pay_async *a, int phase)
{
    enum db_stmt id = phase == PA_HINT ? ST_PAY_SELECT : ST_PAY_CALL;
    int w;

    if (!db_call_ready(a->c, id))
        return async_blocking(a); /* the blocking calls connect and prepare */
    a->phase = phase;
    memset(&a->out, 0, sizeof(a->out));
    if (phase == PA_HINT) {
        a->p[0] = a->req.pay_no;
        w = db_call_start(&a->io->q, a->c, id, a->p, 1, &a->io->row);
    } else {
        call_params(&a->req, a->amount, a->payload);
        a->p[0] = a->req.pay_no;
        a->p[1] = a->req.order_no;
        a->p[2] = a->amount;
        a->p[3] = a->payload;
        w = db_call_start(&a->io->q, a->c, id, a->p, 4, &a->io->row);
    }
    return w != 0 ? async_wait(a, w) : async_finish(a);
}

/* The statement is done: its row answered as pay_apply answers it. */
static enum pay_step async_finish(struct pay_async *a)
{
    enum db_status st = a->io->q.st;
    int64_t age_s = 0;

    if (st != DB_OK) {
        if (a->phase == PA_CALL && st == DB_DUPLICATE) {
            db_fail(a->c, "order %s already has an order.paid event", a->req.order_no);
            return async_done(a, PAY_ERROR);
        }
        /* A server that did not answer within its bound: 503 now, as a
         * handler thread answers after the same bound. A link the server
         * closed (a restart, a failover, KILL), or any other failure: the
         * handler's retries connect again and re-run it (the CALL inserts
         * first, so a re-run is safe). */
        if (db_unreachable(a->c) && db_call_timed_out(&a->io->q))
            return async_done(a, PAY_UNAVAILABLE);
        db_leave_to_retry(a->c); /* one failure, counted once: by the handler's */
        return async_blocking(a);
    }
    if (a->phase == PA_HINT) {
        if (a->io->q.nrows == 0)
            return async_run(a, PA_CALL); /* the hint was wrong */
        if (record_from_row(a->c, &a->req, &a->io->row, &a->out, &age_s) != DB_OK)
            return async_done(a, PAY_ERROR);
        remember(a->mem, &a->req, &a->out, age_s);
        return async_done(a, record_result(&a->req, &a->out));
    }
    if (a->io->q.nrows == 0) {
        db_fail(a->c, "%s answered no row", DB_PROC_PAY_CALLBACK);
        return async_done(a, PAY_ERROR);
    }
    return async_done(a, called(a->c, a->mem, &a->req, &a->io->row, &a->out));
}

enum pay_step pay_async_begin(struct pay_async *a)
{
    enum db_refusal why = DB_REFUSED_NONE;
    enum pay_result r;

    memset(&a->out, 0, sizeof(a->out));
    a->sh = shard_of_order(a->rt.set, a->req.order_no);
    if (a->sh == NULL) {
        a->r = PAY_NOT_FOUND; /* names no shard of ours: nothing written anywhere */
        return PAY_STEP_DONE;
    }
    if (pay_remembered(&a->rt, a->mem, &a->req, false, &a->out, &r)) {
        a->r = r;
        return PAY_STEP_DONE;
    }
    if (a->rt.set->sharded || a->req.currency[0] != '\0')
        return PAY_STEP_BLOCKING;
    if ((a->c = db_try_acquire(a->sh->pool, &why)) == NULL)
        return why == DB_REFUSED_WAIT ? PAY_STEP_BUSY : PAY_STEP_BLOCKING;
    if ((a->io = malloc(sizeof(*a->io))) == NULL)
        return async_blocking(a);
    /* pay_apply's order: the hinted read of a pay_no seen before, else
     * the call, which inserts first. */
    return async_run(a, seen_has(a->mem->recent, a->req.pay_no) ? PA_HINT : PA_CALL);
}

enum pay_step pay_async_cont(struct pay_async *a, int events)
{
    int w = db_call_cont(&a->io->q, events);

    return w != 0 ? async_wait(a, w) : async_finish(a);
}

int pay_async_fd(const struct pay_async *a)
{
    return db_call_fd(&a->io->q);
}

int pay_async_timeout_ms(const struct pay_async *a)
{
    return db_call_timeout_ms(&a->io->q);
}
