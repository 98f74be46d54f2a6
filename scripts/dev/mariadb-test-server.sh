#!/usr/bin/env bash
# Starts a throw-away MariaDB server for the test suite and prints its
# DATABASE_URL. Installs MariaDB from Debian's packages when it is missing.
# Usage: scripts/dev/mariadb-test-server.sh [start|stop]   (MARIADB_TEST_PORT, default 23306)
set -euo pipefail
PORT="${MARIADB_TEST_PORT:-23306}"
DIR="${MARIADB_TEST_DIR:-/tmp/placement-test-mariadb-$PORT}"

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    echo "mariadb-test-server: installing MariaDB (Debian package)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq mariadb-server >&2
fi
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
SOCKET="$DIR/mariadb.sock"

client() { mariadb --no-defaults -uroot --socket="$SOCKET" "$@"; }

if [ "${1:-start}" = stop ]; then
    if [ -f "$DIR/mariadb.pid" ]; then
        kill "$(cat "$DIR/mariadb.pid")" 2>/dev/null || true
    fi
    exit 0
fi

running() { mariadb-admin --no-defaults -uroot --socket="$SOCKET" ping >/dev/null 2>&1; }

if ! running; then
    rm -rf "$DIR"
    mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown mysql "$DIR"
    mariadb-install-db --no-defaults --datadir="$DIR/data" --user="$(id -un | sed 's/^root$/mysql/')" \
        --auth-root-authentication-method=normal >"$DIR/install.log" 2>&1
    # Durability is irrelevant for tests; speed is not. The server keeps
    # MariaDB's defaults otherwise (REPEATABLE-READ, utf8mb4_general_ci), as
    # a packaged production server has them.
    setsid "$MARIADBD" --no-defaults --datadir="$DIR/data" --socket="$SOCKET" \
        --pid-file="$DIR/mariadb.pid" --port="$PORT" --bind-address=127.0.0.1 \
        --user=mysql --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
        --innodb-doublewrite=0 --innodb-buffer-pool-size=512M --max-connections=300 \
        --character-set-server=utf8mb4 \
        --log-error="$DIR/server.log" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 60); do
        running && break
        sleep 0.5
    done
    if ! running; then
        echo "mariadb-test-server: the server on port $PORT did not start; its log:" >&2
        tail -n 20 "$DIR/server.log" >&2 || true
        exit 1
    fi
    client -e "CREATE USER IF NOT EXISTS 'placement'@'127.0.0.1' IDENTIFIED BY 'placement';
               CREATE USER IF NOT EXISTS 'placement'@'localhost' IDENTIFIED BY 'placement';
               GRANT ALL PRIVILEGES ON *.* TO 'placement'@'127.0.0.1' WITH GRANT OPTION;
               GRANT ALL PRIVILEGES ON *.* TO 'placement'@'localhost' WITH GRANT OPTION;
               CREATE DATABASE IF NOT EXISTS placement;"
fi
echo "mysql://placement:placement@127.0.0.1:$PORT/placement"
