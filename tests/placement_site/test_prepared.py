"""placement_site.prepared.Prepared: a read compiled once per shape gives the
rows the ORM gives for every value, and falls back to the ORM where a shape
cannot be prepared. On each database (ids are bound differently on each)."""
import pytest
from django.db import connection
from django.db import transaction
from django.db.models import Max
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from placement_site import prepared
from placement_site.prepared import Ids
from placement_site.prepared import Prepared
from providers.models import Inventory
from providers.models import ResourceProvider


@pytest.fixture
def cloud(small_cloud):
    return small_cloud


class Counted:
    """A build function that counts its calls."""

    def __init__(self, build):
        self.build, self.calls = build, 0

    def __call__(self, *values):
        self.calls += 1
        return self.build(*values)


def fitting_by_class(class_names, amounts, within):
    """fitting(), with the classes' amounts matched to their ids."""
    queryset = Inventory.objects.all()
    if within is not None:
        queryset = queryset.filter(resource_provider_id__in_ids=within)
    wanted = dict(zip(class_names, amounts))
    return queryset.able_to_fit_any(wanted).values_list(
        'resource_provider__name', 'used').order_by('resource_provider__name')


def test_rows_are_the_orms_for_every_value_and_each_shape_compiles_once(cloud):
    build = Counted(lambda name, amount: Inventory.objects.filter(
        resource_provider__name=name, resource_class__name='VCPU').able_to_fit(amount).values_list(
        'resource_provider__name', 'total').order_by())
    read = Prepared(Inventory, build)
    for name, amount in [('cn1', 1), ('cn1', 13), ('cn1', 14), ('cn3', 1), ('cn3', 2)]:
        assert read.rows(name, amount) == list(build.build(name, amount)), (name, amount)
    assert build.calls == 1
    assert read.rows('cn1', 13) == [('cn1', 8)]
    assert read.rows('cn1', 14) == []


def test_ids_are_bound_as_one_value_of_any_length(cloud):
    ids = {name: rp.id for name, rp in cloud.items()}
    build = Counted(lambda within: ResourceProvider.objects.filter(
        id__in_ids=within).values_list('name').order_by('name'))
    read = Prepared(ResourceProvider, build)
    assert read.rows(Ids([ids['cn1']])) == [('cn1',)]
    assert read.rows(Ids([ids['cn3'], ids['nfs'], ids['cn1']])) == [('cn1',), ('cn3',), ('nfs',)]
    # (MySQL's IN list takes one placeholder per id, written per call.)
    assert read.rows(Ids([ids['nfs'], ids['cn1']])) == [('cn1',), ('nfs',)]
    assert build.calls == 1


def test_tuples_none_and_bools_are_shapes_of_their_own(cloud):
    build = Counted(lambda names, parent_is_null: ResourceProvider.objects.filter(
        name__in=names, parent_provider__isnull=parent_is_null).values_list('name').order_by(
        'name'))
    read = Prepared(ResourceProvider, build)
    assert read.rows(('cn1', 'cn2-numa0'), True) == [('cn1',)]
    assert read.rows(('cn1', 'cn2-numa0'), False) == [('cn2-numa0',)]
    assert read.rows(('cn3', 'nfs', 'cn1'), True) == [('cn1',), ('cn3',), ('nfs',)]
    assert read.rows(('cn3', 'cn2'), True) == [('cn2',), ('cn3',)]
    assert build.calls == 3   # two lengths, two bools

    within = Counted(fitting_by_class)
    read = Prepared(Inventory, within)
    vcpu = cloud['cn1'].inventories.get(resource_class__name='VCPU').resource_class_id
    assert read.rows((vcpu,), (13,), None) == [('cn1', 3)]
    assert read.rows((vcpu,), (1,), Ids([cloud['cn3'].id])) == [('cn3', 0)]
    assert read.rows((vcpu,), (2,), None) == [('cn1', 3), ('cn2-numa0', 0)]


def test_empty_ids_read_nothing_without_a_query(cloud):
    read = Prepared(ResourceProvider, lambda within: ResourceProvider.objects.filter(
        id__in_ids=within).values_list('name'))
    with CaptureQueriesContext(connection) as queries:
        assert read.rows(Ids([])) == []
    assert len(queries) == 0


def test_values_the_orm_reads_its_own_way_are_not_prepared(cloud):
    # An amount beyond a 32-bit integer field: the ORM drops or keeps the
    # condition whole instead of comparing.
    build = Counted(lambda amount: Inventory.objects.filter(min_unit__lte=amount).values_list(
        'resource_provider__name').order_by('resource_provider__name'))
    read = Prepared(Inventory, build)
    assert read.rows(2 ** 40) == list(build.build(2 ** 40))
    assert len(read.rows(2 ** 40)) == Inventory.objects.count()
    # A value inlined in the SQL (a LIMIT) cannot be bound: built every time.
    build = Counted(lambda n: ResourceProvider.objects.values_list('name').order_by('name')[:n])
    read = Prepared(ResourceProvider, build)
    assert read.rows(1) == [('cn1',)]
    assert read.rows(2) == [('cn1',), ('cn2',)]
    calls = build.calls
    assert read.rows(3) == [('cn1',), ('cn2',), ('cn2-numa0',)]
    assert build.calls == calls + 1


