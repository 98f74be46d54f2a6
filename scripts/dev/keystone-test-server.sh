#!/usr/bin/env bash
# Starts a throw-away OpenStack Keystone for the test suite, as the
# PostgreSQL and MariaDB helpers start theirs, and prints its URL
# (http://127.0.0.1:PORT/v3). Keystone comes from PyPI
# (requirements-keystone.txt) into a virtualenv of its own (.venv-keystone:
# its oslo libraries need not match ours), on SQLite, with fernet tokens,
# bootstrapped with an admin user (password KEYSTONE_TEST_PASSWORD, default
# "admin") holding the admin role on the admin project and on the system,
# and served by gunicorn. Its data, keys and log are in KEYSTONE_TEST_DIR.
# Usage: scripts/dev/keystone-test-server.sh [start|stop]
#   (KEYSTONE_TEST_PORT, default 25357, below the ephemeral port range)
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${KEYSTONE_TEST_PORT:-25357}"
DIR="${KEYSTONE_TEST_DIR:-/tmp/placement-test-keystone-$PORT}"
PASSWORD="${KEYSTONE_TEST_PASSWORD:-admin}"
VENV="${KEYSTONE_VENV:-$PWD/.venv-keystone}"
URL="http://127.0.0.1:$PORT/v3"

stop_server() {
    if [ -f "$DIR/gunicorn.pid" ]; then
        kill "$(cat "$DIR/gunicorn.pid")" 2>/dev/null || true
        for _ in $(seq 1 50); do
            [ -f "$DIR/gunicorn.pid" ] || break
            sleep 0.1
        done
    fi
}

if [ "${1:-start}" = stop ]; then
    stop_server
    exit 0
fi

if curl -sf -o /dev/null "$URL"; then
    echo "$URL"
    exit 0
fi

if [ ! -x "$VENV/bin/keystone-manage" ] \
        || ! cmp -s requirements-keystone.txt "$VENV/requirements-keystone.txt"; then
    echo "keystone-test-server: installing Keystone into $VENV (PyPI)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r requirements-keystone.txt >&2
    cp requirements-keystone.txt "$VENV/requirements-keystone.txt"
fi

stop_server
rm -rf "$DIR"
mkdir -p "$DIR/fernet-keys" "$DIR/credential-keys"
cat >"$DIR/keystone.conf" <<EOF
[DEFAULT]
log_file = $DIR/keystone.log
[database]
connection = sqlite:///$DIR/keystone.db
[token]
provider = fernet
expiration = ${KEYSTONE_TEST_TOKEN_SECONDS:-3600}
[fernet_tokens]
key_repository = $DIR/fernet-keys
[fernet_receipts]
key_repository = $DIR/fernet-keys
[credential]
key_repository = $DIR/credential-keys
[cache]
enabled = false
[identity]
# Test users only: bcrypt's cheapest cost keeps each password check in
# milliseconds rather than a quarter second.
password_hash_rounds = 4
EOF
export OS_KEYSTONE_CONFIG_FILES="$DIR/keystone.conf"
manage() { "$VENV/bin/keystone-manage" --config-file "$DIR/keystone.conf" "$@" >>"$DIR/manage.log" 2>&1; }
user=$(id -un) group=$(id -gn)
manage db_sync
manage fernet_setup --keystone-user "$user" --keystone-group "$group"
manage credential_setup --keystone-user "$user" --keystone-group "$group"
manage bootstrap --bootstrap-password "$PASSWORD" --bootstrap-admin-url "$URL" \
    --bootstrap-public-url "$URL" --bootstrap-internal-url "$URL" --bootstrap-region-id RegionOne

# One worker: on SQLite, two processes writing at once (a sign-in records
# the user's last_active_at while another test creates users) can refuse
# one with "database is locked" - a 500 at a sign-in, seen once in CI.
# Keystone's configuration parses the process's arguments: its WSGI
# application is loaded with gunicorn's taken away.
printf '%s\n' 'import sys' 'sys.argv = sys.argv[:1]' \
    'from keystone.wsgi.api import application  # noqa: E402,F401' >"$DIR/keystone_wsgi.py"
"$VENV/bin/gunicorn" keystone_wsgi:application --chdir "$DIR" --bind "127.0.0.1:$PORT" \
    --workers 1 --pid "$DIR/gunicorn.pid" --daemon --error-logfile "$DIR/gunicorn.log"
for _ in $(seq 1 120); do
    if curl -sf -o /dev/null "$URL"; then
        echo "$URL"
        exit 0
    fi
    sleep 0.5
done
echo "keystone-test-server: Keystone did not answer on $URL; its logs:" >&2
tail -n 30 "$DIR/gunicorn.log" "$DIR/keystone.log" "$DIR/manage.log" >&2 || true
stop_server
exit 1
