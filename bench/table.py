#!/usr/bin/env python3
"""Prints the table of a bench/run.sh sitting from its results file.

Each row of the file is one run: round, scenario, concurrency, the RESULT
fields (rps=... p50_ms=...), MariaDB CPU ms, service CPU ms, statements
(Questions delta), invariant check. Figures are medians over the rounds;
the ratios are medians of the per-round ratios (runs of one round are
minutes apart at most, so the machine's drift cancels out of them).
usage: table.py RESULTS"""
import statistics
import sys
from collections import defaultdict


def load(path):
    runs = []
    for line in open(path):
        rnd, name, c, result, mdb_ms, svc_ms, stmts, inv, cs = line.rstrip("\n").split("\t")
        r = dict(kv.split("=", 1) for kv in result.split())
        req = max(int(r["requests"]), 1)
        runs.append({
            "round": int(rnd), "name": name, "c": int(c), "rps": float(r["rps"]),
            "p50": float(r["p50_ms"]), "p99": float(r["p99_ms"]),
            "errors": int(r["errors"]) + int(r["non2xx"]), "exhausted": r.get("exhausted") == "1",
            "mdb": float(mdb_ms) * 1000 / req, "svc": float(svc_ms) * 1000 / req,
            "stmts": float(stmts) / req, "ok": inv.startswith("ok"), "cs": float(cs) / req,
        })
    return runs


def ratio(by_key, name, c, base):
    """Median over rounds of rps(name) / rps(base), same kind and c."""
    kind = name.split()[0]
    vals = []
    for (rnd, n, cc), run in by_key.items():
        if n == name and cc == c:
            b = by_key.get((rnd, kind + " " + base, c))
            if b and b["rps"] > 0:
                vals.append(run["rps"] / b["rps"])
    return "%.2f" % statistics.median(vals) if vals else ""


def main():
    runs = load(sys.argv[1])
    by_key = {(r["round"], r["name"], r["c"]): r for r in runs}
    groups = defaultdict(list)
    for r in runs:
        groups[(r["name"], r["c"])].append(r)
    print()
    print("| scenario | c | req/s | p50 ms | p99 ms | MariaDB CPU ms / 1,000 | service CPU ms / 1,000 "
          "| service context switches / request | statements / request | × plain client "
          "| × one-call | invariants | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    kinds, forms = ["unique", "dup"], ["plain", "call", "service", "before", "stripe",
                                                      "stripe-before"]

    def sort_key(k):
        kind, _, form = k[0].partition(" ")
        return (kinds.index(kind) if kind in kinds else 9, k[1],
                forms.index(form) if form in forms else 9, k[0])

    keys = sorted(groups, key=sort_key)
    for name, c in keys:
        g = groups[(name, c)]
        med = {f: statistics.median(r[f] for r in g) for f in ("rps", "p50", "p99", "mdb", "svc",
                                                              "stmts", "cs")}
        served = name.endswith(("service", "before", "stripe"))
        own = served or name.endswith(("apply", "create"))
        svc = "%.0f" % med["svc"] if own else "-"
        cs = "%.1f" % med["cs"] if own else "-"
        plain = ratio(by_key, name, c, "plain") if served else ""
        call = ratio(by_key, name, c, "call") if served else ""
        ok = sum(r["ok"] for r in g)
        flag = " (exhausted)" if any(r["exhausted"] for r in g) and name.startswith("unique") else ""
        print("| %s%s | %d | %.0f | %.2f | %.2f | %.0f | %s | %s | %.2f | %s | %s | %d/%d ok | %d |" % (
            name, flag, c, med["rps"], med["p50"], med["p99"], med["mdb"], svc, cs, med["stmts"],
            plain, call, ok, len(g), sum(r["errors"] for r in g)))
    p50 = [by_key[(r["round"], "unique service", 1)]["p50"] - r["p50"] for r in runs
           if r["name"] == "unique call" and r["c"] == 1 and (r["round"], "unique service", 1) in by_key]
    if p50:
        print("\nunique callbacks at c=1: service p50 - one-call p50 = %+.2f ms (median of rounds)"
              % statistics.median(p50))


main()
