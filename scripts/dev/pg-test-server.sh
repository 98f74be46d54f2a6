#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server for the test suite and prints its
# DATABASE_URL. Installs PostgreSQL from Debian's packages when it is missing.
# Usage: scripts/dev/pg-test-server.sh [start|stop]   (PG_TEST_PORT, default 25432, below the ephemeral port range)
set -euo pipefail
PORT="${PG_TEST_PORT:-25432}"
DIR="${PG_TEST_DIR:-/tmp/placement-test-pg-$PORT}"

find_bin() {
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$bin" ] && [ -x "$bin/initdb" ] && echo "$bin"
}

BIN=$(find_bin || true)
if [ -z "$BIN" ]; then
    echo "pg-test-server: installing PostgreSQL (Debian package)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
    BIN=$(find_bin)
fi

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-start}" = stop ]; then
    [ -d "$DIR/data" ] && as_postgres "$BIN/pg_ctl" -D "$DIR/data" -m fast stop >&2 || true
    exit 0
fi

start_server() {
    rm -rf "$DIR"
    mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown postgres "$DIR"
    as_postgres "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust >/dev/null
    # Durability is irrelevant for tests; speed is not.
    as_postgres "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
        -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
        start >&2
}

if ! as_postgres "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    # A server that dies while starting says why only in its log: show it,
    # then try the next ports (one may be taken by something that is not
    # PostgreSQL, which pg_isready cannot tell from a free port).
    for attempt in 1 2 3; do
        if start_server; then break; fi
        echo "pg-test-server: the server on port $PORT did not start; its log:" >&2
        tail -n 20 "$DIR/server.log" >&2 || true
        [ "$attempt" = 3 ] && exit 1
        PORT=$((PORT + 1))
        # A directory of its own: PG_TEST_DIR may hold another port's server.
        DIR="${PG_TEST_DIR:-/tmp/placement-test-pg}-$PORT"
    done
    as_postgres "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -c \
        "CREATE ROLE placement LOGIN SUPERUSER PASSWORD 'placement'" >&2
    as_postgres "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -c \
        "CREATE DATABASE placement OWNER placement" >&2
fi
echo "postgresql://placement:placement@127.0.0.1:$PORT/placement"
