"""Small query helpers shared by every app."""
import dataclasses
import functools
import itertools
import json
import logging
import random
import re
import time

from django.core.exceptions import EmptyResultSet
from django.db import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
    connections,
    models,
    router,
    transaction,
)
from django.db.models import Count, Lookup, OuterRef, Subquery, lookups
from django.db.models.functions import Coalesce

from placement_site import exceptions

LOG = logging.getLogger('placement.database')


def batched(rows, size):
    """The rows in lists of `size`, read as they are needed (a streamed
    answer or export holds one list at a time)."""
    rows = iter(rows)
    while batch := list(itertools.islice(rows, size)):
        yield batch


def storable(value):
    """Can this string be stored and looked up? (PostgreSQL refuses NUL.)"""
    return '\x00' not in value


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


RETRY_ATTEMPTS = 10
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
            attempts=RETRY_ATTEMPTS, integrity=True):
    """Run `write()` in one transaction, again from fresh reads when the
    database aborted it (is_retryable: a deadlock, serialization failure,
    lock wait timeout or busy lock, or a Galera cluster's certification
    failure) or it lost a race: a unique constraint (a concurrent writer
    created the same row; unless integrity=False) or one of `also`.
    `before_retry()` resets what the failed attempt left behind. After
    `attempts` lost races, or `attempts` aborts and RETRY_SECONDS (or
    RETRY_CEILING_SECONDS in all), `exhausted()` is raised."""
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


def count_of(model, field):
    """How many `model` rows point at the outer row through `field`, as a
    subquery: several counts on one row never multiply each other."""
    rows = (model.objects.filter(**{field: OuterRef('pk')}).order_by()
            .values(field).annotate(n=Count('*')).values('n'))
    return Coalesce(Subquery(rows), 0)


class InIds(Lookup):
    """`field__in_ids=ids`: membership in a long list of integer ids.

    Django's `__in` runs every value through the field's preparation, which
    at a few thousand ids (a candidate search's provider scope) cost more
    than the query itself. Here the ids are checked once as integers and
    bound as one parameter: an array on PostgreSQL, a JSON list on SQLite
    (no limit on the number of SQL variables)."""
    lookup_name = 'in_ids'
    prepare_rhs = False

    def get_prep_lookup(self):
        return list(map(int, self.rhs))

    def as_sql(self, compiler, connection):
        if not self.rhs:
            raise EmptyResultSet
        lhs, params = self.process_lhs(compiler, connection)
        if connection.vendor == 'postgresql':
            return f'{lhs} = ANY(%s)', [*params, self.rhs]
        if connection.vendor == 'sqlite':
            return f'{lhs} IN (SELECT value FROM json_each(%s))', [*params, json.dumps(self.rhs)]
        return f'{lhs} IN ({", ".join(["%s"] * len(self.rhs))})', [*params, *self.rhs]


class InStrings(InIds):
    """`field__in_strings=values`: InIds for strings, such as the consumer
    uuids of a cloud's whole list of servers (tens of thousands)."""
    lookup_name = 'in_strings'

    def get_prep_lookup(self):
        return list(map(str, self.rhs))


models.Field.register_lookup(InIds)
models.ForeignObject.register_lookup(InIds)  # related fields keep their own lookups
models.Field.register_lookup(InStrings)


class Ids(tuple):
    """Integer ids a Prepared read binds as one value (field__in_ids): a
    shape of any length."""


class Prepared:
    """A read whose SQL is compiled once per process and shape, then run
    with each call's values.

    Building and compiling a queryset cost Django more than running a small
    query does (0.1 to 2 ms each, where the query takes 0.2), and a candidate
    search runs about ten whose shape depends on the request's shape alone.
    `build(*values)` makes the read as a non-flat values_list of `model`; the
    first time a shape is met it is built from stand-ins for the values
    (markers) and compiled, and each marker is found again among the
    parameters. A value is an int, a str, None or a bool (these two part of
    the shape), a tuple of values (each its own value: `__in`) or Ids (one
    value: `__in_ids`).
    Where a shape does not compile to parameters for every value and to
    rows that need no conversion (a value inlined as LIMIT, empty Ids, a
    converted column), the read is built and run by the ORM every time, as
    if not prepared."""

    MARKER = 2_146_483_000   # stand-ins count up from here (within 32-bit integers)
    # Shapes kept per read, at most: a request's lengths (names, traits,
    # aggregates) are the client's to vary; later shapes run through the ORM.
    SHAPES = 256

    def __init__(self, model, build):
        self.model = model
        self.build = build
        self._compiled = {}   # (alias, shape) -> (sql, params, slots), or None

    def rows(self, *values):
        """The rows (tuples) of the read for these values."""
        alias = router.db_for_read(self.model)
        flat = _flat(values)
        if not all(_preparable(v) for v in flat):
            return list(self.build(*values).using(alias))
        key = (alias, tuple(_shape(v) for v in values))
        compiled = self._compiled.get(key, False)
        if compiled is False:
            compiled = self._compile(alias, values)
            if len(self._compiled) < self.SHAPES:
                self._compiled[key] = compiled
        if compiled is None:
            return list(self.build(*values).using(alias))
        sql, params, slots = compiled
        params = list(params)
        spread = {}
        for index, slot, form in slots:
            value = flat[slot]
            if form == 'array':
                value = list(map(int, value))
            elif form == 'json':
                value = json.dumps(list(map(int, value)))
            elif form == 'spread':
                spread[index] = value = list(map(int, value))
            params[index] = value
        if spread:
            sql, params = _spread(sql, params, spread)
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def _compile(self, alias, values):
        markers, stand_ins = [], []
        for value in values:
            stand_ins.append(_stand_in(value, markers, self.MARKER))
        queryset = self.build(*stand_ins).using(alias)
        compiler = queryset.query.get_compiler(alias)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:
            return None
        if compiler.get_converters([column[0] for column in compiler.select]):
            return None
        # Each parameter is matched to its marker by lookup: a client's
        # 10,000 aggregates make as many markers and parameters.
        slot_of = {marker: (slot, is_ids) for slot, (marker, is_ids) in enumerate(markers)}
        found = set()
        slots = []
        for index, param in enumerate(params):
            marker = _marker_in(param)
            if marker not in slot_of:
                continue
            slot, is_ids = slot_of[marker]
            form = _form(param, marker, is_ids)
            if form:
                slots.append((index, slot, form))
                found.add(slot)
        inlined = {int(number) for number in re.findall(r'\d+', sql)}
        if len(found) != len(markers) or not inlined.isdisjoint(slot_of):
            return None
        return sql, tuple(params), tuple(slots)


