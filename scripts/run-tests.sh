#!/usr/bin/env bash
# Run Check test binaries one after another and sum their results.
# usage: run-tests.sh BINARY...
# Ends with "N passed, M failed" (checks, summed over all binaries); a binary
# that crashes, exits non-zero or prints no Check summary counts as a failure.
# VALGRIND=1 runs each binary under valgrind (with CK_FORK=no).
# PCB_TEST_TIMEOUT=SECONDS kills a binary that runs longer.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# The service owns the PAYCALLBACK_ prefix and refuses to start on a name
# under it that is not one of its keys, and the server inherits this
# environment: settings of the test tools are therefore PCB_*.
export PCB_ROOT=${PCB_ROOT:-$ROOT}
export PCB_TEST_MYSQL_PORT=${PCB_TEST_MYSQL_PORT:-$MYSQL_PORT}
export PCB_TEST_REDIS_PORT=${PCB_TEST_REDIS_PORT:-$REDIS_PORT}
export PCB_TEST_MYSQL_USER=${PCB_TEST_MYSQL_USER:-$DB_USER}
export PCB_TEST_MYSQL_PASSWORD=${PCB_TEST_MYSQL_PASSWORD:-$DB_PASSWORD}
export PCB_TEST_MYSQL_DB=${PCB_TEST_MYSQL_DB:-$DB_TEST_NAME}
if [[ -n ${PCB_BIN:-} ]]; then
	[[ $PCB_BIN == /* ]] || PCB_BIN=$PWD/$PCB_BIN
	export PCB_BIN
fi
# The summary line is what gets counted, so never let Check be silent.
[[ ${CK_VERBOSITY:-} == verbose ]] || export CK_VERBOSITY=normal

wrap=()
if [[ ${VALGRIND:-0} == 1 ]]; then
	export CK_FORK=no
	wrap=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99)
fi
if [[ -n ${PCB_TEST_TIMEOUT:-} ]]; then
	wrap=(timeout -k 10 "$PCB_TEST_TIMEOUT" "${wrap[@]}")
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT

passed=0 failed=0 bad=()
(($#)) || echo "run-tests: no test binaries given" >&2
for bin in "$@"; do
	[[ $bin == */* ]] || bin=./$bin
	printf '== %s\n' "${bin#./}"
	rc=0
	# The braces keep the shell's own "Segmentation fault" job notice out.
	{ "${wrap[@]}" "$bin" 2>&1 | tee "$out"; } 2>/dev/null || rc=${PIPESTATUS[0]}

	# "100%: Checks: 12, Failures: 0, Errors: 0" - one per suite runner.
	checks=0 fails=0 found=0
	while read -r c f e; do
		checks=$((checks + c)) fails=$((fails + f + e)) found=1
	done < <(sed -nE 's/^[0-9]+%: Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/p' "$out")

	if ((!found)); then
		((rc > 128)) && why="killed by signal $((rc - 128))" || why="exit status $rc"
		echo "${bin#./}: no Check summary ($why)"
		fails=1 checks=1
	elif ((rc != 0 && fails == 0)); then
		case $rc in
		99) why="valgrind reported errors" ;;
		124) why="timed out" ;;
		*) ((rc > 128)) && why="killed by signal $((rc - 128))" || why="exit status $rc" ;;
		esac
		echo "${bin#./}: all checks passed but $why"
		fails=1 checks=$((checks + 1))
	fi
	((fails == 0)) || bad+=("${bin#./}")
	passed=$((passed + checks - fails))
	failed=$((failed + fails))
done

((${#bad[@]} == 0)) || printf 'failed: %s\n' "${bad[*]}"
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
