#!/usr/bin/env bash
# Private MariaDB and Redis for development and tests, kept under var/.
# usage: services.sh start|stop|status|start-mysql|stop-mysql|start-redis|stop-redis|provision
# start and stop are idempotent; start returns once the server answers on TCP.
# provision applies sql/ again to the running MariaDB, whatever its version.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# shellcheck source=scripts/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/proc.sh"
PROC_NAME=services

MYSQL_START_TIMEOUT=60
MYSQL_STOP_TIMEOUT=30
REDIS_START_TIMEOUT=15
REDIS_STOP_TIMEOUT=10
STAMP=$MYSQL_DIR/provisioned

lock() {
	mkdir -p "$VAR"
	exec 9>"$VAR/.services.lock"
	flock -w 120 9 || die "another services.sh holds $VAR/.services.lock"
}

# --- MariaDB ---------------------------------------------------------------

as_root() { mariadb --no-defaults --user=root --socket="$MYSQL_SOCK" --connect-timeout=5 "$@"; }

mysql_ping_sock() {
	mariadb-admin --no-defaults --user=root --socket="$MYSQL_SOCK" --connect-timeout=2 ping >/dev/null 2>&1
}

mysql_ping_tcp() {
	mariadb-admin --no-defaults --host=127.0.0.1 --port="$MYSQL_PORT" --user="$DB_USER" \
		--password="$DB_PASSWORD" --connect-timeout=2 ping >/dev/null 2>&1
}

user_opt() { ((EUID == 0)) && printf '%s\n' "--user=$(id -un)"; return 0; }

mysql_init() {
	[[ -d $MYSQL_DATA/mysql ]] && return 0
	local tmp=$MYSQL_DIR/data.init
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# shellcheck disable=SC2046
	if ! mariadb-install-db --no-defaults $(user_opt) --datadir="$tmp" \
		--auth-root-authentication-method=normal --skip-test-db \
		--innodb-buffer-pool-size=32M >"$MYSQL_DIR/install.log" 2>&1; then
		tail_log "$MYSQL_DIR/install.log" 40
		die "mariadb-install-db failed"
	fi
	rm -rf "$MYSQL_DATA"
	mv "$tmp" "$MYSQL_DATA"
}

# mysql_provision [all]: a database behind the tree gets the migrations
# after the one it holds, as `paycallback migrate` would (an earlier one
# re-run over a later one's rows may not fit them: 0007's unique key over
# two events of a kind); one at the tree's version, or every one with
# "all" (services.sh provision), gets them all again, which makes its
# procedures anew.
mysql_provision() {
	local sql=$ROOT/sql db host schema want
	[[ -r $sql/seed.sql ]] || die "missing $sql/seed.sql"
	local -A have
	want=$(tree_version)
	for db in "$DB_NAME" "$DB_TEST_NAME" "${DB_TEST_NAME}_s2"; do
		have[$db]=$(as_root --batch --skip-column-names \
			-e "SELECT COALESCE(MAX(version), 0) FROM \`$db\`.schema_migrations" 2>/dev/null) ||
			have[$db]=0
		if [[ ${1:-} == all ]] || ((have[$db] >= want)); then have[$db]=0; fi
	done
	if ! {
		for db in "$DB_NAME" "$DB_TEST_NAME" "${DB_TEST_NAME}_s2"; do
			echo "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
		done
		for host in 127.0.0.1 localhost; do
			echo "CREATE USER IF NOT EXISTS '$DB_USER'@'$host' IDENTIFIED BY '$DB_PASSWORD';"
			echo "ALTER USER '$DB_USER'@'$host' IDENTIFIED BY '$DB_PASSWORD';"
			for db in "$DB_NAME" "$DB_TEST_NAME" "${DB_TEST_NAME}_s2"; do
				echo "GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'$host';"
			done
		done
		for db in "$DB_NAME" "$DB_TEST_NAME" "${DB_TEST_NAME}_s2"; do
			echo "USE \`$db\`;"
			schema=$("$ROOT/scripts/schema-sql.sh" --after "${have[$db]:-0}") ||
				die "cannot read sql/migrations"
			printf '%s\n' "$schema"
			cat "$sql/seed.sql"
			echo
		done
	} | as_root --batch >/dev/null; then
		die "could not create databases/users or apply sql/ (see messages above)"
	fi
	touch "$STAMP"
}

