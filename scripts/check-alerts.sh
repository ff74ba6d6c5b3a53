#!/usr/bin/env bash
# Checks deploy/prometheus/alerts.yml without a Prometheus server:
# `promtool check rules`, its unit tests (`promtool test rules
# alerts_test.yml`), a unit test for every alert, and that each changed
# threshold, duration or severity in MUTATIONS makes those tests fail.
# Needs promtool (Debian package prometheus). Exit status 0 when all hold.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../deploy/prometheus"

command -v promtool >/dev/null || { echo "check-alerts: promtool not found (scripts/deps.sh installs prometheus)" >&2; exit 1; }
rc=0
promtool check rules alerts.yml >/dev/null || { promtool check rules alerts.yml; rc=1; }
promtool test rules alerts_test.yml >/dev/null || { promtool test rules alerts_test.yml; rc=1; }

n=0
while read -r name; do
	n=$((n + 1))
	grep -qx " *alertname: $name" alerts_test.yml || { echo "check-alerts: $name has no unit test" >&2; rc=1; }
done < <(sed -nE 's/^ *- alert: *([A-Za-z0-9_]+).*/\1/p' alerts.yml)
((n >= 5)) || { echo "check-alerts: only $n alerts found" >&2; rc=1; }

# Each line: the text in alerts.yml, a tab, its replacement. The unit tests
# must catch every one.
MUTATIONS=$'increase(paycallback_double_payments_total[10m]) > 0\tincrease(paycallback_double_payments_total[10m]) > 1
increase(paycallback_amount_mismatches_total[10m]) > 0\tincrease(paycallback_amount_mismatches_total[10m]) >= 2
increase(paycallback_pay_no_conflicts_total[10m]) > 0\tincrease(paycallback_pay_no_conflicts_total[1m]) > 0
paycallback_ready == 0\tpaycallback_ready < 0
> 0.05\t> 0.5
paycallback_redis_degraded == 1\tpaycallback_redis_degraded == 2
paycallback_outbox_lag_seconds > 300\tpaycallback_outbox_lag_seconds > 900
paycallback_outbox_dead > 0\tpaycallback_outbox_dead > 5
(rate(paycallback_reconcile_queries_total[15m])) > 0.5\t(rate(paycallback_reconcile_queries_total[15m])) > 0.7
increase(paycallback_shard_outbox_claim_failures_total[5m]) > 0\tincrease(paycallback_shard_outbox_claim_failures_total[5m]) > 50
paycallback_shard_reconcile_last_success_timestamp_seconds > 900\tpaycallback_shard_reconcile_last_success_timestamp_seconds > 1800
rate(paycallback_gateway_notifications_total[10m]))) > 0.5\trate(paycallback_gateway_notifications_total[10m]))) > 1
(rate(paycallback_http_requests_total{route="/pay/callback"}[10m])) > 0.5\t(rate(paycallback_http_requests_total{route="/pay/callback"}[10m])) > 1
paycallback_reconcile_wait_pay_overdue > 0\tpaycallback_reconcile_wait_pay_overdue > 5
paycallback_reconcile_refund_unsettled > 0\tpaycallback_reconcile_refund_unsettled > 1
increase(paycallback_idempotency_busy_total[15m])) > 10\tincrease(paycallback_idempotency_busy_total[15m])) > 20
rate(paycallback_http_quota_refusals_total[5m])) > 1\trate(paycallback_http_quota_refusals_total[5m])) > 5
increase(paycallback_refunds_total{state="FAILED"}[15m])) > 0\tincrease(paycallback_refunds_total{state="FAILED"}[15m])) > 1
increase(paycallback_refunds_total{state="FAILED"}[15m]))\tincrease(paycallback_refunds_total[15m]))
paycallback_refund_oldest_unrefunded_seconds > paycallback_refund_unrefunded_alert_age_seconds\tpaycallback_refund_oldest_unrefunded_seconds > 7200
increase(paycallback_refund_notifications_unsolicited_total[15m])) > 0\tincrease(paycallback_refund_notifications_unsolicited_total[15m])) > 1
increase(paycallback_open_order_cap_refusals_total[15m]) > 20\tincrease(paycallback_open_order_cap_refusals_total[15m]) > 40
severity: critical\tseverity: warning'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each mutant in a folder of its own, then the unit tests of all of them,
# one promtool per core at once.
i=0
while IFS=$'\t' read -r from to; do
	i=$((i + 1))
	mkdir "$tmp/$i"
	cp alerts_test.yml "$tmp/$i/"
	printf '%s\t%s\n' "$from" "$to" >"$tmp/$i/mutation"
	FROM=$from TO=$to python3 -c '
import os, sys
s = open("alerts.yml").read()
if os.environ["FROM"] not in s:
    sys.exit("check-alerts: alerts.yml no longer contains " + os.environ["FROM"] + ": update MUTATIONS")
open(sys.argv[1], "w").write(s.replace(os.environ["FROM"], os.environ["TO"], 1))' "$tmp/$i/alerts.yml" || { rc=1; rm -r "${tmp:?}/$i"; }
done <<<"$MUTATIONS"
# A mutant whose tests pass prints its line of MUTATIONS.
# shellcheck disable=SC2016  # $1 is the inner shell's
survived=$(find "$tmp" -name mutation -printf '%h\0' | xargs -0 -r -P "$(nproc)" -I{} \
	sh -c 'cd "$1" && if promtool test rules alerts_test.yml >/dev/null 2>&1; then cat mutation; fi' sh {})
while IFS=$'\t' read -r from to; do
	[[ -n $from ]] || continue
	echo "check-alerts: unit tests pass although '$from' became '$to'" >&2
	rc=1
done <<<"$survived"

((rc == 0)) && echo "check-alerts: $n alerts, all unit-tested; $(wc -l <<<"$MUTATIONS") mutations caught"
exit "$rc"
