#!/usr/bin/env bash
# The operator console's browser suite (make test-console): Debian's
# chromium, headless, driven by puppeteer-core (pinned in
# tools/console-test/package-lock.json, installed there with `npm ci` and
# never a browser download) through tests/console/console.test.mjs,
# against the real service on a fresh database of its own, the private
# MariaDB and Redis (make services), tests/tools/webhook_receiver.js as
# the shop, tests/tools/refund_gateway.py as Stripe's refund API (a
# "stripe" profile whose refunds wait for an operator's approval) and
# tests/tools/query_responder.py as its query endpoint for stale orders.
# Screenshots of every view go to build/console/.
# usage: check-console.sh [BINARY]
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bin=${1:-$ROOT/build/paycallback}
dir=$ROOT/tools/console-test
db=paycallback_console
chromium=${CHROMIUM:-$(command -v chromium || true)}
[[ -x $chromium ]] || { echo "check-console: chromium not found (scripts/deps.sh installs it)" >&2; exit 1; }
command -v npm >/dev/null || { echo "check-console: npm not found (scripts/deps.sh installs it)" >&2; exit 1; }

PUPPETEER_SKIP_DOWNLOAD=1 "$ROOT/scripts/npm-ci.sh" "$dir"
"$ROOT/scripts/npm-ci.sh" "$ROOT/tests/tools/webhook-verify"

tmp=$(mktemp -d)
pid= rpid= gpid= qpid=
cleanup() {
	for p in $pid $rpid $gpid $qpid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
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

secret=whsec_$(printf 'console-suite-webhook-secret' | base64)
node "$ROOT/tests/tools/webhook_receiver.js" --port-file "$tmp/wport" --log "$tmp/hooks.jsonl" \
	--secret "$secret" 2>"$tmp/receiver.log" &
rpid=$!
for _ in $(seq 200); do [[ -s $tmp/wport ]] && break; sleep 0.05; done
[[ -s $tmp/wport ]] || { cat "$tmp/receiver.log" >&2; echo "check-console: the receiver did not start" >&2; exit 1; }

python3 "$ROOT/tests/tools/refund_gateway.py" --port-file "$tmp/gport" --log "$tmp/refunds.jsonl" \
	--stripe-key sk_test_console 2>"$tmp/gateway.log" &
gpid=$!
for _ in $(seq 200); do [[ -s $tmp/gport ]] && break; sleep 0.05; done
[[ -s $tmp/gport ]] || { cat "$tmp/gateway.log" >&2; echo "check-console: the refund gateway did not start" >&2; exit 1; }
python3 "$ROOT/tests/tools/query_responder.py" --port-file "$tmp/qport" --log "$tmp/queries.jsonl" \
	--token console-suite-query-token 2>"$tmp/query.log" &
qpid=$!
for _ in $(seq 200); do [[ -s $tmp/qport ]] && break; sleep 0.05; done
[[ -s $tmp/qport ]] || { cat "$tmp/query.log" >&2; echo "check-console: the query endpoint did not start" >&2; exit 1; }
python3 - "$ROOT/config/paycallback.json" "$(cat "$tmp/gport")" "$(cat "$tmp/qport")" >"$tmp/paycallback.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["gateways"] = [{"name": "stripe", "kind": "stripe", "secret_env": "PCB_CONSOLE_STRIPE_SECRET",
                    "refund": "approval", "refund_url": f"http://127.0.0.1:{sys.argv[2]}",
                    "refund_key_env": "PCB_CONSOLE_STRIPE_KEY", "refund_timeout_ms": 2000,
                    "query_url": f"http://127.0.0.1:{sys.argv[3]}/stripe",
                    "query_token_env": "PCB_CONSOLE_QUERY_TOKEN"}]
json.dump(cfg, sys.stdout)
PY

# Two keys: ops may do everything, viewer may only read.
PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT PAYCALLBACK_REDIS_DB=7 \
	PAYCALLBACK_MYSQL_DATABASE=$db PAYCALLBACK_LISTEN_PORT=0 PAYCALLBACK_CONSOLE_DIR="$ROOT/console" \
	PAYCALLBACK_AUTH_KEYS="ops:console-suite-ops-key-0001,viewer:console-suite-viewer-key-01:read" \
	PAYCALLBACK_WEBHOOK_URL="http://127.0.0.1:$(cat "$tmp/wport")/hook" PAYCALLBACK_WEBHOOK_SECRET=$secret \
	PAYCALLBACK_WEBHOOK_POLL_MS=50 PAYCALLBACK_RECONCILE_WAIT_PAY_AGE_S=600 \
	PAYCALLBACK_REFUNDS_POLL_MS=50 PCB_CONSOLE_STRIPE_SECRET=whsec_console_stripe \
	PCB_CONSOLE_STRIPE_KEY=sk_test_console PCB_CONSOLE_QUERY_TOKEN=console-suite-query-token \
	PAYCALLBACK_RECONCILE_INTERVAL_S=3600 \
	"$bin" -c "$tmp/paycallback.json" --dev --port-file "$tmp/port" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 200); do [[ -s $tmp/port ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[[ -s $tmp/port ]] || { cat "$tmp/server.log" >&2; echo "check-console: the service did not start" >&2; exit 1; }

mkdir -p "$ROOT/build/console"
rc=0
PCB_URL="http://127.0.0.1:$(cat "$tmp/port")" PCB_MYSQL_SOCK=$MYSQL_SOCK PCB_DB=$db \
	PCB_OPS_KEY=console-suite-ops-key-0001 PCB_VIEWER_KEY=console-suite-viewer-key-01 \
	PCB_HOOKS_LOG="$tmp/hooks.jsonl" PCB_REFUNDS_LOG="$tmp/refunds.jsonl" \
	PCB_STRIPE_SECRET=whsec_console_stripe PCB_REFUND_GATEWAY="http://127.0.0.1:$(cat "$tmp/gport")" \
	PCB_QUERY_ENDPOINT="http://127.0.0.1:$(cat "$tmp/qport")" PCB_SHOTS="$ROOT/build/console" PCB_CONSOLE_DIR="$ROOT/console" \
	CHROMIUM="$chromium" NODE_PATH="$dir/node_modules" \
	timeout -k 10 300 node "$ROOT/tests/console/console.test.mjs" || rc=$?
if ((rc != 0)); then
	echo "--- service log (last 40 lines)" >&2
	grep -v "msg=\"request\"" "$tmp/server.log" | tail -n 40 >&2
fi
exit "$rc"
