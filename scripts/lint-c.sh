#!/usr/bin/env bash
# The C of src/ through two static analysers, run by `make lint`: cppcheck
# (warning, style, performance, portability) and clang-tidy (the checks of
# .clang-tidy). Both must find nothing. The include path is the Makefile's
# LAYERS, the library flags its PKGS; the generated headers are generated
# into a temporary folder. Needs cppcheck, clang-tidy and pkg-config
# (scripts/deps.sh installs them). The C of src/, tests/, fuzz/ and bench/
# must also be as clang-format (.clang-format) writes it. Exit status 0 when
# all three are clean.
#
# Checks left out of cppcheck, and why:
#   variableScope        locals are declared at the top of a function, where
#                        the `goto out` clean-up can see them (STYLE.md 8)
#   missingIncludeSystem cppcheck need not read the system headers
# The rest are suppressed where they are wrong, inline, each with its reason.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

layers=$(sed -n 's/^LAYERS[[:space:]]*:\?=[[:space:]]*//p' Makefile)
pkgs=$(sed -n 's/^PKGS[[:space:]]*:\?=[[:space:]]*//p' Makefile)
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
printf '#define PAYCALLBACK_VERSION "lint"\n#define PAYCALLBACK_COMMIT "lint"\n' >"$gen/build_info.h"
scripts/gen-migrations.sh sql "$gen/migrations.h"

inc=(-I"$gen")
for l in $layers; do inc+=(-Iinclude/"$l"); done
# shellcheck disable=SC2086
read -r -a pkg_cflags <<<"$(pkg-config --cflags $pkgs)"
srcs=()
for l in $layers; do srcs+=(src/"$l"/*.c); done

rc=0
# The two analysers run side by side (each uses one core); cppcheck's
# findings are printed after clang-tidy's.
cppcheck --quiet --std=c11 --error-exitcode=1 --inline-suppr \
	--enable=warning,style,performance,portability \
	--suppress=variableScope --suppress=missingIncludeSystem \
	--template='{file}:{line}: {severity}: {message} [{id}]' \
	-D_DEFAULT_SOURCE "${inc[@]}" "${srcs[@]}" >"$gen/cppcheck.out" 2>&1 &
cppcheck=$!

out=$(clang-tidy --quiet "${srcs[@]}" -- -std=c11 -D_DEFAULT_SOURCE "${inc[@]}" \
	"${pkg_cflags[@]}" 2>/dev/null) || rc=1
if grep -qE '(warning|error):' <<<"$out"; then
	echo "$out"
	rc=1
fi
wait "$cppcheck" || rc=1
cat "$gen/cppcheck.out"

mapfile -t cfiles < <(find src tests fuzz bench -name '*.[ch]' | sort)
if ! fmt=$(clang-format --dry-run --Werror "${cfiles[@]}" 2>&1); then
	head -n 20 <<<"$fmt"
	echo "lint-c: not formatted as .clang-format says (clang-format -i <file>)" >&2
	rc=1
fi

((rc == 0)) && echo "lint-c: cppcheck and clang-tidy clean (${#srcs[@]} files), ${#cfiles[@]} files formatted"
exit "$rc"
