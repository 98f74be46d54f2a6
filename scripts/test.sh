#!/usr/bin/env bash
# One command from a fresh clone to a passing test suite: creates the
# virtualenv, installs the pinned requirements and runs pytest. The suite runs
# on SQLite; with DATABASE_URL=postgresql://... it runs on PostgreSQL
# (scripts/dev/pg-test-server.sh starts a throw-away server and prints the URL),
# with DATABASE_URL=mysql://... on MariaDB or MySQL (scripts/dev/mariadb-test-server.sh).
# Extra arguments go to pytest: `-m "not slow"` is the fast loop, `-n 0` runs
# in one process (for -s, pdb), `-m "not any_database"` what CI runs on the
# database servers (README, "Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ci/test-setup.sh
# A worker per core (pytest-xdist); each module runs whole on one worker, so
# its module-scoped servers, browsers and clouds are built once.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
