#!/usr/bin/env python3
"""shard_check.py - the invariants of a sharded paycallback, read from every
shard's database (make test-scale, topology 3; docs/sharding.md).

  shard_check.py --shard 1=PORT --shard 2=PORT --scope T3
                 [--stock SKU=INITIAL ...] [--paid FILE=K ...] [--exist FILE ...]
                 [--canceled FILE ...]

Rows in scope: orders whose user_id, payments and pay_no registry rows whose
pay_no, checkout registry rows whose user_id, stock rows whose sku start
with the scope. Checked:
  - every order is on the shard its order_no names, and on its sku's shard;
  - one order per (user_id, request_id) across all shards, and its checkout
    registry row on the user's shard names it, its sku and quantity;
  - every payment is on its order's shard (never another's), its pay_no is
    unique across all shards, and its pay_no registry row names its order;
  - an order PAID (or later) has exactly one PAID payment and one order.paid
    event; an order waiting for payment has neither, nor any payment;
  - stock: each sku's row only on its shard, never negative, and the units
    taken are the quantities of its orders that are not canceled;
  - --paid FILE=K: every order of FILE (create's JSON lines) is PAID with K
    payments, one PAID and the rest REFUND_REQUIRED; --exist FILE: every
    order of FILE exists as written; --canceled FILE: every order of FILE
    is CANCELED, with no payment.
Prints one line per violation (at most 5 of a kind), then a summary line;
exits 1 on any violation."""
import argparse, hashlib, json, os, re, subprocess, sys
from collections import Counter, defaultdict

WAIT_PAY, PAID, SHIPPED, FINISHED, CANCELED = 1, 2, 3, 4, 9
PAY_PAID, PAY_REFUND = 1, 2


def place(key, nshards):
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % nshards + 1


def order_shard(order_no):
    m = re.match(r"S(\d\d)-", order_no)
    return int(m.group(1)) if m else None


