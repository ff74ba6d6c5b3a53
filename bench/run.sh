#!/usr/bin/env bash
# The side-by-side benchmark: in one sitting, the callback transaction run by
# bench/ceiling with no HTTP (a plain 6-statement client, and one CALL of the
# stored procedure), then the real binary under wrk, at each concurrency,
# interleaved and repeated; then token apply and order creation. After every
# run it checks the payment invariants; at the end bench/table.py prints the
# medians and ratios. usage: bench/run.sh BIN CEILING
# Knobs: BENCH_SECONDS (per run, 3), BENCH_ROUNDS (3), BENCH_CONCURRENCY
# ("1 16 64"), BENCH_ORDERS (seeded per unique run, 40000), BENCH_DUPS
# (recorded payments the duplicate storms repeat, 2000), BENCH_THREADS (wrk
# threads, 2), BENCH_LOG_LEVEL (warn), BENCH_BASELINE (another paycallback
# binary, say an older build, run as a fourth form "before" beside the
# others), BENCH_SERVICE_ENV and BENCH_BASELINE_ENV (NAME=value ... for
# either's environment, say the same binary with a switch each way),
# BENCH_INDEXES (1: the index sitting of bench/indexes.sh instead,
# MariaDB's CPU per callback without each secondary index the callback
# maintains; BENCH_INDEX_CONCURRENCY, 16). It uses the test database (paycallback_test, emptied before and
# after) under var/test.lock.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"

bin=$(realpath "$1")
ceiling=$(realpath "$2")
secs=${BENCH_SECONDS:-3}
rounds=${BENCH_ROUNDS:-3}
concs=${BENCH_CONCURRENCY:-1 16 64}
orders=${BENCH_ORDERS:-40000}
dups=${BENCH_DUPS:-2000}
threads=${BENCH_THREADS:-2}
secret=dev-secret
stripe_secret=bench-stripe-secret
work=$VAR/bench
results=$work/results.tsv
hz=$(getconf CLK_TCK)
mkdir -p "$work"
exec 9>"$VAR/test.lock"       # the test database is shared with the integration suites
flock 9

sql() { mariadb --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -u"$DB_USER" -p"$DB_PASSWORD" "$DB_TEST_NAME" -N -e "$1"; }
reset() { sql "TRUNCATE orders; TRUNCATE payment_record; TRUNCATE outbox; TRUNCATE idem_token"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }      # utime + stime
questions() { sql "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
# Context switches of every thread of a process so far, voluntary and not.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }
rss_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# WAIT_PAY orders BENCH-i for the next n numbers, nothing paid: every
# unique run pays orders and pay_nos never used before in the sitting, as
# a gateway's pay_nos are unique forever (a service remembers the pay_nos
# it has seen). Sets first to the first number.
next_first=1000001
seed_unique() {
	first=$next_first
	next_first=$((next_first + $1))
	reset
	sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status)
	     SELECT CONCAT('BENCH-', seq), 'bench', CONCAT('req-', seq), 'SHOE-42', 1, 899.00, 1
	     FROM seq_${first}_to_$((first + $1 - 1))"
}

# Orders BENCH-1 .. BENCH-n paid by BPAY-i, recorded the way production
# records them: each callback sent once through every service form before
# the storm (the first form records it, the others answer it as a repeat),
# so each service has answered every payment the storm repeats, as it has
# answered a bank's first callback before the bank's retries.
seed_paid() {
	reset
	sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status)
	     SELECT CONCAT('BENCH-', seq), 'bench', CONCAT('req-', seq), 'SHOE-42', 1, 899.00, 1
	     FROM seq_1_to_$1"
	python3 "$ROOT/bench/requests.py" callbacks 1 "$1" "$secret" >"$work/first.tsv"
	for f in "${!urls[@]}"; do
		python3 "$ROOT/bench/send.py" "${urls[$f]}" "$work/first.tsv" 16
	done
	[[ $(invariants "$1") == ok* ]] || { echo "bench: recording $1 payments failed" >&2; exit 1; }
}

