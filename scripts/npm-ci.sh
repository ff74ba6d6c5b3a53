#!/usr/bin/env bash
# Installs the node packages pinned in DIR/package-lock.json into
# DIR/node_modules with `npm ci`, on first use or when the lock file
# changed; quiet unless npm fails. usage: npm-ci.sh DIR
set -euo pipefail
dir=${1:?usage: npm-ci.sh DIR}
command -v npm >/dev/null || { echo "npm-ci: npm not found (scripts/deps.sh installs it)" >&2; exit 1; }
stamp=$dir/node_modules/.paycallback-lock
cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null && exit 0
echo "npm-ci: npm ci in $dir" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts) >"$log" 2>&1; then
	cat "$log" >&2
	echo "npm-ci: npm ci failed in $dir" >&2
	exit 1
fi
cp "$dir/package-lock.json" "$stamp"
