"""The schema migrated once, however many nodes ask at the same time.

Deployment tools run `placement-manage db sync` on every node (kolla-ansible
in each API container's bootstrap, OpenStack-Ansible on each host), often at
once against a new database. Django's migrate is not safe to run twice at
once, nor is Placement's own: MariaDB's DDL commits as it goes, so the second
finds "Table ... already exists" and fails. Here each sync first takes one
lock for the database, held by its connection until the migration is done:
an advisory lock on PostgreSQL, a named lock (GET_LOCK) on MariaDB and
MySQL, a file lock beside the SQLite file. The others wait for it, then find
nothing left to apply.
"""
import contextlib
import fcntl
import time
import zlib

from django.core.management import call_command
from django.db import connections

LOCK_NAME = 'placement-db-sync'
# PostgreSQL's advisory locks are numbers: this name's, fixed.
PG_LOCK_KEY = zlib.crc32(LOCK_NAME.encode())
WAIT_SECONDS = 600


class LockTimeout(Exception):
    """Another sync held the lock for longer than we wait."""


def sync(*, database='default', wait=WAIT_SECONDS, verbosity=1, stdout=None):
    """Apply every migration not applied yet, under the database's sync lock."""
    with sync_lock(database, wait):
        call_command('migrate', database=database, interactive=False, verbosity=verbosity,
                     stdout=stdout)


@contextlib.contextmanager
def sync_lock(database='default', wait=WAIT_SECONDS):
    """Held while the body runs: no other sync of the same database runs
    meanwhile (waits up to `wait` seconds for one, then LockTimeout)."""
    connection = connections[database]
    vendor = connection.vendor
    if vendor == 'sqlite':
        with _file_lock(f'{connection.settings_dict["NAME"]}.sync-lock', wait):
            yield
        return
    connection.ensure_connection()
    if vendor == 'postgresql':
        take = ('SELECT pg_try_advisory_lock(%s)', [PG_LOCK_KEY])
        give = ('SELECT pg_advisory_unlock(%s)', [PG_LOCK_KEY])
    else:
        # GET_LOCK waits itself; a timeout of 0 makes it a try, as above.
        take = ('SELECT GET_LOCK(%s, 0)', [LOCK_NAME])
        give = ('SELECT RELEASE_LOCK(%s)', [LOCK_NAME])
    _until(lambda: _scalar(connection, *take) == 1, wait)
    try:
        yield
    finally:
        _scalar(connection, *give)


@contextlib.contextmanager
def _file_lock(path, wait):
    with open(path, 'a') as handle:
        def taken():
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True
        _until(taken, wait)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _until(taken, wait):
    deadline = time.monotonic() + wait
    while not taken():
        if time.monotonic() >= deadline:
            raise LockTimeout(f'another db sync held the lock for more than {wait} s')
        time.sleep(0.2)


def _scalar(connection, sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]
