"""A page reads one snapshot (placement_site.snapshots): a write committed
between two of its queries is seen by neither, so its numbers agree and
nothing it looked up is missing; the dashboards, their exports as they
stream, the admin's pages, GET /capacity, /capacity/trends and /metrics
read that way, the rest of the API and every write do not."""
import csv
import io
import threading
import uuid

import pytest
from django.db import OperationalError
from django.db import connection
from django.db import connections
from django.db import transaction
from django.http import StreamingHttpResponse

from allocations import services as allocation_services
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.ui import reports
from placement_site import replicas
from placement_site import snapshots
from providers import change_log
from providers import remembered
from providers.models import BooksChange
from providers.models import ResourceProvider
from providers.models import Trait
from tests.support.factories import add_provider

# Committed writes from another connection, as a second worker makes them.
COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)
pytestmark = COMMITTED


def claim(node, project, user, vcpu):
    consumer = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=consumer, allocations={node.uuid: {'VCPU': vcpu}},
        project_id=project, user_id=user, generation=None)])
    return consumer


def committed_elsewhere(write):
    """write() on a connection of its own (another thread), committed
    before this returns."""
    failed = []

    def run():
        try:
            write()
        except Exception as exc:  # reported in the test's thread
            failed.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not failed, failed


def after_the_first(marker, write):
    """A query wrapper: write() committed elsewhere right after the first
    query whose SQL contains `marker` has run."""
    done = []

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not done and marker in sql:
            done.append(sql)
            committed_elsewhere(write)
        return result
    wrapper.done = done
    return wrapper


def deleting(consumer):
    return lambda: allocation_services.allocations_delete(consumer_uuid=consumer)


@pytest.fixture
def project_x():
    """proj-x: user-leaving holds 2 VCPU with one consumer (returned),
    user-staying 3."""
    node = add_provider('node', inventories={'VCPU': {'total': 64}})
    leaving = claim(node, 'proj-x', 'user-leaving', 2)
    claim(node, 'proj-x', 'user-staying', 3)
    remembered.forget()
    return leaving


# ---- the race that answered 500 ----------------------------------------------------

def test_usage_of_a_project_while_a_users_last_consumer_is_deleted(staff, project_x):
    """The usage page's sums, then its users' names: the user whose last
    consumer goes in between is still named, with what it held then."""
    wrapper = after_the_first('SUM(', deleting(project_x))
    with connection.execute_wrapper(wrapper):
        response = staff.get('/ui/usage/?project=proj-x')
    assert wrapper.done, 'the sums were not read'
    assert response.status_code == 200
    by_user = {row['key']: (row['consumers'], row['usages']['VCPU'])
               for row in response.context['by_user']}
    assert by_user == {('proj-x', 'user-leaving'): (1, 2), ('proj-x', 'user-staying'): (1, 3)}
    (project,) = response.context['by_project']
    assert (project['consumers'], project['usages']['VCPU']) == (2, 5)
    # Read again, the page shows the deletion.
    by_user = {row['key'] for row in staff.get('/ui/usage/?project=proj-x').context['by_user']}
    assert by_user == {('proj-x', 'user-staying')}


def test_usage_read_outside_a_snapshot_names_an_owner_whose_consumers_went(project_x):
    """Not the page's way (it reads in one snapshot), but no KeyError
    either: a user whose last consumer went between the sums and the names
    is still named (the names are read by the owners' ids)."""
    wrapper = after_the_first('SUM(', deleting(project_x))
    with connection.execute_wrapper(wrapper):
        usage = reports.Usage.read_now({'project': 'proj-x', 'user': None,
                                        'consumer_type': None})
    assert wrapper.done
    assert {row['key'] for row in usage.rows(['project', 'user'])} == {
        ('proj-x', 'user-leaving'), ('proj-x', 'user-staying')}


# ---- the snapshot itself ---------------------------------------------------------------

def vcpu_used():
    return sum(Allocation.objects.values_list('used', flat=True))


def test_a_snapshot_does_not_see_a_write_committed_after_its_first_read(project_x):
    with snapshots.read_snapshot('default'):
        assert vcpu_used() == 5
        committed_elsewhere(deleting(project_x))   # SQLite: not locked out by the reader
        assert vcpu_used() == 5
        assert Consumer.objects.filter(uuid=project_x).exists()
    assert vcpu_used() == 3


def test_a_write_inside_a_snapshot_fails_and_the_connection_writes_after(project_x):
    node = ResourceProvider.objects.get(name='node')
    with pytest.raises(snapshots.WriteInReadSnapshot), snapshots.read_snapshot('default'):
        assert vcpu_used() == 5
        ResourceProvider.objects.filter(pk=node.pk).update(name='renamed')
    assert connection.get_autocommit() and not connection.in_atomic_block
    allocation_services.allocations_delete(consumer_uuid=project_x)   # writable again
    assert vcpu_used() == 3


