#!/usr/bin/env python3
"""refund_gateway.py - the gateways' refund APIs for the refund tests.

Serves Stripe's, Alipay's and WeChat Pay v3's refund APIs on one port. At
start it makes two RSA key pairs and writes, next to --port-file:
merchant_key.pem (the merchant's private key, mode 0600, for the
service's profile), platform_pub.pem (the gateway's public key: Alipay's
public key, or WeChat's platform key with serial PLATFORM-SERIAL-1).
Requests are checked with the merchant's public key; answers are signed
with the platform key. POST /_sign {"message": "..."} answers
{"signature": base64} signed with the platform key, for test
notifications. POST /_rotate_merchant makes a new merchant key pair,
writes its private key to merchant_key_rotated.pem (0600) and checks
requests with its public key from then on (a merchant key rotation).
  Alipay: POST /gateway.do, alipay.trade.refund and
      alipay.trade.fastpay.refund.query (RSA2 over the sorted parameters);
      the out_request_no is remembered.
  WeChat Pay v3: POST /v3/refund/domestic/refunds and GET
      /v3/refund/domestic/refunds/<out_refund_no>
      (WECHATPAY2-SHA256-RSA2048); the out_refund_no is remembered.
Stripe:

Listens on 127.0.0.1 (port 0 = any free port, written to --port-file) and
serves Stripe's refund API as the service calls it:
  POST /v1/refunds  (form: payment_intent or charge, amount, metadata[...])
      Authorization: Bearer <--stripe-key> (else 401), Idempotency-Key
      required. A key seen before answers what its first request got, a
      500 included, with the header Idempotent-Replayed: true, as Stripe
      does once its endpoint started, and makes no second refund.
  GET /v1/refunds/<id>  the refund as it is now.
  GET /v1/refunds?payment_intent=<pi>|charge=<ch>[&limit=n]  the
      payment's refunds, newest first: {"object": "list", "data": [...],
      "has_more": false}; logged as {"method": "GET", "list": "<pi>"}.
What a payment's refunds do is planted with POST /_plant and a JSON body
  {"pay_no": "pi_1", "mode": "succeed"}
mode: succeed (status succeeded), pending (status pending; the refund
succeeds when it is next read), stay_pending (pending however often it is
read: only a notification ends it), refuse (400 charge_already_refunded, a
business refusal, kept under the key), 500 (HTTP 500, nothing made, kept
under the key), made_then_500 (the refund is made, then HTTP 500, kept under
the key), hang (the refund is made, then no answer until the client gives
up: the answer is lost), 500_then_succeed (the first request 500, kept
under its key; the next ones succeed),
notify_later (the refund is made and answered pending, stays pending when
read, and a moment later succeeds and is notified to the "notify" URL of
the plant, {"pay_no", "mode", "notify": "http://.../pay/callback/x"}, in
the gateway's own format: Stripe refund.updated signed with
--stripe-webhook-secret, WeChat REFUND.SUCCESS encrypted with
--apiv3-key and signed with the platform key, Alipay's trade notify with
out_biz_no and refund_fee signed with the platform key; logged as
{"notified": "<request number>", "status": <the service's answer>}),
forge_answer (Alipay and WeChat: the refund is made, and every answer about
it is signed with a key that is not the platform's), lie_number and
lie_amount (Alipay and WeChat: the refund is made and its answer lost as in
hang; every answer about it is signed with the platform key but names
another refund number, or another amount), slow (Stripe: the
refund is made and answered 0.4 s later).
An unplanted payment is "succeed". Each request is appended as one JSON
line to --log:
  {"method": "POST", "path": "/v1/refunds", "key": "R...", "auth_ok": true,
   "pay_no": "pi_1", "amount": "89900", "made": "re_1", "status": 200,
   "concurrent": 1, "overlap": false}
where a Stripe request's "concurrent" counts the Stripe requests in
progress when it arrived (itself included) and "overlap" says whether
another request about the same payment was in progress then.
GET /_stats returns {"refunds": {"re_1": {...}}, "keys": {"R...": "re_1"}}:
the refunds made, and which refund each Idempotency-Key made. Python
standard library only; stops on SIGTERM.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit
from urllib.request import Request, urlopen

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PLATFORM_SERIAL = "PLATFORM-SERIAL-1"
PENDING_MODES = ("pending", "stay_pending", "notify_later")
HELD_MODES = ("stay_pending", "notify_later")  # pending however often read


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def sign(key, msg):
    return base64.b64encode(key.sign(msg.encode(), padding.PKCS1v15(), hashes.SHA256())).decode()


def verify(pub, msg, sig_b64):
    try:
        pub.verify(base64.b64decode(sig_b64), msg.encode(), padding.PKCS1v15(), hashes.SHA256())
        return True
    except Exception:  # noqa: BLE001 - any failure is a bad signature
        return False


def write_merchant_key(key, path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


class State:
    def __init__(self, key, log_path, args):
        self.key = key
        self.args = args
        self.dir = None     # where the key files are written
        self.merchant = new_key()
        self.platform = new_key()
        self.log = open(log_path, "a", buffering=1, encoding="utf-8")
        self.plants = {}
        self.notify = {}    # pay_no -> where notify_later posts its notification
        self.forger = None  # forge_answer's key, made when first needed
        self.refunds = {}   # id -> refund object
        self.keys = {}      # Idempotency-Key -> (status, body)
        self.seen = {}      # pay_no -> requests so far (500_then_succeed)
        self.alt = {}       # Alipay out_request_no / WeChat out_refund_no -> refund
        self.alt_made = []
        self.active = 0     # Stripe requests in progress
        self.active_pay = {}  # pay_no -> Stripe requests about it in progress
        self.lock = threading.Lock()
        self.stop = threading.Event()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def notification(st, kind, ref, key):
    """The gateway's notification that the refund under key succeeded:
    (body bytes, headers)."""
    if kind == "stripe":
        obj = dict(ref, status="succeeded")
        body = json.dumps({"id": "evt_" + ref["id"], "object": "event", "type": "refund.updated",
                           "data": {"object": obj}}).encode()
        t = str(int(time.time()))
        mac = hmac.new(st.args.stripe_webhook_secret.encode(), t.encode() + b"." + body,
                       hashlib.sha256).hexdigest()
        return body, {"Content-Type": "application/json",
                      "Stripe-Signature": "t=%s,v1=%s" % (t, mac)}
    if kind == "wechat":
        plain = json.dumps({"mchid": st.args.mchid, "out_trade_no": ref.get("order_no", ""),
                            "transaction_id": ref["pay_no"], "out_refund_no": key,
                            "refund_id": ref["id"], "refund_status": "SUCCESS",
                            "amount": {"refund": ref["amount"]}})
        nonce12 = base64.b16encode(os.urandom(6)).decode()
        ct = AESGCM(st.args.apiv3_key.encode()).encrypt(nonce12.encode(), plain.encode(),
                                                         b"refund")
        body = json.dumps({"id": "EV-" + ref["id"], "create_time": "2026-12-03T10:00:06+08:00",
                           "resource_type": "encrypt-resource", "event_type": "REFUND.SUCCESS",
                           "summary": "refund", "resource": {
                               "original_type": "refund", "algorithm": "AEAD_AES_256_GCM",
                               "ciphertext": base64.b64encode(ct).decode(),
                               "associated_data": "refund", "nonce": nonce12}},
                          separators=(",", ":"))
        ts, nonce = str(int(time.time())), base64.b16encode(os.urandom(16)).decode()
        return body.encode(), {"Content-Type": "application/json", "Wechatpay-Timestamp": ts,
                               "Wechatpay-Nonce": nonce, "Wechatpay-Serial": PLATFORM_SERIAL,
                               "Wechatpay-Signature": sign(st.platform, "%s\n%s\n%s\n" %
                                                           (ts, nonce, body))}
    fields = {"app_id": st.args.app_id, "charset": "utf-8", "notify_type": "trade_status_sync",
              "out_biz_no": key, "refund_fee": ref["amount"], "trade_no": ref["pay_no"],
              "trade_status": "TRADE_SUCCESS"}
    content = "&".join("%s=%s" % (k, fields[k]) for k in sorted(fields))
    fields.update(sign_type="RSA2", sign=sign(st.platform, content))
    return urlencode(fields).encode(), {
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}


def later(st, record, kind, ref, key):
    """notify_later: a moment after the answer, the refund succeeds and its
    notification goes to the plant's URL (once; its answer logged)."""
    url = st.notify.get(ref.get("pay_no") or ref.get("payment_intent"))

    def run():
        if st.stop.wait(0.3) or not url:
            return
        with st.lock:
            body, headers = notification(st, kind, ref, key)
        try:
            with urlopen(Request(url, data=body, headers=headers, method="POST"),
                         timeout=5) as resp:
                code = resp.status
        except Exception as e:  # noqa: BLE001 - an HTTP error is an answer too
            code = getattr(e, "code", 0)
        record({"notified": key, "kind": kind, "status": code})
        with st.lock:  # only now do reads see it: the notification ended it
            ref["status"] = "succeeded"

    threading.Thread(target=run, daemon=True).start()


