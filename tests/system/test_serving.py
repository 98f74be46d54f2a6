"""Serving (docs/serving.md): the default set-up of scripts/run.sh, nginx
in front of an API pool and an operator pool; the client's address behind
the front; the operator requests' statement budget on each database.

The servers' tests start the set-up as run.sh does (the same script, on
SQLite in a data directory of their own, on free ports) and are `slow`;
they say nothing about the database (`any_database`)."""
import gzip
import http.client
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from django.http import HttpResponse
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import include
from django.urls import path

from placement_site import budgets
from placement_site import serving
from placement_site.serving import front as front_conf
from scripts.harness.api import send
from scripts.harness.process import Process
from scripts.harness.process import children
from scripts.harness.process import free_port
from scripts.harness.process import wait_for

REPO = Path(__file__).resolve().parents[2]


# ---- the client's address ------------------------------------------------------

def metrics(**meta):
    return Client().get('/metrics', **meta).status_code


@pytest.mark.any_database
@pytest.mark.django_db
def test_client_sent_addresses_never_grant_metrics_access_directly(settings):
    settings.PLACEMENT_METRICS_ALLOWED_NETWORKS = ['192.0.2.7/32']
    claims = {'HTTP_X_REAL_IP': '192.0.2.7', 'HTTP_X_FORWARDED_FOR': '192.0.2.7'}
    for trusted in ([], ['unix'], ['10.0.0.0/8']):
        settings.PLACEMENT_TRUSTED_PROXIES = trusted
        assert metrics(REMOTE_ADDR='198.51.100.1', **claims) == 403
        assert metrics(REMOTE_ADDR='192.0.2.7') == 200
    # From the front: a Unix socket's peer, or a proxy named trusted.
    settings.PLACEMENT_TRUSTED_PROXIES = ['unix']
    assert metrics(REMOTE_ADDR='', HTTP_X_REAL_IP='192.0.2.7') == 200
    assert metrics(REMOTE_ADDR='', HTTP_X_REAL_IP='198.51.100.1',
                   HTTP_X_FORWARDED_FOR='192.0.2.7') == 403
    settings.PLACEMENT_TRUSTED_PROXIES = ['10.0.0.0/8']
    assert metrics(REMOTE_ADDR='', HTTP_X_REAL_IP='192.0.2.7') == 403
    assert metrics(REMOTE_ADDR='10.1.2.3', HTTP_X_REAL_IP='192.0.2.7') == 200


@pytest.mark.any_database
def test_a_trusted_proxy_setting_must_name_networks(settings):
    with pytest.raises(ValueError, match="PLACEMENT_TRUSTED_PROXIES: 'front'"):
        serving.trusted_networks(('unix', 'front'))


@pytest.mark.any_database
@pytest.mark.django_db
def test_sign_in_throttling_locks_the_client_behind_the_front_not_the_front(settings):
    """Five wrong passwords from one client behind the front lock the user
    at that client's address; from another client behind the same front
    the user still signs in."""
    from django.contrib.auth.models import User

    settings.AXES_ENABLED = True
    settings.PLACEMENT_TRUSTED_PROXIES = ['unix']
    User.objects.create_user('operator', password='right', is_staff=True)

    def sign_in(username, password, client_address):
        client = Client(REMOTE_ADDR='', HTTP_X_REAL_IP=client_address)
        return client.post('/accounts/login/', {'username': username, 'password': password})

    for _ in range(5):
        sign_in('operator', 'wrong', '192.0.2.66')
    assert sign_in('operator', 'right', '192.0.2.66').status_code == 429
    assert sign_in('operator', 'right', '192.0.2.67').status_code == 302


# ---- the statement budget, on each database -------------------------------------

# A statement that runs for seconds on each database.
SLOW_SQL = {
    'postgresql': 'SELECT pg_sleep(20)',
    'mysql': 'SELECT SLEEP(20)',
    'sqlite': ('WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 1000000000) '
               'SELECT count(*) FROM n'),
}


