#!/usr/bin/env python3
"""webhook_receiver.py - a shop webhook for the outbox delivery tests.

Listens on 127.0.0.1 (port 0 = any free port, written to --port-file), checks
each delivery's signature (HMAC-SHA256 of X-Timestamp + "." + body with the
shared secret), dedupes by the Idempotency-Key header the way a shop should,
and appends one JSON line per attempt to --log:
  {"key": ..., "type": ..., "order_no": ..., "sig_ok": true, "dup": false,
   "answer": 200, "t": 1700000000.123}

How it answers is switched at run time with POST /_mode and a body of
  200 | 500 | hang | close
(hang: read the request, then never answer; close: drop the connection
without answering). GET /_stats returns {"attempts": n, "unique": n}.
Python standard library only; stops on SIGTERM.
"""
import argparse
import hashlib
import hmac
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, secret, log_path):
        self.secret = secret.encode()
        self.log = open(log_path, "a", buffering=1, encoding="utf-8")
        self.mode = "200"
        self.seen = set()
        self.attempts = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()


def make_handler(st):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: the JSON log is the record
            pass

        def reply(self, code, body=b""):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/_stats":
                with st.lock:
                    body = json.dumps({"attempts": st.attempts, "unique": len(st.seen)})
                self.reply(200, body.encode())
            else:
                self.reply(404)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n)
            if self.path == "/_mode":
                st.mode = body.decode().strip()
                self.reply(200)
                return
            ts = self.headers.get("X-Timestamp") or ""
            sig = self.headers.get("X-Signature") or ""
            want = hmac.new(st.secret, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
            key = self.headers.get("Idempotency-Key") or ""
            try:
                ev = json.loads(body)
            except ValueError:
                ev = {}
            mode = st.mode
            answer = {"200": 200, "500": 500}.get(mode, 0)
            with st.lock:
                st.attempts += 1
                dup = key in st.seen
                if answer == 200:
                    st.seen.add(key)
                st.log.write(json.dumps({
                    "key": key, "type": ev.get("type"), "order_no": ev.get("order_no"),
                    "sig_ok": hmac.compare_digest(want, sig), "dup": dup,
                    "answer": answer, "t": time.time()}) + "\n")
            if mode == "hang":
                st.stop.wait()
                return
            if mode == "close":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.reply(answer, b'{"ok":true}' if answer == 200 else b'{"ok":false}')

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--secret", required=True)
    args = ap.parse_args()
    st = State(args.secret, args.log)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(st))
    srv.daemon_threads = True

    def stop(*_):
        st.stop.set()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
