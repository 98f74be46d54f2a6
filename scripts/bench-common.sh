# Sourced by the benchmark scripts (scale-bench.sh, ui-bench.sh), from the
# repository's root: strict mode, DATABASE_URL required, scale-bench.sh's
# --load option (ui-bench.sh has more and parses its own), and the server
# under test started in the background, waited for and stopped when the
# script exits.
set -euo pipefail
: "${DATABASE_URL:?set DATABASE_URL}"

# bench_options "$@": LOAD (the N of --load N, else empty) and BENCH_ARGS
# (what follows `--`: the measuring script's own options).
bench_options() {
    LOAD=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --load) LOAD="$2"; shift 2 ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    BENCH_ARGS=("$@")
}

# serve LOG PORT COMMAND...: runs COMMAND in the background (its output to
# LOG), stops it on exit, and returns once http://127.0.0.1:PORT/ answers
# (SERVER is its pid); a server that dies first fails the script with its log.
serve() {
    local log=$1 port=$2
    shift 2
    "$@" >"$log" 2>&1 &
    SERVER=$!
    trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true' EXIT
    for _ in $(seq 1 120); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/" && return 0
        kill -0 "$SERVER" 2>/dev/null || { cat "$log" >&2; exit 1; }
        sleep 0.5
    done
}
