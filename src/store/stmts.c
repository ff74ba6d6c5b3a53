/* stmts.c - the SQL text of every statement, indexed by enum db_stmt.
 * Keep the parameter and column order in step with stmts.h. */
#include "stmts.h"

#define ORDER_COLS                                                   \
    "order_no, user_id, request_id, sku, quantity, amount, status, " \
    "DATE_FORMAT(create_time, '%Y-%m-%dT%H:%i:%S.%fZ'), "            \
    "DATE_FORMAT(update_time, '%Y-%m-%dT%H:%i:%S.%fZ')"

#define DB_FANNED_OUT "'9999-12-31 00:00:00'" /* outbox.next_attempt_at once fanned out */
#define ISO_TIME(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%S.%fZ')"
#define OUTBOX_COLS                                                                      \
    "id, event_type, order_no, state, attempts, " ISO_TIME("create_time") ", " ISO_TIME( \
        "next_attempt_at") ", " ISO_TIME("published_at") ", last_error"
/* OUTBOX_COLS of outbox o, in a join. */
#define OUTBOX_COLS_O                                                                                \
    "o.id, o.event_type, o.order_no, o.state, o.attempts, " ISO_TIME("o.create_time") ", " ISO_TIME( \
        "o.next_attempt_at") ", " ISO_TIME("o.published_at") ", o.last_error"
#define DELIVERY_COLS                                                        \
    "endpoint, state, attempts, " ISO_TIME("next_attempt_at") ", " ISO_TIME( \
        "published_at") ", last_error"
#define REFUND_COLS                                \
    "pay_no, order_no, amount, status, " ISO_TIME( \
        "create_time") ", "                        \
                       "settle_reference, settled_by, " ISO_TIME("settled_at")

#define RF_COLS                                                                                     \
    "r.id, r.refund_no, r.pay_no, r.order_no, r.gateway, r.amount, r.currency, r.state, r.origin, " \
    "r.reason, r.requested_by, r.approved_by, r.gateway_refund_id, r.failure_code, r.last_error, "  \
    "r.attempts, " ISO_TIME("r.create_time") ", " ISO_TIME("r.update_time") ", " ISO_TIME(          \
        "r.finished_at") ", " ISO_TIME("r.next_attempt_at") ", "                                    \
                                                            "(SELECT p.amount FROM payment_record p WHERE p.pay_no = r.pay_no)"

/* A refund that is due and free, of a payment with no other refund under a
 * lease: two refunds of one payment are never in flight together.
 * ST_RF_LEASED_OTHER re-checks it under the payment's lock. */
#define RF_DUE                                                                           \
    "r.next_attempt_at <= NOW(3) AND (r.lease_until IS NULL OR r.lease_until < NOW(3)) " \
    "AND NOT EXISTS (SELECT 1 FROM refund o WHERE o.pay_no = r.pay_no AND o.id <> r.id " \
    "AND o.lease_until >= NOW(3))"

