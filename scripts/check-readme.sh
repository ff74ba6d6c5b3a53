#!/usr/bin/env bash
# Runs the command blocks of the README and of the docs pages against a live
# service (--dev, as `make run`) on a fresh database of its own, so the
# commands cannot rot. Every ```sh block of each page runs, in order,
# as one bash script per page (set -euo pipefail), unless the line before it
# is `<!-- not run: REASON -->`; the sections of docs/operations.md from
# "Install on Debian 12" to "Remove" are run by `make test-install` instead.
# localhost:8080 / 127.0.0.1:8080 and the mariadb command line of `make run`
# are pointed at this instance and its database, and `paycallback` is the
# built binary. A page fails when a command fails, or when an answer a block
# shows as a comment (`# {...}`, `# HTTP/1.1 ...`: its parts around each
# `...`) is not in what the page printed; the README also when the database
# does not hold what its walkthroughs say.
# Needs the private MariaDB and Redis (make services) and the binary.
# usage: check-readme.sh [BINARY]      Ends with "N passed, M failed".
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bin=$(realpath "${1:-$ROOT/build/paycallback}")
db=paycallback_readme
redis_db=8
# Every page: the README first (docs/operator-api.md goes on from its walkthroughs' state).
pages=(README.md)
for f in "$ROOT"/docs/*.md; do pages+=("docs/${f##*/}"); done
tmp=$(mktemp -d)
pid=
cleanup() { [[ -z $pid ]] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }; rm -rf "$tmp"; }
trap cleanup EXIT
as_root() { mariadb --no-defaults --user=root --socket="$MYSQL_SOCK" --connect-timeout=5 "$@"; }

{
	echo "DROP DATABASE IF EXISTS \`$db\`;"
	echo "CREATE DATABASE \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
	for host in 127.0.0.1 localhost; do
		echo "GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'$host';"
	done
	echo "USE \`$db\`;"
	"$ROOT/scripts/schema-sql.sh"
	cat "$ROOT/sql/seed.sql"
} | as_root --batch >/dev/null
redis-cli -p "$REDIS_PORT" -n "$redis_db" flushdb >/dev/null

PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT PAYCALLBACK_REDIS_DB=$redis_db \
	PAYCALLBACK_MYSQL_DATABASE=$db PAYCALLBACK_LISTEN_PORT=0 \
	"$bin" -c "$ROOT/config/paycallback.json" --dev --port-file "$tmp/port" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 200); do [[ -s $tmp/port ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[[ -s $tmp/port ]] || { cat "$tmp/server.log" >&2; echo "check-readme: the service did not start" >&2; exit 1; }
port=$(cat "$tmp/port")

passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "check-readme: $*" >&2; }
sql() { as_root --batch --skip-column-names "$db" -e "$1"; }

# `paycallback` in the blocks is the built binary, on this instance's servers.
# The blocks run in a directory that shows the tree (scripts/, config/, ...)
# through links, so what they write (order.json) stays out of it.
mkdir -p "$tmp/bin" "$tmp/work"
ln -s "$bin" "$tmp/bin/paycallback"
for e in "$ROOT"/*; do ln -s "$e" "$tmp/work/${e##*/}"; done

# The runnable blocks of page $1 as one script on stdout; "skip REASON" lines
# on fd 3 for the blocks marked not run. A block marked without a reason, or
# a ```sh block left unclosed, fails the extraction.
blocks() {
	awk -v page="$1" '
		/^## / { install = (page == "docs/operations.md" && $0 ~ /^## (Install on Debian 12|Upgrade|Remove)$/) }
		/^<!-- not run: .+ -->$/ { reason = $0; sub(/^<!-- not run: /, "", reason); sub(/ -->$/, "", reason); next }
		/^<!-- not run/ { print page ": a not-run mark without a reason" > "/dev/stderr"; bad = 1 }
		!code && /^```sh$/ {
			code = 1; skip = (reason != "") || install
			if (skip) print "skip " (reason != "" ? reason : "run by make test-install") > "/dev/fd/3"
			reason = ""; next
		}
		code && /^```$/ { code = 0; next }
		code && !skip { print }
		!code && !/^$/ { reason = (/^<!-- not run: /) ? reason : "" }
		END { if (code) { print page ": an unclosed ```sh block" > "/dev/stderr"; bad = 1 } exit bad }
	' "$ROOT/$1"
}

