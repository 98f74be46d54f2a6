"""manage.py import_placement: a real OpenStack Placement 16.0.0 (its own
venv, scripts/dev/placement-venv.sh) migrates and fills a source database through
its REST API; the command copies it into ours, and then both services answer
the same GETs alike. Damaged copies are made with SQL.

The source lives on the same kind of server as the target: an SQLite file,
or a database of its own on DATABASE_URL's PostgreSQL or MariaDB server."""
import datetime as dt
import io
import os
import shutil
import sqlite3
import uuid as uuid_lib
from contextlib import contextmanager
from email.utils import format_datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from allocations import importer
from allocations.models import Allocation
from allocations.models import Consumer
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.models import Trait
from scripts.harness import placement
from tests.support.api import PlacementClient
from tests.support.state import snapshot

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.django_db(transaction=True, serialized_rollback=True)]

VERSION = '1.39'


def uid(name):
    """A fixed uuid per name, so failures read the same every run."""
    return str(uuid_lib.uuid5(uuid_lib.NAMESPACE_DNS, f'{name}.import.test'))


AGG_ROW, AGG_STORAGE = uid('agg-row'), uid('agg-storage')


# ---- the servers sources live on --------------------------------------------------------

class SqliteSources:
    def __init__(self, directory):
        self.directory = directory

    def create(self, name):
        path = self.directory / f'{name}.sqlite'
        path.unlink(missing_ok=True)
        return f'sqlite:///{path}'

    def copy(self, url, name):
        new = self.create(name)
        shutil.copy(urlsplit(url).path[1:], urlsplit(new).path[1:])
        return new

    def execute(self, url, *statements):
        conn = sqlite3.connect(urlsplit(url).path[1:])
        with conn:
            for sql in statements:
                conn.execute(sql)
        conn.close()

    def close(self):
        pass


