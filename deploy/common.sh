#!/usr/bin/env bash
# Shared settings of the deploy/ scripts: where each topology lives under
# var/deploy and which loopback ports it uses. Source it.
#
# Ports come from three bases so a machine shared by several checkouts can
# move a whole topology at once:
#   PAYCALLBACK_DEPLOY_SQL_BASE   (33400) Galera node N: +N;  shard N: +10+N
#   PAYCALLBACK_DEPLOY_GCOMM_BASE (34500) Galera node N: group +N, IST +10+N, SST +20+N
#   PAYCALLBACK_DEPLOY_HTTP_BASE  (18400) instance N: +N; HAProxy front +80, stats +81
# shellcheck disable=SC2034
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
# shellcheck source=scripts/proc.sh
. "$ROOT/scripts/proc.sh"

DEPLOY=$VAR/deploy
SQL_BASE=${PAYCALLBACK_DEPLOY_SQL_BASE:-33400}
GCOMM_BASE=${PAYCALLBACK_DEPLOY_GCOMM_BASE:-34500}
HTTP_BASE=${PAYCALLBACK_DEPLOY_HTTP_BASE:-18400}

GALERA_NODES=3
GALERA_DIR=$DEPLOY/galera
SHARDS=2
SHARD_DIR=$DEPLOY/shards
INST_DIR=$DEPLOY/instances
HAPROXY_DIR=$DEPLOY/haproxy
HAPROXY_PORT=$((HTTP_BASE + 80))
HAPROXY_STATS_PORT=$((HTTP_BASE + 81))

galera_sql_port() { echo $((SQL_BASE + $1)); }
shard_sql_port() { echo $((SQL_BASE + 10 + $1)); }
instance_port() { echo $((HTTP_BASE + $1)); }

# The account mariadbd runs as: the packaged `mysql` user when we are root.
DB_OS_USER=mysql
((EUID == 0)) || DB_OS_USER=$(id -un)

# sql_root SOCKET ARGS...: a root session on a node's socket, no config files.
sql_root() {
	local sock=$1
	shift
	mariadb --no-defaults --user=root --socket="$sock" --connect-timeout=3 --batch \
		--skip-column-names "$@"
}

# install_datadir DIR: an empty MariaDB data directory owned by the server
# account, made aside and renamed so a half-made one is never used.
install_datadir() {
	local dir=$1 tmp=$1.init
	[[ -d $dir/mysql ]] && return 0
	rm -rf "$tmp"
	mkdir -p "$tmp"
	chown "$DB_OS_USER" "$tmp" "$(dirname "$dir")"
	if ! mariadb-install-db --no-defaults --user="$DB_OS_USER" --datadir="$tmp" \
		--auth-root-authentication-method=normal --skip-test-db \
		--innodb-buffer-pool-size=32M >"$dir.install.log" 2>&1; then
		tail_log "$dir.install.log" 40
		die "mariadb-install-db failed for $dir"
	fi
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

# server_cnf DIR PORT: the [mysqld] options every deployed server shares:
# its files under DIR, loopback only, UTC, binary utf8mb4, durable commits.
server_cnf() {
	cat <<-CNF
		[mysqld]
		user = $DB_OS_USER
		datadir = $1/data
		socket = $1/mysqld.sock
		pid-file = $1/mysqld.pid
		log-error = $1/error.log
		tmpdir = $1
		bind-address = 127.0.0.1
		port = $2
		skip-name-resolve
		default-time-zone = +00:00
		character-set-server = utf8mb4
		collation-server = utf8mb4_bin
		innodb-buffer-pool-size = 64M
		innodb-flush-log-at-trx-commit = 1
		max-connections = 300
		performance-schema = 0
	CNF
}

# provision DIR SOCKET: applies provision_sql through SOCKET when sql/ is
# newer than DIR/provisioned (or it never ran), then stamps DIR.
provision() {
	local stamp=$1/provisioned
	if [[ ! -e $stamp || -n $(find "$ROOT/sql" -name '*.sql' -newer "$stamp" -print -quit) ]]; then
		provision_sql | sql_root "$2" >/dev/null || die "cannot apply sql/ through $2"
		touch "$stamp"
	fi
}

# provision_sql: the statements that create the service's database, its
# account and its tables (sql/migrations/, recorded in schema_migrations),
# for piping into a root session.
provision_sql() {
	local host
	echo "CREATE DATABASE IF NOT EXISTS \`$DB_NAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
	for host in 127.0.0.1 localhost; do
		echo "CREATE USER IF NOT EXISTS '$DB_USER'@'$host' IDENTIFIED BY '$DB_PASSWORD';"
		echo "GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'$host';"
	done
	echo "USE \`$DB_NAME\`;"
	"$ROOT/scripts/schema-sql.sh"
	cat "$ROOT/sql/seed.sql"
}

# bind_lost LOG SINCE_BYTES: the server that wrote LOG after SINCE_BYTES
# gave up because its port was taken. Our ports lie in Linux's ephemeral
# range, so an outgoing connection can hold one for a moment: worth a retry.
bind_lost() { tail -c +"$(($2 + 1))" "$1" 2>/dev/null | grep -q 'Address already in use'; }

# launch LOG CMD...: starts CMD in its own session, detached from our
# descriptors, stdout and stderr appended to LOG. Prints its pid.
launch() {
	local log=$1
	shift
	(
		exec </dev/null >>"$log" 2>&1
		close_fds
		exec setsid "$@"
	) &
	echo $!
}