def run_slow_statement(*args, **kwargs):
    with connection.cursor() as cursor:
        cursor.execute(SLOW_SQL[connection.vendor])
        return cursor.fetchall()


def slow_page(request):
    run_slow_statement()
    return HttpResponse('finished')


def slow_export(request):
    def rows():
        yield 'name\n'
        yield from (f'{row}\n' for row in run_slow_statement())
    return StreamingHttpResponse(rows(), content_type='text/csv')


# ROOT_URLCONF of the tests below: a dashboard page and an export whose
# statement never ends, before every real route.
urlpatterns = [
    path('ui/slow/', slow_page),
    path('ui/slow-export/', slow_export),
    path('', include('placement_site.urls')),
]


@pytest.fixture
def budget(settings, staff):
    settings.ROOT_URLCONF = __name__
    settings.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS = 0.5
    settings.PLACEMENT_METRICS_ALLOWED_NETWORKS = ['127.0.0.0/8']
    return staff


def assert_stopped_in_time(started, caplog):
    assert time.monotonic() - started < 5
    records = [r for r in caplog.records if r.levelname in ('WARNING', 'ERROR')]
    assert [(r.name, r.levelname, r.exc_info) for r in records] == [
        ('placement.budgets', 'WARNING', None)]
    assert records[0].getMessage().startswith('Over budget, stopped GET ')


def test_a_dashboard_query_past_its_budget_answers_a_page_saying_so(budget, caplog):
    started = time.monotonic()
    answer = budget.get('/ui/slow/')
    assert answer.status_code == 503 and answer['Retry-After'] == '30'
    page = answer.content.decode()
    assert re.search(r'<div class="notice error" id="over-budget">A database query took longer '
                     r'than its budget of 0.5 s\s+and was stopped', page)
    assert 'PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS' in page
    assert_stopped_in_time(started, caplog)


@pytest.mark.parametrize('url, advice', [
    ('/capacity', 'Ask for less: one aggregate, a coarser group_by, or without resources=.'),
    ('/metrics', "PLACEMENT_METRICS_OS_CAPACITY=false leaves out a third of a large cloud's "
                 'scrape.'),
])
def test_capacity_and_metrics_past_their_budget_answer_placements_error(
        budget, monkeypatch, caplog, url, advice):
    monkeypatch.setattr('providers.capacity.capacity', run_slow_statement)
    monkeypatch.setattr('providers.metrics.read_catalogue', run_slow_statement)
    started = time.monotonic()
    answer = Client(HTTP_X_AUTH_TOKEN='admin', HTTP_OPENSTACK_API_VERSION='placement 1.39',
                    REMOTE_ADDR='127.0.0.1').get(url)
    assert answer.status_code == 503 and answer['Retry-After'] == '30'
    assert answer['Content-Type'] == 'application/json'
    (error,) = answer.json()['errors']
    assert error['status'] == 503 and error['title'] == 'Service Unavailable'
    assert error['detail'] == (
        'The server is currently unavailable. Please try again at a later time.\n\n A database '
        'query took longer than its budget of 0.5 s (PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS) '
        f'and was stopped. {advice}  ')
    assert_stopped_in_time(started, caplog)


def test_an_export_past_its_budget_ends_saying_so(budget, caplog):
    started = time.monotonic()
    answer = budget.get('/ui/slow-export/')
    assert answer.status_code == 200
    assert b''.join(answer.streaming_content).decode() == (
        'name\n\n# stopped: a query ran past its budget of 0.5 s; narrow the list\n')
    assert_stopped_in_time(started, caplog)


@pytest.mark.any_database
def test_the_budget_is_the_operator_requests_only(rf, settings):
    settings.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS = 10
    operator = ['/ui/', '/admin/', '/accounts/login/', '/static/css/placement.css',
                '/api/schema/', '/metrics', '/capacity', '/capacity/trends',
                '/explain/allocation_candidates', '/favicon.ico']
    api = ['/', '/resource_providers', '/allocation_candidates', '/capacityx', '/uix']
    for pool, budgeted in (('', operator), ('api', operator), ('operator', operator + api)):
        settings.PLACEMENT_SERVING_POOL = pool
        assert [p for p in operator + api if budgets.applies(rf.get(p))] == budgeted, pool
    settings.PLACEMENT_OPERATOR_STATEMENT_TIMEOUT_SECONDS = 0
    assert not budgets.applies(rf.get('/ui/'))


