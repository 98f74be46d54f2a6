#!/usr/bin/env bash
# One command from a fresh clone to a running service: creates the virtualenv,
# installs the pinned requirements, migrates the database (SQLite in ./data
# unless DATABASE_URL says otherwise: postgresql://... or mysql://..., see
# docs/mariadb.md) and serves on http://127.0.0.1:8000.
#   scripts/run.sh --demo   also loads a demo cloud and a staff user admin/admin
#                           for the dashboards at http://127.0.0.1:8000/ui/
# Environment: HOST (127.0.0.1), PORT (8000), WORKERS (2), DATABASE_URL, PLACEMENT_*.
# With several workers, GET /metrics adds up their request counts through
# PROMETHEUS_MULTIPROC_DIR (default <data dir>/prometheus), emptied here at start.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
# A mysql:// DATABASE_URL needs the MySQL driver (requirements-mysql.txt).
scripts/mysql-driver.sh
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py sync_standards
if [ "${1:-}" = "--demo" ]; then
    .venv/bin/python manage.py load_demo --staff-user admin --password admin
    echo "Dashboards: http://${HOST:-127.0.0.1}:${PORT:-8000}/ui/ (sign in as admin / admin)" >&2
fi
if [ "${WORKERS:-2}" -gt 1 ]; then
    export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-${PLACEMENT_DATA_DIR:-$PWD/data}/prometheus}"
    mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
    # Only prometheus-client's own files: the variable may name any directory.
    find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -type f -name '*.db' -delete
else
    unset PROMETHEUS_MULTIPROC_DIR
fi
echo "Placement API on http://${HOST:-127.0.0.1}:${PORT:-8000}/ (API docs at /api/docs/)" >&2
exec .venv/bin/python -m gunicorn placement_site.wsgi:application \
    -c python:placement_site.gunicorn_conf \
    --bind "${HOST:-127.0.0.1}:${PORT:-8000}" --workers "${WORKERS:-2}" --access-logfile -
