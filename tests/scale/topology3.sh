# shellcheck shell=bash
# Topology 3 of make test-scale, sourced by run.sh (whose helpers it uses):
# two plain MariaDB shards (deploy/shards.sh), 3 instances routing by shard
# (PAYCALLBACK_MYSQL_SHARDS) behind HAProxy. Every scenario ends with
# shard_check.py, which reads both shards' databases (docs/sharding.md says
# what each check stands for).
#
#   a. orders created through HAProxy over skus of both shards, then a
#      duplicate-callback storm on them: one PAID payment per order.
#   b. races that cross shards: one pay_no sent at once for an order on each
#      shard (one 200, one 409 per round); one checkout submitted at once
#      through every instance (one order); an oversell of one sku by users
#      whose checkout registry rows live on both shards.
#   c. shard 2 stopped: what needs only shard 1 is served, what needs shard 2
#      gets 503 UNAVAILABLE (never 500, never a timeout), every instance stays
#      ready with "mysql":"partial" (callbacks, creates, cancels); shard 2
#      started: the same requests again are all served and the invariants are
#      exact, stock of the canceled orders returned.
#   d. shard 2 killed -9 in the middle of a duplicate storm, then restarted
#      (InnoDB recovery): only 200 or 503 meanwhile, and the bank's replay
#      afterwards makes every invariant exact.
#   e. shard 2 frozen with SIGSTOP for T3_FREEZE s (a hung host: the kernel
#      accepts connections, nothing answers) under a callback storm across
#      both shards, sent by two clients: T3_FREEZE_HEALTHY threads send the
#      callbacks that need only shard 1, T3_FREEZE_DOWN threads (more than
#      the instances' caps on shard 2 together) those that need shard 2, so
#      a request blocked on the frozen shard holds a client thread of its
#      own kind only and the rate measured is the service's, not the
#      client's; the callbacks that need only shard 1 keep at least 80 %
#      of their rate before the freeze (the medians of their per-second
#      rates, so that neither the storm's first seconds nor one busy second
#      of the machine decides), every instance stays ready for shard 1,
#      nothing is answered 500; thawed, the bank's replay makes every
#      invariant exact.
#
# Bounded counts (SCALE_SHARD_* below) keep it to about two minutes.

T3_ORDERS=${SCALE_SHARD_ORDERS:-300}    # a, d: orders, each paid twice, every callback sent again
T3_ROUNDS=${SCALE_SHARD_ROUNDS:-100}    # b: pay_no races, and checkout races
T3_COPIES=${SCALE_SHARD_COPIES:-6}      # b: submissions of one checkout at once
T3_DOWN=${SCALE_SHARD_DOWN:-200}        # c: callbacks, and creates, while shard 2 is down
T3_FREEZE=${SCALE_SHARD_FREEZE:-15}     # e: seconds shard 2 stays frozen
T3_FREEZE_HEALTHY=16                    # e: client threads sending callbacks that need only shard 1
T3_FREEZE_DOWN=48                       # e: client threads sending those that need shard 2 (> 3 x 12, the caps)
T3_WARMUP=3                             # e: seconds of storm before the rate is measured
T3_BEFORE=8                             # e: seconds of storm measured before the freeze
T3_INITIAL=100000                       # stock of the skus that never run out
T3_SKUS=(T3-SKU-1 T3-SKU-2 T3-SKU-3 T3-SKU-4)   # placed on shards 1, 2, 1, 2
T3_SELL=T3-SELL

place() { python3 "$STORM" place --nshards "$SHARDS" "$@"; }

# t3_sql SHARD QUERY: one shard's database.
t3_sql() { sql "$(shard_sql_port "$1")" "$2"; }

t3_clean() {
	local n
	for ((n = 1; n <= SHARDS; n++)); do
		t3_sql "$n" "DELETE FROM outbox WHERE order_no IN (SELECT order_no FROM orders WHERE user_id LIKE 'T3%');
			DELETE FROM payment_record WHERE pay_no LIKE 'T3%'; DELETE FROM orders WHERE user_id LIKE 'T3%';
			DELETE FROM pay_no_registry WHERE pay_no LIKE 'T3%'; DELETE FROM checkout_registry WHERE user_id LIKE 'T3%';
			DELETE FROM stock WHERE sku LIKE 'T3%'"
	done
}

