"""The soak run, short: `python -m scripts.bench.soak` for 30 seconds in
10-second buckets against the suite's PostgreSQL server (in a database of
its own), with the service started by scripts/run.sh as in production.
Every bucket has its traffic and its readings, no answer is a 5xx or
unexpected, and the workers hold no more database connections than they
have threads. The 10-minute and one-hour runs are in docs/operations.md."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATABASE_URL = os.environ.get('DATABASE_URL', '')
WORKERS = 2
BUCKETS = 3

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not DATABASE_URL.startswith('postgresql://'),
                                 reason='the soak run needs PostgreSQL (DATABASE_URL)')]


@pytest.fixture(scope='module')
def soak(tmp_path_factory):
    out = tmp_path_factory.mktemp('soak')
    run = subprocess.run(
        [sys.executable, '-m', 'scripts.bench.soak', '--minutes', '0.5', '--bucket-seconds', '10',
         '--rate', '15', '--workers', str(WORKERS), '--providers', '30',
         '--database', 'placement_soak_ci', '--out', str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=240)
    report = (run.stdout + run.stderr)[-6000:]
    assert run.returncode in (0, 1), report  # 1: the verdict failed, checked below
    return json.loads((out / 'soak.json').read_text()), report


def test_every_bucket_has_traffic_and_readings(soak):
    result, report = soak
    rows = result['rows']
    assert [row['bucket'] for row in rows] == list(range(1, BUCKETS + 1)), report
    for row in rows:
        assert row['requests'] >= 100, report  # 15 operations/s for 10 s
        assert {'candidates', 'claim', 'provider_usages'} <= set(row['by_kind']), report
        assert row['p50_ms'] is not None and row['p95_ms'] >= row['p50_ms'], report
        assert len(row['worker_pids']) == WORKERS, report
        assert row['worker_rss_max_mib'] > 0 and row['master_rss_mib'] > 0, report


def test_no_server_error_or_unexpected_answer(soak):
    result, report = soak
    assert sum(row['errors_5xx'] for row in result['rows']) == 0, report
    assert sum(row['errors_unexpected'] for row in result['rows']) == 0, report
    assert result['server_log_tracebacks'] == 0, report


def test_connections_stay_within_the_workers(soak):
    result, report = soak
    counts = [row['db_connections'] for row in result['rows']]
    # Sync workers: one connection each, kept between requests.
    assert all(count is not None and count <= WORKERS + 1 for count in counts), report
    assert not any(row['new_worker_pids'] for row in result['rows']), report


def test_verdict(soak):
    result, report = soak
    assert result['passed'], report
