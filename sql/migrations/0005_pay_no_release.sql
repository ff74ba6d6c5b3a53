-- The release of a pay_no binding by an operator (docs/sharding.md, "Releasing
-- a pay_no binding"): a binding of pay_no_registry is BOUND (1), RELEASING (2)
-- while a release is under way, or RELEASED (3), when the next callback with
-- another order may take it. Rows made before carry BOUND.
ALTER TABLE pay_no_registry ADD COLUMN IF NOT EXISTS state TINYINT UNSIGNED NOT NULL DEFAULT 1;

-- A fence on the shard of the order a binding named when it was released:
-- while it stands, no payment of that pay_no for that order commits there.
-- The release writes it, then looks for a payment; pay_callback_v2 writes
-- its payment, then looks for a fence; InnoDB serialises the two.
CREATE TABLE IF NOT EXISTS pay_no_fence (
    pay_no      VARCHAR(64)   NOT NULL,
    order_no    VARCHAR(64)   NOT NULL,
    actor       VARCHAR(64)   NOT NULL,
    create_time DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (pay_no, order_no),
    KEY idx_create_time (create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- pay_callback_v1 and one more step: after its payment_record insert, a
-- locking read of the fence of (pay_no, order_no); a fence rolls the
-- payment back and answers outcome 6 (RELEASED): nothing written. Either
-- the payment commits first (the release then finds it and is refused),
-- or the fence does (this call meets it), or they cross and InnoDB's
-- deadlock detection rolls one back, whose re-run meets the other's commit.
-- pay_callback_v1 stays for the build before this one.
DROP PROCEDURE IF EXISTS pay_callback_v2;
DELIMITER //
CREATE PROCEDURE pay_callback_v2(IN p_pay_no VARCHAR(64), IN p_order_no VARCHAR(64),
                                 IN p_amount DECIMAL(12,2), IN p_payload TEXT)
    MODIFIES SQL DATA
    SQL SECURITY INVOKER
BEGIN
    DECLARE v_dup TINYINT DEFAULT 0;
    DECLARE v_rows INT DEFAULT 0;
    DECLARE v_fenced INT DEFAULT 0;
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
        SELECT COUNT(*) INTO v_fenced FROM pay_no_fence
         WHERE pay_no = p_pay_no AND order_no = p_order_no LOCK IN SHARE MODE;
        IF v_fenced > 0 THEN
            ROLLBACK;
            SET v_outcome = 6;
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
    END IF;
    SELECT v_outcome AS outcome, v_status AS order_status, v_amount AS order_amount,
           v_seen_order_no AS stored_order_no, v_seen_amount AS stored_amount,
           v_seen_outcome AS stored_outcome;
END//
DELIMITER ;
