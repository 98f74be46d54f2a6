#!/usr/bin/env bash
# Builds (once) a virtualenv with the real OpenStack Placement from PyPI, for
# the import and adoption tests and `python -m scripts.bench.adoption`, and
# prints its path. It lives outside the repository; nothing from it is
# copied into ours.
# Environment: PLACEMENT_VERSION (16.0.0), PLACEMENT_VENV (where it goes).
set -euo pipefail
VERSION="${PLACEMENT_VERSION:-16.0.0}"
VENV="${PLACEMENT_VENV:-$HOME/.cache/placement-adoption/venv-placement-$VERSION}"
PYTHON="${PYTHON:-python3}"

if [ ! -f "$VENV/.complete" ]; then
    mkdir -p "$(dirname "$VENV")"
    exec 9>"$VENV.lock"
    flock 9
    if [ ! -f "$VENV/.complete" ]; then
        echo "placement-venv: installing openstack-placement==$VERSION into $VENV" >&2
        rm -rf "$VENV"
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/pip" install -q --disable-pip-version-check "openstack-placement==$VERSION" \
            psycopg2-binary==2.9.13 PyMySQL==1.2.4 gunicorn==27.0.1 >&2
        "$VENV/bin/python" -c 'import placement.wsgi, psycopg2, pymysql, gunicorn' >&2
        touch "$VENV/.complete"
    fi
fi
echo "$VENV"