class Shard:
    def __init__(self, sid, port, a):
        self.id, self.port, self.a = sid, port, a

    def rows(self, query):
        out = subprocess.run(
            ["mariadb", "--no-defaults", "--protocol=tcp", "-h127.0.0.1", "-P%d" % self.port,
             "-u" + self.a.user, "-p" + self.a.password, "--batch", "--skip-column-names",
             "--connect-timeout=5", self.a.database, "-e", query],
            check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shard", action="append", required=True, help="ID=PORT")
    p.add_argument("--scope", required=True)
    p.add_argument("--stock", action="append", default=[], help="SKU=INITIAL")
    p.add_argument("--paid", action="append", default=[], help="FILE=K")
    p.add_argument("--exist", action="append", default=[], help="FILE")
    p.add_argument("--canceled", action="append", default=[], help="FILE")
    p.add_argument("--user", default=os.environ.get("DB_USER", "paycallback"))
    p.add_argument("--password", default=os.environ.get("DB_PASSWORD", "paycallback"))
    p.add_argument("--database", default=os.environ.get("DB_NAME", "paycallback"))
    a = p.parse_args()
    like = a.scope.replace("'", "") + "%"
    shards = [Shard(int(s.split("=")[0]), int(s.split("=")[1]), a) for s in a.shard]
    n = len(shards)
    bad = Counter()

    def fail(kind, msg):
        bad[kind] += 1
        if bad[kind] <= 5:
            print("  %s: %s" % (kind, msg), file=sys.stderr)

    orders, pays, events, preg, creg, stock = {}, {}, Counter(), {}, {}, defaultdict(dict)
    checkouts = Counter()
    for sh in shards:
        for no, user, req, sku, qty, status in sh.rows(
                "SELECT order_no, user_id, request_id, sku, quantity, status FROM orders "
                "WHERE user_id LIKE '%s'" % like):
            orders[no] = dict(shard=sh.id, user=user, req=req, sku=sku, qty=int(qty), status=int(status))
            checkouts[(user, req)] += 1
            if order_shard(no) != sh.id:
                fail("order on a shard its order_no does not name", "%s on shard %d" % (no, sh.id))
            if place(sku, n) != sh.id:
                fail("order off its sku's shard", "%s (sku %s) on shard %d" % (no, sku, sh.id))
        for pay_no, no, status in sh.rows(
                "SELECT pay_no, order_no, status FROM payment_record WHERE pay_no LIKE '%s'" % like):
            if pay_no in pays:
                fail("pay_no on two shards", "%s on %d and %d" % (pay_no, pays[pay_no]["shard"], sh.id))
            pays[pay_no] = dict(shard=sh.id, order=no, status=int(status))
        for (no,) in sh.rows("SELECT order_no FROM outbox WHERE event_type = 'order.paid'"):
            events[(sh.id, no)] += 1
        for pay_no, no in sh.rows(
                "SELECT pay_no, order_no FROM pay_no_registry WHERE pay_no LIKE '%s'" % like):
            preg[pay_no] = (sh.id, no)
        for user, req, no, sku, qty in sh.rows(
                "SELECT user_id, request_id, order_no, sku, quantity FROM checkout_registry "
                "WHERE user_id LIKE '%s'" % like):
            creg[(user, req)] = (sh.id, no, sku, int(qty))
        for sku, num in sh.rows("SELECT sku, num FROM stock WHERE sku LIKE '%s'" % like):
            stock[sku][sh.id] = int(num)

    for key, count in checkouts.items():
        if count != 1:
            fail("checkout with more than one order", "%s/%s: %d orders" % (key[0], key[1], count))
    by_order = defaultdict(list)
    for pay_no, pr in pays.items():
        by_order[pr["order"]].append(pr)
        o = orders.get(pr["order"])
        if o is None or o["shard"] != pr["shard"]:
            fail("payment not on its order's shard", "%s for %s on shard %d" % (pay_no, pr["order"], pr["shard"]))
        if preg.get(pay_no) != (place(pay_no, n), pr["order"]):
            fail("pay_no registry disagrees", "%s paid %s, registry %s" % (pay_no, pr["order"], preg.get(pay_no)))
    for no, o in orders.items():
        r = creg.get((o["user"], o["req"]))
        if r != (place(o["user"], n), no, o["sku"], o["qty"]):
            fail("checkout registry disagrees", "%s of %s/%s: registry %s" % (no, o["user"], o["req"], r))
        paid = sum(pr["status"] == PAY_PAID for pr in by_order[no])
        ev = events[(o["shard"], no)]
        if o["status"] in (PAID, SHIPPED, FINISHED) and (paid, ev) != (1, 1):
            fail("paid order without exactly one payment and event", "%s: %d PAID, %d events" % (no, paid, ev))
        if o["status"] == WAIT_PAY and (by_order[no] or ev):
            fail("waiting order with a payment", "%s: %d payments, %d events" % (no, len(by_order[no]), ev))

    for spec in a.stock:
        sku, initial = spec.rsplit("=", 1)
        home = place(sku, n)
        if set(stock[sku]) != {home}:
            fail("stock row off its shard", "%s on %s, placed on %d" % (sku, sorted(stock[sku]), home))
            continue
        num = stock[sku][home]
        taken = sum(o["qty"] for o in orders.values() if o["sku"] == sku and o["status"] != CANCELED)
        if num < 0 or int(initial) - num != taken:
            fail("stock disagrees with orders", "%s: %s initial, %d left, %d ordered" % (sku, initial, num, taken))

    def listed(path):
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    for spec in a.paid:
        path, k = spec.rsplit("=", 1)
        for row in listed(path):
            no = row["order_no"]
            got = sorted(pr["status"] for pr in by_order[no])
            if orders.get(no, {}).get("status") != PAID or got != [PAY_PAID] + [PAY_REFUND] * (int(k) - 1):
                fail("order not paid as stormed", "%s: status %s, payments %s" % (no, orders.get(no, {}).get("status"), got))
    for path in a.canceled:
        for row in listed(path):
            if orders.get(row["order_no"], {}).get("status") != CANCELED or by_order[row["order_no"]]:
                fail("order not canceled as stormed", row["order_no"])
    for path in a.exist:
        for row in listed(path):
            o = orders.get(row["order_no"])
            if o is None or (o["user"], o["sku"], o["qty"]) != (row["user_id"], row["sku"], row["quantity"]):
                fail("order answered but not stored", row["order_no"])

    per = ", ".join("shard %d: %d orders %d payments" % (sh.id, sum(o["shard"] == sh.id for o in orders.values()),
                                                        sum(pr["shard"] == sh.id for pr in pays.values()))
                    for sh in shards)
    print("%s; %d violations%s" % (per, sum(bad.values()),
                                   "" if not bad else " (" + ", ".join("%s: %d" % kv for kv in bad.items()) + ")"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