# ---- the front's configuration ---------------------------------------------------

@pytest.mark.any_database
def test_nginx_routes_the_operator_paths_as_the_app_names_them(tmp_path):
    conf = front_conf.nginx_conf(run_dir=tmp_path, listen='::1:8000', max_body_size=100)
    routes = re.search(r'map \$uri \$placement_pool \{(.*?)\}', conf, re.DOTALL).group(1)
    assert re.findall(r'^\s+(\S+) operator;$', routes, re.MULTILINE) == [
        *(f'~^{prefix}' for prefix in serving.OPERATOR_PREFIXES), *serving.OPERATOR_PATHS]
    assert 'listen [::1]:8000;' in conf
    assert 'client_max_body_size 100;' in conf and '"" 101;' in conf
    assert f'server unix:{tmp_path}/api.sock;' in conf
    assert '@' not in re.sub(r'@too_large', '', conf)


# ---- the default set-up, served --------------------------------------------------

class Served(Process):
    """scripts/run.sh (or scripts/serve.sh) in a data directory of its own
    on SQLite, on a free port, started and answering."""

    def __init__(self, base, name, *, script='scripts/run.sh', args=(), database=None, env=None):
        self.port = free_port()
        self.data = base / name
        self.data.mkdir()
        self.database = database or self.data / 'placement.sqlite3'
        super().__init__(['bash', script, *args], self.data / 'served.log', cwd=REPO, env={
            **served_env(), 'PLACEMENT_DATA_DIR': str(self.data),
            'DATABASE_URL': f'sqlite:///{self.database}', 'PORT': str(self.port), **(env or {})})
        self.start().wait_answering(f'http://127.0.0.1:{self.port}/', 240)

    def processes(self):
        """{'api': master, 'operator': master, 'nginx': master} below serve.sh
        (another child, serve.sh's wait for nginx still ending as the
        front already answers, is not one of them)."""
        found = {}
        for pid in children(self.process.pid):
            try:
                command = Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ').decode()
            except OSError:
                continue   # ended since
            pool = re.search(r'unix:\S+/(\w+)\.sock', command)
            if 'nginx' in command:
                found['nginx'] = pid
            elif pool:
                found[pool.group(1)] = pid
        return found

    def stop(self, timeout=60):
        return super().stop(timeout)


def served_env():
    env = {name: value for name, value in os.environ.items()
           if name not in ('DJANGO_SETTINGS_MODULE', 'PROMETHEUS_MULTIPROC_DIR', 'FRONT',
                           'WORKERS', 'OPERATOR_THREADS', 'HOST', 'NGINX')}
    return {**env, 'DJANGO_SECRET_KEY': 'serving-tests', 'DJANGO_SECURE_COOKIES': 'false',
            'PLACEMENT_LOG_LEVEL': 'WARNING'}


METRICS_TOKEN = 'serving-tests-token'


@pytest.fixture(scope='module')
def front(tmp_path_factory):
    """The default set-up with the demo cloud, as `scripts/run.sh --demo`
    serves it; the scrape is allowed from 192.0.2.7 only (or with the token)."""
    if not shutil.which('nginx') and not Path('/usr/sbin/nginx').exists():
        pytest.skip('nginx is not installed (scripts/ci/test-setup.sh installs it)')
    served = Served(tmp_path_factory.mktemp('serving'), 'front', args=['--demo'], env={
        'PLACEMENT_METRICS_ALLOWED_NETWORKS': '192.0.2.7/32',
        'PLACEMENT_METRICS_TOKEN': METRICS_TOKEN,
        'PLACEMENT_CORS_ALLOWED_ORIGINS': 'http://dashboards.example'})
    yield served
    # SIGTERM: nginx, then the pools, stop gracefully; nothing is left.
    pids = [*served.processes().values()]
    assert served.stop() < 40
    assert served.process.returncode == 143
    assert [pid for pid in pids if Path(f'/proc/{pid}').exists()] == []


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__('localhost', timeout=60)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self.socket_path))


