#!/usr/bin/env bash
# make test-install: the Debian package, installed by following
# docs/operations.md as written, on a clean Debian 12 root.
#
# Builds the package (make deb) and a newer build of the same tree with one
# more migration, makes a Debian 12 root (the minbase root of
# scripts/debian-root.sh, shared with make test-image, and MariaDB, Redis,
# systemd and the package's dependencies from apt; cached under var/), and
# boots systemd as PID 1 of its own PID, mount, UTS, IPC, network and cgroup
# namespaces there, so MariaDB and Redis run as its system services. Then it
# runs the ```sh blocks of docs/operations.md section by section as root in
# that root and checks what each promises. Needs root, unshare, nsenter and
# mmdebstrap (apt-get install mmdebstrap); the host keeps nothing of it.
# usage: check-install.sh          Ends with "N passed, M failed".
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
[[ $EUID -eq 0 ]] || { echo "check-install: run as root" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "check-install: apt-get install mmdebstrap" >&2; exit 2; }

version=$(sed -nE '1s/^paycallback \(([^)]+)\).*/\1/p' debian/changelog)
schema=$(find sql/migrations -name '[0-9]*.sql' | wc -l)   # the release's schema version; the newer build adds one
newer=$version.1
arch=$(dpkg --print-architecture)
PACKAGES=systemd,systemd-sysv,mariadb-server,redis-server,curl,openssl,ca-certificates,adduser,procps,libmicrohttpd12,libmariadb3,libhiredis0.14,libcjson1,libssl3,libcurl4,libsystemd0
cache=$VAR/install-root/$(printf '%s' "$PACKAGES" | sha256sum | cut -c1-16).tar
tmp=$(mktemp -d /tmp/pcb-install.XXXXXX)
cg=
pid=
passed=0 failed=0
check() {
	local what=$1; shift
	if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "check-install: FAILED: $what" >&2; fi
}
cleanup() {
	if [[ -n ${PCB_INSTALL_KEEP:-} ]]; then
		echo "check-install: kept: systemd pid $pid, root $tmp/root, cgroup $cg" >&2
		return 0
	fi
	if [[ -n $pid ]]; then
		kill -9 "$pid" 2>/dev/null || true      # PID 1 of the namespace: every process in it goes
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	if [[ -n $cg ]]; then
		for h in systemd unified; do
			[[ -d /sys/fs/cgroup/$h/$cg ]] && find "/sys/fs/cgroup/$h/$cg" -depth -type d -exec rmdir {} + 2>/dev/null
		done
	fi
	rm -rf "$tmp"
	return 0
}
trap cleanup EXIT

# --- the two packages --------------------------------------------------------
# PCB_INSTALL_KEEP=1 leaves the root and its systemd running for a look
# (nsenter -t PID -a); PCB_INSTALL_DEBS=DIR takes old.deb and newer.deb
# from DIR instead of building them; PCB_INSTALL_OLD_DEB=FILE takes the
# release's package as FILE (.ci/run: the one make test-deb has just built
# from this tree) and builds only the newer one.
if [[ -n ${PCB_INSTALL_DEBS:-} ]]; then
	cp "$PCB_INSTALL_DEBS/old.deb" "$PCB_INSTALL_DEBS/newer.deb" "$tmp/"
else
if [[ -n ${PCB_INSTALL_OLD_DEB:-} ]]; then
	echo "check-install: $version is $PCB_INSTALL_OLD_DEB; building $newer"
	cp "$PCB_INSTALL_OLD_DEB" "$tmp/old.deb"
else
	echo "check-install: building $version and $newer"
	make --no-print-directory deb >"$tmp/deb.log" 2>&1 || { tail -20 "$tmp/deb.log"; exit 1; }
	cp "build/deb/paycallback_${version}_$arch.deb" "$tmp/old.deb"
fi
# The newer build starts from the release's package build (build/pkg, with
# the tree's times kept): only what the version, the commit and the added
# migration change is compiled again.
mkdir "$tmp/src"
git ls-files -co --exclude-standard -z | xargs -0 cp -p --parents -t "$tmp/src"
noclean=
if [[ -d build/pkg ]]; then
	mkdir -p "$tmp/src/build"
	cp -a build/pkg "$tmp/src/build/"
	noclean=--no-pre-clean
