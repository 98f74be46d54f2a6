"""How many SQL queries each request costs: pinned per request kind and per
page in query_counts.json (so 8 becoming 40 fails), and not growing with
the number of providers, consumers or allocations (no N+1).

After a deliberate change, rewrite the baseline with
    PLACEMENT_RECORD_QUERY_COUNTS=1 scripts/test.sh tests/test_query_counts.py
and review the diff of tests/query_counts.json like any other change."""
import json
import os
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations import services as allocation_services
from allocations.models import Consumer
from providers import services
from providers import trends
from providers.candidates import summaries
from providers.models import Aggregate
from providers.pods import selection as pod_selection
from providers.pods import services as pod_services

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


@pytest.mark.slow
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


def test_pod_reads_and_binding_requests_do_not_grow_with_providers_or_pods(api, cloud):
    (pod, _), _ = add_pods()

    def costs():
        paths = ['/pods', f'/pods/{pod.uuid}', '/pod_bindings']
        reads = [queries(api, path)[0] for path in paths]
        request = {'project_id': 'project-a', 'resources': {'VCPU': 1, 'DISK_GB': 1}}
        return reads + [counted(lambda: api.post('/pod_bindings', request))]

    before = costs()
    add_compute_nodes(10, 60)
    for i in range(10):
        pod_services.pod_create(name=f'more-{i}', thresholds={'VCPU': 50})
    assert costs() == before
    assert len(api.get('/pods').body['pods']) == 12


# ---- the pinned baseline -------------------------------------------------------------

BASELINE = Path(__file__).with_name('query_counts.json')
CANDIDATE_QUERIES = {
    'simple': 'resources=VCPU:1,MEMORY_MB:64,DISK_GB:10',
    'perfload': f'resources=VCPU:1&required=HW_CPU_X86_AVX2&member_of={AGGREGATE}&limit=5',
    'granular': 'resources=DISK_GB:10&resources_C=VCPU:1&required_C=HW_NUMA_ROOT'
                '&group_policy=isolate',
    'root_required': 'resources=DISK_GB:10&root_required=COMPUTE_NODE',
    'sharing_only': 'resources=DISK_GB:2000',
    'forbidden': 'resources=VCPU:1&required=!HW_NUMA_ROOT,!COMPUTE_STATUS_DISABLED'
                 '&member_of=!' + str(uuid.UUID(int=1)),
    # The search stops at the capacity query; explain researches the rest.
    'nothing_fits': 'resources=VCPU:1000&required=HW_CPU_X86_AVX2&member_of=' + AGGREGATE,
}


def staff_client():
    User.objects.create_user('operator', password='pw', is_staff=True, is_superuser=True)
    client = Client()
    assert client.login(username='operator', password='pw')
    return client


def counted(call):
    """The queries of a call, with no provider's traits remembered (their
    worst case: providers.candidates.summaries)."""
    summaries.forget_traits()
    with CaptureQueriesContext(connection) as captured:
        response = call()
        if getattr(response, 'streaming', False):  # its queries run as it is sent
            b''.join(response.streaming_content)
    assert response.status_code < 400, response.content
    return len(captured)


def add_pods():
    """A general-purpose pod of the compute nodes' aggregate and a tagged
    one of the shared pool's, each with a tenant bound."""
    pods = [pod_services.pod_create(name='pod-a', aggregate_uuid=AGGREGATE,
                                    thresholds={'VCPU': 80, 'MEMORY_MB': 90}),
            pod_services.pod_create(name='pod-b', aggregate_uuid=SHARED,
                                    affinity_tags={'resource': 'CAD'})]
    bindings = [pod_services.binding_request(pod_selection.BindingRequest('project-a')).binding,
                pod_services.binding_request(pod_selection.BindingRequest(
                    'project-a', affinity='resource=CAD')).binding]
    return pods, bindings


