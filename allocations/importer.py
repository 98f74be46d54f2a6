"""Adoption: copy the books of a running OpenStack Placement into ours
(`manage.py import_placement`, runbook in docs/import.md).

The source is Placement's own database, schema of openstack-placement
16.0.0 (alembic head a082b8bb98d0, or 422ece571366, which differs only by
indexes), read over plain DB-API connections inside one read-only snapshot,
so counts, checks and rows all describe the same moment.

Rows are carried as they are: ids, names, uuids, generations and
timestamps, so lists come out in the old service's order, Last-Modified
stays the same and clients holding a provider's or consumer's generation
can keep writing. Two tables are reconciled by name rather than emptied:
resource classes (standard ones keep their os-resource-classes index as id
on both sides, so a source row updates ours) and standard traits (ours are
dropped for the source's, whose ids decide GET /traits' order; names our
os-traits knows and the source lacks are added after). Inventory.used is
left to the database's triggers (usage_totals): inventories are written
last, each counting its allocations once.

Problems are found by queries on the source, before anything is written.
Errors are rows that cannot be carried exactly (an allocation of a missing
provider, consumer or class, a provider whose root or parent is missing):
the import refuses to start. Warnings are states both services hold and
answer alike, which an operator should still look at (a provider over
capacity, which Placement itself accepts after an inventory change; an
allocation of a class its provider has no inventory of): they are reported
and carried.
"""
import datetime as dt
import sqlite3
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import psycopg2
from django.core.management.color import no_style
from django.db import connection, transaction
from django.db.models import Sum

from allocations.models import Allocation, Consumer, ConsumerType, Project, User
from allocations.pods.models import Pod, PodBinding
from allocations.usage_totals import miscounted
from placement_site import config
from providers.models import (Aggregate, Event, EventProvider, Inventory, ProviderAggregate,
                              ProviderTrait, ResourceClass, ResourceProvider, Trait,
                              UsageSnapshot)
from providers.standards import sync_standard_names

# Alembic revisions whose schema we read: 16.0.0's head and the one before,
# which only has redundant indexes more.
ACCEPTED_REVISIONS = ('a082b8bb98d0', '422ece571366')
DEFAULT_BATCH_SIZE = 1000
PROGRESS_EVERY_SECONDS = 2.0


class ImportRefused(Exception):
    """The import cannot go on; the message says why and what to do."""


# ---- the tables, in the order they are written ------------------------------------------

@dataclass(frozen=True)
class Table:
    """One of Placement's tables and the model it lands in: the same
    columns on both sides, paged by `key`."""
    name: str
    model: type
    columns: tuple
    key: tuple = ('id',)


STAMPS = ('created_at', 'updated_at')
RESOURCE_CLASSES = Table('resource_classes', ResourceClass, ('id', 'name') + STAMPS)
TRAITS = Table('traits', Trait, ('id', 'name') + STAMPS)
AGGREGATES = Table('placement_aggregates', Aggregate, ('id', 'uuid') + STAMPS)
PROVIDERS = Table('resource_providers', ResourceProvider, (
    'id', 'uuid', 'name', 'generation', 'root_provider_id', 'parent_provider_id') + STAMPS)
PROVIDER_TRAITS = Table('resource_provider_traits', ProviderTrait,
                        ('resource_provider_id', 'trait_id'),
                        key=('resource_provider_id', 'trait_id'))
PROVIDER_AGGREGATES = Table('resource_provider_aggregates', ProviderAggregate,
                            ('resource_provider_id', 'aggregate_id'),
                            key=('resource_provider_id', 'aggregate_id'))
PROJECTS = Table('projects', Project, ('id', 'external_id') + STAMPS)
USERS = Table('users', User, ('id', 'external_id') + STAMPS)
CONSUMER_TYPES = Table('consumer_types', ConsumerType, ('id', 'name') + STAMPS)
CONSUMERS = Table('consumers', Consumer, (
    'id', 'uuid', 'project_id', 'user_id', 'generation', 'consumer_type_id') + STAMPS)
# Placement's allocations name their consumer by uuid; ours by id.
ALLOCATIONS = Table('allocations', Allocation, (
    'id', 'resource_provider_id', 'consumer_id', 'resource_class_id', 'used') + STAMPS)
