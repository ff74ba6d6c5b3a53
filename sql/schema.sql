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

-- Anti-resubmit tokens while Redis is unreachable. Consuming is one DELETE
-- whose affected-row count says whether this was the first use.
CREATE TABLE IF NOT EXISTS idem_token (
    token       CHAR(32)      NOT NULL,
    expires_at  DATETIME(3)   NOT NULL,
    PRIMARY KEY (token),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