def test_a_snapshot_knows_itself_from_a_write_transaction():
    assert not snapshots.in_read_snapshot(connection)
    with snapshots.read_snapshot('default'):
        assert snapshots.in_read_snapshot(connection)
        with snapshots.read_snapshot('default'):   # nested: the same snapshot
            assert snapshots.in_read_snapshot(connection)
        assert snapshots.in_read_snapshot(connection)
    assert not snapshots.in_read_snapshot(connection)
    with transaction.atomic():
        assert not snapshots.in_read_snapshot(connection)
        with snapshots.read_snapshot('default'):   # inside a write: that transaction
            assert not snapshots.in_read_snapshot(connection)
    assert not snapshots.in_read_snapshot(connection)


class Counted:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls


def test_results_are_remembered_inside_a_read_snapshot_never_inside_a_write():
    add_provider('node', inventories={'VCPU': {'total': 16}})
    remembered.forget()
    compute = Counted()
    with snapshots.read_snapshot('default'):
        assert remembered.remembered('default', 'k', compute) == 1
        assert remembered.remembered('default', 'k', compute) == 1   # served
    assert remembered.remembered('default', 'k', compute) == 1       # and kept
    with transaction.atomic():
        assert remembered.remembered('default', 'k', compute) == 2
        with snapshots.read_snapshot('default'):
            assert remembered.remembered('default', 'k', compute) == 3


def test_a_page_that_prunes_the_change_log_answers(staff, monkeypatch):
    """The change log is pruned from inside version(), at most every
    PRUNE_SECONDS per process once it is long, but never inside a page's
    read snapshot, which would refuse the DELETE (PostgreSQL's aborting the
    transaction whole): the page must still answer."""
    monkeypatch.setattr(change_log, 'WINDOW', 3)
    monkeypatch.setattr(change_log, 'KEEP', 6)
    monkeypatch.setattr(change_log, '_last_pruned', [-change_log.PRUNE_SECONDS])
    BooksChange.objects.bulk_create([BooksChange() for _ in range(10)])
    remembered.forget()
    assert staff.get('/ui/usage/').status_code == 200


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_sqlite_snapshots_read_a_wal_database():
    """A reader in WAL mode keeps its snapshot while writers commit; in a
    rollback journal it would hold every writer off until it ended."""
    with connection.cursor() as cursor:
        cursor.execute('PRAGMA journal_mode')
        assert cursor.fetchone()[0] == 'wal'


# ---- what reads in one ------------------------------------------------------------------

# The session and the signed-in user are read before the page, outside it;
# the snapshot's own statements begin it.
BEFORE_THE_PAGE = ('django_session', 'auth_user', 'BEGIN', 'TRANSACTION')


def snapshot_of_each_query(client, path, data=None):
    """[(in a read snapshot, SQL)] of the queries of the client's GET of
    `path` (a POST of `data`), an answer's streamed chunks included."""
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append((snapshots.in_read_snapshot(connection), sql))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        response = client.get(path) if data is None else client.post(path, data)
        if response.streaming:
            b''.join(response.streaming_content)
    assert response.status_code < 400, response
    assert not connection.in_atomic_block
    return [(inside, sql) for inside, sql in seen
            if not any(table in sql for table in BEFORE_THE_PAGE)]


@pytest.fixture
def cloud(project_x):
    return ResourceProvider.objects.get(name='node')


def test_pages_exports_admin_capacity_and_metrics_read_in_one_snapshot(
        staff, admin_client, api, cloud):
    pages = ['/ui/', '/ui/providers/', '/ui/providers/?export=csv', f'/ui/trees/{cloud.uuid}/',
             '/ui/usage/?project=proj-x', '/ui/projects/proj-x/?export=json']
    for path in pages:
        queries = snapshot_of_each_query(staff, path)
        assert queries and all(inside for inside, _ in queries), (path, queries)
    audited = snapshot_of_each_query(staff, '/ui/audit/', {'servers': 'none'})   # a POST, read only
    assert audited and all(inside for inside, _ in audited), audited
    for path in ['/admin/providers/resourceprovider/',
                 f'/admin/providers/resourceprovider/{cloud.pk}/change/']:
        queries = snapshot_of_each_query(admin_client, path)
        assert queries and all(inside for inside, _ in queries), (path, queries)
    for path in ['/capacity?resources=VCPU:1', '/capacity?group_by=root&format=csv',
                 '/capacity/trends', '/metrics']:
        queries = snapshot_of_each_query(api, path)
        assert queries and all(inside for inside, _ in queries), (path, queries)


def test_the_rest_of_the_api_and_every_write_read_live(api, admin_client, cloud):
    for path in ['/resource_providers', f'/resource_providers/{cloud.uuid}/usages',
                 '/usages?project_id=proj-x', '/allocation_candidates?resources=VCPU:1']:
        queries = snapshot_of_each_query(api, path)
        assert queries and not any(inside for inside, _ in queries), (path, queries)
    added = snapshot_of_each_query(admin_client, '/admin/providers/trait/add/',
                                   {'name': 'CUSTOM_RACK9'})
    assert added and not any(inside for inside, _ in added)
    assert Trait.objects.filter(name='CUSTOM_RACK9').exists()


