/* stmts.c - the SQL text of every statement, indexed by enum db_stmt.
 * Keep the parameter and column order in step with stmts.h. */
#include "stmts.h"

#define ORDER_COLS "order_no, user_id, request_id, sku, quantity, amount, status, " \
                   "DATE_FORMAT(create_time, '%Y-%m-%dT%H:%i:%S.%fZ'), " \
                   "DATE_FORMAT(update_time, '%Y-%m-%dT%H:%i:%S.%fZ')"

const char *const stmt_sql[ST_COUNT] = {
    /* No rows on a plain server; on Galera, whether the node takes writes.
     * Bounded, and never waiting on the cluster (an operator's
     * wsrep_sync_wait would hang it on a node outside the primary). */
    [ST_PING] =
        "SET STATEMENT max_statement_time = 1, wsrep_sync_wait = 0 FOR "
        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
        "WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_LOCAL_STATE')",
    [ST_PAY_INSERT] =
        "INSERT INTO payment_record (pay_no, order_no, amount, status, outcome) "
        "VALUES (?, ?, ?, ?, ?)",
    [ST_PAY_SELECT] =
        "SELECT p.order_no, p.amount, p.outcome, o.status FROM payment_record p "
        "LEFT JOIN orders o ON o.order_no = p.order_no WHERE p.pay_no = ?",
    [ST_PAY_MARK_REFUND] =
        "UPDATE payment_record SET status = ?, outcome = ? WHERE pay_no = ?",
    [ST_ORDER_LOCK] =
        "SELECT amount, status, sku, quantity FROM orders WHERE order_no = ? FOR UPDATE",
    [ST_ORDER_CAS] =
        "UPDATE orders SET status = ? WHERE order_no = ? AND status = ?",
    [ST_OUTBOX_INSERT] =
        "INSERT INTO outbox (event_type, order_no, payload) VALUES (?, ?, ?)",
    [ST_STOCK_PRICE] = "SELECT price FROM stock WHERE sku = ?",
    [ST_STOCK_TAKE] = "UPDATE stock SET num = num - ? WHERE sku = ? AND num >= ?",
    [ST_STOCK_RETURN] = "UPDATE stock SET num = num + ? WHERE sku = ?",
    [ST_ORDER_INSERT] =
        "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
    [ST_ORDER_BY_REQUEST] =
        "SELECT " ORDER_COLS " FROM orders WHERE user_id = ? AND request_id = ?",
    [ST_ORDER_GET] = "SELECT " ORDER_COLS " FROM orders WHERE order_no = ?",
    [ST_PAY_BY_ORDER] =
        "SELECT pay_no, amount, status, "
        "DATE_FORMAT(create_time, '%Y-%m-%dT%H:%i:%S.%fZ') "
        "FROM payment_record WHERE order_no = ? ORDER BY create_time, pay_no",
    [ST_PAY_REFUND_BY_ORDER] =
        "UPDATE payment_record SET status = ? WHERE order_no = ? AND status = ?",
    [ST_ORDER_LOCK_ROW] = "SELECT " ORDER_COLS " FROM orders WHERE order_no = ? FOR UPDATE",
    [ST_PAY_BY_ORDER_STATUS_LOCK] =
        "SELECT pay_no, amount FROM payment_record WHERE order_no = ? AND status = ? "
        "ORDER BY pay_no FOR UPDATE",
    [ST_TOKEN_INSERT] =
        "INSERT INTO idem_token (token, expires_at) VALUES (?, NOW(3) + INTERVAL ? SECOND)",
    [ST_TOKEN_CONSUME] = "DELETE FROM idem_token WHERE token = ? AND expires_at > NOW(3)",
    [ST_TOKEN_PURGE] = "DELETE FROM idem_token WHERE expires_at <= NOW(3) LIMIT 1000",
};

const char *const stmt_procedures[DB_PROC_COUNT] = { DB_PROC_PAY_CALLBACK };
