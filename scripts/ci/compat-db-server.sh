#!/usr/bin/env bash
# Server command for ../shared/compat/run.py: for every gabbit file a fresh,
# already migrated database, then the harness's own project.sh (whose
# `migrate` then finds nothing to do). The suite starts a server per file
# (65 of them), and migrating an empty database is most of a start: our
# migrations run once per run into a template instead, and each file gets
# a copy of it.
#   COMPAT_DATABASE_URL unset: SQLite, a copy of the template file at the
#     path the harness's DATABASE_URL names;
#   COMPAT_DATABASE_URL=mysql://... or postgresql://...: the database
#     compat_<file> on that server, dropped and created again each time (so
#     runs do not pile databases up), loaded from the template's dump
#     (MariaDB) or created from the template database (PostgreSQL).
# The template is keyed by the migrations' contents, so a changed migration
# is never skipped.
#   COMPAT_DATABASE_URL=$(scripts/dev/mariadb-test-server.sh) \
#       python3 ../shared/compat/run.py --server-cmd scripts/ci/compat-db-server.sh
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL must be set (the harness sets it)}"
cd "$(dirname "$0")/../.."
SERVER="${COMPAT_PROJECT_SERVER:-$PWD/../shared/compat/servers/project.sh}"

# sqlite:////tmp/placement-compat-<file>-XXXXXXXX/db.sqlite3 -> compat_<file>;
# the harness's directory for the file, which it removes afterwards, to the server.
export COMPAT_WORKDIR=$(dirname "${DATABASE_URL#sqlite://}")
workdir=$(basename "$COMPAT_WORKDIR")
file=${workdir#placement-compat-}
file=${file%-*}
name=compat_$(printf '%s' "$file" | tr -c 'A-Za-z0-9' _ | cut -c1-50)

DATABASE_URL=$(.venv/bin/python - "${COMPAT_DATABASE_URL:-}" "$DATABASE_URL" "$name" <<'EOF'
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

server_url, harness_url, name = sys.argv[1:]
key = hashlib.sha1(b''.join(
    path.read_bytes() for path in sorted(Path('.').glob('*/migrations/*.py')))).hexdigest()[:12]
template = f'compat_template_{key}'
kept = Path(f'/tmp/placement-compat-{key}')


def migrated(url):
    subprocess.run([sys.executable, 'manage.py', 'migrate', '--noinput', '-v0'], check=True,
                   env={**os.environ, 'DATABASE_URL': url}, stdout=sys.stderr)


def once(made, make):
    """make() the template unless made(), one harness job at a time."""
    with open(f'{kept}.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made():
            make()


if not server_url:
    copy = Path(f'{kept}.sqlite3')

    def make():
        migrated(f'sqlite:///{kept}.tmp.sqlite3')
        os.replace(f'{kept}.tmp.sqlite3', copy)
    once(copy.exists, make)
    shutil.copyfile(copy, unquote(urlsplit(harness_url).path))
    print(harness_url)
    sys.exit()

parts = urlsplit(server_url)
login = dict(host=parts.hostname or 'localhost', port=parts.port,
             user=unquote(parts.username or ''), password=unquote(parts.password or ''))
named = parts._replace(path='/' + name).geturl()
if parts.scheme.startswith(('mysql', 'mariadb')):
    import MySQLdb

    def run(*statements):
        connection = MySQLdb.connect(**{k: v for k, v in login.items() if v}, charset='utf8mb4')
        for statement in statements:
            connection.cursor().execute(statement)
        connection.close()

    def fresh(db):
        # The migrations give our tables their binary collation (docs/mariadb.md).
        run(f'DROP DATABASE IF EXISTS `{db}`',
            f'CREATE DATABASE `{db}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin')

    client = [f'--host={login["host"]}', f'--port={login["port"] or 3306}',
              f'--user={login["user"]}', f'--password={login["password"]}']
    dump = Path(f'{kept}-mariadb-{login["host"]}-{login["port"]}.sql')

    def make():
        fresh(template)
        migrated(parts._replace(path='/' + template).geturl())
        with open(f'{dump}.tmp', 'w') as out:
            subprocess.run([shutil.which('mariadb-dump') or 'mysqldump', *client, template],
                           check=True, stdout=out)
        run(f'DROP DATABASE `{template}`')
        os.replace(f'{dump}.tmp', dump)
    once(dump.exists, make)
    fresh(name)
    with open(dump) as source:
        subprocess.run([shutil.which('mariadb') or 'mysql', *client, name], check=True,
                       stdin=source)
elif parts.scheme.startswith(('postgres', 'pgsql')):
    import psycopg2

    def run(*statements):
        connection = psycopg2.connect(dbname=unquote(parts.path.lstrip('/')) or 'postgres',
                                      **{k: v for k, v in login.items() if v})
        connection.autocommit = True
        for statement in statements:
            connection.cursor().execute(statement)
        connection.close()

    def exists(db):
        connection = psycopg2.connect(dbname=unquote(parts.path.lstrip('/')) or 'postgres',
                                      **{k: v for k, v in login.items() if v})
        cursor = connection.cursor()
        cursor.execute('SELECT 1 FROM pg_database WHERE datname = %s', [db])
        found = cursor.fetchone() is not None
        connection.close()
        return found

    def make():
        run(f'DROP DATABASE IF EXISTS "{template}_tmp"', f'CREATE DATABASE "{template}_tmp"')
        migrated(parts._replace(path=f'/{template}_tmp').geturl())
        run(f'ALTER DATABASE "{template}_tmp" RENAME TO "{template}"')
    # Renamed into place once migrated: a failed migration leaves no template.
    once(lambda: exists(template), make)
    # Copying a template needs it unused: one copy at a time.
    with open(f'{kept}.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run(f'DROP DATABASE IF EXISTS "{name}"',
            f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
else:
    sys.exit(f'compat-db-server: COMPAT_DATABASE_URL {server_url!r} is neither '
             'mysql:// nor postgresql://')
print(named)
EOF
)
export DATABASE_URL
exec "$SERVER"
