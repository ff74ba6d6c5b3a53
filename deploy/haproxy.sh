#!/usr/bin/env bash
# HAProxy on loopback in front of the instances of deploy/instances.sh.
# usage: haproxy.sh start K | stop | status
#        haproxy.sh drain N | ready N | sessions N   (admin socket, instance N)
# The frontend listens on 127.0.0.1:HTTP_BASE+80, statistics on +81 (/stats).
set -euo pipefail
# shellcheck source=deploy/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PROC_NAME=haproxy

CFG=$HAPROXY_DIR/haproxy.cfg
PIDFILE=$HAPROXY_DIR/haproxy.pid
SOCK=$HAPROXY_DIR/admin.sock

hap_pid() { pidfile_pid "$PIDFILE" haproxy; }
admin() { echo "$*" | socat -t 2 stdio "unix-connect:$SOCK"; }

write_cfg() {
	local k=$1 i servers=
	for ((i = 1; i <= k; i++)); do
		servers+="    server i$i 127.0.0.1:$(instance_port "$i") check"$'\n'
	done
	sed -e "s|@ADMIN_SOCK@|$SOCK|" -e "s|@PORT@|$HAPROXY_PORT|" -e "s|@STATS_PORT@|$HAPROXY_STATS_PORT|" \
		-e "s|@ERRORS_DIR@|$ROOT/deploy/haproxy/errors|" "$ROOT/deploy/haproxy.cfg.in" | awk -v s="$servers" '$0 == "@SERVERS@" { printf "%s", s; next } { print }' >"$CFG.tmp"
	haproxy -c -q -f "$CFG.tmp" || die "generated configuration $CFG.tmp is invalid"
	mv "$CFG.tmp" "$CFG"
}

start() {
	local k=$1
	[[ $k =~ ^[0-9]+$ ]] && ((k >= 1 && k <= 20)) || die "K must be 1..20"
	mkdir -p "$HAPROXY_DIR"
	hap_pid >/dev/null && die "already running (pid $(hap_pid)); stop it first"
	port_busy "$HAPROXY_PORT" && die "127.0.0.1:$HAPROXY_PORT is in use by another process"
	write_cfg "$k"
	rm -f "$PIDFILE"
	( close_fds; exec haproxy -f "$CFG" -p "$PIDFILE" -D ) >>"$HAPROXY_DIR/haproxy.log" 2>&1 </dev/null ||
		{ tail_log "$HAPROXY_DIR/haproxy.log"; die "haproxy failed to start"; }
	wait_until 10 port_busy "$HAPROXY_PORT" || die "haproxy does not listen on $HAPROXY_PORT"
}

# SIGUSR1 is HAProxy's soft stop: it stops listening and lets requests finish.
stop() {
	local pid
	pid=$(hap_pid) || { rm -f "$PIDFILE"; return 0; }
	kill -USR1 "$pid"
	wait_gone "$pid" 30 || kill_hard "$pid" 5 || die "haproxy (pid $pid) will not die"
	rm -f "$PIDFILE"
}

# server_field N FIELD: a field of `show stat` for instance N (scur, status...).
server_field() {
	admin "show stat" | awk -F, -v sv="i$1" -v f="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) { n = $i; sub(/^# /, "", n); col[n] = i } next }
		$1 == "instances" && $2 == sv { print $col[f] }'
}

status() {
	local pid
	pid=$(hap_pid) || { echo "haproxy: stopped"; return 3; }
	echo "haproxy: running (pid $pid, 127.0.0.1:$HAPROXY_PORT, stats http://127.0.0.1:$HAPROXY_STATS_PORT/stats)"
	admin "show stat" | awk -F, '$1 == "instances" && $2 != "BACKEND" { printf "  %s: %s, %s sessions now, %s total\n", $2, $18, $5, $8 }'
}

case ${1:-} in
start) (($# == 2)) || die "usage: $0 start K"; start "$2" ;;
stop) stop ;;
status) status ;;
drain) admin "set server instances/i$2 state drain" >/dev/null ;;
ready) admin "set server instances/i$2 state ready" >/dev/null ;;
sessions) server_field "$2" scur ;;
*) echo "usage: $0 start K|stop|status|drain N|ready N|sessions N" >&2; exit 2 ;;
esac
