#!/usr/bin/env bash
# On a Debian host whose PID 1 is systemd: installs the package built by
# `make deb`, starts the unit, reloads it with a rotated secret, has a
# broken file refused, stops it, and purges the package. Every step is
# checked from systemd's own view (ActiveState, StatusText, Result) and
# from /metrics. The service reaches no database here: it starts, reloads
# and stops without one (callbacks answer 503), which is what is checked.
# It changes the host (a package, a system user), so it is not part of
# `make test`; run it as root on a disposable machine: make test-systemd.
# usage: check-systemd.sh DEB      Ends with "N passed, M failed".
set -euo pipefail
deb=${1:?usage: check-systemd.sh DEB}
[[ $(ps -p 1 -o comm=) == systemd ]] || { echo "check-systemd: PID 1 is not systemd; nothing to check here" >&2; exit 2; }
[[ $EUID -eq 0 ]] || { echo "check-systemd: run as root" >&2; exit 2; }
! dpkg -s paycallback >/dev/null 2>&1 || { echo "check-systemd: paycallback is installed already; purge it first" >&2; exit 2; }

cfg=/etc/paycallback/paycallback.json
key=check-systemd-ops-$RANDOM$RANDOM-0123456789
secret_a=check-systemd-a-$RANDOM$RANDOM-0123456789abcdef
secret_b=check-systemd-b-$RANDOM$RANDOM-0123456789abcdef
passed=0 failed=0
check() {
	local what=$1; shift
	if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "check-systemd: $what" >&2; fi
}
cleanup() { systemctl stop paycallback >/dev/null 2>&1 || true; dpkg --purge paycallback >/dev/null 2>&1 || true; }
trap cleanup EXIT
prop() { systemctl show paycallback -p "$1" --value; }
# systemctl reload returns once kill has sent SIGHUP (systemd 252 does not
# wait for RELOADING=1/READY=1): wait until the status text says $1.
await_status() {
	local deadline=$((SECONDS + 10))
	until grep -q "$1" <<<"$(prop StatusText)"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}
write_cfg() { # current-secret previous-secret
	printf '{"listen": {"address": "127.0.0.1", "port": 18080},
	  "callback": {"secret": "%s", "previous_secret": "%s"},
	  "auth": {"keys": [{"name": "ops", "key": "%s"}]}}\n' "$1" "$2" "$key" >"$cfg"
}
metric() { curl -s -H "Authorization: Bearer $key" http://127.0.0.1:18080/metrics | awk -v s="$1" '$1 == s { print $2 }'; }
signed() { # secret: the status of a callback signed with it
	local body='{"order_no":"SD1","pay_no":"SD-PAY1","amount":"1.00"}' ts sig
	ts=$(date +%s)
	sig=$(printf '%s' "$ts.$body" | openssl dgst -sha256 -hmac "$1" | awk '{print $NF}')
	curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:18080/pay/callback \
		-H "X-Timestamp: $ts" -H "X-Signature: $sig" -d "$body"
}

dpkg -i "$deb" >/dev/null
write_cfg "$secret_a" ""
systemctl start paycallback        # Type=notify: returns once READY=1 arrived
check "not active after start" [ "$(prop ActiveState)" = active ]
check "no listening status" grep -q '^listening on 127.0.0.1:18080' <<<"$(prop StatusText)"
check "secret A refused at start" [ "$(signed "$secret_a")" = 503 ]   # signature ok, no database

write_cfg "$secret_b" "$secret_a"
systemctl reload paycallback
check "reload did not report generation 2" await_status 'reloaded (generation 2)'
check "same process after reload" [ "$(prop NRestarts)" = 0 ]
check "secret B refused after reload" [ "$(signed "$secret_b")" = 503 ]
check "previous secret A refused after reload" [ "$(signed "$secret_a")" = 503 ]
check "an unknown secret accepted" [ "$(signed wrong-secret-0123456789)" = 401 ]
check "reloads_total ok is not 1" [ "$(metric 'paycallback_config_reloads_total{result="ok"}')" = 1 ]

echo '{"callbak": {}}' >"$cfg"
systemctl reload paycallback
check "refused reload not in the status" await_status 'last reload refused'
check "still active after a refused reload" [ "$(prop ActiveState)" = active ]
check "secret B lost by a refused reload" [ "$(signed "$secret_b")" = 503 ]
check "last_reload_successful is not 0" [ "$(metric paycallback_config_last_reload_successful)" = 0 ]

systemctl stop paycallback
check "not inactive after stop" [ "$(prop ActiveState)" = inactive ]
check "stop was not clean" [ "$(prop Result)/$(prop ExecMainStatus)" = success/0 ]
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
