"""The books' change log: a row per committed write to what the books read.

Triggers add a row to `books_changes` for every write to what the books
and "how many more fit" read: inventories (and so every allocation, whose
triggers touch its inventory's `used`: allocations.usage_totals), a
provider's place in its tree and name, pool membership, traits, the
classes' names, and (added by allocations:
allocations.usage_totals.OWNERS_WATCHED) who owns a consumer. Whatever writes
the rows (the services, the admin, load_scale's COPY, a test fixture), the
log sees it, in the writer's own transaction.

`version()` names what is committed: the newest row's id and how many rows
lie within WINDOW ids below it. Rows are only added (and pruned far below
the window), and a later read sees every row an earlier one saw, so a new
committed change changes the version, also one whose id was drawn before
another's commit, as long as fewer than WINDOW ids were drawn meanwhile.

What is remembered against it is providers.remembered's.

SQLite rebuilds a table to alter it, dropping its triggers: a migration
that alters a WATCHED table must call install() again (tests/providers/test_change_log.py
checks every write after the whole migration chain).
"""
import time

from django.db import DatabaseError
from django.db import connections

from placement_site import snapshots
from placement_site import triggers

# {table: the columns whose update changes what the books read (None: any)}.
# A provider's generation, bumped by every write, changes nothing they read.
WATCHED = {
    'inventories': None,
    'resource_providers': ('root_provider_id', 'parent_provider_id', 'name'),
    'resource_provider_aggregates': None,
    'resource_provider_traits': None,
    'resource_classes': None,   # the books name them
}
WINDOW = 10_000
# Rows this far below the newest are pruned, at most every PRUNE_SECONDS per process.
KEEP = 2 * WINDOW
PRUNE_SECONDS = 300

_VERSION_SQL = ('SELECT MAX(id), COUNT(*) FROM books_changes WHERE id > '
                '(SELECT COALESCE(MAX(id), 0) FROM books_changes) - %s')


def _postgresql(tables):
    # Statement-level, and one row per transaction (a claim touches several
    # inventories, load_scale's COPY hundreds of thousands): the transaction
    # notes its id in a setting that ends with it.
    statements = ['''CREATE OR REPLACE FUNCTION books_changed() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF current_setting('placement.books_changed', true)
                    IS DISTINCT FROM txid_current()::text THEN
                INSERT INTO books_changes DEFAULT VALUES;
                PERFORM set_config('placement.books_changed', txid_current()::text, true);
            END IF;
            RETURN NULL;
        END $$''']
    for table, columns in tables.items():
        update = f'UPDATE OF {", ".join(columns)}' if columns else 'UPDATE'
        statements += [f'DROP TRIGGER IF EXISTS books_changed ON {table}',
                       'CREATE TRIGGER books_changed AFTER INSERT OR DELETE OR TRUNCATE OR '
                       f'{update} ON {table} FOR EACH STATEMENT EXECUTE FUNCTION books_changed()']
    return statements


def _row_triggers(tables, create):
    """A trigger per table and event, for the engines whose triggers fire
    per row: its DROP, and create(table, name, event, columns)."""
    statements = []
    for table, columns in tables.items():
        for event in ('INSERT', 'UPDATE', 'DELETE'):
            name = f'books_changed_{table}_{event.lower()}'
            statements += [f'DROP TRIGGER IF EXISTS {name}', create(table, name, event, columns)]
    return statements


def _sqlite(tables):
    def create(table, name, event, columns):
        if event == 'UPDATE' and columns:
            event = f'UPDATE OF {", ".join(columns)}'
        # A trigger's INSERT may not use DEFAULT VALUES; NULL draws the next id.
        return (f'CREATE TRIGGER {name} AFTER {event} ON {table} '
                'BEGIN INSERT INTO books_changes (id) VALUES (NULL); END')
    return _row_triggers(tables, create)


def _mysql(tables):
    def create(table, name, event, columns):
        body = 'INSERT INTO books_changes () VALUES ()'
        if event == 'UPDATE' and columns:
            body = f'BEGIN IF {triggers.changed("mysql", columns)} THEN {body}; END IF; END'
        return f'CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW {body}'
    return _row_triggers(tables, create)


def install(connection, tables=None):
    """Create (or replace) the triggers that write the change log on the
    tables ({table: columns}, as WATCHED, its default; the allocations app
    adds the consumers' owners)."""
    triggers.install(connection, {'postgresql': _postgresql, 'sqlite': _sqlite, 'mysql': _mysql},
                     "the books' change log", WATCHED if tables is None else tables)


def version(using='default'):
    """(newest change id, changes in the window below it): different
    whenever a change to the books has committed since the last read."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(_VERSION_SQL, [WINDOW])
        newest, recent = cursor.fetchone()
    # Not in a page's read-only snapshot: it would refuse the DELETE (and
    # PostgreSQL abort the transaction whole).
    if (newest is not None and newest > KEEP and using == 'default'
            and not snapshots.in_read_snapshot(connection)):
        _prune(newest - KEEP)
    return newest, recent


def older(version, than):
    """Whether `version` was read before `than` (both version()s): rows are
    only added within the window, so a later read's newest id is no
    smaller, and its count no smaller for the same newest id."""
    if version == than or than is None:
        return False
    if version is None or version[0] is None:
        return than[0] is not None
    if than[0] is None:
        return False
    return (version[0], version[1]) < (than[0], than[1])


def serving(using):
    """Whether reads on `using` may be served from what this process
    remembers: not inside a transaction that may write (a page's read
    snapshot may)."""
    connection = connections[using]
    return not connection.in_atomic_block or snapshots.in_read_snapshot(connection)


_last_pruned = [0.0]


def _prune(below):
    """Delete the rows far below the window (no version reads them), from
    the primary, at most every PRUNE_SECONDS."""
    now = time.monotonic()
    if now - _last_pruned[0] < PRUNE_SECONDS:
        return
    _last_pruned[0] = now
    try:
        with connections['default'].cursor() as cursor:
            cursor.execute('DELETE FROM books_changes WHERE id < %s', [below])
    except DatabaseError:
        pass   # another process pruning the same rows: it does the work
