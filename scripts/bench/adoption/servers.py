"""The servers of an adoption check: the database server (a test server,
or --server-url) and the databases on it; the real openstack-placement
16.0.0 from its own venv and ours, each a gunicorn on a free port
(scripts/harness/placement.py), started, spoken to with noauth2 admin
tokens and stopped; and ours filled by manage.py import_placement from the
source database.
"""
import http.client
import json
import os
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from scripts.bench.adoption import LATEST
from scripts.harness.api import send
from scripts.harness.placement import RealPlacement
from scripts.harness.placement import Server
from scripts.harness.placement import placement_venv

ROOT = Path(__file__).resolve().parents[3]
OUR_PYTHON = ROOT / '.venv' / 'bin' / 'python'

# The tables of Placement's schema (alembic head of 16.0.0), in load order.
SOURCE_TABLES = [
    'resource_classes', 'traits', 'resource_providers', 'inventories',
    'placement_aggregates', 'resource_provider_aggregates', 'resource_provider_traits',
    'projects', 'users', 'consumer_types', 'consumers', 'allocations',
]

# --- the API servers -----------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: list          # [(name, value)] as sent
    body: bytes

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def json(self):
        return json.loads(self.body) if self.body else None


class Endpoint:
    """A Placement endpoint spoken to with noauth2 admin tokens."""

    def __init__(self, base):
        parsed = urllib.parse.urlsplit(base)
        self.base, self.host, self.port = base, parsed.hostname, parsed.port

    def call(self, method, path, body=None, version=LATEST, token='admin'):
        for attempt in range(5):
            try:
                response, raw, _ = send(self.port, method, path, body, version, token,
                                        host=self.host, timeout=600)
                return Answer(response.status, response.getheaders(), raw)
            except (ConnectionError, http.client.RemoteDisconnected):
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    def expect(self, method, path, body=None, version=LATEST, ok=(200, 201, 204)):
        answer = self.call(method, path, body, version)
        if answer.status not in ok:
            raise RuntimeError(f'{method} {path} at {version}: {answer.status} '
                               f'{answer.body[:400]!r}')
        return answer


class Servers:
    """One backend's server processes: the real Placement on the source
    database and ours on our database, their logs in `workdir`."""

    def __init__(self, workdir, src_db, our_db):
        self.workdir, self.src_db, self.our_db = workdir, src_db, our_db
        self.processes = []
        self.venv = None

    def placement(self, backend, name):
        """The real Placement on the source database (not started)."""
        self.venv = self.venv or placement_venv()
        return RealPlacement(self.venv, backend.sqlalchemy_url(self.src_db), self.workdir,
                             name=name, workers=2)

    def _started(self, server):
        self.processes.append(server)
        server.start(timeout=90)
        return Endpoint(server.url)

    def start_placement(self, backend, name, *, db_sync=False):
        """The real Placement started (after its db sync when asked)."""
        server = self.placement(backend, name)
        if db_sync:
            server.db_sync()
        return self._started(server)

    def start_ours(self, backend):
        return self._started(Server(
            self.workdir, database_url=backend.url_for(self.our_db), workers=2, threads=None,
            env={'PLACEMENT_AUTH_STRATEGY': 'noauth2', 'DJANGO_SECRET_KEY': 'adoption-check'},
            gunicorn_args=['--timeout', '600'], python=OUR_PYTHON))

    def import_into_ours(self, backend, report):
        """migrate, then import_placement from the source database; its time
        and output go into `report`, also when it fails."""
        env = dict(os.environ, DATABASE_URL=backend.url_for(self.our_db),
                   DJANGO_SECRET_KEY='adoption-check', PLACEMENT_DATA_DIR=self.workdir)
        backend.recreate(self.our_db)
        subprocess.run([OUR_PYTHON, 'manage.py', 'migrate', '--noinput', '-v0'], cwd=ROOT,
                       env=env, check=True)
        started = time.time()
        done = subprocess.run([OUR_PYTHON, 'manage.py', 'import_placement', '--source-url',
                               backend.url_for(self.src_db)], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        report['import_seconds'] = round(time.time() - started, 2)
        report['import_output'] = (done.stdout + done.stderr)[-4000:]
        if done.returncode:
            raise RuntimeError(f'import_placement failed ({done.returncode}):\n'
                               + report['import_output'])

    def stop(self):
        for server in reversed(self.processes):
            server.stop()


# --- databases -----------------------------------------------------------------------------------

class Backend:
    """A test server (scripts/dev/*-test-server.sh) and databases on it."""

    def __init__(self, kind, url=None):
        self.kind = kind
        if not url:
            script = {'postgresql': 'pg-test-server.sh', 'mariadb': 'mariadb-test-server.sh'}[kind]
            url = subprocess.run([os.path.join(ROOT, 'scripts', 'dev', script)], check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
        self.url = url
        self.parts = urllib.parse.urlsplit(self.url)

    def connect(self, database=None):
        p = self.parts
        if self.kind == 'postgresql':
            import psycopg2
            conn = psycopg2.connect(host=p.hostname, port=p.port, user=p.username,
                                    password=p.password, dbname=database or p.path[1:])
            conn.autocommit = True
            return conn
        import MySQLdb
        conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username,
                               password=p.password, database=database or p.path[1:])
        conn.autocommit(True)
        return conn

    def recreate(self, name):
        conn = self.connect()
        with conn.cursor() as cur:
            if self.kind == 'postgresql':
                cur.execute(f'DROP DATABASE IF EXISTS {name} WITH (FORCE)')
            else:
                cur.execute(f'DROP DATABASE IF EXISTS {name}')
            cur.execute(f'CREATE DATABASE {name}')
        conn.close()

    def drop(self, name):
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS {name}'
                        + (' WITH (FORCE)' if self.kind == 'postgresql' else ''))
        conn.close()

    def url_for(self, name, dialect=None):
        p = self.parts
        scheme = dialect or p.scheme
        query = '?charset=utf8mb4' if scheme.startswith('mysql+') else ''
        return f'{scheme}://{p.username}:{p.password}@{p.hostname}:{p.port}/{name}{query}'

    def sqlalchemy_url(self, name):
        return self.url_for(name, 'postgresql+psycopg2' if self.kind == 'postgresql'
                            else 'mysql+pymysql')

    def row_counts(self, name):
        conn = self.connect(name)
        counts = {}
        with conn.cursor() as cur:
            for table in SOURCE_TABLES:
                cur.execute(f'SELECT COUNT(*) FROM {table}')
                counts[table] = cur.fetchone()[0]
        conn.close()
        return counts

    def generations(self, name):
        """{table: (rows with generation > 1, highest)} for providers and consumers."""
        conn = self.connect(name)
        out = {}
        with conn.cursor() as cur:
            for table in ('resource_providers', 'consumers'):
                cur.execute(f'SELECT COUNT(*), MAX(generation) FROM {table} WHERE generation > 1')
                out[table] = list(cur.fetchone())
        conn.close()
        return out
