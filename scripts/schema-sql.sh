#!/usr/bin/env bash
# Prints the SQL that brings a database to the schema of this tree, for
# piping into a mariadb session that has selected the database: the
# numbered migrations of sql/migrations/ in order, each followed by the
# row of schema_migrations that records it, exactly as `paycallback
# migrate` leaves them. For the development and test servers, which are
# provisioned before anything is built; every migration is re-runnable.
# usage: schema-sql.sh [--after N] [--upto N] [--unrecorded]
#   --after N     start after migration N (the version a database holds:
#                 a migration re-run over later ones' data may not fit it)
#   --upto N      stop after migration N (a database at an older version)
#   --unrecorded  no schema_migrations (a database made before migrations)
set -euo pipefail
sql=$(cd "$(dirname "${BASH_SOURCE[0]}")/../sql" && pwd -P)
after=0 upto=999999 record=1
while (($#)); do
	case $1 in
	--after) after=$((10#$2)); shift 2 ;;
	--upto) upto=$((10#$2)); shift 2 ;;
	--unrecorded) record=0; shift ;;
	*) echo "usage: $0 [--after N] [--upto N] [--unrecorded]" >&2; exit 2 ;;
	esac
done
((record)) && { cat "$sql/schema_migrations.sql"; echo; }
for f in "$sql"/migrations/[0-9][0-9][0-9][0-9]_*.sql; do
	base=$(basename "$f" .sql)
	n=$((10#${base%%_*}))
	((n <= upto)) || break
	((n > after)) || continue
	cat "$f"
	echo
	((record)) && echo "INSERT IGNORE INTO schema_migrations (version, name) VALUES ($n, '$base');"
done
exit 0
