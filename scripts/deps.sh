#!/usr/bin/env bash
# Install the Debian packages paycallback needs to build, test and run.
# Does nothing (quickly) when they are all present.
set -euo pipefail

pkgs=(
	build-essential pkg-config
	libmicrohttpd-dev libmariadb-dev libhiredis-dev libcjson-dev libssl-dev libsystemd-dev check
	libcurl4-openssl-dev
	mariadb-server mariadb-client redis-server
	galera-4 rsync mariadb-backup haproxy socat  # deploy/: Galera nodes, state transfer, the proxy
	curl openssl python3 python3-yaml python3-cryptography procps valgrind wrk
	uuid-runtime  # uuidgen, used by the README walkthrough that make test-readme runs
	clang libfuzzer-14-dev  # make fuzz
	cppcheck clang-tidy clang-format  # make lint: the C checkers; the style file of the tree
	dpkg-dev debhelper lintian systemd  # make deb and its check; systemd-analyze rates the unit
	mmdebstrap util-linux iproute2  # make test-install: a Debian 12 root, its namespaces
	prometheus  # for promtool, which checks the /metrics format; its daemon is switched off below
	chromium  # make test-console: the console in a headless browser (puppeteer-core drives it)
)
# The OpenAPI linter (scripts/lint-openapi.sh) runs on Node.js: Debian's
# nodejs and npm, unless a node and npm are already installed otherwise.
command -v node >/dev/null || pkgs+=(nodejs)
command -v npm >/dev/null || pkgs+=(npm)

# One dpkg-query for all packages; anything not "install ok installed" is missing.
declare -A have=()
while IFS=$'\t' read -r name status; do
	[[ $status == "install ok installed" ]] && have[$name]=1
done < <(dpkg-query -W -f='${Package}\t${Status}\n' "${pkgs[@]}" 2>/dev/null || true)
missing=()
for p in "${pkgs[@]}"; do
	[[ -n ${have[$p]:-} ]] || missing+=("$p")
done
((${#missing[@]})) || exit 0

if ! command -v apt-get >/dev/null; then
	echo "deps: apt-get not found; install these by hand: ${missing[*]}" >&2
	exit 1
fi

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o Dpkg::Use-Pty=0 "${missing[@]}"; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "deps: apt-get failed" >&2
	exit 1
fi

# Only promtool is wanted from prometheus: on a systemd machine the package
# also starts a server on :9090, which nothing here needs.
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null &&
	[[ -d /run/systemd/system ]]; then
	"${sudo[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
