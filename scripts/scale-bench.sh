#!/usr/bin/env bash
# The 100,000-provider benchmark (docs/performance.md): optionally loads the
# scale dataset, starts gunicorn on it, runs scripts/scale_bench.py, stops
# the server.
#
#   DATABASE_URL=postgresql://... scripts/scale-bench.sh [--load N] [-- scale_bench.py options]
#
# --load N  migrate and load N compute nodes first (manage.py load_scale; the
#           database must have no providers). 40000 gives ~100,000 providers.
# Environment: DATABASE_URL (required; PostgreSQL for the floor and the
# capacity check: `PG_TEST_PORT=25450 scripts/pg-test-server.sh` prints one),
# PORT (19050), WORKERS (2), SEED (42), GUNICORN_TIMEOUT (900 s: the unlimited
# candidate requests take seconds at this size).
cd "$(dirname "$0")/.."
source scripts/bench-common.sh
PORT="${PORT:-19050}"
bench_options "$@"
set -- "${BENCH_ARGS[@]}"
export DATABASE_URL PLACEMENT_AUTH_STRATEGY="${PLACEMENT_AUTH_STRATEGY:-noauth2}"

if [ -n "$LOAD" ]; then
    .venv/bin/python manage.py migrate --noinput -v0
    .venv/bin/python manage.py load_scale --compute-nodes "$LOAD" --seed "${SEED:-42}"
fi

LOG="${TMPDIR:-/tmp}/scale-bench-server-$PORT.log"
serve "$LOG" "$PORT" .venv/bin/python -m gunicorn placement_site.wsgi:application \
    -b "127.0.0.1:$PORT" --workers "${WORKERS:-2}" --timeout "${GUNICORN_TIMEOUT:-900}" \
    --log-level warning

.venv/bin/python scripts/scale_bench.py --url "http://127.0.0.1:$PORT" \
    --server-pid "$SERVER" --seed "${SEED:-42}" "$@"
