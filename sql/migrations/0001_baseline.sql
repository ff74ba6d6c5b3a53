-- paycallback schema. InnoDB for transactions and row locks, utf8mb4 with a
-- binary collation so identifiers compare byte for byte ("PAY1" != "pay1").
-- Money is DECIMAL(12,2), never FLOAT. Re-runnable: every statement is IF NOT EXISTS.

CREATE TABLE IF NOT EXISTS orders (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    order_no    VARCHAR(64)   NOT NULL,
    user_id     VARCHAR(64)   NOT NULL,
    request_id  VARCHAR(64)   NOT NULL,
    sku         VARCHAR(64)   NOT NULL,
    quantity    INT UNSIGNED  NOT NULL,
    amount      DECIMAL(12,2) NOT NULL,
    status      TINYINT       NOT NULL DEFAULT 1 COMMENT '1 WAIT_PAY 2 PAID 3 SHIPPED 4 FINISHED 9 CANCELED',
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    update_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_order_no (order_no),
    UNIQUE KEY uk_user_request (user_id, request_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Currency is part of the amount: a payment in another currency than the
-- order's does not pay it. ISO 4217 alpha code, set when the order is made
-- and never changed; existing orders are CNY. ADD COLUMN IF NOT EXISTS
-- keeps the file re-runnable on an older schema.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS currency CHAR(3) NOT NULL DEFAULT 'CNY' AFTER amount;

-- One row per bank payment. UNIQUE(pay_no) is the first line of defence of
-- the callback. outcome is what the first callback answered and never
-- changes (replays repeat it); status is the payment's current state.
CREATE TABLE IF NOT EXISTS payment_record (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    pay_no      VARCHAR(64)   NOT NULL,
    order_no    VARCHAR(64)   NOT NULL,
    amount      DECIMAL(12,2) NOT NULL,
    status      TINYINT       NOT NULL COMMENT '1 PAID 2 REFUND_REQUIRED',
    outcome     TINYINT       NOT NULL COMMENT 'first answer: 1 PAID 2 REFUND_REQUIRED',
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    update_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_pay_no (pay_no),
    KEY idx_order_no (order_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS stock (
    sku         VARCHAR(64)   NOT NULL,
    price       DECIMAL(12,2) NOT NULL,
    num         INT           NOT NULL,
    update_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (sku),
    CONSTRAINT ck_stock_num CHECK (num >= 0),
    CONSTRAINT ck_stock_price CHECK (price >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The registries of a sharded service (mysql.shards; docs/sharding.md). A
-- row is placed on the shard a hash of its key picks, is written before
-- the order's own transaction, and is never deleted, so a crash between the
-- two leaves a binding the retry follows rather than a second owner. One
-- database has them too, empty.
-- Which order a pay_no pays: a pay_no presented for two orders on two
-- shards is refused as on one database.
CREATE TABLE IF NOT EXISTS pay_no_registry (
    pay_no      VARCHAR(64)   NOT NULL,
    order_no    VARCHAR(64)   NOT NULL,
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (pay_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Which order a checkout (user_id, request_id) made, and with what: one
-- order per checkout whatever shard its sku's stock lives on.
CREATE TABLE IF NOT EXISTS checkout_registry (
    user_id     VARCHAR(64)   NOT NULL,
    request_id  VARCHAR(64)   NOT NULL,
    order_no    VARCHAR(64)   NOT NULL,
    sku         VARCHAR(64)   NOT NULL,
    quantity    INT UNSIGNED  NOT NULL,
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (user_id, request_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Transactional outbox: written in the same transaction as the status
-- change it announces, published by a relay. One event of a type per order.
CREATE TABLE IF NOT EXISTS outbox (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_type   VARCHAR(32)   NOT NULL,
    order_no     VARCHAR(64)   NOT NULL,
    payload      TEXT          NOT NULL,
    create_time  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    published_at DATETIME(3)   NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_event_order (event_type, order_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Delivery state of each event (the relay in the service POSTs events to the
-- shop's webhook): state 0 PENDING, 1 DELIVERED, 2 DEAD (attempts ran out;
-- an operator can send it again). A relay claims pending events by writing
-- its id and a lease; a relay that dies leaves the lease to run out, and the
-- event is claimed again, so nothing is lost and the shop dedupes by id.
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS state TINYINT NOT NULL DEFAULT 0 COMMENT '0 PENDING 1 DELIVERED 2 DEAD',
    ADD COLUMN IF NOT EXISTS attempts INT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS next_attempt_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    ADD COLUMN IF NOT EXISTS lease_owner VARCHAR(40) NULL,
    ADD COLUMN IF NOT EXISTS lease_until DATETIME(3) NULL,
    ADD COLUMN IF NOT EXISTS last_error VARCHAR(200) NULL,
    ADD KEY IF NOT EXISTS idx_due (state, next_attempt_at),
    ADD KEY IF NOT EXISTS idx_order_state (order_no, state),
    ADD KEY IF NOT EXISTS idx_published (state, published_at),
    ADD KEY IF NOT EXISTS idx_lease_owner (lease_owner);
-- Events written before delivery existed and already marked published.
UPDATE outbox SET state = 1 WHERE state = 0 AND published_at IS NOT NULL;

-- Settling a double charge (status 2 REFUND_REQUIRED -> 3 REFUND_SETTLED):
-- who settled it, with which refund reference, when. Never deleted.
ALTER TABLE payment_record
    ADD COLUMN IF NOT EXISTS settle_reference VARCHAR(64) NULL,
    ADD COLUMN IF NOT EXISTS settled_by VARCHAR(64) NULL,
    ADD COLUMN IF NOT EXISTS settled_at DATETIME(3) NULL,
    ADD KEY IF NOT EXISTS idx_status_time (status, create_time);

-- Reconciliation looks for orders left in WAIT_PAY.
ALTER TABLE orders ADD KEY IF NOT EXISTS idx_status_time (status, create_time);

-- Every state change an operator makes through the operator API, with the
-- name of the credential that made it. Append-only.
CREATE TABLE IF NOT EXISTS audit_log (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    actor       VARCHAR(64)   NOT NULL COMMENT 'name of the operator credential',
    action      VARCHAR(32)   NOT NULL,
    subject     VARCHAR(140)  NOT NULL,
    detail      VARCHAR(255)  NOT NULL,
    request_id  VARCHAR(64)   NOT NULL,
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    KEY idx_subject (subject)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Idempotency-Key records: one row per (caller scope, key). A first request
-- claims its key (state 1 RUNNING, with a lease that lets a retry take over
-- from an attempt that died); its answer is stored (state 2 DONE, status and
-- body) in the same transaction as its effect, and replayed to every repeat.
-- Rows expire after idempotency.ttl_s and are purged in small batches.
CREATE TABLE IF NOT EXISTS idem_key (
    scope        VARCHAR(128)  NOT NULL COMMENT 'caller: key:<credential> or user:<user_id>',
    idem_key     VARCHAR(255)  NOT NULL,
    fingerprint  CHAR(64)      NOT NULL COMMENT 'sha256 of method, path, scope, sha256(body)',
    state        TINYINT       NOT NULL COMMENT '1 RUNNING 2 DONE',
    owner        CHAR(32)      NOT NULL COMMENT 'the attempt holding the claim',
    lease_until  DATETIME(3)   NOT NULL,
    status       SMALLINT      NULL,
    body         MEDIUMTEXT    NULL,
    create_time  DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    expires_at   DATETIME(3)   NOT NULL,
    PRIMARY KEY (scope, idem_key),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- Anti-resubmit tokens while Redis is unreachable. Consuming is one DELETE
-- whose affected-row count says whether this was the first use.
CREATE TABLE IF NOT EXISTS idem_token (
    token       CHAR(32)      NOT NULL,
    expires_at  DATETIME(3)   NOT NULL,
    PRIMARY KEY (token),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- The payment callback's whole transaction in one call, so a callback costs
-- one client/server round trip instead of six. Same rules as the statements
-- it replaces: the payment_record insert comes first and only a duplicate
-- key (1062) there means "seen before"; then the order row lock, the amount
-- check, the CAS WAIT_PAY -> PAID (the only move into PAID) with its
-- order.paid outbox row, or the REFUND_REQUIRED mark when the order is no
-- longer waiting. The procedure commits or rolls back itself; any other
-- error rolls back and reaches the caller unchanged, so a deadlock (1213)
-- is re-run by the caller like any transaction.
-- It runs with the caller's privileges (SQL SECURITY INVOKER), not those
-- of whoever applied this file, usually root.
-- The version is part of the name: a change of behaviour or parameters is
-- a new procedure (pay_callback_v2) next to the old one, and the service
-- checks at start for exactly the version it calls.
-- Answers one row: outcome (1 PAID, 2 REFUND_REQUIRED, 3 SEEN: pay_no was
-- recorded before, 4 ORDER_NOT_FOUND, 5 AMOUNT_MISMATCH), order_status,
-- order_amount, and for SEEN the stored order_no, amount and first outcome
-- (NULL if the record vanished in between).
DROP PROCEDURE IF EXISTS pay_callback_v1;
DELIMITER //
CREATE PROCEDURE pay_callback_v1(IN p_pay_no VARCHAR(64), IN p_order_no VARCHAR(64),
                                 IN p_amount DECIMAL(12,2), IN p_payload TEXT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_dup TINYINT DEFAULT 0;
    DECLARE v_rows INT DEFAULT 0;
    DECLARE v_outcome TINYINT DEFAULT NULL;
    DECLARE v_status TINYINT DEFAULT NULL;
    DECLARE v_amount DECIMAL(12,2) DEFAULT NULL;
    DECLARE v_seen_order_no VARCHAR(64) DEFAULT NULL;
    DECLARE v_seen_amount DECIMAL(12,2) DEFAULT NULL;
    DECLARE v_seen_outcome TINYINT DEFAULT NULL;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        ROLLBACK;
        RESIGNAL;
    END;

    START TRANSACTION;
    BEGIN
        DECLARE CONTINUE HANDLER FOR 1062 SET v_dup = 1;
        INSERT INTO payment_record (pay_no, order_no, amount, status, outcome)
        VALUES (p_pay_no, p_order_no, p_amount, 1, 1);
    END;
    IF v_dup = 1 THEN
        ROLLBACK;
        SET v_outcome = 3;
        SELECT p.order_no, p.amount, p.outcome, o.status
          INTO v_seen_order_no, v_seen_amount, v_seen_outcome, v_status
          FROM payment_record p LEFT JOIN orders o ON o.order_no = p.order_no
         WHERE p.pay_no = p_pay_no;
    ELSE
        SELECT amount, status INTO v_amount, v_status
          FROM orders WHERE order_no = p_order_no FOR UPDATE;
        IF v_status IS NULL THEN
            ROLLBACK;
            SET v_outcome = 4;
        ELSEIF v_amount <> p_amount THEN
            ROLLBACK;
            SET v_outcome = 5;
        ELSE
            IF v_status = 1 THEN
                UPDATE orders SET status = 2 WHERE order_no = p_order_no AND status = 1;
                SET v_rows = ROW_COUNT();
            END IF;
            IF v_rows = 1 THEN
                INSERT INTO outbox (event_type, order_no, payload)
                VALUES ('order.paid', p_order_no, p_payload);
                SET v_status = 2, v_outcome = 1;
            ELSE
                UPDATE payment_record SET status = 2, outcome = 2 WHERE pay_no = p_pay_no;
                SET v_outcome = 2;
            END IF;
            COMMIT;
        END IF;
    END IF;
    SELECT v_outcome AS outcome, v_status AS order_status, v_amount AS order_amount,
           v_seen_order_no AS stored_order_no, v_seen_amount AS stored_amount,
           v_seen_outcome AS stored_outcome;
END//
DELIMITER ;
