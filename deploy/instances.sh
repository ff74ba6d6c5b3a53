#!/usr/bin/env bash
# K paycallback instances on loopback, each a background process with its
# pidfile and log under var/deploy/instances/iN, listening on HTTP_BASE+N.
#
# usage: instances.sh start K single|galera|shards   (build/paycallback must exist)
#        instances.sh stop | status
#        instances.sh start-one N | stop-one N | kill-one N
#        instances.sh restart-one N   (drain in HAProxy, SIGTERM, start, ready)
#
# single: every instance uses the private MariaDB of scripts/services.sh.
# galera: instance N uses Galera node ((N-1) % 3) + 1 of deploy/galera.sh.
# shards: every instance spreads orders over both shards of deploy/shards.sh
#         (PAYCALLBACK_MYSQL_SHARDS names them; shard 1 is also mysql.*), as
#         cluster PAYCALLBACK_MYSQL_CLUSTER_ID (default deploy-shards);
#         start first runs `paycallback shards init` over them (re-runnable:
#         a shard that already carries this identity is left as it is).
# All share the private Redis. The configuration is config/paycallback.json
# with the database endpoint overridden through the environment; any other
# PAYCALLBACK_* variable set by the caller (e.g. PAYCALLBACK_REDIS_DB,
# PAYCALLBACK_MYSQL_INIT_COMMAND) reaches every instance too.
set -euo pipefail
# shellcheck source=deploy/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PROC_NAME=instances

BIN=${PAYCALLBACK_DEPLOY_BIN:-$ROOT/build/paycallback}
CONFIG=${PAYCALLBACK_DEPLOY_CONFIG:-$ROOT/config/paycallback.json}
TOPOLOGY=$INST_DIR/topology
START_TIMEOUT=30
STOP_TIMEOUT=40           # above the shipped grace_s

inst_dir() { echo "$INST_DIR/i$1"; }
inst_pid() { pidfile_pid "$(inst_dir "$1")/pid" paycallback; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$(instance_port "$1")/readyz") == 200 ]]; }

# topology: "K TARGET" of the last start.
read_topology() {
	[[ -r $TOPOLOGY ]] || die "no instances were started (no $TOPOLOGY)"
	read -r K TARGET <"$TOPOLOGY"
}

mysql_port_for() {
	case $TARGET in
	single) echo "$MYSQL_PORT" ;;
	galera) galera_sql_port $((($1 - 1) % GALERA_NODES + 1)) ;;
	shards) shard_sql_port 1 ;;
	*) die "unknown target $TARGET (single, galera or shards)" ;;
	esac
}

# The mysql.shards entry of the shards target ("" for the others): shard N
# of deploy/shards.sh as shard id N, each with the service's database.
shards_spec() {
	local n spec=
	[[ $TARGET == shards ]] || return 0
	for ((n = 1; n <= SHARDS; n++)); do
		spec+="${spec:+,}$n=127.0.0.1:$(shard_sql_port "$n")/$DB_NAME"
	done
	echo "$spec"
}

# The mysql.cluster_id of the shards target ("" for the others).
cluster_id() {
	[[ $TARGET == shards ]] && echo "${PAYCALLBACK_MYSQL_CLUSTER_ID:-deploy-shards}"
	return 0
}

# shards_init: gives every shard its identity before the first instance
# starts (an instance refuses a shard without one).
shards_init() {
	local unset
	[[ $TARGET == shards ]] || return 0
	mapfile -t unset < <(script_only_env)
	PAYCALLBACK_MYSQL_SHARDS=$(shards_spec) PAYCALLBACK_MYSQL_CLUSTER_ID=$(cluster_id) \
		PAYCALLBACK_MYSQL_HOST=127.0.0.1 PAYCALLBACK_MYSQL_PORT=$(mysql_port_for 1) \
		PAYCALLBACK_MYSQL_DATABASE=$DB_NAME \
		PAYCALLBACK_MYSQL_PASSWORD=${PAYCALLBACK_MYSQL_PASSWORD:-$DB_PASSWORD} \
		env "${unset[@]}" "$BIN" -c "$CONFIG" shards init ||
		die "shards init refused the shards of deploy/shards.sh"
}

# The service refuses PAYCALLBACK_* variables that name no configuration
# key: the deploy and test settings stay with the scripts.
script_only_env() {
	local v
	for v in $(compgen -e); do
		[[ $v == PAYCALLBACK_DEPLOY_* || $v == PAYCALLBACK_SCALE_* ]] && printf -- '-u\n%s\n' "$v"
	done
	return 0
}

