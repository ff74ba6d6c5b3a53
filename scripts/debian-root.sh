#!/usr/bin/env bash
# The clean Debian 12 root that make test-install and make test-image start
# from: `mmdebstrap --variant=minbase bookworm` with its apt lists kept, as
# a tarball made once per tree (var/debian-root/, made again when missing),
# so a CI run bootstraps Debian once instead of once per root. Each check
# unpacks it (--numeric-owner) into a folder of its own and adds its
# packages with apt there; the image check removes the apt lists first, as
# they are not in a fresh minbase root.
# Needs root and mmdebstrap. Prints the tarball's path.
# usage: debian-root.sh
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
[[ $EUID -eq 0 ]] || { echo "debian-root: run as root" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "debian-root: apt-get install mmdebstrap" >&2; exit 2; }

tar=$VAR/debian-root/bookworm-minbase.tar
mkdir -p "${tar%/*}"
# One maker at a time: a second caller (.ci/run starts one early, in the
# background) waits for the first and takes its tarball.
exec 9>"${tar%/*}/lock"
flock 9
if [[ ! -s $tar ]]; then
	echo "debian-root: mmdebstrap --variant=minbase bookworm (once; cached in $tar)" >&2
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	mmdebstrap --variant=minbase --skip=cleanup/apt/lists bookworm "${tar%.tar}.part.tar" >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; echo "debian-root: mmdebstrap failed" >&2; exit 1; }
	mv "${tar%.tar}.part.tar" "$tar"
fi
echo "$tar"
