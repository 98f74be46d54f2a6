"""Our Placement as scripts/run.sh's pools serve it (gunicorn with our
config file), on a database the caller names, migrated by manage(), on a
free port: the browser pages' demo server, the replica, resilience and
Galera runs' API servers, and the benchmarks' server."""
import os
import subprocess
import sys
from pathlib import Path

import requests

from scripts.harness.api import HEADERS
from scripts.harness.process import Process
from scripts.harness.process import children
from scripts.harness.process import free_port

REPO = Path(__file__).resolve().parents[2]


class Server(Process):
    """Placement under gunicorn (its config file; sync workers when threads
    is None, `gunicorn_args` after ours), its data directory and log in
    <base>/server-<port>."""

    def __init__(self, base, *, database_url, read_urls=(), max_lag=5, workers=2, threads=4,
                 env=None, port=None, gunicorn_args=(), python=sys.executable):
        self.port = port or free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        self.data = Path(base) / f'server-{self.port}'
        self.data.mkdir(parents=True, exist_ok=True)
        self.python = python
        self.workers, self.threads = workers, threads
        environment = {**os.environ,
                       'DATABASE_URL': database_url,
                       'PLACEMENT_READ_DATABASE_URLS': ','.join(read_urls),
                       'PLACEMENT_REPLICA_MAX_LAG_SECONDS': str(max_lag),
                       'PLACEMENT_DATA_DIR': str(self.data),
                       'DJANGO_SECURE_COOKIES': 'false',
                       'DJANGO_SECRET_KEY': 'placement-harness',
                       'PLACEMENT_LOG_LEVEL': 'WARNING', **(env or {})}
        super().__init__(
            [python, '-m', 'gunicorn', 'placement_site.wsgi:application',
             '-c', 'python:placement_site.gunicorn_conf',
             '-b', f'127.0.0.1:{self.port}', '--workers', str(workers),
             *(['--threads', str(threads)] if threads else []),
             '--log-level', 'warning', *gunicorn_args],
            self.data / 'gunicorn.log', env=environment, cwd=REPO, name='gunicorn')
        # The server's own settings, not a test run's.
        self.env.pop('DJANGO_SETTINGS_MODULE', None)
        self.session = requests.Session()

    def manage(self, *args, timeout=120):
        """manage.py with the server's settings (its database)."""
        return subprocess.run([self.python, 'manage.py', *args], cwd=REPO, env=self.env,
                              check=True, capture_output=True, text=True, timeout=timeout)

    def start(self, timeout=60):
        super().start()
        return self.wait_answering(self.url + '/', timeout)

    def worker_pids(self):
        """The gunicorn master's live worker processes."""
        return children(self.process.pid)

    def call(self, method, path, body=None, *, session=None):
        return (session or requests).request(method, self.url + path, json=body,
                                             headers=HEADERS, timeout=60)

    def login(self, username, password):
        """A requests.Session logged in to the dashboards."""
        session = requests.Session()
        session.get(self.url + '/accounts/login/', timeout=30).raise_for_status()
        answer = session.post(self.url + '/accounts/login/', data={
            'username': username, 'password': password,
            'csrfmiddlewaretoken': session.cookies['csrftoken']}, timeout=30,
            allow_redirects=False)
        assert answer.status_code == 302, answer.text[:2000]
        return session


def placement_venv():
    """The real OpenStack Placement's virtualenv, built once by
    scripts/dev/placement-venv.sh."""
    out = subprocess.run([str(REPO / 'scripts' / 'dev' / 'placement-venv.sh')], check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


class RealPlacement(Process):
    """OpenStack Placement itself (openstack-placement from the virtualenv
    `venv`) under gunicorn on a free port, on the database `db_url` (an
    SQLAlchemy URL) with noauth2; its configuration (an empty file:
    everything comes from the environment) and its log in `workdir`."""

    def __init__(self, venv, db_url, workdir, *, name='placement', workers=1, timeout=600):
        self.venv, self.db_url, self.workdir = Path(venv), db_url, Path(workdir)
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        config = self.workdir / f'{name}-etc'
        config.mkdir(parents=True, exist_ok=True)
        (config / 'placement.conf').touch()
        env = {**os.environ, 'OS_PLACEMENT_CONFIG_DIR': str(config),
               'OS_PLACEMENT_DATABASE__CONNECTION': db_url, 'OS_API__AUTH_STRATEGY': 'noauth2'}
        env.pop('DATABASE_URL', None)
        super().__init__([self.venv / 'bin' / 'gunicorn', '--no-control-socket',
                          '--workers', workers, '--timeout', timeout,
                          '--bind', f'127.0.0.1:{self.port}', 'placement.wsgi.api:application'],
                         self.workdir / f'{name}.log', env=env, cwd=self.workdir, name=name)

    def db_sync(self):
        """placement-manage db sync: Placement's schema in the database."""
        subprocess.run([self.venv / 'bin' / 'placement-manage', 'db', 'sync'], env=self.env,
                       cwd=self.workdir, check=True, capture_output=True)

    def start(self, timeout=90):
        super().start()
        return self.wait_answering(self.url + '/', timeout)
