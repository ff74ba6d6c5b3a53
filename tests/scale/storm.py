#!/usr/bin/env python3
"""storm.py - concurrent HTTP load for the scale tests: signed payment
callbacks, or shoppers racing for one sku. Prints one JSON summary line.

  storm.py callbacks URL PREFIX N --repeat R --secret S [--threads T]
           [--stop-file F] [--max-seconds S]
      Orders PREFIX-1..N each get two payments, PREFIX-P-i-a and -b, every
      callback sent R times in a shuffled order. With --stop-file the storm
      then replays random callbacks until the file exists (or max-seconds),
      so it outlasts whatever the caller does meanwhile.
  storm.py orders URL PREFIX N --sku SKU [--threads T]
      N shoppers (user PREFIX-i) each take a token and order 1 of SKU.

Sharded topology (shard ids 1..--nshards; see docs/sharding.md):
  storm.py create URL PREFIX N --skus A,B,.. --out FILE
      N checkouts (user PREFIX-i, request r-1, sku of i in turn, quantity
      1 or 2); every order answered 200/201 is written to FILE as a JSON
      line. Run again, the same checkouts are replayed (200 duplicate).
  storm.py callbacks URL PREFIX N --orders FILE [--legs ab] ...
      as callbacks, for the first N orders of FILE (0: all) and their
      amounts; order i's payments are PREFIX-P-i-<leg>.
  storm.py paynorace URL1,URL2,.. PREFIX ROUNDS --orders FILE --secret S
      round i: pay_no PREFIX-i sent at once for an order on shard 1 and one
      on shard 2 of FILE, through two different instances. "rounds" counts
      the sorted statuses of each round (must be "200+409").
  storm.py checkout URL1,URL2,.. PREFIX ROUNDS --copies C --skus A,B,..
      round i: one checkout (user PREFIX-i, request r-1) submitted by C
      clients at once, each with its own token, spread over the instances.
      "rounds" counts "one_order" (one 201, every answer the same order_no)
      against anything else.
  storm.py cancel URL PREFIX N --orders FILE --key KEY [--repeat R]
      POST /order/{order_no}/cancel for the first N orders of FILE (0:
      all), each sent R times in a shuffled order, with the operator KEY.
  storm.py place KEY... [--ids 1,2,5 | --nshards N] : the shard id each key
      is placed on, over the configured shard ids (any order; placement
      follows them ascending), or ids 1..N.
With --down ID, every reply is also counted under "split" by status and
error code ("201", "503 UNAVAILABLE"): "needs" when the request needs shard
ID (its order's shard, its pay_no's or user's registry shard, its sku's
shard), "free" when it does not.

Summary: {"requests", "seconds", "rps", "max_ms", "status": {code: count},
"codes": {error code: count}, "errors": {what: count}, "flips": n} where
flips counts pay_nos that got two different results (must be 0) and max_ms
is the slowest reply. A 503 BUSY of order creation (the sku's lock) is
counted, then the checkout is sent again, as a shop does."""
import argparse, hashlib, hmac, http.client, json, os, random, re, sys, threading, time
from collections import Counter
from urllib.parse import urlparse


class Client:
    """One keep-alive connection, made again after any transport error."""

    timeout = 60

    def __init__(self, url):
        u = urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.conn = None
        self.reused = False
        self.ms = 0.0

    def request(self, method, path, body=None, headers=None):
        t0 = time.monotonic()
        try:
            return self._request(method, path, body, headers)
        finally:
            self.ms = (time.monotonic() - t0) * 1000

    def _request(self, method, path, body, headers):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                    self.reused = False
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                data = r.read()
                self.reused = True
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, data
            except (OSError, http.client.HTTPException) as e:
                stale = self.reused and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError))
                self.close()
                # The proxy closed an idle kept-alive connection as we sent:
                # the request never left, so it goes once on a new one.
                if attempt == 0 and stale:
                    continue
                return None, type(e).__name__
        return None, "stale"

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.status, self.codes, self.errors = Counter(), Counter(), Counter()
        self.results = {}
        self.flips = set()
        self.n = 0
        self.max_ms = 0.0
        self.split = {"needs": Counter(), "free": Counter()}

    def add(self, status, data, key=None, ms=0.0, needs=None):
        """needs: whether the request needs the stopped shard (None: no split)."""
        with self.lock:
            self.n += 1
            self.max_ms = max(self.max_ms, ms)
            split = self.split["needs" if needs else "free"] if needs is not None else Counter()
            if status is None:
                self.errors[data] += 1
                split["error"] += 1
                return None
            self.status[str(status)] += 1
            try:
                body = json.loads(data)
            except ValueError:
                self.codes["NOT_JSON"] += 1
                split["%d NOT_JSON" % status] += 1
                return None
            split["%d %s" % (status, body.get("code", "?")) if status >= 400 else str(status)] += 1
            if status >= 400:
                self.codes[body.get("code", "?")] += 1
            elif key is not None and "result" in body:
                seen = self.results.setdefault(key, body["result"])
                if seen != body["result"]:
                    self.flips.add(key)
            return body


