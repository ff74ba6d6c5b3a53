-- Rows in every table of the previous schema version, as a running
-- service leaves them: tests/migrate/check-migrate.sh loads them before it
-- migrates and checks that every one is still there, unchanged, after.
-- Columns named explicitly: a later migration may add columns, never
-- remove these.
INSERT INTO stock (sku, price, num) VALUES ('MIG-1', 12.34, 7), ('MIG-2', 0.01, 0);
INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, currency, status)
VALUES ('MIG-ORDER-1', 'u1', 'r1', 'MIG-1', 1, 12.34, 'CNY', 2),
       ('MIG-ORDER-2', 'u1', 'r2', 'MIG-1', 2, 24.68, 'EUR', 1),
       ('MIG-ORDER-3', 'u2', 'r1', 'MIG-2', 3, 0.03, 'CNY', 9);
INSERT INTO payment_record (pay_no, order_no, amount, status, outcome)
VALUES ('MIG-PAY-1', 'MIG-ORDER-1', 12.34, 1, 1),
       ('MIG-PAY-2', 'MIG-ORDER-1', 12.34, 2, 2);
UPDATE payment_record SET status = 3, settle_reference = 'RF-1', settled_by = 'ops',
       settled_at = '2026-01-02 03:04:05.678' WHERE pay_no = 'MIG-PAY-2';
INSERT INTO outbox (event_type, order_no, payload, state, attempts, last_error)
VALUES ('order.paid', 'MIG-ORDER-1', '{"order_no":"MIG-ORDER-1"}', 1, 1, NULL),
       ('order.canceled', 'MIG-ORDER-3', '{"order_no":"MIG-ORDER-3"}', 2, 12, 'HTTP 500');
INSERT INTO pay_no_registry (pay_no, order_no) VALUES ('MIG-PAY-1', 'MIG-ORDER-1');
INSERT INTO checkout_registry (user_id, request_id, order_no, sku, quantity)
VALUES ('u1', 'r1', 'MIG-ORDER-1', 'MIG-1', 1);
INSERT INTO audit_log (actor, action, subject, detail, request_id)
VALUES ('ops', 'settle', 'payment:MIG-PAY-2', 'reference=RF-1', 'req-1');
INSERT INTO idem_key (scope, idem_key, fingerprint, state, owner, lease_until, status, body, expires_at)
VALUES ('key:ops', 'k1', REPEAT('a', 64), 2, REPEAT('b', 32), '2026-01-01 00:00:00', 200,
        '{"ok":true}', '2099-01-01 00:00:00');
INSERT INTO idem_token (token, expires_at) VALUES (REPEAT('c', 32), '2099-01-01 00:00:00');
