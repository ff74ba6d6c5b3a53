#!/usr/bin/env bash
# make test-scale: paycallback past one machine, on the deploy/ topologies.
#
#   1. one MariaDB (the private one of scripts/services.sh), 3 instances
#      behind HAProxy: a duplicate-callback storm through a rolling restart
#      and a kill -9 of an instance (zero failed callbacks), then an oversell
#      storm on one sku, then each ambiguous request framing sent raw through
#      HAProxy (tests/scale/framing.py).
#   2. a 3-node Galera cluster, one instance per node behind HAProxy: a storm
#      across the nodes while one node is killed with -9 and rejoins (IST);
#      a storm straight at that node's instance, which may only answer 200
#      or 503 and is not ready until its node is Synced; a loss of quorum;
#      an oversell storm. Row checksums must then be equal on every node.
#   3. two MariaDB shards, 3 instances routing by shard behind HAProxy
#      (tests/scale/shards.sh): orders spread by sku over both shards and a
#      duplicate-callback storm; races that cross shards (one pay_no for
#      orders on both, one checkout through every instance, an oversell by
#      users registered on both); one shard stopped and started again.
# Every invariant is checked from every database. Output: "ok"/"not ok"
# lines, the storm figures, and "N passed, M failed".
# Bounded: PAYCALLBACK_SCALE_TIMEOUT seconds (default 900) for the whole run.
set -euo pipefail
# shellcheck source=deploy/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../deploy/common.sh"
PROC_NAME=test-scale

D=$ROOT/deploy
STORM=$ROOT/tests/scale/storm.py
WORK=$VAR/test-scale
URL=http://127.0.0.1:$HAPROXY_PORT
SECRET=scale-test-secret-0123456789abcdef0123
N=${SCALE_ORDERS:-300}           # orders per callback storm, 2 payments each
REPEAT=${SCALE_REPEAT:-4}        # each callback sent this many times
STOCK=${SCALE_STOCK:-40}
SHOPPERS=${SCALE_SHOPPERS:-150}
TOPOLOGIES=${PAYCALLBACK_SCALE_TOPOLOGIES:-1 2 3}   # which of the three to run, in order
# Instances run as in production: a real secret and an operator key, no
# development switch (they refuse to start without both).
export PAYCALLBACK_CALLBACK_SECRET=$SECRET PAYCALLBACK_REDIS_DB=8 PAYCALLBACK_LOG_LEVEL=warn
# One load generator on 127.0.0.1 stands for every shopper: no per-client quota.
export PAYCALLBACK_QUOTA_TOKEN_RATE=0 PAYCALLBACK_QUOTA_ORDER_RATE=0
export PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT_SKU=0 PAYCALLBACK_ORDERS_MAX_OPEN_UNITS_PER_CLIENT=0
export PAYCALLBACK_AUTH_KEYS=scale:scale-operator-key-0123456789

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }
figure() { printf '  %-58s %s\n' "$1" "$2"; }

# sql PORT QUERY: one value from the service's database on 127.0.0.1:PORT.
sql() {
	mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$1" -u"$DB_USER" -p"$DB_PASSWORD" \
		--batch --skip-column-names "$DB_NAME" -e "$2"
}

mkdir -p "$WORK"
cleanup() {
	"$D/haproxy.sh" stop || true
	"$D/instances.sh" stop || true
	"$D/galera.sh" stop || true
	"$D/shards.sh" stop || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# json FILE EXPR: a field of a storm summary (python expression on s).
json() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$1"; }

# storm_bg NAME ARGS...: a storm in the background, summary in $WORK/NAME.json.
storm_bg() { local name=$1; shift; python3 "$STORM" "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" & }

report() {   # report NAME TITLE
	figure "$2" "$(json "$WORK/$1.json" '"%(requests)d requests in %(seconds)ss (%(rps)s/s, slowest %(max_ms)s ms) status=%(status)s codes=%(codes)s errors=%(errors)s" % s')"
}

# HAProxy's own count of what it absorbed, since it started.
proxy_figures() {
	figure "  haproxy: retries / redispatches so far" "$(echo "show stat" | socat -t 2 stdio "unix-connect:$HAPROXY_DIR/admin.sock" |
		awk -F, '$1 == "instances" && $2 == "BACKEND" { print $16 " / " $17 }')"
}