INVENTORIES = Table('inventories', Inventory, (
    'id', 'resource_provider_id', 'resource_class_id', 'total', 'reserved', 'min_unit',
    'max_unit', 'step_size', 'allocation_ratio') + STAMPS)

TABLES = (RESOURCE_CLASSES, TRAITS, AGGREGATES, PROVIDERS, PROVIDER_TRAITS,
          PROVIDER_AGGREGATES, PROJECTS, USERS, CONSUMER_TYPES, CONSUMERS, ALLOCATIONS,
          INVENTORIES)
SOURCE_TABLES = {t.name for t in TABLES} | {'alembic_version'}


# ---- the source --------------------------------------------------------------------------

def redacted(url):
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f':{parts.password}@', ':***@', 1)
    return urlunsplit(parts._replace(netloc=netloc))


class Source:
    """A read-only connection to a Placement database, inside one snapshot."""

    def __init__(self, dbapi_connection, vendor, url):
        self.connection = dbapi_connection
        self.vendor = vendor
        self.url = url
        self.placeholder = '?' if vendor == 'sqlite' else '%s'

    @classmethod
    def open(cls, url):
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            if scheme == 'sqlite':
                return cls._sqlite(parts, url)
            if scheme in config.POSTGRESQL_SCHEMES:
                return cls._postgresql(parts, url)
            if scheme in config.MYSQL_SCHEMES:
                return cls._mysql(parts, url)
        except ImportRefused:
            raise
        except Exception as e:  # any driver's connection failure
            raise ImportRefused(f'cannot open the source database {redacted(url)}: {e}') from e
        raise ImportRefused(f'unsupported source URL scheme {parts.scheme!r}: use postgresql://, '
                           'mysql:// (or mysql+pymysql://) or sqlite:///path')

    @classmethod
    def _sqlite(cls, parts, url):
        path = unquote(parts.path)
        path = path.removeprefix('/')  # sqlite:////abs, sqlite:///rel
        if not path:
            raise ImportRefused(f'{url!r} names no SQLite file')
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True, isolation_level=None,
                               detect_types=0)
        conn.execute('BEGIN')  # one snapshot for the whole read
        return cls(conn, 'sqlite', url)

    @classmethod
    def _postgresql(cls, parts, url):
        conn = psycopg2.connect(
            dbname=unquote(parts.path.lstrip('/')), user=unquote(parts.username or '') or None,
            password=unquote(parts.password or '') or None, host=parts.hostname or None,
            port=parts.port or None, **dict(parse_qsl(parts.query)))
        conn.set_session(isolation_level='REPEATABLE READ', readonly=True)
        return cls(conn, 'postgresql', url)

    @classmethod
    def _mysql(cls, parts, url):
        try:
            import MySQLdb  # optional: requirements-mysql.txt
        except ImportError as e:
            raise ImportRefused(
                'reading a MySQL/MariaDB source needs mysqlclient (MySQLdb): '
                'pip install -r requirements-mysql.txt') from e
        options = dict(parse_qsl(parts.query))
        kwargs = {'database': unquote(parts.path.lstrip('/')),
                  'charset': options.pop('charset', 'utf8mb4')}
        if parts.username:
            kwargs['user'] = unquote(parts.username)
        if parts.password:
            kwargs['password'] = unquote(parts.password)
        if parts.hostname:
            kwargs['host'] = parts.hostname
        if parts.port:
            kwargs['port'] = parts.port
        if 'unix_socket' in options:
            kwargs['unix_socket'] = options.pop('unix_socket')
        conn = MySQLdb.connect(**kwargs)
        cursor = conn.cursor()
        cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ')
        cursor.execute('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY')
        return cls(conn, 'mysql', url)

    def close(self):
        try:
            self.connection.rollback()
        finally:
            self.connection.close()

    def query(self, sql, params=()):
        """All rows of a query written with %s placeholders."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql.replace('%s', self.placeholder), params)
            return cursor.fetchall()
        finally:
            cursor.close()

    def tables(self):
        if self.vendor == 'sqlite':
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        elif self.vendor == 'postgresql':
            sql = ('SELECT table_name FROM information_schema.tables '
                   'WHERE table_schema = current_schema()')
        else:
            sql = 'SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()'
        return {row[0] for row in self.query(sql)}

    def count(self, table):
        return self.query(f'SELECT COUNT(*) FROM {table.name}')[0][0]

    def pages(self, table, size):
        """The table's rows in key order, `size` at a time (keyset paging, so
        each page is one short query however large the table)."""
        columns = ', '.join(table.columns)
        order = ', '.join(table.key)
        last = None
        while True:
            if last is None:
                where, params = '', ()
            elif len(table.key) == 1:
                where, params = f'WHERE {table.key[0]} > %s', (last[0],)
            else:  # (a, b) > (x, y), spelled out for every dialect
                a, b = table.key
                where, params = f'WHERE {a} > %s OR ({a} = %s AND {b} > %s)', (
                    last[0], last[0], last[1])
            rows = self.query(f'SELECT {columns} FROM {table.name} {where} '
                              f'ORDER BY {order} LIMIT {int(size)}', params)
            if not rows:
                return
            yield rows
            last = tuple(rows[-1][table.columns.index(k)] for k in table.key)
            if len(rows) < size:
                return


def check_revision(source):
    """The alembic revision, if it is one whose schema we read; else refuse."""
    tables = source.tables()
    if 'alembic_version' not in tables:
        raise ImportRefused(f'{redacted(source.url)} has no alembic_version table: it is not an '
                           'OpenStack Placement database (or was never migrated with '
                           '`placement-manage db sync`)')
    revisions = sorted(row[0] for row in source.query('SELECT version_num FROM alembic_version'))
    if len(revisions) != 1 or revisions[0] not in ACCEPTED_REVISIONS:
        found = ', '.join(revisions) or 'none'
        raise ImportRefused(
            f'the source database is at alembic revision {found}; this importer reads the '
            f'schema of openstack-placement 16.0.0 ({" or ".join(ACCEPTED_REVISIONS)}): '
            'upgrade the source with `placement-manage db sync` first')
    missing = sorted(SOURCE_TABLES - tables)
    if missing:
        raise ImportRefused(f'the source database lacks the tables {", ".join(missing)}')
    return revisions[0]


# ---- problems ----------------------------------------------------------------------------

ERROR, WARNING = 'ERROR', 'WARNING'


@dataclass(frozen=True)
class Check:
    """One kind of problem: a query on the source returning one row per
    instance, and how to say it."""
    code: str
    severity: str
    sql: str
    say: str  # formatted with the row's columns by position: {0}, {1}, ...


CHECKS = (
    Check('allocation-provider-missing', ERROR,
          'SELECT a.id, a.consumer_id, a.resource_provider_id FROM allocations a '
          'LEFT JOIN resource_providers rp ON rp.id = a.resource_provider_id '
          'WHERE rp.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} names resource provider id {2}, which does not exist'),
    Check('allocation-consumer-missing', ERROR,
          'SELECT a.id, a.consumer_id FROM allocations a '
          'LEFT JOIN consumers c ON c.uuid = a.consumer_id WHERE c.id IS NULL ORDER BY a.id',
          'allocation {0} names consumer {1}, which does not exist'),
    Check('allocation-class-missing', ERROR,
          'SELECT a.id, a.consumer_id, a.resource_class_id FROM allocations a '
          'LEFT JOIN resource_classes rc ON rc.id = a.resource_class_id '
          'WHERE rc.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} names resource class id {2}, which does not exist'),
    Check('provider-root-missing', ERROR,
          'SELECT id, uuid, name FROM resource_providers WHERE root_provider_id IS NULL '
          'ORDER BY id',
          'resource provider {1} ({2}, id {0}) has no root provider'),
    Check('provider-root-missing', ERROR,
          'SELECT rp.id, rp.uuid, rp.name, rp.root_provider_id FROM resource_providers rp '
          'LEFT JOIN resource_providers root ON root.id = rp.root_provider_id '
          'WHERE rp.root_provider_id IS NOT NULL AND root.id IS NULL ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has root provider id {3}, which does not exist'),
    Check('provider-parent-missing', ERROR,
          'SELECT rp.id, rp.uuid, rp.name, rp.parent_provider_id FROM resource_providers rp '
          'LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id '
          'WHERE rp.parent_provider_id IS NOT NULL AND parent.id IS NULL ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has parent provider id {3}, which does not exist'),
    Check('provider-root-wrong', ERROR,
          # (a missing root or parent is reported above, not again here)
          'SELECT rp.id, rp.uuid, rp.name, rp.root_provider_id FROM resource_providers rp '
          'JOIN resource_providers root ON root.id = rp.root_provider_id '
          'LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id '
          'WHERE (rp.parent_provider_id IS NULL AND rp.root_provider_id <> rp.id) '
          'OR (parent.id IS NOT NULL AND parent.root_provider_id <> rp.root_provider_id) '
          'ORDER BY rp.id',
          'resource provider {1} ({2}, id {0}) has root provider id {3}, which is not the '
          "root of its tree (itself without a parent, else its parent's root)"),
    Check('provider-incomplete', ERROR,
          'SELECT id, uuid FROM resource_providers WHERE name IS NULL OR generation IS NULL '
          'ORDER BY id',
          'resource provider {1} (id {0}) has no name or no generation'),
    Check('inventory-provider-missing', ERROR,
          'SELECT i.id, i.resource_provider_id FROM inventories i '
          'LEFT JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'WHERE rp.id IS NULL ORDER BY i.id',
          'inventory {0} belongs to resource provider id {1}, which does not exist'),
    Check('inventory-class-missing', ERROR,
          'SELECT i.id, rp.uuid, i.resource_class_id FROM inventories i '
          'LEFT JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'LEFT JOIN resource_classes rc ON rc.id = i.resource_class_id '
          'WHERE rc.id IS NULL ORDER BY i.id',
          'inventory {0} of resource provider {1} is of resource class id {2}, which does '
          'not exist'),
    Check('consumer-project-missing', ERROR,
          'SELECT c.id, c.uuid, c.project_id FROM consumers c '
          'LEFT JOIN projects p ON p.id = c.project_id WHERE p.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has project id {2}, which does not exist'),
    Check('consumer-user-missing', ERROR,
          'SELECT c.id, c.uuid, c.user_id FROM consumers c '
          'LEFT JOIN users u ON u.id = c.user_id WHERE u.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has user id {2}, which does not exist'),
    Check('consumer-type-missing', ERROR,
          'SELECT c.id, c.uuid, c.consumer_type_id FROM consumers c '
          'LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id '
          'WHERE c.consumer_type_id IS NOT NULL AND ct.id IS NULL ORDER BY c.id',
          'consumer {1} (id {0}) has consumer type id {2}, which does not exist'),
    Check('provider-trait-dangling', ERROR,
          'SELECT x.resource_provider_id, x.trait_id FROM resource_provider_traits x '
          'LEFT JOIN resource_providers rp ON rp.id = x.resource_provider_id '
          'LEFT JOIN traits t ON t.id = x.trait_id WHERE rp.id IS NULL OR t.id IS NULL '
          'ORDER BY x.resource_provider_id, x.trait_id',
          'resource provider id {0} has trait id {1}, and one of them does not exist'),
    Check('provider-aggregate-dangling', ERROR,
          'SELECT x.resource_provider_id, x.aggregate_id FROM resource_provider_aggregates x '
          'LEFT JOIN resource_providers rp ON rp.id = x.resource_provider_id '
          'LEFT JOIN placement_aggregates a ON a.id = x.aggregate_id '
          'WHERE rp.id IS NULL OR a.id IS NULL ORDER BY x.resource_provider_id, x.aggregate_id',
          'resource provider id {0} is in aggregate id {1}, and one of them does not exist'),
    Check('aggregate-incomplete', ERROR,
          'SELECT id FROM placement_aggregates WHERE uuid IS NULL ORDER BY id',
          'aggregate id {0} has no uuid'),
    Check('provider-over-capacity', WARNING,
          'SELECT rp.uuid, rp.name, rc.name, u.used, i.total, i.reserved, i.allocation_ratio '
          'FROM inventories i '
          'JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used '
          '      FROM allocations GROUP BY resource_provider_id, resource_class_id) u '
          '  ON u.resource_provider_id = i.resource_provider_id '
          ' AND u.resource_class_id = i.resource_class_id '
          'JOIN resource_providers rp ON rp.id = i.resource_provider_id '
          'JOIN resource_classes rc ON rc.id = i.resource_class_id '
          'WHERE (i.total - i.reserved) * i.allocation_ratio < u.used ORDER BY i.id',
          'resource provider {0} ({1}) is over capacity in {2}: {3} used of '
          '({4} - {5}) * {6}'),
    Check('allocation-without-inventory', WARNING,
          'SELECT a.id, a.consumer_id, rp.uuid, rp.name, rc.name FROM allocations a '
          'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
          'JOIN resource_classes rc ON rc.id = a.resource_class_id '
          'LEFT JOIN inventories i ON i.resource_provider_id = a.resource_provider_id '
          ' AND i.resource_class_id = a.resource_class_id '
          'WHERE i.id IS NULL ORDER BY a.id',
          'allocation {0} of consumer {1} holds {4} of resource provider {2} ({3}), which has '
          'no {4} inventory'),
)


@dataclass(frozen=True)
class Problem:
    code: str
    severity: str
    message: str

    def __str__(self):
        return f'{self.severity} {self.code}: {self.message}'


@dataclass
class Survey:
    """What the source holds: rows per table and every problem found."""
    revision: str
    counts: dict
    problems: list

    @property
    def errors(self):
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self):
        return [p for p in self.problems if p.severity == WARNING]


def survey(source):
    revision = check_revision(source)
    counts = {table.name: source.count(table) for table in TABLES}
    problems = [Problem(check.code, check.severity, check.say.format(*row))
                for check in CHECKS for row in source.query(check.sql)]
    return Survey(revision, counts, problems)


# ---- the target --------------------------------------------------------------------------

# Everything the import writes or that depends on what it replaces, in an
# order that deletes referring rows first. Standard resource classes stay
# (the import updates them in place); the event log and usage snapshots
# describe the books being replaced, and go with them.
REPLACED = (PodBinding, Pod, EventProvider, Event, UsageSnapshot, Inventory, Allocation,
            Consumer, ConsumerType, User, Project, ProviderTrait, ProviderAggregate,
            ResourceProvider, Aggregate, Trait)


def target_contents():
    """What ours holds that an import would collide with or overwrite, as
    'N table' strings; empty when only the standard names are there."""
    books = [Pod, ResourceProvider, Inventory, Aggregate, Consumer, Allocation, Project, User,
             ConsumerType]
    found = [f'{model.objects.count()} {model._meta.db_table}' for model in books
             if model.objects.exists()]
    custom_classes = ResourceClass.objects.filter(id__gte=ResourceClass.MIN_CUSTOM_ID).count()
    if custom_classes:
        found.append(f'{custom_classes} custom resource classes')
    custom_traits = Trait.objects.filter(name__startswith=Trait.CUSTOM_PREFIX).count()
    if custom_traits:
        found.append(f'{custom_traits} custom traits')
    return found


def empty_target():
    """Delete everything an import replaces, in one transaction."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Trees refer to themselves: cut the links before deleting.
        cursor.execute(f'UPDATE {ResourceProvider._meta.db_table} '
                       'SET root_provider_id = NULL, parent_provider_id = NULL')
        for model in REPLACED:
            cursor.execute(f'DELETE FROM {model._meta.db_table}')
        cursor.execute(f'DELETE FROM {ResourceClass._meta.db_table} WHERE id >= %s',
                       [ResourceClass.MIN_CUSTOM_ID])


