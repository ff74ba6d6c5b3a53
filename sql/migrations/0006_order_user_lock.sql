-- One row per user_id that made an order on this database. With
-- orders.max_open_per_user set, an order's creation writes its user's row
-- first (creates = creates + 1, a real change, so Galera certifies it too),
-- which makes one user's creates on this database run one at a time: each
-- counts the user's WAIT_PAY orders with every earlier one committed, and
-- the cap is exact. Rows of other users are not touched: different users
-- never wait on each other here.
CREATE TABLE IF NOT EXISTS order_user_lock (
    user_id VARCHAR(64)     NOT NULL,
    creates BIGINT UNSIGNED NOT NULL DEFAULT 1,
    PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
