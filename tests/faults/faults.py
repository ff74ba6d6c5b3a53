#!/usr/bin/python3
"""faults.py - the fault suite: the real binary on the private MariaDB and
Redis, driven by a bank-like retrying client while one fault is injected
per scenario. Each scenario prints what it sent and what it got, then fails
unless the database holds the invariants (one payment_record per pay_no;
an order is PAID exactly when it has one PAID-outcome record and one
order.paid event; no oversell; one order per (user_id, request_id)), every
200 is in the database, and every answer came within the bound.

usage: faults.py [SCENARIO...]        (default: all, in the order below)
Environment: PCB_BIN (default build/paycallback), the private
ports PAYCALLBACK_MYSQL_PORT / PAYCALLBACK_REDIS_PORT (as scripts/env.sh),
PCB_FAULTS_BOUND_MS (answer bound, default 5000),
PCB_FAULTS_LEGIT_MS (a legitimate client's /healthz bound under
connection abuse, default 1000), PCB_FAULTS_SERVICE_ENV (extra
"KEY=VAL KEY=VAL" for the service). Signals only processes it started: the
service, and the MariaDB and Redis whose pidfiles are under var/.
Ends with "N passed, M failed" like scripts/run-tests.sh; exit 1 on failure.
Python 3 standard library only, plus the mariadb client and
scripts/services.sh."""
import hashlib
import hmac
import http.client
import json
import multiprocessing
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VAR = os.path.join(ROOT, "var")
MYSQL_PORT = int(os.environ.get("PAYCALLBACK_MYSQL_PORT", "3307"))
REDIS_PORT = int(os.environ.get("PAYCALLBACK_REDIS_PORT", "6380"))
BIN = os.path.join(ROOT, os.environ.get("PCB_BIN", "build/paycallback"))
BOUND_S = int(os.environ.get("PCB_FAULTS_BOUND_MS", "5000")) / 1000
LEGIT_S = int(os.environ.get("PCB_FAULTS_LEGIT_MS", "1000")) / 1000
TEST_DB = "paycallback_test"
SECRET = "faults-" + os.urandom(16).hex()
OPERATOR_KEY = "faults-" + os.urandom(16).hex()      # the service refuses to start without one       # not the shipped development value
PRICE = "129.50"
START_TIMEOUT_S = 90 if "/asan/" in BIN else 20
STORM_DEADLINE_S = 90          # the bank gives up on a payment after this
CLIENT_TIMEOUT_S = BOUND_S + 2  # past the bound: a violation, then a retry

# Scenarios that cannot pass yet, with the reason printed next to them. A
# scenario listed here that passes fails the run, so the mark goes once the
# service holds the guarantee.
EXPECTED_TO_FAIL = {}
# Set when a scenario fails midway: its clients stop instead of retrying on.
ABORT = threading.Event()


def log(msg=""):
    print(msg, flush=True)


def now():
    return time.monotonic()


# ---- the private services -------------------------------------------------

def sql(query):
    """Rows of query on the test database, as lists of strings."""
    out = subprocess.run(
        ["mariadb", "--no-defaults", "--host=127.0.0.1", f"--port={MYSQL_PORT}",
         "--user=paycallback", "--password=paycallback", "--connect-timeout=10",
         "--batch", "--skip-column-names", TEST_DB, "-e", query],
        check=True, capture_output=True, text=True, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines()]


def scalar(query):
    return int(sql(query)[0][0])


def services(cmd):
    subprocess.run([os.path.join(ROOT, "scripts", "services.sh"), cmd], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)


def own_pid(pidfile, comm):
    """The pid in our pidfile under var/ when that process runs comm."""
    with open(pidfile) as f:
        pid = int(f.read().strip())
    with open(f"/proc/{pid}/comm") as f:
        if f.read().strip() != comm:
            raise RuntimeError(f"{pidfile}: pid {pid} is not {comm}")
    return pid


def mysql_pid():
    return own_pid(os.path.join(VAR, "mysql", "mysqld.pid"), "mariadbd")


def redis_pid():
    return own_pid(os.path.join(VAR, "redis", "redis.pid"), "redis-server")