# ---- copying -----------------------------------------------------------------------------

@dataclass
class Report:
    """What an import wrote and how long it took."""
    rows: dict = field(default_factory=dict)
    standard_classes_added: int = 0
    standard_traits_added: int = 0
    seconds: float = 0.0

    @property
    def total(self):
        return sum(self.rows.values())


class Progress:
    """'table done/total' lines on stderr, at most every few seconds and at
    each table's end."""

    def __init__(self, write):
        self.write = write
        self.last = 0.0

    def __call__(self, table, done, total):
        now = time.monotonic()
        if done >= total or now - self.last >= PROGRESS_EVERY_SECONDS:
            self.last = now
            self.write(f'{table} {done}/{total}')


def import_books(source, survey_, *, batch_size=DEFAULT_BATCH_SIZE, progress=None):
    """Copy every table, one transaction per batch, then reset sequences,
    check the copy against the source and add the standard names the
    source lacked. The caller has checked the survey and the target."""
    progress = progress or (lambda *args: None)
    started = time.monotonic()
    report = Report()
    copy = _Copy()
    for table in TABLES:
        total, done = survey_.counts[table.name], 0
        for rows in source.pages(table, batch_size):
            with transaction.atomic():
                copy.write(table, rows)
            done += len(rows)
            progress(table.name, done, total)
        if not total:
            progress(table.name, 0, 0)
        report.rows[table.name] = done
    with transaction.atomic():
        copy.link_forward()
    _reset_sequences()
    problems = verify(source, survey_)
    if problems:
        raise ImportRefused('the imported books do not match the source (re-run with --replace '
                           'once the cause is fixed):\n  ' + '\n  '.join(problems))
    with transaction.atomic():
        report.standard_classes_added, report.standard_traits_added = sync_standard_names(
            ResourceClass, Trait)
    report.seconds = time.monotonic() - started
    return report