# The answers page $1 shows as comments: each `# {...}` or `# HTTP/...`
# line of its runnable blocks, one per line.
answers() {
	blocks "$1" 3>/dev/null | sed -n -E 's/^[[:space:]]*# ((\{|HTTP\/|order status:).*)$/\1/p'
}

for page in "${pages[@]}"; do
	name=$(basename "$page" .md)
	if ! blocks "$page" >"$tmp/$name.sh" 3>"$tmp/$name.skip"; then
		fail "$page: its blocks cannot be read"; continue
	fi
	skipped=$((skipped + $(wc -l <"$tmp/$name.skip")))
	[[ -s $tmp/$name.sh ]] || continue
	sed -i -e "s#localhost:8080#127.0.0.1:$port#g" -e "s#127\.0\.0\.1:8080#127.0.0.1:$port#g" \
		-e "s#-h127.0.0.1 -P3307 -upaycallback -ppaycallback paycallback#-h127.0.0.1 -P$MYSQL_PORT -u$DB_USER -p$DB_PASSWORD $db#g" \
		"$tmp/$name.sh"
	if (cd "$tmp/work" && PATH="$tmp/bin:$PATH" PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT \
		PAYCALLBACK_REDIS_PORT=$REDIS_PORT \
		HOME="$tmp/work" \
		bash -euo pipefail "$tmp/$name.sh" >"$tmp/$name.out" 2>&1); then
		pass
	else
		cat "$tmp/$name.out" >&2; fail "$page: a command failed"; continue
	fi
	# Every answer shown must be in the output, its parts around "..." in order on one line.
	missing=0
	while IFS= read -r want; do
		re=$(printf '%s' "$want" | sed -E 's/[][\.*^$(){}+?|\/]/\\&/g; s/\\\.\\\.\\\./.*/g')
		grep -Eq -- "$re" "$tmp/$name.out" || { missing=1; echo "  not answered: $want" >&2; }
	done < <(answers "$page")
	if ((missing)); then
		cat "$tmp/$name.out" >&2; fail "$page: an answer it shows was not given"
	else
		pass
	fi
done

# The README's payment walkthrough: paid, the same again, a refund, in order.
got=$(grep -o '"pay_no":"PAY-000[12]"[^}]*"result":"[A-Z_]*","duplicate":[a-z]*' "$tmp/README.out" |
	sed -E 's/.*"pay_no":"([^"]*)".*"result":"([^"]*)","duplicate":([a-z]*)/\1 \2 \3/' | paste -sd, - ||
	true)
want="PAY-0001 PAID false,PAY-0001 PAID true,PAY-0002 REFUND_REQUIRED false"
[[ $got == "$want" ]] && pass || fail "the payment walkthrough answered \"$got\""
# PAID (2), two payments (the refusals wrote nothing), one order.paid event.
got=$(sql "SELECT CONCAT_WS(' ', (SELECT status FROM orders WHERE order_no = 'DEMO-1'),
	(SELECT COUNT(*) FROM payment_record WHERE order_no = 'DEMO-1'),
	(SELECT COUNT(*) FROM outbox WHERE order_no = 'DEMO-1' AND event_type = 'order.paid'))" || true)
[[ $got == "2 2 1" ]] && pass || fail "after the walkthroughs DEMO-1 holds \"$got\", not \"2 2 1\""
# The order walkthrough ends with the order FINISHED, paid once.
if grep -q '"status":"FINISHED"' "$tmp/README.out" && grep -q '"result":"PAID"' "$tmp/README.out"; then
	pass
else
	fail "the order did not end FINISHED after one payment"
fi
# The operator API settled the double charge once, with its audit row.
got=$(sql "SELECT CONCAT_WS(' ', (SELECT status FROM payment_record WHERE pay_no = 'PAY-0002'),
	(SELECT COUNT(*) FROM audit_log WHERE action = 'refund.settle' AND subject = 'PAY-0002'))" || true)
[[ $got == "3 1" ]] && pass || fail "PAY-0002 after the operator API is \"$got\", not settled once (\"3 1\")"
printf '%d passed, %d failed (%d blocks not run, each marked with its reason)\n' "$passed" "$failed" "$skipped"
((failed == 0))