def reset_db(hat_stock):
    sql("TRUNCATE orders; TRUNCATE payment_record; TRUNCATE outbox; TRUNCATE idem_token; "
        "TRUNCATE stock; INSERT INTO stock (sku, price, num) VALUES "
        f"('SHOE-42', 899.00, 100), ('SOCK-01', 19.90, 500), ('HAT-7', {PRICE}, {hat_stock})")
    subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(REDIS_PORT), "-n", "9", "flushdb"],
                   check=True, stdout=subprocess.DEVNULL, timeout=30)


# ---- the service ----------------------------------------------------------

class Service:
    """The binary on the test database and Redis db 9, log under var/test-logs."""

    def __init__(self):
        self.proc = None
        self.port = 0
        self.tmp = tempfile.mkdtemp(prefix="paycallback-faults-")
        os.makedirs(os.path.join(VAR, "test-logs"), exist_ok=True)
        self.log = open(os.path.join(VAR, "test-logs", "faults.log"), "ab")

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCALLBACK_")}
        env.update({
            "PAYCALLBACK_LISTEN_PORT": str(self.port),
            "PAYCALLBACK_MYSQL_PORT": str(MYSQL_PORT),
            "PAYCALLBACK_MYSQL_DATABASE": TEST_DB,
            "PAYCALLBACK_MYSQL_USER": "paycallback",
            "PAYCALLBACK_MYSQL_PASSWORD": "paycallback",
            "PAYCALLBACK_REDIS_PORT": str(REDIS_PORT),
            "PAYCALLBACK_REDIS_DB": "9",
            "PAYCALLBACK_CALLBACK_SECRET": SECRET,
            "PAYCALLBACK_AUTH_KEYS": "faults:" + OPERATOR_KEY,
            "PAYCALLBACK_GRACE_S": "1",
            # One load generator stands for every shopper: no per-client quota.
            "PAYCALLBACK_QUOTA_TOKEN_RATE": "0",
            "PAYCALLBACK_QUOTA_ORDER_RATE": "0",
            "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT_SKU": "0",
            "PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT": "0",
        })
        for kv in os.environ.get("PCB_FAULTS_SERVICE_ENV", "").split():
            k, _, v = kv.partition("=")
            env[k] = v
        return env

    def start(self):
        """Starts on self.port (0: ephemeral, then kept for restarts)."""
        port_file = os.path.join(self.tmp, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.proc = subprocess.Popen(
            [BIN, "-c", os.path.join(ROOT, "config", "paycallback.json"), "--port-file", port_file],
            cwd=ROOT, env=self.env(), stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=self.log)
        deadline = now() + START_TIMEOUT_S
        while now() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited with {self.proc.returncode} at start; "
                                   "see var/test-logs/faults.log")
            try:
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    return
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        self.proc.kill()
        raise RuntimeError("the service wrote no port; see var/test-logs/faults.log")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


# ---- clients --------------------------------------------------------------

class Tally:
    """What one kind of client sent and got, shared by its threads."""

    def __init__(self, name, bound_s):
        self.name, self.bound_s = name, bound_s
        self.lock = threading.Lock()
        self.sent = 0
        self.got = {}                  # "200", "503", "timeout", "connection error" -> count
        self.times = []                # seconds to each answer
        self.late = []                 # (seconds, what) past the bound

    def record(self, what, seconds):
        with self.lock:
            self.sent += 1
            self.got[what] = self.got.get(what, 0) + 1
            if what.isdigit():
                self.times.append(seconds)
            if seconds > self.bound_s:
                self.late.append((round(seconds, 2), what))

    def summary(self):
        t = sorted(self.times) or [0]
        got = ", ".join(f"{k} x{v}" for k, v in sorted(self.got.items()))
        return (f"{self.name}: sent {self.sent}; got {got}; answer p50 {t[len(t) // 2] * 1000:.0f} ms "
                f"p99 {t[int(len(t) * 0.99)] * 1000:.0f} ms max {t[-1] * 1000:.0f} ms "
                f"(bound {self.bound_s * 1000:.0f} ms)")


def request(svc, tally, method, path, body=None, headers=None, src=None):
    """One exchange on a fresh connection: (status, parsed JSON or None).
    status is None after a timeout or a connection error."""
    t0 = now()
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=CLIENT_TIMEOUT_S,
                                      source_address=(src, 0) if src else None)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        tally.record(str(r.status), now() - t0)
        try:
            return r.status, json.loads(data) if data else None
        except ValueError:
            return r.status, None
    except socket.timeout:
        tally.record("timeout", now() - t0)
    except (OSError, http.client.HTTPException):
        tally.record("connection error", now() - t0)
    finally:
        conn.close()
    return None, None