class _Copy:
    """Writes source rows into our tables, batch by batch, remembering what
    later batches need."""

    def __init__(self):
        self.consumer_ids = {}   # uuid -> id: Placement's allocations name consumers by uuid
        self.forward_links = []  # (root, parent, provider id) pointing at later batches
        self.traits_cleared = False

    def write(self, table, rows):
        writer = getattr(self, f'_write_{table.name}', None)
        if writer:
            writer(table, rows)
        else:
            _insert(table.model, table.columns, rows)

    def _write_resource_classes(self, table, rows):
        """Standard classes are ours already, at the same id: they take the
        source's timestamps. A name at another id, or an id under another
        name, is a clash we do not paper over."""
        ours = dict(ResourceClass.objects.values_list('id', 'name'))
        names = set(ours.values())
        new = []
        for row in rows:
            class_id, name, created_at, updated_at = row
            if ours.get(class_id) == name:
                ResourceClass.objects.filter(id=class_id).update(
                    created_at=_utc(created_at), updated_at=updated_at and _utc(updated_at))
            elif class_id in ours or name in names:
                raise ImportRefused(f'resource class {name} has id {class_id} in the source, but '
                                   'not here: do both use the same os-resource-classes?')
            else:
                new.append(row)
        _insert(ResourceClass, table.columns, new)

    def _write_traits(self, table, rows):
        """The source's traits replace our standard ones, ids and all: the
        ids are GET /traits' order (the target holds no custom trait and no
        provider, so nothing refers to them)."""
        if not self.traits_cleared:
            Trait.objects.all().delete()
            self.traits_cleared = True
        _insert(Trait, table.columns, rows)

    def _write_resource_providers(self, table, rows):
        """Providers with the links to earlier batches; then, once the
        batch's rows exist, the links within it (roots are mostly
        themselves); links to later batches wait for link_forward."""
        first_id = rows[0][0]
        last_id = rows[-1][0]
        written, self_roots, within = [], [], []
        for pid, uuid, name, generation, root_id, parent_id, created_at, updated_at in rows:
            earlier_root = root_id if root_id is not None and root_id < first_id else None
            earlier_parent = parent_id if parent_id is not None and parent_id < first_id else None
            written.append((pid, uuid, name, generation, earlier_root, earlier_parent,
                            created_at, updated_at))
            if (earlier_root, earlier_parent) == (root_id, parent_id):
                continue
            if root_id == pid and parent_id is None:
                self_roots.append(pid)
            elif max(root_id or 0, parent_id or 0) <= last_id:
                within.append((root_id, parent_id, pid))
            else:
                self.forward_links.append((root_id, parent_id, pid))
        _insert(ResourceProvider, table.columns, written)
        table_name = ResourceProvider._meta.db_table
        with connection.cursor() as cursor:
            for start in range(0, len(self_roots), 500):
                ids = self_roots[start:start + 500]
                cursor.execute(f'UPDATE {table_name} SET root_provider_id = id '
                               f'WHERE id IN ({", ".join(["%s"] * len(ids))})', ids)
            _link(cursor, within)

    def link_forward(self):
        with connection.cursor() as cursor:
            _link(cursor, self.forward_links)

    def _write_consumers(self, table, rows):
        self.consumer_ids.update((row[1], row[0]) for row in rows)
        _insert(Consumer, table.columns, rows)

    def _write_allocations(self, table, rows):
        _insert(Allocation, table.columns, [
            (aid, rp, self.consumer_ids[consumer_uuid], rc, used, created_at, updated_at)
            for aid, rp, consumer_uuid, rc, used, created_at, updated_at in rows])


