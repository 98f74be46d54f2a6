#!/usr/bin/env bash
# Server command for ../shared/compat/run.py on a database server instead of
# SQLite: for every gabbit file, a fresh database on the server that
# COMPAT_DATABASE_URL names (mysql://... or postgresql://...), then the
# harness's own project.sh. The SQLite DATABASE_URL the harness gives only
# names the file (its work directory); the database is compat_<file>,
# dropped and created again each time, so runs do not pile databases up.
#   COMPAT_DATABASE_URL=$(scripts/mariadb-test-server.sh) \
#       python3 ../shared/compat/run.py --server-cmd scripts/compat-db-server.sh
set -euo pipefail
: "${COMPAT_DATABASE_URL:?COMPAT_DATABASE_URL must name the server: mysql://... or postgresql://...}"
: "${DATABASE_URL:?DATABASE_URL must be set (the harness sets it)}"
cd "$(dirname "$0")/.."
SERVER="${COMPAT_PROJECT_SERVER:-$PWD/../shared/compat/servers/project.sh}"

# sqlite:////tmp/placement-compat-<file>-XXXXXXXX/db.sqlite3 -> compat_<file>
workdir=$(basename "$(dirname "${DATABASE_URL#sqlite://}")")
file=${workdir#placement-compat-}
file=${file%-*}
name=compat_$(printf '%s' "$file" | tr -c 'A-Za-z0-9' _ | cut -c1-50)

DATABASE_URL=$(.venv/bin/python - "$COMPAT_DATABASE_URL" "$name" <<'EOF'
import sys
from urllib.parse import unquote, urlsplit

url, name = sys.argv[1], sys.argv[2]
parts = urlsplit(url)
login = dict(host=parts.hostname or 'localhost', port=parts.port,
             user=unquote(parts.username or ''), password=unquote(parts.password or ''))
if parts.scheme.startswith(('mysql', 'mariadb')):
    import MySQLdb
    connection = MySQLdb.connect(**{k: v for k, v in login.items() if v}, charset='utf8mb4')
    cursor = connection.cursor()
    cursor.execute(f'DROP DATABASE IF EXISTS `{name}`')
    # The migrations give our tables their binary collation (docs/mariadb.md).
    cursor.execute(f'CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin')
elif parts.scheme.startswith(('postgres', 'pgsql')):
    import psycopg2
    connection = psycopg2.connect(dbname=unquote(parts.path.lstrip('/')) or 'postgres',
                                  **{k: v for k, v in login.items() if v})
    connection.autocommit = True
    cursor = connection.cursor()
    cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
    cursor.execute(f'CREATE DATABASE "{name}"')
else:
    sys.exit(f'compat-db-server: COMPAT_DATABASE_URL {url!r} is neither mysql:// nor postgresql://')
connection.close()
print(parts._replace(path='/' + name).geturl())
EOF
)
export DATABASE_URL
exec "$SERVER"
