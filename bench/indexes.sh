# The index sitting of bench/run.sh (BENCH_INDEXES=1), sourced by it after
# its helpers: MariaDB's CPU per first callback with every secondary index
# the callback's transaction maintains, then without each one in turn, then
# without any of them. The transaction is the one-call ceiling's (bench/ceiling
# -m call, unique callbacks at c=BENCH_INDEX_CONCURRENCY, 16): the same CALL
# the service makes, with no HTTP beside it to share the CPU. The indexes
# are read from information_schema, so the sitting follows the schema: every
# secondary index of outbox and payment_record (the inserts maintain them
# all) but uk_pay_no, the callback's own lookup, and those of orders that
# hold status (the CAS moves only those). Each is dropped on the emptied
# test tables and put back as it was before the next variant; the variants
# are interleaved and the set repeated BENCH_ROUNDS times. A unique key
# dropped is a guarantee dropped: its figure is a cost, not a proposal.
# Beside the CPU (which the machine's other load colours), two counts the
# load does not change: redo log bytes per callback (Innodb_lsn_current),
# and buffer pool page writes per callback (Innodb_buffer_pool_write_requests),
# the work each index adds to the transaction.

innodb() {    # LSN and page write requests, space-separated
	sql "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_lsn_current',
	     'Innodb_buffer_pool_write_requests')" | sort | awk '{ printf "%s ", $2 }'
}

index_list() {
	sql "SELECT TABLE_NAME, INDEX_NAME, MIN(NON_UNIQUE),
	            GROUP_CONCAT(CONCAT('\`', COLUMN_NAME, '\`') ORDER BY SEQ_IN_INDEX SEPARATOR ', ')
	     FROM information_schema.STATISTICS
	     WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME <> 'PRIMARY'
	       AND (TABLE_NAME = 'outbox'
	            OR (TABLE_NAME = 'payment_record' AND INDEX_NAME <> 'uk_pay_no')
	            OR (TABLE_NAME = 'orders' AND INDEX_NAME IN
	                (SELECT INDEX_NAME FROM information_schema.STATISTICS
	                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders'
	                   AND COLUMN_NAME = 'status')))
	     GROUP BY TABLE_NAME, INDEX_NAME ORDER BY TABLE_NAME, INDEX_NAME" | tr '\t' '|'
}

drop_index() {    # TABLE|INDEX|NON_UNIQUE|COLUMNS
	local t i; IFS='|' read -r t i _ _ <<<"$1"
	sql "ALTER TABLE \`$t\` DROP INDEX \`$i\`"
}

add_index() {
	local t i nu cols; IFS='|' read -r t i nu cols <<<"$1"
	sql "ALTER TABLE \`$t\` ADD $([[ $nu == 0 ]] && echo UNIQUE) KEY \`$i\` ($cols)"
}

index_sitting() {
	local c=${BENCH_INDEX_CONCURRENCY:-16} variants=() ix=() v line out
	mapfile -t ix < <(index_list)
	((${#ix[@]} > 0)) || { echo "bench: no secondary index found" >&2; exit 1; }
	variants=(all "${ix[@]}" none)
	out=$work/indexes.tsv
	rm -f "$out"
	trap 'for x in "${ix[@]}"; do add_index "$x" 2>/dev/null || true; done; reset' EXIT
	local w0 w1 l0 l1
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD)," \
		"load $(cut -d' ' -f1-3 /proc/loadavg); index sitting: bench/ceiling -m call, unique," \
		"c=$c, ${secs}s runs, $rounds rounds"
	for round in $(seq "$rounds"); do
		echo "round $round"
		for v in "${variants[@]}"; do
			reset
			case $v in
			all) ;;
			none) for x in "${ix[@]}"; do drop_index "$x"; done ;;
			*) drop_index "$v" ;;
			esac
			seed_unique "$orders"
			local m0 m1 i0 i1
			m0=$(ticks "$mdb_pid") i0=$(innodb)
			line=$("$ceiling" -m call -k unique -c "$c" -d "$secs" -f "$first" -n "$orders" \
				-P "$MYSQL_PORT" -u "$DB_USER" -p "$DB_PASSWORD" -D "$DB_TEST_NAME" 2>>"$work/errors.log" |
				grep '^RESULT' || echo "RESULT rps=0 requests=0")
			m1=$(ticks "$mdb_pid") i1=$(innodb)
			read -r w0 l0 <<<"$i0"
			read -r w1 l1 <<<"$i1"
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$(cut -d'|' -f1,2 <<<"$v")" "${line#RESULT }" \
				"$(((m1 - m0) * 1000 / hz))" "$((l1 - l0))" "$((w1 - w0))" >>"$out"
			printf '  %-34s %s mariadb_ms=%s redo=%s page_writes=%s\n' "$(cut -d'|' -f1,2 <<<"$v")" \
				"${line#RESULT }" "$(((m1 - m0) * 1000 / hz))" "$((l1 - l0))" "$((w1 - w0))"
			case $v in
			all) ;;
			none) reset; for x in "${ix[@]}"; do add_index "$x"; done ;;
			*) reset; add_index "$v" ;;
			esac
		done
	done
	python3 "$ROOT/bench/indexes.py" "$out"
}