def _link(cursor, links):
    if links:
        cursor.executemany(f'UPDATE {ResourceProvider._meta.db_table} SET root_provider_id = %s, '
                           'parent_provider_id = %s WHERE id = %s', links)


def _prepared(fields, row):
    """A source row as our database takes it: datetimes made aware (UTC),
    then every value prepared by the model's own field."""
    return [f.get_db_prep_save(_utc(v) if v is not None and f.get_internal_type()
                               == 'DateTimeField' else v, connection)
            for f, v in zip(fields, row)]


def _utc(value):
    """Placement keeps naive UTC datetimes (SQLite: as text)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def _insert(model, columns, rows):
    """Multi-row INSERTs, as many rows per statement as the backend's
    parameter limit allows."""
    if not rows:
        return
    table = model._meta.db_table
    by_column = {f.column: f for f in model._meta.concrete_fields}
    fields = [by_column[c] for c in columns]
    per_statement = max(1, min(len(rows), (connection.features.max_query_params or 60000)
                               // len(columns)))
    marks = '(' + ', '.join(['%s'] * len(columns)) + ')'
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start:start + per_statement]
            cursor.execute(f'INSERT INTO {table} ({", ".join(columns)}) VALUES '
                           + ', '.join([marks] * len(chunk)),
                           [value for row in chunk for value in _prepared(fields, row)])


def _reset_sequences():
    """PostgreSQL's id sequences past the carried ids (other databases
    follow explicit ids themselves)."""
    models = [t.model for t in TABLES if t.model is not ResourceClass]
    statements = connection.ops.sequence_reset_sql(no_style(), models)
    if statements:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)


# ---- checking the copy -------------------------------------------------------------------

def verify(source, survey_):
    """Differences between ours and the source: rows per table, provider
    trees, usage per provider and class (the allocations' sums, and
    Inventory.used as the triggers keep it). Empty when the copy is right."""
    problems = []
    for table in TABLES:
        ours = table.model.objects.count()
        if table is RESOURCE_CLASSES:  # ours may know classes the source does not
            names = {row[0] for row in source.query('SELECT name FROM resource_classes')}
            ours = ResourceClass.objects.filter(name__in=names).count()
        if ours != survey_.counts[table.name]:
            problems.append(f'{table.name}: {ours} rows here, {survey_.counts[table.name]} in '
                            'the source')
    rootless = ResourceProvider.objects.filter(root_provider__isnull=True).count()
    if rootless:
        problems.append(f'{rootless} resource providers without a root')
    source_trees = {row[0]: (row[1], row[2]) for row in source.query(
        'SELECT id, root_provider_id, parent_provider_id FROM resource_providers')}
    our_trees = {pid: (root, parent) for pid, root, parent in ResourceProvider.objects
                 .values_list('id', 'root_provider_id', 'parent_provider_id')}
    if source_trees != our_trees:
        wrong = sorted(k for k in source_trees.keys() | our_trees.keys()
                       if source_trees.get(k) != our_trees.get(k))
        problems.append(f'{len(wrong)} resource providers with another root or parent than '
                        f'in the source (ids {", ".join(map(str, wrong[:10]))})')
    source_usage = {(rp, rc): int(used) for rp, rc, used in source.query(
        'SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations '
        'GROUP BY resource_provider_id, resource_class_id')}
    our_usage = {(rp, rc): used for rp, rc, used in Allocation.objects
                 .values_list('resource_provider_id', 'resource_class_id')
                 .annotate(used=Sum('used')).values_list('resource_provider_id',
                                                         'resource_class_id', 'used')}
    if source_usage != our_usage:
        problems.append('usage per provider and class differs from the source for '
                        f'{len(source_usage.items() ^ our_usage.items())} (provider, class) pairs')
    wrong_used = miscounted(connection)
    if wrong_used:
        problems.append(f'{len(wrong_used)} inventories whose used is not the sum of their '
                        'allocations')
    return problems
