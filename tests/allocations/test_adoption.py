"""Adoption: the real openstack-placement 16.0.0, filled through its API
with a small seeded cloud (~40 providers), imported into ours; every GET
answers the same on both servers, and a client's writes prepared with the
old service's generations succeed on ours. The short run of `python -m
scripts.bench.adoption` (docs/adoption-check.md), on the database server
the suite runs on: PostgreSQL or MariaDB. SQLite has no Placement to import
from."""
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATABASE_URL = os.environ.get('DATABASE_URL', '')
BACKEND = {'postgresql': 'postgresql', 'postgres': 'postgresql', 'mysql': 'mariadb',
           'mariadb': 'mariadb'}.get(urllib.parse.urlsplit(DATABASE_URL).scheme.split('+')[0])

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND is None, reason='the adoption check needs a PostgreSQL or MariaDB server for the '
                            'real Placement (DATABASE_URL is SQLite)')]


@pytest.fixture(scope='module')
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp('adoption') / 'report.json'
    done = subprocess.run(
        [sys.executable, '-m', 'scripts.bench.adoption',
         '--backend', BACKEND, '--server-url', DATABASE_URL, '--providers', '40',
         '--seed', '7', '--db-prefix', f'adopt_t{os.getpid()}', '--json', str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stdout + done.stderr
    (report,) = json.loads(out.read_text())
    report['output'] = done.stdout
    return report


def test_the_import_carries_every_table(report):
    assert not report.get('error'), report['error']
    rows = report['rows']
    assert rows['resource_providers'] >= 40
    assert rows['consumers'] > 0 and rows['allocations'] > rows['consumers']
    for table, count in rows.items():
        assert f'imported {table}' in report['import_output'], table
        assert f'{count}/{count}' in report['import_output'], table


def test_every_answer_is_the_same(report):
    assert report['answers'] > 400
    assert report['verdicts'].get('different', 0) == 0, report['output']
    # Most answers are byte for byte the same; the rest differ only in the
    # order of lists and keys Placement leaves to the database.
    assert report['verdicts']['bytes'] > 0.75 * report['answers']


def test_prepared_writes_succeed_on_ours(report):
    writes = report['writes']
    assert [w['path'].split('/')[1] for w in writes] == ['resource_providers', 'allocations']
    for write in writes:
        assert write['status'] in (200, 204), write
        assert write['again_status'] == 409, write     # its generation is used up
