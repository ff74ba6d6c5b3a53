#!/usr/bin/env python3
"""Prints the table of an index sitting (bench/indexes.sh) from its
results file: per variant, the medians over rounds of req/s, MariaDB CPU,
redo log bytes and buffer pool page writes per callback, and the medians of
the per-round differences against the run with every index (the runs of one
round are seconds apart, so the machine's drift mostly cancels out of
them).
usage: indexes.py RESULTS"""
import statistics
import sys
from collections import defaultdict


def main():
    runs = defaultdict(dict)
    for line in open(sys.argv[1]):
        rnd, variant, result, mdb_ms, redo, writes = line.rstrip("\n").split("\t")
        r = dict(kv.split("=", 1) for kv in result.split())
        req = max(int(r.get("requests", 0)), 1)
        runs[variant][int(rnd)] = (float(r.get("rps", 0)), float(mdb_ms) * 1000 / req,
                                   float(redo) / req, float(writes) / req)
    base = runs.get("all", {})
    print()
    print("| without | req/s | × req/s | MariaDB CPU us / callback | Δ CPU us | redo bytes / callback "
          "| Δ redo | page writes / callback | Δ page writes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def delta(by_round, i, fmt):
        d = [v[i] - base[k][i] for k, v in by_round.items() if k in base]
        return fmt % statistics.median(d) if d else ""

    for variant, by_round in runs.items():
        med = [statistics.median(v[i] for v in by_round.values()) for i in range(4)]
        rrps = [v[0] / base[k][0] for k, v in by_round.items() if k in base and base[k][0] > 0]
        name = {"all": "(every index kept)", "none": "(all of them)"}.get(variant, variant.replace("|", "."))
        first = variant == "all"
        print("| %s | %.0f | %s | %.0f | %s | %.0f | %s | %.1f | %s |" % (
            name, med[0], "" if first or not rrps else "%.2f" % statistics.median(rrps),
            med[1], "" if first else delta(by_round, 1, "%+.0f"),
            med[2], "" if first else delta(by_round, 2, "%+.0f"),
            med[3], "" if first else delta(by_round, 3, "%+.1f")))


if __name__ == "__main__":
    main()
