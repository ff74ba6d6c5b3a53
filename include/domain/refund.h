/* refund.h - refund records: money given back from one payment through its
 * gateway's refund API. A refund has its own request number (refund_no,
 * drawn once and never changed: the gateway's out_request_no /
 * out_refund_no / Idempotency-Key), an amount in cents and a state:
 *
 *   AWAITING_APPROVAL -> REQUESTED -> SUBMITTED -> SUCCEEDED | FAILED
 *                                         ^  |
 *                                         |  v
 *                                       UNKNOWN  (the gateway's answer was lost)
 *
 * The sum of a payment's refunds that are not FAILED never exceeds the
 * payment: the creating transaction locks the payment's row, sums its
 * refunds and inserts, so concurrent requests are serialised on the row.
 * A refund lives on its order's shard; sharded, its refund_no carries the
 * shard's prefix ("S02-R...") like an order_no. Knows nothing of HTTP;
 * the relay that submits refunds is refund_relay.c. Any thread, one
 * connection per thread. */
#ifndef PAYCALLBACK_REFUND_H
#define PAYCALLBACK_REFUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "orders.h"
#include "outbox.h"
#include "route.h"
#include "validate.h"

struct gateways;

#define REFUND_LIST_MAX 100               /* rows one list call returns at most */
#define REFUND_REASON_MAX 128             /* refund.reason */
#define REFUND_GW_ID_MAX 65               /* the gateway's own refund id, and the NUL */
#define REFUND_ERROR_MAX 200              /* refund.last_error */
#define REFUND_ACTOR_SYSTEM "paycallback" /* who asks for an automatic refund */

enum refund_state {
    REFUND_AWAITING_APPROVAL = 0,
    REFUND_REQUESTED = 1,
    REFUND_SUBMITTED = 2,
    REFUND_SUCCEEDED = 3,
    REFUND_FAILED = 4,
    REFUND_UNKNOWN = 5
};

enum refund_origin {
    REFUND_ORIGIN_OPERATOR = 1,       /* an operator asked, with an Idempotency-Key */
    REFUND_ORIGIN_DOUBLE_PAYMENT = 2, /* a payment that charged the customer twice */
    REFUND_ORIGIN_CANCEL = 3,         /* the cancel of a paid order */
    REFUND_ORIGIN_MANUAL = 4          /* refunded outside the service, settled by an operator */
};

#define REFUND_REJECTED "rejected" /* failure_code of a refund an operator turned down */
#define REFUND_LEDGER_REFUSED "ledger_refused" /* failure_code: its payment had no room left */

enum refund_result {
    REFUND_OK,          /* made / changed / read */
    REFUND_DUPLICATE,   /* already made (dedupe key) or already in that state */
    REFUND_NOT_FOUND,   /* no such payment / refund */
    REFUND_EXCEEDS,     /* the payment's refunds would pass its amount: nothing written */
    REFUND_CURRENCY,    /* asked in another currency than the payment's: nothing written */
    REFUND_INEXACT,     /* the amount has no exact value in the currency's minor unit */
    REFUND_MANUAL,      /* the payment's gateway has no refund API: settle by hand */
    REFUND_ILLEGAL,     /* not in a state this change starts from */
    REFUND_ABORTED,     /* the Idempotency-Key claim was lost: rolled back */
    REFUND_SETTLED,     /* its payment was settled (refunded elsewhere, or in full): nothing sent */
    REFUND_SAME_ACTOR,  /* approved by the key that asked for it, under four eyes */
    REFUND_MISMATCH,    /* a notification whose payment or amount is not the refund's */
    REFUND_UNAVAILABLE, /* MySQL unreachable or busy; nothing written */
    REFUND_ERROR
};