class PostgresqlSources:
    """Databases of their own on DATABASE_URL's server."""

    def __init__(self, server_url):
        import psycopg2
        self.psycopg2 = psycopg2
        self.parts = urlsplit(server_url)
        self.admin = psycopg2.connect(self._dsn('postgres'))
        self.admin.autocommit = True
        self.names = []

    def _dsn(self, name):
        p = self.parts
        return (f"dbname={name} host={p.hostname} port={p.port or 5432} "
                f"user={p.username or 'postgres'}" + (f' password={p.password}' if p.password
                                                       else ''))

    def _url(self, name):
        return urlunsplit(('postgresql+psycopg2', self.parts.netloc, f'/{name}', '', ''))

    def create(self, name, template=None):
        name = f'import_src_{os.getpid()}_{name}'
        with self.admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS {name}')
            cursor.execute(f'CREATE DATABASE {name}' + (f' TEMPLATE {template}' if template
                                                         else ''))
        self.names.append(name)
        return self._url(name)

    def copy(self, url, name):
        source = urlsplit(url).path[1:]
        with self.admin.cursor() as cursor:  # a template must have no sessions
            cursor.execute('SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                           'WHERE datname = %s AND pid <> pg_backend_pid()', [source])
        return self.create(name, template=source)

    def execute(self, url, *statements):
        conn = self.psycopg2.connect(self._dsn(urlsplit(url).path[1:]))
        with conn, conn.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
        conn.close()

    def close(self):
        with self.admin.cursor() as cursor:
            for name in self.names:
                cursor.execute('SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                               'WHERE datname = %s', [name])
                cursor.execute(f'DROP DATABASE IF EXISTS {name}')
        self.admin.close()


class MysqlSources:
    """Databases of their own on DATABASE_URL's MariaDB server."""

    def __init__(self, server_url):
        import MySQLdb
        self.MySQLdb = MySQLdb
        self.parts = urlsplit(server_url)
        self.names = []

    def _connect(self, name=None):
        p = self.parts
        kwargs = {'host': p.hostname, 'port': p.port or 3306, 'user': p.username or 'root',
                  'password': p.password or '', 'charset': 'utf8mb4'}
        if name:
            kwargs['database'] = name
        return self.MySQLdb.connect(**kwargs)

    def _url(self, name):
        return urlunsplit(('mysql+pymysql', self.parts.netloc, f'/{name}', 'charset=utf8mb4',
                           ''))

    def create(self, name):
        name = f'import_src_{os.getpid()}_{name}'
        self._admin(f'DROP DATABASE IF EXISTS {name}', f'CREATE DATABASE {name}')
        self.names.append(name)
        return self._url(name)

    def copy(self, url, name):
        source = urlsplit(url).path[1:]
        new = self.create(name)
        target = urlsplit(new).path[1:]
        conn = self._connect(source)
        cursor = conn.cursor()
        cursor.execute('SHOW TABLES')
        tables = [row[0] for row in cursor.fetchall()]
        conn.close()
        # (VCPU's id is 0, which MariaDB would renumber in an auto-increment column)
        self._admin('SET FOREIGN_KEY_CHECKS = 0', "SET SQL_MODE = 'NO_AUTO_VALUE_ON_ZERO'", *(
            sql for t in tables for sql in (f'CREATE TABLE {target}.{t} LIKE {source}.{t}',
                                            f'INSERT INTO {target}.{t} '
                                            f'SELECT * FROM {source}.{t}')))
        return new

    def _admin(self, *statements, database=None):
        conn = self._connect(database)
        try:
            cursor = conn.cursor()
            for sql in statements:
                cursor.execute(sql)
            conn.commit()
        finally:
            conn.close()

    def execute(self, url, *statements):
        self._admin(*statements, database=urlsplit(url).path[1:])

    def close(self):
        self._admin(*(f'DROP DATABASE IF EXISTS {name}' for name in self.names))


@pytest.fixture(scope='session')
def sources(tmp_path_factory):
    url = os.environ.get('DATABASE_URL', '')
    scheme = urlsplit(url).scheme
    if scheme.startswith('postgres'):
        servers = PostgresqlSources(url)
    elif scheme.startswith(('mysql', 'mariadb')):
        servers = MysqlSources(url)
    else:
        servers = SqliteSources(tmp_path_factory.mktemp('import-sources'))
    yield servers
    servers.close()


# ---- the real Placement -----------------------------------------------------------------

@pytest.fixture(scope='session')
def placement_venv():
    return placement.placement_venv()


class RealPlacement(placement.RealPlacement):
    """OpenStack Placement 16.0.0 served by gunicorn over one database."""

    @contextmanager
    def serving(self):
        self.start(timeout=60)
        try:
            yield self
        finally:
            self.stop(timeout=30)

    def request(self, method, path, body=None, version=VERSION):
        return requests.request(method, self.url + path, json=body, timeout=30, headers={
            'X-Auth-Token': 'admin', 'OpenStack-API-Version': f'placement {version}',
            'Accept': 'application/json'})

    def ok(self, method, path, body=None, version=VERSION):
        response = self.request(method, path, body, version)
        assert response.status_code in (200, 201, 204), (method, path, response.text)
        return response.json() if response.content else None

    def generation(self, rp):
        return self.ok('GET', f'/resource_providers/{rp}')['generation']


def fill_cloud(real):
    """A nested tree, a sharing provider, a custom class and trait,
    consumers of two types and one older consumer without a type; a deleted
    provider and consumer leave gaps in the ids."""
    real.ok('PUT', '/resource_classes/CUSTOM_FPGA')
    real.ok('PUT', '/traits/CUSTOM_RACK1')
    providers = {}

    def provider(name, parent=None, inventories=None, traits=(), aggregates=()):
        rp = uid(name)
        body = {'name': name, 'uuid': rp}
        if parent:
            body['parent_provider_uuid'] = providers[parent]
        real.ok('POST', '/resource_providers', body)
        providers[name] = rp
        for what, value in (('inventories', inventories), ('traits', list(traits)),
                            ('aggregates', list(aggregates))):
            if value:
                real.ok('PUT', f'/resource_providers/{rp}/{what}', {
                    'resource_provider_generation': real.generation(rp), what: value})
        return rp

    provider('gone')
    provider('cn1', inventories={'DISK_GB': {'total': 500, 'reserved': 10}},
             traits=['COMPUTE_NODE', 'CUSTOM_RACK1'], aggregates=[AGG_ROW])
    real.ok('DELETE', f'/resource_providers/{providers.pop("gone")}')
    provider('cn1-numa0', 'cn1', inventories={
        'VCPU': {'total': 16, 'allocation_ratio': 4.0, 'max_unit': 8},
        'MEMORY_MB': {'total': 65536, 'reserved': 512, 'step_size': 256}},
        traits=['HW_NUMA_ROOT'])
    provider('cn1-numa1', 'cn1', inventories={'VCPU': {'total': 16}}, traits=['HW_NUMA_ROOT'])
    provider('cn1-numa0-pf0', 'cn1-numa0', inventories={'SRIOV_NET_VF': {'total': 8}},
             traits=['HW_NIC_SRIOV'])
    provider('cn2', inventories={'VCPU': {'total': 32, 'allocation_ratio': 16.0},
                                 'MEMORY_MB': {'total': 131072}},
             traits=['COMPUTE_NODE'], aggregates=[AGG_ROW, AGG_STORAGE])
    provider('cn2-fpga', 'cn2', inventories={'CUSTOM_FPGA': {'total': 2}})
    provider('nfs', inventories={'DISK_GB': {'total': 10000, 'reserved': 100}},
             traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG_STORAGE])

    def allocate(consumer, allocations, project, user, consumer_type=None, version=VERSION):
        body = {'allocations': {providers[rp]: {'resources': res}
                                for rp, res in allocations.items()},
                'project_id': project, 'user_id': user}
        if consumer_type:
            body['consumer_type'] = consumer_type
        if version >= '1.28':
            current = real.ok('GET', f'/allocations/{uid(consumer)}')
            body['consumer_generation'] = current.get('consumer_generation')
        real.ok('PUT', f'/allocations/{uid(consumer)}', body, version=version)

    allocate('vm1', {'cn1-numa0': {'VCPU': 4, 'MEMORY_MB': 4096}, 'cn1': {'DISK_GB': 40}},
             'proj-a', 'alice', 'INSTANCE')
    allocate('vm2', {'cn2': {'VCPU': 8, 'MEMORY_MB': 16384}, 'nfs': {'DISK_GB': 200},
                     'cn2-fpga': {'CUSTOM_FPGA': 1}}, 'proj-a', 'bob', 'INSTANCE')
    allocate('vm3', {'cn1-numa0-pf0': {'SRIOV_NET_VF': 2}, 'cn1-numa1': {'VCPU': 2}},
             'proj-b', 'carol', 'INSTANCE')
    allocate('vm3', {'cn1-numa0-pf0': {'SRIOV_NET_VF': 3}, 'cn1-numa1': {'VCPU': 2}},
             'proj-b', 'carol', 'INSTANCE')  # consumer generation 2
    allocate('mig1', {'cn2': {'VCPU': 8, 'MEMORY_MB': 16384}}, 'proj-a', 'bob', 'MIGRATION')
    allocate('old', {'cn2': {'VCPU': 1}}, 'proj-c', 'dave', version='1.27')
    allocate('short', {'cn2': {'VCPU': 1}}, 'proj-c', 'dave', 'INSTANCE')
    real.ok('DELETE', f'/allocations/{uid("short")}')
    return providers


@pytest.fixture(scope='session')
def cloud(placement_venv, sources, tmp_path_factory):
    """A filled source and the real Placement serving it."""
    url = sources.create('cloud')
    real = RealPlacement(placement_venv, url, tmp_path_factory.mktemp('placement-cloud'))
    real.db_sync()
    with real.serving():
        real.providers = fill_cloud(real)
        real.consumers = [uid(c) for c in ('vm1', 'vm2', 'vm3', 'mig1', 'old', 'short')]
        yield real


@pytest.fixture(scope='session')
def fresh_source(placement_venv, sources, tmp_path_factory):
    """A source migrated by the real placement-manage, filled with one
    provider and allocation through its API, then left alone."""
    url = sources.create('fresh')
    real = RealPlacement(placement_venv, url, tmp_path_factory.mktemp('placement-fresh'))
    real.db_sync()
    with real.serving():
        rp = uid('lonely')
        real.ok('POST', '/resource_providers', {'name': 'lonely', 'uuid': rp})
        real.ok('PUT', f'/resource_providers/{rp}/inventories', {
            'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 4}}})
        real.ok('PUT', f'/allocations/{uid("lonely-vm")}', {
            'allocations': {rp: {'resources': {'VCPU': 2}}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return url


# ---- running the command ----------------------------------------------------------------

def run_import(url, *args):
    """(exit status, stdout, stderr) of the command."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command('import_placement', '--source-url', url, *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as e:
        code = e.code
    return code, out.getvalue(), err.getvalue()


def imported(url, *args):
    code, out, err = run_import(url, *args)
    assert code == 0, out + err
    return out


def table_counts(out, prefix=''):
    """{table: rows} from the command's per-table lines ('  table  N' for the
    source, 'imported table  N' for what it wrote)."""
    counts = {}
    for line in out.splitlines():
        words = line.split()
        if (len(words) == 2 + bool(prefix) and line.startswith(prefix or ' ')
                and words[-1].isdigit()):
            counts[words[-2]] = int(words[-1])
    return counts


# Every GET whose answer the import must leave as the old service gave it,
# with its microversion. Placement 16.0.0 answers GET /usages with 500 on
# PostgreSQL from 1.38 (README): there it is compared at 1.37.
def answered_paths(real, vendor):
    usages_version = '1.37' if vendor == 'postgresql' else VERSION
    paths = [(path, VERSION) for path in (
        '/resource_providers', '/resource_classes', '/resource_classes/CUSTOM_FPGA',
        '/traits', '/traits?name=startswith:CUSTOM', '/traits?associated=true',
        f'/resource_providers?member_of={AGG_STORAGE}',
        f'/resource_providers?in_tree={real.providers["cn1-numa1"]}')]
    paths += [(path, usages_version) for path in (
        '/usages?project_id=proj-a', '/usages?project_id=proj-c&user_id=dave')]
    if vendor != 'postgresql':
        paths.append(('/usages?project_id=proj-a&consumer_type=MIGRATION', VERSION))
    for rp in real.providers.values():
        paths += [(f'/resource_providers/{rp}{suffix}', VERSION) for suffix in (
            '', '/inventories', '/inventories/VCPU', '/usages', '/allocations', '/traits',
            '/aggregates')]
    paths += [(f'/allocations/{consumer}', VERSION) for consumer in real.consumers]
    return paths


def differences(real, ours, paths, *, ordered=True):
    """(path, theirs, ours) where the answers differ: status and body (of an
    error, its code: the texts are worded apart), and Last-Modified of one
    provider's or consumer's reads. Not `ordered`: lists compared as sets
    (much of Placement's SQL has no ORDER BY: PostgreSQL returns rows as its
    heap keeps them, which updates reshuffle, MariaDB as its join plan
    reads them)."""
    found = []
    for path, version in paths:
        theirs, mine = real.request('GET', path, version=version), ours.get(path, version=version)
        their_body, my_body = theirs.json() if theirs.content else None, mine.body
        if theirs.status_code >= 400:
            their_body, my_body = _error_codes(their_body), _error_codes(my_body)
        if not ordered:
            their_body, my_body = _unordered(their_body), _unordered(my_body)
        if (theirs.status_code, their_body) != (mine.status_code, my_body):
            found.append((path, theirs.status_code, their_body, mine.status_code, my_body))
        elif theirs.headers.get('Last-Modified') and path.count('/') > 1 and (
                theirs.headers.get('Last-Modified') != mine.get('Last-Modified')) and not (
                _answer_dated_now(path, their_body)
                and _dated_now(theirs.headers['Last-Modified'], theirs.headers['Date'])
                and _dated_now(mine.get('Last-Modified'), format_datetime(
                    dt.datetime.now(dt.UTC), usegmt=True))):
            found.append((path, theirs.headers['Last-Modified'], mine.get('Last-Modified')))
    return found


# A provider's reads that Placement dates with the moment of the answer (no
# row to take a date from: usages, aggregates, and the traits of a provider
# with none), which two servers do a second apart; so is a consumer's
# allocations once it holds none (an empty 'allocations').
DATED_NOW = ('/usages', '/aggregates', '/traits')


def _answer_dated_now(path, body):
    return path.split('?')[0].endswith(DATED_NOW) or (
        path.startswith('/allocations/') and not (body or {}).get('allocations'))


def _dated_now(last_modified, date):
    """Whether an answer is dated with the moment it was made."""
    if not last_modified:
        return False
    gap = parsedate_to_datetime(date) - parsedate_to_datetime(last_modified)
    return abs(gap.total_seconds()) <= 2


def _unordered(value):
    if isinstance(value, dict):
        return {k: _unordered(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_unordered(v) for v in value), key=repr)
    return value


def _error_codes(body):
    return [error.get('code') for error in (body or {}).get('errors', [])]


def books():
    """Every row of ours, the association tables without their own ids
    (Placement's have none, so the import does not carry them)."""
    state = snapshot()
    for table in ('resource_provider_traits', 'resource_provider_aggregates'):
        state[table] = sorted(tuple(item for item in row if item[0] != 'id')
                              for row in state[table])
    return state


# ---- the tests --------------------------------------------------------------------------

def test_an_imported_cloud_answers_as_the_real_placement(cloud):
    out = imported(cloud.db_url)
    rows = table_counts(out, 'imported')
    assert rows == table_counts(out)
    assert (rows['resource_providers'], rows['consumers'], rows['allocations']) == (7, 5, 12)
    assert 'checked: row counts, provider trees and usage per provider and class' in out

    paths = answered_paths(cloud, connection.vendor)
    found = differences(cloud, PlacementClient(), paths,
                        ordered=connection.vendor == 'sqlite')
    assert [d[0] for d in found] == [], "\n".join(map(repr, found))
    assert len(paths) > 60
    assert Inventory.objects.filter(resource_class__name='VCPU',
                                    resource_provider__name='cn2').get().used == 17


def test_clients_keep_writing_with_the_generations_the_old_service_gave(cloud):
    imported(cloud.db_url)
    ours = PlacementClient()
    cn2 = cloud.providers['cn2']
    generation = cloud.generation(cn2)
    assert generation > 0
    response = ours.put(f'/resource_providers/{cn2}/inventories/MEMORY_MB', {
        'resource_provider_generation': generation, 'total': 262144})
    assert response.status_code == 200, response.body
    vm3 = cloud.ok('GET', f'/allocations/{uid("vm3")}')
    assert vm3['consumer_generation'] == 2
    response = ours.put(f'/allocations/{uid("vm3")}', {
        'allocations': {cloud.providers['cn1-numa1']: {'resources': {'VCPU': 1}}},
        'project_id': 'proj-b', 'user_id': 'carol', 'consumer_type': 'INSTANCE',
        'consumer_generation': vm3['consumer_generation']})
    assert response.status_code == 204, response.body


def test_a_dry_run_counts_the_rows_and_writes_nothing(cloud):
    before = snapshot()
    code, out, _err = run_import(cloud.db_url, '--dry-run')
    assert code == 0, out
    assert 'at alembic revision a082b8bb98d0' in out
    rows = table_counts(out)
    assert (rows['resource_providers'], rows['allocations'], rows['placement_aggregates'],
            rows['consumer_types']) == (7, 12, 2, 2)
    assert '0 errors, 0 warnings' in out
    assert 'dry run: nothing written' in out
    assert snapshot() == before


def test_a_non_empty_target_is_refused_unless_replaced(cloud):
    ours = PlacementClient()
    mine = ours.create_provider(name='already-here')
    before = snapshot()
    with pytest.raises(CommandError, match=r'this database is not empty \(1 resource_providers'):
        run_import(cloud.db_url)
    assert snapshot() == before

    imported(cloud.db_url, '--replace')
    assert not ResourceProvider.objects.filter(uuid=mine['uuid']).exists()
    assert ResourceProvider.objects.count() == 7
    # Importing over an import needs --replace too, and gives the same books.
    first = books()
    with pytest.raises(CommandError, match='not empty'):
        run_import(cloud.db_url)
    imported(cloud.db_url, '--replace')
    assert books() == first


def test_batch_size_one_gives_the_same_books_as_one_large_batch(cloud):
    code, _out, err = run_import(cloud.db_url, '--batch-size', '1')
    assert code == 0
    assert 'import_placement: allocations 12/12' in err
    one_by_one = books()
    imported(cloud.db_url, '--batch-size', '100000', '--replace')
    assert books() == one_by_one


def test_the_traits_keep_the_old_services_ids_and_order(cloud):
    imported(cloud.db_url)
    ours = PlacementClient().get('/traits').body['traits']
    source = importer.Source.open(cloud.db_url)
    try:
        by_id = [tuple(row) for row in source.query('SELECT id, name FROM traits ORDER BY id')]
    finally:
        source.close()
    assert list(Trait.objects.order_by('id').values_list('id', 'name')) == by_id
    assert ours == [name for _, name in by_id]
    # Placement lists its table without ORDER BY: its ids' order, except
    # when PostgreSQL stored its one multi-row INSERT of the standard traits
    # out of id order (about one fresh database in six).
    assert sorted(ours) == sorted(cloud.ok('GET', '/traits')['traits'])
    assert Trait.objects.filter(name='CUSTOM_RACK1').exists()


def test_an_unknown_alembic_revision_is_refused_by_name(fresh_source, sources):
    old = sources.copy(fresh_source, 'old_revision')
    sources.execute(old, "UPDATE alembic_version SET version_num = 'b4ed3a175331'")
    before = snapshot()
    with pytest.raises(CommandError, match=r'alembic revision b4ed3a175331; this importer reads '
                                           r'the schema of openstack-placement 16\.0\.0'):
        run_import(old, '--dry-run')
    sources.execute(old, 'DROP TABLE alembic_version')
    with pytest.raises(CommandError, match='has no alembic_version table'):
        run_import(old)
    assert snapshot() == before


def test_the_previous_revision_is_accepted(fresh_source, sources):
    previous = sources.copy(fresh_source, 'previous_revision')
    sources.execute(previous, "UPDATE alembic_version SET version_num = '422ece571366'")
    code, out, _err = run_import(previous, '--dry-run')
    assert code == 0 and 'at alembic revision 422ece571366' in out


def test_a_dry_run_on_a_damaged_copy_reports_each_problem_and_writes_nothing(cloud, sources):
    damaged = sources.copy(cloud.db_url, 'damaged')
    numa1, vm1 = cloud.providers['cn1-numa1'], uid('vm1')
    sources.execute(
        damaged,
        # An allocation of a provider that is not there.
        'INSERT INTO allocations (id, resource_provider_id, consumer_id, resource_class_id, '
        f"used, created_at) VALUES (900, 999999, '{vm1}', 0, 1, '2024-01-01 00:00:00')",
        # A provider whose root is gone (as before Placement's 611cd6dffd7b
        # migration refused them; a foreign key keeps other ids out).
        f"UPDATE resource_providers SET root_provider_id = NULL WHERE uuid = '{numa1}'",
        # An allocation of a consumer that is not there.
        'INSERT INTO allocations (id, resource_provider_id, consumer_id, resource_class_id, '
        "used, created_at) SELECT 901, id, 'no-such-consumer', 0, 1, '2024-01-01 00:00:00' "
        f"FROM resource_providers WHERE uuid = '{cloud.providers['cn2']}'")
    before = snapshot()
    code, out, _err = run_import(damaged, '--dry-run')
    assert code == 2
    lines = out.splitlines()
    assert ('ERROR allocation-provider-missing: allocation 900 of consumer '
            f'{vm1} names resource provider id 999999, which does not exist') in lines
    assert ('ERROR allocation-consumer-missing: allocation 901 names consumer '
            'no-such-consumer, which does not exist') in lines
    assert [line for line in lines if line.startswith('ERROR provider-root-missing')] == [
        (f'ERROR provider-root-missing: resource provider {numa1} (cn1-numa1, id '
         f'{ResourceProviderIds.of(damaged, numa1)}) has no root provider')]
    assert '3 errors, 0 warnings' in lines
    assert snapshot() == before

    code, out, err = run_import(damaged)
    assert code == 2 and 'refusing to import' in err
    assert snapshot() == before


def test_warnings_are_reported_and_carried(cloud, sources):
    crowded = sources.copy(cloud.db_url, 'crowded')
    cn2 = cloud.providers['cn2']
    # Placement accepts an inventory shrunk below its allocations (and warns).
    sources.execute(crowded, 'UPDATE inventories SET total = 1 WHERE resource_class_id = 0 AND '
                    f"resource_provider_id = (SELECT id FROM resource_providers "
                    f"WHERE uuid = '{cn2}')")
    code, out, _err = run_import(crowded, '--dry-run')
    assert code == 1
    assert (f'WARNING provider-over-capacity: resource provider {cn2} (cn2) is over capacity in '
            'VCPU: 17 used of (1 - 0) * 16.0') in out.splitlines()
    out = imported(crowded)
    assert '0 errors, 1 warnings' in out
    assert Inventory.objects.get(resource_provider__uuid=cn2, resource_class__name='VCPU').used \
        == 17


def test_a_mysql_source_without_its_driver_names_the_requirements(monkeypatch):
    monkeypatch.setitem(__import__('sys').modules, 'MySQLdb', None)
    with pytest.raises(CommandError, match='requirements-mysql.txt'):
        run_import('mysql+pymysql://placement:secret@127.0.0.1/placement', '--dry-run')


def test_consumers_and_allocations_keep_their_ids_and_timestamps(cloud):
    imported(cloud.db_url)
    ours = {c.uuid: (c.generation, c.consumer_type_id is None) for c in Consumer.objects.all()}
    assert ours[uid('vm3')] == (2, False)
    assert ours[uid('old')] == (1, True)
    assert Allocation.objects.count() == 12
    with connection.cursor() as cursor:
        cursor.execute('SELECT COUNT(*) FROM allocations WHERE created_at IS NULL')
        assert cursor.fetchone()[0] == 0


class ResourceProviderIds:
    @staticmethod
    def of(url, uuid):
        source = importer.Source.open(url)
        try:
            return source.query('SELECT id FROM resource_providers WHERE uuid = %s', [uuid])[0][0]
        finally:
            source.close()
