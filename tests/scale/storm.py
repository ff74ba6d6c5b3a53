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

Summary: {"requests", "seconds", "rps", "status": {code: count},
"codes": {error code: count}, "errors": {what: count}, "flips": n} where
flips counts pay_nos that got two different results (must be 0)."""
import argparse, hashlib, hmac, http.client, json, os, random, sys, threading, time
from collections import Counter
from urllib.parse import urlparse


class Client:
    """One keep-alive connection, made again after any transport error."""

    def __init__(self, url):
        u = urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.conn = None
        self.reused = False

    def request(self, method, path, body=None, headers=None):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
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

    def add(self, status, data, key=None):
        with self.lock:
            self.n += 1
            if status is None:
                self.errors[data] += 1
                return None
            self.status[str(status)] += 1
            try:
                body = json.loads(data)
            except ValueError:
                self.codes["NOT_JSON"] += 1
                return None
            if status >= 400:
                self.codes[body.get("code", "?")] += 1
            elif key is not None and "result" in body:
                seen = self.results.setdefault(key, body["result"])
                if seen != body["result"]:
                    self.flips.add(key)
            return body


def callbacks(a, tally):
    secret = a.secret.encode()
    items = []
    for i in range(1, a.n + 1):
        for leg in "ab":
            items.append(('{"order_no":"%s-%d","pay_no":"%s-P-%d-%s","amount":"899.00"}'
                          % (a.prefix, i, a.prefix, i, leg), "%d%s" % (i, leg)))
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

    def worker():
        c = Client(a.url)
        while (it := next_item()) is not None:
            body, key = it
            ts = str(int(time.time()))
            sig = hmac.new(secret, (ts + "." + body).encode(), hashlib.sha256).hexdigest()
            st, data = c.request("POST", "/pay/callback", body,
                                 {"Content-Type": "application/json", "X-Timestamp": ts, "X-Signature": sig})
            tally.add(st, data, key)
        c.close()
    return worker


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
            st, data = c.request("GET", "/token/apply")
            if st != 200:
                tally.add(st, data)
                continue
            token = json.loads(data)["token"]
            body = json.dumps({"user_id": "%s-%d" % (a.prefix, i), "request_id": "r-1",
                               "sku": a.sku, "quantity": 1})
            st, data = c.request("POST", "/order/create", body,
                                 {"Content-Type": "application/json", "Idempotent-Token": token})
            tally.add(st, data)
        c.close()
    return worker


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["callbacks", "orders"])
    p.add_argument("url")
    p.add_argument("prefix")
    p.add_argument("n", type=int)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--secret", default="")
    p.add_argument("--sku", default="")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--stop-file", default="")
    p.add_argument("--max-seconds", type=float, default=300)
    a = p.parse_args()
    tally = Tally()
    worker = (callbacks if a.mode == "callbacks" else orders)(a, tally)
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - t0
    print(json.dumps({"requests": tally.n, "seconds": round(secs, 2), "rps": round(tally.n / secs, 1),
                      "status": dict(tally.status), "codes": dict(tally.codes),
                      "errors": dict(tally.errors), "flips": len(tally.flips)}, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
