#!/usr/bin/env bash
# What the test suite needs, installed where it is missing: the virtualenv
# with the pinned requirements (requirements-dev.txt) and the service itself
# (pip install -e .), the MySQL driver for a mysql:// DATABASE_URL, Debian's
# chromium for the browser tests, Debian's rabbitmq-server for the
# notification tests, Debian's memcached for the deployment test and
# Debian's nginx for the serving tests (scripts/run.sh's front), and Debian's
# Apache with mod_wsgi and a virtualenv of Debian's python3 for the Apache
# test (.venv-apache: mod_wsgi embeds that Python). scripts/test.sh runs it first;
# CI runs it as a stage of its own, to show its time.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
# The service itself, editable: its commands (placement-manage, placement-status)
# and its WSGI script (placement-api).
[ -x .venv/bin/placement-api ] ||
    .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
# A mysql:// DATABASE_URL needs the MySQL driver (requirements-mysql.txt).
scripts/dev/mysql-driver.sh
# The UI tests drive Debian's chromium, headless.
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-setup: installing chromium (Debian package) for the browser tests" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    else
        echo "test-setup: the browser tests need chromium: sudo apt-get install chromium" >&2
    fi
fi
# The notification tests start a throw-away broker from Debian's rabbitmq-server.
if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-setup: installing rabbitmq-server (Debian package) for the notification tests" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >&2
    else
        echo "test-setup: the notification tests need rabbitmq-server: sudo apt-get install rabbitmq-server" >&2
    fi
fi
# The deployment test caches Keystone's tokens in Debian's memcached.
if [ ! -x /usr/bin/memcached ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-setup: installing memcached (Debian package) for the deployment test" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq memcached >&2
    else
        echo "test-setup: the deployment test needs memcached: sudo apt-get install memcached" >&2
    fi
fi
# The serving tests start scripts/run.sh's default set-up, nginx in front.
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-setup: installing nginx (Debian package) for the serving tests" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >&2
    else
        echo "test-setup: the serving tests need nginx: sudo apt-get install nginx" >&2
    fi
fi
# The Apache test serves as kolla does (mod_wsgi) and as devstack does
# (mod_proxy_uwsgi): Debian's apache2 and libapache2-mod-wsgi-py3, and the
# service in a virtualenv of the Python that mod_wsgi embeds (Debian's).
if [ ! -x /usr/sbin/apache2 ] || [ ! -e /usr/lib/apache2/modules/mod_wsgi.so ] ||
        ! /usr/bin/python3 -m venv --help >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-setup: installing apache2 and mod_wsgi (Debian packages) for the Apache test" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            apache2 libapache2-mod-wsgi-py3 python3-venv >&2
    else
        echo "test-setup: the Apache test needs apache2 libapache2-mod-wsgi-py3 python3-venv" >&2
    fi
fi
if [ -x /usr/bin/python3 ] && [ -e /usr/lib/apache2/modules/mod_wsgi.so ]; then
    [ -x .venv-apache/bin/python ] || /usr/bin/python3 -m venv .venv-apache
    .venv-apache/bin/pip install -q --disable-pip-version-check -r requirements.txt
    [ -x .venv-apache/bin/placement-api ] ||
        .venv-apache/bin/pip install -q --disable-pip-version-check --no-deps -e .
fi
