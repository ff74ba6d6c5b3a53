#!/usr/bin/env bash
# Lints docs/openapi.yaml with Redocly's CLI, pinned in
# tools/openapi-lint/package-lock.json and installed there with `npm ci` on
# first use (or when the lock file changes). The rules are
# tools/openapi-lint/redocly.yaml: every warning is an error. Needs node and
# npm (scripts/deps.sh installs Debian's when missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=tools/openapi-lint

command -v npm >/dev/null || { echo "lint-openapi: npm not found (scripts/deps.sh installs it)" >&2; exit 1; }
stamp=$dir/node_modules/.paycallback-lock
if ! cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null; then
	echo "lint-openapi: npm ci in $dir" >&2
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	if ! (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts) >"$log" 2>&1; then
		cat "$log" >&2
		echo "lint-openapi: npm ci failed" >&2
		exit 1
	fi
	cp "$dir/package-lock.json" "$stamp"
fi
# No telemetry and no update check: the linter runs offline but for npm.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	"$dir/node_modules/.bin/redocly" lint --config "$dir/redocly.yaml" --format=stylish docs/openapi.yaml
