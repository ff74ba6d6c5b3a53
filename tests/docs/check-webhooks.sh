#!/usr/bin/env bash
# The receivers of docs/webhooks.md and the README's shop side, run as the
# pages write them: the Node ones (with the standardwebhooks package pinned
# in tests/tools/webhook-verify) and the Python one (standard library only).
# A real paycallback delivers events to all three; each must print every
# event as verified, once, and refuse a forged delivery.
# Needs the private MariaDB and Redis (make services) and the binary
# ($PCB_BIN). usage: check-webhooks.sh     Prints a Check-style summary line.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
bin=${PCB_BIN:-$ROOT/build/paycallback}
db=${PCB_TEST_MYSQL_DB:-$DB_TEST_NAME}
secret='whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sql() { mariadb --protocol=tcp -h127.0.0.1 -P"${PCB_TEST_MYSQL_PORT:-$MYSQL_PORT}" -u"$DB_USER" -p"$DB_PASSWORD" "$db" -N -e "$1"; }

checks=0 failures=0
check() {      # check DESCRIPTION COMMAND...
	local what=$1
	shift
	checks=$((checks + 1))
	if ! "$@"; then
		failures=$((failures + 1))
		echo "tests/docs/check-webhooks.sh:F:$what" >&2
	fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# The code block that follows "<!-- file: NAME -->" in PAGE.
extract() {    # extract NAME [PAGE]
	python3 - "$ROOT/${2:-docs/webhooks.md}" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- file: " + re.escape(sys.argv[2]) + r" -->\n```[a-z]*\n(.*?)```", text, re.S)
sys.exit("no block " + sys.argv[2]) if m is None else print(m.group(1), end="")
PY
}
await() {      # await SECONDS COMMAND...: polls until the command succeeds
	local end=$((SECONDS + $1))
	shift
	until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done
}

"$ROOT/scripts/npm-ci.sh" "$ROOT/tests/tools/webhook-verify"
extract receiver.js >"$tmp/receiver.js"
extract receiver.py >"$tmp/receiver.py"
extract shop-receiver.js README.md >"$tmp/shop-receiver.js"   # the README's shop side
node_port=$(free_port) py_port=$(free_port) readme_port=$(free_port)
NODE_PATH=$ROOT/tests/tools/webhook-verify/node_modules WEBHOOK_SECRET=$secret PORT=$node_port \
	node "$tmp/receiver.js" >"$tmp/node.out" 2>&1 &
pids+=($!)
WEBHOOK_SECRET=$secret PORT=$py_port python3 "$tmp/receiver.py" >"$tmp/py.out" 2>&1 &
pids+=($!)
NODE_PATH=$ROOT/tests/tools/webhook-verify/node_modules WEBHOOK_SECRET=$secret PORT=$readme_port \
	node "$tmp/shop-receiver.js" >"$tmp/readme.out" 2>&1 &
pids+=($!)

sql "TRUNCATE orders; TRUNCATE outbox; TRUNCATE webhook_delivery; DELETE FROM shard_map"
sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status, currency)
     SELECT CONCAT('DOC', seq), 'u', CONCAT('r', seq), 'SHOE-42', 1, 899.00, 2, 'USD' FROM seq_1_to_5"
sql "INSERT INTO outbox (event_type, order_no, payload) SELECT 'order.paid', CONCAT('DOC', seq),
     CONCAT('{\"order_no\":\"DOC', seq, '\",\"pay_no\":\"P', seq, '\",\"gateway\":\"stripe\",\"amount\":\"899.00\"}')
     FROM seq_1_to_5"
cat >"$tmp/config.json" <<JSON
{"webhook": {"poll_ms": 50},
 "webhooks": [{"name": "node", "url": "http://127.0.0.1:$node_port/hook", "secret": "$secret"},
              {"name": "python", "url": "http://127.0.0.1:$py_port/hook", "secret": "$secret"},
              {"name": "readme", "url": "http://127.0.0.1:$readme_port/hook", "secret": "$secret"}]}
JSON
PAYCALLBACK_DEV=1 PAYCALLBACK_LISTEN_PORT=0 PAYCALLBACK_MYSQL_PORT=${PCB_TEST_MYSQL_PORT:-$MYSQL_PORT} \
	PAYCALLBACK_MYSQL_DATABASE=$db PAYCALLBACK_MYSQL_USER=$DB_USER PAYCALLBACK_MYSQL_PASSWORD=$DB_PASSWORD \
	PAYCALLBACK_REDIS_PORT=${PCB_TEST_REDIS_PORT:-$REDIS_PORT} PAYCALLBACK_REDIS_DB=9 \
	"$bin" -c "$tmp/config.json" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
pids+=($!)

all_verified() { [[ $(grep -c '^verified DOC[1-5]:order.paid order.paid DOC[1-5]$' "$tmp/$1.out") == 5 ]]; }
check "the Node receiver verifies every delivery" await 30 all_verified node
check "the Python receiver verifies every delivery" await 30 all_verified py
check "the README's receiver verifies every delivery" await 30 all_verified readme
settled() { [[ $(sql "SELECT COUNT(*) FROM outbox WHERE state = 1") == 5 ]]; }
check "both endpoints acknowledged every event" await 30 settled
forged() {     # forged PORT: a delivery signed with another key is refused
	local ts code
	ts=$(date +%s)
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		-H "webhook-id: DOC9:order.paid" -H "webhook-timestamp: $ts" \
		-H "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" \
		-d '{"id":"DOC9:order.paid","type":"order.paid","order_no":"DOC9"}' "http://127.0.0.1:$1/hook")
	[[ $code == 400 ]]
}
check "the Node receiver refuses a forged delivery" forged "$node_port"
check "the Python receiver refuses a forged delivery" forged "$py_port"
check "the README's receiver refuses a forged delivery" forged "$readme_port"
check "nothing forged was printed" bash -c "! grep -q DOC9 '$tmp/node.out' '$tmp/py.out' '$tmp/readme.out'"
sql "TRUNCATE orders; TRUNCATE outbox; TRUNCATE webhook_delivery; DELETE FROM shard_map"

((failures == 0)) || { echo "--- server log"; tail -20 "$tmp/server.log"; cat "$tmp/node.out" "$tmp/py.out" "$tmp/readme.out"; } >&2
pct=$(((checks - failures) * 100 / checks))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
((failures == 0))
