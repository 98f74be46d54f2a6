"""The service in Placement's place, deployed as kolla-ansible deploys
Placement (docs/deploy.md).

- placement.conf names the database by oslo.db's URL (mysql+pymysql:// on
  MariaDB), with Keystone in [keystone_authtoken] and memcached caching its
  tokens, a policy file beside it, and proxy headers parsing.
- `placement-manage db sync` runs from two processes at once.
- uWSGI serves with the documented ini.
- osc-placement reaches it through Keystone's catalog.

The conformance core set runs against the same shape in CI
(scripts/ci/compat-deployed-server.sh)."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.harness import api
from scripts.harness.process import Process
from scripts.harness.process import free_port
from tests.support import databases
from tests.support.environment import clean_environment
from tests.support.keystone import Identity
from tests.support.keystone import keystone_url

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
INI = REPO / 'docs' / 'deploy' / 'placement-api-uwsgi.ini'
MEMCACHED = shutil.which('memcached') or '/usr/bin/memcached'

CONF = """\
[DEFAULT]
debug = False
log_dir = {dir}/log

[api]
auth_strategy = keystone

[placement_database]
connection = {connection}
max_pool_size = 10
max_overflow = 20

[keystone_authtoken]
www_authenticate_uri = {keystone}
auth_url = {keystone}
auth_type = password
project_domain_id = default
user_domain_id = default
project_id = {service_project}
username = {service_user}
password = {service_user}
memcached_servers = 127.0.0.1:{memcached}
service_token_roles_required = true

[oslo_policy]
policy_file = policy.yaml
enforce_scope = True
enforce_new_defaults = True

[oslo_middleware]
enable_proxy_headers_parsing = True

[profiler]
enabled = False
"""
# Readers may list providers here (Placement's default: admins and services).
POLICY = '"placement:resource_providers:list": "role:reader"\n'


@pytest.fixture
def memcached(tmp_path):
    if not Path(MEMCACHED).is_file():
        pytest.skip('memcached is not installed (scripts/ci/test-setup.sh installs it)')
    port = free_port()
    as_root = ['-u', 'root'] if os.geteuid() == 0 else []
    server = Process([MEMCACHED, '-l', '127.0.0.1', '-p', str(port), '-U', '0', *as_root],
                     tmp_path / 'memcached.log', name='memcached')
    server.start()
    server.wait_until(lambda: socket.create_connection(('127.0.0.1', port), 1).close() is None,
                      'memcached to listen', timeout=30)
    yield port
    server.stop()


def memcached_stats(port):
    with socket.create_connection(('127.0.0.1', port), 5) as conn:
        conn.sendall(b'stats\r\n')
        text = b''
        while not text.endswith(b'END\r\n'):
            text += conn.recv(65536)
    return {parts[1]: parts[2] for parts in (line.split() for line in text.decode().splitlines())
            if len(parts) == 3 and parts[0] == 'STAT'}


@pytest.fixture
def identity():
    identity = Identity(keystone_url())
    identity.project_id = identity.project('deployed')
    identity.service_project = identity.project('service')
    _, identity.service_user = identity.user(
        'placement', project_roles=[(identity.service_project, 'service')])
    _, identity.admin_name = identity.user('admin', project_roles=[(identity.project_id, 'admin')])
    _, identity.reader_name = identity.user(
        'reader', project_roles=[(identity.project_id, 'reader')])
    return identity


def connection_as_written(url):
    """The URL as a deployment tool writes it: oslo.db's driver named."""
    return 'mysql+pymysql://' + url[len('mysql://'):] if url.startswith('mysql://') else url


