#!/usr/bin/env bash
# One command from a fresh clone to a running service: creates the virtualenv,
# installs the pinned requirements, migrates the database (SQLite in ./data
# unless DATABASE_URL says otherwise: postgresql://... or mysql://..., see
# docs/mariadb.md) and serves on http://127.0.0.1:8000 (scripts/serve.sh,
# docs/serving.md): nginx in front, reading whole requests and buffering
# answers, the Placement API on one gunicorn pool, the dashboards, admin,
# /metrics and /capacity on another. nginx is installed from Debian's
# packages when it is missing and this runs as root; without it, one
# gunicorn serves everything, as before, with a warning.
#   scripts/run.sh --demo   also loads a demo cloud and a staff user admin/admin
#                           for the dashboards at http://127.0.0.1:8000/ui/
# Environment: HOST (127.0.0.1), PORT (8000), WORKERS (2: the API pool's),
# OPERATOR_THREADS (4: the operator pool's), FRONT (nginx; none: one gunicorn),
# DATABASE_URL, PLACEMENT_*. GET /metrics adds up the request counts of every
# worker through PROMETHEUS_MULTIPROC_DIR (default <data dir>/prometheus),
# emptied at start.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
# A mysql:// DATABASE_URL needs the MySQL driver (requirements-mysql.txt).
scripts/dev/mysql-driver.sh
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py sync_standards
if [ "${1:-}" = "--demo" ]; then
    .venv/bin/python manage.py load_demo --staff-user admin --password admin
    echo "Dashboards: http://${HOST:-127.0.0.1}:${PORT:-8000}/ui/ (sign in as admin / admin)" >&2
fi
# The front: Debian's nginx, installed where it is missing and we may.
if [ "${FRONT:-nginx}" = nginx ] && ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ] \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing nginx (Debian package) for the front" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx) >&2 \
        || echo "run.sh: nginx could not be installed" >&2
fi
exec scripts/serve.sh
