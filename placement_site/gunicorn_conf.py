"""gunicorn hooks for Placement: `gunicorn -c python:placement_site.gunicorn_conf
placement_site.wsgi:application ...` (scripts/run.sh does so).

With several workers, GET /metrics adds up every worker's request counts
through prometheus-client's multiprocess mode: PROMETHEUS_MULTIPROC_DIR
names a directory the workers write their counts to, empty when the server
starts (run.sh empties it). A worker that exits leaves its counters there,
so they keep counting; this hook only retires its live gauges, as
prometheus-client asks. Without the variable the hooks do nothing.
"""
import os

from prometheus_client import multiprocess


def child_exit(server, worker):
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        multiprocess.mark_process_dead(worker.pid)