def test_placement_deployed_by_a_tool_serves_osc_placement_through_keystone(
        db, tmp_path, memcached, identity):
    (tmp_path / 'log').mkdir()
    with databases.empty_database(tmp_path, 'deployed') as url:
        (tmp_path / 'placement.conf').write_text(CONF.format(
            dir=tmp_path, connection=connection_as_written(url), keystone=identity.url,
            service_project=identity.service_project, service_user=identity.service_user,
            memcached=memcached))
        (tmp_path / 'policy.yaml').write_text(POLICY)
        env = clean_environment(OS_PLACEMENT_CONFIG_DIR=str(tmp_path))

        # The bootstrap, on two nodes at once.
        syncs = [subprocess.Popen([str(BIN / 'placement-manage'), 'db', 'sync'], cwd=tmp_path,
                                  env=env, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) for _ in range(2)]
        done = [(s.wait(timeout=600), s.stdout.read()) for s in syncs]
        assert [code for code, _ in done] == [0, 0], done
        # What has no meaning here is said, once a process.
        assert all(output.count('has no meaning here: ignored') == 3 for _, output in done)

        port = free_port()
        ini = tmp_path / 'placement-api-uwsgi.ini'
        ini.write_text(INI.read_text().replace('http-socket = 127.0.0.1:8780',
                                               f'http-socket = 127.0.0.1:{port}'))
        server = Process([str(BIN / 'uwsgi'), '--ini', str(ini)], tmp_path / 'uwsgi.log',
                         cwd=tmp_path, env=env, name='uwsgi')
        server.start()
        try:
            server.wait_answering(f'http://127.0.0.1:{port}/', timeout=120)
            endpoint = f'http://127.0.0.1:{port}'
            check_the_deployment(identity, endpoint, port, memcached, env)
        finally:
            server.stop(timeout=30)
        assert 'Traceback' not in server.log(), server.log_tail()
        # [DEFAULT] log_dir: the service's own log file.
        assert (tmp_path / 'log' / 'placement-api.log').is_file()


def check_the_deployment(identity, endpoint, port, memcached, env):
    region = identity.region_with('placement', endpoint)

    def openstack(user, *args, ok=True):
        osc_env = {k: v for k, v in env.items() if not k.startswith('OS_')}
        done = subprocess.run(
            [str(BIN / 'openstack'), '--os-auth-url', identity.url, '--os-username', user,
             '--os-password', user, '--os-project-id', identity.project_id,
             '--os-user-domain-id', 'default', '--os-region-name', region,
             '--os-placement-api-version', '1.39', *args],
            env=osc_env, capture_output=True, text=True, timeout=120)
        assert (done.returncode == 0) == ok, done.stderr
        return json.loads(done.stdout) if ok and '-f' in args else done.stderr

    # osc-placement, as an operator uses it, through the catalog.
    created = openstack(identity.admin_name, 'resource', 'provider', 'create', 'cn1',
                        '-f', 'json')
    openstack(identity.admin_name, 'resource', 'provider', 'inventory', 'set',
              created['uuid'], '--resource', 'VCPU=8', '--resource',
              'MEMORY_MB:allocation_ratio=1.5', '--resource', 'MEMORY_MB=4096', '-f', 'json')
    inventories = openstack(identity.admin_name, 'resource', 'provider', 'inventory', 'list',
                            created['uuid'], '-f', 'json')
    assert {i['resource_class']: (i['total'], i['allocation_ratio']) for i in inventories} == {
        'VCPU': (8, 1.0), 'MEMORY_MB': (4096, 1.5)}
    # The policy file: a reader lists (Placement's default would refuse),
    # and still may not create.
    listed = openstack(identity.reader_name, 'resource', 'provider', 'list', '-f', 'json')
    assert [rp['name'] for rp in listed] == ['cn1']
    refused = openstack(identity.reader_name, 'resource', 'provider', 'create', 'cn2', ok=False)
    assert 'placement:resource_providers:create' in refused

    # keystonemiddleware's token cache in memcached.
    assert int(memcached_stats(memcached)['cmd_set']) > 0
    # Proxy headers: a created provider's Location names the host the
    # client asked the proxy for.
    token = identity.token(identity.admin_name, project_id=identity.project_id)
    headers, body = api.api_request({'name': 'cn3'}, '1.39', token)
    headers = {**headers, 'X-Forwarded-Host': 'placement.example',
               'X-Forwarded-Proto': 'https'}
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    conn.request('POST', '/resource_providers', body=body, headers=headers)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    assert answer.status == 200
    assert answer.getheader('Location').startswith('https://placement.example/resource_providers/')
