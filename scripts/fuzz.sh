#!/usr/bin/env bash
# Run libFuzzer targets, one per core at a time, each for SECONDS, from its seed
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
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# fuzz_one BIN LOG: one target for SECONDS; its line (or its findings) in LOG.
fuzz_one() {
	local bin=$1 out=$2 name seeds work art runs rate
	name=${bin##*/}
	name=${name#fuzz_}
	seeds=$root/fuzz/corpus/$name
	work=$root/build/fuzz/corpus/$name
	art=$root/build/fuzz/artifacts/$name/
	[[ -d $seeds ]] || { echo "fuzz: no seed corpus $seeds" >"$out"; return 1; }
	mkdir -p "$work" "$art"
	if "$bin" -max_total_time="$secs" -print_final_stats=1 -max_len=4096 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$art" "$work" "$seeds" >"$out.log" 2>&1; then
		runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$out.log")
		rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$out.log")
		printf 'fuzz: %-10s %10s runs in %s s, %7s exec/s, corpus %4s files, no finding\n' \
			"$name" "$runs" "$secs" "$rate" "$(find "$work" -type f | wc -l)" >"$out"
	else
		{
			grep -E 'ERROR|SUMMARY|^#|==[0-9]+==' "$out.log" | tail -30
			echo "fuzz: $name FAILED; reproducer in $art (run $bin FILE)"
		} >"$out"
		return 1
	fi
}

# One target per core at a time (each is single-threaded), for SECONDS
# each; the lines come out in the order of the arguments.
rc=0 i=0 pids=()
for bin in "$@"; do
	while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
	i=$((i + 1))
	fuzz_one "$bin" "$logs/$i" &
	pids+=($!)
done
i=0
for pid in "${pids[@]}"; do
	i=$((i + 1))
	if wait "$pid"; then cat "$logs/$i"; else cat "$logs/$i" >&2; rc=1; fi
done
exit "$rc"
