"""Reads compiled once per process and shape (Prepared), then run with
each call's values: the candidate search's hot reads, and (prepared on the
server too) the small reads nova makes most."""
import itertools
import json
import re
import weakref

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db import router


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
    Columns the ORM converts as it reads them (a sum, SQLite's datetimes)
    are converted the same way. Where a shape does not compile to
    parameters for every value (a value inlined as LIMIT, empty Ids), the
    read is built and run by the ORM every time, as if not prepared.

    `on_server`: on PostgreSQL the compiled SQL is also PREPAREd once per
    connection and run with EXECUTE, so the server plans it once, not on
    every call: a consumer's allocations join six tables, and planning them
    (about 1 ms) costs ten times running them. Only for reads whose plan
    does not depend on the values (lookups by a unique key): after five
    calls PostgreSQL may keep one generic plan for all values.
    PLACEMENT_PREPARE_ON_SERVER=false turns it off (a PgBouncer pooling
    transactions)."""

    MARKER = 2_146_483_000   # stand-ins count up from here (within 32-bit integers)
    # Shapes kept per read, at most: a request's lengths (names, traits,
    # aggregates) are the client's to vary; later shapes run through the ORM.
    SHAPES = 256

    # Statements a connection keeps prepared, at most (each holds its plan
    # in the server's memory); later shapes run unprepared on it.
    ON_SERVER_PER_CONNECTION = 64

    def __init__(self, model, build, *, on_server=False):
        self.model = model
        self.build = build
        self.on_server = on_server
        self._compiled = {}   # (alias, shape) -> (sql, params, slots), or None
        self._names = {}      # (alias, shape) -> the statement's name on the server

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
        sql, params, slots, converters = compiled
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
        connection = connections[alias]
        with connection.cursor() as cursor:
            if (self.on_server and connection.vendor == 'postgresql'
                    and settings.PLACEMENT_PREPARE_ON_SERVER):
                sql = self._executed(connection, cursor, key, sql, len(params))
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if converters:
            # As the ORM converts them (a sum read back as an int, ...).
            rows = [tuple(_converted(row, converters, connection)) for row in rows]
        return list(rows)

    def _executed(self, connection, cursor, key, sql, count):
        """EXECUTE of the statement this connection has prepared for the
        shape (PREPAREd first if not yet), or the SQL itself when the
        connection keeps as many as it may."""
        name = self._names.get(key)
        if name is None:
            name = self._names.setdefault(key, f'placement_read_{next(_STATEMENT_NUMBERS)}')
        # Kept per DB-API connection: a new connection (a reconnect, a
        # failover) prepares again. A rollback does not undo a PREPARE.
        made = _PREPARED_ON.setdefault(connection.connection, set())
        if name not in made:
            if len(made) >= self.ON_SERVER_PER_CONNECTION:
                return sql
            # Set-up of the connection, like Django's own session settings:
            # on the DB-API cursor, so not counted among a request's queries.
            with connection.wrap_database_errors:
                cursor.cursor.execute(f'PREPARE {name} AS {_numbered(sql)}')
            made.add(name)
        return f'EXECUTE {name}({", ".join(["%s"] * count)})' if count else f'EXECUTE {name}'

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
        converters = tuple(compiler.get_converters(
            [column[0] for column in compiler.select]).items())
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
        return sql, tuple(params), tuple(slots), converters


_STATEMENT_NUMBERS = itertools.count(1)
_PREPARED_ON = weakref.WeakKeyDictionary()   # DB-API connection -> {statement name}


def _numbered(sql):
    """The SQL with PostgreSQL's numbered parameters ($1, $2, ...) for
    psycopg2's %s, and '%%' as the percent sign it stands for."""
    numbers = itertools.count(1)
    return re.sub(r'%%|%s', lambda m: '%' if m.group() == '%%' else f'${next(numbers)}', sql)


def _converted(row, converters, connection):
    row = list(row)
    for index, (functions, expression) in converters:
        value = row[index]
        for function in functions:
            value = function(value, expression, connection)
        row[index] = value
    return row


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
