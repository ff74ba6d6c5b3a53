/* stmts.h - every SQL statement the service runs, by id, with the order of
 * its parameters and, for a SELECT, an enum naming its result columns (read
 * them with the db_row_* accessors of db.h, never by bare position). The
 * text lives in stmts.c; db.c prepares each one once per connection on
 * first use. Parameters are '?' placeholders bound as strings; statuses
 * are bound from the enums of order_state.h, never written into the SQL
 * (the stored procedure of sql/migrations/0001_baseline.sql excepted: pay.c asserts at
 * compile time that the codes it writes are still the enums' values). */
#ifndef PAYCALLBACK_STMTS_H
#define PAYCALLBACK_STMTS_H

enum db_stmt {
    ST_PING, /* -> WSREP_READY / WSREP_LOCAL_STATE rows; none off Galera */
    /* payments (pay.c) */
    ST_PAY_CALL,        /* pay_no, order_no, amount, payload -> enum pay_call_col */
    ST_PAY_SELECT,      /* pay_no -> enum pay_seen_col */
    ST_ORDER_CURRENCY,  /* order_no -> enum order_currency_col */
    ST_PAY_NO_REGISTER, /* pay_no, order_no (sharded: the pay_no's registry shard) */
    ST_PAY_NO_OWNER,    /* pay_no -> enum pay_no_owner_col */
    ST_PAY_NO_REBIND,   /* order_no, pay_no, prior order_no, bound */
    ST_PAY_NO_RETAKE,   /* order_no, bound, pay_no, released */
    /* releasing a pay_no binding (pay_release.c) */
    ST_PAY_NO_LOCK,      /* pay_no -> enum pay_no_owner_col (FOR UPDATE) */
    ST_PAY_NO_SET_STATE, /* to, pay_no, order_no, from */
    ST_PAY_NO_FENCE,     /* pay_no, order_no, actor (the order's shard) */
    ST_PAY_LOCK_PAY_NO,  /* pay_no -> one column, order_no (FOR UPDATE) */
    ST_FENCE_PURGE,      /* days, batch */
    ST_ORDER_EXISTS,     /* order_no -> one column, 1 */
    /* the shard map (shardmap.c) */
    ST_SHARD_MAP_GET,   /* -> enum shard_map_col */
    ST_SHARD_MAP_ADOPT, /* shard_id, shard_ids, scheme, epoch: only where none is */
    ST_SHARD_MAP_PUT,   /* shard_id, shard_ids, scheme, epoch */
    ST_SHARD_ID_TABLE,  /* shards init: the identity's table, where none is */
    ST_SHARD_ID_GET,    /* -> enum shard_id_col */
    ST_SHARD_ID_PUT,    /* cluster_id, shard_id: only where none is */
    /* outbox (outbox.c) */
    ST_OUTBOX_INSERT, /* event_type, order_no, subject, payload */
    /* orders (orders.c) */
    ST_ORDER_CAS,                /* to, order_no, from */
    ST_STOCK_PRICE,              /* sku -> enum stock_price_col */
    ST_STOCK_TAKE,               /* q, sku, q */
    ST_STOCK_RETURN,             /* q, sku */
    ST_ORDER_INSERT,             /* order_no, user_id, request_id, sku, quantity, amount, status */
    ST_ORDER_OPEN_COUNT,         /* user_id, wait_pay -> one count column */
    ST_ORDER_OPEN_UNITS,         /* sku, user_id, wait_pay -> units of sku, units of all */
    ST_ORDER_USER_LOCK,          /* user_id: its order_user_lock row, written (locked) */
    ST_ORDER_BY_REQUEST,         /* user_id, request_id -> enum order_col */
    ST_ORDER_GET,                /* order_no -> enum order_col */
    ST_PAY_BY_ORDER,             /* order_no -> enum pay_list_col */
    ST_PAY_REFUND_BY_ORDER,      /* to_status, order_no, from_status */
    ST_ORDER_LOCK_ROW,           /* order_no -> enum order_col (FOR UPDATE) */
    ST_PAY_BY_ORDER_STATUS_LOCK, /* order_no, status -> enum pay_lock_col (FOR UPDATE) */
    /* the checkout registry of a sharded service (orders.c) */
    ST_CHECKOUT_INSERT, /* user_id, request_id, order_no, sku, quantity */
    ST_CHECKOUT_GET,    /* user_id, request_id -> enum checkout_col */
    /* MySQL token store (Redis degraded) */
    ST_TOKEN_INSERT,  /* token, ttl_s */
    ST_TOKEN_CONSUME, /* token */
    ST_TOKEN_PURGE,
    /* outbox delivery (outbox.c) */
    ST_OUTBOX_CLAIM,       /* owner, lease_s, pending, delivered, max */
    ST_OUTBOX_CLAIMED,     /* owner, pending -> enum outbox_claim_col */
    ST_OUTBOX_DELIVERED,   /* delivered, id, owner */
    ST_OUTBOX_FAILED,      /* max_attempts, dead, delay_ms, error, id, owner */
    ST_OUTBOX_RELEASE,     /* owner, pending */
    ST_OUTBOX_RETRY,       /* pending, id, dead */
    ST_OUTBOX_LIST,        /* state, after_id, limit -> enum outbox_list_col */
    ST_OUTBOX_GET,         /* id -> enum outbox_list_col, then payload */
    ST_OUTBOX_LIST_ORDER,  /* order_no, state (NULL: any) x2, after_id, limit
                              -> enum outbox_list_col */
    ST_OUTBOX_LIST_AT,     /* endpoint, delivery state, after_id, limit
                              -> enum outbox_list_col */
    ST_OUTBOX_DELIVERIES,  /* event id -> enum outbox_delivery_col, by endpoint */
    ST_OUTBOX_STATS,       /* pending, dead, pending, lag_s -> enum outbox_stats_col */
    ST_OUTBOX_PURGE,       /* delivered, days, batch */
    ST_FANOUT_SELECT,      /* pending, max -> enum fanout_col */
    ST_FANOUT_INSERT,      /* endpoint, id */
    ST_FANOUT_DONE,        /* id */
    ST_FANOUT_SETTLE,      /* dead, dead, delivered, pending, pending, max */
    ST_DELIVERY_CLAIM,     /* owner, lease_s, endpoint, pending, delivered, pending, max */
    ST_DELIVERY_CLAIMED,   /* owner, endpoint, pending -> enum outbox_claim_col */
    ST_DELIVERY_DELIVERED, /* delivered, endpoint, id, owner */
    ST_DELIVERY_ACKED,     /* delivered, owner, endpoint, "id,id,..." */
    ST_DELIVERY_FAILED,    /* max_attempts, dead, delay_ms, error, endpoint, id, owner */
    ST_DELIVERY_NOTE,      /* attempts, error, id: the outbox row's summary */
    ST_DELIVERY_RELEASE,   /* owner, pending */
    ST_DELIVERY_REVIVE,    /* pending, id, dead: the dead deliveries of a retried event */
    ST_DELIVERY_WAITING,   /* endpoint, pending -> one count */
    ST_DELIVERY_PURGE,     /* delivered, days, batch */
    ST_REPLAY_UPSERT,      /* endpoint, id, pending */
    ST_REPLAY_PENDING,     /* pending, id, pending */
    ST_REPLAY_SINCE,       /* since, after_id, max -> enum fanout_col */
    /* reconciliation and the refund queue (reconcile.c, refunds.c) */
    ST_WAIT_PAY_COUNT, /* wait_pay, age_s -> one count column */
    ST_WAIT_PAY_LIST,  /* wait_pay, age_s, limit -> enum stale_order_col */
    ST_WAIT_PAY_QUERY, /* wait_pay, age_s, after_time, after_time, after_id, limit
                                     -> enum query_order_col */
    ST_REFUND_COUNT,   /* refund_required -> one count column */
    ST_REFUND_LIST,    /* status, limit -> enum refund_col */
    ST_REFUND_LOCK,    /* pay_no -> enum refund_col (FOR UPDATE) */
    ST_REFUND_SETTLE,  /* settled, reference, actor, pay_no, required */
    ST_PAY_PURGE,      /* days, paid, settled, batch */
    ST_AUDIT_INSERT,   /* actor, action, subject, detail, request_id */
    ST_AUDIT_LIST,     /* after_id, actor x2, action x2, subject x2, limit (NULL: any)
                                     -> enum audit_col */
    /* Idempotency-Key records (idem.c) */
    ST_IDEM_CLAIM,        /* scope, key, fingerprint, state, owner, lease_ms, ttl_s */
    ST_IDEM_GET,          /* scope, key -> enum idem_col */
    ST_IDEM_TAKEOVER,     /* owner, lease_ms, scope, key, state, old owner */
    ST_IDEM_DONE,         /* state, status, body, scope, key, owner, running state */
    ST_IDEM_RELEASE,      /* scope, key, owner, state */
    ST_IDEM_DROP_EXPIRED, /* scope, key */
    ST_IDEM_PURGE,        /* at most 100 expired records */
    /* filling the registries of a database that becomes sharded (backfill.c) */
    ST_PAY_PAGE,                /* after_id, limit -> enum pay_page_col */
    ST_ORDER_PAGE,              /* after_id, limit -> enum order_page_col */
    ST_REGISTRY_PAY_PURGE,      /* days, batch */
    ST_REGISTRY_CHECKOUT_PURGE, /* days, batch */
    ST_CHECKOUT_AGED,           /* age_s, after_time, after_time, after_user, after_user,
                                     after_request, limit -> enum checkout_aged_col */
    ST_CHECKOUT_FORGET,         /* user_id, request_id, order_no */
    ST_BACKFILL_AT,             /* walk -> one column, after_id */
    ST_BACKFILL_SAVE,           /* walk, after_id */
    ST_BACKFILL_DONE,           /* walk */
    /* refund records (refund.c) */
    ST_PAY_SET_GATEWAY,   /* gateway, pay_no: only where none is recorded */
    ST_RF_PAY_LOCK,       /* pay_no -> enum rf_pay_col (FOR UPDATE) */
    ST_RF_SUM,            /* pay_no, failed -> one column, the sum of the others */
    ST_RF_BY_DEDUPE,      /* dedupe_key -> enum refund_row_col */
    ST_RF_INSERT,         /* refund_no, pay_no, order_no, gateway, amount, currency, state,
                           origin, dedupe_key, reason, requested_by */
    ST_RF_GET,            /* refund_no -> enum refund_row_col */
    ST_RF_APPROVE,        /* requested, approver, refund_no, awaiting */
    ST_RF_DUE_NOW,        /* refund_no, state x3: a waiting refund due now */
    ST_RF_LIST,           /* state x2, gateway x2, age_s x2, pay_no x2 (NULL: any), after_id, limit
                           -> enum refund_row_col */
    ST_RF_DUE,            /* state x3, gateway, limit -> enum rf_due_col */
    ST_RF_DUE_OTHERS,     /* state x3, gateway x8 (of none of these), limit -> enum rf_due_col */
    ST_RF_LEASED_OTHER,   /* pay_no, id -> one column: the payment's other refunds under a lease */
    ST_RF_LEASE,          /* owner, lease_s, id, state x3 */
    ST_RF_SUBMITTING,     /* submitted, id, owner: attempts + 1 */
    ST_RF_WAIT,           /* state, gateway_refund_id (NULL: kept), error, delay_ms, id, owner */
    ST_RF_FINISH,         /* state, gateway_refund_id (NULL: kept), failure_code, error,
                           refund_no, state x3 (the states it may leave) */
    ST_RF_RELEASE,        /* owner */
    ST_RF_OLDEST,         /* refund_required -> one column: seconds, 0 for none */
    ST_RF_UNASKED,        /* refund_required, gateway x8 (NULL: none), limit
                           -> enum rf_unasked_col */
    ST_RF_LIVE,           /* pay_no, state x4 (the states under way) -> refund_no, the oldest */
    ST_RF_STATE_SUM,      /* pay_no, state -> one column, the sum of its refunds in that state */
    ST_RF_INSERT_SETTLED, /* refund_no, amount, state, origin, dedupe_key, reason, requested_by,
                             approved_by, gateway_refund_id, pay_no: a refund made elsewhere */
    ST_RF_BY_ID,          /* id -> enum refund_row_col */
    ST_RF_NEWEST_IN,      /* pay_no, state -> refund_no of its newest refund in that state */
    ST_RF_REJECT,         /* failed, failure_code, error, refund_no, awaiting */
    ST_COUNT
};

