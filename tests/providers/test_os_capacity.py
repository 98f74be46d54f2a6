"""os-capacity's series on GET /metrics against os-capacity's own arithmetic.

StackHPC's os-capacity exporter (os_capacity/prometheus.py) computes its
series from Placement's answers: GET /allocation_candidates per flavor at
microversion 1.29 with required=!COMPUTE_STATUS_DISABLED, then for every
provider in provider_summaries the least over the flavor's classes it has
of int((capacity - used) / amount); GET /resource_providers/{uuid}/usages
and /inventories per provider; GET /usages?project_id= per project. The
`os_capacity_*` functions below do that arithmetic on our API's answers,
independently of the code that writes /metrics, and the tests compare.

On a nested and sharing cloud both agree where the flavor's classes are on
the compute nodes' roots; where os-capacity's per-provider arithmetic and
our per-tree count differ by design (a flavor drawing on NUMA children or
on a sharing provider, and the allocatable capacity's formula), the tests
pin both numbers as docs/metrics.md explains them.
"""
import uuid

import pytest
from django.test import Client

from providers import capacity
from providers import os_capacity
from providers import scopes
from providers.flavors import parse_flavors
from providers.pods import services as pod_services
from tests.support.api import new_uuid
from tests.support.metrics import of
from tests.support.metrics import parse

AGG_POD = str(uuid.uuid4())    # cn1, cn2: pod-a in az1, project-a bound
AGG_NFS = str(uuid.uuid4())    # cn3 (diskless) and the NFS share: pod-b in az2, project-c bound
AGG_OTHER = str(uuid.uuid4())  # cn2 again: pod-c in az1, project-b bound

AGREE = 'small=VCPU:1,MEMORY_MB:2048;large=VCPU:8,MEMORY_MB:32768'
DISK = 'disk=VCPU:2,MEMORY_MB:4096,DISK_GB:100'
PINNED = 'pinned=PCPU:4,MEMORY_MB:4096'


@pytest.fixture
def cloud(api):
    """Four compute nodes and an NFS share, used by three projects.

    cn1: flat. cn2: nested, VCPU, MEMORY_MB and DISK_GB on the root and a
    NUMA child per socket with PCPU. cn3: diskless, its disk from the NFS
    share (MISC_SHARES_VIA_AGGREGATE) in their aggregate. cn4: flat and
    disabled (COMPUTE_STATUS_DISABLED). No reserved amounts and whole
    total * allocation_ratio: os-capacity's capacity formula agrees with
    Placement's on these."""
    ids = {}

    def provider(name, inventories, parent=None, traits=(), aggregates=()):
        ids[name] = api.create_provider(name, parent=parent and ids[parent])['uuid']
        api.set_inventory(ids[name], inventories)
        if traits:
            api.set_traits(ids[name], list(traits))
        if aggregates:
            api.set_aggregates(ids[name], list(aggregates))

    provider('cn1', {'VCPU': {'total': 16, 'allocation_ratio': 4.0},
                     'MEMORY_MB': {'total': 65536}, 'DISK_GB': {'total': 1000}},
             traits=['COMPUTE_NODE'], aggregates=[AGG_POD])
    provider('cn2', {'VCPU': {'total': 8, 'allocation_ratio': 2.0},
                     'MEMORY_MB': {'total': 32768}, 'DISK_GB': {'total': 400}},
             traits=['COMPUTE_NODE'], aggregates=[AGG_POD, AGG_OTHER])
    provider('cn2-numa0', {'PCPU': {'total': 8}}, parent='cn2', traits=['HW_NUMA_ROOT'])
    provider('cn2-numa1', {'PCPU': {'total': 8}}, parent='cn2', traits=['HW_NUMA_ROOT'])
    provider('cn3', {'VCPU': {'total': 32},
                     'MEMORY_MB': {'total': 131072, 'allocation_ratio': 1.5}},
             traits=['COMPUTE_NODE'], aggregates=[AGG_NFS])
    provider('cn4', {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 32768},
                     'DISK_GB': {'total': 500}},
             traits=['COMPUTE_NODE', 'COMPUTE_STATUS_DISABLED'])
    provider('nfs', {'DISK_GB': {'total': 1000}}, traits=['MISC_SHARES_VIA_AGGREGATE'],
             aggregates=[AGG_NFS])
    for project, allocations in (
            ('project-a', {'cn1': {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 80}}),
            ('project-a', {'cn3': {'VCPU': 8, 'MEMORY_MB': 16384}, 'nfs': {'DISK_GB': 100}}),
            ('project-b', {'cn2': {'VCPU': 2, 'MEMORY_MB': 4096, 'DISK_GB': 40},
                           'cn2-numa0': {'PCPU': 2}}),
            ('project-c', {'cn3': {'VCPU': 4, 'MEMORY_MB': 8192}, 'nfs': {'DISK_GB': 200}}),
            ('project-c', {'cn4': {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}})):
        response = api.allocate(new_uuid(), {ids[name]: amounts
                                             for name, amounts in allocations.items()},
                                project=project, user='user')
        assert response.status_code == 204, response.content
    for name, aggregate, zone, project in (('pod-a', AGG_POD, 'az1', 'project-a'),
                                           ('pod-b', AGG_NFS, 'az2', 'project-c'),
                                           ('pod-c', AGG_OTHER, 'az1', 'project-b')):
        pod = pod_services.pod_create(name=name, aggregate_uuid=aggregate,
                                      availability_zone=zone)
        pod_services.binding_bind(project_id=project, pod=pod)
    return ids


