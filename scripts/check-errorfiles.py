#!/usr/bin/env python3
"""Check HAProxy's error answers in deploy/haproxy/errors/ and the proxy
configuration that uses them.

usage: check-errorfiles.py [--self-test]

Every status HAProxy can raise itself has a <code>.http file that is a full
HTTP/1.x response for that status: CRLF line ends, Content-Type
application/json, a Content-Length equal to the body, and a body in the
service's error shape, exactly {"code": UPPER_SNAKE, "message": text}.
Every <code>.json file is such a body on its own (an "http-request return"
payload). deploy/haproxy.cfg.in must use each file, and, rendered with
its placeholders filled in, must pass `haproxy -c`. Exit 0 when all hold,
1 otherwise with one line per finding on stderr. --self-test first runs
the response checker on answers it must accept and on answers it must
reject.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ERRORS = os.path.join(ROOT, "deploy", "haproxy", "errors")
CFG_IN = os.path.join(ROOT, "deploy", "haproxy.cfg.in")

# The error statuses HAProxy 2.6 can generate (its "errorfile" keyword).
HAPROXY_CODES = {400, 401, 403, 404, 405, 407, 408, 410, 413, 425, 429, 500, 501, 502, 503, 504}
CODE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
STATUS_LINE = re.compile(r"^HTTP/1\.[01] ([1-5][0-9][0-9]) [^\r\n]+$")
MAX_BYTES = 4096   # well inside tune.bufsize minus tune.maxrewrite

problems = []


def problem(path, why):
    problems.append(f"check-errorfiles: {os.path.relpath(path, ROOT) if os.sep in path else path}: {why}")


def check_body(path, body):
    """The service's error shape: {"code","message"}, both non-empty."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        problem(path, f"body is not JSON: {e}")
        return
    if not isinstance(obj, dict) or set(obj) != {"code", "message"}:
        problem(path, 'body is not exactly {"code","message"}')
        return
    if not isinstance(obj["code"], str) or not CODE.match(obj["code"]):
        problem(path, f"code {obj['code']!r} is not UPPER_SNAKE")
    if not isinstance(obj["message"], str) or not obj["message"]:
        problem(path, "message is empty or not a string")


def check_response(path, code, data):
    """A whole HTTP response for status code with a JSON error body."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        problem(path, "no CRLF CRLF between headers and body")
        return
    lines = head.decode("latin-1").split("\r\n")
    if any("\n" in line or "\r" in line for line in lines):
        problem(path, "a bare LF or CR in the headers")
    m = STATUS_LINE.match(lines[0])
    if not m or int(m.group(1)) != code:
        problem(path, f"status line {lines[0]!r} is not HTTP/1.x {code}")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            problem(path, f"malformed header line {line!r}")
            continue
        if name.lower() in headers:
            problem(path, f"header {name} twice")
        headers[name.lower()] = value.strip()
    if not headers.get("content-type", "").startswith("application/json"):
        problem(path, "Content-Type is not application/json")
    if headers.get("content-length") != str(len(body)):
        problem(path, f"Content-Length {headers.get('content-length')} but the body has {len(body)} bytes")
    check_body(path, body)


def check_files(cfg):
    codes = set()
    for name in sorted(os.listdir(ERRORS)):
        path = os.path.join(ERRORS, name)
        stem, ext = os.path.splitext(name)
        with open(path, "rb") as f:
            data = f.read()
        if len(data) > MAX_BYTES:
            problem(path, f"{len(data)} bytes, more than {MAX_BYTES}")
        if not stem.isdigit() or ext not in (".http", ".json"):
            problem(path, "not named <status>.http or <status>.json")
            continue
        if f'"@ERRORS_DIR@/{name}"' not in cfg:
            problem(path, "not used by deploy/haproxy.cfg.in")
        if ext == ".http":
            codes.add(int(stem))
            check_response(path, int(stem), data)
            if f'errorfile {stem} "@ERRORS_DIR@/{name}"' not in cfg:
                problem(path, f"not declared as errorfile {stem}")
        else:
            check_body(path, data)
    for code in sorted(HAPROXY_CODES - codes):
        problem(os.path.join(ERRORS, f"{code}.http"), "missing: HAProxy would answer this status in HTML")
    return len(os.listdir(ERRORS))


def check_haproxy(cfg):
    """The rendered configuration is one HAProxy accepts."""
    try:
        subprocess.run(["haproxy", "-v"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        problems.append("check-errorfiles: haproxy not found (scripts/deps.sh installs it)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        text = (cfg.replace("@ADMIN_SOCK@", os.path.join(tmp, "admin.sock"))
                .replace("@PORT@", "18480").replace("@STATS_PORT@", "18481")
                .replace("@ERRORS_DIR@", ERRORS)
                .replace("@SERVERS@", "    server i1 127.0.0.1:18401 check"))
        path = os.path.join(tmp, "haproxy.cfg")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run(["haproxy", "-c", "-f", path], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"check-errorfiles: haproxy -c refuses deploy/haproxy.cfg.in:\n{r.stdout}{r.stderr}")


GOOD = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        b"Content-Length: 41\r\n\r\n{\"code\":\"UNAVAILABLE\",\"message\":\"retry\"}\n")
BAD = {
    "an HTML body": GOOD.replace(b"application/json", b"text/html"),
    "bare LF line ends": GOOD.replace(b"\r\n", b"\n"),
    "another status": GOOD.replace(b" 503 ", b" 502 "),
    "a short Content-Length": GOOD.replace(b"41", b"40"),
    "no Content-Length": GOOD.replace(b"Content-Length: 41\r\n", b""),
    "a lowercase code": GOOD.replace(b"UNAVAILABLE", b"unavailab_e"),
    "a third member": GOOD.replace(b"41", b"49").replace(b"}", b',"x":"y"}'),
    "no message": GOOD.replace(b"41", b"23").replace(b',"message":"retry"', b""),
    "not JSON": GOOD.replace(b"{", b"<"),
}


def self_test():
    """The checker accepts GOOD and finds something in each of BAD."""
    ok = True
    check_response("self-test", 503, GOOD)
    if problems:
        print(f"check-errorfiles: self-test: a good answer was refused: {problems}", file=sys.stderr)
        ok = False
    for why, data in BAD.items():
        problems.clear()
        check_response("self-test", 503, data)
        if not problems:
            print(f"check-errorfiles: self-test: an answer with {why} passed", file=sys.stderr)
            ok = False
    problems.clear()
    return ok


def main():
    if sys.argv[1:] == ["--self-test"] and not self_test():
        return 1
    with open(CFG_IN, encoding="utf-8") as f:
        cfg = f.read()
    n = check_files(cfg)
    check_haproxy(cfg)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"check-errorfiles: {n} error answers in the service's shape, haproxy -c ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
