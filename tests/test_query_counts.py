"""The number of SQL queries per request does not grow with the number of
providers, consumers or allocations (no N+1)."""
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations import services as allocation_services
from providers import services

AGGREGATE = str(uuid.uuid4())
SHARED = str(uuid.uuid4())


def add_compute_nodes(start, count):
    """Flat and nested compute nodes, some diskless using a shared pool."""
    for i in range(start, start + count):
        root = services.provider_create(name=f'cn{i}')
        inventories = {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096}}
        if i % 3:
            inventories['DISK_GB'] = {'total': 500}
        services.inventories_replace(provider=root, inventories=inventories)
        services.traits_replace(provider=root, trait_names=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'])
        services.aggregates_replace(provider=root, aggregate_uuids=[AGGREGATE, SHARED])
        if i % 2:
            numa = services.provider_create(name=f'cn{i}-numa0', parent_provider_uuid=root.uuid)
            services.inventories_replace(provider=numa, inventories={'VCPU': {'total': 8}})
            services.traits_replace(provider=numa, trait_names=['HW_NUMA_ROOT'])
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=str(uuid.uuid4()), allocations={root.uuid: {'VCPU': 1, 'MEMORY_MB': 64}},
            project_id='project-a', user_id='user-a', generation=None, consumer_type='INSTANCE')])


@pytest.fixture
def cloud(db):
    pool = services.provider_create(name='nfs-pool')
    services.inventories_replace(provider=pool, inventories={'DISK_GB': {'total': 100000}})
    services.traits_replace(provider=pool, trait_names=['MISC_SHARES_VIA_AGGREGATE'])
    services.aggregates_replace(provider=pool, aggregate_uuids=[SHARED])
    add_compute_nodes(0, 10)
    return pool


def queries(api, path):
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path)
    assert response.status_code == 200, response.content
    return len(captured), response


PATHS = [
    '/resource_providers',
    f'/resource_providers?member_of={AGGREGATE}&required=HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED'
    '&resources=VCPU:1,MEMORY_MB:64',
    '/resource_providers?resources=DISK_GB:10',
    '/resource_classes',
    '/traits?associated=true',
    '/usages?project_id=project-a',
    '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64,DISK_GB:10',
    '/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2'
    f'&member_of={AGGREGATE}&limit=5',
    '/allocation_candidates?resources=DISK_GB:10&resources_C=VCPU:1&required_C=HW_NUMA_ROOT'
    '&group_policy=isolate',
    '/allocation_candidates?resources=DISK_GB:10&root_required=COMPUTE_NODE',
]


def test_queries_do_not_grow_with_providers(api, cloud):
    small = {path: queries(api, path) for path in PATHS}
    add_compute_nodes(10, 190)
    large = {path: queries(api, path) for path in PATHS}
    assert {p: n for p, (n, _) in large.items()} == {p: n for p, (n, _) in small.items()}
    for path in PATHS[:3] + PATHS[6:]:  # the answers did list more providers
        before, after = listed(small[path][1]), listed(large[path][1])
        if 'limit=5' in path:
            assert before == after == 5, path
        else:
            assert after > before, path


def listed(response):
    """How many providers or candidates an answer lists."""
    body = response.json()
    return len(body.get('resource_providers', body.get('allocation_requests', ())))


def test_provider_reads_do_not_grow_with_consumers(api, cloud):
    provider = services.provider_create(name='busy')
    services.inventories_replace(provider=provider, inventories={'VCPU': {'total': 1000}})

    def allocate(count):
        for _ in range(count):
            allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
                consumer_uuid=str(uuid.uuid4()), allocations={provider.uuid: {'VCPU': 1}},
                project_id='p', user_id='u', generation=None)])

    paths = [f'/resource_providers/{provider.uuid}/allocations',
             f'/resource_providers/{provider.uuid}/usages',
             f'/resource_providers/{provider.uuid}/inventories',
             f'/resource_providers/{provider.uuid}/traits',
             f'/resource_providers/{provider.uuid}/aggregates',
             f'/resource_providers/{provider.uuid}']
    allocate(2)
    before = [queries(api, p)[0] for p in paths]
    allocate(50)
    assert [queries(api, p)[0] for p in paths] == before


def test_consumer_reads_and_writes_do_not_grow_with_providers(api, cloud):
    providers = [services.provider_create(name=f'spread{i}') for i in range(12)]
    for provider in providers:
        services.inventories_replace(provider=provider, inventories={'VCPU': {'total': 10}})

    def write(consumer, count):
        with CaptureQueriesContext(connection) as captured:
            response = api.allocate(consumer, {p.uuid: {'VCPU': 1} for p in providers[:count]})
        assert response.status_code == 204, response.content
        return len(captured)

    write(str(uuid.uuid4()), 1)  # the first write also creates project and user
    assert write(str(uuid.uuid4()), 1) == write(str(uuid.uuid4()), 12)
    one, many = str(uuid.uuid4()), str(uuid.uuid4())
    write(one, 1)
    write(many, 12)
    assert queries(api, f'/allocations/{one}')[0] == queries(api, f'/allocations/{many}')[0]
