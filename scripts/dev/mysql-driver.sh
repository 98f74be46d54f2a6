#!/usr/bin/env bash
# Installs the MySQL/MariaDB driver into .venv when DATABASE_URL is a mysql://
# (or mariadb://) URL, and nothing otherwise: mysqlclient
# (requirements-mysql.txt) builds against the MariaDB client headers, which
# a machine on SQLite or PostgreSQL does not need. Called by run.sh and test-setup.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${DATABASE_URL:-}" in
    mysql*|mariadb*) ;;
    *) exit 0 ;;
esac
if ! .venv/bin/python -c 'import MySQLdb' 2>/dev/null \
        && ! pkg-config --exists libmariadb 2>/dev/null && ! pkg-config --exists mysqlclient 2>/dev/null \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "mysql-driver: installing libmariadb-dev (Debian package) for the MySQL driver" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq libmariadb-dev pkg-config gcc python3-dev >&2
fi
.venv/bin/pip install -q --disable-pip-version-check -r requirements-mysql.txt