def scrape(settings, flavors):
    settings.PLACEMENT_CAPACITY_FLAVORS = flavors
    response = Client().get('/metrics')
    assert response.status_code == 200
    return parse(b''.join(response.streaming_content).decode())[0]


def flavor_resources(flavors):
    """{flavor name: {class: amount}} of a PLACEMENT_CAPACITY_FLAVORS text:
    what os-capacity's get_placement_request makes of a nova flavor."""
    found = {}
    for part in flavors.split(';'):
        name, _, shape = part.partition('=')
        found[name] = {rc: int(n) for rc, n in (pair.split(':') for pair in shape.split(','))}
    return found


# ---- os-capacity's arithmetic (os_capacity/prometheus.py), on our answers -------------

def os_capacity_max_per_host(api, resources):
    """get_max_per_host: {provider uuid: count} for every provider in the
    candidates' provider_summaries that has one of the flavor's classes."""
    query = ','.join(f'{rc}:{amount}' for rc, amount in resources.items() if amount)
    body = api.get(f'/allocation_candidates?resources={query}'
                   '&required=!COMPUTE_STATUS_DISABLED', version='1.29').body
    counts = {}
    for provider, summary in body['provider_summaries'].items():
        per_class = [int((amounts['capacity'] - amounts['used']) / resources[rc])
                     for rc, amounts in summary['resources'].items() if resources.get(rc)]
        if per_class:
            counts[provider] = min(per_class)
    return counts


def os_capacity_flavor_series(api, flavors):
    """get_host_details: ({flavor: total}, {(hypervisor, flavor): count})
    over every provider of GET /resource_providers, zero counts left out."""
    providers = {p['name']: p['uuid']
                 for p in api.get('/resource_providers').body['resource_providers']}
    totals, per_host = {}, {}
    for flavor, resources in flavor_resources(flavors).items():
        counts = os_capacity_max_per_host(api, resources)
        totals[flavor] = sum(counts.values())
        for name, provider in providers.items():
            if counts.get(provider, 0) != 0:
                per_host[name, flavor] = counts[provider]
    return totals, per_host


def os_capacity_host_usage(api):
    """get_host_usage: ({(hypervisor, class): allocated}, {(hypervisor,
    class): int(total * allocation_ratio) - reserved})."""
    allocated, capacity = {}, {}
    for provider in api.get('/resource_providers').body['resource_providers']:
        path = f"/resource_providers/{provider['uuid']}"
        for rc, used in api.get(f'{path}/usages', version='1.19').body['usages'].items():
            allocated[provider['name'], rc] = used
        inventories = api.get(f'{path}/inventories', version='1.19').body['inventories']
        for rc, inventory in inventories.items():
            ratio = inventory['allocation_ratio']
            capacity[provider['name'], rc] = int(inventory['total'] * ratio) - inventory['reserved']
    return allocated, capacity


def os_capacity_project_usage(api, projects):
    """get_project_usage: {(project id, class): used} from GET /usages."""
    return {(project, rc): used for project in projects
            for rc, used in api.get(f'/usages?project_id={project}',
                                    version='1.19').body['usages'].items()}


# ---- ours, as the scrape writes them ------------------------------------------------