/* A refund record, as stored. */
struct refund {
    uint64_t id;
    char refund_no[ID_BUF];
    char pay_no[ID_BUF];
    char order_no[ID_BUF];
    char gateway[33]; /* "" for none */
    int64_t amount_cents;
    int64_t pay_amount_cents; /* the payment it gives back from */
    char currency[4];
    int state;  /* enum refund_state */
    int origin; /* enum refund_origin */
    char reason[REFUND_REASON_MAX + 1];
    char requested_by[ID_BUF];
    char approved_by[ID_BUF];
    char gateway_refund_id[REFUND_GW_ID_MAX];
    char failure_code[65];
    char last_error[REFUND_ERROR_MAX];
    int attempts;
    char create_time[OUTBOX_TIME_MAX];
    char update_time[OUTBOX_TIME_MAX];
    char finished_at[OUTBOX_TIME_MAX]; /* "" until SUCCEEDED or FAILED */
    char next_attempt_at[OUTBOX_TIME_MAX];
    size_t shard; /* index in the shard set it was read from (set by the caller) */
};

/* A refund to make. */
struct refund_create_req {
    const char *pay_no;
    int64_t amount_cents; /* > 0; 0: what is left of the payment */
    int origin;           /* enum refund_origin */
    const char *reason;   /* NULL or <= REFUND_REASON_MAX characters */
    const char *actor;    /* who asks (operator key's name, or REFUND_ACTOR_SYSTEM) */
    const char *request_id;
    const char *currency; /* NULL: the payment's; else it must be the payment's (REFUND_CURRENCY) */
    bool approved;        /* REQUESTED at once; else AWAITING_APPROVAL */
    /* Which gateways have a refund API, and their approval rule for an
     * automatic refund (origin DOUBLE_PAYMENT or CANCEL: the profile's
     * refund_auto decides, approved is ignored). */
    const struct gateways *gw;
    const struct orders_hook *hook; /* may be NULL: stores the answer with the effect */
};

/* Makes a refund of cr->pay_no on c (the payment's shard, sh: the
 * refund_no gets its prefix), in one transaction with its audit row: locks
 * the payment, refuses a gateway without a refund API (REFUND_MANUAL) or a
 * payment settled by hand (REFUND_ILLEGAL), sums the payment's refunds not
 * FAILED and refuses an amount past what is left (REFUND_EXCEEDS), a
 * currency other than the payment's (REFUND_CURRENCY: a refund always
 * takes its payment's currency) and an amount with no exact value in that
 * currency's minor unit (REFUND_INEXACT: 100.50 JPY). An
 * automatic origin is made once per payment: a second ask is
 * REFUND_DUPLICATE with the first refund in *out. */
enum refund_result refund_create(struct db_conn *c, const struct shard_set *set,
                                 const struct shard *sh, const struct refund_create_req *cr,
                                 struct refund *out);

/* Records the gateway a payment came through (only where none is), so that
 * its refunds go back the same way. */
enum db_status refund_note_gateway(struct db_conn *c, const char *pay_no, const char *gateway);

/* The refund refund_no (*found false when none). */
enum db_status refund_get(struct db_conn *c, const char *refund_no, struct refund *out,
                          bool *found);

/* An operator's change of one refund. */
enum refund_change {
    REFUND_CHANGE_APPROVE, /* AWAITING_APPROVAL -> REQUESTED */
    REFUND_CHANGE_RETRY,   /* a waiting refund (REQUESTED, SUBMITTED, UNKNOWN) due now */
    REFUND_CHANGE_REJECT   /* AWAITING_APPROVAL -> FAILED (REFUND_REJECTED): never sent */
};

struct refund_change_req {
    enum refund_change op;
    const char *refund_no;
    const char *actor; /* the operator key's name */
    const char *request_id;
    bool approver_must_differ; /* refunds.approver_must_differ: four eyes on an approval */
};

/* Makes rq's change, audited (refund.approve / refund.retry /
 * refund.reject), in one transaction; a rejection also writes the
 * refund.failed event. An approval or retry locks the refund's payment
 * first and is REFUND_SETTLED when the payment was settled (refunded
 * outside the service): nothing will be sent. REFUND_OK, REFUND_DUPLICATE
 * (approved or rejected before: nothing written), REFUND_NOT_FOUND,
 * REFUND_ILLEGAL (a state the change cannot start from; a FAILED refund is
 * final: ask for a new one), REFUND_SAME_ACTOR (four eyes: the key that
 * asked may not approve); *out is the refund afterwards. */
enum refund_result refund_change(struct db_conn *c, const struct refund_change_req *rq,
                                 struct refund *out);

/* Filters of a listing: state -1 and gateway NULL mean any; older_s 0
 * means any age. */