def answer(connection, method, url, headers, body=None):
    connection.request(method, url, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, response.getheaders(), response.read()


# Framing, which is each connection's own.
HOP_BY_HOP = {'connection', 'transfer-encoding', 'keep-alive'}
# Each answer's own: a request id, the second it was sent.
OWN = ('x-openstack-request-id', 'date')


def compared(status, headers, body):
    """The answer with its own values (OWN) blanked and headers in order
    of name (nginx writes a few of them first)."""
    request_id = dict((k.lower(), v) for k, v in headers).get('x-openstack-request-id')
    if request_id:
        body = body.replace(request_id.encode(), b'<own>')
    return status, sorted((name.lower(), '<own>' if name.lower() in OWN else value)
                          for name, value in headers if name.lower() not in HOP_BY_HOP), body


def through_both(served, method, url, headers=None, body=None):
    """The answer through the front, and the answer of the pool the path
    belongs to on its socket (as nginx asks it), made comparable."""
    headers = {'Host': f'127.0.0.1:{served.port}', **(headers or {})}
    pool = 'operator' if serving.is_operator_path(url.partition('?')[0]) else 'api'
    front = answer(http.client.HTTPConnection('127.0.0.1', served.port, timeout=60),
                   method, url, headers, body)
    direct = answer(UnixConnection(served.data / 'run' / f'{pool}.sock'), method, url,
                    {**headers, 'X-Real-IP': '127.0.0.1'}, body)
    return compared(*front), compared(*direct)


API = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39',
       'Accept': 'application/json'}


@pytest.mark.slow
@pytest.mark.any_database
@pytest.mark.parametrize('method, url, headers', [
    ('GET', '/', {}),
    ('HEAD', '/', {}),
    ('GET', '/resource_providers?name=r1-rack01-cn01', API),
    ('GET', '/no-such-path', API),                  # Placement's 404
    ('GET', '/resource_providers/', API),           # and another
    ('GET', '/resource_providers', {**API, 'Origin': 'http://dashboards.example'}),
    ('OPTIONS', '/resource_providers', {'Origin': 'http://dashboards.example',
                                        'Access-Control-Request-Method': 'GET'}),
    ('GET', '/capacity?group_by=aggregate', API),
    ('GET', '/ui/', {}),                            # the sign-in redirect
    ('GET', '/favicon.ico', {}),
    ('GET', '/static/css/placement.css', {}),
    ('GET', '/api/schema/?version=1.20&format=json', {}),
])
def test_the_front_changes_no_answer(front, method, url, headers):
    through_front, from_the_pool = through_both(front, method, url, headers)
    assert through_front == from_the_pool
    assert ('server', 'gunicorn') in through_front[1] and ('date', '<own>') in through_front[1]


def provider(served):
    """One of the demo's compute nodes, as the API lists it."""
    _, _, body = answer(http.client.HTTPConnection('127.0.0.1', served.port), 'GET',
                        '/resource_providers?name=r1-rack01-cn01', API)
    return json_of(body)['resource_providers'][0]


def json_of(body):
    return json.loads(body)


@pytest.mark.slow
@pytest.mark.any_database
def test_the_front_passes_writes_conditions_and_refusals_as_the_pools_answer(front):
    conn = http.client.HTTPConnection('127.0.0.1', front.port, timeout=60)
    uuid = provider(front)['uuid']
    status, headers, _ = answer(conn, 'GET', f'/resource_providers/{uuid}', API)
    etag, modified = dict(headers)['ETag'], dict(headers)['Last-Modified']
    assert answer(conn, 'GET', f'/resource_providers/{uuid}', {**API, 'If-None-Match': etag})[0] \
        == 304
    # nginx itself answers no condition: Placement ignores If-Modified-Since.
    assert answer(conn, 'GET', f'/resource_providers/{uuid}',
                  {**API, 'If-Modified-Since': modified})[0] == 200
    write = {**API, 'Content-Type': 'application/json'}
    status, headers, _ = answer(conn, 'PUT', f'/resource_providers/{uuid}',
                                {**write, 'If-Match': etag}, b'{"name": "renamed"}')
    assert status == 200 and dict(headers)['ETag'] != etag
    assert answer(conn, 'PUT', f'/resource_providers/{uuid}', {**write, 'If-Match': etag},
                  b'{"name": "r1-rack01-cn01"}')[0] == 412
    assert answer(conn, 'PUT', f'/resource_providers/{uuid}', write,
                  b'{"name": "r1-rack01-cn01"}')[0] == 200
    # A new provider: its Location as the pool wrote it.
    status, headers, body = answer(conn, 'POST', '/resource_providers', write,
                                   b'{"name": "through-the-front"}')
    assert dict(headers)['Location'] == (
        f'http://127.0.0.1:{front.port}/resource_providers/{json_of(body)["uuid"]}')
    # A body over PLACEMENT_MAX_BODY_SIZE: Placement's 413, from nginx's limit.
    for framing in ({'Content-Length': str(9 * 2**20)}, {'Transfer-Encoding': 'chunked'}):
        status, headers, body = raw_request(front.port, 'PUT', f'/resource_providers/{uuid}',
                                            {**write, **framing}, b'[' * (9 * 2**20))
        assert status == 413, body
        (error,) = json_of(body)['errors']
        assert error['detail'].endswith('The request body is larger than 8388608 bytes.  ')
        assert headers['server'] == 'gunicorn' and 'openstack-api-version' in headers


def raw_request(port, method, url, headers, body):
    """A request whose body the server may refuse half-way: (status,
    {header: value}, body)."""
    with socket.create_connection(('127.0.0.1', port), timeout=60) as sock:
        chunked = headers.get('Transfer-Encoding') == 'chunked'
        head = ''.join(f'{name}: {value}\r\n' for name, value in headers.items())
        sock.sendall(f'{method} {url} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}'
                     'Connection: close\r\n\r\n'.encode())
        try:
            for start in range(0, len(body), 2**16):
                piece = body[start:start + 2**16]
                sock.sendall(b'%x\r\n%s\r\n' % (len(piece), piece) if chunked else piece)
        except OSError:
            pass   # refused before the end
        received = b''
        while chunk := sock.recv(2**16):
            received += chunk
    response = http.client.HTTPResponse(FakeSocket(received))
    response.begin()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


class FakeSocket:
    def __init__(self, data):
        self.data = data

    def makefile(self, *args, **kwargs):
        return io.BytesIO(self.data)


@pytest.mark.slow
@pytest.mark.any_database
def test_scrapes_exports_and_client_addresses_through_the_front(front):
    # A client-sent address grants nothing: nginx overwrites X-Real-IP.
    claims = {'X-Real-IP': '192.0.2.7', 'X-Forwarded-For': '192.0.2.7'}
    conn = http.client.HTTPConnection('127.0.0.1', front.port, timeout=60)
    assert answer(conn, 'GET', '/metrics', claims)[0] == 403
    # The front's own X-Real-IP is believed: the address allowed may scrape.
    pool = UnixConnection(front.data / 'run' / 'operator.sock')
    assert answer(pool, 'GET', '/metrics', {'X-Real-IP': '192.0.2.7'})[0] == 200
    # Compressed, as the pool compresses it; both pools' requests counted.
    status, headers, body = answer(conn, 'GET', '/metrics', {
        'Authorization': f'Bearer {METRICS_TOKEN}', 'Accept-Encoding': 'gzip'})
    assert status == 200 and dict(headers)['Content-Encoding'] == 'gzip'
    text = gzip.decompress(body).decode()
    assert 'openstack_placement_up 1' in text
    assert re.search(r'placement_requests_total\{method="GET",route="/resource_providers",', text)
    assert re.search(r'placement_requests_total\{method="GET",route="/capacity",', text)
    # A streamed export, signed in.
    session = signed_in(front)
    status, headers, body = answer(conn, 'GET', '/ui/providers/?export=csv', session)
    assert status == 200 and dict(headers)['Transfer-Encoding'] == 'chunked'
    lines = body.decode().splitlines()
    assert lines[0].startswith('uuid,name,') and len(lines) > 50


