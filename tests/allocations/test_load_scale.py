"""manage.py load_scale: the scale dataset written straight into the schema
keeps every invariant the services keep, is the same for the same seed, and
reads back through the API."""
import io
from collections import Counter
from collections import defaultdict

import pytest
from django.core.management import CommandError
from django.core.management import call_command
from django.db import transaction
from django.db.models import Sum

from allocations.management.commands.load_scale import FLAT
from allocations.management.commands.load_scale import NUMA
from allocations.management.commands.load_scale import PF
from allocations.management.commands.load_scale import PHYSNETS
from allocations.management.commands.load_scale import TRAITS_PER_NODE
from allocations.management.commands.load_scale import Names
from allocations.management.commands.load_scale import plan_dataset
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from providers.models import Event
from providers.models import EventProvider
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.models import Trait

N = 30
SEED = 7
NOVA = 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10'


def load(n=N, seed=SEED, **options):
    out = io.StringIO()
    call_command('load_scale', compute_nodes=n, seed=seed, stdout=out, **options)
    return out.getvalue()


@pytest.fixture
def loaded(db):
    return load()


def dump():
    """Every loaded row, by uuid and name instead of ids."""
    return {
        'providers': sorted(ResourceProvider.objects.values_list(
            'uuid', 'name', 'generation', 'root_provider__uuid', 'parent_provider__uuid')),
        'inventories': sorted(Inventory.objects.values_list(
            'resource_provider__uuid', 'resource_class__name', 'total', 'reserved', 'min_unit',
            'max_unit', 'step_size', 'allocation_ratio')),
        'traits': sorted(ProviderTrait.objects.values_list(
            'resource_provider__uuid', 'trait__name')),
        'aggregates': sorted(ProviderAggregate.objects.values_list(
            'resource_provider__uuid', 'aggregate__uuid')),
        'consumers': sorted(Consumer.objects.values_list(
            'uuid', 'project__external_id', 'user__external_id', 'generation',
            'consumer_type__name')),
        'allocations': sorted(Allocation.objects.values_list(
            'consumer__uuid', 'resource_provider__uuid', 'resource_class__name', 'used')),
    }


class Rollback(Exception):
    pass


def test_the_counts_are_the_plans_and_printed(loaded):
    counts = plan_dataset(N, SEED).counts()
    assert ResourceProvider.objects.count() == counts['providers']
    assert Consumer.objects.count() == counts['consumers']
    assert Allocation.objects.count() == counts['allocations']
    assert Inventory.objects.count() == counts['inventories']
    assert f'providers={counts["providers"]}' in loaded
    assert f'loaded {N} compute nodes' in loaded


def test_the_shapes(loaded):
    names = Names(SEED)
    inventories = defaultdict(dict)
    for uuid, cls, total, reserved, max_unit, ratio in Inventory.objects.values_list(
            'resource_provider__uuid', 'resource_class__name', 'total', 'reserved', 'max_unit',
            'allocation_ratio'):
        inventories[uuid][cls] = (total, reserved, max_unit, ratio)
    traits = defaultdict(set)
    for uuid, name in ProviderTrait.objects.values_list('resource_provider__uuid', 'trait__name'):
        traits[uuid].add(name)
    aggregates = defaultdict(set)
    for uuid, agg in ProviderAggregate.objects.values_list('resource_provider__uuid',
                                                           'aggregate__uuid'):
        aggregates[uuid].add(agg)
    children = defaultdict(list)
    for rp in ResourceProvider.objects.filter(parent_provider__isnull=False).select_related(
            'parent_provider'):
        children[rp.parent_provider.uuid].append(rp)

    shapes = Counter()
    for i in range(N):
        root = names.uuid(names.node_name(i))
        assert TRAITS_PER_NODE[0] <= len(traits[root]) <= TRAITS_PER_NODE[1]
        hosts = aggregates[root] & set(names.host_aggregates)
        storage = aggregates[root] & set(names.storage_aggregates)
        assert 1 <= len(hosts) <= 2 and len(storage) <= 1
        diskless = 'DISK_GB' not in inventories[root]
        assert diskless == bool(storage)
        if not diskless:
            assert inventories[root]['DISK_GB'] == FLAT['DISK_GB']
        numa = children[root]
        if numa:
            shapes['nested'] += 1
            assert 'VCPU' not in inventories[root]
            assert len(numa) == 2
            pfs = []
            for node in numa:
                assert inventories[node.uuid] == NUMA
                assert traits[node.uuid] == {'HW_NUMA_ROOT'}
                pfs += children[node.uuid]
            assert len(pfs) == 1
            assert inventories[pfs[0].uuid] == PF
            assert 'HW_NIC_SRIOV' in traits[pfs[0].uuid]
            assert len(traits[pfs[0].uuid] & set(PHYSNETS)) == 1
        else:
            shapes['flat'] += 1
            assert {k: v for k, v in inventories[root].items() if k != 'DISK_GB'} == {
                'VCPU': FLAT['VCPU'], 'MEMORY_MB': FLAT['MEMORY_MB']}
        shapes['diskless'] += diskless
    assert shapes['nested'] and shapes['flat'] and shapes['diskless']
    for uuid, _name, agg in names.sharing:
        assert traits[uuid] >= {'MISC_SHARES_VIA_AGGREGATE'}
        assert aggregates[uuid] == {names.storage_aggregates[agg]}
        assert set(inventories[uuid]) == {'DISK_GB'}
    assert set(Trait.objects.filter(name__in=PHYSNETS).values_list('name', flat=True)) == set(
        PHYSNETS)
    assert set(ConsumerType.objects.values_list('name', flat=True)) >= {'INSTANCE'}
    assert Project.objects.count() <= 50 and User.objects.count() <= 150