def backoff(attempt):
    """A gateway's retry pause: grows to a second, with jitter."""
    time.sleep(min(1.0, 0.05 * (2 ** min(attempt, 5))) * random.uniform(0.5, 1.0))


class Bank:
    """Delivers callbacks like a payment gateway: signed, retried on a
    timeout, a 5xx or a connection error until a definite answer."""

    def __init__(self, svc):
        self.svc = svc
        self.tally = Tally("bank", BOUND_S)
        self.answers = []              # (pay_no, order_no, status, result)
        self.unsettled = []            # pay_no given up on
        self.lock = threading.Lock()

    def pay(self, order_no, pay_no, amount):
        body = json.dumps({"order_no": order_no, "pay_no": pay_no, "amount": amount}).encode()
        deadline = now() + STORM_DEADLINE_S
        attempt = 0
        while now() < deadline and not ABORT.is_set():
            ts = str(int(time.time()))
            sig = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
            status, reply = request(self.svc, self.tally, "POST", "/pay/callback", body,
                                    {"Content-Type": "application/json", "X-Timestamp": ts,
                                     "X-Signature": sig})
            if status is not None and status < 500:
                with self.lock:
                    self.answers.append((pay_no, order_no, status,
                                         (reply or {}).get("result")))
                return status
            attempt += 1
            backoff(attempt)
        with self.lock:
            self.unsettled.append(pay_no)
        return None


class Shopper:
    """A frontend creating orders: a fresh token per attempt, the same
    request_id, retried on a timeout, a 5xx, a connection error or a spent
    token until a definite answer."""

    def __init__(self, svc):
        self.svc = svc
        self.tally = Tally("shoppers", BOUND_S)
        self.orders = {}               # (user_id, request_id) -> order_no answered 200/201
        self.out_of_stock = 0
        self.unsettled = []
        self.lock = threading.Lock()

    def buy(self, user_id, request_id):
        deadline = now() + STORM_DEADLINE_S
        attempt = 0
        while now() < deadline and not ABORT.is_set():
            status, reply = request(self.svc, self.tally, "GET", "/token/apply")
            if status == 200 and reply and reply.get("token"):
                body = json.dumps({"user_id": user_id, "request_id": request_id,
                                   "sku": "HAT-7", "quantity": 1}).encode()
                status, reply = request(self.svc, self.tally, "POST", "/order/create", body,
                                        {"Content-Type": "application/json",
                                         "Idempotent-Token": reply["token"]})
                code = (reply or {}).get("code")
                if status in (200, 201):
                    with self.lock:
                        self.orders[(user_id, request_id)] = reply["order_no"]
                    return reply["order_no"]
                if status == 409 and code == "OUT_OF_STOCK":
                    with self.lock:
                        self.out_of_stock += 1
                    return None
                if status is not None and status < 500 and code != "REPEAT_SUBMIT":
                    raise RuntimeError(f"order create answered {status} {reply}")
            attempt += 1
            backoff(attempt)
        with self.lock:
            self.unsettled.append((user_id, request_id))
        return None


class Prober:
    """GET /healthz every 100 ms from its own thread, as a liveness probe."""

    def __init__(self, svc, bound_s, src=None):
        self.svc, self.src = svc, src
        self.tally = Tally("healthz probe", bound_s)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            request(self.svc, self.tally, "GET", "/healthz", src=self.src)
            self.stopping.wait(0.1)

    def stop(self):
        self.stopping.set()
        self.thread.join()


def run_pool(jobs, threads, pace_s):
    """Runs the callables of jobs on threads threads, starting one every
    pace_s seconds (a steady storm rather than one burst)."""
    lock = threading.Lock()
    it = iter(jobs)
    t_next = [now()]

    def worker():
        while True:
            with lock:
                job = next(it, None)
                wait = t_next[0] - now()
                t_next[0] = max(t_next[0], now()) + pace_s
            if job is None or ABORT.is_set():
                return
            if wait > 0:
                time.sleep(wait)
            job()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    return pool


def join(pool):
    for t in pool:
        t.join()


