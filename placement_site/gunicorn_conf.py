"""gunicorn hooks for Placement: `gunicorn -c python:placement_site.gunicorn_conf
placement_site.wsgi:application ...` (scripts/serve.sh does so for both pools).

With several workers, GET /metrics adds up every worker's request counts
(both pools' behind the front) through prometheus-client's multiprocess
mode: PROMETHEUS_MULTIPROC_DIR names a directory the workers write their
counts to, empty when the server starts (serve.sh empties it). A worker
that exits leaves its counters there, so they keep counting; this hook only
retires its live gauges, as prometheus-client asks. Without the variable
the hooks do nothing.

Shutdown: on SIGTERM the master closes its listening socket and every
worker finishes the requests it holds, for up to graceful_timeout seconds,
before it is killed (docs/operations.md). A request cut short by a killed
worker was one database transaction that never committed: nothing of it is
written. Both settings can be changed with GUNICORN_CMD_ARGS
(e.g. "--graceful-timeout 60").
"""
import os

from prometheus_client import multiprocess

# Far longer than any request takes (the slowest candidate searches take
# seconds), so a request being drained is never cut off.
graceful_timeout = 30
# A worker silent this long is killed and replaced: a request stuck longer
# than any answer takes.
timeout = 60
# Behind the front (scripts/serve.sh: PLACEMENT_SERVING_POOL set), a kept-alive
# connection is nginx's, which closes an idle one after 60 s: gunicorn must
# not close it first, or a request nginx sends on it just then fails. (The
# operator pool's threads keep them; sync workers close every connection.)
keepalive = 75 if os.environ.get('PLACEMENT_SERVING_POOL') else 2


def child_exit(server, worker):
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        multiprocess.mark_process_dead(worker.pid)
