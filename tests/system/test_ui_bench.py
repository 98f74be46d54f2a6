"""The dashboards benchmark's churn and claims modes, short: `python -m
scripts.bench.ui` on a small load_scale cloud (30 compute nodes) in an
SQLite file and a data directory of its own, served as scripts/run.sh
serves it, writing at 5 writes/s. Every page is read after a write and
answers 200; claims and deletes were made, balanced, and the cloud ends
with the consumers it started with."""
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.harness.process import free_port

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.any_database]


@pytest.fixture(scope='module')
def bench(tmp_path_factory):
    base = tmp_path_factory.mktemp('ui-bench')
    database = base / 'placement.sqlite3'
    env = {name: value for name, value in os.environ.items()
           if name not in ('DJANGO_SETTINGS_MODULE', 'PROMETHEUS_MULTIPROC_DIR', 'FRONT',
                           'WORKERS', 'HOST', 'NGINX', 'PLACEMENT_DATA_DIR')}
    env.update(DATABASE_URL=f'sqlite:///{database}', PLACEMENT_DATA_DIR=str(base / 'data'),
               DJANGO_SECRET_KEY='ui-bench-tests', PLACEMENT_LOG_LEVEL='WARNING')
    run = subprocess.run(
        [sys.executable, '-m', 'scripts.bench.ui', '--load', '30', '--churn', '5',
         '--claims', '5', '--out', str(base / 'out'), '--port', str(free_port()),
         '--seconds', '2', '--rounds', '1', '--nodes', '10'],
        check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    report = (run.stdout + run.stderr)[-8000:]
    assert run.returncode == 0, report
    loaded = int(re.search(r'consumers=(\d+)', run.stdout + run.stderr).group(1))
    with sqlite3.connect(database) as db:
        left = db.execute('SELECT count(*) FROM consumers').fetchone()[0]
    return {'churn': json.loads((base / 'out' / 'churn-5.json').read_text()),
            'claims': json.loads((base / 'out' / 'claims-5.json').read_text()),
            'stdout': run.stdout, 'report': report, 'loaded': loaded, 'left': left}


def test_churn_reads_every_page_after_a_write(bench):
    churn, report = bench['churn'], bench['report']
    names = [result['name'] for result in churn['results']]
    assert {'overview', 'audit', 'explorer, limit 10', 'GET /metrics',
            'export: every provider (CSV)', 'admin: providers'} <= set(names), names
    for result in churn['results']:
        assert result['statuses'] and set(result['statuses']) == {200}, (result, report)
        assert len(result['samples_ms']) == churn['rounds'] == 1
        assert result['p95_ms'] >= result['median_ms'] > 0
        assert f'| {result["name"]} | ' in bench['stdout']  # a row of the table
    assert churn['writes']['errors_5xx'] == 0 and churn['writes']['no_answer'] == 0, report


def test_the_writes_are_made_and_balanced(bench):
    for mode in ('churn', 'claims'):
        result = bench[mode]
        phases = ([result['writes']] if mode == 'churn' else
                  [result['alone'], result['browsed']])
        claims = sum(phase['claims_made'] for phase in phases)
        deletes = sum(phase['deletes_made'] for phase in phases)
        assert claims > 0 and deletes > 0, (mode, bench['report'])
        # Every other write deletes one of the claims that landed (a claim
        # when none has yet: a slow machine makes more of those), and the
        # claims still held at the end are deleted after.
        assert claims >= deletes and result['released'] == claims - deletes, (
            mode, claims, deletes, result['released'])
        assert all(phase['errors_5xx'] == 0 for phase in phases), bench['report']
        assert len(result['write_samples']) >= claims + deletes
    assert bench['left'] == bench['loaded']


def test_claims_are_timed_alone_and_while_pages_are_browsed(bench):
    claims = bench['claims']
    assert claims['alone']['claim']['p95_ms'] > 0 and claims['browsed']['claim']['p95_ms'] > 0
    assert claims['claim_p95_ratio'] > 0
    assert claims['pages_opened'] >= 1 and claims['rounds'] == 1
    names = [result['name'] for result in claims['results']]
    assert [name for _, _, name in claims['pages_opened_s']] == [
        names[index % len(names)] for index in range(claims['pages_opened'])]
    opened = [status for result in claims['results'] for status in result['statuses']]
    assert len(opened) == claims['pages_opened'] and set(opened) == {200}
    assert 'claims\' p95 with pages browsed / without' in bench['stdout']