def our_totals(samples):
    found = {}
    for labels, value in of(samples, 'openstack_free_capacity_by_flavor_total').items():
        labels = dict(labels)
        assert labels['public'] == 'True'
        found[labels['flavor_name']] = value
    return found


def our_per_host(samples):
    series = of(samples, 'openstack_free_capacity_hypervisor_by_flavor')
    return {(dict(labels)['hypervisor'], dict(labels)['flavor_name']): value
            for labels, value in series.items()}


def by_hypervisor_and_resource(samples, name):
    return {(dict(labels)['hypervisor'], dict(labels)['resource']): value
            for labels, value in of(samples, name).items()}


# ---- where both agree -------------------------------------------------------------

def test_flavor_counts_agree_where_the_flavors_classes_are_on_the_roots(api, cloud, settings):
    samples = scrape(settings, AGREE)
    totals, per_host = os_capacity_flavor_series(api, AGREE)
    assert our_totals(samples) == totals == {'small': 62, 'large': 3}
    assert our_per_host(samples) == per_host == {
        ('cn1', 'small'): 28, ('cn2', 'small'): 14, ('cn3', 'small'): 20,
        ('cn1', 'large'): 1, ('cn3', 'large'): 2}   # none on cn2; cn4 is disabled


def test_host_usage_and_capacity_agree(api, cloud, settings):
    samples = scrape(settings, AGREE)
    allocated, capacity = os_capacity_host_usage(api)
    assert by_hypervisor_and_resource(samples, 'openstack_hypervisor_placement_allocated') == \
        allocated
    assert by_hypervisor_and_resource(
        samples, 'openstack_hypervisor_placement_allocatable_capacity') == capacity
    assert capacity['cn3', 'MEMORY_MB'] == 196608 and allocated['nfs', 'DISK_GB'] == 300
    assert len(capacity) == 14


def test_project_usage_agrees_and_names_projects_by_id(api, cloud, settings):
    samples = scrape(settings, AGREE)
    ours = {}
    for labels, value in of(samples, 'openstack_project_usage').items():
        labels = dict(labels)
        assert labels['project_name'] == labels['project_id']
        ours[labels['project_id'], labels['placement_resource']] = value
    assert ours == os_capacity_project_usage(api, ['project-a', 'project-b', 'project-c'])
    assert ours['project-a', 'DISK_GB'] == 180 and ours['project-b', 'PCPU'] == 2


def test_zones_and_project_pods_label_the_hypervisors(api, cloud, settings):
    samples = scrape(settings, AGREE)
    labelled = {dict(labels)['hypervisor']: (dict(labels)['az_aggregate'],
                                             dict(labels)['project_aggregate'])
                for labels in of(samples, 'openstack_free_capacity_hypervisor_by_flavor')}
    assert labelled == {'cn1': ('az1', 'pod-a'), 'cn2': ('az1', 'multiple'),
                        'cn3': ('az2', 'pod-b')}
    assert {(dict(labels)['project_id'], dict(labels)['aggregate']): value for labels, value in
            of(samples, 'openstack_project_filter_aggregate').items()} == {
        ('project-a', 'pod-a'): 1, ('project-b', 'pod-c'): 1, ('project-c', 'pod-b'): 1}


# ---- where they differ by design (docs/metrics.md) ------------------------------------

def test_a_flavor_drawing_on_a_sharing_provider(api, cloud, settings):
    """disk=VCPU:2,MEMORY_MB:4096,DISK_GB:100. os-capacity counts cn3 on its
    VCPU and MEMORY_MB alone (its summary has no DISK_GB), lists the NFS
    share as a hypervisor of its own (700 GB free: 7) and adds both up. We
    count cn3 with the share (7 fit it: the share is the limit) and the
    cloud with each of the share's slots once."""
    samples = scrape(settings, DISK)
    totals, per_host = os_capacity_flavor_series(api, DISK)
    assert per_host == {('cn1', 'disk'): 9, ('cn2', 'disk'): 3, ('cn3', 'disk'): 10,
                        ('nfs', 'disk'): 7}
    assert totals == {'disk': 29}
    assert our_per_host(samples) == {('cn1', 'disk'): 9, ('cn2', 'disk'): 3, ('cn3', 'disk'): 7}
    assert our_totals(samples) == {'disk': 19}


