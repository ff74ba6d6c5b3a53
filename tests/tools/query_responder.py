#!/usr/bin/env python3
"""query_responder.py - a gateway query endpoint for the stale-order tests.

Listens on 127.0.0.1 (port 0 = any free port, written to --port-file) and
answers GET <any path>?order_no=X the way the query contract says, after
checking "Authorization: Bearer <--token>" (anything else: 401). What it
answers for an order is planted with POST /_plant and a JSON body
  {"path": "/q", "order_no": "O1", "mode": "PAID", "pay_no": "P1",
   "amount": "899.00", "currency": "CNY"}
mode: PAID | NOTPAY | CLOSED | NOT_FOUND (answered as the contract says),
500 (HTTP 500), hang (never answer), malformed (not JSON), wrong_order
(PAID for another order_no), number_amount (PAID with a JSON number),
large (a 64 KiB body). An order planted for no mode, or on another path,
is NOT_FOUND. Each query is appended as one JSON line to --log:
  {"path": "/q", "order_no": "O1", "auth_ok": true, "mode": "PAID", "t": ...}
GET /_stats returns {"queries": n}. Python standard library only; stops on
SIGTERM.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self, token, log_path):
        self.token = token
        self.log = open(log_path, "a", buffering=1, encoding="utf-8")
        self.plants = {}
        self.queries = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()


def answer_for(plant, order_no):
    """The status and body planted for order_no (NOT_FOUND when none)."""
    mode = plant.get("mode", "NOT_FOUND") if plant else "NOT_FOUND"
    if mode in ("NOTPAY", "CLOSED", "NOT_FOUND"):
        return 200, json.dumps({"order_no": order_no, "status": mode})
    paid = {"order_no": order_no, "status": "PAID", "pay_no": plant.get("pay_no"),
            "amount": plant.get("amount"), "currency": plant.get("currency")}
    if mode == "PAID":
        return 200, json.dumps(paid)
    if mode == "wrong_order":
        return 200, json.dumps(dict(paid, order_no=order_no + "-other"))
    if mode == "number_amount":
        return 200, json.dumps(dict(paid, amount=899.0))
    if mode == "malformed":
        return 200, '{"order_no": "' + order_no + '", "status": "PAID",'
    if mode == "large":
        return 200, json.dumps(dict(paid, padding="x" * 65536))
    return 500, json.dumps({"error": "internal"})


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that gives up on an answer (a timeout, a body past its
        # cap) resets the connection: expected here, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def make_handler(st):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: the JSON log is the record
            pass

        def reply(self, code, body=""):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n)
            if self.path != "/_plant":
                self.reply(404)
                return
            p = json.loads(body)
            with st.lock:
                st.plants[(p.get("path", "/q"), p["order_no"])] = p
            self.reply(200, "{}")

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/_stats":
                with st.lock:
                    self.reply(200, json.dumps({"queries": st.queries}))
                return
            order_no = (parse_qs(url.query).get("order_no") or [""])[0]
            auth_ok = self.headers.get("Authorization") == "Bearer " + st.token
            with st.lock:
                st.queries += 1
                plant = st.plants.get((url.path, order_no))
                mode = plant.get("mode") if plant else "NOT_FOUND"
                st.log.write(json.dumps({"path": url.path, "order_no": order_no,
                                         "query": url.query, "auth_ok": auth_ok,
                                         "mode": mode, "t": time.time()}) + "\n")
            if not auth_ok:
                self.reply(401, '{"error":"unauthorized"}')
                return
            if mode == "hang":
                st.stop.wait(120)
                return
            code, body = answer_for(plant, order_no)
            self.reply(code, body)

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--token", required=True)
    args = ap.parse_args()
    st = State(args.token, args.log)
    srv = Server(("127.0.0.1", 0), make_handler(st))
    srv.daemon_threads = True

    def stop(*_):
        st.stop.set()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
