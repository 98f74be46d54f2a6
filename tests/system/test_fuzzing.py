"""A short schemathesis run over the OpenAPI document against a live server
seeded with the demo cloud: every operation, generated from the document of
the microversion asked for, and every answer a documented status, content
type and body, never a server error. The long run is `scripts/ci/fuzz.sh`
(docs/testing.md); PLACEMENT_FUZZ_SECONDS sets this one's time per microversion."""
import io
import os
import subprocess
import sys

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.slow, pytest.mark.any_database,
              pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CHECKS = ('not_a_server_error,response_schema_conformance,status_code_conformance,'
          'content_type_conformance')
SECONDS = int(os.environ.get('PLACEMENT_FUZZ_SECONDS', '25'))


@pytest.fixture
def seeded_server(live_server):
    # Standards first (idempotent): a transactional test may start from a flushed database.
    call_command('sync_standards', stdout=io.StringIO())
    call_command('load_demo', stdout=io.StringIO())
    return live_server.url


def fuzz(url, version, tmp_path):
    report = tmp_path / f'junit-{version}.xml'
    run = subprocess.run([
        sys.executable, '-m', 'schemathesis.cli', 'run', f'{url}/api/schema/?version={version}',
        '--url', url,
        '-H', 'X-Auth-Token: admin', '-H', 'X-Roles: admin,service',
        '-H', f'OpenStack-API-Version: placement {version}',
        '--checks', CHECKS, '--max-time', str(SECONDS), '--continue-on-failure',
        '--generation-database', 'none', '--seed', '1', '--no-color',
        '--report', 'junit', '--report-junit-path', str(report),
    ], capture_output=True, text=True, timeout=SECONDS * 10 + 120)
    return run, report


@pytest.mark.parametrize('version', ['latest', '1.20'])
def test_generated_requests_get_documented_answers(seeded_server, tmp_path, version):
    run, report = fuzz(seeded_server, version, tmp_path)
    summary = run.stdout[-6000:]
    assert run.returncode == 0, summary + run.stderr[-3000:]
    assert report.exists()
    # Every operation was reached, several times each (how many fit in the
    # time depends on how busy the machine is; each operation gets a few).
    assert 'Selected: 53/53' in run.stdout or version != 'latest', summary
    cases = [line for line in run.stdout.splitlines() if ' generated, ' in line]
    assert cases and int(cases[-1].split()[0]) >= 2 * 53, summary
