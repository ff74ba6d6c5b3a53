#!/usr/bin/env bash
# Run Check test binaries one after another and sum their results.
# usage: run-tests.sh BINARY...
# Ends with "N passed, M failed" (checks, summed over all binaries); a binary
# that crashes, exits non-zero or prints no Check summary counts as a failure.
# VALGRIND=1 runs each binary under valgrind (with CK_FORK=no).
# PAYCALLBACK_TEST_TIMEOUT=SECONDS kills a binary that runs longer.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

export PAYCALLBACK_ROOT=${PAYCALLBACK_ROOT:-$ROOT}
export PAYCALLBACK_TEST_MYSQL_PORT=${PAYCALLBACK_TEST_MYSQL_PORT:-$MYSQL_PORT}
export PAYCALLBACK_TEST_REDIS_PORT=${PAYCALLBACK_TEST_REDIS_PORT:-$REDIS_PORT}
export PAYCALLBACK_TEST_MYSQL_USER=${PAYCALLBACK_TEST_MYSQL_USER:-$DB_USER}
export PAYCALLBACK_TEST_MYSQL_PASSWORD=${PAYCALLBACK_TEST_MYSQL_PASSWORD:-$DB_PASSWORD}
export PAYCALLBACK_TEST_MYSQL_DB=${PAYCALLBACK_TEST_MYSQL_DB:-$DB_TEST_NAME}
if [[ -n ${PAYCALLBACK_BIN:-} ]]; then
	[[ $PAYCALLBACK_BIN == /* ]] || PAYCALLBACK_BIN=$PWD/$PAYCALLBACK_BIN
	export PAYCALLBACK_BIN
fi
# The summary line is what gets counted, so never let Check be silent.
[[ ${CK_VERBOSITY:-} == verbose ]] || export CK_VERBOSITY=normal

wrap=()
if [[ ${VALGRIND:-0} == 1 ]]; then
	export CK_FORK=no
	wrap=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99)
fi
if [[ -n ${PAYCALLBACK_TEST_TIMEOUT:-} ]]; then
	wrap=(timeout -k 10 "$PAYCALLBACK_TEST_TIMEOUT" "${wrap[@]}")
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
