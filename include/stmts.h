/* stmts.h - every SQL statement the service runs, by id. The text lives in
 * stmts.c; db.c prepares each one once per connection on first use.
 * Parameters are '?' placeholders bound as strings. */
#ifndef PAYCALLBACK_STMTS_H
#define PAYCALLBACK_STMTS_H

enum db_stmt {
    ST_PING,
    /* payment callback */
    ST_PAY_INSERT,                /* pay_no, order_no, amount */
    ST_PAY_SELECT,                /* pay_no -> order_no, amount, outcome, order status */
    ST_PAY_MARK_REFUND,           /* pay_no: status = outcome = REFUND_REQUIRED */
    ST_ORDER_LOCK,                /* order_no -> amount, status, sku, quantity (FOR UPDATE) */
    ST_ORDER_CAS,                 /* to, order_no, from */
    ST_OUTBOX_INSERT,             /* event_type, order_no, payload */
    /* orders */
    ST_STOCK_PRICE,               /* sku -> price */
    ST_STOCK_TAKE,                /* q, sku, q */
    ST_STOCK_RETURN,              /* q, sku */
    ST_ORDER_INSERT,              /* order_no, user_id, request_id, sku, quantity, amount */
    ST_ORDER_BY_REQUEST,          /* user_id, request_id -> ORDER_COLS */
    ST_ORDER_GET,                 /* order_no -> ORDER_COLS */
    ST_PAY_BY_ORDER,              /* order_no -> pay_no, amount, status, create_time */
    ST_PAY_REFUND_BY_ORDER,       /* order_no: PAID payments -> REFUND_REQUIRED */
    ST_ORDER_LOCK_ROW,            /* order_no -> ORDER_COLS (FOR UPDATE) */
    ST_PAY_PAID_BY_ORDER_LOCK,    /* order_no -> pay_no, amount of PAID payments (FOR UPDATE) */
    /* MySQL token store (Redis degraded) */
    ST_TOKEN_INSERT,              /* token, ttl_s */
    ST_TOKEN_CONSUME,             /* token */
    ST_TOKEN_PURGE,
    ST_COUNT
};

/* ORDER_COLS: order_no, user_id, request_id, sku, quantity, amount, status,
 * create_time, update_time. */
enum order_col {
    OC_ORDER_NO, OC_USER_ID, OC_REQUEST_ID, OC_SKU, OC_QUANTITY, OC_AMOUNT,
    OC_STATUS, OC_CREATE_TIME, OC_UPDATE_TIME
};

/* The stored procedures this build calls. Their names carry the version of
 * sql/schema.sql they belong to; db_probe checks that each exists. */
#define DB_PROC_PAY_CALLBACK "pay_callback_v1"
#define DB_PROC_COUNT        1
extern const char *const stmt_procedures[DB_PROC_COUNT];

/* payment_record.status and .outcome */
enum pay_status { PAY_PAID = 1, PAY_REFUND_REQUIRED = 2 };

extern const char *const stmt_sql[ST_COUNT];

#endif
