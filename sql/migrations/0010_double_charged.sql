-- payment.double_charged: a second payment for an order already paid
-- (PAID, SHIPPED or FINISHED) is recorded REFUND_REQUIRED and, in the same
-- transaction, announced to the shop by an outbox event whose subject is
-- the payment's pay_no (one per payment; the event id is
-- <order_no>:payment.double_charged:<pay_no>) and whose payload is the one
-- the call carries for order.paid (order_no, pay_no, gateway, amount; the
-- currency is added at delivery). A payment for a CANCELED order is
-- REFUND_REQUIRED as before, without the event: that order was not paid.
--
-- pay_callback_v2 and this one step; still one CALL per callback.
-- pay_callback_v2 stays for the build before this one.
DROP PROCEDURE IF EXISTS pay_callback_v3;
DELIMITER //
CREATE PROCEDURE pay_callback_v3(IN p_pay_no VARCHAR(64), IN p_order_no VARCHAR(64),
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
                    IF v_status IN (2, 3, 4) THEN
                        INSERT INTO outbox (event_type, order_no, subject, payload)
                        VALUES ('payment.double_charged', p_order_no, p_pay_no, p_payload);
                    END IF;
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
