"""Tree stamps: a counter per provider tree that every write to the tree
steps, kept by the database's own triggers in the writer's transaction.

A tree is a root provider and every provider under it. Its stamp steps
when a provider joins, leaves or moves within it, and when the inventories,
traits, aggregates or (added by allocations: allocations.ledger) the
allocations of any of its providers, or the owners of a consumer holding
them, are written. A deleted root takes its stamp row with it. Row 0 is the
catalogue's: resource classes and traits.

Whatever writes the rows (the services, the admin, load_scale's COPY, a
test fixture), the stamps see it. So two reads of the stamps name exactly
the trees that changed between them, in whatever order the writers
committed: providers.ledger keeps its image of the cloud in step by reading
those trees again, and nothing else.

PostgreSQL's triggers run once per statement over its transition tables
(a bulk load steps each tree once); SQLite's and MySQL's once per row.
SQLite rebuilds a table to alter it, dropping its triggers: a migration
that alters a WATCHED table must call install() again.
"""
import io
from dataclasses import dataclass

from placement_site import triggers

CATALOGUE = 0   # the stamp row of the resource classes and traits


@dataclass(frozen=True)
class Watched:
    """A table whose writes step tree stamps. `root`: the root of a written
    row `{row}`, read from `through` (tables joined on `on`; None: from the
    row itself); `columns`: those whose update matters (None: any)."""
    table: str
    root: str
    through: str = None
    on: str = None
    columns: tuple = None

    def roots_of_row(self, row, vendor):
        """A SELECT of the (non-null) roots of one row, NEW or OLD."""
        root = self.root.format(row=row)
        if self.through is None:
            # A SELECT with a WHERE and no table: MySQL wants FROM DUAL.
            source = ' FROM DUAL' if vendor == 'mysql' else ''
            return f'SELECT {root} AS root_id{source} WHERE {root} IS NOT NULL'
        return (f'SELECT {root} AS root_id FROM {self.through} WHERE {self.on.format(row=row)} '
                f'AND {root} IS NOT NULL')

    def roots_of_rows(self, rows):
        """A SELECT of the distinct roots of a transition table `rows`."""
        root = self.root.format(row='r')
        join = f' JOIN {self.through} ON {self.on.format(row="r")}' if self.through else ''
        return (f'SELECT DISTINCT {root} AS root_id FROM {rows} r{join} '
                f'WHERE {root} IS NOT NULL')


def through_provider(table):
    """A table whose rows name a provider (resource_provider_id)."""
    return Watched(table, 'rp.root_provider_id', 'resource_providers rp',
                   'rp.id = {row}.resource_provider_id')


WATCHED = [
    through_provider('inventories'),
    through_provider('resource_provider_traits'),
    through_provider('resource_provider_aggregates'),
    # A provider's own row names its root; a move steps both trees, a
    # rename its own (the image knows roots by name).
    Watched('resource_providers', '{row}.root_provider_id',
            columns=('root_provider_id', 'parent_provider_id', 'name')),
    Watched('resource_classes', str(CATALOGUE)),
    Watched('traits', str(CATALOGUE)),
]


def _forget_deleted_root(watched, event, row):
    """A deleted provider that was a root takes its stamp row with it."""
    if watched.table == 'resource_providers' and event == 'DELETE':
        return [f'DELETE FROM tree_stamps WHERE root_id IN (SELECT id FROM {row})'
                if row == 'old_rows' else f'DELETE FROM tree_stamps WHERE root_id = {row}.id']
    return []


# ---- PostgreSQL: statement triggers over the transition tables -------------------------

_REFERENCING = {'INSERT': 'NEW TABLE AS new_rows', 'DELETE': 'OLD TABLE AS old_rows',
                'UPDATE': 'OLD TABLE AS old_rows NEW TABLE AS new_rows'}


def _postgresql(watched):
    statements = []
    for w in watched:
        for event in ('INSERT', 'UPDATE', 'DELETE'):
            name = f'tree_stamps_{w.table}_{event.lower()}'
            sources = {'INSERT': ['new_rows'], 'DELETE': ['old_rows'],
                       'UPDATE': ['old_rows', 'new_rows']}[event]
            if event == 'UPDATE' and w.columns:
                # Only the rows whose watched columns changed, before and after.
                changed = triggers.changed('postgresql', w.columns, old='o', new='n')
                sources = [f'(SELECT {side}.* FROM old_rows o JOIN new_rows n ON o.id = n.id '
                           f'WHERE {changed})' for side in ('o', 'n')]
            roots_query = ' UNION '.join(w.roots_of_rows(source) for source in sources)
            body = ''.join(f'{sql}; ' for sql in [
                (f'INSERT INTO tree_stamps (root_id, stamp) SELECT root_id, 1 FROM ({roots_query}) '
                 'found ON CONFLICT (root_id) DO UPDATE SET stamp = tree_stamps.stamp + 1'),
                *_forget_deleted_root(w, event, 'old_rows')])
            statements += [
                (f'CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ '
                 f'BEGIN {body}RETURN NULL; END $$'),
                f'DROP TRIGGER IF EXISTS {name} ON {w.table}',
                (f'CREATE TRIGGER {name} AFTER {event} ON {w.table} '
                 f'REFERENCING {_REFERENCING[event]} FOR EACH STATEMENT EXECUTE FUNCTION {name}()'),
            ]
    return statements