# The invariants after a callback run: every PAID order has exactly one
# PAID payment and one order.paid event, no event without a PAID order, no
# refund (every callback paid its own order), and a duplicate storm wrote
# nothing (expect_records = the recorded payments before it, or 0).
invariants() {
	local expect=$1 v
	v=$(sql "SELECT (SELECT COUNT(*) FROM orders WHERE status = 2),
	                (SELECT COUNT(*) FROM outbox WHERE event_type = 'order.paid'),
	                (SELECT COUNT(*) FROM payment_record WHERE status = 1),
	                (SELECT COUNT(*) FROM payment_record),
	                (SELECT COUNT(*) FROM outbox x LEFT JOIN orders o ON o.order_no = x.order_no
	                  WHERE o.status IS NULL OR o.status <> 2)")
	awk -v e="$expect" '{ ok = $1 == $2 && $2 == $3 && $3 == $4 && $5 == 0 && (e == 0 || $4 == e)
	       printf "%s:paid=%d,events=%d,records=%d\n", ok ? "ok" : "FAIL", $1, $2, $4 }' <<<"$v"
}

# measure NAME C EXPECT_RECORDS SETUP_QUESTIONS CMD...: runs CMD, which
# prints a RESULT line, and appends one row of figures to $results.
measure() {
	local name=$1 c=$2 expect=$3 setup_q=$4; shift 4
	local m0 s0 q0 m1 s1 q1 x0 x1 line inv
	m0=$(ticks "$mdb_pid") s0=$(ticks "$svc_pid") q0=$(questions) x0=$(switches "$svc_pid")
	line=$("$@" 2>>"$work/errors.log" | grep '^RESULT' || true)
	m1=$(ticks "$mdb_pid") s1=$(ticks "$svc_pid") q1=$(questions) x1=$(switches "$svc_pid")
	inv=$(invariants "$expect")
	[[ -n $line ]] || line="RESULT rps=0 p50_ms=0 p99_ms=0 errors=1 non2xx=0 requests=0 exhausted=0"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$c" "${line#RESULT }" \
		"$(((m1 - m0) * 1000 / hz))" "$(((s1 - s0) * 1000 / hz))" \
		"$((q1 - q0 - 1 - setup_q))" "$inv" "$((x1 - x0))" >>"$results"
	printf '  %-16s c=%-3s %s %s\n' "$name" "$c" "${line#RESULT }" "$inv"
	[[ $inv == ok* ]] || echo "  INVARIANT BROKEN after $name c=$c" >&2
}

ceil() {    # FORM KIND C FIRST COUNT
	measure "$2 $1" "$3" "$([[ $2 == dup ]] && echo "$dups" || echo 0)" "$(($3 * 7))" \
		"$ceiling" -m "$1" -k "$2" -c "$3" -d "$secs" -f "$4" -n "$5" -P "$MYSQL_PORT" \
		-u "$DB_USER" -p "$DB_PASSWORD" -D "$DB_TEST_NAME"
}

web() {     # NAME C EXPECT REQUESTS_FILE PATH_OR_URL...
	local name=$1 c=$2 expect=$3 file=$4 t=$((threads < $2 ? threads : $2)); shift 4
	BENCH_THREADS=$t BENCH_REQUESTS=$file measure "$name" "$c" "$expect" 0 \
		wrk -t"$t" -c"$c" -d"${secs}s" --latency "$@"
}

service_unique() {    # FORM C: FORM is service or before
	seed_unique "$orders"
	python3 "$ROOT/bench/requests.py" callbacks "$first" "$orders" "$secret" >"$work/callbacks.tsv"
	web "unique $1" "$2" 0 "$work/callbacks.tsv" -s "$ROOT/bench/requests.lua" "${urls[$1]}"
}

service_dup() {
	python3 "$ROOT/bench/requests.py" callbacks 1 "$dups" "$secret" >"$work/dups.tsv"
	web "dup $1" "$2" "$dups" "$work/dups.tsv" -s "$ROOT/bench/requests.lua" "${urls[$1]}"
}

# The same recorded payments repeated as a gateway repeats them: Stripe
# events to the service's stripe profile, whose acknowledgement carries no
# order status. FORM is stripe (the service) or stripe-before (the
# baseline).
stripe_dup() {
	local svc=service
	[[ $1 == *-before ]] && svc=before
	python3 "$ROOT/bench/requests.py" stripe 1 "$dups" "$stripe_secret" >"$work/stripe.tsv"
	web "dup $1" "$2" "$dups" "$work/stripe.tsv" -s "$ROOT/bench/requests.lua" "${urls[$svc]}"
}

# start FORM BIN [NAME=value ...]: the service on a free port, against the test database;
# its reconciliation pass runs once at start, not in the middle of a run.
# The bench's one shopper makes thousands of orders: the open-order cap is off.
declare -A urls pids
start() {
	rm -f "$work/port.$1"
	PAYCALLBACK_LISTEN_PORT=0 PAYCALLBACK_MYSQL_DATABASE=$DB_TEST_NAME PAYCALLBACK_REDIS_DB=9 \
	PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT \
	PAYCALLBACK_LOG_LEVEL=${BENCH_LOG_LEVEL:-warn} PAYCALLBACK_RECONCILE_INTERVAL_S=86400 \
	PAYCALLBACK_QUOTA_TOKEN_RATE=0 PAYCALLBACK_QUOTA_ORDER_RATE=0 \
	PAYCALLBACK_ORDERS_MAX_OPEN_PER_USER=0 PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_USER_SKU=0 \
	PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_USER=0 PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT_SKU=0 \
	PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT=0 BENCH_STRIPE_SECRET=$stripe_secret \
		env $3 "$2" --dev -c "$work/paycallback.json" --port-file "$work/port.$1" 2>"$work/server.$1.log" &
	pids[$1]=$!
	for _ in $(seq 100); do [[ -s $work/port.$1 ]] && break; sleep 0.1; done
	[[ -s $work/port.$1 ]] || { echo "bench: $2 did not start:" >&2; tail -3 "$work/server.$1.log" >&2; exit 1; }
	urls[$1]=http://127.0.0.1:$(<"$work/port.$1")
}

# Order creation: each request with its own token (put into Redis first)
# and request_id, all for one well-stocked sku, so every one creates.
order_create() {
	local first=$((round * 1000000)) n=$((orders / 2))
	reset
	sql "INSERT INTO stock (sku, price, num) VALUES ('BENCH-SKU', 899.00, 100000000)
	     ON DUPLICATE KEY UPDATE price = 899.00, num = 100000000"
	python3 "$ROOT/bench/requests.py" redis-tokens "$first" "$n" 600 |
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n 9 --pipe >/dev/null
	python3 "$ROOT/bench/requests.py" orders "$first" "$n" >"$work/orders.tsv"
	BENCH_THREADS=$threads BENCH_REQUESTS=$work/orders.tsv measure "order create" 16 0 0 \
		wrk -t"$threads" -c16 -d"${secs}s" --latency -s "$ROOT/bench/requests.lua" "$url"
	sql "SELECT COUNT(*), 100000000 - (SELECT num FROM stock WHERE sku = 'BENCH-SKU')
	     FROM orders" | awk '{ if ($1 != $2) print "  INVARIANT BROKEN: orders", $1, "stock taken", $2 }' >&2
}

# The shipped configuration, with a Stripe profile for the gateway storms.
python3 - "$ROOT/config/paycallback.json" >"$work/paycallback.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["gateways"] = [{"name": "stripe", "kind": "stripe", "secret_env": "BENCH_STRIPE_SECRET",
                    "tolerance_s": 300}]
