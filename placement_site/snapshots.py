"""Read snapshots: a page's queries all see the database at one moment.

A dashboard page, an export, an admin page, GET /capacity or /metrics
reads with several queries. Between two of them a claim or a delete may
commit, and the later queries would see it: sums that disagree with their
rows, a name looked up for an owner who is gone (a 500). In a read
snapshot every query sees what the first one saw:

- PostgreSQL: a REPEATABLE READ, READ ONLY transaction, both said in its
  BEGIN (the driver's settings, given with autocommit off: no round trip
  of their own);
- MariaDB and MySQL: START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY
  (InnoDB's consistent read, taken when it starts), at REPEATABLE READ: our
  sessions read committed (placement_site.config), where the snapshot
  would be ignored. Two statements after Django's own (autocommit off);
- SQLite: a deferred read transaction under PRAGMA query_only. Not our
  writers' BEGIN IMMEDIATE, which takes the write lock and would stop every
  claim for as long as the page reads. In WAL mode (the project's
  settings: placement_site.config) writers go on committing and the reader
  keeps the snapshot of its first read; in a rollback journal the
  reader's shared lock would keep writers from committing until it ends.

A write inside a snapshot fails (the database refuses it in a read-only
transaction; WriteInReadSnapshot, a 500): a page that writes must not be
wrapped. Inside a transaction
already open (a write's, a test's) a snapshot adds nothing: the block reads
in that transaction, and in_read_snapshot() says it is not a snapshot.
"""
import contextlib
import contextvars
import functools

from django.db import connections
from django.db import transaction

from placement_site import replicas

# For this transaction only; its START applies it.
MYSQL_BEGIN = ('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ',
               'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')


class ReadSnapshot:
    """A read snapshot of database `using`, begun by begin() and ended by
    end() (which does nothing the second time), for a span a with-block
    cannot hold: a streamed answer's."""

    def __init__(self, using):
        self.connection = connections[using]
        self._ending = None   # what end() undoes; None: not begun, or no snapshot of its own

    def begin(self):
        connection = self.connection
        if connection.in_atomic_block or not connection.get_autocommit():   # connects
            return self   # read in the transaction already open
        with contextlib.ExitStack() as ending:
            begin = {'postgresql': _begin_postgresql, 'mysql': _begin_mysql,
                      'sqlite': _begin_sqlite}[connection.vendor]
            begin(connection, ending)
            connection.placement_read_snapshot = True
            ending.callback(setattr, connection, 'placement_read_snapshot', False)
            self._ending = ending.pop_all()
        return self

    def end(self, error=None):
        """Commit (nothing was written) or, after an `error`, roll back;
        an `error` that is the database refusing a write, raised again as
        WriteInReadSnapshot."""
        ending, self._ending = self._ending, None
        if ending is None:
            return
        ending.__exit__(type(error) if error else None, error,
                        error.__traceback__ if error else None)
        if error is not None and _refused_write(self.connection.vendor, error):
            raise WriteInReadSnapshot(
                f'a write inside a read snapshot of {self.connection.alias!r}: code that '
                'writes must not run in one') from error

    def __enter__(self):
        return self.begin()

    def __exit__(self, kind, error, traceback):
        self.end(error)


class WriteInReadSnapshot(RuntimeError):
    """Code read in a snapshot wrote: a bug, answered 500. Not a
    DatabaseError, so not taken for a database turned read-only (503,
    placement_site.outages), which is what the driver's error alone says."""


def _refused_write(vendor, error):
    """Is `error` the database refusing a write in a read-only transaction?"""
    cause = error.__cause__
    if vendor == 'postgresql':
        return getattr(cause, 'pgcode', None) == '25006'   # read_only_sql_transaction
    if vendor == 'mysql':
        return bool(getattr(cause, 'args', None)) and cause.args[0] == 1792
    return 'readonly database' in str(cause)   # SQLite, under query_only


def read_snapshot(using=None):
    """`with read_snapshot():` the block's reads in one snapshot of `using`,
    by default of the database reads go to here (replicas.read_database():
    the replica an advisory handler chose, else the primary)."""
    return ReadSnapshot(using or replicas.read_database())


def in_read_snapshot(connection):
    """Whether the connection is in a read snapshot, not in a transaction
    that may write."""
    return connection.in_atomic_block and getattr(connection, 'placement_read_snapshot', False)


