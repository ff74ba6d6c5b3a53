#!/usr/bin/env bash
# Builds the Debian package (make deb) and checks it without installing it:
# its files (dpkg-deb -c), its metadata and maintainer scripts (dpkg-deb
# -I, -e), lintian without errors, the unit's `systemd-analyze verify`
# and its sandboxing score, and that the man pages in it match the binary
# in it. Ends with "N passed, M failed". Needs dpkg-dev, debhelper, lintian
# and systemd (scripts/deps.sh installs them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "check-deb: $*" >&2; }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok; else bad "$what"; fi; }

version=$(sed -nE '1s/^paycallback \(([^)]+)\).*/\1/p' debian/changelog)
if ! make --no-print-directory deb >build/deb.log 2>&1; then
	tail -30 build/deb.log >&2
	bad "make deb failed (build/deb.log)"
	printf '%d passed, %d failed\n' "$passed" "$failed"
	exit 1
fi
deb=build/deb/paycallback_${version}_$(dpkg --print-architecture).deb
check "no $deb" test -f "$deb"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/files"
for f in /usr/sbin/paycallback /lib/systemd/system/paycallback.service \
	/etc/paycallback/paycallback.json /usr/share/paycallback/migrations/0001_baseline.sql \
	/usr/share/paycallback/console/index.html /usr/share/paycallback/console/app.js \
	/usr/share/man/man8/paycallback.8.gz /usr/share/man/man5/paycallback.json.5.gz \
	/usr/share/doc/paycallback/copyright; do
	check "$f is not in the package" grep -qx "$f" "$tmp/files"
done
check "files outside /etc, /lib/systemd, /usr" bash -c "! grep -vE '^/(\$|etc/|lib/(\$|systemd/)|usr/)' '$tmp/files'"

dpkg-deb -e "$deb" "$tmp/control"
field() { dpkg-deb -f "$deb" "$1"; }
check "Package is not paycallback" test "$(field Package)" = paycallback
check "Version $(field Version) is not the changelog's $version" test "$(field Version)" = "$version"
check "Depends lacks adduser" grep -qw adduser <<<"$(field Depends)"
for lib in libsystemd0 libmicrohttpd12 libmariadb3 libhiredis0.14; do
	check "Depends lacks $lib (shlibs)" grep -qw "$lib" <<<"$(field Depends)"
done
check "the config is not a conffile" grep -qx /etc/paycallback/paycallback.json "$tmp/control/conffiles"
check "postinst does not create the system user" grep -q 'adduser --system' "$tmp/control/postinst"
check "postinst does not enable the unit" grep -q 'deb-systemd-helper' "$tmp/control/postinst"

dpkg-deb -x "$deb" "$tmp/root"
check "the packaged binary does not run" "$tmp/root/usr/sbin/paycallback" --version
check "the binary's version is not the package's" \
	grep -q "^paycallback ${version%%-*} " <<<"$("$tmp/root/usr/sbin/paycallback" --version)"
scripts/gen-man.py "$tmp/root/usr/sbin/paycallback" "$tmp/man" >/dev/null
for page in man8/paycallback.8 man5/paycallback.json.5; do
	check "$page differs from the binary's --help" \
		cmp -s <(gzip -dc "$tmp/root/usr/share/man/$page.gz") "$tmp/man/${page#*/}"
done
check "the system config does not serve the packaged console" \
	grep -q '"dir": "/usr/share/paycallback/console"' "$tmp/root/etc/paycallback/paycallback.json"
check "the unit does not run ExecStart=/usr/sbin/paycallback" \
	grep -q '^ExecStart=/usr/sbin/paycallback -c /etc/paycallback/paycallback.json' \
	"$tmp/root/lib/systemd/system/paycallback.service"

lintian --fail-on error --suppress-tags package-supports-alternative-init-but-no-init.d-script \
	"$deb" >"$tmp/lintian" 2>&1 && ok || { cat "$tmp/lintian" >&2; bad "lintian reports errors"; }
echo "check-deb: lintian: $(grep -c '^E:' "$tmp/lintian" || true) errors, $(grep -c '^W:' "$tmp/lintian" || true) warnings"

unit=$tmp/root/lib/systemd/system/paycallback.service
score=$(systemd-analyze security --offline=true --root="$tmp/root" paycallback.service 2>/dev/null |
	sed -nE 's/.*Overall exposure level for paycallback.service: ([0-9.]+).*/\1/p')
echo "check-deb: systemd-analyze security --offline=true: exposure ${score:-unknown}"
check "exposure ${score:-unknown} is above 2.0" awk -v s="${score:-99}" 'BEGIN { exit !(s <= 2.0) }'
check "unit uses Type=notify" grep -qx 'Type=notify' "$unit"
check "unit reloads with SIGHUP" grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit"

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
