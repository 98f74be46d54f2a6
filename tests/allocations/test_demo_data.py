"""manage.py load_demo: the demo cloud's scenarios, capacity, what the API
makes of its shared providers, its pods and bindings, idempotence, --reset
and --staff-user.

The demo (size small) is loaded once per module inside a transaction that
is rolled back at the end; each test runs in a savepoint of it (`db`).
"""
import collections
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError
from django.core.management import call_command
from django.db import transaction
from django.db.models import Sum

from allocations.management.commands.load_demo import DEMO_PROJECT_IDS
from allocations.management.commands.load_demo import NFS_AGGREGATE
from allocations.management.commands.load_demo import NODE_NAME
from allocations.management.commands.load_demo import POOL_AGGREGATE
from allocations.management.commands.load_demo import PROJECTS
from allocations.management.commands.load_demo import aggregate_uuid
from allocations.management.commands.load_demo import demo_pods
from allocations.management.commands.load_demo import demo_providers
from allocations.management.commands.load_demo import node_name
from allocations.management.commands.load_demo import pod_uuid
from allocations.management.commands.load_demo import provider_uuid
from allocations.models import Allocation
from allocations.models import Consumer
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.models import Trait
from providers.pods.models import Pod
from providers.pods.models import PodBinding

SEED = 3
ROWS, RACKS, NODES = 3, 10, 2  # size small
DISKLESS = {node_name(1, rack, n) for rack in range(6, 11) for n in (1, 2)}
SEGMENT = {node_name(3, 1, n) for n in (1, 2)}
RESOURCE_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio')
# Every compute node's traits, then those of its hardware by row.
COMMON_TRAITS = {'COMPUTE_NODE', 'HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_AESNI',
                 'HW_CPU_HYPERTHREADING', 'COMPUTE_VOLUME_MULTI_ATTACH', 'COMPUTE_VOLUME_EXTEND',
                 'COMPUTE_NET_ATTACH_INTERFACE', 'COMPUTE_IMAGE_TYPE_QCOW2',
                 'COMPUTE_IMAGE_TYPE_RAW', 'COMPUTE_TRUSTED_CERTS'}
ROW_CPU_TRAITS = {1: {'HW_CPU_X86_AVX512F'}, 2: set(),
                  3: {'HW_CPU_X86_AVX512F', 'HW_CPU_X86_AVX512BW'}}
ROW_DISK_TRAIT = {1: 'STORAGE_DISK_SSD', 2: 'STORAGE_DISK_HDD', 3: 'STORAGE_DISK_SSD'}
SRIOV_ROWS = (2, 3)
DISABLED = 'r2-rack03-cn02'
CAD = 'resource=CAD'
THRESHOLDS = {'VCPU': 80, 'MEMORY_MB': 85}
PODS_LINE = ('  pods: 3 (pod-row1 maintenance, pod-row2, pod-row3-cad resource=CAD '
             'workload=CAD Modeling), bindings: 8 open, 2 ended')
# (project, affinity, pod, end reason) of every binding, in the order made.
BINDINGS = [
    ('demo-web', None, 'pod-row1', None),
    ('demo-db', None, 'pod-row1', None),
    ('demo-ci', None, 'pod-row1', 'maintenance'),
    ('demo-ci', None, 'pod-row2', None),
    ('demo-analytics', None, 'pod-row2', None),
    ('demo-nfv', None, 'pod-row2', None),
    ('demo-analytics', CAD, 'pod-row3-cad', None),
    ('demo-db', CAD, 'pod-row3-cad', None),
    ('demo-nfv', CAD, 'pod-row3-cad', 'admin'),
    ('demo-analytics', 'workload=CAD Modeling', 'pod-row3-cad', None),
]


def load(**options):
    out = io.StringIO()
    call_command('load_demo', stdout=out, **options)
    return out.getvalue()


