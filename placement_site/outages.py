"""The database is not there: restarting, failing over, out of connections.

A request that meets such an error is answered 503 with Retry-After in
Placement's error format, so that clients (keystoneauth honours
Retry-After) try again instead of failing a boot, and is logged as one
WARNING line with its request id, not as a traceback. The connections of
the request are closed, so the next request opens a fresh one: to the
restarted server, or through a multi-host DATABASE_URL with
target_session_attrs=read-write to whichever server is the primary now.
A transaction that failed this way wrote nothing (every write is one
transaction), so retrying it is safe.
"""
import logging

from django.db import DatabaseError
from django.db import InterfaceError
from django.db import OperationalError
from django.db import connections

from placement_site.replicas import one_line

LOG = logging.getLogger('placement.database')

# Seconds a client should wait before trying again: a restart or a
# promotion takes about that long, and keystoneauth reads whole seconds.
RETRY_AFTER_SECONDS = 1

DETAIL = 'The database is unavailable; please retry your request.'

# PostgreSQL SQLSTATEs (and classes) meaning "not now" rather than "wrong":
# connection exceptions (08), insufficient resources (53: too many clients,
# disk full), operator intervention (57P01 admin shutdown, 57P02 crash
# shutdown, 57P03 starting up / shutting down / in recovery), a read-only
# transaction (25006: the server is a standby now) and a serialization
# failure (40001: also how a standby cancels a query in conflict with
# recovery). Errors raised while connecting carry no SQLSTATE at all.
PG_CLASSES = ('08', '53')
PG_CODES = {'57P01', '57P02', '57P03', '25006', '40001'}
# MySQL/MariaDB error numbers of the same kinds: cannot connect (2002,
# 2003), server gone or connection lost (2006, 2013, 2055), too many
# connections (1040), shutdown in progress (1053), connection killed (1927),
# disconnected by the server (4031), read-only server (1290, 1792, 1836),
# a Galera node not ready (1047).
MYSQL_CODES = {2002, 2003, 2006, 2013, 2055, 1040, 1053, 1927, 4031, 1290, 1792, 1836, 1047}


def is_unavailable(exc):
    """Is this exception the database being away, not the request being
    wrong? Only errors the driver raised count (never SQLite's)."""
    if not isinstance(exc, DatabaseError):
        return False
    cause = exc.__cause__
    module = type(cause).__module__ if cause is not None else ''
    if module.startswith('psycopg2'):
        if isinstance(exc, InterfaceError):  # "connection already closed"
            return True
        code = getattr(cause, 'pgcode', None)
        if code is None:
            return isinstance(exc, OperationalError)
        return code in PG_CODES or code[:2] in PG_CLASSES
    if module.startswith('MySQLdb'):
        if isinstance(exc, InterfaceError):
            return True
        return bool(cause.args) and cause.args[0] in MYSQL_CODES
    return False


def forget_connections():
    """Close this thread's database connections (outside any atomic block),
    so the next request connects afresh. A connection to a server that
    became read-only still answers its health check, so it is closed here
    rather than left to Django."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.in_atomic_block:
            try:
                connection.close()
            except DatabaseError:
                pass


def note(request_id, path, exc):
    LOG.warning('Database unavailable, answered 503 to %s (%s): %s',
                request_id or '-', path, one_line(exc))