fi
(
	cd "$tmp/src"
	n=$(find sql/migrations -name '[0-9]*.sql' | wc -l)
	printf -- '-- A later release'"'"'s migration, for the upgrade check.\nCREATE TABLE IF NOT EXISTS install_check (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB;\n' \
		>"sql/migrations/$(printf %04d $((n + 1)))_install_check.sql"
	{
		printf 'paycallback (%s) unstable; urgency=medium\n\n  * Upgrade check build.\n\n -- paycallback maintainers <maintainers@paycallback.invalid>  %s\n\n' \
			"$newer" "$(date -R)"
		cat debian/changelog
	} >debian/changelog.new && mv debian/changelog.new debian/changelog
	make --no-print-directory deb VERSION="$newer" COMMIT=upgrade-check DPKG_BUILDPACKAGE_FLAGS="$noclean" \
		>"$tmp/deb-newer.log" 2>&1
) || { tail -20 "$tmp/deb-newer.log"; exit 1; }
cp "$tmp/src/build/deb/paycallback_${newer}_$arch.deb" "$tmp/newer.deb"
fi

# --- the clean root ------------------------------------------------------------
# The minbase root of scripts/debian-root.sh (shared with make test-image)
# with $PACKAGES installed by apt, as mmdebstrap --include installs them: no
# recommends, no service started meanwhile (policy-rc.d), apt lists kept.
root=$tmp/root
mkdir "$root"
if [[ -s $cache ]]; then
	tar --numeric-owner -xf "$cache" -C "$root"
else
	echo "check-install: Debian 12 with ${PACKAGES//,/ } (once; cached in $cache)"
	base=$(scripts/debian-root.sh)
	tar --numeric-owner -xf "$base" -C "$root"
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	unshare --mount --propagation private --fork env R="$root" P="${PACKAGES//,/ }" bash -c '
		set -e
		mount --rbind /dev "$R/dev"
		mount -t proc proc "$R/proc"
		mount -t sysfs sysfs "$R/sys"
		cp /etc/resolv.conf "$R/etc/resolv.conf"
		exec chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
			sh -c "apt-get update && apt-get install -y --no-install-recommends $P && apt-get clean"
	' >"$tmp/apt.log" 2>&1 || { tail -20 "$tmp/apt.log"; exit 1; }
	rm "$root/usr/sbin/policy-rc.d"
	mkdir -p "$(dirname "$cache")"
	tar --numeric-owner -C "$root" -cf "${cache%.tar}.part.tar" .
	mv "${cache%.tar}.part.tar" "$cache"
fi
mkdir -p "$root/root/pkg"

# --- systemd as PID 1 of its own namespaces ------------------------------------
cg=pcb-install-$$
for h in systemd unified; do mkdir -p "/sys/fs/cgroup/$h/$cg"; done
(
	for h in systemd unified; do echo "$BASHPID" >"/sys/fs/cgroup/$h/$cg/cgroup.procs"; done
	exec unshare --pid --fork --mount --uts --ipc --net --cgroup --propagation private \
		env R="$root" bash -c '
		set -e
		ip link set lo up
		mount --bind "$R" "$R"
		mount -t proc proc "$R/proc"
		mount -t sysfs -o ro sysfs "$R/sys"
		mount -t tmpfs -o mode=755 tmpfs "$R/sys/fs/cgroup"
		mkdir "$R/sys/fs/cgroup/systemd" "$R/sys/fs/cgroup/unified"
		mount -t cgroup -o none,name=systemd cgroup "$R/sys/fs/cgroup/systemd"
		mount -t cgroup2 cgroup2 "$R/sys/fs/cgroup/unified"
		mount -t tmpfs -o mode=755 tmpfs "$R/dev"
		for d in null zero full random urandom tty; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
		mkdir "$R/dev/pts" "$R/dev/shm"
		mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
		ln -s pts/ptmx "$R/dev/ptmx"
		mount -t tmpfs tmpfs "$R/run"
		mount -t tmpfs tmpfs "$R/tmp"
		hostname pcb-install
		# pivot_root, not chroot: a chrooted process may not create user
		# namespaces, and the units sandboxed with PrivateUsers= need them.
		mkdir -p "$R/.oldroot"
		cd "$R"
		pivot_root . .oldroot
		/.oldroot/usr/bin/umount -l /.oldroot
		exec /usr/bin/env -i container=pcb-install /lib/systemd/systemd --system
	' >"$tmp/boot.log" 2>&1
) &
outer=$!
for _ in $(seq 100); do pid=$(pgrep -P "$outer" -x systemd || true); [[ -n $pid ]] && break; sleep 0.1; done
[[ -n $pid ]] || { cat "$tmp/boot.log"; echo "check-install: systemd did not start" >&2; exit 1; }
inside() { nsenter -t "$pid" -m -u -i -n -p -r -w /usr/bin/env -i HOME=/root \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
for _ in $(seq 300); do
	state=$(inside systemctl is-system-running 2>/dev/null || true)
	[[ $state == running || $state == degraded ]] && break
	sleep 0.2
done
check "systemd did not come up in the root (state ${state:-none})" test "$state" = running -o "$state" = degraded
check "mariadb is not an active system service" inside systemctl is-active --quiet mariadb
check "redis-server is not an active system service" inside systemctl is-active --quiet redis-server

# --- the doc, as written -----------------------------------------------------
# The ```sh blocks of docs/operations.md from the heading matching $1 to the
# next heading of the same or a higher level, in order.
blocks() {
	FROM=$1 awk '
		/^#+ / { lvl = index($0, " ") - 1
		         if (on && lvl <= level) on = 0
		         if ($0 ~ ENVIRON["FROM"]) { on = 1; level = lvl; next } }
		on && /^```sh$/ { code = 1; next }
		code && /^```$/ { code = 0; next }
		on && code' docs/operations.md
}
run_doc() {  # run_doc NAME HEADING...: those sections' blocks as one script, log in $tmp/NAME.out
	local name=$1 h; shift
	: >"$root/root/$name.sh"
	echo 'set -euxo pipefail; cd /root/pkg' >>"$root/root/$name.sh"
	for h in "$@"; do blocks "$h" >>"$root/root/$name.sh"; done
	(($(wc -l <"$root/root/$name.sh") > 1)) || { echo "check-install: no blocks under $*" >&2; return 1; }
	inside bash "/root/$name.sh" >"$tmp/$name.out" 2>&1 || { tail -30 "$tmp/$name.out" >&2; return 1; }
}
prop() { inside systemctl show paycallback -p "$1" --value; }
quiet() { "$@" >/dev/null 2>&1; }
fails() { ! "$@" >/dev/null 2>&1; }

cp "$tmp/old.deb" "$root/root/pkg/paycallback_${version}_$arch.deb"
t0=$SECONDS
check "1. the package: its block failed" run_doc package '^### 1\. The package'
check "installing started the service" test "$(prop ActiveState)" = inactive
check "the unit is not enabled for boot" inside systemctl is-enabled --quiet paycallback
check "a start on the placeholders succeeded" fails inside systemctl start paycallback
sleep 3                                   # RestartSec=2s: a restart loop would have begun
check "exit 2 is not final (restarts: $(prop NRestarts))" test "$(prop NRestarts)/$(prop ExecMainStatus)" = 0/2
journal() { inside journalctl -u paycallback --no-pager | grep -q "$1"; }
check "the journal does not name the placeholder" journal 'placeholder CHANGE-ME'
inside systemctl reset-failed paycallback 2>/dev/null || true

secret_run() { # the configuration and the first callback share the shell: $secret
	run_doc first '^### 2\. The database and the configuration' '^### 3\. A first signed callback'
}
check "2-3. setup and first callback: their blocks failed" secret_run
check "the first callback is not PAID" grep -q '"result":"PAID"' "$tmp/first.out"
check "the service is not active" test "$(prop ActiveState)" = active
check "the database is not at schema version $schema" test "$(inside mariadb -N paycallback -e 'SELECT MAX(version) FROM schema_migrations')" = "$schema"
echo "check-install: installed to a PAID callback in $((SECONDS - t0)) s"
check "setup is not re-runnable" quiet inside paycallback-setup-db

old_pid=$(prop MainPID)
rm "$root/root/pkg/"*.deb
cp "$tmp/newer.deb" "$root/root/pkg/paycallback_${newer}_$arch.deb"
check "upgrade: its block failed" run_doc upgrade '^## Upgrade'
installed() { inside paycallback --version | grep -q " $1 "; }
check "the upgrade did not install $newer" installed "$newer"
check "the database is not at schema version $((schema + 1))" test "$(inside mariadb -N paycallback -e 'SELECT MAX(version) FROM schema_migrations')" = $((schema + 1))
check "the payment was lost in the upgrade" test "$(inside mariadb -N paycallback -e "SELECT status FROM orders WHERE order_no = 'FIRST-1'")" = 2
check "the restart did not restart" test "$(prop MainPID)" != "$old_pid"
check "the upgraded service is not active" test "$(prop ActiveState)" = active

check "remove: its block failed" run_doc remove '^## Remove'
check "the package is still installed" fails inside dpkg -s paycallback
check "the service still runs" fails inside pgrep -x paycallback
check "the unit is still there" fails inside test -e /lib/systemd/system/paycallback.service
check "the system user is still there" fails inside getent passwd paycallback
check "the purge dropped the database" test "$(inside mariadb -N paycallback -e "SELECT COUNT(*) FROM orders")" = 1

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
