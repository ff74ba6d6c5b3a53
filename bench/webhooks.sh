#!/usr/bin/env bash
# Webhook delivery throughput to one fast endpoint: BENCH_EVENTS outbox
# events (5000) written at once, then the real binary started with one
# endpoint (the test receiver, which verifies every delivery with the
# standardwebhooks npm package) and no rate limit; the figure is events
# delivered per second between the first and the last delivery the
# receiver saw. Knobs: BENCH_EVENTS, BENCH_WORKERS (webhook.workers, 2),
# BENCH_BATCH (webhook.batch, 100), BENCH_INFLIGHT (webhook.inflight,
# requests each relay keeps in flight; unset: the default, 8), BENCH_RATE
# (the endpoint's rate_per_s; unset: none; set, the figure is compared
# with it). Uses the test database (paycallback_test, emptied) under
# var/test.lock. usage: bench/webhooks.sh BIN
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"

bin=$(realpath "$1")
n=${BENCH_EVENTS:-5000}
workers=${BENCH_WORKERS:-2}
batch=${BENCH_BATCH:-100}
inflight=${BENCH_INFLIGHT:+, \"inflight\": $BENCH_INFLIGHT}
rate=${BENCH_RATE:+, \"rate_per_s\": $BENCH_RATE}
secret='whsec_+Waf0cCHwFHfvWZpGczYmsM7rKiUFh0DeB43KHaZ4sg='
work=$(mktemp -d)
exec 9>"$VAR/test.lock"
flock 9
rpid='' spid=''
cleanup() {
	[[ -n $spid ]] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
	[[ -n $rpid ]] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
sql() { mariadb --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -u"$DB_USER" -p"$DB_PASSWORD" "$DB_TEST_NAME" -N -e "$1"; }

"$ROOT/scripts/npm-ci.sh" "$ROOT/tests/tools/webhook-verify"
node "$ROOT/tests/tools/webhook_receiver.js" --port-file "$work/port" --log "$work/log.jsonl" \
	--secret "$secret" &
rpid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
port=$(cat "$work/port")
sql "TRUNCATE orders; TRUNCATE outbox; TRUNCATE webhook_delivery"
sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status, currency)
     SELECT CONCAT('WB', seq), 'bench', CONCAT('r', seq), 'SHOE-42', 1, 899.00, 2, 'CNY' FROM seq_1_to_$n"
sql "INSERT INTO outbox (event_type, order_no, payload)
     SELECT 'order.paid', CONCAT('WB', seq), CONCAT('{\"order_no\":\"WB', seq,
       '\",\"pay_no\":\"P', seq, '\",\"gateway\":\"native\",\"amount\":\"899.00\"}')
     FROM seq_1_to_$n"
cat >"$work/config.json" <<JSON
{"listen": {"port": 0}, "log_level": "warn",
 "mysql": {"port": $MYSQL_PORT, "user": "$DB_USER", "password": "$DB_PASSWORD", "database": "$DB_TEST_NAME"},
 "redis": {"port": $REDIS_PORT, "db": 9},
 "webhook": {"workers": $workers, "batch": $batch$inflight, "poll_ms": 20},
 "webhooks": [{"name": "fast", "url": "http://127.0.0.1:$port/fast", "secret": "$secret"$rate}]}
JSON
PAYCALLBACK_DEV=1 "$bin" -c "$work/config.json" >"$work/server.log" 2>&1 &
spid=$!
for _ in $(seq 1200); do
	kill -0 "$spid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
	[[ $(sql "SELECT COUNT(*) FROM webhook_delivery WHERE state = 1") -ge $n ]] && break
	sleep 0.25
done
python3 - "$work/log.jsonl" "$n" "${BENCH_RATE:-0}" <<'PY'
import json, sys
ts, bad = [], 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["answer"] == 200 and not e["dup"]:
        ts.append(e["t"])
    bad += not e["sig_ok"]
n = int(sys.argv[2])
if len(ts) < n or bad:
    sys.exit(f"webhooks bench: {len(ts)} of {n} delivered, {bad} failed verification")
rate, limit = (n - 1) / (ts[-1] - ts[0]), int(sys.argv[3])
print(f"webhooks: {n} events to one endpoint in {ts[-1] - ts[0]:.2f} s: "
      f"{rate:.0f} events/s (every delivery verified)"
      + (f"; rate limit {limit}/s, {100 * (rate - limit) / limit:+.1f} %" if limit else ""))
PY
sql "TRUNCATE orders; TRUNCATE outbox; TRUNCATE webhook_delivery"