struct refund_filter {
    int state;
    const char *gateway;
    int64_t older_s;
    const char *pay_no; /* NULL: any payment's */
};

/* Lists up to max (<= REFUND_LIST_MAX) refunds matching f with ids above
 * after_id, by id. */
enum db_status refund_list(struct db_conn *c, const struct refund_filter *f, uint64_t after_id,
                           struct refund *out, size_t max, size_t *n);

/* ---- the relay's steps (refund_relay.c) --------------------------------- */

#define REFUND_CLAIM_OTHERS_MAX 8 /* profiles a claim of the others leaves out */

/* Which refunds a claim takes: those of one gateway profile, or (gateway
 * NULL) those of none of others[0..n_others) (no profile, or one without
 * a refund API). */
struct refund_claim_of {
    const char *gateway;
    const char *const *others;
    size_t n_others; /* <= REFUND_CLAIM_OTHERS_MAX */
};

/* Claims up to max due refunds (REQUESTED, SUBMITTED, UNKNOWN) of of for
 * owner under a lease of lease_s seconds, oldest due first. A refund has
 * one unexpired lease at a time, so no two relays submit it together; and
 * a refund whose payment has another refund under an unexpired lease is
 * skipped, so two refunds of one payment are never in flight together
 * (each lease is taken under the payment's row lock). *n counts what was
 * leased, also when a later step failed. */
enum db_status refund_claim(struct db_conn *c, const char *owner, int lease_s,
                            const struct refund_claim_of *of, struct refund *out, size_t max,
                            size_t *n);

/* Before a call leaves: SUBMITTED, attempts + 1, while owner still holds
 * the lease (*held false, and nothing is sent, otherwise). Committed
 * before the request leaves, so a crash mid-call leaves SUBMITTED and the
 * next claim asks the gateway what became of it. The ledger is read again
 * under the payment's row lock first: a payment settled since, or whose
 * refunds not FAILED would pass it, sends nothing (*held false, *refused
 * true): a refund never sent is FAILED (REFUND_LEDGER_REFUSED) with its
 * refund.failed event, one that was sent before waits for an operator. */
enum db_status refund_mark_submitting(struct db_conn *c, uint64_t id, const char *owner, bool *held,
                                      bool *refused);

/* The gateway has not decided (state SUBMITTED: accepted, processing) or
 * its answer was lost (UNKNOWN): kept, lease dropped, due again in
 * delay_ms. gateway_refund_id may be NULL (kept). */
enum db_status refund_mark_waiting(struct db_conn *c, uint64_t id, const char *owner, int state,
                                   const char *gateway_refund_id, const char *error,
                                   int64_t delay_ms);

/* The gateway's final word: SUCCEEDED or FAILED (failure_code: the
 * gateway's code), from any state not final, in one transaction with the
 * refund.succeeded / refund.failed outbox event and, for a double payment
 * refunded in full, the payment's REFUND_SETTLED with the refund_no as its
 * reference. *changed false when the refund was final already (a late
 * answer or a repeated notification: nothing written). */
enum db_status refund_finish(struct db_conn *c, const char *refund_no, int state,
                             const char *gateway_refund_id, const char *failure_code,
                             const char *error, bool *changed, struct refund *out);

#define REFUND_UNASKED_MAX 20 /* payments one sweep looks at */

/* Makes the automatic refund of every payment to refund (REFUND_REQUIRED)
 * through a gateway of gw with a refund API that has none yet: a double
 * payment whose refund a crash kept from being made, or the payment of a
 * PAID order that was canceled (origin CANCEL). Each as refund_create
 * with the profile's rule (auto or approval). *made gets the count. */
enum db_status refund_sweep(struct db_conn *c, const struct shard_set *set, const struct shard *sh,
                            const struct gateways *gw, const char *request_id, int *made);

/* The age in seconds of the oldest double payment not refunded yet (a
 * payment recorded REFUND_REQUIRED, still so), 0 for none. A canceled
 * order's payment is left out: its age is the payment's, not the
 * cancel's. */
enum db_status refund_oldest_unrefunded(struct db_conn *c, int64_t *age_s);

/* Hands back owner's leases (graceful stop). */
enum db_status refund_release(struct db_conn *c, const char *owner);

