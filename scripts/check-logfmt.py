#!/usr/bin/env python3
"""Read every line the service logged during the integration suites with a
strict logfmt reader.

usage: check-logfmt.py [DIR]     (default: var/test-logs under the repo)

Each file DIR/*.log holds a suite's server stderr. A line is one of:
  - a harness marker ("=== harness: ..."),
  - a start-up message of the binary ("paycallback: ..."), written before
    logging is set up,
  - a log line: key=value pairs separated by one space, starting with ts,
    level and msg; keys are [A-Za-z_][A-Za-z0-9_.]*, each once per line;
    a value is bare (no space, '=', quote, backslash or control character)
    or double-quoted with only \\" \\\\ \\n \\r \\t escapes.
  - a JSON line (log_format json): one JSON object whose members are the
    pairs of such a log line, in the same order, each a string or an
    integer, ts, level and msg first.
Anything else fails. The output ends with a Check-style summary, so
scripts/run-tests.sh counts the result like a test binary's.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
BARE = re.compile(r'[^\s="\\\x00-\x1f\x7f]+')
LEVELS = {"debug", "info", "warn", "error"}
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def parse(line):
    """The (key, value) pairs of a logfmt line; raises ValueError."""
    pairs, i, n = [], 0, len(line)
    while i < n:
        m = KEY.match(line, i)
        if not m:
            raise ValueError(f"no key at column {i}")
        key, i = m.group(0), m.end()
        if i >= n or line[i] != "=":
            raise ValueError(f"key {key} has no '='")
        i += 1
        if i < n and line[i] == '"':
            i += 1
            out = []
            while True:
                if i >= n:
                    raise ValueError(f"value of {key} has no closing quote")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\":
                    if i + 1 >= n or line[i + 1] not in '"\\nrt':
                        raise ValueError(f"bad escape in the value of {key}")
                    out.append({"n": "\n", "r": "\r", "t": "\t"}.get(line[i + 1], line[i + 1]))
                    i += 2
                    continue
                if ord(c) < 0x20 or ord(c) == 0x7f:
                    raise ValueError(f"control character in the value of {key}")
                out.append(c)
                i += 1
            value = "".join(out)
        else:
            m = BARE.match(line, i)
            if not m:
                raise ValueError(f"empty or bad bare value for {key}")
            value, i = m.group(0), m.end()
        pairs.append((key, value))
        if i < n:
            if line[i] != " " or i + 1 >= n:
                raise ValueError(f"expected one space after {key}")
            i += 1
    return pairs


def parse_json(line):
    """The (key, value) pairs of a JSON log line; raises ValueError."""
    pairs = json.loads(line, object_pairs_hook=lambda kv: kv)
    if not isinstance(pairs, list):
        raise ValueError("not a JSON object")
    for k, v in pairs:
        if not KEY.fullmatch(k):
            raise ValueError(f"bad key {k!r}")
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise ValueError(f"{k} is neither a string nor an integer")
    return [(k, str(v)) for k, v in pairs]


def check_line(line):
    """None, or why the line is not a valid log line."""
    if line.startswith("=== harness:") or line.startswith("paycallback: "):
        return None
    try:
        pairs = parse_json(line) if line.startswith("{") else parse(line)
    except ValueError as e:
        return str(e)
    keys = [k for k, _ in pairs]
    if keys[:3] != ["ts", "level", "msg"]:
        return "does not start with ts, level, msg"
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        return f"key repeated: {', '.join(sorted(dup))}"
    d = dict(pairs)
    if not TS.fullmatch(d["ts"]):
        return "ts is not UTC with milliseconds"
    if d["level"] not in LEVELS:
        return f"unknown level {d['level']}"
    return None


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "var", "test-logs")
    files = sorted(glob.glob(os.path.join(d, "*.log")))
    lines = bad = 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                line = line.rstrip("\n")
                lines += 1
                why = check_line(line)
                if why:
                    bad += 1
                    if bad <= 20:
                        print(f"{path}:{no}: {why}: {line[:300]}", file=sys.stderr)
    if not files or lines == 0:
        print(f"check-logfmt: no log lines under {d}", file=sys.stderr)
        bad = max(bad, 1)
    print(f"check-logfmt: {lines} lines in {len(files)} files, {bad} not logfmt")
    print(f"{100 if bad == 0 else 0}%: Checks: 1, Failures: {1 if bad else 0}, Errors: 0")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