/* ST_ORDER_BY_REQUEST, ST_ORDER_GET, ST_ORDER_LOCK_ROW: the whole order. */
enum order_col {
    OC_ORDER_NO,
    OC_USER_ID,
    OC_REQUEST_ID,
    OC_SKU,
    OC_QUANTITY,
    OC_AMOUNT,
    OC_STATUS,
    OC_CREATE_TIME,
    OC_UPDATE_TIME
};

/* ST_PAY_SELECT: a payment_record joined with its order's status (NULL
 * when the order is gone), and the record's age in seconds. */
enum pay_seen_col {
    PSC_ORDER_NO,
    PSC_AMOUNT,
    PSC_OUTCOME,
    PSC_ORDER_STATUS,
    PSC_AGE_S
};

/* ST_CHECKOUT_AGED: checkout bindings older than a grace, in order. */
enum checkout_aged_col {
    CAC_USER_ID,
    CAC_REQUEST_ID,
    CAC_ORDER_NO,
    CAC_CREATE_TIME
};

/* ST_SHARD_ID_GET: this database's identity. */
enum shard_id_col {
    SIC_CLUSTER_ID,
    SIC_SHARD_ID
};

/* ST_SHARD_MAP_GET: this database's row of the shard map. */
enum shard_map_col {
    SMC_SHARD_ID,
    SMC_SHARD_IDS,
    SMC_SCHEME,
    SMC_EPOCH
};

