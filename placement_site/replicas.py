"""Read replicas: advisory reads from PostgreSQL streaming replicas.

An answer is advisory when the client cannot build a generation check on
it: allocation candidates, their explanation, the dashboards. A claim made
from a stale candidate is checked again on the primary when it is written
(PUT /allocations), so capacity is never exceeded. Handlers of such answers
are decorated with @advisory; inside them ReplicaRouter sends reads to a
healthy replica. Every write, and every read anywhere else, goes to the
primary ('default').

A replica is healthy when it answers and lags no more than
PLACEMENT_REPLICA_MAX_LAG_SECONDS. Health is checked at most once per
replica per HEALTH_SECONDS in each process, so it costs nothing per request
on average and a dead replica is not dialled on every request. A replica
that fails during a request is marked down and the request is answered from
the primary.

With no PLACEMENT_READ_DATABASE_URLS the router is not installed and
@advisory calls the handler directly: no extra query, no extra work.
See docs/replicas.md.
"""
import contextlib
import contextvars
import functools
import logging
import random
import threading
import time

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db import connections
from django.db.utils import DatabaseError
from django.db.utils import InterfaceError
from django.db.utils import OperationalError

log = logging.getLogger('placement.replicas')

# How long (seconds) a replica's health, good or bad, is trusted.
HEALTH_SECONDS = 1.0
# A check in progress: other threads keep the previous answer this long at most.
CHECKING_SECONDS = 30.0

# The replica's replay lag in seconds. Caught up (everything received is
# replayed) is 0 however long ago the primary last wrote; behind, the age of
# the last transaction replayed; not a standby at all, 0. NULL (behind, with
# nothing replayed since the replica started) is unknown, hence unhealthy.
LAG_SQL = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
    ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())
END
"""

_health = {}  # alias -> (healthy (None: never checked), trusted until (time.monotonic()))
_health_lock = threading.Lock()


class _Reading:
    """An advisory block's choice of database, made at its first read so the
    whole block reads from one server."""
    __slots__ = ('alias',)

    def __init__(self):
        self.alias = None

    def database(self):
        if self.alias is None:
            self.alias = choose_replica()
        return self.alias


_reading = contextvars.ContextVar('placement_advisory_reading', default=None)


def replica_aliases():
    return settings.PLACEMENT_READ_DATABASES


# ---- health ---------------------------------------------------------------------------

def replica_lag(alias):
    """The replica's lag in seconds (None: unknown). Raises DatabaseError
    when the replica cannot be reached."""
    with connections[alias].cursor() as cursor:
        cursor.execute(LAG_SQL)
        lag = cursor.fetchone()[0]
    return None if lag is None else float(lag)


def _set_health(alias, healthy, why=''):
    with _health_lock:
        was = _health.get(alias, (None, 0))[0]
        _health[alias] = (healthy, time.monotonic() + HEALTH_SECONDS)
    if was is not False and not healthy:
        log.warning('Read replica %s skipped: %s', alias, why)
    elif healthy and was is False:
        log.warning('Read replica %s is back in use', alias)


def is_healthy(alias):
    """The cached health of the replica, checked again when it is older than
    HEALTH_SECONDS (by one thread; the others keep the previous answer)."""
    now = time.monotonic()
    with _health_lock:
        known = _health.get(alias)
        if known is not None and now < known[1]:
            return bool(known[0])
        _health[alias] = (known[0] if known else None, now + CHECKING_SECONDS)
    try:
        lag = replica_lag(alias)
    except DatabaseError as exc:
        _close(alias)
        _set_health(alias, False, f'unreachable ({one_line(exc)})')
        return False
    except BaseException:
        _set_health(alias, False, 'health check failed')
        raise
    max_lag = settings.PLACEMENT_REPLICA_MAX_LAG_SECONDS
    if lag is None or lag > max_lag:
        _set_health(alias, False, 'lag unknown' if lag is None
                    else f'{lag:.2f} s behind (more than {max_lag:g} s)')
        return False
    _set_health(alias, True)
    return True


def mark_down(alias, why):
    """A replica that failed a query: skipped for HEALTH_SECONDS."""
    _close(alias)
    _set_health(alias, False, why)


def _close(alias):
    with contextlib.suppress(DatabaseError):
        connections[alias].close()


def one_line(exc):
    return ' '.join(str(exc).split())


def choose_replica():
    """A healthy replica, picked at random, or the primary when none is."""
    healthy = [alias for alias in replica_aliases() if is_healthy(alias)]
    return random.choice(healthy) if healthy else DEFAULT_DB_ALIAS


def reset():
    """Forget every replica's health (tests)."""
    with _health_lock:
        _health.clear()


# ---- where reads go ---------------------------------------------------------------------

@contextlib.contextmanager
def advisory_reads():
    """Reads in the block may come from a replica. Use @advisory on a
    handler instead when it can be answered again from the primary."""
    token = _reading.set(_Reading())
    try:
        yield
    finally:
        _reading.reset(token)


def advisory(handler):
    """A handler (view function or viewset method) whose answer is advisory:
    its reads come from a healthy replica. When the replica fails during the
    handler (OperationalError, InterfaceError), the replica is marked down
    and the handler runs again with every read on the primary. Inside
    another advisory handler (a dashboards page around its view,
    placement_site.viewers) the outer one chooses and answers again."""
    @functools.wraps(handler)
    def wrapped(*args, **kwargs):
        if not replica_aliases() or _reading.get() is not None:
            return handler(*args, **kwargs)
        reading = _Reading()
        token = _reading.set(reading)
        try:
            try:
                return handler(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                if reading.alias in (None, DEFAULT_DB_ALIAS):
                    raise
                mark_down(reading.alias, f'failed during a request ({one_line(exc)})')
            reading.alias = DEFAULT_DB_ALIAS
            return handler(*args, **kwargs)
        finally:
            _reading.reset(token)
    return wrapped


def read_database():
    """The alias reads should use here: a replica inside an advisory handler
    (when one is healthy), else the primary. For raw SQL:
    connections[read_database()].cursor()."""
    reading = _reading.get()
    return DEFAULT_DB_ALIAS if reading is None else reading.database()


class ReplicaRouter:
    """DATABASE_ROUTERS entry, installed when replicas are configured."""

    def db_for_read(self, model, **hints):
        return read_database()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # every alias holds the same database

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS
