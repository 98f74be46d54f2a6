"""A real OpenStack Keystone for the identity tests: started once per test
run by scripts/dev/keystone-test-server.sh (Keystone from PyPI, on SQLite, with
fernet tokens, bootstrapped), shared by the test processes, and given the
projects, users and roles a test needs through Keystone's own API
(keystoneauth1). Where it cannot be installed or started, the tests that
need it are skipped with the reason."""
import collections
import fcntl
import io
import json
import subprocess
import threading
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from wsgiref.util import setup_testing_defaults

import pytest
import requests
from django.core import signals
from django.db import close_old_connections
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'scripts' / 'dev' / 'keystone-test-server.sh'
ADMIN_PASSWORD = 'admin'   # the bootstrap admin's (the script's default)
IDENTITY = {'service_type': 'identity', 'interface': 'public'}

_url = []


def keystone_url():
    """The running Keystone's URL (http://127.0.0.1:PORT/v3), started on
    first use; the test is skipped when it cannot be."""
    if not _url:
        # Test processes running side by side start it once.
        with open('/tmp/placement-test-keystone.lock', 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                started = subprocess.run([str(SCRIPT)], capture_output=True, text=True,
                                         timeout=900, check=True)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                pytest.skip('a real Keystone could not be started here: '
                            + (exc.stderr or '')[-600:])
        _url.append(started.stdout.strip().splitlines()[-1])
    return _url[0]


def password_session(url, username, password, *, project_id=None, system=False):
    auth = v3.Password(auth_url=url, username=username, password=password,
                       user_domain_id='default', project_id=project_id,
                       system_scope='all' if system else None)
    return ks_session.Session(auth=auth)


class Identity:
    """Keystone's admin API through the bootstrap admin's system-scoped
    token: projects, users and role assignments, each name made unique
    so tests never meet each other's."""

    def __init__(self, url):
        self.url = url
        self.admin = password_session(url, 'admin', ADMIN_PASSWORD, system=True)

    def _call(self, method, path, **body):
        response = self.admin.request(path, method, endpoint_filter=IDENTITY, json=body or None,
                                      raise_exc=True)
        return response.json() if response.content else None

    def _role_id(self, name):
        found = self._call('GET', f'/roles?name={name}')['roles']
        if found:
            return found[0]['id']
        return self._call('POST', '/roles', role={'name': name})['role']['id']

    def project(self, name):
        return self._call('POST', '/projects', project={
            'name': f'{name}-{uuid.uuid4().hex[:8]}', 'domain_id': 'default'})['project']['id']

    def user(self, name, *, project_roles=(), system_roles=(), enabled=True):
        """A new user (its password is its name) with `project_roles`
        [(project id, role name)] and `system_roles` on the system; returns
        (user id, name)."""
        name = f'{name}-{uuid.uuid4().hex[:8]}'
        user_id = self._call('POST', '/users', user={
            'name': name, 'password': name, 'domain_id': 'default',
            'enabled': enabled})['user']['id']
        for project_id, role in project_roles:
            self._call('PUT', f'/projects/{project_id}/users/{user_id}/roles/'
                              f'{self._role_id(role)}')
        for role in system_roles:
            self._call('PUT', f'/system/users/{user_id}/roles/{self._role_id(role)}')
        return user_id, name

    def token(self, name, *, project_id=None, system=False):
        """A fresh token of the user named `name` (password: its name)."""
        return password_session(self.url, name, name, project_id=project_id,
                                system=system).get_token()

    def region_with(self, service_type, url):
        """A new region whose catalogue lists `url` as the public endpoint
        of `service_type` (each caller its own region, so test processes
        sharing the Keystone never see each other's endpoints)."""
        region = self._call('POST', '/regions', region={
            'id': f'test-{uuid.uuid4().hex[:8]}'})['region']['id']
        service = self._call('POST', '/services', service={
            'type': service_type, 'name': service_type})['service']['id']
        self._call('POST', '/endpoints', endpoint={
            'service_id': service, 'interface': 'public', 'url': url, 'region_id': region})
        return region

    def application_credential(self, name, project_id):
        """(id, secret) of a new application credential the user named
        `name` makes for itself on the project (Keystone lets only the
        user do so)."""
        own = password_session(self.url, name, name, project_id=project_id)
        user_id = own.get_user_id()
        made = own.post(f'/users/{user_id}/application_credentials', endpoint_filter=IDENTITY,
                        json={'application_credential': {'name': f'ui-{uuid.uuid4().hex[:8]}'}},
                        raise_exc=True).json()['application_credential']
        return made['id'], made['secret']

    def validate(self, token):
        """Keystone's answer on the token: 200, or 404 once revoked."""
        return self.admin.get('/auth/tokens', endpoint_filter=IDENTITY,
                              headers={'X-Subject-Token': token}, raise_exc=False).status_code

    def revoke(self, token):
        self.admin.delete('/auth/tokens', endpoint_filter=IDENTITY,
                          headers={'X-Subject-Token': token})

    def disable(self, user_id):
        self._call('PATCH', f'/users/{user_id}', user={'enabled': False})


class CountingFront:
    """A pass-through in front of the real Keystone, at an unversioned URL
    (http://127.0.0.1:PORT, as install guides write auth_url), counting the
    requests that reach Keystone through it by (method, path): whether a
    page asked Keystone is Keystone's own traffic, not a guess. Keystone
    answers everything; its links name the front (the Host header is
    passed on)."""

    def __init__(self, keystone):
        self.keystone = keystone.rstrip('/').removesuffix('/v3')
        self.asked = collections.Counter()
        front = self

        class Pass(BaseHTTPRequestHandler):
            def _pass(self):
                front.asked[self.command, self.path.split('?')[0].rstrip('/')] += 1
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                answer = requests.request(self.command, front.keystone + self.path,
                                          headers=dict(self.headers), data=body or None,
                                          timeout=30)
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in ('content-length', 'content-encoding',
                                            'transfer-encoding', 'connection'):
                        self.send_header(name, value)
                self.send_header('Content-Length', str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Pass)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def validations(self):
        """Token validations Keystone answered (GET /v3/auth/tokens)."""
        return self.asked['GET', '/v3/auth/tokens']

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def call(app, method, path, *, token=None, body=None, headers=None):
    """One request through the WSGI application, as a server would make it."""
    path, _, query = path.partition('?')
    data = json.dumps(body).encode() if body is not None else b''
    environ = {'REQUEST_METHOD': method, 'PATH_INFO': path, 'QUERY_STRING': query,
               'CONTENT_LENGTH': str(len(data)), 'wsgi.input': io.BytesIO(data),
               'HTTP_ACCEPT': 'application/json', 'HTTP_OPENSTACK_API_VERSION': VERSION}
    if data:
        environ['CONTENT_TYPE'] = 'application/json'
    if token is not None:
        environ['HTTP_X_AUTH_TOKEN'] = token
    for name, value in (headers or {}).items():
        environ['HTTP_' + name.upper().replace('-', '_')] = value
    setup_testing_defaults(environ)
    started = {}

    def start_response(status, response_headers, exc_info=None):
        started['status'], started['headers'] = status, response_headers

    with _connection_kept():
        result = app(environ, start_response)
        try:
            content = b''.join(result)
        finally:
            if hasattr(result, 'close'):
                result.close()
    return WSGIResponse(started['status'], started['headers'], content)


VERSION = 'placement 1.39'


class WSGIResponse:
    def __init__(self, status, headers, body):
        self.status_code = int(status.split()[0])
        self.headers = {name.lower(): value for name, value in headers}
        self.content = body

    def json(self):
        return json.loads(self.content)


@contextmanager
def _connection_kept():
    """Keep the test's database connection (and transaction) across the
    request, as Django's test client does: WSGIHandler would otherwise close
    it when the request starts and finishes."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
