#!/usr/bin/env bash
# Benchmarks the real binary over HTTP on loopback with wrk, against the
# private MariaDB (database paycallback_test, emptied before and after) and
# Redis. usage: bench/run.sh BIN. Prints one line per scenario; the figures
# in bench/README.md come from this script.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"

bin=$(realpath "$1")
export BENCH_THREADS=${BENCH_THREADS:-2}; threads=$BENCH_THREADS conns=${BENCH_CONNS:-32} secs=${BENCH_SECONDS:-10}
orders=${BENCH_ORDERS:-100000}
work=$VAR/bench
mkdir -p "$work"
exec 9>"$VAR/test.lock"       # the test database is shared with the integration suites
flock 9
sql() { mariadb --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -u"$DB_USER" -p"$DB_PASSWORD" "$DB_TEST_NAME" -N -e "$1"; }
reset() { sql "TRUNCATE orders; TRUNCATE payment_record; TRUNCATE outbox; TRUNCATE idem_token"; }

reset
sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status)
     SELECT CONCAT('BENCH-', seq), 'bench', CONCAT('req-', seq), 'SHOE-42', 1, 899.00, 1
     FROM seq_1_to_$orders"
python3 "$ROOT/bench/sign.py" "$orders" BENCH- BPAY- dev-secret > "$work/callbacks.tsv"

rm -f "$work/port"
PAYCALLBACK_LISTEN_PORT=0 PAYCALLBACK_MYSQL_DATABASE=$DB_TEST_NAME PAYCALLBACK_REDIS_DB=9 \
PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT \
PAYCALLBACK_LOG_LEVEL=${BENCH_LOG_LEVEL:-warn} \
	"$bin" -c "$ROOT/config/paycallback.json" --port-file "$work/port" 2>"$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; reset' EXIT
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
port=$(cat "$work/port")
url=http://127.0.0.1:$port

run() {
	local name=$1; shift
	local line
	line=$(wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$@" | grep '^RESULT')
	printf '%-36s %s\n' "$name" "${line#RESULT }"
}

echo "wrk -t$threads -c$conns -d${secs}s, $(nproc) cores, workers=16, log_level=${BENCH_LOG_LEVEL:-warn}"
run "GET /healthz" -s "$ROOT/bench/plain.lua" "$url/healthz"
BENCH_REQUESTS=$work/callbacks.tsv run "POST /pay/callback first payment" -s "$ROOT/bench/signed.lua" "$url"
paid=$(sql "SELECT COUNT(*) FROM payment_record")
events=$(sql "SELECT COUNT(*) FROM outbox")
echo "  payments recorded: $paid, order.paid events: $events"
sql "SELECT pay_no FROM payment_record" > "$work/paid.txt"      # retry only what was recorded
awk -F'"pay_no":"' 'NR == FNR { paid[$1]; next } { split($2, a, "\""); if (a[1] in paid) print }' \
	"$work/paid.txt" "$work/callbacks.tsv" > "$work/retries.tsv"
BENCH_REQUESTS=$work/retries.tsv run "POST /pay/callback bank retry" -s "$ROOT/bench/signed.lua" "$url"
echo "  payments recorded after retries: $(sql "SELECT COUNT(*) FROM payment_record")"