# ---- SQLite and MySQL: row triggers ----------------------------------------------------

def _row_bodies(w, event, vendor, upsert):
    """The statements a row trigger runs for `event`."""
    rows = {'INSERT': ['NEW'], 'DELETE': ['OLD'], 'UPDATE': ['OLD', 'NEW']}[event]
    return [(f'INSERT INTO tree_stamps (root_id, stamp) SELECT root_id, 1 FROM '
             f'({w.roots_of_row(row, vendor)}) found {upsert}')
            for row in rows] + _forget_deleted_root(w, event, 'OLD')


def _sqlite(watched):
    # "WHERE true" settles SQLite's ambiguity between an upsert and a join's ON.
    upsert = 'WHERE true ON CONFLICT (root_id) DO UPDATE SET stamp = stamp + 1'
    statements = []
    for w in watched:
        for event in ('INSERT', 'UPDATE', 'DELETE'):
            name = f'tree_stamps_{w.table}_{event.lower()}'
            when = ''
            if event == 'UPDATE' and w.columns:
                when = ' WHEN ' + triggers.changed('sqlite', w.columns)
            bodies = ''.join(f'{body}; ' for body in _row_bodies(w, event, 'sqlite', upsert))
            statements += [f'DROP TRIGGER IF EXISTS {name}',
                           (f'CREATE TRIGGER {name} AFTER {event} ON {w.table}{when} '
                            f'BEGIN {bodies}END')]
    return statements


def _mysql(watched):
    upsert = 'ON DUPLICATE KEY UPDATE stamp = stamp + 1'
    statements = []
    for w in watched:
        for event in ('INSERT', 'UPDATE', 'DELETE'):
            name = f'tree_stamps_{w.table}_{event.lower()}'[:64]
            bodies = ''.join(f'{body}; ' for body in _row_bodies(w, event, 'mysql', upsert))
            if event == 'UPDATE' and w.columns:
                body = f'BEGIN IF {triggers.changed("mysql", w.columns)} THEN {bodies}END IF; END'
            else:
                body = f'BEGIN {bodies}END'
            statements += [f'DROP TRIGGER IF EXISTS {name}',
                           f'CREATE TRIGGER {name} AFTER {event} ON {w.table} FOR EACH ROW {body}']
    return statements


def install(connection, watched=None):
    """Create (or replace) the triggers that step tree stamps on the tables
    (WATCHED by default; allocations adds its own), and stamp every tree
    that has no stamp yet."""
    triggers.install(connection, {'postgresql': _postgresql, 'sqlite': _sqlite, 'mysql': _mysql},
                     'tree stamps', WATCHED if watched is None else watched)
    with connection.cursor() as cursor:
        cursor.execute(
            'INSERT INTO tree_stamps (root_id, stamp) SELECT id, 1 FROM resource_providers rp '
            'WHERE rp.root_provider_id = rp.id AND NOT EXISTS '
            '(SELECT 1 FROM tree_stamps s WHERE s.root_id = rp.id)')
        cursor.execute(f'INSERT INTO tree_stamps (root_id, stamp) SELECT {CATALOGUE}, 1 '
                       f'FROM resource_classes WHERE NOT EXISTS (SELECT 1 FROM tree_stamps '
                       f'WHERE root_id = {CATALOGUE}) LIMIT 1')


def read(connection):
    """Every tree's stamp, the catalogue's (CATALOGUE) among them, as a set
    of b'root\tstamp' lines: two reads' difference names the trees whose
    stamps moved, compared in C. PostgreSQL copies them out as text (a third
    of the time rows take); the others' rows are written so."""
    with connection.cursor() as cursor:
        if connection.vendor == 'postgresql':
            out = io.BytesIO()
            cursor.cursor.copy_expert('COPY tree_stamps (root_id, stamp) TO STDOUT', out)
            return frozenset(out.getvalue().splitlines())
        cursor.execute('SELECT root_id, stamp FROM tree_stamps')
        return frozenset(b'%d\t%d' % row for row in cursor.fetchall())


def roots_of(lines):
    """The root ids of stamps' lines."""
    return {int(line.split(b'\t', 1)[0]) for line in lines}