def payments(orders):
    """The bank's work for a list of (order_no, amount): each payment is
    delivered twice (gateways deliver at least once), and every tenth order
    is charged a second time under another pay_no."""
    jobs = []
    for i, (order_no, amount) in enumerate(orders):
        pays = [f"P{order_no}"] + ([f"P{order_no}x"] if i % 10 == 0 else [])
        for pay_no in pays:
            jobs.append((order_no, pay_no, amount))
            jobs.append((order_no, pay_no, amount))
    random.Random(7).shuffle(jobs)
    return jobs


# ---- invariants -----------------------------------------------------------

def check_invariants(problems, bank, shoppers, hat_stock, expect_paid):
    """Appends to problems what the database says is wrong; prints counts."""
    dup = sql("SELECT pay_no FROM payment_record GROUP BY pay_no HAVING COUNT(*) > 1")
    if dup:
        problems.append(f"pay_no with more than one payment_record: {dup[:5]}")
    bad = sql("SELECT o.order_no, o.status, "
              "(SELECT COUNT(*) FROM payment_record p WHERE p.order_no = o.order_no "
              "AND p.outcome = 1) AS recs, "
              "(SELECT COUNT(*) FROM outbox e WHERE e.order_no = o.order_no "
              "AND e.event_type = 'order.paid') AS events FROM orders o "
              "HAVING NOT ((status IN (2, 3, 4) AND recs = 1 AND events = 1) OR "
              "(status = 1 AND recs = 0 AND events = 0))")
    if bad:
        problems.append(f"orders whose status, PAID records and order.paid events disagree "
                        f"(order, status, records, events): {bad[:5]}")
    orphans = scalar("SELECT COUNT(*) FROM payment_record p LEFT JOIN orders o "
                     "ON o.order_no = p.order_no WHERE o.id IS NULL")
    if orphans:
        problems.append(f"{orphans} payment_record rows for no order")
    sold = scalar("SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE sku = 'HAT-7' "
                  "AND status <> 9")
    left = scalar("SELECT num FROM stock WHERE sku = 'HAT-7'")
    if left < 0 or sold + left != hat_stock:
        problems.append(f"stock: {sold} sold + {left} left != {hat_stock} at start (oversell)")
    dup = sql("SELECT user_id, request_id FROM orders GROUP BY user_id, request_id "
              "HAVING COUNT(*) > 1")
    if dup:
        problems.append(f"more than one order per (user_id, request_id): {dup[:5]}")

    records = {r[0]: (r[1], int(r[2])) for r in
               sql("SELECT pay_no, order_no, outcome FROM payment_record")}
    status = {r[0]: int(r[1]) for r in sql("SELECT order_no, status FROM orders")}
    for pay_no, order_no, code, result in bank.answers:
        if code != 200:
            problems.append(f"callback {pay_no} answered {code}")
            continue
        rec = records.get(pay_no)
        want = 1 if result == "PAID" else 2
        if rec is None or rec[0] != order_no or rec[1] != want or status.get(order_no) != 2:
            problems.append(f"callback {pay_no} answered 200 {result} but the database has "
                            f"record {rec}, order status {status.get(order_no)}")
    for (user_id, request_id), order_no in shoppers.orders.items() if shoppers else ():
        if order_no not in status:
            problems.append(f"order {order_no} of {user_id}/{request_id} answered but not stored")
    paid = scalar("SELECT COUNT(*) FROM orders WHERE status = 2")
    events = scalar("SELECT COUNT(*) FROM outbox WHERE event_type = 'order.paid'")
    refunds = scalar("SELECT COUNT(*) FROM payment_record WHERE outcome = 2")
    log(f"   database: {len(status)} orders, {paid} PAID, {len(records)} payment records "
        f"({refunds} REFUND_REQUIRED), {events} order.paid events, HAT-7 {sold} sold "
        f"{left} left of {hat_stock}")
    if paid != expect_paid:
        problems.append(f"{paid} orders PAID, expected {expect_paid}: the storm did not converge")
    if bank.unsettled:
        problems.append(f"the bank gave up on {len(bank.unsettled)} payments after "
                        f"{STORM_DEADLINE_S} s: {bank.unsettled[:5]}")


def check_bound(problems, tally, drops_allowed):
    if tally.late:
        problems.append(f"{tally.name}: {len(tally.late)} exchanges past the "
                        f"{tally.bound_s * 1000:.0f} ms bound, e.g. {tally.late[:5]}")
    drops = tally.got.get("connection error", 0)
    if drops and not drops_allowed:
        problems.append(f"{tally.name}: {drops} requests closed without an answer")


