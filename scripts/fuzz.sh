#!/usr/bin/env bash
# Run libFuzzer targets one after another, each for SECONDS, from its seed
# corpus fuzz/corpus/<name> (never written) plus a working corpus under
# build/fuzz/corpus/<name> (kept between runs). A crash, leak, sanitizer
# report or timeout fails the run; the reproducer lands in
# build/fuzz/artifacts/<name>/. Prints executions per second per target.
# usage: fuzz.sh SECONDS FUZZER...
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 SECONDS FUZZER..." >&2; exit 2; }
secs=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

rc=0
for bin in "$@"; do
	name=${bin##*/}
	name=${name#fuzz_}
	seeds=$root/fuzz/corpus/$name
	work=$root/build/fuzz/corpus/$name
	art=$root/build/fuzz/artifacts/$name/
	[[ -d $seeds ]] || { echo "fuzz: no seed corpus $seeds" >&2; rc=1; continue; }
	mkdir -p "$work" "$art"
	if "$bin" -max_total_time="$secs" -print_final_stats=1 -max_len=4096 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$art" "$work" "$seeds" >"$log" 2>&1; then
		runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
		rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
		printf 'fuzz: %-10s %10s runs in %s s, %7s exec/s, corpus %4s files, no finding\n' \
			"$name" "$runs" "$secs" "$rate" "$(find "$work" -type f | wc -l)"
	else
		grep -E 'ERROR|SUMMARY|^#|==[0-9]+==' "$log" | tail -30 >&2
		echo "fuzz: $name FAILED; reproducer in $art (run $bin FILE)" >&2
		rc=1
	fi
done
exit "$rc"
