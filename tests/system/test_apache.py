"""The service behind Debian's Apache, in the two shapes deployment tools
give Placement: kolla-ansible's mod_wsgi daemon processes running the
installed placement-api script (docs/deploy/placement-api-apache.conf),
and devstack's mod_proxy_uwsgi at /placement in front of uWSGI on a Unix
socket (devstack's lib/apache). Apache runs its workers as www-data, so
the service runs from .venv-apache (Debian's python3, the Python Debian's
mod_wsgi embeds; scripts/ci/test-setup.sh makes it) and keeps its data in a
directory www-data owns."""
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from scripts.harness.process import Process
from scripts.harness.process import free_port
from tests.support import deployed
from tests.support.environment import clean_environment

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

REPO = Path(__file__).resolve().parents[2]
VHOST = REPO / 'docs' / 'deploy' / 'placement-api-apache.conf'
APACHE_VENV = REPO / '.venv-apache'
APACHE = Path('/usr/sbin/apache2')
MODULES = Path('/usr/lib/apache2/modules')
UWSGI = Path(sys.executable).parent / 'uwsgi'

# What any Apache needs, run in the foreground by root with www-data's workers.
SERVER = """\
ServerRoot /etc/apache2
ServerName localhost
PidFile {dir}/apache.pid
Mutex file:{dir}
DefaultRuntimeDir {dir}
User www-data
Group www-data
ErrorLog {dir}/apache-error.log
LogLevel warn
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
"""

# devstack's write_uwsgi_config for placement-api, and its Apache site.
DEVSTACK_UWSGI = """\
[uwsgi]
wsgi-file = {script}
processes = 2
master = true
die-on-term = true
exit-on-reload = true
enable-threads = true
thunder-lock = true
buffer-size = 65535
add-header = Connection: close
lazy-apps = true
socket = {dir}/placement-api.socket
chmod-socket = 666
"""
DEVSTACK_SITE = """\
LoadModule env_module {modules}/mod_env.so
LoadModule proxy_module {modules}/mod_proxy.so
LoadModule proxy_uwsgi_module {modules}/mod_proxy_uwsgi.so
Listen 127.0.0.1:{port}
SetEnv proxy-sendcl 1
ProxyPass "/placement" "unix:{dir}/placement-api.socket|uwsgi://uwsgi-uds-placement-api/" retry=0
"""


@pytest.fixture
def workdir():
    """A directory Apache's www-data workers can reach (pytest's own is
    root's alone), with the data in it theirs to write."""
    if os.geteuid() != 0 or not (APACHE.exists() and (MODULES / 'mod_wsgi.so').exists()
                                 and (APACHE_VENV / 'bin' / 'placement-api').exists()):
        pytest.skip('needs root, Debian\'s apache2 and libapache2-mod-wsgi-py3, and '
                    '.venv-apache (scripts/ci/test-setup.sh)')
    path = Path(tempfile.mkdtemp(prefix='placement-apache-'))
    path.chmod(0o755)
    (path / 'data').mkdir()
    shutil.chown(path / 'data', 'www-data', 'www-data')
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_conf(workdir):
    """placement.conf as the tools write it, the data in www-data's directory."""
    (workdir / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        f'[placement_database]\nconnection = sqlite:///{workdir}/data/placement.sqlite3\n'
        'sync_on_startup = true\n'
        f'[django]\ndata_dir = {workdir}/data\n')


def serve(argv, workdir, name):
    server = Process(argv, workdir / f'{name}.log', cwd=workdir, name=name,
                     env=clean_environment(OS_PLACEMENT_CONFIG_DIR=str(workdir)))
    server.start()
    return server


@pytest.fixture(params=['kolla: mod_wsgi', 'devstack: mod_proxy_uwsgi at /placement'])
def served(request, workdir):
    port = free_port()
    write_conf(workdir)
    server = SERVER.format(dir=workdir, modules=MODULES)
    servers = []
    if request.param.startswith('kolla'):
        prefix = ''
        vhost = VHOST.read_text().replace('/opt/placement/venv', str(APACHE_VENV))
        vhost = vhost.replace('user=placement group=placement', 'user=www-data group=www-data')
        vhost = vhost.replace('Listen 8780', f'Listen 127.0.0.1:{port}').replace(
            '*:8780', f'*:{port}')
        server += f'LoadModule wsgi_module {MODULES}/mod_wsgi.so\n' + vhost
    else:
        prefix = '/placement'
        (workdir / 'uwsgi.ini').write_text(DEVSTACK_UWSGI.format(
            script=UWSGI.parent / 'placement-api', dir=workdir))
        servers.append(serve([UWSGI, '--ini', workdir / 'uwsgi.ini'], workdir, 'uwsgi'))
        server += DEVSTACK_SITE.format(modules=MODULES, port=port, dir=workdir)
    (workdir / 'httpd.conf').write_text(server)
    servers.append(serve([APACHE, '-f', workdir / 'httpd.conf', '-DFOREGROUND'], workdir,
                         'apache'))
    try:
        servers[-1].wait_answering(f'http://127.0.0.1:{port}{prefix}/', timeout=120)
        yield port, prefix, workdir
    finally:
        for each in reversed(servers):
            each.stop(timeout=30)


def test_apache_serves_the_api_pages_and_static_files(served):
    port, prefix, workdir = served
    deployed.check_serves(port, prefix)
    if not prefix:
        # mod_wsgi's daemons ran as the vhost's user: the database and the
        # generated key are theirs.
        for name in ('placement.sqlite3', 'secret_key'):
            assert (workdir / 'data' / name).owner() == 'www-data'
    assert 'Traceback' not in (workdir / 'apache-error.log').read_text()
    assert not re.search(r'\[(error|crit|alert|emerg)\]',
                         (workdir / 'apache-error.log').read_text())
