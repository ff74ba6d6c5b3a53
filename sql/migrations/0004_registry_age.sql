-- Retention reads the registries by age: checkout bindings of attempts that
-- made no order once retention.orphan_checkout_s old, and every binding
-- older than retention.registry_days.
ALTER TABLE pay_no_registry ADD KEY IF NOT EXISTS idx_create_time (create_time);
ALTER TABLE checkout_registry ADD KEY IF NOT EXISTS idx_create_time (create_time, user_id, request_id);