/* "AWAITING_APPROVAL", ... or "UNKNOWN_STATE"; and back (-1 unknown). */
const char *refund_state_name(int state);
int refund_state_from_name(const char *name);
const char *refund_origin_name(int origin);

/* The outbox payload of a refund's event: {"order_no","pay_no",
 * "refund_no","amount","currency","gateway","state","failure_code"}.
 * 0, or -1 when it does not fit in outsz. Pure. */
int refund_event_payload(const struct refund *r, char *out, size_t outsz);

/* ---- routed ------------------------------------------------------------- */

/* refund_create on the payment's shard: unsharded the one database;
 * sharded the shard its pay_no_registry row names, or else each shard in
 * turn (a payment made before sharding). hook_shard: where cr->hook's
 * record lives (NULL: anywhere); the hook is dropped on another shard. */
enum refund_result refund_route_create(const struct route *rt, const struct refund_create_req *cr,
                                       const struct shard *hook_shard, struct refund *out,
                                       struct route_failure *fail);

/* A payment recorded through a gateway with a refund API. */
struct refund_paid {
    const char *pay_no;
    const char *order_no;
    const char *gateway; /* the profile's name */
    bool double_payment; /* recorded as REFUND_REQUIRED */
    const struct gateways *gw;
};

/* After a gateway's payment is recorded (now or before), on its order's
 * shard: notes its gateway on the record and, for a double payment, makes
 * its refund (once: a repeat is REFUND_DUPLICATE), REQUESTED when the
 * profile says refund "auto", else AWAITING_APPROVAL. Called before the
 * gateway is acknowledged, so a crash in between makes the gateway resend
 * and this runs again. REFUND_OK, REFUND_DUPLICATE, REFUND_MANUAL,
 * REFUND_UNAVAILABLE or REFUND_ERROR (*fail). */
enum refund_result refund_route_after_payment(const struct route *rt, const struct refund_paid *p,
                                              struct refund *out, struct route_failure *fail);

/* A gateway's verified word on one of its refunds. */
struct refund_notice {
    const char *gateway;   /* the profile that sent it */
    const char *refund_no; /* our number as it names it; "" when it names none */
    const char *refund_id; /* the gateway's own id */
    int state;             /* REFUND_SUCCEEDED or REFUND_FAILED */
    const char *code;      /* the gateway's code of a failure */
    const char *pay_no;    /* the payment it names; "" or NULL when it names none */
    bool has_amount;       /* it says how much: */
    bool amount_total;     /* amount_cents is every refund of the payment so far */
    int64_t amount_cents;  /* else the refund's own amount */
};

/* Applies a refund notification with the relay's rules: the refund moves
 * to SUCCEEDED or FAILED from a state that is not final (refund_finish:
 * its event, its settle), and only when the notification matches it: the
 * payment and the amount the notification names must be the refund's
 * (REFUND_MISMATCH otherwise: nothing applied, an audit_log row
 * "refund.mismatch" on the refund's shard for the caller to alert). REFUND_OK (*changed says whether it moved: a
 * replay or a late word on a final refund changes nothing), or
 * REFUND_NOT_FOUND for a refund we did not ask for (no such number, or
 * one of another gateway): it is recorded as an audit_log row
 * "refund.unsolicited" on shard 1 for the caller to alert. */
enum refund_result refund_route_notice(const struct route *rt, const struct refund_notice *rn,
                                       bool *changed, struct refund *out,
                                       struct route_failure *fail);

/* refund_get / refund_change on the shard the refund number names (its
 * prefix; shard 1 without one). REFUND_NOT_FOUND when it names none. */
enum refund_result refund_route_get(const struct route *rt, const char *refund_no,
                                    struct refund *out, struct route_failure *fail);
enum refund_result refund_route_change(const struct route *rt, const struct refund_change_req *rq,
                                       struct refund *out, struct route_failure *fail);

/* Lists refunds across the shards, by shard (configured order) then id,
 * from shard index first after row id after. As outbox_route_list. */
enum route_result refund_route_list(const struct route *rt, const struct refund_filter *f,
                                    size_t first, uint64_t after, struct refund *items,
                                    size_t limit, size_t *n, struct route_scan *sc);

#endif
