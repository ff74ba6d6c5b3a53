#!/usr/bin/env bash
# A healthy refund's latency alone and behind refunds that hang at another
# gateway profile. The real binary, two Stripe profiles on the test gateway
# (tests/tools/refund_gateway.py): "stuck" and "healthy", each with
# refund_timeout_ms BENCH_TIMEOUT_MS (2000). Each round runs, in turn: "alone" (one refund through
# "healthy"), then "behind-8-hung" (8 refunds through "stuck" whose
# gateway makes them and never answers, and as soon as the first is at the
# gateway, one through "healthy"; the line says how many of the 8 the
# gateway had made by then). The figure is the healthy refund's latency, from
# its row's create_time to its finished_at (SUCCEEDED), as the database
# stamps them (milliseconds), so the client's own polling does not count.
# Knobs: BENCH_ROUNDS (5), BENCH_TIMEOUT_MS (2000), BENCH_POLL_MS (refunds.poll_ms, 50),
# BENCH_INFLIGHT (refunds.inflight; unset: the default, and a binary
# without the key can be measured).
# Uses the test database (paycallback_test, emptied) under var/test.lock.
# usage: bench/refund_lanes.sh BIN
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"

bin=$(realpath "$1")
rounds=${BENCH_ROUNDS:-5}
poll=${BENCH_POLL_MS:-50}
timeout=${BENCH_TIMEOUT_MS:-2000}
inflight=${BENCH_INFLIGHT:+, \"inflight\": $BENCH_INFLIGHT}
key=sk_test_bench
work=$(mktemp -d)
exec 9>"$VAR/test.lock"
flock 9
gpid='' spid=''
cleanup() {
	[[ -n $spid ]] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
	[[ -n $gpid ]] && kill "$gpid" 2>/dev/null && wait "$gpid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
sql() { mariadb --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -u"$DB_USER" -p"$DB_PASSWORD" "$DB_TEST_NAME" -N -e "$1"; }
empty() { sql "TRUNCATE orders; TRUNCATE payment_record; TRUNCATE refund; TRUNCATE outbox; TRUNCATE audit_log; TRUNCATE idem_key"; }

python3 "$ROOT/tests/tools/refund_gateway.py" --port-file "$work/port" --log "$work/log.jsonl" \
	--stripe-key "$key" &
gpid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
gport=$(cat "$work/port")
empty
cat >"$work/config.json" <<JSON
{"listen": {"port": 0}, "log_level": "warn",
 "mysql": {"port": $MYSQL_PORT, "user": "$DB_USER", "password": "$DB_PASSWORD", "database": "$DB_TEST_NAME"},
 "redis": {"port": $REDIS_PORT, "db": 9},
 "refunds": {"poll_ms": $poll$inflight},
 "gateways": [
  {"name": "stuck", "kind": "stripe", "secret_env": "BENCH_STRIPE_SECRET", "refund_url": "http://127.0.0.1:$gport",
   "refund_key_env": "BENCH_STRIPE_KEY", "refund_timeout_ms": $timeout},
  {"name": "healthy", "kind": "stripe", "secret_env": "BENCH_STRIPE_SECRET", "refund_url": "http://127.0.0.1:$gport",
   "refund_key_env": "BENCH_STRIPE_KEY", "refund_timeout_ms": $timeout}]}
JSON
BENCH_STRIPE_SECRET=whsec_bench BENCH_STRIPE_KEY=$key PAYCALLBACK_DEV=1 \
	"$bin" -c "$work/config.json" --port-file "$work/sport" >"$work/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [[ -s $work/sport ]] && break; sleep 0.1; done
[[ -s $work/sport ]] || { cat "$work/server.log" >&2; exit 1; }
sport=$(cat "$work/sport")

# A PAID payment pay_no through gateway, and a refund of it asked for.
refund() {
	local pay_no=$1 gateway=$2
	sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status, currency)
	     VALUES ('O-$pay_no', 'bench', 'r-$pay_no', 'SHOE-42', 1, 899.00, 2, 'CNY');
	     INSERT INTO payment_record (pay_no, order_no, amount, status, outcome, gateway)
	     VALUES ('$pay_no', 'O-$pay_no', 899.00, 1, 1, '$gateway')"
	curl -sf -o /dev/null -X POST -H 'Authorization: Bearer dev-operator-key' \
		-H 'Content-Type: application/json' -H "Idempotency-Key: $pay_no" \
		-d '{"amount": "1.00"}' "http://127.0.0.1:$sport/ops/payments/$pay_no/refunds"
}
plant() {
	curl -sf -o /dev/null -X POST -d "{\"pay_no\": \"$1\", \"mode\": \"$2\"}" "http://127.0.0.1:$gport/_plant"
}
# The healthy refund's latency in ms, once it succeeded.
latency() {
	for _ in $(seq 6000); do
		v=$(sql "SELECT TIMESTAMPDIFF(MICROSECOND, create_time, finished_at) DIV 1000 FROM refund
		         WHERE pay_no = '$1' AND state = 3")
		[[ -n $v ]] && { echo "$v"; return; }
		sleep 0.01
	done
	echo "timeout"
}

# Refunds of round r's hung payments the gateway made (and never answered).
made() { grep "\"pi_hung_${1}_" "$work/log.jsonl" | grep -c '"made"' || true; }

for r in $(seq "$rounds"); do
	refund "pi_alone_$r" healthy
	echo "round $r alone: $(latency "pi_alone_$r") ms"
	start=$SECONDS
	for i in $(seq 8); do
		plant "pi_hung_${r}_$i" hang
		refund "pi_hung_${r}_$i" stuck
	done
	until [[ $(made "$r") -ge 1 ]] || ((SECONDS > start + 5)); do sleep 0.01; done
	made=$(made "$r")
	refund "pi_behind_$r" healthy
	lat=$(latency "pi_behind_$r")
	hung=$(sql "SELECT COUNT(*) FROM refund WHERE pay_no LIKE 'pi_hung_${r}_%' AND state = 2")
	echo "round $r behind-8-hung: $lat ms ($made of the 8 at the gateway, $hung SUBMITTED and unanswered)"
done
# The gateway first: its hung calls end with it, so the service stops at once.
kill "$gpid" 2>/dev/null || true
wait "$gpid" 2>/dev/null || true
gpid=''
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
spid=''
empty
