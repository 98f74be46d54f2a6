"""placement-manage and placement-status (allocations.console) as deployment
tools run them: the installed commands, in processes of their own, against
a database of their own on the server the tests use."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import databases

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _process(database_url, command, args):
    """The argv and options of `placement-manage ARGS` (command 'manage') or
    `placement-status ARGS` ('status'): the console scripts `pip install -e .`
    installed in the virtualenv (scripts/ci/test-setup.sh), run from
    outside the repository."""
    env = {**os.environ, 'DATABASE_URL': database_url}
    env.pop('DJANGO_SETTINGS_MODULE', None)
    return ([str(BIN / f'placement-{command}'), *args],
            {'cwd': tempfile.gettempdir(), 'env': env, 'text': True})


def run(database_url, command, *args, timeout=600):
    """(exit code, output) of the command, run to its end."""
    argv, options = _process(database_url, command, args)
    done = subprocess.run(argv, capture_output=True, timeout=timeout, **options)
    return done.returncode, done.stdout + done.stderr


def start(database_url, command, *args):
    argv, options = _process(database_url, command, args)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **options)


@pytest.fixture
def empty_database(db, tmp_path):
    with databases.empty_database(tmp_path, 'console') as url:
        yield url


@pytest.mark.slow
def test_two_db_syncs_at_once_on_an_empty_database_both_succeed(empty_database):
    # Placement 16.0.0 fails one of them on MariaDB ("Table 'allocations'
    # already exists"); so would Django's migrate without the sync lock.
    syncs = [start(empty_database, 'manage', 'db', 'sync') for _ in range(2)]
    results = [(sync.wait(timeout=600), sync.stdout.read()) for sync in syncs]
    assert [code for code, _ in results] == [0, 0], results
    code, output = run(empty_database, 'manage', 'db', 'version')
    assert code == 0 and 'providers: ' in output and 'allocations: ' in output, output
    # Synced again: nothing to apply.
    assert run(empty_database, 'manage', 'db', 'sync') == (0, '')
    code, output = run(empty_database, 'manage', 'db', 'online_data_migrations')
    assert code == 0 and 'No online data migrations are pending' in output

    # placement-status on the new cloud, then with a migration unapplied.
    code, output = run(empty_database, 'status', 'upgrade', 'check')
    assert code == 0 and 'Check: Migrations' in output, output
    code, output = run(empty_database, 'status', 'upgrade', 'check', '--json')
    assert code == 0 and output.lstrip().startswith('{'), output
    forget_last_migration(empty_database)
    code, output = run(empty_database, 'status', 'upgrade', 'check')
    assert code == 2, output


def forget_last_migration(database_url):
    """The record of providers' last migration deleted, as if never applied."""
    code = ('import django, os; os.environ["DJANGO_SETTINGS_MODULE"] = "placement_site.settings"; '
            'django.setup(); from django.db.migrations.recorder import MigrationRecorder; '
            'from django.db import connection; m = MigrationRecorder(connection).migration_qs; '
            'm.filter(pk=m.filter(app="providers").order_by("-name")[0].pk).delete()')
    env = {**os.environ, 'DATABASE_URL': database_url}
    env.pop('DJANGO_SETTINGS_MODULE', None)
    subprocess.run([sys.executable, '-c', code], cwd=REPO, env=env, check=True, timeout=120)


def test_an_unknown_command_is_a_usage_error_not_a_traceback():
    code, output = run('sqlite:////nonexistent/placement.sqlite3', 'manage', 'db', 'upgrade')
    assert code == 2 and 'invalid choice' in output and 'Traceback' not in output