def test_every_invariant_holds(loaded):
    records = {(i.resource_provider_id, i.resource_class_id): i for i in Inventory.objects.all()}
    used = Allocation.objects.values('resource_provider_id', 'resource_class_id').annotate(
        used=Sum('used'))
    for row in used:
        record = records[row['resource_provider_id'], row['resource_class_id']]
        assert row['used'] <= record.capacity, row
        assert record.used == row['used'], row  # the database's own count
    for allocation in Allocation.objects.all():
        record = records[allocation.resource_provider_id, allocation.resource_class_id]
        assert record.min_unit <= allocation.used <= record.max_unit
        assert allocation.used % record.step_size == 0
    providers = {rp.pk: rp for rp in ResourceProvider.objects.all()}
    for rp in providers.values():
        assert rp.generation >= 0
        if rp.parent_provider_id is None:
            assert rp.root_provider_id == rp.pk
        else:
            assert rp.root_provider_id == providers[rp.parent_provider_id].root_provider_id
    # Every provider with inventories, traits or allocations was "written".
    assert all(rp.generation > 0 for rp in providers.values())
    assert set(Consumer.objects.values_list('generation', flat=True)) == {1}
    assert not Consumer.objects.filter(allocations__isnull=True).exists()


def test_no_events_are_written(loaded):
    assert not Event.objects.exists()
    assert not EventProvider.objects.exists()


def test_the_same_seed_writes_the_same_rows(db):
    plan = plan_dataset(N, SEED)
    assert plan == plan_dataset(N, SEED)
    assert plan != plan_dataset(N, SEED + 1)
    with pytest.raises(Rollback), transaction.atomic():
        load()
        first = dump()
        raise Rollback
    assert not ResourceProvider.objects.exists()
    load()
    assert dump() == first
    assert len(first['allocations']) == len(plan.allocations)


def test_refuses_a_database_with_providers(loaded):
    count = ResourceProvider.objects.count()
    with pytest.raises(CommandError, match='already has resource providers'):
        load(seed=SEED + 1)
    # --force loads next to other providers, but never over its own rows.
    with pytest.raises(CommandError, match='there already'):
        load(force=True)
    assert ResourceProvider.objects.count() == count


def test_force_loads_next_to_other_providers(api):
    api.create_provider(name='somebody-elses')
    with pytest.raises(CommandError):
        load(n=3)
    load(n=3, force=True)
    assert ResourceProvider.objects.count() == 1 + plan_dataset(3, SEED).counts()['providers']


def test_the_api_reads_the_loaded_data(loaded, api):
    names = Names(SEED)
    response = api.get(f'/allocation_candidates?{NOVA}')
    assert response.status_code == 200
    body = response.body
    # Every tree has room for a small instance (diskless ones through the sharing providers).
    roots = {rp.uuid: rp.root_provider.uuid
             for rp in ResourceProvider.objects.select_related('root_provider')}
    nodes = {names.uuid(names.node_name(i)) for i in range(N)}
    served = {roots[u] for request in body['allocation_requests'] for u in request['allocations']}
    assert served - nodes <= {u for u, _n, _a in names.sharing}
    assert nodes <= served
    limited = api.get(f'/allocation_candidates?{NOVA}&limit=5').body
    assert len(limited['allocation_requests']) == 5

    root = names.uuid(names.node_name(0))
    for uuid in [root] + [u for u, _n, _a in names.sharing]:
        expected = dict(Allocation.objects.filter(resource_provider__uuid=uuid).values(
            'resource_class__name').annotate(total=Sum('used')).values_list(
            'resource_class__name', 'total'))
        usages = api.get(f'/resource_providers/{uuid}/usages').body['usages']
        assert {k: v for k, v in usages.items() if v} == expected
    usages = api.get(f'/usages?project_id={names.big_project}', version='1.37').body['usages']
    assert usages['VCPU'] == Allocation.objects.filter(
        consumer__project__external_id=names.big_project,
        resource_class__name='VCPU').aggregate(total=Sum('used'))['total']
    allocations = api.get(f'/allocations/{names.uuid("cn00000-consumer0")}').body['allocations']
    assert allocations and all(a['resources'] for a in allocations.values())


def test_the_services_write_after_a_load(loaded, api):
    """Ids came from the tables' own sequences (or after the largest id), so
    new rows written the normal way do not collide with the loaded ones."""
    names = Names(SEED)
    provider = api.create_provider(name='after-the-load')
    api.set_inventory(provider['uuid'], {'VCPU': {'total': 8}})
    response = api.put('/allocations/' + names.uuid('a-new-consumer'), {
        'allocations': {provider['uuid']: {'resources': {'VCPU': 2}}},
        'project_id': names.big_project, 'user_id': names.users[0][0],
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert response.status_code == 204, response.content
    assert Event.objects.exists()  # the services do record their changes