# t3_seed SKU NUM: the sku's stock row, on the shard its name is placed on.
T3_STOCK=()
t3_seed() {
	t3_sql "$(place "$1")" "INSERT INTO stock (sku, price, num) VALUES ('$1', 10.00, $2)"
	T3_STOCK+=(--stock "$1=$2")
}

# t3_invariants ARGS...: shard_check.py over both shards, with every stock
# row seeded so far; its summary line is printed as a figure.
t3_invariants() {
	local out n args=()
	for ((n = 1; n <= SHARDS; n++)); do args+=(--shard "$n=$(shard_sql_port "$n")"); done
	out=$(DB_USER=$DB_USER DB_PASSWORD=$DB_PASSWORD DB_NAME=$DB_NAME \
		python3 "$ROOT/tests/scale/shard_check.py" "${args[@]}" --scope T3 "${T3_STOCK[@]}" "$@") || {
		echo "  $out" >&2
		return 1
	}
	figure "  invariants" "$out"
}

# lines FILE: how many orders a create storm wrote.
lines() { wc -l <"$1" | tr -d ' '; }

# on_both FILE: FILE's orders are on shard 1 and on shard 2.
on_both() { grep -q '"order_no": "S01-' "$1" && grep -q '"order_no": "S02-' "$1"; }

# made NAME FILE COUNT: the create storm NAME answered COUNT orders, only
# 200/201 (and BUSY, sent again), no transport error.
made() { [[ $(lines "$2") == "$3" ]] && only_status "$1" 200 201 503; }

# split_only NAME PART KEYS...: of the storm's replies that need the stopped
# shard (PART needs) or not (free), every one is among KEYS ("201", "503
# UNAVAILABLE"), and there was at least one.
split_only() {
	python3 - "$WORK/$1.json" "$2" "${@:3}" <<-'PY'
		import json, sys
		s = json.load(open(sys.argv[1])); part = s["split"][sys.argv[2]]; allowed = set(sys.argv[3:])
		sys.exit(1 if not part or set(part) - allowed or s["errors"] else 0)
	PY
}

rounds_all() { [[ $(json "$WORK/$1.json" 's["rounds"].get("'"$2"'", 0)') == "$3" ]]; }

# readyz_body N [QUERY]: status and body of instance N's /readyz.
readyz_body() { curl -s -w ' %{http_code}' --max-time 3 "http://127.0.0.1:$(instance_port "$1")/readyz${2:-}"; }
t3_ready_all() {   # t3_ready_all MYSQL: every instance 200 with "mysql":MYSQL
	local i
	for i in 1 2 3; do
		[[ $(readyz_body "$i") == *"\"mysql\":\"$1\""*" 200" ]] || return 1
	done
}
t3_shard_unready_all() {   # t3_shard_unready_all N: /readyz?shard=N is 503 everywhere
	local i
	for i in 1 2 3; do
		[[ $(readyz_body "$i" "?shard=$1") == *" 503" ]] || return 1
	done
}

# unavailable_counted N: the instances counted 503s because of shard N.
unavailable_counted() {
	local i total=0 v
	for i in 1 2 3; do
		v=$(curl -s --max-time 3 -H "Authorization: Bearer ${PAYCALLBACK_AUTH_KEYS#*:}" \
			"http://127.0.0.1:$(instance_port "$i")/metrics" |
			awk -v m="paycallback_shard_unavailable_total{shard=\"$1\"}" '$1 == m { print $2 }')
		total=$((total + ${v:-0}))
	done
	figure "  503s counted for shard $1 by the instances" "$total"
	((total > 0))
}

