-- Delivery state of each event at each of the shop's endpoints (webhook.url
-- and the "webhooks" of the configuration). The changes that announce an
-- event still write one outbox row; the relay copies it here once per
-- endpoint that subscribes to its type (the fan-out), so one failing
-- endpoint never holds back another, and an order's events go out in order
-- within each endpoint. state 0 PENDING, 1 DELIVERED, 2 DEAD, as in outbox.
-- An outbox row handed to its endpoints keeps state 0 with next_attempt_at
-- at 9999-12-31 until none of its deliveries is pending; it then becomes 1,
-- or 2 when one of them is dead.
CREATE TABLE IF NOT EXISTS webhook_delivery (
    endpoint        VARCHAR(32)     NOT NULL,
    event_id        BIGINT UNSIGNED NOT NULL,
    order_no        VARCHAR(64)     NOT NULL,
    state           TINYINT         NOT NULL DEFAULT 0 COMMENT '0 PENDING 1 DELIVERED 2 DEAD',
    attempts        INT             NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    lease_owner     VARCHAR(40)     NULL,
    lease_until     DATETIME(3)     NULL,
    last_error      VARCHAR(200)    NULL,
    published_at    DATETIME(3)     NULL,
    create_time     DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (endpoint, event_id),
    KEY idx_claim (endpoint, state, event_id),
    KEY idx_order (endpoint, order_no, state),
    KEY idx_event (event_id, state),
    KEY idx_published (state, published_at),
    KEY idx_lease_owner (lease_owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