def test_a_flavor_drawing_on_numa_children(api, cloud, settings):
    """pinned=PCPU:4,MEMORY_MB:4096 on cn2, whose PCPU is on its NUMA
    children. os-capacity counts each provider on its own classes: cn2 on
    MEMORY_MB alone (7), each NUMA child on PCPU (1 and 2), 10 in all. We
    count the tree: the PCPU of both children together (3) bounds it."""
    samples = scrape(settings, PINNED)
    totals, per_host = os_capacity_flavor_series(api, PINNED)
    assert per_host == {('cn2', 'pinned'): 7, ('cn2-numa0', 'pinned'): 1,
                        ('cn2-numa1', 'pinned'): 2}
    assert totals == {'pinned': 10}
    assert our_per_host(samples) == {('cn2', 'pinned'): 3}
    assert our_totals(samples) == {'pinned': 3}


def test_allocatable_capacity_with_reserved_and_a_ratio(api, cloud, settings):
    """os-capacity's int(total * allocation_ratio) - reserved against
    Placement's (total - reserved) * allocation_ratio, which bounds what
    can be allocated: 64 VCPU, 4 reserved, ratio 4.0 gives 252 and 240;
    131072 MB, 512 reserved, ratio 1.5 gives 196096 and 195840."""
    odd = api.create_provider('cn5')['uuid']
    api.set_inventory(odd, {
        'VCPU': {'total': 64, 'reserved': 4, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 131072, 'reserved': 512, 'allocation_ratio': 1.5}})
    samples = scrape(settings, AGREE)
    _, theirs = os_capacity_host_usage(api)
    ours = by_hypervisor_and_resource(
        samples, 'openstack_hypervisor_placement_allocatable_capacity')
    assert (theirs['cn5', 'VCPU'], ours['cn5', 'VCPU']) == (252, 240)
    assert (theirs['cn5', 'MEMORY_MB'], ours['cn5', 'MEMORY_MB']) == (196096, 195840)
    assert {key: value for key, value in ours.items() if key[0] != 'cn5'} == \
        {key: value for key, value in theirs.items() if key[0] != 'cn5'}
    # The flavor counts use Placement's capacity on both sides.
    totals, per_host = os_capacity_flavor_series(api, AGREE)
    assert our_totals(samples) == totals and our_per_host(samples) == per_host
    assert per_host['cn5', 'small'] == 95   # min(240 VCPU, 195840 MB / 2048 = 95.6)


def test_a_flavor_of_an_unknown_class_fits_nowhere(api, cloud, settings):
    samples = scrape(settings, 'gpu=VCPU:1,CUSTOM_GPU:1;' + AGREE)
    assert our_totals(samples) == {'gpu': 0, 'small': 62, 'large': 3}
    assert {flavor for _, flavor in our_per_host(samples)} == {'small', 'large'}


def test_the_total_is_the_dashboards_count_of_the_cloud(cloud):
    """The total comes with the per-tree counts (one read of the trees), and
    is what providers.capacity.fit_counts answers for the cloud."""
    _, shapes = capacity.flavor_shapes(parse_flavors(';'.join((AGREE, DISK, PINNED))))
    for excluded in ((), (os_capacity.disabled_roots(),)):
        assert capacity.tree_fit_counts(scopes.trees().excluding_trees(*excluded), shapes).total \
            == capacity.fit_counts(scopes.cloud().excluding_trees(*excluded), shapes)[scopes.CLOUD]


def test_the_series_can_be_turned_off(api, cloud, settings, django_assert_max_num_queries):
    """PLACEMENT_METRICS_OS_CAPACITY=false: none of os-capacity's families,
    and a scrape reads only the openstack-exporter, pool and stranded
    series' rows (inside the test's transaction, as the ledger's image: nine
    queries, and the stranded series' four: the flavors' classes, the slots
    per tree, the sharing providers and the trees they serve)."""
    settings.PLACEMENT_METRICS_OS_CAPACITY = False
    with django_assert_max_num_queries(13):
        samples = scrape(settings, AGREE)
    assert not {name for name, _ in samples} & {
        'openstack_free_capacity_by_flavor_total', 'openstack_free_capacity_hypervisor_by_flavor',
        'openstack_project_usage', 'openstack_hypervisor_placement_allocated',
        'openstack_hypervisor_placement_allocatable_capacity',
        'openstack_project_filter_aggregate'}
    assert {name for name, _ in samples} >= {'openstack_placement_resource_total',
                                            'placement_cloud_free'}
    settings.PLACEMENT_METRICS_OS_CAPACITY = True
    assert our_totals(scrape(settings, AGREE)) == {'small': 62, 'large': 3}