/* ST_PAY_NO_OWNER, ST_PAY_NO_LOCK: the order a pay_no is bound to, and
 * the binding's state (enum pay_no_state). */
enum pay_no_owner_col {
    PNC_ORDER_NO,
    PNC_STATE
};

/* ST_ORDER_CURRENCY: what a payment in a stated currency is checked against. */
enum order_currency_col {
    OCC_CURRENCY,
    OCC_AMOUNT
};

/* ST_PAY_CALL: the one row CALL pay_callback_v3 answers (sql/migrations/0010_double_charged.sql).
 * ORDER_STATUS is NULL when there is no order; ORDER_AMOUNT is set for
 * PAY_CALL_MISMATCH; the STORED_ columns describe the record for
 * PAY_CALL_SEEN (NULL if it vanished in between). */
enum pay_call_col {
    PCC_OUTCOME,
    PCC_ORDER_STATUS,
    PCC_ORDER_AMOUNT,
    PCC_STORED_ORDER_NO,
    PCC_STORED_AMOUNT,
    PCC_STORED_OUTCOME
};

/* Its PCC_OUTCOME column. */
enum pay_call_outcome {
    PAY_CALL_PAID = 1,      /* this payment moved the order WAIT_PAY -> PAID */
    PAY_CALL_REFUND = 2,    /* recorded as REFUND_REQUIRED: the order was not waiting */
    PAY_CALL_SEEN = 3,      /* pay_no was recorded before; nothing written */
    PAY_CALL_NOT_FOUND = 4, /* no such order; nothing written */
    PAY_CALL_MISMATCH = 5,  /* amount differs from the order's; nothing written */
    PAY_CALL_RELEASED = 6   /* the binding was released from this order: fenced, nothing written */
};

