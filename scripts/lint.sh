#!/usr/bin/env bash
# Static checks of what surrounds the code, run by `make lint` and CI:
# Dockerfile and docker-compose.yml (with every broken copy of MUTATIONS
# caught), and docs/openapi.yaml against the route table. Needs only
# python3 and python3-yaml. Exit status 0 when every check passes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rc=0
python3 scripts/check-compose.py --self-test || rc=1
python3 scripts/check-openapi.py || rc=1
((rc == 0)) && echo "lint: ok" || echo "lint: FAILED" >&2
exit "$rc"
