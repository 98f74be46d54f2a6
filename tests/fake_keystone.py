"""A fake Keystone identity server: just enough of the v3 API for
keystonemiddleware's auth_token with auth_type=password.

- GET / and GET /v3: version discovery;
- POST /v3/auth/tokens: password authentication of the service user, scoped
  to its project; answers 201 with the token in X-Subject-Token and a body
  with the catalog (the identity endpoint the middleware validates against);
- GET /v3/auth/tokens: validation of the X-Subject-Token (the caller must
  present a service token it was issued); 200 with the token body for the
  known user tokens, 404 for any other.

It runs a stdlib HTTP server in a thread on 127.0.0.1 (a free port) and
records every request it answers in `requests` as (method, path).
"""
import json
import threading
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DOMAIN = {'id': 'default', 'name': 'Default'}
JSON = 'application/json'


def _timestamp(moment):
    return moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


class FakeKeystone:
    """The server and its users, projects and tokens.

    `service` holds the service user's credentials (what the middleware is
    configured with); `add_token` registers a user token that validation
    will accept. `services` ({service type: url}) adds endpoints to the
    catalog, for clients that look them up there.
    """

    def __init__(self, username='placement', password='placement-secret',
                 project_name='service', services=None):
        self.services = dict(services or {})
        self.service = {'username': username, 'password': password,
                        'project_name': project_name, 'user_id': uuid.uuid4().hex,
                        'project_id': uuid.uuid4().hex}
        self.user_tokens = {}
        self.service_tokens = {}
        self.requests = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(('127.0.0.1', 0), self._handler_class())
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f'http://{host}:{port}'
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name='fake-keystone', daemon=True)

    # ---- lifecycle -----------------------------------------------------------

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    # ---- tokens --------------------------------------------------------------

    def add_token(self, token, *, user_id, project_id, roles, user_name=None,
                  project_name=None, expires_in=timedelta(hours=1)):
        """A project-scoped user token with these roles."""
        self.user_tokens[token] = self._token_body(
            user_id=user_id, user_name=user_name or user_id,
            project_id=project_id, project_name=project_name or project_id,
            roles=roles, expires_in=expires_in)

    def _token_body(self, *, user_id, user_name, project_id, project_name, roles,
                    expires_in):
        now = datetime.now(timezone.utc)
        return {'token': {
            'methods': ['password'],
            'user': {'id': user_id, 'name': user_name, 'domain': DOMAIN,
                     'password_expires_at': None},
            'project': {'id': project_id, 'name': project_name, 'domain': DOMAIN},
            'is_domain': False,
            'roles': [{'id': f'role-{name}', 'name': name} for name in roles],
            'audit_ids': [uuid.uuid4().hex[:22]],
            'issued_at': _timestamp(now),
            'expires_at': _timestamp(now + expires_in),
            'catalog': self.catalog(),
        }}

    def catalog(self):
        endpoint = f'{self.url}/v3'
        return [{
            'id': 'identity-service', 'type': 'identity', 'name': 'keystone',
            'endpoints': [{'id': f'identity-{interface}', 'interface': interface,
                           'region': 'RegionOne', 'region_id': 'RegionOne',
                           'url': endpoint}
                          for interface in ('public', 'internal', 'admin')],
        }] + [{
            'id': f'{kind}-service', 'type': kind, 'name': kind,
            'endpoints': [{'id': f'{kind}-{interface}', 'interface': interface,
                           'region': 'RegionOne', 'region_id': 'RegionOne', 'url': url}
                          for interface in ('public', 'internal', 'admin')],
        } for kind, url in self.services.items()]

    def version(self):
        return {'id': 'v3.14', 'status': 'stable', 'updated': '2020-04-07T00:00:00Z',
                'links': [{'rel': 'self', 'href': f'{self.url}/v3/'}],
                'media-types': [{'base': JSON,
                                 'type': 'application/vnd.openstack.identity-v3+json'}]}

    # ---- the API -------------------------------------------------------------

    def _authenticate(self, body):
        """The service token for valid password credentials, else None."""
        try:
            identity = body['auth']['identity']
            user = identity['password']['user']
            project = body['auth']['scope']['project']
        except (KeyError, TypeError):
            return None
        service = self.service
        if (identity.get('methods') != ['password']
                or user.get('name') != service['username']
                or user.get('password') != service['password']
                or user.get('domain', {}).get('id') != DOMAIN['id']
                or project.get('name') != service['project_name']
                or project.get('domain', {}).get('id') != DOMAIN['id']):
            return None
        token = uuid.uuid4().hex
        self.service_tokens[token] = self._token_body(
            user_id=service['user_id'], user_name=service['username'],
            project_id=service['project_id'], project_name=service['project_name'],
            roles=['service'], expires_in=timedelta(hours=1))
        return token

    def handle(self, method, path, headers, body):
        """(status, headers, body) for one request."""
        with self._lock:
            self.requests.append((method, path))
        route = urlsplit(path).path.rstrip('/')
        if method == 'GET' and route == '':
            # Keystone answers its version list with 300 Multiple Choices.
            return 300, {}, {'versions': {'values': [self.version()]}}
        if method == 'GET' and route == '/v3':
            return 200, {}, {'version': self.version()}
        if route == '/v3/auth/tokens' and method == 'POST':
            try:
                credentials = json.loads(body or b'null')
            except ValueError:
                return 400, {}, _error(400, 'Bad Request', 'Malformed request body')
            token = self._authenticate(credentials)
            if token is None:
                return 401, {}, _error(401, 'Unauthorized',
                                       'The request you have made requires authentication.')
            return 201, {'X-Subject-Token': token}, self.service_tokens[token]
        if route == '/v3/auth/tokens' and method == 'GET':
            if headers.get('X-Auth-Token') not in self.service_tokens:
                return 401, {}, _error(401, 'Unauthorized',
                                       'The request you have made requires authentication.')
            subject = headers.get('X-Subject-Token', '')
            token = self.user_tokens.get(subject) or self.service_tokens.get(subject)
            if token is None:
                return 404, {}, _error(404, 'Not Found', f'Could not find token: {subject}.')
            return 200, {'X-Subject-Token': subject}, token
        return 404, {}, _error(404, 'Not Found', 'The resource could not be found.')

    def _handler_class(self):
        keystone = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def _answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else b''
                status, headers, payload = keystone.handle(
                    self.command, self.path, self.headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header('Content-Type', JSON)
                self.send_header('Content-Length', str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format, *args):
                pass

        return Handler


def _error(code, title, message):
    return {'error': {'code': code, 'title': title, 'message': message}}
