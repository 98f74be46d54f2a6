#!/usr/bin/env bash
# Serves Placement as scripts/run.sh's default set-up does, once run.sh has
# made the virtualenv and migrated the database (docs/serving.md):
#   nginx on HOST:PORT (127.0.0.1:8000) reads whole requests (headers, then
#     body, 10 s each) and buffers answers, so slow clients hold a connection
#     there, never a worker, and sends each path to one of two pools;
#   the API pool: gunicorn sync workers (WORKERS, 2) for the Placement API
#     that nova, neutron and the CLI call;
#   the operator pool: one gunicorn process with OPERATOR_THREADS (4) threads
#     under nice 10, for the dashboards, admin, API docs, /metrics, /capacity
#     and explain (one process: its threads share what it remembers).
# The pools listen on Unix sockets in <data dir>/run, where nginx's
# configuration, pid and temporary files go too. SIGTERM or SIGINT stops
# nginx (it finishes the requests under way), then the pools (gunicorn's
# graceful drain); when any of the three exits, the others are stopped.
# FRONT=none, or no nginx to be found (NGINX names its binary), serves from
# one gunicorn on HOST:PORT as before, with a warning saying what that loses.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
WORKERS="${WORKERS:-2}"
OPERATOR_THREADS="${OPERATOR_THREADS:-4}"
DATA_DIR="$(realpath -m "${PLACEMENT_DATA_DIR:-$PWD/data}")"
PYTHON=.venv/bin/python
GUNICORN=("$PYTHON" -m gunicorn placement_site.wsgi:application -c python:placement_site.gunicorn_conf)

# Debian's is in /usr/sbin, which a user's PATH may leave out.
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
if [ "${FRONT:-nginx}" != none ] && [ ! -x "$NGINX" ]; then
    echo "serve: WARNING: nginx is not installed (apt-get install nginx), so one gunicorn serves" \
         "everything on $HOST:$PORT, without a front. Lost: a client sending its request slowly" \
         "holds a worker (a few can stop the service), and the dashboards, exports, /metrics and" \
         "/capacity share the workers of the Placement API the scheduler calls." >&2
    FRONT=none
fi

# prometheus-client's multiprocess mode adds up the request counts of every
# process (both pools' workers) for GET /metrics: an empty directory at start.
multiprocess_metrics() {
    export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$DATA_DIR/prometheus}"
    mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
    # Only prometheus-client's own files: the variable may name any directory.
    find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -type f -name '*.db' -delete
}

if [ "${FRONT:-nginx}" = none ]; then
    if [ "$WORKERS" -gt 1 ]; then multiprocess_metrics; else unset PROMETHEUS_MULTIPROC_DIR; fi
    echo "Placement API on http://$HOST:$PORT/ (API docs at /api/docs/)" >&2
    exec "${GUNICORN[@]}" --bind "$HOST:$PORT" --workers "$WORKERS" --access-logfile -
fi

RUN="$DATA_DIR/run"
mkdir -p "$RUN"
# The sockets' directory is its owner's alone: the app takes X-Real-IP from
# whoever connects there as the client's address.
chmod 700 "$RUN"
# One set-up per data directory: a second would take over the first one's
# sockets. The servers inherit the lock, so it lasts as long as any of them.
exec 9>"$RUN/serve.lock"
if ! flock -n 9; then
    echo "serve: a set-up is already serving from $DATA_DIR (its $RUN/serve.lock is held)" >&2
    exit 1
fi
multiprocess_metrics
"$PYTHON" -m placement_site.serving nginx-conf --run-dir "$RUN" --listen "$HOST:$PORT" \
    --max-body-size "${PLACEMENT_MAX_BODY_SIZE:-8388608}" >"$RUN/nginx.conf"
# gunicorn sees only nginx: its access log shows the client nginx saw, and
# which process (so which pool) answered.
ACCESS_FORMAT='%({x-real-ip}i)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(p)s'

API="" OPERATOR="" FRONT_PID=""
stop() {
    trap '' TERM INT
    if [ -n "$FRONT_PID" ]; then
        kill -QUIT "$FRONT_PID" 2>/dev/null || true   # nginx's graceful stop
        wait "$FRONT_PID" 2>/dev/null || true
    fi
    local pools=($API $OPERATOR)
    if [ ${#pools[@]} -gt 0 ]; then
        kill -TERM "${pools[@]}" 2>/dev/null || true  # gunicorn's graceful stop
        wait "${pools[@]}" 2>/dev/null || true
    fi
}
trap 'stop; exit 143' TERM
trap 'stop; exit 130' INT

# Waited for in the background, so that a signal is not held up meanwhile.
wait_for() {
    "$PYTHON" -m placement_site.serving wait --seconds 120 "$@" &
    wait $!
}

# A pool: its name, then its command (gunicorn's arguments last). Each has a
# socket and gunicorn's control socket of its own in the run directory.
start_pool() {
    local name=$1
    shift
    (PLACEMENT_SERVING_POOL=$name PLACEMENT_TRUSTED_PROXIES=unix exec "$@" \
        --bind "unix:$RUN/$name.sock" --control-socket "$RUN/$name.ctl" \
        --access-logfile - --access-logformat "$ACCESS_FORMAT") &
}
start_pool api "${GUNICORN[@]}" --workers "$WORKERS"
API=$!
# The scheduler's work comes first on the CPU.
start_pool operator nice -n 10 "${GUNICORN[@]}" --workers 1 --worker-class gthread \
    --threads "$OPERATOR_THREADS"
OPERATOR=$!
if ! wait_for --pids "$API" "$OPERATOR" -- "unix:$RUN/api.sock" "unix:$RUN/operator.sock"; then
    stop
    exit 1
fi

"$NGINX" -p "$RUN" -c "$RUN/nginx.conf" -e stderr &
FRONT_PID=$!
if ! wait_for --pids "$FRONT_PID" -- "http://$HOST:$PORT"; then
    stop
    exit 1
fi
echo "Placement API on http://$HOST:$PORT/ (API docs at /api/docs/): nginx in front," \
     "API pool of $WORKERS workers, operator pool of $OPERATOR_THREADS threads" >&2

status=0
wait -n "$API" "$OPERATOR" "$FRONT_PID" || status=$?
echo "serve: a server exited (status $status); stopping the others" >&2
stop
exit "$status"