# only_status NAME CODES...: the storm's replies were all among CODES, with
# no transport error and no pay_no answered two ways.
only_status() {
	local name=$1; shift
	python3 - "$WORK/$name.json" "$@" <<-'PY'
		import json, sys
		s = json.load(open(sys.argv[1])); allowed = set(sys.argv[2:])
		bad = {k: v for k, v in s["status"].items() if k not in allowed}
		sys.exit(1 if bad or s["errors"] or s["flips"] or s["requests"] == 0 else 0)
	PY
}

seed_orders() {   # seed_orders PORT PREFIX: N orders waiting for payment
	sql "$1" "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, status)
		SELECT CONCAT('$2-', seq), 'scale', CONCAT('$2-', seq), 'SHOE-42', 1, 899.00, 1 FROM seq_1_to_$N"
}

seed_stock() {    # seed_stock PORT SKU
	sql "$1" "INSERT INTO stock (sku, price, num) VALUES ('$2', 10.00, $STOCK)"
}

# callback_invariants PORT PREFIX: every order PAID once, two payments each
# (one PAID, one REFUND_REQUIRED), one order.paid event, no pay_no twice.
callback_invariants() {
	local v
	v=$(sql "$1" "SELECT
		(SELECT COUNT(*) FROM orders WHERE order_no LIKE '$2-%' AND status <> 2) +
		(SELECT COUNT(*) FROM (SELECT o.order_no FROM orders o LEFT JOIN payment_record p ON p.order_no = o.order_no
			WHERE o.order_no LIKE '$2-%' GROUP BY o.order_no
			HAVING COUNT(p.pay_no) <> 2 OR SUM(p.outcome = 1) <> 1 OR SUM(p.outcome = 2) <> 1) x) +
		(SELECT COUNT(*) FROM (SELECT o.order_no FROM orders o LEFT JOIN outbox e ON e.order_no = o.order_no
			AND e.event_type = 'order.paid' WHERE o.order_no LIKE '$2-%' GROUP BY o.order_no HAVING COUNT(e.id) <> 1) y) +
		(SELECT COUNT(*) FROM (SELECT pay_no FROM payment_record GROUP BY pay_no HAVING COUNT(*) > 1) z) +
		((SELECT COUNT(*) FROM orders WHERE order_no LIKE '$2-%') <> $N)")
	[[ $v == 0 ]] || { echo "  $2 on port $1: $v invariant violations" >&2; return 1; }
}

# stock_invariants PORT SKU CREATED: never oversold, nothing leaked.
stock_invariants() {
	local v
	v=$(sql "$1" "SELECT CONCAT((SELECT num FROM stock WHERE sku = '$2'), ' ',
		(SELECT COUNT(*) FROM orders WHERE sku = '$2'), ' ', (SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE sku = '$2'))")
	read -r num count qty <<<"$v"
	((num >= 0 && count == $3 && num + qty == STOCK)) ||
		{ echo "  $2 on port $1: num=$num orders=$count quantity=$qty created=$3 stock=$STOCK" >&2; return 1; }
}

oversell_storm() {   # oversell_storm NAME SKU: shoppers race through HAProxy
	python3 "$STORM" orders "$URL" "$1" "$SHOPPERS" --sku "$2" --threads 16 >"$WORK/$1.json"
	report "$1" "oversell $SHOPPERS shoppers, stock $STOCK of $2"
}

created() { json "$WORK/$1.json" 's["status"].get("201", 0)'; }

# proxy_error STATUS CURL_ARGS...: HAProxy's own answer (no instance's
# X-Request-Id) has STATUS and the service's error shape, exactly
# {"code","message"} as application/json.
proxy_error() {
	local want=$1 got
	shift
	got=$(curl -s --max-time 5 -D "$WORK/proxy-error.head" -o "$WORK/proxy-error.json" \
		-w '%{http_code} %{content_type}' "$@") || return 1
	[[ $got == "$want application/json"* ]] || return 1
	! grep -qi '^x-request-id:' "$WORK/proxy-error.head" || return 1
	python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
sys.exit(0 if set(o) == {"code", "message"} and all(isinstance(v, str) and v for v in o.values()) else 1)' \
		"$WORK/proxy-error.json"
}

# The stock is exhausted exactly: as many 201 as units, the rest refused.
sold_out() { [[ $(created "$1") == "$STOCK" ]] && only_status "$1" 201 409 503; }

readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$(instance_port "$1")/readyz"; }
ready_is() { [[ $(readyz "$1") == "$2" ]]; }

# ---------------------------------------------------------------- topology 1
topology_1() {
	echo "# topology 1: 3 instances behind HAProxy on one MariaDB (127.0.0.1:$MYSQL_PORT)"
	sql "$MYSQL_PORT" "DELETE FROM outbox WHERE order_no LIKE 'T1%'; DELETE FROM payment_record WHERE order_no LIKE 'T1%';
		DELETE FROM orders WHERE order_no LIKE 'T1%' OR sku = 'T1-SKU'; DELETE FROM stock WHERE sku = 'T1-SKU'"
	"$D/haproxy.sh" stop
	"$D/instances.sh" stop
	"$D/instances.sh" start 3 single
	"$D/haproxy.sh" start 3
	seed_orders "$MYSQL_PORT" T1
	rm -f "$WORK/stop"
	storm_bg t1-dup callbacks "$URL" T1 "$N" --repeat "$REPEAT" --secret "$SECRET" --stop-file "$WORK/stop" --max-seconds 240
	for i in 1 2 3; do "$D/instances.sh" restart-one "$i"; done
	"$D/instances.sh" kill-one 2
	"$D/instances.sh" start-one 2
	touch "$WORK/stop"
	wait
	report t1-dup "duplicate storm, rolling restart + kill -9 of an instance"
	proxy_figures
	check "topology 1: zero failed callbacks through a rolling restart and a kill -9" only_status t1-dup 200
	check "topology 1: every callback invariant holds" callback_invariants "$MYSQL_PORT" T1
	seed_stock "$MYSQL_PORT" T1-SKU
	oversell_storm t1-sell T1-SKU
	check "topology 1: the sku sells out exactly, replies only 201/409/503" sold_out t1-sell
	check "topology 1: stock never oversold" stock_invariants "$MYSQL_PORT" T1-SKU "$(created t1-sell)"
	check "topology 1: headers past 8 KiB get HAProxy's JSON 431" \
		proxy_error 431 -H "X-Pad: $(printf '%9000s' '' | tr ' ' a)" "$URL/healthz"
	for c in $(python3 "$ROOT/tests/scale/framing.py" 127.0.0.1 "$HAPROXY_PORT" list); do
		check "topology 1: HAProxy refuses or normalizes $c before an instance reads it" \
			python3 "$ROOT/tests/scale/framing.py" 127.0.0.1 "$HAPROXY_PORT" "$c"
	done
	"$D/instances.sh" stop
	check "topology 1: with no instance up HAProxy answers a JSON 503" wait_until 10 proxy_error 503 "$URL/healthz"
	"$D/haproxy.sh" stop
}

# ---------------------------------------------------------------- topology 2
topology_2() {
	echo "# topology 2: 3-node Galera, one instance per node, behind HAProxy"
	"$D/galera.sh" start
	P1=$(galera_sql_port 1) P2=$(galera_sql_port 2) P3=$(galera_sql_port 3)
	sql "$P1" "DELETE FROM outbox WHERE order_no LIKE 'T2%'; DELETE FROM payment_record WHERE order_no LIKE 'T2%';
		DELETE FROM orders WHERE order_no LIKE 'T2%' OR sku = 'T2-SKU'; DELETE FROM stock WHERE sku = 'T2-SKU'"
	"$D/instances.sh" start 3 galera
	"$D/haproxy.sh" start 3
	seed_orders "$P1" T2A
	seed_orders "$P1" T2B

	# A node killed mid-storm and brought back: the proxied storm goes on, the
	# storm aimed at that node's instance sees only 200 and 503.
	rm -f "$WORK/stop"
	storm_bg t2-dup callbacks "$URL" T2A "$N" --repeat "$REPEAT" --secret "$SECRET" --stop-file "$WORK/stop" --max-seconds 300
	storm_bg t2-direct callbacks "http://127.0.0.1:$(instance_port 3)" T2A "$N" --repeat 1 --threads 4 \
		--secret "$SECRET" --stop-file "$WORK/stop" --max-seconds 300
	paying() { (($(sql "$P1" "SELECT COUNT(*) FROM payment_record WHERE order_no LIKE 'T2A-%'") >= N / 4)); }
	wait_until 60 paying || not_ok "galera: the storm got going"
	"$D/galera.sh" kill-node 3
	check "galera: the instance of a killed node turns unready" wait_until 15 ready_is 3 503
	logsize=$(stat -c %s "$GALERA_DIR/node3/error.log")
	"$D/galera.sh" start-node 3 >"$WORK/start-node3.log" 2>&1 &
	starter=$!
	early=0
	# Until the node is Synced, its instance must never say ready.
	while alive "$starter"; do
		r=$(readyz 3)
		s=$(sql_root "$GALERA_DIR/node3/mysqld.sock" -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'" 2>/dev/null | cut -f2) || s=
		[[ $r == 200 && $s != 4 ]] && early=$((early + 1))
		sleep 0.1
	done
	wait "$starter" || { cat "$WORK/start-node3.log" >&2; not_ok "galera: node 3 rejoins"; }
	ist() { tail -c +"$((logsize + 1))" "$GALERA_DIR/node3/error.log" | grep -q "IST received"; }
	check "galera: node 3 caught up by IST, not a full SST" ist
	check "galera: readiness was never 200 before the node was Synced ($early early)" test "$early" = 0
	check "galera: the rejoined node's instance is ready again" wait_until 30 ready_is 3 200
	touch "$WORK/stop"
	wait
	report t2-dup "storm across nodes via HAProxy, kill -9 node 3 + IST"
	report t2-direct "storm at node 3's instance through its kill and rejoin"
	proxy_figures
	check "galera: clients via HAProxy see only 200 or 503" only_status t2-dup 200 503
	check "galera: the killed node's instance answers only 200 or 503, never 500" only_status t2-direct 200 503

	# Loss of quorum: two nodes killed, the third is not primary. Its instance
	# answers 503 (never 500) and is unready; an operator then re-bootstraps.
	"$D/galera.sh" kill-node 2
	"$D/galera.sh" kill-node 3
	check "galera: without quorum the survivor's instance turns unready" wait_until 30 ready_is 1 503
	python3 "$STORM" callbacks "http://127.0.0.1:$(instance_port 1)" T2B 50 --repeat 1 --threads 4 --secret "$SECRET" >"$WORK/t2-quorum.json"
	report t2-quorum "callbacks at the survivor without quorum"
	check "galera: without quorum callbacks get only 503" only_status t2-quorum 503
	"$D/galera.sh" bootstrap-node 1
	"$D/galera.sh" start-node 2
	"$D/galera.sh" start-node 3
	check "galera: every instance is ready once quorum is back" wait_until 30 eval 'ready_is 1 200 && ready_is 2 200 && ready_is 3 200'
	python3 "$STORM" callbacks "$URL" T2B "$N" --repeat "$REPEAT" --secret "$SECRET" >"$WORK/t2-after.json"
	report t2-after "storm via HAProxy after quorum is restored"
	check "galera: after recovery every callback gets 200" only_status t2-after 200

	seed_stock "$P2" T2-SKU
	oversell_storm t2-sell T2-SKU
	check "galera: the sku sells out exactly across nodes" sold_out t2-sell

	# The same rows on every node, checked from every node.
	checksums_equal() {
		local a b c
		a=$(sql "$P1" "CHECKSUM TABLE orders, payment_record, stock, outbox" | tr '\n' ' ')
		b=$(sql "$P2" "CHECKSUM TABLE orders, payment_record, stock, outbox" | tr '\n' ' ')
		c=$(sql "$P3" "CHECKSUM TABLE orders, payment_record, stock, outbox" | tr '\n' ' ')
		[[ $a == "$b" && $b == "$c" ]]
}
check "galera: CHECKSUM TABLE is equal on all three nodes" wait_until 30 checksums_equal
figure "checksums (node 1)" "$(sql "$P1" "CHECKSUM TABLE orders, payment_record, stock, outbox" | awk '{printf "%s=%s ", $1, $2}')"
for p in "$P1" "$P2" "$P3"; do
	check "galera: callback invariants hold on 127.0.0.1:$p" eval "callback_invariants $p T2A && callback_invariants $p T2B"
	check "galera: stock never oversold on 127.0.0.1:$p" stock_invariants "$p" T2-SKU "$(created t2-sell)"
done
"$D/haproxy.sh" stop
"$D/instances.sh" stop
"$D/galera.sh" stop
}

# ---------------------------------------------------------------- topology 3
. "$ROOT/tests/scale/topology3.sh"

for t in $TOPOLOGIES; do
	"topology_$t"
done

figure "duration of the whole run" "${SECONDS}s"
echo "$passed passed, $failed failed"
((failed == 0))
