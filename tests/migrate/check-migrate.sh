#!/usr/bin/env bash
# The upgrade path of the schema, on the integration suites' own databases,
# which the suites then run on: each is made again at the previous schema
# version (the migrations but the last; for the first, a database made
# before migrations were recorded), filled with rows in every table
# (tests/migrate/data.sql), and must then
#   - stop the service at start with exit status 2, naming `paycallback migrate`;
#   - be brought to this build's version by `paycallback migrate` (both
#     shards in one run), a second run applying nothing;
#   - keep every row, unchanged in every column it had;
#   - pass --check-config;
# and make services must bring a database one version behind forward.
# Needs the private MariaDB (make services) and the binary ($PCB_BIN).
# usage: check-migrate.sh       Prints a Check-style summary line.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
bin=${PCB_BIN:-$ROOT/build/paycallback}
db=${PCB_TEST_MYSQL_DB:-$DB_TEST_NAME}
dbs=("$db" "${db}_s2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
as_root() { mariadb --no-defaults --user=root --socket="$MYSQL_SOCK" --connect-timeout=5 "$@"; }

checks=0 failures=0
check() {      # check DESCRIPTION COMMAND...
	local what=$1
	shift
	checks=$((checks + 1))
	if ! "$@"; then
		failures=$((failures + 1))
		echo "tests/migrate/check-migrate.sh:F:$what" >&2
	fi
}

latest=$(find "$ROOT/sql/migrations" -name '[0-9][0-9][0-9][0-9]_*.sql' | sort | tail -1)
latest=$((10#$(basename "$latest" | cut -c1-4)))
if ((latest == 1)); then previous=(--unrecorded); else previous=(--upto $((latest - 1))); fi

for d in "${dbs[@]}"; do
	{
		echo "DROP DATABASE IF EXISTS \`$d\`;"
		echo "CREATE DATABASE \`$d\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
		echo "USE \`$d\`;"
		"$ROOT/scripts/schema-sql.sh" "${previous[@]}"
		cat "$ROOT/tests/migrate/data.sql"
	} | as_root --batch >/dev/null
done

# Every row of every table, in the columns it has now, in a stable order.
snapshot() {   # snapshot DB OUT
	local t cols
	: >"$2"
	for t in $(as_root -N -B -e "SELECT table_name FROM information_schema.tables WHERE
			table_schema = '$1' AND table_name <> 'schema_migrations' ORDER BY 1"); do
		cols=$(as_root -N -B -e "SELECT GROUP_CONCAT(CONCAT('\`', column_name, '\`')
			ORDER BY ordinal_position) FROM information_schema.columns
			WHERE table_schema = '$1' AND table_name = '$t'")
		echo "$t $cols" >>"$2"
		as_root -N -B "$1" -e "SELECT $cols FROM \`$t\` ORDER BY $cols" >>"$2"
		echo "$t" >>"$2.tables"
	done
}
# The same columns, read again after the migration.
reread() {     # reread DB BEFORE OUT
	local t cols
	: >"$3"
	while read -r t cols; do
		[[ -n $cols ]] || continue
		echo "$t $cols" >>"$3"
		as_root -N -B "$1" -e "SELECT $cols FROM \`$t\` ORDER BY $cols" >>"$3"
	done < <(grep -E '^[a-z_]+ `' "$2")
}
for d in "${dbs[@]}"; do snapshot "$d" "$tmp/$d.before"; done

env=(PAYCALLBACK_MYSQL_PORT="$MYSQL_PORT" PAYCALLBACK_REDIS_PORT="$REDIS_PORT"
	PAYCALLBACK_MYSQL_DATABASE="$db" PAYCALLBACK_MYSQL_PASSWORD="$DB_PASSWORD" PAYCALLBACK_LISTEN_PORT=0)
shards="PAYCALLBACK_MYSQL_SHARDS=1=127.0.0.1:$MYSQL_PORT/${dbs[0]},2=127.0.0.1:$MYSQL_PORT/${dbs[1]}"

refused() {
	local rc=0
	env "${env[@]}" timeout 20 "$bin" -c "$ROOT/config/paycallback.json" --dev \
		>"$tmp/start.out" 2>&1 || rc=$?
	((rc == 2)) && grep -q 'paycallback migrate' "$tmp/start.out" ||
		{ echo "start at the previous version: exit $rc, $(cat "$tmp/start.out")" >&2; return 1; }
}
check "the service refuses to start on the previous version, naming migrate" refused

migrated() {
	env "${env[@]}" "$shards" "$bin" -c "$ROOT/config/paycallback.json" migrate \
		>"$tmp/migrate.out" 2>&1 || { cat "$tmp/migrate.out" >&2; return 1; }
	(($(grep -c "schema version $latest\$" "$tmp/migrate.out") == 2)) ||
		{ echo "migrate did not bring both shards to $latest: $(cat "$tmp/migrate.out")" >&2; return 1; }
}
check "migrate brings both shards to version $latest" migrated

again() {
	env "${env[@]}" "$shards" "$bin" -c "$ROOT/config/paycallback.json" migrate \
		>"$tmp/again.out" 2>&1 || { cat "$tmp/again.out" >&2; return 1; }
	(($(grep -c "nothing to apply" "$tmp/again.out") == 2)) ||
		{ echo "a second migrate applied something: $(cat "$tmp/again.out")" >&2; return 1; }
}
check "a second migrate applies nothing" again

kept() {
	local d rc=0
	for d in "${dbs[@]}"; do
		reread "$d" "$tmp/$d.before" "$tmp/$d.after"
		diff -u "$tmp/$d.before" "$tmp/$d.after" >&2 || rc=1
		(($(wc -l <"$tmp/$d.before") > 20)) || { echo "$d: too few rows loaded" >&2; rc=1; }
	done
	return "$rc"
}
check "every row is kept, unchanged" kept

# A sharded service serves only shards that carry their identity, which
# only `paycallback shards init` writes: after migrate, before the start.
initialised() {
	env "${env[@]}" "$shards" PAYCALLBACK_MYSQL_CLUSTER_ID=migrate-test "$bin" \
		-c "$ROOT/config/paycallback.json" shards init >"$tmp/init.out" 2>&1 ||
		{ cat "$tmp/init.out" >&2; return 1; }
	grep -q "cluster migrate-test: shards 1,2" "$tmp/init.out" ||
		{ echo "shards init: $(cat "$tmp/init.out")" >&2; return 1; }
}
check "shards init gives both migrated shards their identity" initialised

checked() {
	env "${env[@]}" "$shards" PAYCALLBACK_MYSQL_CLUSTER_ID=migrate-test "$bin" \
		-c "$ROOT/config/paycallback.json" --dev --check-config \
		>"$tmp/check.out" 2>&1 || { cat "$tmp/check.out" >&2; return 1; }
}
check "--check-config passes on the migrated shards" checked
# The suites that follow start with databases that are no shard yet.
for d in "${dbs[@]}"; do
	as_root "$d" -e "DELETE FROM shard_map; DELETE FROM shard_identity"
done

# The development servers' provisioning (make services) brings a database
# that is behind the tree forward with the migrations it lacks only: an
# earlier one re-run over a later one's rows may not fit them (two events of
# one kind for one order break 0007's unique key, which 0009 replaced).
provisioned() {
	local d=${dbs[0]} have
	as_root "$d" -e "INSERT INTO outbox (event_type, order_no, subject, payload) VALUES
		('payment.double_charged', 'MIG-DUP', 'P1', '{}'),
		('payment.double_charged', 'MIG-DUP', 'P2', '{}');
		DELETE FROM schema_migrations WHERE version = $latest;"
	"$ROOT/scripts/services.sh" start >"$tmp/services.out" 2>&1 ||
		{ cat "$tmp/services.out" >&2; return 1; }
	have=$(as_root -N -B "$d" -e "SELECT MAX(version) FROM schema_migrations")
	as_root "$d" -e "DELETE FROM outbox WHERE order_no = 'MIG-DUP'"
	((have == latest)) || { echo "$d at version $have after make services, not $latest" >&2; return 1; }
}
check "make services brings a database forward with only the migrations it lacks" provisioned

pct=$(((checks - failures) * 100 / checks))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
((failures == 0))
