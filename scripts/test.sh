#!/usr/bin/env bash
# One command from a fresh clone to a passing test suite: creates the
# virtualenv, installs the pinned requirements and runs pytest. The suite runs
# on SQLite; with DATABASE_URL=postgresql://... it runs on PostgreSQL
# (scripts/pg-test-server.sh starts a throw-away server and prints the URL),
# with DATABASE_URL=mysql://... on MariaDB or MySQL (scripts/mariadb-test-server.sh).
# Extra arguments go to pytest: `-m "not slow"` is the fast loop, `-n 0` runs
# in one process (for -s, pdb), `-m "not any_database"` what CI runs on the
# database servers (README, "Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
# A mysql:// DATABASE_URL needs the MySQL driver (requirements-mysql.txt).
scripts/mysql-driver.sh
# The UI tests drive Debian's chromium, headless.
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: installing chromium (Debian package) for the browser tests" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    else
        echo "test.sh: the browser tests need chromium: sudo apt-get install chromium" >&2
    fi
fi
# The notification tests start a throw-away broker from Debian's rabbitmq-server.
if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: installing rabbitmq-server (Debian package) for the notification tests" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >&2
    else
        echo "test.sh: the notification tests need rabbitmq-server: sudo apt-get install rabbitmq-server" >&2
    fi
fi
# A worker per core (pytest-xdist); each module runs whole on one worker, so
# its module-scoped servers, browsers and clouds are built once.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
