#!/usr/bin/env bash
# Process helpers shared by scripts/services.sh and deploy/*.sh: pidfiles,
# liveness, bounded waits and clean daemon launches. Source it; it defines
# functions only. die() prefixes messages with $PROC_NAME.
# shellcheck disable=SC2034

die() { printf '%s: %s\n' "${PROC_NAME:-${0##*/}}" "$*" >&2; exit 1; }

# alive PID [COMM]: PID exists, is not a zombie and (if given) runs COMM.
alive() {
	local stat state comm
	[[ $1 =~ ^[0-9]+$ ]] || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	state=${stat##*) }
	state=${state%% *}
	[[ $state != Z && $state != X ]] || return 1
	if [[ -n ${2:-} ]]; then
		comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
		[[ $comm == "$2" ]] || return 1
	fi
}

# pidfile_pid FILE COMM: print the pid in FILE if that process is alive.
pidfile_pid() {
	local pid
	[[ -s $1 ]] || return 1
	pid=$(<"$1")
	alive "$pid" "$2" || return 1
	printf '%s\n' "$pid"
}

# wait_gone PID SECONDS
wait_gone() {
	local deadline=$((SECONDS + $2))
	while alive "$1"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# kill_hard PID SECONDS: SIGTERM, wait, then SIGKILL.
kill_hard() {
	kill -TERM "$1" 2>/dev/null || true
	wait_gone "$1" "$2" && return 0
	echo "${PROC_NAME:-${0##*/}}: pid $1 ignored SIGTERM, killing" >&2
	kill -KILL "$1" 2>/dev/null || true
	wait_gone "$1" 5
}

# Run in the child before exec'ing a daemon: no inherited descriptors
# (lock file, the caller's sockets and pipes) survive into it.
close_fds() {
	local fd
	for fd in "/proc/$BASHPID/fd/"*; do
		fd=${fd##*/}
		((fd > 2)) && { eval "exec $fd>&-"; } 2>/dev/null
	done
	return 0
}

tail_log() {
	[[ -s $1 ]] || return 0
	echo "--- last lines of $1:" >&2
	tail -n "${2:-25}" "$1" >&2
}

# port_busy PORT: something already accepts connections on 127.0.0.1:PORT.
port_busy() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (0) or
# SECONDS pass (1).
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}
