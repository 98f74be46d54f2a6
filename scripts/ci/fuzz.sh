#!/usr/bin/env bash
# Fuzzes the API with schemathesis over its own OpenAPI document: every
# operation, at each microversion given, with the checks not_a_server_error,
# response_schema_conformance, status_code_conformance and
# content_type_conformance. Serves a throw-away SQLite database (or the
# database in FUZZ_DATABASE_URL, which it migrates and fills) with gunicorn,
# seeded with the demo cloud so that operations find real providers.
#
#   scripts/ci/fuzz.sh                      60 s at each of latest 1.0 1.20 1.38
#   scripts/ci/fuzz.sh --seconds 480 latest 1.0 1.20 1.38     the long run
#
# Exits non-zero when any run found a failure. Reports (ndjson, junit) go to
# FUZZ_REPORT_DIR (default test-artifacts/fuzz). FUZZ_PORT (18080), WORKERS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=60
if [ "${1:-}" = --seconds ]; then SECONDS_EACH="$2"; shift 2; fi
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(latest 1.0 1.20 1.38)
PORT="${FUZZ_PORT:-18080}"
REPORTS="${FUZZ_REPORT_DIR:-test-artifacts/fuzz}"

PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt

WORK=$(mktemp -d)
export DATABASE_URL="${FUZZ_DATABASE_URL:-sqlite:///$WORK/fuzz.sqlite3}"
export PLACEMENT_DATA_DIR="$WORK"
.venv/bin/python manage.py migrate --noinput >/dev/null
.venv/bin/python manage.py sync_standards >/dev/null
.venv/bin/python manage.py load_demo >/dev/null

# The service logs unexpected errors (with their tracebacks) to stderr.
.venv/bin/python -m gunicorn placement_site.wsgi:application --bind "127.0.0.1:$PORT" \
    --workers "${WORKERS:-2}" --timeout 120 >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT

mkdir -p "$REPORTS"
failed=()
for version in "${VERSIONS[@]}"; do
    echo "== schemathesis at microversion $version for ${SECONDS_EACH}s" >&2
    # The admin token with the service role too, so that the reshaper's
    # policy lets generated bodies through to validation.
    if ! .venv/bin/schemathesis run "http://127.0.0.1:$PORT/api/schema/?version=$version" \
        --url "http://127.0.0.1:$PORT" --wait-for-schema 60 \
        -H 'X-Auth-Token: admin' -H 'X-Roles: admin,service' \
        -H "OpenStack-API-Version: placement $version" \
        --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance \
        --max-time "$SECONDS_EACH" --continue-on-failure --generation-database none \
        --report junit,ndjson --report-dir "$REPORTS" \
        --report-junit-path "$REPORTS/junit-$version.xml" \
        --report-ndjson-path "$REPORTS/events-$version.ndjson"; then
        failed+=("$version")
    fi
done
if grep -q 'Traceback' "$WORK/server.log"; then
    echo "fuzz: the server logged tracebacks:" >&2
    grep -A 30 'Traceback' "$WORK/server.log" | head -n 200 >&2
    failed+=(tracebacks)
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failures at: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: no failures at ${VERSIONS[*]}" >&2