topology_3() {
	local sku home1=() home2=() s instances i T3_DONE
	echo "# topology 3: 2 MariaDB shards (127.0.0.1:$(shard_sql_port 1), $(shard_sql_port 2)), 3 sharded instances behind HAProxy"
	"$D/shards.sh" start
	t3_clean
	for sku in "${T3_SKUS[@]}"; do
		t3_seed "$sku" "$T3_INITIAL"
		if [[ $(place "$sku") == 1 ]]; then home1+=("$sku"); else home2+=("$sku"); fi
	done
	((${#home1[@]} && ${#home2[@]})) || die "the skus of topology 3 must be placed on both shards"
	"$D/instances.sh" start 3 shards
	"$D/haproxy.sh" start 3
	instances=$(for i in 1 2 3; do printf 'http://127.0.0.1:%s,' "$(instance_port "$i")"; done)
	instances=${instances%,}
	s=$(IFS=,; echo "${T3_SKUS[*]}")

	# a. Orders spread by sku over both shards, then the bank's duplicates.
	python3 "$STORM" create "$URL" T3A "$T3_ORDERS" --skus "$s" --out "$WORK/t3a.orders" >"$WORK/t3-create.json"
	report t3-create "a: $T3_ORDERS orders created via HAProxy over ${#T3_SKUS[@]} skus"
	check "shards: every order created, only 201 (or BUSY, sent again)" made t3-create "$WORK/t3a.orders" "$T3_ORDERS"
	check "shards: both shards got orders" on_both "$WORK/t3a.orders"
	figure "  orders on shard 1 / shard 2" "$(grep -c '"S01-' "$WORK/t3a.orders") / $(grep -c '"S02-' "$WORK/t3a.orders")"
	python3 "$STORM" callbacks "$URL" T3A 0 --orders "$WORK/t3a.orders" --repeat "$REPEAT" --secret "$SECRET" >"$WORK/t3-dup.json"
	report t3-dup "a: duplicate storm, 2 pay_nos x $REPEAT per order, 3 instances"
	check "shards: the duplicate storm gets only 200, one answer per pay_no" only_status t3-dup 200
	check "shards: a: invariants on both shards, one PAID payment per order" t3_invariants --paid "$WORK/t3a.orders=2"

	# b. Races whose two sides live on different shards.
	python3 "$STORM" create "$URL" T3R $((2 * T3_ROUNDS)) --skus "${home1[0]},${home2[0]}" --out "$WORK/t3r.orders" >"$WORK/t3-create-r.json"
	check "shards: the race's orders are created on both shards" made t3-create-r "$WORK/t3r.orders" $((2 * T3_ROUNDS))
	python3 "$STORM" paynorace "$instances" T3R-PAY "$T3_ROUNDS" --orders "$WORK/t3r.orders" --secret "$SECRET" \
		--threads 4 >"$WORK/t3-paynorace.json"
	report t3-paynorace "b: one pay_no for an order on each shard, $T3_ROUNDS rounds"
	figure "  rounds" "$(json "$WORK/t3-paynorace.json" 's["rounds"]')"
	check "shards: one pay_no on two shards: one 200 and one 409 every round" rounds_all t3-paynorace 200+409 "$T3_ROUNDS"
	python3 "$STORM" checkout "$instances" T3C "$T3_ROUNDS" --copies "$T3_COPIES" --skus "$s" --threads 4 >"$WORK/t3-checkout.json"
	report t3-checkout "b: one checkout x $T3_COPIES at once through 3 instances, $T3_ROUNDS rounds"
	check "shards: one checkout raced through every instance makes one order" rounds_all t3-checkout one_order "$T3_ROUNDS"
	t3_seed "$T3_SELL" "$STOCK"
	python3 "$STORM" orders "$URL" T3S "$SHOPPERS" --sku "$T3_SELL" --threads 16 >"$WORK/t3-sell.json"
	report t3-sell "b: oversell, $SHOPPERS shoppers for $STOCK units of one sku"
	figure "  shoppers registered on shard 1 / shard 2" "$(place $(seq -f "T3S-%g" "$SHOPPERS") | tr ' ' '\n' | sort | uniq -c | awk '{printf "%s ", $1}')"
	check "shards: the sku sells out exactly, replies only 201/409/503" sold_out t3-sell
	check "shards: b: invariants on both shards after the races" t3_invariants --paid "$WORK/t3a.orders=2"

	# c. Shard 2 stopped, then started again.
	python3 "$STORM" create "$URL" T3D "$T3_DOWN" --skus "$s" --out "$WORK/t3d.orders" >"$WORK/t3-create-d.json"
	check "shards: the orders to pay during the outage are created" made t3-create-d "$WORK/t3d.orders" "$T3_DOWN"
	python3 "$STORM" create "$URL" T3X "$T3_DOWN" --skus "$s" --out "$WORK/t3x.orders" >"$WORK/t3-create-x.json"
	check "shards: the orders to cancel during the outage are created" made t3-create-x "$WORK/t3x.orders" "$T3_DOWN"
	"$D/shards.sh" stop-shard 2
	check "shards: shard 2 down: every instance stays ready, \"mysql\":\"partial\"" wait_until 15 t3_ready_all partial
	check "shards: shard 2 down: /readyz?shard=2 is 503 on every instance" t3_shard_unready_all 2
	python3 "$STORM" callbacks "$URL" T3D 0 --orders "$WORK/t3d.orders" --legs a --repeat 1 --secret "$SECRET" \
		--down 2 --timeout 10 >"$WORK/t3-down-pay.json"
	report t3-down-pay "c: callbacks with shard 2 down"
	figure "  split (needs shard 2 / not)" "$(json "$WORK/t3-down-pay.json" 's["split"]')"
	check "shards: shard 2 down: callbacks needing only shard 1 get 200" split_only t3-down-pay free 200
	check "shards: shard 2 down: callbacks needing shard 2 get 503 UNAVAILABLE" split_only t3-down-pay needs "503 UNAVAILABLE"
	python3 "$STORM" create "$URL" T3E "$T3_DOWN" --skus "$s" --out "$WORK/t3e.orders" --down 2 --timeout 10 >"$WORK/t3-down-create.json"
	report t3-down-create "c: creates with shard 2 down"
	figure "  split (needs shard 2 / not)" "$(json "$WORK/t3-down-create.json" 's["split"]')"
	check "shards: shard 2 down: creates needing only shard 1 get 201" split_only t3-down-create free 201 "503 BUSY"
	check "shards: shard 2 down: creates needing shard 2 get 503 UNAVAILABLE" split_only t3-down-create needs "503 UNAVAILABLE" "503 BUSY"
	python3 "$STORM" cancel "$URL" T3X 0 --orders "$WORK/t3x.orders" --repeat 2 --key "${PAYCALLBACK_AUTH_KEYS#*:}" \
		--down 2 --timeout 10 >"$WORK/t3-down-cancel.json"
	report t3-down-cancel "c: cancels (each sent twice) with shard 2 down"
	figure "  split (needs shard 2 / not)" "$(json "$WORK/t3-down-cancel.json" 's["split"]')"
	check "shards: shard 2 down: cancels of shard 1's orders get 200" split_only t3-down-cancel free 200
	check "shards: shard 2 down: cancels of shard 2's orders get 503 UNAVAILABLE" split_only t3-down-cancel needs "503 UNAVAILABLE"
	check "shards: shard 2 down: the 503s are counted per shard" unavailable_counted 2
	"$D/shards.sh" start-shard 2
	check "shards: shard 2 back: every instance is ready with \"mysql\":\"up\"" wait_until 15 t3_ready_all up
	python3 "$STORM" callbacks "$URL" T3D 0 --orders "$WORK/t3d.orders" --legs a --repeat 1 --secret "$SECRET" \
		--timeout 10 >"$WORK/t3-up-pay.json"
	report t3-up-pay "c: the same callbacks again, shard 2 back"
	check "shards: shard 2 back: every callback gets 200" only_status t3-up-pay 200
	python3 "$STORM" create "$URL" T3E "$T3_DOWN" --skus "$s" --out "$WORK/t3e.orders" --timeout 10 >"$WORK/t3-up-create.json"
	report t3-up-create "c: the same creates again, shard 2 back"
	check "shards: shard 2 back: every checkout has its order" made t3-up-create "$WORK/t3e.orders" "$T3_DOWN"
	python3 "$STORM" cancel "$URL" T3X 0 --orders "$WORK/t3x.orders" --repeat 1 --key "${PAYCALLBACK_AUTH_KEYS#*:}" \
		--timeout 10 >"$WORK/t3-up-cancel.json"
	report t3-up-cancel "c: the same cancels again, shard 2 back"
	check "shards: shard 2 back: every cancel gets 200" only_status t3-up-cancel 200
	T3_DONE=(--paid "$WORK/t3a.orders=2" --paid "$WORK/t3d.orders=1" --exist "$WORK/t3e.orders" --canceled "$WORK/t3x.orders")
	check "shards: c: invariants on both shards, exact after the outage, stock of cancels returned" t3_invariants "${T3_DONE[@]}"

	# d. Shard 2 killed -9 in the middle of a duplicate storm, then restarted
	# (InnoDB recovery): transactions cut off halfway, registry rows without
	# their payment. The storm sees only 200 and 503; the replay, only 200.
	python3 "$STORM" create "$URL" T3K "$T3_ORDERS" --skus "$s" --out "$WORK/t3k.orders" >"$WORK/t3-create-k.json"
	check "shards: the orders of the crash storm are created" made t3-create-k "$WORK/t3k.orders" "$T3_ORDERS"
	rm -f "$WORK/stop"
	storm_bg t3-crash callbacks "$URL" T3K 0 --orders "$WORK/t3k.orders" --repeat 2 --secret "$SECRET" --timeout 10 \
		--stop-file "$WORK/stop" --max-seconds 120
	t3_paying() { (($(t3_sql 2 "SELECT COUNT(*) FROM payment_record WHERE pay_no LIKE 'T3K-%'") >= T3_ORDERS / 8)); }
	wait_until 60 t3_paying || not_ok "shards: the crash storm got going"
	"$D/shards.sh" kill-shard 2
	check "shards: shard 2 killed: its readiness turns 503" wait_until 15 t3_shard_unready_all 2
	"$D/shards.sh" start-shard 2
	check "shards: shard 2 restarted: every instance is ready with \"mysql\":\"up\"" wait_until 30 t3_ready_all up
	touch "$WORK/stop"
	wait
	report t3-crash "d: duplicate storm through a kill -9 and restart of shard 2"
	check "shards: through the crash of shard 2 callbacks get only 200 or 503" only_status t3-crash 200 503
	python3 "$STORM" callbacks "$URL" T3K 0 --orders "$WORK/t3k.orders" --repeat 1 --secret "$SECRET" >"$WORK/t3-replay.json"
	report t3-replay "d: the bank's replay of every callback after the restart"
	check "shards: after the crash every callback gets 200" only_status t3-replay 200
	check "shards: d: invariants on both shards, exact after the crash" \
		t3_invariants "${T3_DONE[@]}" --paid "$WORK/t3k.orders=2"
	t3_freeze "$s"
	"$D/haproxy.sh" stop
	"$D/instances.sh" stop
	"$D/shards.sh" stop
}

# t3_rates TIMELINE FREEZE THAW: the storm's callbacks that need only shard 1,
# answered 200, counted per second (whole seconds from the window's start)
# in the T3_BEFORE s before FREEZE and between FREEZE and THAW; the medians
# of those counts, their ratio, the means, and every status seen; exit 1
# on a 500, a ratio of the medians under 0.8, or a mean of the first two
# seconds of the freeze under 0.5 of the median before (the seconds in
# which a frozen shard could take every worker before anything sees it). The median, not the mean:
# the first second of the freeze (until the instances find shard 2 hung)
# and a second in which the machine was busy elsewhere do not decide it,
# while a frozen shard that held the healthy callbacks back for most of
# the freeze would.
t3_rates() {
	python3 - "$1" "$2" "$3" "$T3_BEFORE" <<-'PY'
		import collections, json, statistics, sys
		rows = json.load(open(sys.argv[1])); freeze, thaw, before = map(float, sys.argv[2:5])
		ok = [t for t, needs, st, _ in rows if not needs and st == 200]
		def per_second(a, b):
		    return [sum(1 for t in ok if a + k <= t < a + k + 1) for k in range(int(b - a))]
		pre, during = per_second(freeze - before, freeze), per_second(freeze, thaw)
		m_pre, m_during = statistics.median(pre), statistics.median(during)
		onset = statistics.mean(during[:2]) / max(m_pre, 1e-9)  # the first 2 s, before any prober knows
		statuses = collections.Counter("%s%s" % (st, "" if needs else "*") for _, needs, st, _ in rows)
		frozen = collections.Counter((st, out) for t, needs, st, out in rows if freeze <= t < thaw and needs)
		print("healthy %.0f/s before, %.0f/s frozen (%.0f %%; medians of %s and %s per second; means %.0f and %.0f); "
		      "first 2 s frozen %.0f %% of before; "
		      "statuses (* = needs only shard 1) %s; needing shard 2 while frozen %s"
		      % (m_pre, m_during, 100 * m_during / max(m_pre, 1e-9), pre, during,
		         statistics.mean(pre), statistics.mean(during), 100 * onset,
		         dict(statuses), {"%s %s" % k: v for k, v in frozen.items()}))
		sys.exit(0 if m_pre > 0 and m_during >= 0.8 * m_pre and onset >= 0.5
		         and not any(st == 500 for _, _, st, _ in rows) else 1)
	PY
}

# e. Shard 2 frozen (SIGSTOP) under a storm across both shards.
t3_freeze() {
	local s=$1 freeze thaw end unready=0 i out
	python3 "$STORM" create "$URL" T3F "$T3_ORDERS" --skus "$s" --out "$WORK/t3f.orders" >"$WORK/t3-create-f.json"
	check "shards: the orders of the freeze storm are created" made t3-create-f "$WORK/t3f.orders" "$T3_ORDERS"
	rm -f "$WORK/stop-f"
	storm_bg t3-freeze callbacks "$URL" T3F 0 --orders "$WORK/t3f.orders" --legs a --repeat 1 --secret "$SECRET" \
		--down 2 --needing other --threads "$T3_FREEZE_HEALTHY" --timeout 30 --stop-file "$WORK/stop-f" \
		--max-seconds 120 --timeline "$WORK/t3-freeze-timeline.json"
	storm_bg t3-freeze-down callbacks "$URL" T3F 0 --orders "$WORK/t3f.orders" --legs a --repeat 1 --secret "$SECRET" \
		--down 2 --needing down --threads "$T3_FREEZE_DOWN" --timeout 30 --stop-file "$WORK/stop-f" \
		--max-seconds 120
	sleep "$((T3_WARMUP + T3_BEFORE))"  # the rate before the freeze: the last T3_BEFORE s of this
	freeze=$(date +%s.%N)
	"$D/shards.sh" freeze-shard 2
	end=$(($(date +%s) + T3_FREEZE))
	while (($(date +%s) < end)); do     # every instance stays ready for shard 1 throughout
		for i in 1 2 3; do
			out=$(readyz_body "$i" "?shard=1")
			[[ $out == *" 200" ]] || { unready=$((unready + 1)); echo "  instance $i: $out" >&2; }
		done
		sleep 0.5
	done
	thaw=$(date +%s.%N)
	"$D/shards.sh" thaw-shard 2
	check "shards: e: shard 2 frozen: every instance stays ready for shard 1 (/readyz?shard=1)" test "$unready" = 0
	check "shards: e: shard 2 thawed: every instance is ready with \"mysql\":\"up\"" wait_until 30 t3_ready_all up
	touch "$WORK/stop-f"
	wait
	report t3-freeze "e: callbacks needing only shard 1, shard 2 frozen ${T3_FREEZE}s"
	report t3-freeze-down "e: callbacks needing shard 2, shard 2 frozen ${T3_FREEZE}s"
	check "shards: e: callbacks needing shard 2 get only 200 or 503" only_status t3-freeze-down 200 503
	out=$(t3_rates "$WORK/t3-freeze-timeline.json" "$freeze" "$thaw") && i=0 || i=1
	figure "  freeze" "$out"
	check "shards: e: callbacks needing only shard 1 keep >= 80 % of their rate (>= 50 % in the first 2 s), nothing 500" test "$i" = 0
	python3 "$STORM" callbacks "$URL" T3F 0 --orders "$WORK/t3f.orders" --legs a --repeat 1 --secret "$SECRET" \
		--timeout 10 >"$WORK/t3-freeze-replay.json"
	report t3-freeze-replay "e: the bank's replay of every callback after the thaw"
	check "shards: e: after the thaw every callback gets 200" only_status t3-freeze-replay 200
	T3_DONE+=(--paid "$WORK/t3k.orders=2")
	check "shards: e: invariants on both shards, exact after the freeze" \
		t3_invariants "${T3_DONE[@]}" --paid "$WORK/t3f.orders=1"
}