def snapshot_reads(view):
    """A view (or viewset method) whose reads are one read snapshot of the
    database they go to. A streamed answer is read in a snapshot of its
    own, of the same database, from its first chunk to its last or until
    the client goes away: the view's ends when the view returns, because
    the middleware answering after it may write (a session saved)."""
    @functools.wraps(view)
    def in_snapshot(*args, **kwargs):
        snapshot = read_snapshot()
        with snapshot:
            response = view(*args, **kwargs)
        if getattr(response, 'streaming', False) and not response.is_async:
            # The routing the view read with (its replica) goes with the stream.
            alias = snapshot.connection.alias
            response.streaming_content = _Streamed(response.streaming_content,
                                                   contextvars.copy_context(), alias)
        return response
    return in_snapshot


class _Streamed:
    """A streamed answer's chunks, read in one snapshot begun at the first
    and ended after the last, or by close(): Django closes the answer when
    it has been sent or the client has gone away."""

    def __init__(self, chunks, context, using):
        self.chunks = iter(chunks)
        self.context = context
        self.snapshot = ReadSnapshot(using)
        self.begun = False

    def __iter__(self):
        return self

    def __next__(self):
        return self.context.run(self._next)

    def _next(self):
        if not self.begun:
            self.begun = True
            self.snapshot.begin()
        try:
            return next(self.chunks)
        except StopIteration:
            self.close()
            raise
        except BaseException as exc:
            self.snapshot.end(exc)
            raise

    def close(self):
        self.snapshot.end()


# ---- how each database begins one --------------------------------------------------------

def _begin_postgresql(connection, ending):
    # Django's BEGIN first: with autocommit off the driver keeps the
    # transaction's settings below and says them in the BEGIN it sends
    # before the first query. Set in autocommit, each would be a SET of its
    # own, and undoing it another.
    ending.enter_context(transaction.atomic(using=connection.alias))
    raw = connection.connection
    # The driver may find the connection gone here (a replica stopped): its
    # errors as Django's, by which replicas.advisory tells a replica failing.
    with connection.wrap_database_errors:
        kept = _session_of(raw)
        _set_session(raw, ('REPEATABLE READ', True))
    ending.callback(_restore_postgresql, connection, raw, kept)
    # Last in, so first out: the transaction ended on the driver's
    # connection before its settings are put back (the driver refuses them
    # inside one), and Django's COMMIT or ROLLBACK after finds nothing to end.
    ending.push(functools.partial(_end_postgresql, connection, raw))


def _session_of(raw):
    if hasattr(raw, 'readonly'):   # psycopg2
        return raw.isolation_level, raw.readonly
    return raw.isolation_level, raw.read_only


def _set_session(raw, session):
    isolation, read_only = session
    if hasattr(raw, 'readonly'):   # psycopg2
        raw.isolation_level, raw.readonly = isolation, read_only
    else:                          # psycopg 3
        from psycopg import IsolationLevel
        if isinstance(isolation, str):
            isolation = IsolationLevel[isolation.replace(' ', '_')]
        raw.isolation_level, raw.read_only = isolation, read_only


def _end_postgresql(connection, raw, kind, error, traceback):
    if connection.connection is not raw or raw.closed:
        return   # closed meanwhile: nothing to end
    with connection.wrap_database_errors:
        if error is None and not connection.needs_rollback:
            raw.commit()
        else:
            raw.rollback()


def _restore_postgresql(connection, raw, kept):
    """The session's own settings again, unless the connection was closed
    meanwhile (a replica marked down, a database outage)."""
    if connection.connection is not raw or raw.closed:
        return
    _set_session(raw, kept)


def _begin_mysql(connection, ending):
    ending.enter_context(transaction.atomic(using=connection.alias))
    with connection.cursor() as cursor:
        for sql in MYSQL_BEGIN:
            cursor.execute(sql)


def _begin_sqlite(connection, ending):
    mode = connection.transaction_mode
    connection.transaction_mode = None   # BEGIN: deferred, no write lock
    try:
        ending.enter_context(transaction.atomic(using=connection.alias))
    finally:
        connection.transaction_mode = mode
    # A setting of the connection, on the driver's: no query of the page,
    # and undone (before the commit: callbacks run last first) even after
    # a failed query, when Django refuses any more until the rollback.
    raw = connection.connection
    raw.execute('PRAGMA query_only = ON')
    ending.callback(_sqlite_writable, connection, raw)


def _sqlite_writable(connection, raw):
    if connection.connection is raw:   # not closed meanwhile
        raw.execute('PRAGMA query_only = OFF')