json.dump(cfg, sys.stdout, indent=2)
PY
mdb_pid=$(<"$MYSQL_PIDFILE")
rm -f "$results" "$work/errors.log"
if [[ -n ${BENCH_INDEXES:-} ]]; then
	. "$ROOT/bench/indexes.sh"
	index_sitting
	exit 0
fi
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; reset; sql "DELETE FROM stock WHERE sku = '"'BENCH-SKU'"'"' EXIT
start service "$bin" "${BENCH_SERVICE_ENV:-}"
forms=(plain call service)
gw_forms=(stripe)
if [[ -n ${BENCH_BASELINE:-} ]]; then
	start before "$(realpath "$BENCH_BASELINE")" "${BENCH_BASELINE_ENV:-}"
	forms+=(before)
	gw_forms+=(stripe-before)
fi
pid=${pids[service]} url=${urls[service]}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD), $(nproc) cores" \
	"($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(mariadbd --version | awk '{ print $3 }')"
echo "runs of ${secs}s, $rounds rounds, concurrency $concs, service workers=16 mysql.pool_size=16," \
	"log_level=${BENCH_LOG_LEVEL:-warn}"
nforms=${#forms[@]}
for round in $(seq "$rounds"); do
	echo "round $round"
	# Rotate the order each round, so drift in the machine's speed does not
	# always favour the same form.
	order=("${forms[@]:$((round % nforms))}" "${forms[@]:0:$((round % nforms))}")
	for c in $concs; do
		for f in "${order[@]}"; do
			svc_pid=${pids[${f}]:-$pid}
			if [[ $f == service || $f == before ]]; then
				service_unique "$f" "$c"
			else
				seed_unique "$orders"
				ceil "$f" unique "$c" "$first" "$orders"
			fi
		done
	done
	seed_paid "$dups"
	for c in $concs; do
		for f in "${order[@]}" "${gw_forms[@]}"; do
			case $f in
			stripe) svc_pid=$pid ;;
			stripe-before) svc_pid=${pids[before]} ;;
			*) svc_pid=${pids[$f]:-$pid} ;;
			esac
			if [[ $f == service || $f == before ]]; then
				service_dup "$f" "$c"
			elif [[ $f == stripe* ]]; then
				stripe_dup "$f" "$c"
			else
				ceil "$f" dup "$c" 1 "$dups"
			fi
		done
	done
	svc_pid=$pid
	reset
	BENCH_THREADS=$threads measure "token apply" 16 0 0 \
		wrk -t"$threads" -c16 -d"${secs}s" --latency -s "$ROOT/bench/plain.lua" "$url/token/apply"
	order_create
done

# Memory: each service form's peak so far, then a duplicate storm on 256
# connections against it.
declare -A peaks
for f in service before; do
	[[ -n ${pids[$f]:-} ]] && peaks[$f]=$(rss_kib "${pids[$f]}" VmHWM)
done
seed_paid "$dups"
python3 "$ROOT/bench/requests.py" callbacks 1 "$dups" "$secret" >"$work/dups.tsv"
for f in service before; do
	[[ -n ${pids[$f]:-} ]] || continue
	BENCH_THREADS=$threads BENCH_REQUESTS=$work/dups.tsv \
		wrk -t"$threads" -c256 -d"${secs}s" -s "$ROOT/bench/requests.lua" "${urls[$f]}" >"$work/c256.txt" &
	wpid=$!
	sleep "$(awk -v s="$secs" 'BEGIN { print s / 2 }')"
	rss256=$(rss_kib "${pids[$f]}" VmRSS)
	wait "$wpid"
	echo "$f RSS: peak $((peaks[$f] / 1024)) MiB over the runs, $((rss256 / 1024)) MiB during 256 connections" \
		"(peak $(($(rss_kib "${pids[$f]}" VmHWM) / 1024)) MiB); $(grep '^RESULT' "$work/c256.txt" | cut -d' ' -f2-5)"
done
python3 "$ROOT/bench/table.py" "$results"
