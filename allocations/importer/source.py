"""The source: a running OpenStack Placement's own database, schema of
openstack-placement 16.0.0 (alembic head a082b8bb98d0, or 422ece571366,
which differs only by indexes), read over plain DB-API connections inside
one read-only snapshot, so counts, checks and rows all describe the same
moment; and its tables, each with the model it lands in.
"""
import sqlite3
from dataclasses import dataclass
from urllib.parse import parse_qsl
from urllib.parse import unquote
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import psycopg2

from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from placement_site import config
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait

# Alembic revisions whose schema we read: 16.0.0's head and the one before,
# which only has redundant indexes more.
ACCEPTED_REVISIONS = ('a082b8bb98d0', '422ece571366')


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


# ---- the connection ---------------------------------------------------------------------

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
        revision_names = ', '.join(revisions) or 'none'
        raise ImportRefused(
            f'the source database is at alembic revision {revision_names}; this importer reads the '
            f'schema of openstack-placement 16.0.0 ({" or ".join(ACCEPTED_REVISIONS)}): '
            'upgrade the source with `placement-manage db sync` first')
    missing = sorted(SOURCE_TABLES - tables)
    if missing:
        raise ImportRefused(f'the source database lacks the tables {", ".join(missing)}')
    return revisions[0]
