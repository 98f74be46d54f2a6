"""The service under uWSGI with the documented ini (docs/deploy/
placement-api-uwsgi.ini) and a placement.conf, as a deployment runs it:
both workers load the application themselves (lazy-apps), each syncing
the schema as it starts (sync_on_startup); the API, the version document
and the static files answer."""
import re
import sys
from pathlib import Path

import pytest

from scripts.harness.process import Process
from scripts.harness.process import free_port
from tests.support import deployed
from tests.support.environment import clean_environment

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

REPO = Path(__file__).resolve().parents[2]
INI = REPO / 'docs' / 'deploy' / 'placement-api-uwsgi.ini'
UWSGI = Path(sys.executable).parent / 'uwsgi'


@pytest.fixture(params=['module', 'wsgi-file', 'prefix'])
def served(request, tmp_path):
    """uWSGI on a free port with the documented ini: loading the module it
    names, the installed placement-api script (as devstack's ini does), or
    the module mounted at /placement (devstack's URL: SCRIPT_NAME)."""
    port = free_port()
    (tmp_path / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        f'[placement_database]\nconnection = sqlite:///{tmp_path}/placement.sqlite3\n'
        'sync_on_startup = true\n')
    # The documented ini, on a free port.
    ini = tmp_path / 'placement-api-uwsgi.ini'
    text = re.sub(r'(?m)^http-socket = .*$', f'http-socket = 127.0.0.1:{port}', INI.read_text())
    if request.param == 'wsgi-file':
        text = re.sub(r'(?m)^module = .*$', f'wsgi-file = {UWSGI.parent / "placement-api"}', text)
    prefix = '/placement' if request.param == 'prefix' else ''
    if prefix:
        text = re.sub(r'(?m)^module = (.*)$',
                      rf'mount = {prefix}=\1\nmanage-script-name = true', text)
    ini.write_text(text)
    server = Process([str(UWSGI), '--ini', str(ini)], tmp_path / 'uwsgi.log', cwd=tmp_path,
                     env=clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path)), name='uwsgi')
    server.start()
    try:
        server.wait_answering(f'http://127.0.0.1:{port}{prefix}/', timeout=120)
        yield port, prefix, server
    finally:
        server.stop(timeout=30)


def test_the_documented_ini_serves_the_api_and_the_static_files(served):
    port, prefix, server = served
    deployed.check_serves(port, prefix)
    # Both workers started, each with the application loaded by itself.
    server.wait_until(
        lambda: server.log().count(f"WSGI app 0 (mountpoint='{prefix}') ready") == 2,
        'both workers to load the application', timeout=60)
    assert 'Traceback' not in server.log()
