#!/usr/bin/env bash
# The adoption check (docs/adoption-check.md): the real openstack-placement
# 16.0.0 filled through its API, imported into ours, both servers' answers
# compared, a client's prepared writes replayed against ours.
#
#   scripts/adoption-check.sh [--backend postgresql|mariadb]... [--providers 1000]
#                             [--seed 14] [--threads 4] [--json OUT] [--keep] [--self-check]
#
# Starts the test servers it needs (scripts/pg-test-server.sh,
# scripts/mariadb-test-server.sh) and the Placement venv
# (scripts/placement-venv.sh); creates and drops its own databases
# (--db-prefix, default adopt: adopt_src, adopt_ours).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "adoption-check: run scripts/test.sh once to create .venv" >&2; exit 2; }
exec .venv/bin/python scripts/adoption_check.py "$@"