# The highest migration of the tree: the version a provisioned database holds.
tree_version() {
	local f n=0
	for f in "$ROOT"/sql/migrations/[0-9][0-9][0-9][0-9]_*.sql; do
		f=${f##*/}
		n=$((10#${f%%_*}))
	done
	echo "$n"
}

# Provisioning drops and re-creates the procedures (MariaDB replaces one no
# other way), so it runs only when something needs it: sql/ or this script
# changed since the last run, or a database is missing or below the tree's
# version (a new data directory, a database dropped). A restart of a
# provisioned server changes nothing, so live callbacks never meet a
# missing procedure.
mysql_stale() {
	local db want have
	[[ ! -e $STAMP || ${BASH_SOURCE[0]} -nt $STAMP ||
		-n $(find "$ROOT/sql" -name '*.sql' -newer "$STAMP" -print -quit) ]] && return 0
	want=$(tree_version)
	for db in "$DB_NAME" "$DB_TEST_NAME" "${DB_TEST_NAME}_s2"; do
		have=$(as_root --batch --skip-column-names \
			-e "SELECT COALESCE(MAX(version), 0) FROM \`$db\`.schema_migrations" 2>/dev/null) || return 0
		[[ $have == "$want" ]] || return 0
	done
	return 1
}

start_mysql() {
	local pid deadline
	mkdir -p "$MYSQL_DIR"
	((${#MYSQL_SOCK} < 100)) || die "socket path too long for AF_UNIX: $MYSQL_SOCK"

	if pid=$(pidfile_pid "$MYSQL_PIDFILE" mariadbd); then
		if mysql_ping_sock; then
			if mysql_stale; then mysql_provision; fi
			return 0
		fi
		# Running but not answering yet (still starting): wait for it below.
	else
		port_busy "$MYSQL_PORT" && die "127.0.0.1:$MYSQL_PORT is in use by another process (set PAYCALLBACK_MYSQL_PORT)"
		mysql_init
		rm -f "$MYSQL_PIDFILE"
		# shellcheck disable=SC2046
		(
			exec </dev/null >/dev/null 2>>"$MYSQL_LOG"
			close_fds
			exec setsid mariadbd --no-defaults $(user_opt) \
				--datadir="$MYSQL_DATA" \
				--socket="$MYSQL_SOCK" \
				--port="$MYSQL_PORT" \
				--bind-address=127.0.0.1 \
				--pid-file="$MYSQL_PIDFILE" \
				--log-error="$MYSQL_LOG" \
				--tmpdir="$MYSQL_DIR" \
				--default-time-zone=+00:00 \
				--character-set-server=utf8mb4 \
				--collation-server=utf8mb4_bin \
				--innodb-buffer-pool-size=128M \
				--innodb-flush-log-at-trx-commit=1 \
				--sync-binlog=1 \
				--innodb-doublewrite=1 \
				--max-connections=500 \
				--max-allowed-packet=16M \
				--skip-name-resolve \
				--performance-schema=0
		) &
		pid=$!
	fi

	deadline=$((SECONDS + MYSQL_START_TIMEOUT))
	until mysql_ping_sock; do
		if ! alive "$pid"; then
			tail_log "$MYSQL_LOG"
			die "mariadbd exited during startup"
		fi
		if ((SECONDS >= deadline)); then
			tail_log "$MYSQL_LOG"
			die "mariadbd did not answer within ${MYSQL_START_TIMEOUT}s (pid $pid left running)"
		fi
		sleep 0.1
	done
	if mysql_stale; then mysql_provision; fi
	mysql_ping_tcp || { tail_log "$MYSQL_LOG"; die "mariadbd does not accept $DB_USER on 127.0.0.1:$MYSQL_PORT"; }
}

stop_mysql() {
	local pid deadline
	pid=$(pidfile_pid "$MYSQL_PIDFILE" mariadbd) || pid=
	if mysql_ping_sock; then
		# Ask politely; mariadb-admin's own wait polls once a second, ours is finer.
		mariadb-admin --no-defaults --user=root --socket="$MYSQL_SOCK" --connect-timeout=5 \
			--shutdown-timeout=0 shutdown >/dev/null 2>&1 || true
	elif [[ -z $pid ]]; then
		rm -f "$MYSQL_PIDFILE"
		return 0
	else
		# Alive but deaf (hung, or still recovering): signals only.
		kill_hard "$pid" 10 || die "mariadbd (pid $pid) will not die"
		rm -f "$MYSQL_PIDFILE"
		return 0
	fi
	if [[ -z $pid ]]; then
		# Our socket answered without a pidfile: wait for the socket to go quiet.
		deadline=$((SECONDS + MYSQL_STOP_TIMEOUT))
		while mysql_ping_sock; do
			((SECONDS < deadline)) || die "mariadbd on $MYSQL_SOCK does not shut down"
			sleep 0.1
		done
		return 0
	fi
	if ! wait_gone "$pid" "$MYSQL_STOP_TIMEOUT"; then
		echo "services: mariadbd (pid $pid) did not shut down cleanly, sending SIGTERM" >&2
		kill_hard "$pid" 10 || die "mariadbd (pid $pid) will not die"
	fi
	rm -f "$MYSQL_PIDFILE"
}

# --- Redis -----------------------------------------------------------------

redis_ping() {
	[[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
}

start_redis() {
	local pid deadline logsize
	mkdir -p "$REDIS_DIR"
	if pid=$(pidfile_pid "$REDIS_PIDFILE" redis-server) && redis_ping; then
		return 0
	fi
	if [[ -z ${pid:-} ]]; then
		port_busy "$REDIS_PORT" && die "127.0.0.1:$REDIS_PORT is in use by another process (set PAYCALLBACK_REDIS_PORT)"
		rm -f "$REDIS_PIDFILE"
		logsize=$(stat -c %s "$REDIS_LOG" 2>/dev/null || echo 0)
		cat >"$REDIS_CONF" <<-CONF
			# generated by scripts/services.sh; edits are overwritten
			port $REDIS_PORT
			bind 127.0.0.1
			protected-mode yes
			daemonize yes
			pidfile $REDIS_PIDFILE
			dir $REDIS_DIR
			logfile $REDIS_LOG
			loglevel notice
			appendonly no
			save ""
		CONF
		if ! (
			exec </dev/null >/dev/null 2>>"$REDIS_LOG"
			close_fds
			exec redis-server "$REDIS_CONF"
		); then
			tail_log "$REDIS_LOG"
			die "redis-server failed to start"
		fi
	fi

	# daemonize: the pidfile appears once the listening socket is bound;
	# a daemon that dies before that only leaves its last words in the log.
	deadline=$((SECONDS + REDIS_START_TIMEOUT))
	until pid=$(pidfile_pid "$REDIS_PIDFILE" redis-server) && redis_ping; do
		if [[ -z $pid && -n ${logsize:-} ]] &&
			tail -c +"$((logsize + 1))" "$REDIS_LOG" 2>/dev/null | grep -qiE 'abort|fatal'; then
			tail_log "$REDIS_LOG" 10
			die "redis-server exited during startup"
		fi
		if ((SECONDS >= deadline)); then
			tail_log "$REDIS_LOG"
			die "redis-server did not answer on 127.0.0.1:$REDIS_PORT within ${REDIS_START_TIMEOUT}s"
		fi
		sleep 0.05
	done
}

stop_redis() {
	local pid
	if ! pid=$(pidfile_pid "$REDIS_PIDFILE" redis-server); then
		rm -f "$REDIS_PIDFILE"
		return 0
	fi
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
	if ! wait_gone "$pid" "$REDIS_STOP_TIMEOUT"; then
		echo "services: redis-server did not shut down, sending SIGTERM" >&2
		kill_hard "$pid" 5 || die "redis-server (pid $pid) will not die"
	fi
	rm -f "$REDIS_PIDFILE"
}

# --- status ----------------------------------------------------------------

status() {
	local pid rc=0
	if pid=$(pidfile_pid "$MYSQL_PIDFILE" mariadbd) && mysql_ping_sock; then
		echo "mysql: running (pid $pid, 127.0.0.1:$MYSQL_PORT, $MYSQL_SOCK)"
	elif [[ -n ${pid:-} ]]; then
		echo "mysql: not answering (pid $pid)"; rc=3
	else
		echo "mysql: stopped"; rc=3
	fi
	pid=
	if pid=$(pidfile_pid "$REDIS_PIDFILE" redis-server) && redis_ping; then
		echo "redis: running (pid $pid, 127.0.0.1:$REDIS_PORT)"
	elif [[ -n ${pid:-} ]]; then
		echo "redis: not answering (pid $pid)"; rc=3
	else
		echo "redis: stopped"; rc=3
	fi
	return "$rc"
}

usage() {
	echo "usage: $0 start|stop|status|start-mysql|stop-mysql|start-redis|stop-redis|provision" >&2
	exit 2
}

(($# == 1)) || usage
case $1 in
start) lock; start_mysql; start_redis ;;
stop) lock; stop_redis; stop_mysql ;;
status) status ;;
start-mysql) lock; start_mysql ;;
stop-mysql) lock; stop_mysql ;;
start-redis) lock; start_redis ;;
stop-redis) lock; stop_redis ;;
provision) lock; mysql_ping_sock || die "mariadbd is not running"; mysql_provision all ;;
*) usage ;;
esac