def signed_in(served):
    """Headers carrying a signed-in session of the demo's admin."""
    conn = http.client.HTTPConnection('127.0.0.1', served.port, timeout=60)
    _, headers, _ = answer(conn, 'GET', '/accounts/login/', {})
    csrf = re.search(r'csrftoken=([^;]+)', dict(headers)['Set-Cookie']).group(1)
    _, headers, _ = answer(conn, 'POST', '/accounts/login/', {
        'Cookie': f'csrftoken={csrf}', 'Content-Type': 'application/x-www-form-urlencoded',
        'Referer': f'http://127.0.0.1:{served.port}/accounts/login/'},
        f'username=admin&password=admin&csrfmiddlewaretoken={csrf}'.encode())
    cookies = '; '.join(c.split(';')[0] for name, c in headers if name == 'Set-Cookie')
    assert 'sessionid=' in cookies, headers
    return {'Cookie': cookies}


class SlowClients:
    """`count` connections sending a request's headers one byte a second,
    never finishing them while the block runs."""

    def __init__(self, port, count=50):
        self.sockets = [socket.create_connection(('127.0.0.1', port)) for _ in range(count)]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.trickle, daemon=True)

    def trickle(self):
        for byte in b'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + b'x' * 100:
            for sock in self.sockets:
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    pass
            if self.stopped.wait(1):
                return

    def __enter__(self):
        self.thread.start()
        time.sleep(2)   # every connection accepted and a few bytes in
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join()
        for sock in self.sockets:
            sock.close()


def seconds_to_answer(port, url, timeout=3):
    """Seconds until the whole answer came (the client gives up at
    `timeout`: None)."""
    try:
        response, _, elapsed = send(port, 'GET', url, version='1.39', timeout=timeout)
    except TimeoutError:
        return None
    assert response.status == 200
    return elapsed


CHECKED = ['/', '/allocation_candidates?resources=VCPU:1']


@pytest.mark.slow
@pytest.mark.any_database
def test_slow_clients_cannot_block_the_front(front):
    with SlowClients(front.port):
        times = [seconds_to_answer(front.port, url) for url in CHECKED]
    assert all(t is not None and t < 1 for t in times), times


@pytest.mark.slow
@pytest.mark.any_database
def test_slow_clients_block_one_gunicorn_without_the_front(front, tmp_path):
    """Without nginx, one gunicorn of sync workers as before (on the front's
    database), with a warning; the same load shows the problem the front
    solves."""
    single = Served(tmp_path, 'single', script='scripts/serve.sh',
                    database=front.database, env={'NGINX': str(tmp_path / 'no-nginx')})
    try:
        assert 'serve: WARNING: nginx is not installed' in single.log()
        assert 'PLACEMENT_SERVING_POOL' not in Path(
            f'/proc/{single.process.pid}/environ').read_text(errors='replace')
        with SlowClients(single.port):
            times = [seconds_to_answer(single.port, url) for url in CHECKED]
    finally:
        single.stop()
    assert any(t is None or t > 1 for t in times), times


def heavy_search(limit):
    """An explorer search that combines for a while: eight isolated groups
    where no tree has eight providers; distinct limits, so that none is
    remembered."""
    groups = '%0A'.join(f'_G{n}+resources%3DVCPU%3A1' for n in range(8))
    return f'/ui/explorer/?groups={groups}&group_policy=isolate&limit={limit}'


