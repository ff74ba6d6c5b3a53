-- Every first payment inserts an outbox row, so each secondary index of
-- outbox is paid for on the callback's path (bench/README.md, the index
-- sitting). Kept: idx_due (state, next_attempt_at), which the relay's claim
-- and the operator listing and stats read, and the purge too;
-- idx_lease_owner, which finds a relay's claimed events among however many
-- are pending. Reshaped: the one-event-per-type key leads with order_no, so
-- it also serves the claim's look-up of an order's earlier events, which
-- idx_order_state (order_no, state) did. Dropped: idx_published
-- (state, published_at), which no plan chose: the purge of delivered events
-- (state, published_at < ...) reads idx_due's state as it did with it.
-- The new key is added before the old ones go, so a running build keeps a
-- unique key and an index on order_no throughout.
ALTER TABLE outbox ADD UNIQUE KEY IF NOT EXISTS uk_order_event (order_no, event_type);
ALTER TABLE outbox DROP KEY IF EXISTS uk_event_order;
ALTER TABLE outbox DROP KEY IF EXISTS idx_order_state;
ALTER TABLE outbox DROP KEY IF EXISTS idx_published;
