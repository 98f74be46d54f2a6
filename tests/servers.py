"""Placement as scripts/run.sh serves it (gunicorn with our config file),
migrated, on a free port, for tests that need a real server process of
their own: the browser pages (on an SQLite file of their own), the replica
and resilience tests (on a private PostgreSQL)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg2
import requests

from scripts.harness import free_port

REPO = Path(__file__).resolve().parent.parent
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39',
           'Accept': 'application/json'}


def wait_for(condition, what, timeout=30, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (psycopg2.Error, requests.RequestException):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f'timed out waiting for {what}')
        time.sleep(interval)


class Server:
    """`manage.py migrate`-ed Placement under gunicorn, as scripts/run.sh
    runs it (its config file; sync workers when threads is None), on a free
    port."""

    def __init__(self, base, *, database_url, read_urls=(), max_lag=5, workers=2, threads=4,
                 env=None):
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        self.data = Path(base) / f'server-{self.port}'
        self.data.mkdir(parents=True)
        self.env = {**os.environ,
                    'DATABASE_URL': database_url,
                    'PLACEMENT_READ_DATABASE_URLS': ','.join(read_urls),
                    'PLACEMENT_REPLICA_MAX_LAG_SECONDS': str(max_lag),
                    'PLACEMENT_DATA_DIR': str(self.data),
                    'DJANGO_SECURE_COOKIES': 'false',
                    'DJANGO_SECRET_KEY': 'replica-tests',
                    'PLACEMENT_LOG_LEVEL': 'WARNING', **(env or {})}
        self.env.pop('DJANGO_SETTINGS_MODULE', None)
        self.workers, self.threads = workers, threads
        self.process = None
        self.session = requests.Session()

    def manage(self, *args):
        return subprocess.run([sys.executable, 'manage.py', *args], cwd=REPO, env=self.env,
                              check=True, capture_output=True, text=True, timeout=120)

    def start(self):
        with open(self.data / 'gunicorn.log', 'ab') as log:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'gunicorn', 'placement_site.wsgi:application',
                 '-c', 'python:placement_site.gunicorn_conf',
                 '-b', f'127.0.0.1:{self.port}', '--workers', str(self.workers),
                 *(['--threads', str(self.threads)] if self.threads else []),
                 '--log-level', 'warning'],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        wait_for(lambda: requests.get(self.url + '/', timeout=5).status_code == 200,
                 'the Placement server to start', timeout=60)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def worker_pids(self):
        """The gunicorn master's live worker processes."""
        children = Path(f'/proc/{self.process.pid}/task/{self.process.pid}/children')
        return sorted(int(pid) for pid in children.read_text().split())

    def log(self):
        return (self.data / 'gunicorn.log').read_text(errors='replace')

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
