#!/usr/bin/env bash
# Static checks, run by `make lint` and CI: the include graph of src/
# against the layer order of the Makefile (scripts/check-layers.py), the
# C of src/ through cppcheck and clang-tidy (scripts/lint-c.sh), the
# Dockerfile and docker-compose.yml (with every broken copy of MUTATIONS
# caught), docs/openapi.yaml against the route table and through Redocly's
# linter (scripts/lint-openapi.sh, node and npm), the Prometheus alert
# rules with their promtool unit tests, HAProxy's JSON error answers
# with the configuration that uses them (haproxy -c), and
# docs/configuration.md against the key table of the built binary, and
# the README and docs/ against the tree: links, anchors, the Layout
# (scripts/check-docs.py), and docs/layout.md against every source file
# (scripts/gen-layout.py). Needs python3,
# python3-yaml, cppcheck, clang-tidy, promtool and haproxy. Exit status 0
# when every check passes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rc=0
python3 scripts/check-layers.py --self-test || rc=1
scripts/lint-c.sh || rc=1
python3 scripts/check-compose.py --self-test || rc=1
python3 scripts/check-openapi.py || rc=1
scripts/lint-openapi.sh || rc=1
scripts/check-alerts.sh || rc=1
python3 scripts/check-metric-names.py --self-test || rc=1
python3 scripts/check-errorfiles.py --self-test || rc=1
python3 scripts/check-docs.py --self-test || rc=1
python3 scripts/gen-layout.py --check || rc=1   # docs/layout.md names every source file
# docs/configuration.md is generated from the binary's key table.
if make --no-print-directory -s -j"$(nproc)" all >/dev/null; then
	python3 scripts/gen-config-doc.py build/paycallback docs/configuration.md --check || rc=1
else
	echo "lint: the binary does not build, docs/configuration.md not checked" >&2; rc=1
fi
((rc == 0)) && echo "lint: ok" || echo "lint: FAILED" >&2
exit "$rc"
