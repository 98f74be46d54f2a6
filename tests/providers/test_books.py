"""A pool's books are one definition (providers.books), and every surface
that shows them agrees with it and with a count made by hand from the
inventory rows: GET /capacity?group_by=aggregate, the pods' books in GET
/pods, the dashboards' pool pages, /metrics' placement_pool_* series; and a
tree's, GET /capacity?group_by=root and the host page's. On a cloud with a
nested tree whose root is a member, a NUMA node that is a member without its
root, and a sharing provider."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from allocations.ui import reports
from providers import books
from providers import rules
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.pods import services as pod_services
from tests.support.factories import add_allocation
from tests.support.factories import add_provider
from tests.support.metrics import scrape
from tests.support.metrics import value

ROW = 'a0000000-0000-4000-8000-0000000000a1'
STORAGE = 'b0000000-0000-4000-8000-0000000000b2'


@pytest.fixture
def cloud(db):
    cn1 = add_provider('cn1', inventories={'VCPU': {'total': 8, 'allocation_ratio': 4.0},
                                           'DISK_GB': {'total': 200, 'reserved': 20}},
                       aggregates=[ROW])
    cn2 = add_provider('cn2', inventories={'MEMORY_MB': {'total': 4096, 'reserved': 512,
                                                         'allocation_ratio': 1.5}},
                       aggregates=[ROW])
    numa = add_provider('cn2-numa0', parent=cn2, inventories={'VCPU': {'total': 6}})
    cn3 = add_provider('cn3', inventories={'MEMORY_MB': {'total': 2048}})
    lone = add_provider('cn3-numa0', parent=cn3, inventories={'VCPU': {'total': 4}},
                        aggregates=[STORAGE])
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 1000, 'reserved': 50}},
                       traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[STORAGE, ROW])
    add_allocation(cn1, VCPU=5, DISK_GB=30)
    add_allocation(numa, VCPU=2)
    add_allocation(lone, VCPU=1)
    add_allocation(nfs, DISK_GB=100)
    add_allocation(cn2, MEMORY_MB=1024)
    for name, aggregate in (('row', ROW), ('storage', STORAGE)):
        pod_services.pod_create(name=name, aggregate_uuid=aggregate)
    return {p.name: p for p in (cn1, cn2, numa, cn3, lone, nfs)}


def by_hand(providers):
    """{class: (capacity, used)} summed from the inventory rows."""
    found = {}
    for inventory in Inventory.objects.filter(resource_provider__in=providers).select_related(
            'resource_class'):
        capacity, used = found.get(inventory.resource_class.name, (0.0, 0))
        found[inventory.resource_class.name] = (
            capacity + rules.capacity(inventory.total, inventory.reserved,
                                      inventory.allocation_ratio), used + inventory.used)
    return found


def pool_by_hand(aggregate_uuid):
    """A pool as member_of reads it: its members and every provider of a
    member root's tree."""
    members = ResourceProvider.objects.filter(aggregates__uuid=aggregate_uuid)
    roots = [p.pk for p in members if p.root_provider_id == p.pk]
    return by_hand(ResourceProvider.objects.filter(pk__in=[p.pk for p in members])
                   | ResourceProvider.objects.filter(root_provider_id__in=roots))


def pairs(classes):
    return {name: (usage.capacity, usage.used) for name, usage in classes.items()}


def test_a_pools_books_agree_everywhere(api, cloud):
    expected = {uuid: pool_by_hand(uuid) for uuid in (ROW, STORAGE)}
    # The hand count itself: cn1, cn2's tree and the share in ROW; the lone
    # NUMA node (not its root's memory) and the share in STORAGE.
    assert expected[ROW] == {'VCPU': (38.0, 7), 'DISK_GB': (1130.0, 130),
                             'MEMORY_MB': (5376.0, 1024)}
    assert expected[STORAGE] == {'VCPU': (4.0, 1), 'DISK_GB': (950.0, 100)}
    aggregates = {a.uuid: a for a in Aggregate.objects.all()}

    one_definition = books.pool_books([a.pk for a in aggregates.values()])
    assert {uuid: pairs(one_definition[a.pk]) for uuid, a in aggregates.items()} == expected

    capacity = api.get('/capacity?group_by=aggregate').body['groups']
    assert {g['group']: {name: (b['capacity'], b['used']) for name, b in g['resources'].items()}
            for g in capacity} == expected

    pods = api.get('/pods').body['pods']
    assert {p['aggregate']: {name: (b['capacity'], b['used'])
                             for name, b in p['resources'].items()} for p in pods} == expected

    pages = reports.pools(aggregates.values())
    assert {uuid: {u.name: (u.capacity, u.used) for u in pages[a.pk]['classes']}
            for uuid, a in aggregates.items()} == expected

    samples = scrape()
    assert {uuid: {name: (value(samples, 'placement_pool_capacity', aggregate=uuid,
                                resourcetype=name),
                          value(samples, 'placement_pool_used', aggregate=uuid,
                                resourcetype=name)) for name in classes}
            for uuid, classes in expected.items()} == expected


def test_a_trees_books_agree_everywhere(api, cloud):
    root = cloud['cn2']
    expected = by_hand(ResourceProvider.objects.filter(root_provider=root))
    assert expected == {'VCPU': (6.0, 2), 'MEMORY_MB': (5376.0, 1024)}
    assert pairs(books.tree_books(root.pk)) == expected
    groups = {g['group']: g for g in api.get('/capacity?group_by=root').body['groups']}
    assert {name: (b['capacity'], b['used'])
            for name, b in groups[root.uuid]['resources'].items()} == expected
    staff = Client()
    staff.force_login(User.objects.create_user('operator', is_staff=True))
    page = staff.get(f'/ui/trees/{root.uuid}/')
    assert page.status_code == 200
    assert {name: (usage.capacity, usage.used)
            for name, usage in page.context['classes'].items()} == expected
