-- Demo stock for the README walkthrough. Re-running resets nothing that exists.
INSERT IGNORE INTO stock (sku, price, num) VALUES
    ('SHOE-42', 899.00, 100),
    ('SOCK-01',  19.90, 500),
    ('HAT-7',   129.50,  10);
