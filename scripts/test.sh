#!/usr/bin/env bash
# One command from a fresh clone to a passing test suite: creates the
# virtualenv, installs the pinned requirements and runs pytest. The suite runs
# on SQLite; with DATABASE_URL=postgresql://... it runs on PostgreSQL
# (scripts/pg-test-server.sh starts a throw-away server and prints the URL).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
exec .venv/bin/python -m pytest "$@"