/* ST_STOCK_PRICE */
enum stock_price_col {
    SPC_PRICE
};

/* ST_PAY_BY_ORDER: the payments of an order, oldest first. */
enum pay_list_col {
    PLC_PAY_NO,
    PLC_AMOUNT,
    PLC_STATUS,
    PLC_CREATE_TIME
};

/* ST_PAY_BY_ORDER_STATUS_LOCK */
enum pay_lock_col {
    PKC_PAY_NO,
    PKC_AMOUNT
};

/* ST_CHECKOUT_GET: the order a checkout was given, and what it asked for. */
enum checkout_col {
    CKC_ORDER_NO,
    CKC_SKU,
    CKC_QUANTITY
};

/* ST_PAY_PAGE: payment records in id order, a page at a time. */
enum pay_page_col {
    PPC_ID,
    PPC_PAY_NO,
    PPC_ORDER_NO
};

/* ST_ORDER_PAGE: orders in id order, with what their checkout asked for. */
enum order_page_col {
    OPC_ID,
    OPC_USER_ID,
    OPC_REQUEST_ID,
    OPC_ORDER_NO,
    OPC_SKU,
    OPC_QUANTITY
};

/* ST_IDEM_GET: a key's record; LIVE is 1 while the lease runs, EXPIRED 1
 * once the record is past its window (both by the database's clock, which
 * every instance shares). BODY is long: db_query_one_long. */
enum idem_col {
    IC_FINGERPRINT,
    IC_STATE,
    IC_OWNER,
    IC_STATUS,
    IC_LIVE,
    IC_EXPIRED,
    IC_BODY
};

/* The stored procedures this build calls. Their names carry their version
 * (sql/migrations/); db_probe checks that each exists. */
#define DB_PROC_PAY_CALLBACK "pay_callback_v3"
#define DB_PROC_COUNT 1
extern const char *const stmt_procedures[DB_PROC_COUNT];