def access_log(served):
    """(path, pid) of every request the pools logged from a client (not
    serve.sh's own look at whether they answer, with no address)."""
    return re.findall(r'^[\d.]+ .*"[A-Z]+ (\S+) HTTP/1\.[01]" \d+ .* <(\d+)>$', served.log(),
                      re.MULTILINE)


def niceness(pid):
    # /proc/<pid>/stat after the command's closing parenthesis: the 17th field.
    return int(Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[16])


@pytest.mark.slow
@pytest.mark.any_database
def test_operator_requests_go_to_the_operator_pool_and_never_hold_up_the_api(front):
    pools = front.processes()
    workers = {pool: set(children(pools[pool])) for pool in ('api', 'operator')}
    assert len(workers['api']) == 2 and len(workers['operator']) == 1
    # The operator pool yields the CPU; each pool knows which it is.
    for pool in ('api', 'operator'):
        (pid,) = workers['operator'] if pool == 'operator' else list(workers['api'])[:1]
        environ = Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
        assert f'PLACEMENT_SERVING_POOL={pool}'.encode() in environ
    assert niceness(pools['operator']) == 10 and niceness(pools['api']) == 0

    # Trees enough for the searches to take seconds.
    subprocess.run([sys.executable, 'manage.py', 'load_scale', '-n', '1500', '--force'],
                   cwd=REPO, env=front.env, check=True, capture_output=True, timeout=300)
    session = signed_in(front)
    busy = []

    def search(limit):
        conn = http.client.HTTPConnection('127.0.0.1', front.port, timeout=120)
        started = time.monotonic()
        status = answer(conn, 'GET', heavy_search(limit), session)[0]
        busy.append((status, time.monotonic() - started))

    # As many as the operator pool has threads.
    searches = [threading.Thread(target=search, args=(limit,)) for limit in range(11, 15)]
    for thread in searches:
        thread.start()
    time.sleep(0.5)
    api_times = []
    while len(busy) < len(searches) and len(api_times) < 20:
        api_times.append(seconds_to_answer(front.port, CHECKED[1], timeout=5))
        time.sleep(0.2)
    for thread in searches:
        thread.join()
    slowest = max(seconds for _, seconds in busy)
    # Answered, or stopped by the search's budget (sharing one process,
    # each gets a part of it).
    assert {status for status, _ in busy} <= {200, 503}
    # The API answered at once all along, while the searches took seconds.
    assert slowest > 2 and api_times and max(t or 99 for t in api_times) < 1, (slowest, api_times)

    logged = access_log(front)
    served_by = {pool: {url for url, pid in logged if int(pid) in pids}
                 for pool, pids in workers.items()}
    assert any(url.startswith('/ui/explorer/') for url in served_by['operator'])
    assert any(url.startswith('/allocation_candidates') for url in served_by['api'])
    assert not [url for url in served_by['api'] if serving.is_operator_path(url.split('?')[0])]
    assert not [url for url in served_by['operator']
                if not serving.is_operator_path(url.split('?')[0])]


@pytest.mark.slow
@pytest.mark.any_database
def test_the_set_up_stops_when_a_server_exits(front, tmp_path):
    served = Served(tmp_path, 'short-lived', script='scripts/serve.sh', database=front.database)
    # Until serve.sh has done starting (its wait for nginx ended: only the
    # three are left), so that its watch over them has begun.
    wait_for(lambda: len(children(served.process.pid)) == 3 and len(served.processes()) == 3,
             'serve.sh to be done starting', timeout=30, interval=0.2)
    processes = served.processes()
    assert set(processes) == {'api', 'operator', 'nginx'}
    os.kill(processes['operator'], signal.SIGKILL)
    served.process.wait(60)
    assert served.process.returncode != 0
    wait_for(lambda: not any(Path(f'/proc/{pid}').exists() for pid in processes.values()),
             'the other servers to be gone', timeout=10)
    assert 'serve: a server exited' in served.log()