def measure(api, staff, pool):
    """{request kind: queries}, reads first, then writes, in a fixed order."""
    node = api.get('/resource_providers?name=cn1').body['resource_providers'][0]['uuid']
    consumer = api.get(f'/resource_providers/{node}/allocations').body['allocations']
    consumer = next(iter(consumer))
    (pod, _), (binding, _) = add_pods()
    trends.snapshot_take()
    trends.snapshot_take()
    reads = {
        'GET /': '/',
        'GET /resource_providers': '/resource_providers',
        'GET /resource_providers?filters': PATHS[1],
        'GET /resource_providers?in_tree': f'/resource_providers?in_tree={node}',
        'GET /resource_providers/{uuid}': f'/resource_providers/{node}',
        'GET /resource_providers/{uuid}/inventories': f'/resource_providers/{node}/inventories',
        'GET /resource_providers/{uuid}/inventories/{rc}':
            f'/resource_providers/{node}/inventories/VCPU',
        'GET /resource_providers/{uuid}/usages': f'/resource_providers/{node}/usages',
        'GET /resource_providers/{uuid}/aggregates': f'/resource_providers/{node}/aggregates',
        'GET /resource_providers/{uuid}/traits': f'/resource_providers/{node}/traits',
        'GET /resource_providers/{uuid}/allocations': f'/resource_providers/{node}/allocations',
        'GET /resource_classes': '/resource_classes',
        'GET /resource_classes/{name}': '/resource_classes/VCPU',
        'GET /traits?associated': '/traits?associated=true',
        'GET /traits/{name}': '/traits/HW_CPU_X86_AVX2',
        'GET /usages': '/usages?project_id=project-a',
        'GET /allocations/{consumer}': f'/allocations/{consumer}',
        'GET /pods': '/pods',
        'GET /pods/{uuid}': f'/pods/{pod.uuid}',
        'GET /pod_bindings': '/pod_bindings?project_id=project-a',
        'GET /pod_bindings/{uuid}': f'/pod_bindings/{binding.uuid}',
        'GET /capacity': '/capacity',
        'GET /capacity?resources': '/capacity?resources=VCPU:1,DISK_GB:10',
        'GET /capacity?group_by=aggregate&resources':
            '/capacity?group_by=aggregate&resources=VCPU:1,MEMORY_MB:64,DISK_GB:10',
        'GET /capacity?group_by=root&format=csv': '/capacity?group_by=root&format=csv',
        'GET /capacity?group_by=availability_zone&resources':
            '/capacity?group_by=availability_zone&resources=VCPU:1,DISK_GB:10',
        'GET /capacity/trends': '/capacity/trends',
        'GET /capacity/trends?aggregate': f'/capacity/trends?aggregate={SHARED}',
        'GET /capacity/trends?aggregate&resource_class':
            f'/capacity/trends?aggregate={SHARED}&resource_class=VCPU,DISK_GB',
        'GET /metrics': '/metrics',
        'GET /pool_labels/{uuid}': f'/pool_labels/{SHARED}',
        'GET /capacity?view=stranded': '/capacity?view=stranded',
        'GET /capacity?group_by=aggregate&view=stranded':
            '/capacity?group_by=aggregate&view=stranded',
    }
    for name, query in CANDIDATE_QUERIES.items():
        reads[f'GET /allocation_candidates {name}'] = f'/allocation_candidates?{query}'
        reads[f'GET /explain/allocation_candidates {name}'] = \
            f'/explain/allocation_candidates?{query}'
    counts = {kind: counted(lambda: api.get(path)) for kind, path in reads.items()}
    # Read, though a POST: a drained host (its consumers with it) and a ratio set in a pool.
    counts['POST /capacity/what-if'] = counted(lambda: api.post('/capacity/what-if', {
        'remove_hosts': {'hosts': ['cn1']},
        'set_inventories': [{'resource_class': 'VCPU', 'aggregate': SHARED,
                             'allocation_ratio': 2.0}]}))
    pages = {
        'UI overview': '/ui/',
        'UI providers': '/ui/providers/',
        'UI providers sorted and filtered':
            '/ui/providers/?sort=-utilization&trait=HW_CPU_X86_AVX2&root_only=true',
        'UI provider': f'/ui/providers/{node}/',
        'UI sharing provider': f'/ui/providers/{pool.uuid}/',
        'UI pools': '/ui/pools/',
        'UI pools by zone': '/ui/pools/?sort=-zone',
        'UI pools export': '/ui/pools/?export=csv&sort=members',
        'UI pool': f'/ui/pools/{SHARED}/',
        'UI hosts': '/ui/hosts/',
        'UI hosts emptiest first': '/ui/hosts/?sort=utilization',
        'UI hosts export': '/ui/hosts/?export=csv',
        'UI what-if': f'/ui/what-if/?add_count=20&add_inventories=VCPU:8,MEMORY_MB:8192'
                      f'&add_aggregates={SHARED}&remove_names=cn1',
        'UI usage': '/ui/usage/?project=project-a',
        'UI explorer': '/ui/explorer/?' + CANDIDATE_QUERIES['perfload'],
        'UI explorer, nothing fits': '/ui/explorer/?resources=VCPU:1000',
        'UI explorer as project': '/ui/explorer/?resources=VCPU:1&as_project=project-a',
        'UI explorer as a new project': '/ui/explorer/?resources=VCPU:1&as_project=project-z',
        'UI pods': '/ui/pods/',
        'UI pod': f'/ui/pods/{pod.uuid}/',
        'UI tree': f'/ui/trees/{node}/',
        'UI consumer': f'/ui/consumers/{consumer}/',
        'UI project': '/ui/projects/project-a/',
        'UI providers export': '/ui/providers/?export=csv&sort=-utilization',
        'UI pool export': f'/ui/pools/{SHARED}/?export=json',
        'UI tree export': f'/ui/trees/{node}/?export=csv',
        'UI project export': '/ui/projects/project-a/?export=csv',
        'UI audit': '/ui/audit/',
        'UI capacity': '/ui/capacity/',
        'UI capacity by pool': '/ui/capacity/?group_by=aggregate&flavor=medium',
        'UI capacity by trait': '/ui/capacity/?group_by=trait&resources=VCPU:1,DISK_GB:10',
        'UI capacity by tree':
            '/ui/capacity/?group_by=root&resources=VCPU:1&resource_class=VCPU&days=30',
        'UI capacity by zone': '/ui/capacity/?group_by=availability_zone&flavor=small',
        'UI capacity export': '/ui/capacity/?group_by=root&flavor=small&export=csv',
        'admin pods': '/admin/pods/pod/',
        'admin pod': f'/admin/pods/pod/{pod.pk}/change/',
        'admin pod bindings': '/admin/pods/podbinding/',
        'admin providers': '/admin/providers/resourceprovider/',
        'admin provider': f'/admin/providers/resourceprovider/{pool.pk}/change/',
        'admin aggregate': f'/admin/providers/aggregate/{Aggregate.objects.get(uuid=SHARED).pk}/'
                           'change/',
        'admin consumer': f'/admin/allocations/consumer/{Consumer.objects.get(uuid=consumer).pk}/'
                          'change/',
        'admin inventories': '/admin/providers/inventory/',
        'admin consumers': '/admin/allocations/consumer/',
        'admin allocations': '/admin/allocations/allocation/',
        'admin usage snapshots': '/admin/providers/usagesnapshot/',
    }
    # Once first: what the admin caches per process (content types) must not
    # make the count depend on which tests ran before.
    for path in pages.values():
        staff.get(path)
    counts.update({kind: counted(lambda: staff.get(path)) for kind, path in pages.items()})
    counts['UI audit with a live list'] = counted(
        lambda: staff.post('/ui/audit/', {'servers': consumer}))

    new = api.create_provider('baseline')['uuid']

    def put(what, **body):
        generation = api.get(f'/resource_providers/{new}').body['generation']  # not counted
        return counted(lambda: api.put(f'/resource_providers/{new}/{what}',
                                       {'resource_provider_generation': generation, **body}))

    counts['POST /resource_providers'] = counted(
        lambda: api.post('/resource_providers', {'name': 'another'}))
    counts['PUT /resource_providers/{uuid}/inventories'] = put(
        'inventories', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}})
    counts['PUT /resource_providers/{uuid}/traits'] = put(
        'traits', traits=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'])
    counts['PUT /resource_providers/{uuid}/aggregates'] = put('aggregates', aggregates=[SHARED])
    counts['PUT /allocations/{consumer}'] = counted(lambda: api.allocate(
        str(uuid.uuid4()), {new: {'VCPU': 1, 'MEMORY_MB': 64}, pool.uuid: {'DISK_GB': 10}},
        project='project-a', user='user-a'))
    counts['POST /allocations'] = counted(lambda: api.post('/allocations', {
        str(uuid.uuid4()): {'allocations': {new: {'resources': {'VCPU': 1}}},
                            'project_id': 'project-a', 'user_id': 'user-a',
                            'consumer_generation': None, 'consumer_type': 'INSTANCE'}
        for _ in range(2)}))
    counts['DELETE /allocations/{consumer}'] = counted(
        lambda: api.delete(f'/allocations/{consumer}'))
    counts['POST /pod_bindings, kept'] = counted(lambda: api.post(
        '/pod_bindings', {'project_id': 'project-a', 'resources': {'VCPU': 1}}))
    counts['POST /pod_bindings, new'] = counted(lambda: api.post(
        '/pod_bindings', {'project_id': 'project-b', 'resources': {'VCPU': 1}}))
    counts['POST /pods'] = counted(lambda: api.post('/pods', {
        'name': 'pod-c', 'thresholds': {'VCPU': 80}}))
    counts['PUT /pods/{uuid}'] = counted(lambda: api.put(f'/pods/{pod.uuid}', {
        'state': 'maintenance'}))
    counts['PUT /pool_labels/{uuid}'] = counted(lambda: api.put(f'/pool_labels/{SHARED}', {
        'label': 'Gold'}))
    counts['DELETE /pool_labels/{uuid}'] = counted(lambda: api.delete(f'/pool_labels/{SHARED}'))
    return counts


# The queries MySQL needs beyond the baseline (kept for PostgreSQL and SQLite).
MYSQL_EXTRA = {
    # No SELECT ... FOR UPDATE OF: the open binding is locked alone, then
    # read with its pod.
    'POST /pod_bindings, kept': 1,
}


def test_the_pools_pages_do_not_grow_with_pools(api, cloud):
    """The pools list (sorted, exported) and a pool's page cost the same
    whatever the number of pools, their pods, labels and sharing members."""
    add_pods()
    staff = staff_client()
    paths = ['/ui/pools/', '/ui/pools/?sort=-zone', '/ui/pools/?export=json&sort=name',
             f'/ui/pools/{SHARED}/']
    for path in paths:   # the session and what a process caches, warm
        staff.get(path)
    few = {path: counted(lambda: staff.get(path)) for path in paths}
    for i in range(6):
        aggregate = str(uuid.uuid4())
        nfs = services.provider_create(name=f'nfs-{i}')
        services.traits_replace(provider=nfs, trait_names=['MISC_SHARES_VIA_AGGREGATE'])
        services.aggregates_replace(provider=nfs, aggregate_uuids=[aggregate, SHARED])
        if i % 2:
            pod_services.pod_create(name=f'pod-{i}', aggregate_uuid=aggregate,
                                    availability_zone=f'az{i}')
        if i % 3 == 0:
            services.pool_label_set(aggregate=Aggregate.objects.get(uuid=aggregate),
                                    name=f'label-{i}')
    assert {path: counted(lambda: staff.get(path)) for path in paths} == few


def test_query_counts_match_the_baseline(api, cloud):
    counts = measure(api, staff_client(), cloud)
    if connection.vendor == 'mysql':
        counts = {kind: n - MYSQL_EXTRA.get(kind, 0) for kind, n in counts.items()}
    if os.environ.get('PLACEMENT_RECORD_QUERY_COUNTS'):
        BASELINE.write_text(json.dumps(counts, indent=2) + '\n')
    baseline = json.loads(BASELINE.read_text())
    changed = {kind: (baseline.get(kind), n) for kind, n in counts.items()
               if baseline.get(kind) != n}
    changed.update({kind: (n, None) for kind, n in baseline.items() if kind not in counts})
    assert changed == {}, 'query counts (baseline, now) changed; see this module\'s docstring'


def test_explain_costs_the_search_plus_a_constant(api, cloud):
    """Explain runs the same search and reads its stages: one more query
    (every provider's root, for the funnels), but not the one a search
    makes for the roots of the providers that fit where member_of does not
    narrow it (explain's roots serve it: member_of's are read with the
    request-wide findings); the inventories of the groups' classes when a
    resource step eliminated some (to name the limit that stopped each:
    near misses need them only then); the closest misses' names."""
    for name, query in CANDIDATE_QUERIES.items():
        search = counted(lambda: api.get(f'/allocation_candidates?{query}'))
        explain = counted(lambda: api.get(f'/explain/allocation_candidates?{query}'))
        fits = api.get(f'/allocation_candidates?{query}').body['allocation_requests']
        assert bool(fits) == (name != 'nothing_fits'), name
        body = api.get(f'/explain/allocation_candidates?{query}').body
        scoped = 'member_of=' in query and 'member_of=!' not in query
        roots = 1 if fits and not scoped else 0
        limits = any('causes' in step for group in body['groups'] for step in group['funnel'])
        inventories = 1 if limits else 0
        names = 1 if body['near_misses'] else 0
        assert explain == search - roots + 1 + inventories + names, name