/* ST_FANOUT_SELECT: events not yet handed to their endpoints. */
enum fanout_col {
    FOC_ID,
    FOC_EVENT_TYPE
};

/* ST_OUTBOX_CLAIMED: the events this relay holds, oldest first. */
enum outbox_claim_col {
    OBC_ID,
    OBC_EVENT_TYPE,
    OBC_ORDER_NO,
    OBC_SUBJECT,
    OBC_PAYLOAD,
    OBC_ATTEMPTS,
    OBC_CREATE_TIME,
    OBC_CURRENCY /* ST_DELIVERY_CLAIMED only: the order's, NULL when it is gone */
};

/* ST_OUTBOX_LIST, ST_OUTBOX_GET (which adds OLC_PAYLOAD). */
enum outbox_list_col {
    OLS_ID,
    OLS_EVENT_TYPE,
    OLS_ORDER_NO,
    OLS_STATE,
    OLS_ATTEMPTS,
    OLS_CREATE_TIME,
    OLS_NEXT_ATTEMPT,
    OLS_PUBLISHED,
    OLS_LAST_ERROR,
    OLS_PAYLOAD
};

/* ST_OUTBOX_DELIVERIES: an event's delivery at each endpoint. */
enum outbox_delivery_col {
    ODC_ENDPOINT,
    ODC_STATE,
    ODC_ATTEMPTS,
    ODC_NEXT_ATTEMPT,
    ODC_PUBLISHED,
    ODC_LAST_ERROR
};

/* ST_OUTBOX_STATS: counts and the age of the oldest pending event. */
enum outbox_stats_col {
    OSC_PENDING,
    OSC_DEAD,
    OSC_OLDEST_MS,
    OSC_LAGGING
};

/* ST_WAIT_PAY_LIST */
enum stale_order_col {
    SOC_ORDER_NO,
    SOC_USER_ID,
    SOC_AMOUNT,
    SOC_CREATE_TIME
};

/* ST_WAIT_PAY_QUERY: stale orders after a (create_time, id) cursor, in
 * that order; CURSOR_TIME is written so that it can be bound back. */
enum query_order_col {
    QOC_ORDER_NO,
    QOC_ID,
    QOC_CURSOR_TIME
};

/* ST_AUDIT_LIST */
enum audit_col {
    AUC_ID,
    AUC_ACTOR,
    AUC_ACTION,
    AUC_SUBJECT,
    AUC_DETAIL,
    AUC_REQUEST_ID,
    AUC_CREATE_TIME
};

/* ST_REFUND_LIST, ST_REFUND_LOCK */
enum refund_col {
    RFC_PAY_NO,
    RFC_ORDER_NO,
    RFC_AMOUNT,
    RFC_STATUS,
    RFC_CREATE_TIME,
    RFC_REFERENCE,
    RFC_SETTLED_BY,
    RFC_SETTLED_AT
};

/* ST_RF_PAY_LOCK: the payment a refund gives back. */
enum rf_pay_col {
    RPC_ORDER_NO,
    RPC_AMOUNT,
    RPC_STATUS,
    RPC_GATEWAY
};

/* ST_RF_DUE, ST_RF_DUE_OTHERS: refunds a relay may claim. */
enum rf_due_col {
    RDC_ID,
    RDC_PAY_NO
};

/* ST_RF_UNASKED: payments to refund that have no refund yet. */
enum rf_unasked_col {
    RUC_PAY_NO,
    RUC_OUTCOME
};

/* ST_RF_BY_DEDUPE, ST_RF_GET, ST_RF_LIST, ST_RF_BY_ID: a refund record,
 * with the amount of its payment. */
enum refund_row_col {
    RRC_ID,
    RRC_REFUND_NO,
    RRC_PAY_NO,
    RRC_ORDER_NO,
    RRC_GATEWAY,
    RRC_AMOUNT,
    RRC_CURRENCY,
    RRC_STATE,
    RRC_ORIGIN,
    RRC_REASON,
    RRC_REQUESTED_BY,
    RRC_APPROVED_BY,
    RRC_GATEWAY_REFUND_ID,
    RRC_FAILURE_CODE,
    RRC_LAST_ERROR,
    RRC_ATTEMPTS,
    RRC_CREATE_TIME,
    RRC_UPDATE_TIME,
    RRC_FINISHED_AT,
    RRC_NEXT_ATTEMPT,
    RRC_PAY_AMOUNT
};

extern const char *const stmt_sql[ST_COUNT];

#endif