const char *const stmt_sql[ST_COUNT] = {
    /* No rows on a plain server; on Galera, whether the node takes writes.
     * Bounded, and never waiting on the cluster (an operator's
     * wsrep_sync_wait would hang it on a node outside the primary). */
    [ST_PING] = "SET STATEMENT max_statement_time = 1, wsrep_sync_wait = 0 FOR "
                "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                "WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_LOCAL_STATE')",
    [ST_PAY_CALL] = "CALL " DB_PROC_PAY_CALLBACK "(?, ?, ?, ?)",
    [ST_ORDER_CURRENCY] = "SELECT currency, amount FROM orders WHERE order_no = ?",
    [ST_PAY_NO_REGISTER] = "INSERT INTO pay_no_registry (pay_no, order_no) VALUES (?, ?)",
    [ST_PAY_NO_OWNER] = "SELECT order_no, state FROM pay_no_registry WHERE pay_no = ?",
    [ST_PAY_NO_REBIND] = "UPDATE pay_no_registry SET order_no = ?, create_time = NOW(3) "
                         "WHERE pay_no = ? AND order_no = ? AND state = ?",
    [ST_PAY_NO_RETAKE] = "UPDATE pay_no_registry SET order_no = ?, state = ?, create_time = NOW(3) "
                         "WHERE pay_no = ? AND state = ?",
    [ST_PAY_NO_LOCK] = "SELECT order_no, state FROM pay_no_registry WHERE pay_no = ? FOR UPDATE",
    [ST_PAY_NO_SET_STATE] =
        "UPDATE pay_no_registry SET state = ? WHERE pay_no = ? AND order_no = ? AND state = ?",
    [ST_PAY_NO_FENCE] = "INSERT INTO pay_no_fence (pay_no, order_no, actor) VALUES (?, ?, ?)",
    [ST_PAY_LOCK_PAY_NO] = "SELECT order_no FROM payment_record WHERE pay_no = ? FOR UPDATE",
    [ST_FENCE_PURGE] =
        "DELETE FROM pay_no_fence WHERE create_time < NOW(3) - INTERVAL ? DAY LIMIT ?",
    [ST_ORDER_EXISTS] = "SELECT 1 FROM orders WHERE order_no = ?",
    [ST_SHARD_MAP_GET] = "SELECT shard_id, shard_ids, scheme, epoch FROM shard_map",
    [ST_SHARD_MAP_ADOPT] =
        "INSERT IGNORE INTO shard_map (singleton, shard_id, shard_ids, scheme, epoch) "
        "VALUES (1, ?, ?, ?, ?)",
    [ST_SHARD_MAP_PUT] = "REPLACE INTO shard_map (singleton, shard_id, shard_ids, scheme, epoch) "
                         "VALUES (1, ?, ?, ?, ?)",
    /* The identity of a shard's database, written once by shards init:
     * the one table that init makes, where migrate has not (yet). */
    [ST_SHARD_ID_TABLE] = "CREATE TABLE IF NOT EXISTS shard_identity ("
                          "singleton TINYINT UNSIGNED NOT NULL DEFAULT 1, "
                          "cluster_id VARCHAR(64) NOT NULL, "
                          "shard_id TINYINT UNSIGNED NOT NULL, "
                          "init_time DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
                          "PRIMARY KEY (singleton), "
                          "CONSTRAINT ck_shard_identity_singleton CHECK (singleton = 1)"
                          ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    [ST_SHARD_ID_GET] = "SELECT cluster_id, shard_id FROM shard_identity",
    [ST_SHARD_ID_PUT] = "INSERT IGNORE INTO shard_identity (singleton, cluster_id, shard_id) "
                        "VALUES (1, ?, ?)",
    [ST_PAY_SELECT] = "SELECT p.order_no, p.amount, p.outcome, o.status, "
                      "TIMESTAMPDIFF(SECOND, p.create_time, NOW(3)) FROM payment_record p "
                      "LEFT JOIN orders o ON o.order_no = p.order_no WHERE p.pay_no = ?",
    [ST_ORDER_CAS] = "UPDATE orders SET status = ? WHERE order_no = ? AND status = ?",
    [ST_OUTBOX_INSERT] =
        "INSERT INTO outbox (event_type, order_no, subject, payload) VALUES (?, ?, ?, ?)",
    [ST_STOCK_PRICE] = "SELECT price FROM stock WHERE sku = ?",
    [ST_STOCK_TAKE] = "UPDATE stock SET num = num - ? WHERE sku = ? AND num >= ?",
    [ST_STOCK_RETURN] = "UPDATE stock SET num = num + ? WHERE sku = ?",
    [ST_ORDER_OPEN_COUNT] = "SELECT COUNT(*) FROM orders WHERE user_id = ? AND status = ?",
    [ST_ORDER_OPEN_UNITS] = "SELECT COALESCE(SUM(CASE WHEN sku = ? THEN quantity END), 0), "
                            "COALESCE(SUM(quantity), 0) FROM orders WHERE user_id = ? AND "
                            "status = ?",
    [ST_ORDER_USER_LOCK] = "INSERT INTO order_user_lock (user_id) VALUES (?) "
                           "ON DUPLICATE KEY UPDATE creates = creates + 1",
    [ST_ORDER_INSERT] =
        "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
    [ST_ORDER_BY_REQUEST] =
        "SELECT " ORDER_COLS " FROM orders WHERE user_id = ? AND request_id = ?",
    [ST_ORDER_GET] = "SELECT " ORDER_COLS " FROM orders WHERE order_no = ?",
    [ST_PAY_BY_ORDER] = "SELECT pay_no, amount, status, "
                        "DATE_FORMAT(create_time, '%Y-%m-%dT%H:%i:%S.%fZ') "
                        "FROM payment_record WHERE order_no = ? ORDER BY create_time, pay_no",
    [ST_PAY_REFUND_BY_ORDER] =
        "UPDATE payment_record SET status = ? WHERE order_no = ? AND status = ?",
    [ST_ORDER_LOCK_ROW] = "SELECT " ORDER_COLS " FROM orders WHERE order_no = ? FOR UPDATE",
    [ST_PAY_BY_ORDER_STATUS_LOCK] =
        "SELECT pay_no, amount FROM payment_record WHERE order_no = ? AND status = ? "
        "ORDER BY pay_no FOR UPDATE",
    [ST_CHECKOUT_INSERT] =
        "INSERT INTO checkout_registry (user_id, request_id, order_no, sku, quantity) "
        "VALUES (?, ?, ?, ?, ?)",
    [ST_CHECKOUT_GET] = "SELECT order_no, sku, quantity FROM checkout_registry "
                        "WHERE user_id = ? AND request_id = ?",
    [ST_TOKEN_INSERT] =
        "INSERT INTO idem_token (token, expires_at) VALUES (?, NOW(3) + INTERVAL ? SECOND)",
    [ST_TOKEN_CONSUME] = "DELETE FROM idem_token WHERE token = ? AND expires_at > NOW(3)",
    [ST_TOKEN_PURGE] = "DELETE FROM idem_token WHERE expires_at <= NOW(3) LIMIT 1000",
    /* One statement takes a batch: pending, due, not leased (or the lease
     * ran out), and no earlier event of the same order still undelivered,
     * so an order's events go out in the order they were written. */
    [ST_OUTBOX_CLAIM] =
        "UPDATE outbox o SET o.lease_owner = ?, o.lease_until = NOW(3) + INTERVAL ? SECOND "
        "WHERE o.state = ? AND o.next_attempt_at <= NOW(3) "
        "AND (o.lease_until IS NULL OR o.lease_until < NOW(3)) "
        "AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.order_no = o.order_no "
        "AND p.state <> ? AND (p.create_time < o.create_time "
        "OR (p.create_time = o.create_time AND p.id < o.id))) "
        "ORDER BY o.create_time, o.id LIMIT ?",
    [ST_OUTBOX_CLAIMED] = "SELECT id, event_type, order_no, subject, payload, attempts, " ISO_TIME(
        "create_time") " "
                       "FROM outbox WHERE lease_owner = ? AND state = ? AND lease_until > NOW(3) "
                       "ORDER BY create_time, id",
    [ST_OUTBOX_DELIVERED] =
        "UPDATE outbox SET state = ?, published_at = NOW(3), attempts = attempts + 1, "
        "lease_owner = NULL, lease_until = NULL, last_error = NULL "
        "WHERE id = ? AND lease_owner = ? AND lease_until > NOW(3)",
    /* state is set before attempts grows: SET runs left to right. */
    [ST_OUTBOX_FAILED] =
        "UPDATE outbox SET state = IF(attempts + 1 >= ?, ?, state), "
        "next_attempt_at = NOW(3) + INTERVAL ? * 1000 MICROSECOND, last_error = ?, "
        "lease_owner = NULL, lease_until = NULL, attempts = attempts + 1 "
        "WHERE id = ? AND lease_owner = ?",
    [ST_OUTBOX_RELEASE] = "UPDATE outbox SET lease_owner = NULL, lease_until = NULL "
                          "WHERE lease_owner = ? AND state = ?",
    [ST_OUTBOX_RETRY] =
        "UPDATE outbox SET state = ?, attempts = 0, next_attempt_at = NOW(3), "
        "last_error = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = ?",
    [ST_OUTBOX_LIST] =
        "SELECT " OUTBOX_COLS " FROM outbox WHERE state = ? AND id > ? ORDER BY id LIMIT ?",
    [ST_OUTBOX_GET] = "SELECT " OUTBOX_COLS ", payload FROM outbox WHERE id = ?",
    /* An order's events: the unique key leads with order_no. */
    [ST_OUTBOX_LIST_ORDER] = "SELECT " OUTBOX_COLS " FROM outbox WHERE order_no = ? "
                             "AND (? IS NULL OR state = ?) AND id > ? ORDER BY id LIMIT ?",
    /* The events whose delivery at one endpoint is in a state (idx_claim). */
    [ST_OUTBOX_LIST_AT] = "SELECT " OUTBOX_COLS_O " FROM webhook_delivery d "
                          "JOIN outbox o ON o.id = d.event_id WHERE d.endpoint = ? "
                          "AND d.state = ? AND d.event_id > ? ORDER BY d.event_id LIMIT ?",
    [ST_OUTBOX_DELIVERIES] = "SELECT " DELIVERY_COLS " FROM webhook_delivery WHERE event_id = ? "
                             "ORDER BY endpoint",
    [ST_OUTBOX_STATS] =
        "SELECT COALESCE(SUM(state = ?), 0), COALESCE(SUM(state = ?), 0), "
        "COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(IF(state = ?, create_time, NULL)), NOW(3)) "
        "DIV 1000, 0), "
        "COALESCE(SUM(state = ? AND create_time < NOW(3) - INTERVAL ? SECOND), 0) "
        "FROM outbox WHERE state IN (?, ?)",
    [ST_OUTBOX_PURGE] =
        "DELETE FROM outbox WHERE state = ? AND published_at < NOW(3) - INTERVAL ? DAY "
        "LIMIT ?",
    /* Fan-out: events due and not yet handed to their endpoints, which
     * no other relay is handing out right now. */
    [ST_FANOUT_SELECT] = "SELECT id, event_type FROM outbox WHERE state = ? "
                         "AND next_attempt_at <= NOW(3) ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
    [ST_FANOUT_INSERT] = "INSERT IGNORE INTO webhook_delivery (endpoint, event_id, order_no) "
                         "SELECT ?, id, order_no FROM outbox WHERE id = ?",
    [ST_FANOUT_DONE] = "UPDATE outbox SET next_attempt_at = " DB_FANNED_OUT " WHERE id = ?",
    /* An event none of whose deliveries is pending any more: DEAD when one
     * of them is, else DELIVERED; attempts the most any endpoint took. */
    [ST_FANOUT_SETTLE] =
        "UPDATE outbox o SET "
        "o.published_at = IF(EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.event_id = o.id "
        "AND d.state = ?), NULL, NOW(3)), "
        "o.state = IF(EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.event_id = o.id "
        "AND d.state = ?), 2, ?), "
        "o.attempts = GREATEST(o.attempts, COALESCE((SELECT MAX(d.attempts) FROM "
        "webhook_delivery d WHERE d.event_id = o.id), 0)) "
        "WHERE o.state = ? AND o.next_attempt_at = " DB_FANNED_OUT " "
        "AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.event_id = o.id AND d.state = ?) "
        "ORDER BY o.id LIMIT ?",
    /* As ST_OUTBOX_CLAIM, per endpoint: an order's earlier event must be
     * delivered there, and handed out, first. Along idx_claim: the primary
     * key, which the optimizer prefers for the ORDER BY, would read (and
     * lock) every delivered row of the endpoint before the first pending. */
    [ST_DELIVERY_CLAIM] =
        "UPDATE webhook_delivery d FORCE INDEX (idx_claim) SET d.lease_owner = ?, "
        "d.lease_until = NOW(3) + INTERVAL ? SECOND "
        "WHERE d.endpoint = ? AND d.state = ? AND d.next_attempt_at <= NOW(3) "
        "AND (d.lease_until IS NULL OR d.lease_until < NOW(3)) "
        "AND NOT EXISTS (SELECT 1 FROM webhook_delivery p WHERE p.endpoint = d.endpoint "
        "AND p.order_no = d.order_no AND p.state <> ? AND p.event_id < d.event_id) "
        "AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_no = d.order_no "
        "AND e.state = ? AND e.id < d.event_id AND e.next_attempt_at < " DB_FANNED_OUT ") "
        "ORDER BY d.event_id LIMIT ?",
    [ST_DELIVERY_CLAIMED] =
        "SELECT o.id, o.event_type, o.order_no, o.subject, o.payload, d.attempts, " ISO_TIME(
            "o.create_time") ", r.currency "
                             "FROM webhook_delivery d JOIN outbox o ON o.id = d.event_id "
                             "LEFT JOIN orders r ON r.order_no = o.order_no "
                             "WHERE d.lease_owner = ? AND d.endpoint = ? AND d.state = ? "
                             "AND d.lease_until > NOW(3) ORDER BY d.event_id",
    [ST_DELIVERY_DELIVERED] =
        "UPDATE webhook_delivery SET state = ?, published_at = NOW(3), attempts = attempts + 1, "
        "lease_owner = NULL, lease_until = NULL, last_error = NULL "
        "WHERE endpoint = ? AND event_id = ? AND lease_owner = ? AND lease_until > NOW(3)",
    /* A batch's acknowledgements in one statement, along idx_lease_owner:
     * every row still under the relay's lease, of the ids listed. */
    [ST_DELIVERY_ACKED] =
        "UPDATE webhook_delivery SET state = ?, published_at = NOW(3), attempts = attempts + 1, "
        "lease_owner = NULL, lease_until = NULL, last_error = NULL "
        "WHERE lease_owner = ? AND endpoint = ? AND lease_until > NOW(3) "
        "AND FIND_IN_SET(event_id, ?)",
    [ST_DELIVERY_FAILED] =
        "UPDATE webhook_delivery SET state = IF(attempts + 1 >= ?, ?, state), "
        "next_attempt_at = NOW(3) + INTERVAL ? * 1000 MICROSECOND, last_error = ?, "
        "lease_owner = NULL, lease_until = NULL, attempts = attempts + 1 "
        "WHERE endpoint = ? AND event_id = ? AND lease_owner = ?",
    [ST_DELIVERY_NOTE] =
        "UPDATE outbox SET attempts = GREATEST(attempts, ?), last_error = ? WHERE id = ?",
    [ST_DELIVERY_RELEASE] = "UPDATE webhook_delivery SET lease_owner = NULL, lease_until = NULL "
                            "WHERE lease_owner = ? AND state = ?",
    [ST_DELIVERY_REVIVE] =
        "UPDATE webhook_delivery SET state = ?, attempts = 0, next_attempt_at = NOW(3), "
        "last_error = NULL, lease_owner = NULL, lease_until = NULL "
        "WHERE event_id = ? AND state = ?",
    [ST_DELIVERY_WAITING] =
        "SELECT COUNT(*) FROM webhook_delivery WHERE endpoint = ? AND state = ?",
    [ST_DELIVERY_PURGE] =
        "DELETE FROM webhook_delivery WHERE state = ? AND published_at < NOW(3) - INTERVAL ? DAY "
        "LIMIT ?",
    [ST_REPLAY_UPSERT] =
        "INSERT INTO webhook_delivery (endpoint, event_id, order_no) "
        "SELECT ?, id, order_no FROM outbox WHERE id = ? "
        "ON DUPLICATE KEY UPDATE state = ?, attempts = 0, next_attempt_at = NOW(3), "
        "last_error = NULL, lease_owner = NULL, lease_until = NULL, published_at = NULL",
    /* A handed-out (or settled) event waits on its deliveries again; one
     * not handed out yet is left to the fan-out, which adds the others. */
    [ST_REPLAY_PENDING] =
        "UPDATE outbox SET state = ?, next_attempt_at = " DB_FANNED_OUT ", published_at = NULL "
        "WHERE id = ? AND (state <> ? OR next_attempt_at = " DB_FANNED_OUT ")",
    [ST_REPLAY_SINCE] = "SELECT id, event_type FROM outbox WHERE create_time >= ? AND id > ? "
                        "ORDER BY id LIMIT ?",
    [ST_WAIT_PAY_COUNT] =
        "SELECT COUNT(*) FROM orders WHERE status = ? AND create_time < NOW(3) - INTERVAL ? SECOND",
    [ST_WAIT_PAY_LIST] = "SELECT order_no, user_id, amount, " ISO_TIME(
        "create_time") " FROM orders "
                       "WHERE status = ? AND create_time < NOW(3) - INTERVAL ? SECOND "
                       "ORDER BY create_time, order_no LIMIT ?",
    /* Keyset pagination along idx_status_time (status, create_time, id). */
    [ST_WAIT_PAY_QUERY] =
        "SELECT order_no, id, DATE_FORMAT(create_time, '%Y-%m-%d %H:%i:%s.%f') FROM orders "
        "WHERE status = ? AND create_time < NOW(3) - INTERVAL ? SECOND "
        "AND (create_time > ? OR (create_time = ? AND id > ?)) "
        "ORDER BY create_time, id LIMIT ?",
    [ST_REFUND_COUNT] = "SELECT COUNT(*) FROM payment_record WHERE status = ?",
    [ST_REFUND_LIST] = "SELECT " REFUND_COLS " FROM payment_record WHERE status = ? "
                       "ORDER BY create_time, pay_no LIMIT ?",
    [ST_REFUND_LOCK] = "SELECT " REFUND_COLS " FROM payment_record WHERE pay_no = ? FOR UPDATE",
    [ST_REFUND_SETTLE] =
        "UPDATE payment_record SET status = ?, settle_reference = ?, settled_by = ?, "
        "settled_at = NOW(3) WHERE pay_no = ? AND status = ?",
    /* Only settled history goes: a PAID or a settled record past the window;
     * an unsettled REFUND_REQUIRED record stays until someone settles it. */
    [ST_PAY_PURGE] = "DELETE FROM payment_record WHERE create_time < NOW(3) - INTERVAL ? DAY "
                     "AND status IN (?, ?) LIMIT ?",
    [ST_AUDIT_INSERT] = "INSERT INTO audit_log (actor, action, subject, detail, request_id) "
                        "VALUES (?, ?, ?, ?, ?)",
    [ST_AUDIT_LIST] = "SELECT id, actor, action, subject, detail, request_id, " ISO_TIME(
        "create_time") " "
                       "FROM audit_log WHERE id > ? AND (? IS NULL OR actor = ?) "
                       "AND (? IS NULL OR action = ?) AND (? IS NULL OR subject = ?) ORDER BY id LIMIT ?",
    [ST_IDEM_CLAIM] =
        "INSERT INTO idem_key (scope, idem_key, fingerprint, state, owner, lease_until, expires_at) "
        "VALUES (?, ?, ?, ?, ?, NOW(3) + INTERVAL ? * 1000 MICROSECOND, NOW(3) + INTERVAL ? SECOND)",
    [ST_IDEM_GET] =
        "SELECT fingerprint, state, owner, status, lease_until > NOW(3), expires_at <= NOW(3), body "
        "FROM idem_key WHERE scope = ? AND idem_key = ?",
    [ST_IDEM_TAKEOVER] =
        "UPDATE idem_key SET owner = ?, lease_until = NOW(3) + INTERVAL ? * 1000 MICROSECOND "
        "WHERE scope = ? AND idem_key = ? AND state = ? AND owner = ? AND lease_until <= NOW(3)",
    [ST_IDEM_DONE] = "UPDATE idem_key SET state = ?, status = ?, body = ? "
                     "WHERE scope = ? AND idem_key = ? AND owner = ? AND state = ?",
    [ST_IDEM_RELEASE] =
        "DELETE FROM idem_key WHERE scope = ? AND idem_key = ? AND owner = ? AND state = ?",
    [ST_IDEM_DROP_EXPIRED] =
        "DELETE FROM idem_key WHERE scope = ? AND idem_key = ? AND expires_at <= NOW(3)",
    [ST_IDEM_PURGE] = "DELETE FROM idem_key WHERE expires_at <= NOW(3) LIMIT 100",
    [ST_PAY_PAGE] =
        "SELECT id, pay_no, order_no FROM payment_record WHERE id > ? ORDER BY id LIMIT ?",
    [ST_REGISTRY_PAY_PURGE] =
        "DELETE FROM pay_no_registry WHERE create_time < NOW(3) - INTERVAL ? DAY LIMIT ?",
    [ST_REGISTRY_CHECKOUT_PURGE] =
        "DELETE FROM checkout_registry WHERE create_time < NOW(3) - INTERVAL ? DAY LIMIT ?",
    [ST_CHECKOUT_AGED] =
        "SELECT user_id, request_id, order_no, DATE_FORMAT(create_time, '%Y-%m-%d %H:%i:%S.%f') "
        "FROM checkout_registry WHERE create_time < NOW(3) - INTERVAL ? SECOND "
        "AND (create_time > ? OR (create_time = ? AND (user_id > ? OR (user_id = ? "
        "AND request_id > ?)))) ORDER BY create_time, user_id, request_id LIMIT ?",
    [ST_CHECKOUT_FORGET] =
        "DELETE FROM checkout_registry WHERE user_id = ? AND request_id = ? AND order_no = ?",
    [ST_BACKFILL_AT] = "SELECT after_id FROM backfill_progress WHERE walk = ?",
    [ST_BACKFILL_SAVE] =
        "INSERT INTO backfill_progress (walk, after_id) VALUES (?, ?) "
        "ON DUPLICATE KEY UPDATE after_id = VALUES(after_id), update_time = NOW(3)",
    [ST_BACKFILL_DONE] = "DELETE FROM backfill_progress WHERE walk = ?",
    [ST_PAY_SET_GATEWAY] =
        "UPDATE payment_record SET gateway = ? WHERE pay_no = ? AND gateway IS NULL",
    [ST_RF_PAY_LOCK] =
        "SELECT order_no, amount, status, gateway FROM payment_record WHERE pay_no = ? FOR UPDATE",
    [ST_RF_SUM] = "SELECT COALESCE(SUM(amount), 0) FROM refund WHERE pay_no = ? AND state <> ?",
    [ST_RF_BY_DEDUPE] = "SELECT " RF_COLS " FROM refund r WHERE r.dedupe_key = ?",
    [ST_RF_INSERT] = "INSERT INTO refund (refund_no, pay_no, order_no, gateway, amount, currency, "
                     "state, origin, dedupe_key, reason, requested_by) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_RF_GET] = "SELECT " RF_COLS " FROM refund r WHERE r.refund_no = ?",
    [ST_RF_APPROVE] = "UPDATE refund SET state = ?, approved_by = ?, next_attempt_at = NOW(3) "
                      "WHERE refund_no = ? AND state = ?",
    [ST_RF_DUE_NOW] = "UPDATE refund SET next_attempt_at = NOW(3) "
                      "WHERE refund_no = ? AND state IN (?, ?, ?)",
    /* Keyset pagination by id; the filters are optional (NULL: any). */
    [ST_RF_LIST] = "SELECT " RF_COLS " FROM refund r WHERE (? IS NULL OR r.state = ?) "
                   "AND (? IS NULL OR r.gateway = ?) "
                   "AND (? IS NULL OR r.create_time < NOW(3) - INTERVAL ? SECOND) "
                   "AND (? IS NULL OR r.pay_no = ?) "
                   "AND r.id > ? ORDER BY r.id LIMIT ?",
    /* Due refunds of one gateway profile (or of none of eight), each of a
     * payment with no other refund under a lease: two refunds of one
     * payment are never in flight together. ST_RF_LEASE re-checks under
     * the payment's lock. */
    [ST_RF_DUE] = "SELECT r.id, r.pay_no FROM refund r WHERE r.state IN (?, ?, ?) "
                  "AND r.gateway = ? AND " RF_DUE " ORDER BY r.next_attempt_at, r.id LIMIT ?",
    [ST_RF_DUE_OTHERS] =
        "SELECT r.id, r.pay_no FROM refund r WHERE r.state IN (?, ?, ?) AND (r.gateway IS NULL "
        "OR r.gateway NOT IN (?, ?, ?, ?, ?, ?, ?, ?)) AND " RF_DUE
        " ORDER BY r.next_attempt_at, r.id LIMIT ?",
    [ST_RF_LEASED_OTHER] = "SELECT COUNT(*) FROM refund WHERE pay_no = ? AND id <> ? "
                           "AND lease_until >= NOW(3) LOCK IN SHARE MODE",
    [ST_RF_LEASE] = "UPDATE refund SET lease_owner = ?, lease_until = NOW(3) + INTERVAL ? SECOND "
                    "WHERE id = ? AND state IN (?, ?, ?) AND next_attempt_at <= NOW(3) "
                    "AND (lease_until IS NULL OR lease_until < NOW(3))",
    [ST_RF_BY_ID] = "SELECT " RF_COLS " FROM refund r WHERE r.id = ?",
    [ST_RF_SUBMITTING] = "UPDATE refund SET state = ?, attempts = attempts + 1 "
                         "WHERE id = ? AND lease_owner = ? AND lease_until > NOW(3)",
    [ST_RF_WAIT] =
        "UPDATE refund SET state = ?, gateway_refund_id = COALESCE(?, gateway_refund_id), "
        "last_error = ?, next_attempt_at = NOW(3) + INTERVAL ? * 1000 MICROSECOND, "
        "lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
    [ST_RF_FINISH] =
        "UPDATE refund SET state = ?, gateway_refund_id = COALESCE(?, gateway_refund_id), "
        "failure_code = ?, last_error = ?, finished_at = NOW(3), lease_owner = NULL, "
        "lease_until = NULL WHERE refund_no = ? AND state IN (?, ?, ?)",
    /* A payment to refund (REFUND_REQUIRED: a double payment, or the
     * payment of a canceled order) through a gateway with a refund API,
     * with no automatic refund yet. */
    [ST_RF_UNASKED] = "SELECT p.pay_no, p.outcome FROM payment_record p WHERE p.status = ? "
                      "AND p.gateway IN (?, ?, ?, ?, ?, ?, ?, ?) AND NOT EXISTS (SELECT 1 FROM "
                      "refund r WHERE r.dedupe_key IN (CONCAT('double:', p.pay_no), "
                      "CONCAT('cancel:', p.pay_no))) ORDER BY p.create_time LIMIT ?",
    [ST_RF_OLDEST] = "SELECT COALESCE(TIMESTAMPDIFF(SECOND, MIN(create_time), NOW(3)), 0) "
                     "FROM payment_record WHERE status = ? AND outcome = ?",
    [ST_RF_RELEASE] = "UPDATE refund SET lease_owner = NULL, lease_until = NULL "
                      "WHERE lease_owner = ?",
    [ST_RF_LIVE] = "SELECT refund_no FROM refund WHERE pay_no = ? AND state IN (?, ?, ?, ?) "
                   "ORDER BY id LIMIT 1",
    [ST_RF_STATE_SUM] =
        "SELECT COALESCE(SUM(amount), 0) FROM refund WHERE pay_no = ? AND state = ?",
    [ST_RF_INSERT_SETTLED] =
        "INSERT INTO refund (refund_no, pay_no, order_no, gateway, amount, currency, state, "
        "origin, dedupe_key, reason, requested_by, approved_by, gateway_refund_id, finished_at) "
        "SELECT ?, p.pay_no, p.order_no, p.gateway, ?, o.currency, ?, ?, ?, ?, ?, ?, ?, NOW(3) "
        "FROM payment_record p JOIN orders o ON o.order_no = p.order_no WHERE p.pay_no = ?",
    [ST_RF_NEWEST_IN] =
        "SELECT refund_no FROM refund WHERE pay_no = ? AND state = ? ORDER BY id DESC LIMIT 1",
    [ST_RF_REJECT] = "UPDATE refund SET state = ?, failure_code = ?, last_error = ?, "
                     "finished_at = NOW(3) WHERE refund_no = ? AND state = ?",
    [ST_ORDER_PAGE] = "SELECT id, user_id, request_id, order_no, sku, quantity FROM orders "
                      "WHERE id > ? ORDER BY id LIMIT ?",
};

const char *const stmt_procedures[DB_PROC_COUNT] = { DB_PROC_PAY_CALLBACK };