@pytest.fixture(scope='module')
def demo(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        with transaction.atomic():
            output = load(size='small', seed=SEED)
            yield output
            transaction.set_rollback(True)


def by_name(name):
    return ResourceProvider.objects.get(name=name)


def traits_of(provider):
    return set(provider.traits.values_list('name', flat=True))


def inventory_of(api, name):
    response = api.get(f'/resource_providers/{provider_uuid(name)}/inventories')
    assert response.status_code == 200, response.content
    return response.body['inventories']


def member_names(api, aggregate):
    response = api.get(f'/resource_providers?member_of={aggregate_uuid(aggregate)}')
    assert response.status_code == 200, response.content
    return {rp['name'] for rp in response.body['resource_providers']}


def allocation_rows():
    return sorted(Allocation.objects.values_list(
        'consumer__uuid', 'consumer__consumer_type__name', 'consumer__project__external_id',
        'resource_provider__uuid', 'resource_class__name', 'used'))


def binding_rows():
    """Every binding as (project, affinity, pod, end reason), in the order made."""
    return [(b.project_id, b.affinity or None, b.pod.name, b.end_reason)
            for b in PodBinding.objects.select_related('pod').order_by('id')]


def pod_rows():
    return list(Pod.objects.in_line().values_list(
        'uuid', 'name', 'aggregate__uuid', 'availability_zone', 'affinity_tags', 'thresholds',
        'state'))


def state():
    """Demo providers and consumers with their generations, pods and bindings."""
    return (sorted(ResourceProvider.objects.values_list('uuid', 'name', 'generation')),
            sorted(Consumer.objects.values_list('uuid', 'generation')),
            allocation_rows(), pod_rows(),
            sorted(PodBinding.objects.values_list('uuid', 'ended_at', 'end_reason')))


def test_summary(demo, db):
    types = collections.Counter(Consumer.objects.values_list('consumer_type__name', flat=True))
    lines = demo.splitlines()
    assert len(lines) == 6, demo
    assert re.fullmatch(r'Loaded the demo cloud \(size small, seed 3\) in \d+\.\d s\.', lines[0])
    assert lines[1] == ('  providers: 262 (60 compute nodes, 120 NUMA nodes, 80 SR-IOV NICs, '
                        '2 shared (NFS, IPv4 pool))')
    assert lines[2] == (f"  consumers: {sum(types.values())} ({types['INSTANCE']} INSTANCE, "
                        f"{types['MIGRATION']} MIGRATION)")
    assert lines[3] == ('  projects: 5 (demo-analytics, demo-ci, demo-db, demo-nfv, demo-web), '
                        'users: 10')
    # How full each class is comes from the random workload.
    assert re.fullmatch(r'  usage: DISK_GB \d+%, IPV4_ADDRESS \d+%, MEMORY_MB \d+%, '
                        r'SRIOV_NET_VF \d+%, VCPU \d+%', lines[4]), lines[4]
    assert lines[5] == PODS_LINE
    assert len(demo_providers()) == 262


def test_nfs_share(demo, api):
    nfs = by_name('nfs-share-1')
    assert nfs.uuid == provider_uuid('nfs-share-1') and nfs.parent_provider_id is None
    assert inventory_of(api, 'nfs-share-1') == {'DISK_GB': {
        'total': 102400, 'reserved': 1024, 'min_unit': 50, 'max_unit': 10000,
        'step_size': 10, 'allocation_ratio': 1.0}}
    assert traits_of(nfs) == {'MISC_SHARES_VIA_AGGREGATE', 'STORAGE_DISK_HDD'}
    assert set(nfs.aggregates.values_list('uuid', flat=True)) == {aggregate_uuid(NFS_AGGREGATE)}
    assert member_names(api, NFS_AGGREGATE) == DISKLESS | {'nfs-share-1'}
    # The diskless nodes have no inventory of their own (it is on the NUMA
    # nodes); every other compute node has a local disk.
    assert len(DISKLESS) == 10
    for name in DISKLESS:
        assert inventory_of(api, name) == {}
    assert inventory_of(api, 'r1-rack05-cn02') == {'DISK_GB': {
        'total': 1788, 'reserved': 100, 'min_unit': 1, 'max_unit': 1788, 'step_size': 1,
        'allocation_ratio': 1.0}}
    assert set(by_name('r1-rack06-cn01').aggregates.values_list('uuid', flat=True)) == {
        aggregate_uuid('row1'), aggregate_uuid(NFS_AGGREGATE)}


def test_row_aggregates(demo, api):
    for row in range(1, ROWS + 1):
        assert member_names(api, f'row{row}') == {
            node_name(row, rack, n) for rack in range(1, RACKS + 1) for n in range(1, NODES + 1)}


def test_ipv4_pool(demo, api):
    pool = by_name('r3-rack01-ipv4-pool')
    assert pool.parent_provider_id is None
    assert inventory_of(api, 'r3-rack01-ipv4-pool') == {'IPV4_ADDRESS': {
        'total': 254, 'reserved': 5, 'min_unit': 1, 'max_unit': 1, 'step_size': 1,
        'allocation_ratio': 1.0}}
    assert traits_of(pool) == {'MISC_SHARES_VIA_AGGREGATE'}
    assert member_names(api, POOL_AGGREGATE) == SEGMENT | {'r3-rack01-ipv4-pool'}


def test_numa_nodes_and_nics(demo, api):
    assert Trait.objects.filter(
        name__in=['CUSTOM_PHYSNET_PUBLIC', 'CUSTOM_PHYSNET_INTRANET']).count() == 2
    computes = [p for p in ResourceProvider.objects.filter(parent_provider__isnull=True)
                if NODE_NAME.match(p.name)]
    assert len(computes) == ROWS * RACKS * NODES
    numa_root = Trait.objects.get(name='HW_NUMA_ROOT')
    for compute in computes:
        row = int(compute.name[1])
        expected = COMMON_TRAITS | ROW_CPU_TRAITS[row]
        if compute.name not in DISKLESS:
            expected.add(ROW_DISK_TRAIT[row])
        if compute.name == DISABLED:
            expected.add('COMPUTE_STATUS_DISABLED')
        assert traits_of(compute) == expected, compute.name
        children = list(compute.children.all())
        assert sorted(c.name for c in children) == [
            f'{compute.name}-numa0', f'{compute.name}-numa1']
        for child in children:
            assert numa_root in child.traits.all()
            assert set(child.inventories.values_list('resource_class__name', flat=True)) == {
                'VCPU', 'MEMORY_MB'}
            assert child.root_provider_id == compute.pk
    disks = collections.Counter(t for c in computes for t in traits_of(c) if t.startswith(
        'STORAGE_DISK_'))
    # SSD: row 1 less its 10 diskless nodes, and row 3; HDD: row 2.
    assert disks == {'STORAGE_DISK_SSD': 30, 'STORAGE_DISK_HDD': 20}
    # NICs: grandchildren of the compute nodes, one physnet each.
    for physnet, numa in (('CUSTOM_PHYSNET_PUBLIC', 0), ('CUSTOM_PHYSNET_INTRANET', 1)):
        response = api.get(f'/resource_providers?required=HW_NIC_SRIOV,{physnet}')
        nics = response.body['resource_providers']
        assert sorted(nic['name'] for nic in nics) == sorted(
            f'{node_name(row, rack, n)}-numa{numa}-nic{numa}' for row in SRIOV_ROWS
            for rack in range(1, RACKS + 1) for n in range(1, NODES + 1))
        for nic in nics:
            parent = ResourceProvider.objects.get(uuid=nic['parent_provider_uuid'])
            assert parent.name == nic['name'].rsplit('-', 1)[0]
            assert parent.parent_provider.name == parent.name.rsplit('-', 1)[0]
            assert nic['root_provider_uuid'] == parent.parent_provider.uuid
            assert set(inventory_of(api, nic['name'])) == {'SRIOV_NET_VF'}
    assert 'HW_NIC_SRIOV' not in {t for c in computes for t in traits_of(c)}


def test_allocations(demo, db):
    consumers = Consumer.objects.all()
    types = collections.Counter(consumers.values_list('consumer_type__name', flat=True))
    assert set(types) == {'INSTANCE', 'MIGRATION'}
    assert types['MIGRATION'] == 4  # max(4, 60 nodes // 25) moves, each finds a source
    # How many instances fit is the random workload's; far more than the moves.
    assert types['INSTANCE'] > 20 * types['MIGRATION']
    projects = set(consumers.values_list('project__external_id', flat=True))
    assert projects == DEMO_PROJECT_IDS
    users = set(consumers.values_list('user__external_id', flat=True))
    assert users == {user for project in PROJECTS for user in project.users}
    classes = set(Allocation.objects.values_list('resource_class__name', flat=True))
    assert classes == {'VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF', 'IPV4_ADDRESS'}
    # An instance's VCPU and memory sit on one NUMA node, its VF on that
    # node's NIC, its disk on the root or (diskless nodes) on the share.
    nfs = by_name('nfs-share-1')
    held = collections.defaultdict(dict)
    for row in Allocation.objects.filter(consumer__consumer_type__name='INSTANCE') \
            .select_related('resource_provider', 'resource_class'):
        held[row.consumer_id][row.resource_class.name] = row.resource_provider
    for resources in held.values():
        numa, disk = resources['VCPU'], resources['DISK_GB']
        assert resources['MEMORY_MB'] == numa and numa.name.endswith(('-numa0', '-numa1'))
        if numa.name.rsplit('-', 1)[0] in DISKLESS:
            assert disk == nfs
        else:
            assert disk.pk == numa.root_provider_id
        if 'SRIOV_NET_VF' in resources:
            assert resources['SRIOV_NET_VF'].parent_provider_id == numa.pk
    # How many instances land on the share or take an address is random;
    # that some do is not (diskless nodes, 70% of the segment's instances).
    assert Allocation.objects.filter(resource_provider=nfs).count() > 5
    assert Allocation.objects.filter(
        resource_provider__name='r3-rack01-ipv4-pool').count() > 2


def test_usage_within_capacity(demo, db):
    used = {(a['resource_provider_id'], a['resource_class_id']): a['used']
            for a in Allocation.objects.values('resource_provider_id', 'resource_class_id')
            .annotate(used=Sum('used'))}
    fill = collections.defaultdict(lambda: [0, 0])
    fractions = []
    for inventory in Inventory.objects.select_related('resource_class'):
        in_use = used.pop((inventory.resource_provider_id, inventory.resource_class_id), 0)
        assert in_use <= inventory.capacity, (inventory.resource_provider_id, inventory)
        fill[inventory.resource_class.name][0] += in_use
        fill[inventory.resource_class.name][1] += inventory.capacity
        fractions.append(in_use / inventory.capacity)
    assert not used  # no allocation without inventory
    # The fill levels are drawn at random (30-75% of a node, a few nodes
    # 95-99%): only their bounds are known.
    for name in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
        assert 0.2 <= fill[name][0] / fill[name][1] <= 0.7, name
    assert 0.3 <= fill['MEMORY_MB'][0] / fill['MEMORY_MB'][1] <= 0.7
    assert 1 <= sum(f >= 0.9 for f in fractions) <= 20  # a few nearly full


def test_candidates_use_the_nfs_share_for_diskless_nodes(demo, api):
    response = api.get('/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:100')
    assert response.status_code == 200, response.content
    names = dict(ResourceProvider.objects.values_list('uuid', 'name'))
    nfs = provider_uuid('nfs-share-1')
    on_share = set()
    for request in response.body['allocation_requests']:
        allocations = request['allocations']
        disk = next(u for u, a in allocations.items() if 'DISK_GB' in a['resources'])
        vcpu = next(u for u, a in allocations.items() if 'VCPU' in a['resources'])
        node = names[vcpu].rsplit('-', 1)[0]
        if node in DISKLESS:
            assert disk == nfs
            on_share.add(node)
        else:
            assert names[disk] == node
    assert on_share == DISKLESS
    assert nfs in response.body['provider_summaries']


def test_pods_over_the_row_aggregates(demo, api):
    """The three pods as GET /pods shows them: over the rows' aggregates,
    oldest first, with the thresholds, zones, tags and states of the story,
    and books that are the rows' (below the thresholds: every binding
    request of the story passed)."""
    response = api.get('/pods')
    assert response.status_code == 200, response.content
    pods = response.body['pods']
    assert [(p['name'], p['uuid'], p['aggregate'], p['availability_zone'], p['affinity_tags'],
             p['thresholds'], p['state'], p['tenants']) for p in pods] == [
        ('pod-row1', pod_uuid('pod-row1'), aggregate_uuid('row1'), 'az1', {}, THRESHOLDS,
         'maintenance', 2),
        ('pod-row2', pod_uuid('pod-row2'), aggregate_uuid('row2'), 'az1', {}, THRESHOLDS,
         'enabled', 3),
        ('pod-row3-cad', pod_uuid('pod-row3-cad'), aggregate_uuid('row3'), 'az2',
         {'resource': 'CAD', 'workload': 'CAD Modeling'}, THRESHOLDS, 'enabled', 2)]
    assert [p.name for p in demo_pods()] == ['pod-row1', 'pod-row2', 'pod-row3-cad']
    for pod in pods:
        row = pod['name'].split('-')[1]
        assert set(pod['resources']) >= {'VCPU', 'MEMORY_MB'}, pod['name']
        for name in THRESHOLDS:
            books = pod['resources'][name]
            assert 0 < books['used'] < books['capacity'], (pod['name'], name)
            assert books['threshold_reached'] is False, (pod['name'], name, books)
        # Row 1's diskless nodes keep no DISK_GB: the pod's disk is the other nodes'.
        nodes = {node_name(int(row[3]), rack, n) for rack in range(1, RACKS + 1)
                 for n in range(1, NODES + 1)}
        assert member_names(api, row) == nodes
    assert [p['name'] for p in api.get(f'/pods?affinity={CAD}').body['pods']] == [
        'pod-row3-cad']
    assert [p['name'] for p in api.get('/pods?affinity=').body['pods']] == [
        'pod-row1', 'pod-row2']


def test_projects_bound_through_binding_requests(demo, api):
    """Every binding of the story in order, the one that ended because its
    pod went into maintenance and the one an admin ended, as GET
    /pod_bindings shows them."""
    assert binding_rows() == BINDINGS
    response = api.get('/pod_bindings')
    assert response.status_code == 200, response.content
    history = response.body['pod_bindings']
    assert [(b['project_id'], b['affinity'], b['pod']['name'], b['end_reason'])
            for b in history] == BINDINGS
    assert all((b['ended_at'] is None) == (b['end_reason'] is None) for b in history)
    moved_from, moved_to = history[2], history[3]
    assert moved_from['ended_at'] <= moved_to['started_at']
    open_ = api.get('/pod_bindings?open=true').body['pod_bindings']
    assert {(b['project_id'], b['affinity']): b['member_of'] for b in open_} == {
        ('demo-web', None): aggregate_uuid('row1'), ('demo-db', None): aggregate_uuid('row1'),
        ('demo-ci', None): aggregate_uuid('row2'),
        ('demo-analytics', None): aggregate_uuid('row2'),
        ('demo-nfv', None): aggregate_uuid('row2'),
        ('demo-analytics', CAD): aggregate_uuid('row3'), ('demo-db', CAD): aggregate_uuid('row3'),
        ('demo-analytics', 'workload=CAD Modeling'): aggregate_uuid('row3')}
    # pod-row1 is in maintenance: a request of its tenants moves them on.
    moved = api.post('/pod_bindings', {'project_id': 'demo-web'})
    assert moved.status_code == 201, moved.content
    assert (moved.body['pod']['name'], moved.body['replaced']['end_reason']) == (
        'pod-row2', 'maintenance')


def test_rerun_is_idempotent(demo, db):
    before = state()
    loaded = ('The demo cloud is already loaded (262 providers, '
              f'{Consumer.objects.count()} consumers); nothing to do. Use --reset to reload it.\n')
    assert load(size='small', seed=SEED) == loaded
    assert load(size='medium', seed=SEED + 1) == loaded
    assert state() == before


# The reloads (10-18 s each on a database server) run on SQLite only: the
# demo's own rules over services whose behaviour on every database the API
# tests check; the module's load runs on every database.
@pytest.mark.slow
@pytest.mark.any_database
def test_reset_reloads_deterministically(demo, api):
    before = allocation_rows()
    consumers = Consumer.objects.count()
    other = api.create_provider('not-the-demo')
    pods = pod_rows()
    # A pod outside the demo (of an affinity the demo never asks for) stays.
    gpu = api.post('/pods', {'name': 'gpu-pod', 'affinity_tags': {'resource': 'GPU'}})
    assert gpu.status_code == 201, gpu.content
    assert api.post('/pod_bindings', {'project_id': 'someone-else',
                                      'affinity': 'resource=GPU'}).status_code == 201
    output = load(size='small', seed=SEED, reset=True).splitlines()
    assert output[0] == ('Deleted 3 demo pods with 10 bindings, '
                         f'{consumers} demo consumers and 262 demo providers.')
    assert re.fullmatch(r'Loaded the demo cloud \(size small, seed 3\) in \d+\.\d s\.',
                        output[1])
    assert len(output) == 7  # and the summary's five lines
    assert output[-1] == PODS_LINE
    assert allocation_rows() == before
    assert pod_rows()[1:] == pods  # after gpu-pod, now older
    assert binding_rows() == [('someone-else', 'resource=GPU', 'gpu-pod', None)] + BINDINGS
    load(size='small', seed=SEED + 1, reset=True)
    after = allocation_rows()
    assert {r[0] for r in after}.isdisjoint({r[0] for r in before})
    assert len(demo_providers()) == 262
    assert ResourceProvider.objects.filter(uuid=other['uuid']).exists()
    assert [p['name'] for p in api.get('/pods').body['pods']] == [
        'gpu-pod', 'pod-row1', 'pod-row2', 'pod-row3-cad']
    assert [b['project_id'] for b in api.get(
        f'/pod_bindings?pod={gpu.body["uuid"]}').body['pod_bindings']] == ['someone-else']


@pytest.mark.slow
@pytest.mark.any_database
def test_reset_refuses_foreign_tenants_of_demo_pods(demo, api):
    bound = api.post('/pod_bindings', {'project_id': 'someone-else'})
    assert bound.status_code == 201, bound.content
    assert bound.body['pod']['name'] == 'pod-row2'  # pod-row1 is in maintenance
    before = state()
    with pytest.raises(CommandError) as refused:
        load(reset=True)
    assert str(refused.value) == (
        f'1 projects outside the demo are bound to demo pods (e.g. binding '
        f'{bound.body["uuid"]} of someone-else); end those bindings first.')
    assert state() == before
    assert api.delete(f'/pod_bindings/{bound.body["uuid"]}').status_code == 204
    assert load(reset=True).startswith('Deleted 3 demo pods with 11 bindings, ')


@pytest.mark.slow
@pytest.mark.any_database
def test_loading_beside_pods_that_take_its_requests_is_refused(demo, api):
    # Reloaded after this pod, the demo's pods come later in line.
    first = api.post('/pods', {'name': 'first-in-line'})
    assert first.status_code == 201, first.content
    with pytest.raises(CommandError) as refused:
        load(size='small', seed=SEED, reset=True)
    assert str(refused.value) == (
        'The demo binds demo-web (general-purpose) to pod-row1, but its binding request went '
        'to first-in-line: pods outside the demo take its requests. Load it into a database '
        'without them.')
    assert demo_providers() == [] and demo_pods() == []


def test_reset_refuses_foreign_consumers(demo, api):
    node = provider_uuid('r2-rack01-cn01')
    response = api.allocate('11111111-2222-3333-4444-555555555555', {node: {'DISK_GB': 10}},
                            project='someone-else')
    assert response.status_code == 204, response.content
    before = state()
    with pytest.raises(CommandError) as refused:
        load(reset=True)
    assert str(refused.value) == (
        '1 consumers outside the demo projects hold allocations on demo providers '
        '(e.g. 11111111-2222-3333-4444-555555555555); delete them first.')
    assert state() == before


def test_staff_user(demo, db):
    loaded = ('The demo cloud is already loaded (262 providers, '
              f'{Consumer.objects.count()} consumers); nothing to do. Use --reset to reload it.\n')
    output = load(staff_user='demo-admin', password='first-pw')
    assert output == loaded + "Created staff superuser 'demo-admin'.\n"
    user = get_user_model().objects.get(username='demo-admin')
    assert user.is_staff and user.is_superuser and user.check_password('first-pw')
    assert load(staff_user='demo-admin', password='second-pw') == (
        loaded + "Updated staff superuser 'demo-admin'.\n")
    user.refresh_from_db()
    assert user.check_password('second-pw')
    with pytest.raises(CommandError) as refused:
        load(staff_user='demo-admin')
    assert str(refused.value) == '--staff-user needs --password.'