def signer(st, pay_no):
    """The key that signs answers about pay_no: the platform's, or under
    forge_answer one the service does not know."""
    if st.plants.get(pay_no) != "forge_answer":
        return st.platform
    with st.lock:
        if st.forger is None:
            st.forger = new_key()
        return st.forger


def make_handler(st):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def reply(self, code, body, headers=None):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def record(self, entry):
            entry["t"] = time.time()
            st.log.write(json.dumps(entry) + "\n")

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n).decode() if n else ""

        def do_GET(self):
            path = urlsplit(self.path).path
            if path.startswith("/v3/"):
                self.do_wechat("GET", self.path, "")
                return
            if path == "/_stats":
                with st.lock:
                    self.reply(200, json.dumps({"refunds": st.refunds, "keys": {
                        k: json.loads(v[1]).get("id") for k, v in st.keys.items()}}))
                return
            auth_ok = self.headers.get("Authorization") == "Bearer " + st.key
            if path == "/v1/refunds":
                self.stripe_list(auth_ok)
                return
            rid = path.rsplit("/", 1)[-1] if path.startswith("/v1/refunds/") else ""
            with st.lock:
                ref = st.refunds.get(rid)
                if ref is not None and ref["status"] == "pending" and \
                        st.plants.get(ref["payment_intent"]) not in HELD_MODES:
                    ref["status"] = "succeeded"
                body = json.dumps(ref) if ref else None
            self.record({"method": "GET", "path": path, "auth_ok": auth_ok,
                         "status": 200 if body and auth_ok else 404})
            if not auth_ok:
                self.reply(401, json.dumps({"error": {"type": "invalid_request_error",
                                                      "message": "Invalid API Key"}}))
            elif body is None:
                self.reply(404, json.dumps({"error": {"type": "invalid_request_error",
                                                      "code": "resource_missing"}}))
            else:
                self.reply(200, body)

        def stripe_list(self, auth_ok):
            q = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            pay_no = q.get("payment_intent") or q.get("charge") or ""
            limit = int(q.get("limit") or 10)
            with st.lock:
                mine = [r for r in st.refunds.values() if r["payment_intent"] == pay_no]
                for ref in mine:
                    if ref["status"] == "pending" and st.plants.get(pay_no) not in HELD_MODES:
                        ref["status"] = "succeeded"
                mine.sort(key=lambda r: int(r["id"][3:]), reverse=True)
                body = json.dumps({"object": "list", "url": "/v1/refunds", "data": mine[:limit],
                                   "has_more": len(mine) > limit})
            self.record({"method": "GET", "path": "/v1/refunds", "list": pay_no,
                         "auth_ok": auth_ok, "found": len(mine),
                         "status": 200 if auth_ok else 401})
            if not auth_ok:
                self.reply(401, json.dumps({"error": {"type": "invalid_request_error",
                                                      "message": "Invalid API Key"}}))
            else:
                self.reply(200, body)

        def do_POST(self):
            path = urlsplit(self.path).path
            raw = self.body()
            if path == "/_sign":
                self.reply(200, json.dumps({"signature": sign(st.platform,
                                                              json.loads(raw)["message"])}))
                return
            if path == "/_rotate_merchant":
                with st.lock:
                    st.merchant = new_key()
                    write_merchant_key(st.merchant, os.path.join(st.dir,
                                                                 "merchant_key_rotated.pem"))
                self.reply(200, "{}")
                return
            if path == "/gateway.do":
                self.kind = "alipay"
                self.do_alipay(raw)
                return
            if path.startswith("/v3/"):
                self.kind = "wechat"
                self.do_wechat("POST", self.path, raw)
                return
            if path == "/_plant":
                p = json.loads(raw)
                with st.lock:
                    st.plants[p["pay_no"]] = p.get("mode", "succeed")
                    st.notify[p["pay_no"]] = p.get("notify")
                self.reply(200, "{}")
                return
            if path != "/v1/refunds":
                self.reply(404, "{}")
                return
            form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            pay_no = form.get("payment_intent") or form.get("charge") or ""
            self.arrive(pay_no)
            try:
                self.stripe_post(path, form)
            finally:
                self.leave(pay_no)

        def arrive(self, pay_no):
            """Counts a Stripe request in progress, for the log's
            "concurrent" and "overlap"."""
            with st.lock:
                st.active += 1
                st.active_pay[pay_no] = st.active_pay.get(pay_no, 0) + 1
                self.seen_active = (st.active, st.active_pay[pay_no] > 1)

        def leave(self, pay_no):
            with st.lock:
                st.active -= 1
                st.active_pay[pay_no] -= 1

        def stripe_post(self, path, form):
            key = self.headers.get("Idempotency-Key")
            auth_ok = self.headers.get("Authorization") == "Bearer " + st.key
            pay_no = form.get("payment_intent") or form.get("charge") or ""
            entry = {"method": "POST", "path": path, "key": key, "auth_ok": auth_ok,
                     "pay_no": pay_no, "amount": form.get("amount"),
                     "refund_no": form.get("metadata[refund_no]"),
                     "concurrent": self.seen_active[0], "overlap": self.seen_active[1]}
            if not auth_ok or not key:
                entry["status"] = 401 if not auth_ok else 400
                self.record(entry)
                self.reply(entry["status"], json.dumps({"error": {
                    "type": "invalid_request_error", "message": "key or Idempotency-Key"}}))
                return
            hang = slow = replayed = False
            with st.lock:
                if key in st.keys:
                    code, body = st.keys[key]
                    entry.update(status=code, replayed=True)
                    replayed = True
                else:
                    mode = st.plants.get(pay_no, "succeed")
                    n = st.seen.get(pay_no, 0)
                    st.seen[pay_no] = n + 1
                    if mode == "500" or (mode == "500_then_succeed" and n == 0):
                        code, body = 500, json.dumps({"error": {"type": "api_error"}})
                        st.keys[key] = (code, body)  # the endpoint started: kept
                    elif mode == "refuse":
                        code, body = 400, json.dumps({"error": {
                            "type": "invalid_request_error", "code": "charge_already_refunded",
                            "message": "Charge has already been refunded."}})
                        st.keys[key] = (code, body)
                    else:
                        rid = "re_%d" % (len(st.refunds) + 1)
                        ref = {"id": rid, "object": "refund", "amount": int(form.get("amount", 0)),
                               "payment_intent": pay_no, "status":
                               "pending" if mode in PENDING_MODES else "succeeded",
                               "metadata": {"refund_no": form.get("metadata[refund_no]"),
                                            "order_no": form.get("metadata[order_no]")}}
                        st.refunds[rid] = ref
                        code, body = 200, json.dumps(ref)
                        if mode == "made_then_500":
                            code, body = 500, json.dumps({"error": {"type": "api_error"}})
                        st.keys[key] = (code, body)
                        entry["made"] = rid
                        hang = mode == "hang"
                        slow = mode == "slow"
                        if mode == "notify_later":
                            later(st, self.record, "stripe", ref, key)
                    entry["status"] = code
            self.record(entry)
            if hang:
                st.stop.wait(120)  # the refund is made; its answer never comes
                return
            if slow:
                st.stop.wait(0.4)
            self.reply(code, body, {"Idempotent-Replayed": "true"} if replayed else None)

        # ---- shared: what a refund number does, once ------------------------

        def decide(self, pay_no, key, amount, entry):
            """The refund under key: (kind, refund) where kind is "made",
            "replayed", "500", "refuse" or "hang"; refund is None for a
            refusal or a 500. The caller holds st.lock."""
            if key in st.alt:
                entry["replayed"] = True
                ref = st.alt[key]
                return ("refuse" if ref is None else "replayed"), ref
            mode = st.plants.get(pay_no, "succeed")
            n = st.seen.get(pay_no, 0)
            st.seen[pay_no] = n + 1
            if mode == "500" or (mode == "500_then_succeed" and n == 0):
                return "500", None
            if mode == "refuse":
                st.alt[key] = None
                return "refuse", None
            rid = "%d" % (5000000000 + len(st.alt_made) + 1)
            ref = {"id": rid, "key": key, "pay_no": pay_no, "amount": amount,
                   "status": "pending" if mode in PENDING_MODES else "succeeded"}
            st.alt[key] = ref
            st.alt_made.append(rid)
            entry["made"] = rid
            if mode == "notify_later":
                later(st, self.record, self.kind, ref, key)
            return ("hang" if mode in ("hang", "lie_number", "lie_amount") else "made"), ref

        # ---- Alipay --------------------------------------------------------

        def alipay_reply(self, method, inner):
            name = method.replace(".", "_") + "_response"
            text = json.dumps(inner, separators=(",", ":"), ensure_ascii=False)
            body = '{"%s":%s,"sign":"%s"}' % (name, text, sign(self.signer, text))
            self.reply(200, body)

        def do_alipay(self, raw):
            form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            content = "&".join("%s=%s" % (k, form[k]) for k in sorted(form) if k != "sign")
            sig_ok = verify(st.merchant.public_key(), content, form.get("sign", ""))
            method = form.get("method", "")
            biz = json.loads(form.get("biz_content") or "{}")
            pay_no, key = biz.get("trade_no", ""), biz.get("out_request_no", "")
            self.signer = signer(st, pay_no or (st.alt.get(key) or {}).get("pay_no"))
            entry = {"method": "POST", "path": "/gateway.do", "api": method, "sig_ok": sig_ok,
                     "app_ok": form.get("app_id") == st.args.app_id, "key": key,
                     "pay_no": pay_no, "amount": biz.get("refund_amount")}
            if not sig_ok or not entry["app_ok"]:
                entry["status"] = 200
                self.record(entry)
                self.alipay_reply(method, {"code": "40002", "msg": "Invalid Arguments",
                                           "sub_code": "isv.invalid-signature"})
                return
            with st.lock:
                if method == "alipay.trade.fastpay.refund.query":
                    ref = st.alt.get(key)
                    if ref is not None and ref["status"] == "pending" and \
                            st.plants.get(ref["pay_no"]) not in HELD_MODES:
                        ref["status"] = "succeeded"
                    inner = {"code": "10000", "msg": "Success", "out_request_no": key}
                    if ref is not None and ref["status"] == "succeeded":
                        inner.update(refund_amount=ref["amount"], refund_status="REFUND_SUCCESS",
                                     trade_no=ref["pay_no"])
                        lie = st.plants.get(ref["pay_no"])
                        if lie == "lie_number":
                            inner["out_request_no"] = key + "9"
                        elif lie == "lie_amount":
                            inner["refund_amount"] = "0.01"
                    entry["status"] = 200
                    kind = "query"
                else:
                    kind, ref = self.decide(pay_no, key, biz.get("refund_amount"), entry)
            self.record(entry)
            if kind == "query":
                self.alipay_reply(method, inner)
            elif kind == "500":
                self.reply(500, "{}")
            elif kind == "refuse":
                self.alipay_reply(method, {"code": "40004", "msg": "Business Failed",
                                           "sub_code": "ACQ.TRADE_HAS_CLOSE",
                                           "sub_msg": "trade closed"})
            elif kind == "hang":
                st.stop.wait(120)
            else:
                self.alipay_reply(method, {
                    "code": "10000", "msg": "Success", "trade_no": ref["pay_no"],
                    "out_trade_no": biz.get("out_trade_no"), "refund_fee": ref["amount"],
                    "fund_change": "Y" if kind == "made" and ref["status"] == "succeeded"
                    else "N"})

        # ---- WeChat Pay v3 ---------------------------------------------------

        def wechat_reply(self, code, obj):
            body = json.dumps(obj, separators=(",", ":")).encode()
            ts, nonce = str(int(time.time())), base64.b16encode(os.urandom(8)).decode()
            sig = sign(self.signer, "%s\n%s\n%s\n" % (ts, nonce, body.decode()))
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Wechatpay-Timestamp", ts)
            self.send_header("Wechatpay-Nonce", nonce)
            self.send_header("Wechatpay-Serial", PLATFORM_SERIAL)
            self.send_header("Wechatpay-Signature", sig)
            self.end_headers()
            self.wfile.write(body)

        def wechat_auth_ok(self, method, path, raw):
            auth = self.headers.get("Authorization") or ""
            if not auth.startswith("WECHATPAY2-SHA256-RSA2048 "):
                return False
            fields = {}
            for part in auth[len("WECHATPAY2-SHA256-RSA2048 "):].split(","):
                k, _, v = part.strip().partition("=")
                fields[k] = v.strip('"')
            if fields.get("mchid") != st.args.mchid or \
                    fields.get("serial_no") != st.args.merchant_serial:
                return False
            msg = "%s\n%s\n%s\n%s\n%s\n" % (method, path, fields.get("timestamp"),
                                             fields.get("nonce_str"), raw)
            return verify(st.merchant.public_key(), msg, fields.get("signature", ""))

        def wechat_refund(self, ref):
            lie = st.plants.get(ref["pay_no"])
            return {"refund_id": ref["id"],
                    "out_refund_no": ref["key"] + ("9" if lie == "lie_number" else ""),
                    "transaction_id": ref["pay_no"], "status":
                    "SUCCESS" if ref["status"] == "succeeded" else "PROCESSING",
                    "amount": {"refund": ref["amount"] + (1 if lie == "lie_amount" else 0),
                               "currency": "CNY"}}

        def do_wechat(self, method, path, raw):
            self.signer = st.platform
            if method == "GET":
                self.signer = signer(st, (st.alt.get(path.rsplit("/", 1)[-1]) or {}).get("pay_no"))
            else:
                self.signer = signer(st, (json.loads(raw or "{}")).get("transaction_id"))
            sig_ok = self.wechat_auth_ok(method, path, raw)
            entry = {"method": method, "path": path, "sig_ok": sig_ok}
            if not sig_ok:
                entry["status"] = 401
                self.record(entry)
                self.wechat_reply(401, {"code": "SIGN_ERROR", "message": "signature"})
                return
            if method == "GET":
                key = path.rsplit("/", 1)[-1]
                with st.lock:
                    ref = st.alt.get(key)
                    body = None
                    if ref is not None:
                        if ref["status"] == "pending" and \
                                st.plants.get(ref["pay_no"]) not in HELD_MODES:
                            ref["status"] = "succeeded"
                        body = self.wechat_refund(ref)
                entry.update(key=key, status=200 if body else 404)
                self.record(entry)
                if body:
                    self.wechat_reply(200, body)
                else:
                    self.wechat_reply(404, {"code": "RESOURCE_NOT_EXISTS", "message": "none"})
                return
            req = json.loads(raw)
            key, pay_no = req.get("out_refund_no", ""), req.get("transaction_id", "")
            amount = (req.get("amount") or {}).get("refund")
            entry.update(key=key, pay_no=pay_no, amount=amount,
                         total=(req.get("amount") or {}).get("total"))
            with st.lock:
                kind, ref = self.decide(pay_no, key, amount, entry)
                body = self.wechat_refund(ref) if ref else None
            self.record(entry)
            if kind == "500":
                self.wechat_reply(500, {"code": "SYSTEM_ERROR", "message": "busy"})
            elif kind == "refuse":
                self.wechat_reply(403, {"code": "NOT_ENOUGH", "message": "balance"})
            elif kind == "hang":
                st.stop.wait(120)
            else:
                self.wechat_reply(200, body)

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--stripe-key", default="sk_test_refunds")
    ap.add_argument("--app-id", default="2021000000000001")
    ap.add_argument("--mchid", default="1900000001")
    ap.add_argument("--merchant-serial", default="MERCHANT-SERIAL-1")
    ap.add_argument("--stripe-webhook-secret", default="whsec_refund_test_secret")
    ap.add_argument("--apiv3-key", default="0123456789abcdef0123456789abcdef")
    args = ap.parse_args()
    st = State(args.stripe_key, args.log, args)
    d = os.path.dirname(os.path.abspath(args.port_file))
    st.dir = d
    write_merchant_key(st.merchant, os.path.join(d, "merchant_key.pem"))
    with open(os.path.join(d, "platform_pub.pem"), "wb") as f:
        f.write(st.platform.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    srv = Server(("127.0.0.1", args.port), make_handler(st))
    signal.signal(signal.SIGTERM, lambda *_: (st.stop.set(), threading.Thread(
        target=srv.shutdown).start()))
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