start_one() {
	local n=$1 dir pid unset
	dir=$(inst_dir "$n")
	mkdir -p "$dir"
	if ! inst_pid "$n" >/dev/null; then
		port_busy "$(instance_port "$n")" && die "127.0.0.1:$(instance_port "$n") is in use by another process"
		[[ -x $BIN ]] || die "$BIN is missing: run make first"
		mapfile -t unset < <(script_only_env)
		pid=$(PAYCALLBACK_MYSQL_SHARDS=$(shards_spec) PAYCALLBACK_MYSQL_CLUSTER_ID=$(cluster_id) PAYCALLBACK_LISTEN_ADDRESS=127.0.0.1 PAYCALLBACK_LISTEN_PORT=$(instance_port "$n") \
			PAYCALLBACK_MYSQL_HOST=127.0.0.1 PAYCALLBACK_MYSQL_PORT=$(mysql_port_for "$n") \
			PAYCALLBACK_MYSQL_DATABASE=$DB_NAME PAYCALLBACK_REDIS_PORT=$REDIS_PORT \
			PAYCALLBACK_MYSQL_PASSWORD=${PAYCALLBACK_MYSQL_PASSWORD:-$DB_PASSWORD} \
			PAYCALLBACK_LOG_LEVEL=${PAYCALLBACK_LOG_LEVEL:-warn} \
			PAYCALLBACK_HTTP_TRUSTED_PROXIES=${PAYCALLBACK_HTTP_TRUSTED_PROXIES:-127.0.0.1} \
			launch "$dir/paycallback.log" env "${unset[@]}" "$BIN" -c "$CONFIG")
		echo "$pid" >"$dir/pid"
	fi
	pid=$(<"$dir/pid")
	local deadline=$((SECONDS + START_TIMEOUT))
	until ready "$n"; do
		alive "$pid" || { tail_log "$dir/paycallback.log"; die "instance $n exited during startup"; }
		((SECONDS < deadline)) || { tail_log "$dir/paycallback.log"; die "instance $n not ready within ${START_TIMEOUT}s"; }
		sleep 0.1
	done
}

# stop_one N: SIGTERM, which finishes the requests in flight (grace_s).
stop_one() {
	local pid
	pid=$(inst_pid "$1") || return 0
	kill -TERM "$pid"
	wait_gone "$pid" "$STOP_TIMEOUT" || kill_hard "$pid" 5 || die "instance $1 (pid $pid) will not die"
}

kill_one() {
	local pid
	pid=$(inst_pid "$1") || die "instance $1 is not running"
	kill -KILL "$pid"
	wait_gone "$pid" 10 || die "instance $1 (pid $pid) survived SIGKILL"
}

no_sessions() { [[ $("$ROOT/deploy/haproxy.sh" sessions "$1") == 0 ]]; }

# restart_one N: a rolling-restart step that loses no request. HAProxy stops
# sending new requests (DRAIN), the ones in flight finish, then the process
# stops gracefully, comes back, passes /readyz and gets traffic again.
restart_one() {
	local n=$1
	"$ROOT/deploy/haproxy.sh" drain "$n"
	wait_until 30 no_sessions "$n" || echo "instances: instance $n still has sessions after 30s" >&2
	stop_one "$n"
	start_one "$n"
	"$ROOT/deploy/haproxy.sh" ready "$n"
}

start_all() {
	local i
	[[ ${1:-} =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 20)) || die "usage: $0 start K single|galera|shards (K 1..20)"
	mkdir -p "$INST_DIR"
	K=$1 TARGET=${2:-single}
	mysql_port_for 1 >/dev/null
	echo "$K $TARGET" >"$TOPOLOGY"
	shards_init
	for ((i = 1; i <= K; i++)); do
		start_one "$i"
	done
}

stop_all() {
	local i
	[[ -r $TOPOLOGY ]] || return 0
	read_topology
	for ((i = 1; i <= K; i++)); do
		stop_one "$i"
	done
}

status() {
	local i pid rc=0
	read_topology
	for ((i = 1; i <= K; i++)); do
		if pid=$(inst_pid "$i"); then
			if ready "$i"; then
				echo "i$i: ready (pid $pid, 127.0.0.1:$(instance_port "$i"), mysql port $(mysql_port_for "$i"))"
			else
				echo "i$i: running, not ready (pid $pid)"
			fi
		else
			echo "i$i: stopped"; rc=3
		fi
	done
	return "$rc"
}

case ${1:-} in
start) shift; start_all "$@" ;;
stop) stop_all ;;
status) status ;;
start-one) read_topology; start_one "$2" ;;
stop-one) read_topology; stop_one "$2" ;;
kill-one) read_topology; kill_one "$2" ;;
restart-one) read_topology; restart_one "$2" ;;
*) echo "usage: $0 start K single|galera|shards|stop|status|start-one N|stop-one N|kill-one N|restart-one N" >&2; exit 2 ;;
esac