def test_columns_the_orm_converts_are_converted_alike(cloud):
    build = Counted(lambda name: Inventory.objects.filter(resource_provider__name=name).values_list(
        'resource_class__name').annotate(total=Sum('total'), ratio=Max('allocation_ratio'),
                                         changed=Max('created_at')).order_by('resource_class_id'))
    read = Prepared(Inventory, build)
    for name in ('cn1', 'cn3', 'nfs', 'nope'):
        rows = read.rows(name)
        assert rows == list(build.build(name)), name
        assert [tuple(map(type, row)) for row in rows] == [
            tuple(map(type, row)) for row in build.build(name)]
    assert build.calls == 1


def test_shapes_kept_are_bounded(cloud, monkeypatch):
    monkeypatch.setattr(Prepared, 'SHAPES', 2)
    build = Counted(lambda names: ResourceProvider.objects.filter(name__in=names).values_list(
        'name').order_by('name'))
    read = Prepared(ResourceProvider, build)
    for names in [('cn1',), ('cn1', 'cn3'), ('cn1', 'cn3', 'nfs'), ('cn1', 'cn3', 'nfs')]:
        assert read.rows(names) == sorted((n,) for n in names)
    assert len(read._compiled) == 2
    # The third shape is compiled again on each call, not kept.
    assert build.calls == 2 + 2


def statements(queries):
    return [q['sql'].split()[0] for q in queries.captured_queries]


class Rollback(Exception):
    pass


def test_a_read_on_the_server_is_planned_once_per_connection(cloud):
    build = Counted(lambda name: ResourceProvider.objects.filter(name=name).values_list(
        'name', 'uuid').order_by())
    read = Prepared(ResourceProvider, build, on_server=True)
    cn1, cn3 = [(name, cloud[name].uuid) for name in ('cn1', 'cn3')]
    assert list(build.build('cn1')) == [cn1]
    with CaptureQueriesContext(connection) as queries:
        assert read.rows('cn1') == [cn1]
        assert read.rows('cn3') == [cn3]
        assert read.rows('nope') == []
    if connection.vendor == 'postgresql':
        # PREPAREd on the first call (as the connection's set-up, not one of
        # the calls' queries), EXECUTEd with each call's value.
        assert statements(queries) == ['EXECUTE', 'EXECUTE', 'EXECUTE']
        with connection.cursor() as cursor:
            cursor.execute('SELECT count(*) FROM pg_prepared_statements WHERE name = %s',
                           [read._names[next(iter(read._names))]])
            assert cursor.fetchone() == (1,)
    else:
        assert statements(queries) == ['SELECT'] * 3
    # A rollback leaves the statement prepared.
    with pytest.raises(Rollback), transaction.atomic():
        assert read.rows('cn1') == [cn1]
        raise Rollback
    assert read.rows('cn1') == [cn1]
    assert build.calls == 1


def test_preparing_on_the_server_can_be_turned_off(cloud, settings):
    settings.PLACEMENT_PREPARE_ON_SERVER = False
    read = Prepared(ResourceProvider, lambda name: ResourceProvider.objects.filter(
        name=name).values_list('name').order_by(), on_server=True)
    with CaptureQueriesContext(connection) as queries:
        assert read.rows('cn1') == [('cn1',)]
        assert read.rows('cn3') == [('cn3',)]
    assert statements(queries) == ['SELECT', 'SELECT']
    assert read._names == {}


def test_a_connection_keeps_a_bounded_number_prepared(cloud, monkeypatch):
    connection.ensure_connection()
    if connection.vendor == 'postgresql':
        kept = len(prepared._PREPARED_ON.get(connection.connection, ()))   # earlier tests'
        monkeypatch.setattr(Prepared, 'ON_SERVER_PER_CONNECTION', kept + 1)
    by_name = Prepared(ResourceProvider, lambda name: ResourceProvider.objects.filter(
        name=name).values_list('name').order_by(), on_server=True)
    by_names = Prepared(ResourceProvider, lambda names: ResourceProvider.objects.filter(
        name__in=names).values_list('name').order_by('name'), on_server=True)
    by_name.rows('cn1')
    with CaptureQueriesContext(connection) as queries:
        assert by_names.rows(('cn1', 'cn3')) == [('cn1',), ('cn3',)]
        assert by_name.rows('cn3') == [('cn3',)]
    if connection.vendor == 'postgresql':
        # The connection already keeps one: the second read runs unprepared.
        assert statements(queries) == ['SELECT', 'EXECUTE']


def test_numbered_parameters_keep_the_percent_sign():
    assert prepared._numbered("a = %s AND b LIKE 'x%%' AND c = ANY(%s)") == (
        "a = $1 AND b LIKE 'x%' AND c = ANY($2)")