# ---- exports, as they stream -----------------------------------------------------------

def exported(response):
    return list(csv.reader(io.StringIO(b''.join(response.streaming_content).decode())))


def test_an_export_streams_its_rows_from_one_snapshot(staff, project_x):
    """A consumer deleted between the export's consumers and their
    allocations is still exported whole: both read the same moment."""
    response = staff.get('/ui/projects/proj-x/?export=csv')
    wrapper = after_the_first('consumers', deleting(project_x))   # the stream's first read
    with connection.execute_wrapper(wrapper):
        rows = exported(response)
    assert wrapper.done
    assert sorted((row[2], row[-1]) for row in rows[1:]) == [
        ('user-leaving', '2'), ('user-staying', '3')]
    assert not connection.in_atomic_block


def test_an_export_left_by_its_client_ends_its_snapshot(staff, project_x):
    response = staff.get('/ui/projects/proj-x/?export=csv')
    chunks = iter(response.streaming_content)
    next(chunks)   # the header: the snapshot is open, the rows unread
    assert snapshots.in_read_snapshot(connection)
    response.close()   # the server, when the client has gone away
    assert not connection.in_atomic_block and connection.get_autocommit()


def test_a_streamed_answer_reads_every_chunk_in_one_snapshot(project_x):
    """The view's snapshot ends when it returns (a session may be saved
    after it); the stream's own spans every chunk."""
    inside = []

    def counts():
        for _ in range(2):
            inside.append(snapshots.in_read_snapshot(connection))
            yield str(vcpu_used())
            committed_elsewhere(deleting(project_x))   # between two chunks

    view = snapshots.snapshot_reads(lambda request: StreamingHttpResponse(counts()))
    response = view(None)
    assert not connection.in_atomic_block
    assert list(response) == [b'5', b'5']
    assert inside == [True, True] and not connection.in_atomic_block
    assert vcpu_used() == 3


# ---- on a replica ------------------------------------------------------------------------

@pytest.fixture
def replica(settings, monkeypatch):
    """'replica0': a second connection to the test database, healthy,
    made for this thread alone (the test allows no other alias)."""
    primary = connections['default']
    replica = type(primary)({**primary.settings_dict}, 'replica0')
    connections._connections.replica0 = replica
    settings.PLACEMENT_READ_DATABASES = ['replica0']
    settings.DATABASE_ROUTERS = ['placement_site.replicas.ReplicaRouter']
    monkeypatch.setattr(replicas, 'replica_lag', lambda alias: 0.0)
    replicas.reset()
    yield replica
    replicas.reset()
    replica.close()
    del connections._connections.replica0


def test_a_page_read_from_a_replica_takes_its_snapshot_there(staff, replica, project_x):
    with replica.cursor() as cursor:   # connected, and set up (MySQL reads its version)
        cursor.execute('SELECT 1')
    seen = []

    def wrapper(execute, sql, params, many, context):
        if not any(table in sql for table in BEFORE_THE_PAGE):
            seen.append((snapshots.in_read_snapshot(replica), connection.in_atomic_block))
        return execute(sql, params, many, context)

    with replica.execute_wrapper(wrapper):
        response = staff.get('/ui/usage/?project=proj-x')
    assert response.status_code == 200
    assert seen and all(on_replica and not on_primary for on_replica, on_primary in seen), seen
    assert not replica.in_atomic_block


def test_a_replica_failing_mid_page_is_read_again_in_a_snapshot_of_the_primary(
        staff, replica, project_x):
    def failing(execute, sql, params, many, context):
        if 'SUM(' in sql:
            raise OperationalError('server closed the connection unexpectedly')
        return execute(sql, params, many, context)

    on_primary = []

    def recording(execute, sql, params, many, context):
        if 'SUM(' in sql:
            on_primary.append(snapshots.in_read_snapshot(connection))
        return execute(sql, params, many, context)

    with replica.execute_wrapper(failing), connection.execute_wrapper(recording):
        response = staff.get('/ui/usage/?project=proj-x')
    assert response.status_code == 200
    assert on_primary and all(on_primary)
    assert replicas.choose_replica() == 'default'   # marked down
    assert not replica.in_atomic_block and not connection.in_atomic_block


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_replica_gone_since_its_last_query_is_read_again_from_the_primary(
        staff, replica, project_x):
    """The replica's server ended the session (it was stopped) between two
    pages: the driver finds out as the page's snapshot begins, and the page
    is read from the primary, not answered 500."""
    with replica.cursor() as cursor:
        cursor.execute('SELECT pg_backend_pid()')
        pid = cursor.fetchone()[0]
    with connection.cursor() as cursor:
        cursor.execute('SELECT pg_terminate_backend(%s)', [pid])
    response = staff.get('/ui/usage/?project=proj-x')
    assert response.status_code == 200
    assert replicas.choose_replica() == 'default'   # marked down
    assert not replica.in_atomic_block and not connection.in_atomic_block
