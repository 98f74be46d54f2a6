#!/usr/bin/env bash
# The soak run (docs/operations.md, "Soak runs"): the service as production
# starts it (scripts/run.sh, gunicorn) on PostgreSQL, mixed traffic at a
# steady rate, per-minute latency, errors, worker RSS and database
# connections; exits 1 when the verdict (no 5xx, flat RSS and connections)
# fails.
#
#   scripts/soak.sh [--minutes 10] [--rate 25] [--workers 4] [--providers 200] [--out DIR]
#                   [--bucket-seconds 60] [--database placement_soak] [scripts/soak.py --help]
#
# The database (--database, placement_soak) is dropped and created on the
# server DATABASE_URL names when it is a postgresql:// URL; otherwise on a
# private server started here (port SOAK_PG_PORT, 25480; data in
# /tmp/placement-soak-pg-<port>). Output: <out>/soak.md (also on stdout),
# <out>/soak.json, <out>/server.log; <out> defaults to
# test-artifacts/soak/<date-time>.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
case "${DATABASE_URL:-}" in
    postgresql://*|postgres://*) SERVER_URL="$DATABASE_URL" ;;
    *) # One directory per port: pg-test-server.sh empties the directory of a
       # server it starts, which must never be another port's running server.
       PG_PORT="${SOAK_PG_PORT:-25480}"
       SERVER_URL="$(PG_TEST_PORT="$PG_PORT" PG_TEST_DIR="/tmp/placement-soak-pg-$PG_PORT" \
                     scripts/pg-test-server.sh)" ;;
esac
exec .venv/bin/python scripts/soak.py --server-url "$SERVER_URL" "$@"
