#!/usr/bin/env bash
# Runs the README's two walkthroughs (every ```sh block from "## Walkthrough: a
# payment callback" up to the next section, and from "## Walkthrough: orders"
# up to "### When Redis is down") with bash against a live service on a fresh
# database of its own, so the commands cannot rot: a command that fails, an
# answer other than the one the README shows, or a database that does not
# hold what it says (one payment and one event per order, a second payment
# marked for refund, the order FINISHED) fails the check. Needs the private
# MariaDB and Redis (make services) and the binary.
# usage: check-readme.sh [BINARY]      Ends with "N passed, M failed".
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bin=${1:-$ROOT/build/paycallback}
db=paycallback_readme
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

# A walkthrough: the sh blocks between the line matching $1 and the one
# matching $2, in order, as one script.
section() {
	awk -v from="$1" -v to="$2" '$0 ~ from { on = 1; next } on && $0 ~ to { on = 0 }
	     on && /^```sh$/ { code = 1; next } code && /^```$/ { code = 0; next } on && code' \
		"$ROOT/README.md"
}
section '^## Walkthrough: a payment callback' '^## ' >"$tmp/payment.sh"
section '^## Walkthrough: orders' '^### When Redis is down' >"$tmp/walkthrough.sh"
for f in payment walkthrough; do
	(($(wc -l <"$tmp/$f.sh") > 10)) || { echo "check-readme: $f walkthrough not found" >&2; exit 1; }
done

PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT PAYCALLBACK_REDIS_DB=8 \
	PAYCALLBACK_MYSQL_DATABASE=$db PAYCALLBACK_LISTEN_PORT=0 \
	"$bin" -c "$ROOT/config/paycallback.json" --dev --port-file "$tmp/port" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 200); do [[ -s $tmp/port ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[[ -s $tmp/port ]] || { cat "$tmp/server.log" >&2; echo "check-readme: the service did not start" >&2; exit 1; }
port=$(cat "$tmp/port")

passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "check-readme: $*" >&2; }
sql() { as_root --batch --skip-column-names "$db" -e "$1"; }

# The payment walkthrough, pointed at this instance and its database.
sed -i -e "s|localhost:8080|127.0.0.1:$port|g" \
	-e "s|-h127.0.0.1 -P3307 -upaycallback -ppaycallback paycallback|-h127.0.0.1 -P$MYSQL_PORT -u$DB_USER -p$DB_PASSWORD $db|g" \
	"$tmp/payment.sh"
if (cd "$tmp" && bash -euo pipefail payment.sh >"$tmp/payment.out" 2>&1); then
	pass
else
	cat "$tmp/payment.out" >&2; fail "a payment walkthrough command failed"
fi
# The three answers the README shows, in order: paid, the same answer again, a refund.
answers=$(grep -o '"pay_no":"PAY-000[12]"[^}]*"result":"[A-Z_]*","duplicate":[a-z]*' "$tmp/payment.out" |
	sed -E 's/.*"pay_no":"([^"]*)".*"result":"([^"]*)","duplicate":([a-z]*)/\1 \2 \3/' | paste -sd, - ||
	true)
if [[ $answers == "PAY-0001 PAID false,PAY-0001 PAID true,PAY-0002 REFUND_REQUIRED false" ]]; then
	pass
else
	cat "$tmp/payment.out" >&2; fail "the payment walkthrough answered \"$answers\""
fi
got=$(sql "SELECT CONCAT_WS(' ', (SELECT status FROM orders WHERE order_no = 'DEMO-1'),
	(SELECT COUNT(*) FROM payment_record WHERE order_no = 'DEMO-1'),
	(SELECT COUNT(*) FROM payment_record WHERE order_no = 'DEMO-1' AND status = 2),
	(SELECT COUNT(*) FROM outbox WHERE order_no = 'DEMO-1' AND event_type = 'order.paid'))" || true)
# PAID (2), two payments of which one to refund, one order.paid event.
if [[ $got == "2 2 1 1" ]]; then
	pass
else
	fail "after the payment walkthrough the database holds \"$got\", not \"2 2 1 1\""
fi

# B as the walkthrough sets it, pointed at this instance; every command must succeed.
sed -i "s|^B=http://127.0.0.1:8080$|B=http://127.0.0.1:$port|" "$tmp/walkthrough.sh"
if (cd "$tmp" && bash -euo pipefail walkthrough.sh >"$tmp/out" 2>&1); then
	pass
else
	cat "$tmp/out" >&2; fail "an order walkthrough command failed"
fi
# It ends with the order looked up: FINISHED, paid once.
if grep -q '"status":"FINISHED"' "$tmp/out" && grep -q '"result":"PAID"' "$tmp/out"; then
	pass
else
	cat "$tmp/out" >&2; fail "the order did not end FINISHED after one payment"
fi
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
