#!/usr/bin/env bash
# The dashboards benchmark (docs/performance.md, "Dashboards at 100,000
# providers"): optionally loads the scale dataset, prepares what the pages
# show beyond it (scripts/ui_bench.py prepare: a staff user, pods, a usage
# snapshot), serves it as scripts/run.sh does with one gunicorn worker, times
# every page (scripts/ui_bench.py measure) and stops the server.
#
#   DATABASE_URL=... scripts/ui-bench.sh [--load N] [-- ui_bench.py measure options]
#
# --load N  migrate and load N compute nodes first (manage.py load_scale; the
#           database must have no providers). 40000 gives ~100,000 providers.
# Environment: DATABASE_URL (required: postgresql://..., `PG_TEST_PORT=25450
# scripts/pg-test-server.sh` prints one, or sqlite:////abs/path), PORT
# (19060), SEED (42). Needs .venv (scripts/run.sh or scripts/test.sh makes it).
cd "$(dirname "$0")/.."
source scripts/bench-common.sh
PORT="${PORT:-19060}"
bench_options "$@"
set -- "${BENCH_ARGS[@]}"
case "$DATABASE_URL" in
    postgres*) VENDOR=postgresql ;;
    mysql*|mariadb*) VENDOR=mysql ;;
    *) VENDOR=sqlite ;;
esac
export DATABASE_URL

.venv/bin/python manage.py migrate --noinput -v0
if [ -n "$LOAD" ]; then
    .venv/bin/python manage.py load_scale --compute-nodes "$LOAD" --seed "${SEED:-42}"
fi
.venv/bin/python scripts/ui_bench.py prepare --seed "${SEED:-42}"

LOG="${TMPDIR:-/tmp}/ui-bench-server-$PORT.log"
unset PROMETHEUS_MULTIPROC_DIR  # one worker, as run.sh with WORKERS=1
# Plain HTTP on loopback: the session cookie must not be HTTPS-only.
DJANGO_SECURE_COOKIES=false serve "$LOG" "$PORT" \
    .venv/bin/python -m gunicorn placement_site.wsgi:application \
    -c python:placement_site.gunicorn_conf --bind "127.0.0.1:$PORT" --workers 1 --timeout 900

.venv/bin/python scripts/ui_bench.py measure --url "http://127.0.0.1:$PORT" \
    --seed "${SEED:-42}" --vendor "$VENDOR" "$@"