def _shape(value):
    if isinstance(value, Ids):
        return 'ids'
    if isinstance(value, tuple):
        return tuple(_shape(v) for v in value)
    if isinstance(value, bool):
        return value
    return None if value is None else type(value).__name__


def _flat(values, flat=None):
    """The values in marker order (tuples within tuples too)."""
    flat = [] if flat is None else flat
    for value in values:
        if isinstance(value, tuple) and not isinstance(value, Ids):
            _flat(value, flat)
        elif value is not None and not isinstance(value, bool):
            flat.append(value)
    return flat


def _spread(sql, params, spread):
    """The SQL and parameters with each of the `spread` parameters ({index:
    ids}) written as one placeholder per id ('%%' is a literal percent
    sign, not a placeholder)."""
    pieces = re.split(r'(%%|%s)', sql)
    written, flat, index = [], [], 0
    for piece in pieces:
        if piece != '%s':
            written.append(piece)
            continue
        if index in spread:
            written.append(', '.join(['%s'] * len(spread[index])))
            flat.extend(spread[index])
        else:
            written.append(piece)
            flat.append(params[index])
        index += 1
    return ''.join(written), flat


def _preparable(value):
    """Not empty Ids (no query at all), nor an integer the ORM would take as
    out of its field's range (a condition always or never true)."""
    if isinstance(value, Ids):
        return bool(value)
    return not isinstance(value, int) or -2 ** 31 <= value < 2 ** 31


def _stand_in(value, markers, base):
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Ids):
        markers.append((base + len(markers), True))
        return Ids((markers[-1][0],))
    if isinstance(value, tuple):
        return tuple(_stand_in(v, markers, base) for v in value)
    marker = base + len(markers)
    markers.append((marker, False))
    return marker if isinstance(value, int) else f'm{marker}'


def _marker_in(param):
    """The marker a compiled parameter may carry (see _form), or None."""
    if isinstance(param, list) and len(param) == 1:
        param = param[0]
    if isinstance(param, str) and param[:1] in ('m', '[') and param[1:].strip(']').isdigit():
        return int(param[1:].strip(']'))
    return param if isinstance(param, int) and not isinstance(param, bool) else None


def _form(param, marker, is_ids):
    """How a compiled parameter carries a value: the marker itself, or Ids
    as one array (PostgreSQL), a JSON list (SQLite) or one placeholder each
    (MySQL's IN list, compiled from one id: `spread`)."""
    if is_ids:
        if param == [marker]:
            return 'array'
        if param == f'[{marker}]':
            return 'json'
        if param == marker:
            return 'spread'
        return None
    if param == marker or param == f'm{marker}':
        return 'scalar'
    return None


class FoldsCaseOnMySQL:
    """`name__icontains='cn'` finds 'CN1' on every database. MySQL's
    case-insensitive lookups count on the column's collation, and ours is
    binary (placement_site.mysql): they compare upper case, as PostgreSQL's
    do (a case-insensitive collation would also fold accents)."""

    def process_lhs(self, compiler, connection, lhs=None):
        sql, params = super().process_lhs(compiler, connection, lhs)
        return (f'UPPER({sql})' if connection.vendor == 'mysql' else sql), params

    def get_rhs_op(self, connection, rhs):
        op = super().get_rhs_op(connection, rhs)
        if connection.vendor != 'mysql':
            return op
        operator, _, operand = op.partition(' ')  # LIKE %s, LIKE CONCAT(...)
        return f'{operator} UPPER({operand})'


for _builtin in (lookups.IExact, lookups.IContains, lookups.IStartsWith, lookups.IEndsWith):
    _folding = type(_builtin.__name__, (FoldsCaseOnMySQL, _builtin), {})
    models.CharField.register_lookup(_folding)
    models.TextField.register_lookup(_folding)
