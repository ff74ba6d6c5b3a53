#!/usr/bin/env python3
"""Check that the Grafana dashboards and Prometheus rules only query metrics
the service exports.

usage: check-metric-names.py --metrics SCRAPE FILE...
       check-metric-names.py --self-test

SCRAPE is a /metrics response in the Prometheus text format. Each FILE is a
Grafana dashboard (.json: every panel target's expr and every templating
query) or a rules file (.yml/.yaml: every rule's expr). Each query must name
at least one series and no name that the scrape lacks; `up`, which the
scraping Prometheus writes itself, counts as exported. Exit 0 when all hold, 1 otherwise with
one line per finding on stderr. --self-test runs the checker on queries
it must accept and on queries it must reject.
"""
import argparse
import json
import os
import re
import sys
import tempfile

import yaml

# Names the scraping Prometheus adds on its own.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
PREFIXES = ("paycallback_", "process_")

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHERS = re.compile(r"\{[^}]*\}")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
RANGE = re.compile(r"\[[^\]]*\]")
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exported(path):
    """The sample names in a scrape."""
    names = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = SAMPLE.match(line)
            if m:
                names.add(m.group(1))
    return names


def metric_names(expr):
    """The metric-looking names in a PromQL expression: identifiers outside
    strings, label matchers, grouping clauses and ranges, that are not
    followed by '(' (functions) and carry a known prefix or are synthetic."""
    e = STRING.sub('""', expr)
    e = MATCHERS.sub(" ", e)
    e = GROUPING.sub(" ", e)
    e = RANGE.sub(" ", e)
    names = []
    for m in IDENT.finditer(e):
        rest = e[m.end():].lstrip()
        name = m.group(0)
        if rest.startswith("("):
            continue
        if name.startswith(PREFIXES) or name in SYNTHETIC:
            names.append(name)
    return names


def dashboard_queries(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    out = []

    def walk_panels(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((f"panel {p.get('title')!r} target {t.get('refId')}", t.get("expr", "")))
            walk_panels(p.get("panels", []))

    walk_panels(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q or ""
            out.append((f"variable {v.get('name')!r}", q))
    return out


def rule_queries(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    out = []
    for g in doc.get("groups", []):
        for r in g.get("rules", []):
            name = r.get("alert") or r.get("record")
            out.append((f"rule {name!r}", r.get("expr", "")))
    return out


def check(metrics, files):
    """Number of findings (each printed) for files against a scrape."""
    have = exported(metrics)
    if not have:
        print(f"{metrics}: no samples", file=sys.stderr)
        return 1
    bad = 0
    for path in files:
        queries = dashboard_queries(path) if path.endswith(".json") else rule_queries(path)
        if not queries:
            print(f"{path}: no queries found", file=sys.stderr)
            bad += 1
        for where, expr in queries:
            names = metric_names(str(expr))
            if not any(n in have or n in SYNTHETIC for n in names):
                print(f"{path}: {where}: names no exported metric: {expr}", file=sys.stderr)
                bad += 1
            for n in names:
                if n not in have and n not in SYNTHETIC:
                    print(f"{path}: {where}: {n} is not exported", file=sys.stderr)
                    bad += 1
    return bad


SELF_SCRAPE = ('# TYPE paycallback_ready gauge\npaycallback_ready 1\n'
               'paycallback_http_requests_total{route="/healthz",method="GET",code="200"} 3\n')
SELF_CASES = [  # (must pass, extension, content)
    (True, "json", {"panels": [{"title": "t", "targets": [{"refId": "A", "expr":
     'sum by (code) (rate(paycallback_http_requests_total{code=~"5.."}[5m])) / paycallback_ready'}]}]}),
    (True, "yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n"
                  "        expr: paycallback_ready == 0 or up == 0\n"),
    (False, "json", {"panels": [{"title": "t", "targets": [{"refId": "A",
                                                           "expr": "rate(paycallback_readyy[5m])"}]}]}),
    (False, "json", {"panels": [{"title": "t", "targets": [{"refId": "A",
                                                           "expr": "paycallback_ready + process_open_fds"}]}]}),
    (False, "json", {"panels": [{"type": "row", "panels": [{"title": "nested", "targets": [
        {"refId": "A", "expr": "vector(1)"}]}]}]}),
    (False, "json", {"panels": [], "templating": {"list": [
        {"name": "i", "type": "query", "query": {"query": "label_values(paycallback_nope, instance)"}}]}}),
    (False, "yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n"
                   "        expr: paycallback_double_payments_total > 0\n"),
]


def self_test():
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        metrics = os.path.join(d, "metrics")
        with open(metrics, "w", encoding="utf-8") as f:
            f.write(SELF_SCRAPE)
        for i, (ok, ext, content) in enumerate(SELF_CASES):
            path = os.path.join(d, f"case{i}.{ext}")
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(content) if ext == "json" else content)
            with open(os.devnull, "w", encoding="utf-8") as null:
                saved, sys.stderr = sys.stderr, null
                try:
                    bad = check(metrics, [path])
                finally:
                    sys.stderr = saved
            if (bad == 0) != ok:
                print(f"self-test case {i}: expected {'pass' if ok else 'failure'}", file=sys.stderr)
                failed += 1
    if failed:
        return 1
    print(f"check-metric-names: self-test ok ({len(SELF_CASES)} cases)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metrics", help="a /metrics scrape")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.metrics or not a.files:
        ap.error("--metrics SCRAPE and at least one FILE are needed")
    if check(a.metrics, a.files):
        return 1
    print(f"{len(a.files)} file(s): every query names exported metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