def place_in(key, ids):
    """The shard id key is placed on: SHA-256(key)'s first 8 bytes,
    big-endian, modulo the number of shards, indexing the shard ids in
    ascending order (src/store/shard.c, scheme sha256-mod-ascending-ids)."""
    ids = sorted(ids)
    return ids[int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % len(ids)]


def place(key, nshards):
    """place_in over shard ids 1..nshards (the scale topology's)."""
    return place_in(key, range(1, nshards + 1))


def order_shard(order_no):
    """The shard an order number names ("S02-..." is 2; no prefix is 1)."""
    m = re.match(r"S(\d\d)-", order_no)
    return int(m.group(1)) if m else 1


def needs_down(a, *shards):
    """With --down: whether any of shards is the stopped one, else None."""
    return (a.down in shards) if a.down else None


def load_orders(a, limit=None):
    """The orders of --orders, the first limit of them (None or 0: all)."""
    with open(a.orders) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


def sign(secret, body):
    ts = str(int(time.time()))
    sig = hmac.new(secret, (ts + "." + body).encode(), hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Timestamp": ts, "X-Signature": sig}


def callbacks(a, tally):
    secret = a.secret.encode()
    items = []
    if a.orders:
        targets = [(i, o["order_no"], o["amount"]) for i, o in enumerate(load_orders(a, a.n), 1)]
    else:
        targets = [(i, "%s-%d" % (a.prefix, i), "899.00") for i in range(1, a.n + 1)]
    for i, order_no, amount in targets:
        for leg in a.legs:
            pay_no = "%s-P-%d-%s" % (a.prefix, i, leg)
            items.append(('{"order_no":"%s","pay_no":"%s","amount":"%s"}' % (order_no, pay_no, amount),
                          "%d%s" % (i, leg),
                          needs_down(a, order_shard(order_no), place(pay_no, a.nshards))))
    if a.needing != "any":       # one client per kind: a blocked request holds only its own kind's threads
        items = [it for it in items if bool(it[2]) == (a.needing == "down")]
    queue = items * a.repeat
    random.shuffle(queue)
    pos = [0]
    qlock = threading.Lock()
    t_end = time.monotonic() + a.max_seconds

    def next_item():
        with qlock:
            if pos[0] < len(queue):
                pos[0] += 1
                return queue[pos[0] - 1]
        if a.stop_file and not os.path.exists(a.stop_file) and time.monotonic() < t_end:
            return random.choice(items)
        return None

    timeline = []                 # (unix time, needs the --down shard, status, X-Shard-Outage)

    def worker():
        c = Client(a.url)
        while (it := next_item()) is not None:
            body, key, needs = it
            st, data = c.request("POST", "/pay/callback", body, sign(secret, body))
            tally.add(st, data, key, c.ms, needs)
            if a.timeline:
                timeline.append((round(time.time(), 3), needs, st,
                                 data.get("shard_outage", "") if isinstance(data, dict) else ""))
        c.close()

    def finish():
        if a.timeline:
            with open(a.timeline, "w") as f:
                json.dump(timeline, f)
    worker.finish = finish
    return worker


def checkout(c, tally, user, request_id, sku, quantity, needs=None):
    """One checkout as a shop sends it: a token, then the order; a 503 BUSY
    (the sku's lock) is sent again with the same token, which the service
    gave back. Returns (status, body) of the last answer."""
    st, data = c.request("GET", "/token/apply")
    if st != 200:
        tally.add(st, data, ms=c.ms, needs=needs)
        return st, None
    token = json.loads(data)["token"]
    body = json.dumps({"user_id": user, "request_id": request_id, "sku": sku, "quantity": quantity})
    for _ in range(10):
        st, data = c.request("POST", "/order/create", body,
                             {"Content-Type": "application/json", "Idempotent-Token": token})
        reply = tally.add(st, data, ms=c.ms, needs=needs)
        if not (st == 503 and reply and reply.get("code") == "BUSY"):
            break
    return st, reply


def orders(a, tally):
    nxt = iter(range(1, a.n + 1))
    nlock = threading.Lock()

    def worker():
        c = Client(a.url)
        while True:
            with nlock:
                i = next(nxt, None)
            if i is None:
                break
            user = "%s-%d" % (a.prefix, i)
            checkout(c, tally, user, "r-1", a.sku, 1, needs_down(a, place(a.sku, a.nshards),
                                                                place(user, a.nshards)))
        c.close()
    return worker


def create(a, tally):
    skus = a.skus.split(",")
    nxt = iter(range(1, a.n + 1))
    nlock = threading.Lock()
    made = {}

    def worker():
        c = Client(a.url)
        while True:
            with nlock:
                i = next(nxt, None)
            if i is None:
                break
            user, sku = "%s-%d" % (a.prefix, i), skus[(i - 1) % len(skus)]
            st, reply = checkout(c, tally, user, "r-1", sku, 1 + i % 2,
                                 needs_down(a, place(sku, a.nshards), place(user, a.nshards)))
            if st in (200, 201) and reply:
                with nlock:
                    made[i] = reply
        c.close()

    def finish():
        with open(a.out, "w") as f:
            for i in sorted(made):
                f.write(json.dumps(made[i], sort_keys=True) + "\n")
    worker.finish = finish
    return worker


def cancel(a, tally):
    queue = [o["order_no"] for o in load_orders(a, a.n)] * a.repeat
    random.shuffle(queue)
    qlock = threading.Lock()
    headers = {"Authorization": "Bearer " + a.key, "Content-Length": "0"}

    def worker():
        c = Client(a.url)
        while True:
            with qlock:
                if not queue:
                    break
                order_no = queue.pop()
            st, data = c.request("POST", "/order/%s/cancel" % order_no, b"", headers)
            tally.add(st, data, ms=c.ms, needs=needs_down(a, order_shard(order_no)))
        c.close()
    return worker


def paynorace(a, tally):
    urls = a.url.split(",")
    rows = load_orders(a)
    one = [o for o in rows if order_shard(o["order_no"]) == 1]
    two = [o for o in rows if order_shard(o["order_no"]) == 2]
    pairs = list(zip(one, two))[:a.n]
    secret = a.secret.encode()
    rounds = Counter({"no_pair": a.n - len(pairs)} if len(pairs) < a.n else {})

    def one_round(i, x, y):
        pay_no = "%s-%d" % (a.prefix, i)
        gate = threading.Barrier(2)
        got = []

        def send(url, o):
            c = Client(url)
            c.request("GET", "/healthz")          # connected before the gate opens
            body = '{"order_no":"%s","pay_no":"%s","amount":"%s"}' % (o["order_no"], pay_no, o["amount"])
            headers = sign(secret, body)
            gate.wait()
            st, data = c.request("POST", "/pay/callback", body, headers)
            tally.add(st, data, ms=c.ms)
            got.append(str(st))
            c.close()
        ts = [threading.Thread(target=send, args=(urls[(i + k) % len(urls)], o)) for k, o in enumerate((x, y))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        rounds["+".join(sorted(got))] += 1

    nxt = iter(enumerate(pairs, 1))
    nlock = threading.Lock()

    def worker():
        while True:
            with nlock:
                item = next(nxt, None)
            if item is None:
                break
            one_round(item[0], *item[1])
    worker.extra = lambda: {"rounds": dict(rounds)}
    return worker


def checkouts(a, tally):
    urls = a.url.split(",")
    skus = a.skus.split(",")
    rounds = Counter()

    def one_round(i):
        user, sku = "%s-%d" % (a.prefix, i), skus[(i - 1) % len(skus)]
        gate = threading.Barrier(a.copies)
        got = []

        def send(k):
            c = Client(urls[(i + k) % len(urls)])
            st, data = c.request("GET", "/token/apply")
            if st != 200:
                tally.add(st, data, ms=c.ms)
                gate.abort()
                return
            token = json.loads(data)["token"]
            body = json.dumps({"user_id": user, "request_id": "r-1", "sku": sku, "quantity": 1})
            try:
                gate.wait()
            except threading.BrokenBarrierError:
                return
            for _ in range(10):
                st, data = c.request("POST", "/order/create", body,
                                     {"Content-Type": "application/json", "Idempotent-Token": token})
                reply = tally.add(st, data, ms=c.ms)
                if not (st == 503 and reply and reply.get("code") == "BUSY"):
                    break
            got.append((st, reply.get("order_no") if reply else None))
            c.close()
        ts = [threading.Thread(target=send, args=(k,)) for k in range(a.copies)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        fine = (len(got) == a.copies and sum(st == 201 for st, _ in got) == 1
                and all(st in (200, 201) for st, _ in got) and len({o for _, o in got}) == 1)
        rounds["one_order" if fine else "bad"] += 1

    nxt = iter(range(1, a.n + 1))
    nlock = threading.Lock()

    def worker():
        while True:
            with nlock:
                i = next(nxt, None)
            if i is None:
                break
            one_round(i)
    worker.extra = lambda: {"rounds": dict(rounds)}
    return worker


MODES = {"callbacks": callbacks, "orders": orders, "create": create, "paynorace": paynorace,
         "checkout": checkouts, "cancel": cancel}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "place":
        p = argparse.ArgumentParser(prog="storm.py place")
        p.add_argument("keys", nargs="+")
        p.add_argument("--nshards", type=int, default=2, help="shard ids 1..N")
        p.add_argument("--ids", help="the configured shard ids, comma-separated (wins over --nshards)")
        a = p.parse_args(sys.argv[2:])
        ids = range(1, a.nshards + 1)
        if a.ids:
            ids = [int(x) for x in a.ids.split(",")]
            if len(set(ids)) != len(ids) or not all(1 <= i <= 99 for i in ids):
                p.error("--ids: distinct shard ids in 1..99")
        print(" ".join(str(place_in(k, ids)) for k in a.keys))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=sorted(MODES))
    p.add_argument("url")
    p.add_argument("prefix")
    p.add_argument("n", type=int)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--secret", default="")
    p.add_argument("--sku", default="")
    p.add_argument("--skus", default="")
    p.add_argument("--orders", default="", help="JSON lines of orders (create --out)")
    p.add_argument("--out", default="")
    p.add_argument("--legs", default="ab")
    p.add_argument("--copies", type=int, default=8)
    p.add_argument("--key", default="", help="an operator key (cancel)")
    p.add_argument("--nshards", type=int, default=2)
    p.add_argument("--down", type=int, default=0)
    p.add_argument("--needing", choices=("any", "down", "other"), default="any",
                   help="callbacks with --down: only those that need the --down shard, or only the others")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--timeout", type=float, default=60, help="seconds a reply may take")
    p.add_argument("--stop-file", default="")
    p.add_argument("--max-seconds", type=float, default=300)
    p.add_argument("--timeline", default="", help="callbacks: every reply's time, need and status, as JSON")
    a = p.parse_args()
    Client.timeout = a.timeout
    tally = Tally()
    worker = MODES[a.mode](a, tally)
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    if hasattr(worker, "finish"):
        worker.finish()
    out = {"requests": tally.n, "seconds": round(secs, 2), "rps": round(tally.n / secs, 1),
           "max_ms": round(tally.max_ms), "status": dict(tally.status), "codes": dict(tally.codes),
           "errors": dict(tally.errors), "flips": len(tally.flips)}
    if a.down:
        out["split"] = {k: dict(v) for k, v in tally.split.items()}
    if hasattr(worker, "extra"):
        out.update(worker.extra())
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
