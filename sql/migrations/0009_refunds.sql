-- Refunds as records of their own. A refund gives back part or all of one
-- payment through its gateway's refund API. refund_no is the request number
-- the gateway sees (Alipay out_request_no, WeChat out_refund_no, Stripe
-- Idempotency-Key): drawn once when the row is made and never changed, so
-- every resubmission is the same refund at the gateway. The sum of a
-- payment's refunds not FAILED never exceeds the payment: the creating
-- transaction locks the payment_record row, sums, then inserts.
-- state: 0 AWAITING_APPROVAL 1 REQUESTED 2 SUBMITTED 3 SUCCEEDED 4 FAILED
-- 5 UNKNOWN (the gateway's answer was lost: queried, resubmitted only with
-- the same refund_no). origin: 1 OPERATOR 2 DOUBLE_PAYMENT 3 CANCEL.
-- dedupe_key makes the refund a double payment or a cancel asks for one
-- per payment ("double:<pay_no>", "cancel:<pay_no>"); NULL for operator
-- refunds, which an Idempotency-Key guards. A relay claims due rows under a
-- lease (lease_owner, lease_until) as the outbox relay does. Never deleted.
CREATE TABLE IF NOT EXISTS refund (
    id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    refund_no         VARCHAR(64)   NOT NULL,
    pay_no            VARCHAR(64)   NOT NULL,
    order_no          VARCHAR(64)   NOT NULL,
    gateway           VARCHAR(32)   NULL,
    amount            DECIMAL(12,2) NOT NULL,
    currency          CHAR(3)       NOT NULL,
    state             TINYINT       NOT NULL,
    origin            TINYINT       NOT NULL,
    dedupe_key        VARCHAR(80)   NULL,
    reason            VARCHAR(128)  NULL,
    requested_by      VARCHAR(64)   NULL,
    approved_by       VARCHAR(64)   NULL,
    gateway_refund_id VARCHAR(64)   NULL,
    failure_code      VARCHAR(64)   NULL,
    last_error        VARCHAR(200)  NULL,
    attempts          INT           NOT NULL DEFAULT 0,
    next_attempt_at   DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    lease_owner       VARCHAR(40)   NULL,
    lease_until       DATETIME(3)   NULL,
    create_time       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    update_time       DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    finished_at       DATETIME(3)   NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_refund_no (refund_no),
    UNIQUE KEY uk_dedupe (dedupe_key),
    KEY idx_pay_no (pay_no, state),
    KEY idx_due (state, next_attempt_at),
    KEY idx_state_time (state, create_time, id),
    KEY idx_lease_owner (lease_owner),
    CONSTRAINT ck_refund_amount CHECK (amount > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The gateway profile a payment came through (NULL: the native callback),
-- so that its refunds go to the same gateway.
ALTER TABLE payment_record ADD COLUMN IF NOT EXISTS gateway VARCHAR(32) NULL;

-- An order may have many events of one type when each has its own subject
-- (refund.succeeded of two partial refunds: subject = refund_no). Events of
-- the order itself keep subject ''.
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS subject VARCHAR(64) NOT NULL DEFAULT '' AFTER order_no,
    ADD UNIQUE KEY IF NOT EXISTS uk_order_event_subject (order_no, event_type, subject);
ALTER TABLE outbox DROP KEY IF EXISTS uk_order_event;