# ---- scenarios -------------------------------------------------------------

ORDERS = 200
THREADS = 16
PACE_S = 0.012                 # ~80 callbacks/s: the storm outlasts the fault


def seeded_orders(n, prefix):
    sql("INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status) VALUES "
        + ", ".join(f"('{prefix}{i:04d}', 'u{i}', 'r{prefix}{i}', 'HAT-7', 1, {PRICE}, 1)"
                    for i in range(n)))
    return [(f"{prefix}{i:04d}", PRICE) for i in range(n)]


def callback_storm(svc, inject, drops_allowed, prefix, probe_bound_s=BOUND_S):
    """The shared shape: seed orders, start the bank and a probe, inject
    the fault once a quarter of the work is done, wait, check."""
    hat = ORDERS + 50
    reset_db(hat)
    orders = seeded_orders(ORDERS, prefix)
    sql(f"UPDATE stock SET num = num - {ORDERS} WHERE sku = 'HAT-7'")
    bank = Bank(svc)
    probe = Prober(svc, probe_bound_s)
    jobs = payments(orders)
    pool = run_pool([lambda j=j: bank.pay(*j) for j in jobs], THREADS, PACE_S)
    wait_for(lambda: bank.tally.sent >= len(jobs) // 4, 60)
    notes = inject()
    join(pool)
    probe.stop()
    problems = []
    log(f"   {bank.tally.summary()}")
    log(f"   {probe.tally.summary()}")
    for n in notes or []:
        log(f"   {n}")
    check_invariants(problems, bank, None, hat, ORDERS)
    check_bound(problems, bank.tally, drops_allowed)
    check_bound(problems, probe.tally, drops_allowed)
    return problems


def wait_for(cond, timeout_s):
    deadline = now() + timeout_s
    while not cond():
        if now() > deadline:
            raise RuntimeError("condition not reached")
        time.sleep(0.01)


def kill_service(svc):
    """kill -9 of the service mid-storm, restarted on the same port."""
    def inject():
        t0 = now()
        svc.kill9()
        time.sleep(1.0)                # a supervisor takes a moment to restart it
        svc.start()
        return [f"service killed with SIGKILL and back on port {svc.port} in "
                f"{(now() - t0) * 1000:.0f} ms"]
    return callback_storm(svc, inject, True, "K")


def kill_mysql(svc):
    """MariaDB killed with SIGKILL mid-storm and started again."""
    def inject():
        pid = mysql_pid()
        os.kill(pid, signal.SIGKILL)
        t0 = now()
        time.sleep(1.0)                # stays down for a second of storm
        services("start-mysql")
        return [f"mariadbd {pid} killed with SIGKILL, answering again after "
                f"{(now() - t0) * 1000:.0f} ms"]
    return callback_storm(svc, inject, False, "M")


def freeze_mysql(svc):
    """MariaDB frozen with SIGSTOP for longer than the answer bound."""
    def inject():
        pid = mysql_pid()
        hold = BOUND_S + 3
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(hold)
        finally:
            os.kill(pid, signal.SIGCONT)
        return [f"mariadbd {pid} frozen with SIGSTOP for {hold * 1000:.0f} ms"]
    return callback_storm(svc, inject, False, "F")


def kill_redis(svc):
    """Redis killed with SIGKILL during an order storm, then started again."""
    shoppers_n, hat = 300, 240
    reset_db(hat)
    shoppers, bank = Shopper(svc), Bank(svc)
    probe = Prober(svc, BOUND_S)

    def buy_and_pay(i):
        order_no = shoppers.buy(f"u{i}", f"r{i}")
        if order_no is not None:
            bank.pay(order_no, f"P{order_no}", PRICE)
            bank.pay(order_no, f"P{order_no}", PRICE)

    pool = run_pool([lambda i=i: buy_and_pay(i) for i in range(shoppers_n)], THREADS, 0.02)
    wait_for(lambda: len(shoppers.orders) >= shoppers_n // 4, 60)
    pid = redis_pid()
    os.kill(pid, signal.SIGKILL)
    t0 = now()
    time.sleep(2.0)                    # two seconds of storm on the MySQL fallback
    services("start-redis")
    note = f"redis-server {pid} killed with SIGKILL, answering again after {(now() - t0) * 1000:.0f} ms"
    join(pool)
    probe.stop()
    problems = []
    for t in (shoppers.tally, bank.tally, probe.tally):
        log(f"   {t.summary()}")
    log(f"   {note}")
    log(f"   shoppers: {len(shoppers.orders)} orders, {shoppers.out_of_stock} out of stock, "
        f"{len(shoppers.unsettled)} given up")
    if shoppers.unsettled:
        problems.append(f"{len(shoppers.unsettled)} shoppers never got an answer")
    if len(shoppers.orders) != hat or shoppers.out_of_stock != shoppers_n - hat:
        problems.append(f"{len(shoppers.orders)} orders and {shoppers.out_of_stock} out of stock "
                        f"for {shoppers_n} shoppers and {hat} hats")
    check_invariants(problems, bank, shoppers, hat, len(shoppers.orders))
    for t in (shoppers.tally, bank.tally, probe.tally):
        check_bound(problems, t, False)
    return problems


def slow_connections(svc):
    """3,000 slow connections from one address while the bank storms.

    They come from 127.0.0.2 and drip their headers a byte a second; the
    bank and the probe use 127.0.0.1 and must be served within the bounds."""
    n, held, refused = 3000, [], 0
    src = "127.0.0.2"
    stopping = threading.Event()

    def drip():
        while not stopping.wait(1.0):
            for s in list(held):
                try:
                    s.send(b"a")
                except OSError:
                    held.remove(s)

    def inject():
        nonlocal refused
        t0 = now()
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.bind((src, 0))
                s.connect_ex(("127.0.0.1", svc.port))
                held.append(s)
            except OSError:
                refused += 1
                s.close()
        for s in held:
            try:
                s.send(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
            except OSError:
                pass
        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        opened = now() - t0
        time.sleep(8.0)                # the storm goes on beside them
        alive = len(held)
        stopping.set()
        dripper.join()
        for s in held:
            s.close()
        return [f"{n} slow connections from {src} opened in {opened * 1000:.0f} ms "
                f"({refused} refused at once), {alive} still open after 8 s of dripping"]
    return callback_storm(svc, inject, False, "S", LEGIT_S)


class Horde:
    """Connections from several addresses, each holding per_addr open and
    opening a new one as soon as one is closed (refused at once, evicted,
    or past the header deadline): one process of its own (so that it never
    holds the interpreter lock a legitimate client of this process needs),
    one selector. Each sends start (by default the start of a request's
    headers) and then, with drip, one more byte a second (a trickled body
    after whole headers), else nothing more."""

    HEADERS = b"GET /healthz HTTP/1.1\r\nX-Slow: "

    def __init__(self, svc, addrs, per_addr, start=HEADERS, drip=False):
        self.svc, self.addrs, self.per_addr = svc, addrs, per_addr
        self.start, self.drip = start, drip
        self.opened = self.closed = self.failed = 0
        ctx = multiprocessing.get_context("fork")
        self.stopping, self.ready = ctx.Event(), ctx.Event()
        self.results = ctx.Queue()
        self.proc = ctx.Process(target=self.run, daemon=True)
        self.proc.start()

    def open(self, sel, addr):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((addr, 0))
            s.connect_ex(("127.0.0.1", self.svc.port))
            sel.register(s, selectors.EVENT_WRITE, addr)
            self.opened += 1
        except OSError:
            self.failed += 1
            s.close()

    def run(self):
        # The attacking hosts' own work is not the service's: on this one
        # machine the horde yields the CPU to the service and its clients.
        os.nice(19)
        sel = selectors.DefaultSelector()
        for addr in self.addrs:
            for _ in range(self.per_addr):
                self.open(sel, addr)
        self.ready.set()
        next_drip = now() + 1.0
        while not self.stopping.is_set():
            if self.drip and now() >= next_drip:
                next_drip = now() + 1.0
                for key in list(sel.get_map().values()):
                    if key.events & selectors.EVENT_READ:
                        try:
                            key.fileobj.send(b" ")
                        except OSError:
                            pass
            for key, events in sel.select(0.1):
                s, addr = key.fileobj, key.data
                if events & selectors.EVENT_WRITE:
                    try:
                        s.send(self.start)
                        sel.modify(s, selectors.EVENT_READ, addr)
                        continue
                    except OSError:
                        pass
                else:
                    try:
                        if s.recv(4096):
                            continue
                    except BlockingIOError:
                        continue
                    except OSError:
                        pass
                sel.unregister(s)
                s.close()
                self.closed += 1
                self.open(sel, addr)
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()
        self.results.put((self.opened, self.closed, self.failed))

    def stop(self):
        """Stops the process; its counts become this object's."""
        self.stopping.set()
        self.opened, self.closed, self.failed = self.results.get(timeout=60)
        self.proc.join(30)


def many_addresses(svc):
    """8 addresses holding and re-opening 1,100 connections each.

    127.0.0.2-9 each keep 1,100 connections open (more than the whole
    http.max_connections), opening a new one whenever one is closed, for
    ATTACK_S seconds. Meanwhile a legitimate client on 127.0.0.1 sends
    signed callbacks one at a time, each on a new connection: at least 99 %
    answered, the 99th percentile under 100 ms (failures count as slow)."""
    addrs = [f"127.0.0.{i}" for i in range(2, 10)]
    per_addr, attack_s, n = 1100, 15, 1500
    reset_db(n + 50)
    orders = seeded_orders(n, "A")
    sql(f"UPDATE stock SET num = num - {n} WHERE sku = 'HAT-7'")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(addrs) * per_addr + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    return under_horde(svc, Horde(svc, addrs, per_addr), addrs, per_addr, attack_s, orders, n)


def under_horde(svc, horde, addrs, per_addr, attack_s, orders, n, bound_p99=True):
    """While horde holds its connections for attack_s seconds, a legitimate
    client on 127.0.0.1 sends signed callbacks one at a time, each on a new
    connection: at least 99 % answered and, with bound_p99, the 99th
    percentile under 100 ms (failures count as slow); without, the
    percentile is printed only (a time on a shared machine)."""
    if not horde.ready.wait(60):
        raise RuntimeError("the attacking connections were not opened within 60 s")
    bank = Bank(svc)
    times, answered, sent = [], 0, 0
    t_end = now() + attack_s
    for order_no, amount in orders:
        if now() >= t_end:
            break
        body = json.dumps({"order_no": order_no, "pay_no": f"P{order_no}",
                           "amount": amount}).encode()
        ts = str(int(time.time()))
        sig = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        t0 = now()
        status, reply = request(svc, bank.tally, "POST", "/pay/callback", body,
                                {"Content-Type": "application/json", "X-Timestamp": ts,
                                 "X-Signature": sig}, src="127.0.0.1")
        took = now() - t0
        sent += 1
        if status is not None:
            answered += 1
            bank.answers.append((f"P{order_no}", order_no, status, (reply or {}).get("result")))
        times.append(took if status is not None else float("inf"))
        time.sleep(0.005)
    horde.stop()
    opened, closed = horde.opened, horde.closed
    refused = {r: scalar_metric(svc, "paycallback_http_connections_refused_total", r)
               for r in ("max_connections", "max_connections_per_ip", "max_connections_per_v6_56",
                         "max_connections_per_v6_48", "reserved")}
    evicted = scalar_metric(svc, "paycallback_http_connections_evicted_total", None)
    times.sort()
    p50 = times[len(times) // 2] * 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000
    finite = [t for t in times if t != float("inf")]
    share = answered / sent if sent else 0
    log(f"   attack: {len(addrs)} addresses x {per_addr} held, {opened} connections opened "
        f"({opened / attack_s:.0f}/s), {closed} closed by the service, {horde.failed} could "
        f"not be opened; refused by cap {refused}, evicted {evicted}")
    log(f"   legitimate client (127.0.0.1): {sent} callbacks, {answered} answered "
        f"({share * 100:.2f} %), p50 {p50:.1f} ms p99 {p99:.1f} ms "
        f"max {(finite[-1] * 1000 if finite else 0):.1f} ms")
    problems = []
    if share < 0.99:
        problems.append(f"only {share * 100:.2f} % of the legitimate callbacks were answered")
    if bound_p99 and p99 >= 100:
        problems.append(f"legitimate p99 {p99:.1f} ms, not under 100 ms")
    if sent < 100:
        problems.append(f"only {sent} legitimate callbacks sent in {attack_s} s")
    paid = sum(1 for a in bank.answers if a[2] == 200)
    check_invariants(problems, bank, None, n + 50, paid)
    return problems


def trickled_bodies(svc):
    """200 addresses x 7 connections trickling a body after whole headers.

    127.0.1.1-200 each keep 7 connections that send a POST's headers (a
    body of 100,000 bytes announced) and then one byte of it a second,
    opening a new one whenever one is closed, for ATTACK_S seconds: 1,400
    connections, more than http.max_connections, none of their holders
    much larger than another. The legitimate client on 127.0.0.1 gets at
    least 99 % of its callbacks answered; its p99 is printed, not
    asserted."""
    addrs = [f"127.0.1.{i}" for i in range(1, 201)]
    per_addr, attack_s, n = 7, 15, 1500
    start = (b"POST /pay/callback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100000\r\n\r\n{")
    reset_db(n + 50)
    orders = seeded_orders(n, "T")
    sql(f"UPDATE stock SET num = num - {n} WHERE sku = 'HAT-7'")
    horde = Horde(svc, addrs, per_addr, start=start, drip=True)
    return under_horde(svc, horde, addrs, per_addr, attack_s, orders, n, bound_p99=False)


def addresses_in_order(svc):
    """36 addresses, each opening its full per-address share in turn.

    127.0.2.1-36 open http.max_connections_per_ip connections each, one
    address after the other, every one sending the start of a request's
    headers and nothing more, re-opening whatever is closed, for ATTACK_S
    seconds: the first addresses fill the server before the last have
    begun, then every address holds what it can. The legitimate client on
    127.0.0.1 gets at least 99 % of its callbacks answered; its p99 is
    printed, not asserted."""
    addrs = [f"127.0.2.{i}" for i in range(1, 37)]
    per_addr, attack_s, n = 256, 10, 1500
    reset_db(n + 50)
    orders = seeded_orders(n, "I")
    sql(f"UPDATE stock SET num = num - {n} WHERE sku = 'HAT-7'")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(addrs) * per_addr + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    horde = Horde(svc, addrs, per_addr)
    return under_horde(svc, horde, addrs, per_addr, attack_s, orders, n, bound_p99=False)


def scalar_metric(svc, name, reason):
    """One counter of /metrics (reason label or none), 0 when absent."""
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=CLIENT_TIMEOUT_S)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {OPERATOR_KEY}"})
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    want = f'{name}{{reason="{reason}"}} ' if reason else f"{name} "
    for line in text.splitlines():
        if line.startswith(want):
            return int(float(line.split()[-1]))
    return 0


SCENARIOS = [
    ("kill-service", kill_service),
    ("kill-mysql", kill_mysql),
    ("freeze-mysql", freeze_mysql),
    ("kill-redis", kill_redis),
    ("slow-connections", slow_connections),
    ("many-addresses", many_addresses),
    ("trickled-bodies", trickled_bodies),
    ("addresses-in-order", addresses_in_order),
]


def main(argv):
    names = argv[1:] or [n for n, _ in SCENARIOS]
    unknown = set(names) - {n for n, _ in SCENARIOS}
    if unknown:
        log(f"faults: unknown scenario {sorted(unknown)}; known: {[n for n, _ in SCENARIOS]}")
        return 2
    passed = failed = 0
    t_all = now()
    for name, fn in SCENARIOS:
        if name not in names:
            continue
        log(f"== {name}: {fn.__doc__.splitlines()[0]}")
        svc = Service()
        t0 = now()
        try:
            services("start")
            svc.start()
            problems = fn(svc)
        except Exception as e:          # a scenario that cannot run is a failure
            problems = [f"{type(e).__name__}: {e}"]
            ABORT.set()
            for t in threading.enumerate():
                if t is not threading.current_thread():
                    t.join(CLIENT_TIMEOUT_S + 5)
            ABORT.clear()
        finally:
            svc.stop()
            try:
                services("start")      # whatever the scenario left down comes back
            except subprocess.CalledProcessError as e:
                problems.append(f"services did not come back: {e}")
        for p in problems:
            log(f"   problem: {p}")
        xfail = EXPECTED_TO_FAIL.get(name)
        verdict = "ok" if not problems else "FAILED"
        if xfail and problems:
            verdict = f"expected to fail: {xfail}"
            passed += 1
        elif xfail:
            verdict = f"passed although marked expected to fail ({xfail}): remove the mark"
            failed += 1
        elif problems:
            failed += 1
        else:
            passed += 1
        log(f"   {name}: {verdict} ({now() - t0:.1f} s)")
    log(f"faults: {now() - t_all:.0f} s")
    log(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
