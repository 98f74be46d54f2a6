"""Writes run again when the database aborted them (a deadlock, a
serialization or Galera certification failure, a lock wait timeout, a
busy SQLite) or they lost a race to a unique constraint."""
import dataclasses
import functools
import logging
import random
import time

from django.conf import settings
from django.db import DatabaseError
from django.db import IntegrityError
from django.db import OperationalError
from django.db import ProgrammingError
from django.db import models
from django.db import transaction

from placement_site import exceptions

LOG = logging.getLogger('placement.database')


# MySQL/MariaDB: a deadlock (also Galera's certification failure), a lock
# wait timeout.
MYSQL_RETRYABLE = {1213, 1205}


def is_retryable(exc):
    """Is this OperationalError a deadlock or serialization failure
    (PostgreSQL, MySQL), a lock wait timeout (MySQL) or a busy lock (SQLite)?
    The transaction is rolled back as it leaves atomic() and may simply be
    rerun."""
    cause = exc.__cause__
    if getattr(cause, 'pgcode', None) in ('40P01', '40001'):
        return True
    if cause is not None and type(cause).__module__.startswith('MySQLdb'):
        return bool(cause.args) and cause.args[0] in MYSQL_RETRYABLE
    return 'database is locked' in str(exc)


def is_broken_trigger(exc):
    """MariaDB's 1064 "Trigger ... has an error in its body" on a Galera
    node (10.11, several writers): loading the triggers of a table failed
    under load, though the trigger is sound, and the connection that met it
    fails again. Closed and rerun, the write succeeds (docs/ha.md)."""
    cause = exc.__cause__
    return (cause is not None and type(cause).__module__.startswith('MySQLdb')
            and bool(cause.args) and cause.args[0] == 1064
            and 'has an error in its body' in str(cause.args[-1]))


def _forget_broken_triggers(exc):
    """Close the node's open instances of our tables with triggers (FLUSH
    LOCAL TABLES, not replicated; it takes the RELOAD privilege), so that
    the rerun loads their triggers afresh; without the privilege, a new
    connection at least."""
    LOG.warning('Rerunning a write after MariaDB failed to load a trigger: %s', exc)
    connection = transaction.get_connection()
    try:
        with connection.cursor() as cursor:
            cursor.execute('SELECT DISTINCT event_object_table FROM information_schema.triggers '
                           'WHERE trigger_schema = DATABASE()')
            tables = [row[0] for row in cursor.fetchall()]
            if tables:
                # Waiting for the tables' users at most 2 s: statements
                # queue behind a waiting FLUSH.
                cursor.execute('SET STATEMENT lock_wait_timeout = 2 FOR FLUSH LOCAL TABLES '
                               + ', '.join(f'`{t}`' for t in tables))
    except DatabaseError as failed:
        LOG.warning('Could not flush the tables with triggers: %s', failed)
        connection.close()


def _catch_up():
    """On a Galera node with causal reads (?wsrep_sync_wait=N), one read
    outside the transaction before a rerun: the node first applies what
    the cluster committed, so the rerun does not read the state its last
    attempt lost on (a writer on a shared provider could lose again and
    again)."""
    connection = transaction.get_connection()
    if connection.in_atomic_block or not connection.settings_dict.get('WSREP_SYNC_WAIT'):
        return
    with connection.cursor() as cursor:
        cursor.execute('SELECT 1')


# How many times a write that lost a race, or was aborted, is run at most:
# settings.PLACEMENT_RETRY_ATTEMPTS (placement.conf's [placement]
# allocation_conflict_retry_count, 10 by default).
# An aborted write is rerun for at least this long, however many times: on a
# Galera cluster every writer that touches a shared provider (a disk pool)
# collides with the others at commit, tens of times a second.
RETRY_SECONDS = 5.0
# ... but none starts this long after the first: a write that waited out
# innodb_lock_wait_timeout (50 s by default) is answered, not rerun past
# gunicorn's worker timeout.
RETRY_CEILING_SECONDS = 20.0
# Seconds slept before the n-th rerun after an abort, at most (a random part
# of it, so that writers that collided do not collide again in step).
RETRY_BACKOFF = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1)


def retried(write, *, also=(), before_retry=None, exhausted=exceptions.ConcurrentUpdate,
            attempts=None, integrity=True):
    """Run `write()` in one transaction, again from fresh reads when the
    database aborted it (is_retryable: a deadlock, serialization failure,
    lock wait timeout or busy lock, or a Galera cluster's certification
    failure) or it lost a race: a unique constraint (a concurrent writer
    created the same row; unless integrity=False) or one of `also`.
    `before_retry()` resets what the failed attempt left behind. After
    `attempts` lost races, or `attempts` aborts and RETRY_SECONDS (or
    RETRY_CEILING_SECONDS in all), `exhausted()` is raised."""
    attempts = attempts or settings.PLACEMENT_RETRY_ATTEMPTS
    retry_on = (OperationalError, ProgrammingError, *also,
                *((IntegrityError,) if integrity else ()))
    started, lost, aborted = time.monotonic(), 0, 0
    while True:
        try:
            with transaction.atomic():
                return write()
        except retry_on as exc:
            was_aborted = isinstance(exc, (OperationalError, ProgrammingError))
            if was_aborted:
                if is_broken_trigger(exc):
                    _forget_broken_triggers(exc)
                elif isinstance(exc, ProgrammingError) or not is_retryable(exc):
                    raise
                aborted += 1
                elapsed = time.monotonic() - started
                if ((aborted >= attempts and elapsed > RETRY_SECONDS)
                        or elapsed > RETRY_CEILING_SECONDS):
                    raise exhausted()
            else:
                lost += 1
                if lost >= attempts:
                    raise exhausted()
            if before_retry is not None:
                before_retry()
            if was_aborted:
                backoff = RETRY_BACKOFF[min(aborted, len(RETRY_BACKOFF)) - 1]
                time.sleep(random.uniform(0, backoff))
                _catch_up()


def retried_write(service):
    """Decorator: the service is one transaction, run again whole when the
    database aborted it (is_retryable): with several writers to a Galera
    cluster any write can fail its certification at commit, and PostgreSQL
    and MySQL break deadlocks the same way. A lost race a service detects
    itself (a stale generation) is not rerun: it is the client's 409.

    Each rerun starts from the arguments as they were given: the model rows
    and dataclasses among them (also in a list, or as a dict's keys and
    values), which a service updates as it writes (a provider's generation),
    are put back first. Called inside another transaction, the service is
    part of it, and it is that one which is rerun."""
    @functools.wraps(service)
    def run(*args, **kwargs):
        if transaction.get_connection().in_atomic_block:
            return service(*args, **kwargs)
        saved = [(row, dict(row.__dict__)) for row in _rows_among([*args, *kwargs.values()])]

        def put_back():
            for row, state in saved:
                row.__dict__.clear()
                row.__dict__.update(state)
        return retried(lambda: service(*args, **kwargs), before_retry=put_back,
                       integrity=False)
    return run


def _rows_among(values):
    found = []
    for value in values:
        if isinstance(value, dict):
            found += _rows_among([*value.keys(), *value.values()])
        elif isinstance(value, (list, tuple)):
            found += _rows_among(value)
        elif isinstance(value, models.Model) or dataclasses.is_dataclass(value):
            found.append(value)
    return found
