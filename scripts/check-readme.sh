#!/usr/bin/env bash
# Runs the README's order walkthrough (every ```sh block from "## Walkthrough:
# orders" up to "### When Redis is down") with bash against a live service on
# a fresh database of its own, so the commands cannot rot: a command that
# fails, or a walkthrough that ends without the order FINISHED, fails the
# check. Needs the private MariaDB and Redis (make services) and the binary.
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
	cat "$ROOT/sql/schema.sql" "$ROOT/sql/seed.sql"
} | as_root --batch >/dev/null

# The walkthrough: the sh blocks of its section, in order, as one script.
awk '/^## Walkthrough: orders/ { on = 1 } /^### When Redis is down/ { on = 0 }
     on && /^```sh$/ { code = 1; next } code && /^```$/ { code = 0; next } on && code' \
	"$ROOT/README.md" >"$tmp/walkthrough.sh"
(($(wc -l <"$tmp/walkthrough.sh") > 10)) || { echo "check-readme: walkthrough not found" >&2; exit 1; }

PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT PAYCALLBACK_REDIS_DB=8 \
	PAYCALLBACK_MYSQL_DATABASE=$db PAYCALLBACK_LISTEN_PORT=0 \
	"$bin" -c "$ROOT/config/paycallback.json" --dev --port-file "$tmp/port" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 200); do [[ -s $tmp/port ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[[ -s $tmp/port ]] || { cat "$tmp/server.log" >&2; echo "check-readme: the service did not start" >&2; exit 1; }
port=$(cat "$tmp/port")

# B as the walkthrough sets it, pointed at this instance; every command must succeed.
sed -i "s|^B=http://127.0.0.1:8080$|B=http://127.0.0.1:$port|" "$tmp/walkthrough.sh"
passed=0 failed=0
if (cd "$tmp" && bash -euo pipefail walkthrough.sh >"$tmp/out" 2>&1); then
	passed=$((passed + 1))
else
	failed=$((failed + 1)); cat "$tmp/out" >&2; echo "check-readme: a walkthrough command failed" >&2
fi
# It ends with the order looked up: FINISHED, paid once.
if grep -q '"status":"FINISHED"' "$tmp/out" && grep -q '"result":"PAID"' "$tmp/out"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1)); cat "$tmp/out" >&2; echo "check-readme: the order did not end FINISHED after one payment" >&2
fi
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
