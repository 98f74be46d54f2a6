#!/usr/bin/env bash
# The dashboards benchmark (docs/performance.md, "Dashboards at 100,000
# providers"): optionally loads the scale dataset, prepares what the pages
# show beyond it (scripts/ui_bench.py prepare: a staff user, pods, a usage
# snapshot), serves it as scripts/run.sh does (scripts/serve.sh: nginx in
# front, an API pool of WORKERS sync workers, the operator pool of one
# niced gthread process), runs the modes asked for (scripts/ui_bench.py
# says what each measures) and stops the server.
#
#   DATABASE_URL=... scripts/ui-bench.sh [--load N] [--warm] [--churn RATE]...
#       [--claims RATE]... [--out DIR] [-- ui_bench.py options for every mode]
#
# --load N       migrate and load N compute nodes first (manage.py load_scale;
#                the database must have no providers). 40000 gives ~100,000
#                providers.
# --warm         every page timed warm (ui_bench.py measure); what runs when
#                no mode is asked for.
# --churn RATE   every page's first read after a write while claims and
#                deletes land at RATE writes/s (ui_bench.py churn).
# --claims RATE  the writes' latency at RATE writes/s alone, then while an
#                admin opens a page a second (ui_bench.py claims).
# --out DIR      each mode's JSON (samples included) in DIR: measure.json,
#                churn-RATE.json, claims-RATE.json.
# --churn and --claims may be given more than once; the modes run in that
# order (warm, churns, claims) against the same server, each leaving the
# cloud its size. After `--`: ui_bench.py's options, given to every mode
# (each ignores those it does not use), e.g. issue 42's numbers:
#   scripts/ui-bench.sh --load 40000 --churn 2 --churn 10 --claims 2 \
#       --out /tmp/ui-bench -- --seconds 60 --rounds 3
# Environment: DATABASE_URL (required: postgresql://..., `PG_TEST_PORT=25450
# scripts/pg-test-server.sh` prints one, or sqlite:////abs/path), PORT
# (19060), WORKERS (2: the API pool's, as run.sh), SEED (42),
# PLACEMENT_DATA_DIR (${TMPDIR:-/tmp}/ui-bench-PORT: the pools' sockets,
# nginx's files and the metrics of this run alone), FRONT=none (one gunicorn
# of WORKERS workers, as serve.sh without nginx), and
# PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS (120 here, 10 by default: the
# benchmark times the slow reads, an export or /metrics at 40,000 nodes,
# rather than the default set-up's 503 at 10 s). Needs .venv
# (scripts/run.sh or scripts/test.sh makes it).
cd "$(dirname "$0")/.."
source scripts/bench-common.sh
PORT="${PORT:-19060}"
SEED="${SEED:-42}"
LOAD="" OUT="" WARM="" CHURN=() CLAIMS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --load) LOAD="$2"; shift 2 ;;
        --warm) WARM=1; shift ;;
        --churn) CHURN+=("$2"); shift 2 ;;
        --claims) CLAIMS+=("$2"); shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "ui-bench: unknown option $1 (ui_bench.py's go after --)" >&2; exit 2 ;;
    esac
done
[ ${#CHURN[@]} -eq 0 ] && [ ${#CLAIMS[@]} -eq 0 ] && WARM=1
case "$DATABASE_URL" in
    postgres*) VENDOR=postgresql ;;
    mysql*|mariadb*) VENDOR=mysql ;;
    *) VENDOR=sqlite ;;
esac
export DATABASE_URL
export PLACEMENT_DATA_DIR="${PLACEMENT_DATA_DIR:-${TMPDIR:-/tmp}/ui-bench-$PORT}"
export PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS="${PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS:-120}"
# Plain HTTP on loopback: the session cookie must not be HTTPS-only.
export DJANGO_SECURE_COOKIES=false
[ -n "$OUT" ] && mkdir -p "$OUT"

.venv/bin/python manage.py migrate --noinput -v0
if [ -n "$LOAD" ]; then
    .venv/bin/python manage.py load_scale --compute-nodes "$LOAD" --seed "$SEED"
fi
.venv/bin/python scripts/ui_bench.py prepare --seed "$SEED"

LOG="$PLACEMENT_DATA_DIR/serve.log"
# serve.sh keeps the metrics of every process in the data directory's own,
# not in one the caller's environment may name.
unset PROMETHEUS_MULTIPROC_DIR
serve "$LOG" "$PORT" env HOST=127.0.0.1 PORT="$PORT" WORKERS="${WORKERS:-2}" scripts/serve.sh
echo "ui-bench: serving on http://127.0.0.1:$PORT (log: $LOG)" >&2

# run MODE NAME [OPTIONS...]: one mode of ui_bench.py, its JSON as NAME.json in OUT.
run() {
    local mode=$1 name=$2
    shift 2
    echo >&2
    echo "ui-bench: $mode $*" >&2
    .venv/bin/python scripts/ui_bench.py "$mode" --url "http://127.0.0.1:$PORT" --seed "$SEED" \
        --vendor "$VENDOR" "$@" ${OUT:+--json "$OUT/$name.json"} "${BENCH_ARGS[@]}"
}
BENCH_ARGS=("$@")
if [ -n "$WARM" ]; then run measure measure; fi
for rate in "${CHURN[@]}"; do run churn "churn-$rate" --rate "$rate"; done
for rate in "${CLAIMS[@]}"; do run claims "claims-$rate" --rate "$rate"; done
