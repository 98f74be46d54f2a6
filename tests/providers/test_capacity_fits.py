"""GET /capacity's "how many more fit" against a brute force: on small
clouds (flat, nested NUMA trees, a sharing DISK_GB pool with diskless and
disk-having nodes, two classes from sharing providers, ratios, step sizes,
min/max units, existing allocations) the true maximum number of successive
claims is found by asking the real GET /allocation_candidates, claiming
each distinct candidate with PUT /allocations, recursing and deleting the
claim again; `fits` must equal it, for the cloud and per aggregate
(member_of=). The slot rule the database applies is checked on its own
below; the counting on its own, in tests/providers/test_fits.py."""

import pytest

from providers import services
from providers.models import Inventory
from providers.pods import services as pod_services
from providers.rules import EXACT_SLOTS
from providers.rules import slots_sql
from tests.support.api import most_claims
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def fits_of(api, resources, group_by='cloud'):
    answer = api.get(f'/capacity?group_by={group_by}&resources={resources}')
    assert answer.status_code == 200, answer.content
    return {g['group']: (g['fits'], g['fits_exact']) for g in answer.body['groups']}


def assert_fits_as_claimed(api, resources, aggregates=(), zones=()):
    """fits equals the brute force's maximum for the cloud, each aggregate
    and each zone given; returns the cloud's."""
    in_cloud = most_claims(api, f'resources={resources}')
    assert fits_of(api, resources)['cloud'] == (in_cloud, True)
    for aggregate in aggregates:
        expected = most_claims(api, f'resources={resources}&member_of={aggregate}')
        assert fits_of(api, resources, 'aggregate')[aggregate] == (expected, True), aggregate
    for zone, members in zones:
        expected = most_claims(api, f'resources={resources}&member_of=in:{",".join(members)}')
        assert fits_of(api, resources, 'availability_zone')[zone] == (expected, True), zone
    return in_cloud


# ---- the clouds ------------------------------------------------------------------------

def test_flat_providers_with_ratios_and_allocations(api):
    cn1 = add_provider('cn1', inventories={'VCPU': {'total': 4, 'allocation_ratio': 2.0},
                                           'MEMORY_MB': {'total': 4096}})
    add_provider('cn2', inventories={'VCPU': {'total': 2, 'allocation_ratio': 1.5},
                                     'MEMORY_MB': {'total': 2048, 'reserved': 512}})
    add_provider('cn3', inventories={'VCPU': {'total': 8}})   # no memory: never a candidate
    add_allocation(cn1, VCPU=3)
    # cn1: VCPU (8 - 3) // 2 = 2, memory 4; cn2: VCPU 3 // 2 = 1, memory 1.
    assert fits_of(api, 'VCPU:2,MEMORY_MB:1024')['cloud'] == (3, True)
    assert assert_fits_as_claimed(api, 'VCPU:2,MEMORY_MB:1024') == 3


def test_nested_numa_trees(api):
    cn1 = add_provider('cn1', inventories={'DISK_GB': {'total': 100}})
    numa0 = add_provider('cn1-numa0', parent=cn1,
                         inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 2048}})
    add_provider('cn1-numa1', parent=cn1, inventories={
        'VCPU': {'total': 4, 'allocation_ratio': 2.0}, 'MEMORY_MB': {'total': 1024}})
    cn2 = add_provider('cn2', inventories={'DISK_GB': {'total': 30}})
    add_provider('cn2-numa0', parent=cn2,
                 inventories={'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 4096}})
    add_allocation(numa0, VCPU=2, MEMORY_MB=512)
    # A claim may take VCPU from one NUMA node and memory from the other.
    # cn1: VCPU 1 + 4, memory 1 + 1, disk 5 -> 2; cn2: VCPU 1 -> 1.
    assert assert_fits_as_claimed(api, 'VCPU:2,MEMORY_MB:1024,DISK_GB:20') == 3


def test_a_sharing_disk_pool_serves_its_aggregate_once(api):
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 110}}, traits=[SHARES],
                       aggregates=[AGG_A])
    add_provider('cn1', inventories={'VCPU': {'total': 4}}, aggregates=[AGG_A])  # diskless
    add_provider('cn2', inventories={'VCPU': {'total': 2}, 'DISK_GB': {'total': 60}},
                 aggregates=[AGG_A])
    add_provider('cn3', inventories={'VCPU': {'total': 4}, 'DISK_GB': {'total': 40}})
    add_allocation(nfs, DISK_GB=20)
    # nfs: (110 - 20) // 30 = 3 slots for cn1 and cn2 together (not 3 each);
    # cn2 also has 2 of its own; cn3 1 outside the aggregate.
    assert fits_of(api, 'VCPU:1,DISK_GB:30') == {'cloud': (6, True)}
    assert fits_of(api, 'VCPU:1,DISK_GB:30', 'aggregate') == {AGG_A: (5, True)}
    assert assert_fits_as_claimed(api, 'VCPU:1,DISK_GB:30', aggregates=[AGG_A]) == 6


def test_step_size_min_and_max_units_exclude_providers(api):
    add_provider('stepped', inventories={'VCPU': {'total': 8, 'step_size': 2}})
    add_provider('capped', inventories={'VCPU': {'total': 8, 'max_unit': 2}})
    add_provider('floored', inventories={'VCPU': {'total': 8, 'min_unit': 4}})
    add_provider('reserved', inventories={'VCPU': {'total': 10, 'reserved': 1}})
    add_provider('exact', inventories={'VCPU': {'total': 7, 'step_size': 3, 'min_unit': 3,
                                                'max_unit': 3}})
    assert assert_fits_as_claimed(api, 'VCPU:3') == 5
    # VCPU:4 suits stepped, floored and reserved only: 2 + 2 + 2.
    assert assert_fits_as_claimed(api, 'VCPU:4') == 6


@pytest.mark.parametrize('cn2_first', [False, True])
def test_two_classes_from_sharing_providers_of_overlapping_aggregates(api, cn2_first):
    """DISK_GB from an NFS share in AGG_A, IPV4_ADDRESS from an IP pool in
    AGG_B: cn1 (A) has its own address, cn2 (A and B) neither disk nor
    address, cn3 (B) its own disk. The best is cn1 once, cn2 once, cn3
    twice; taking cn2 twice from the share leaves the pool one address
    short. The pods of AGG_A and AGG_B make one zone."""
    made = {}
    for name in (('cn2', 'cn1') if cn2_first else ('cn1', 'cn2')):
        made[name] = add_provider(name, inventories={
            'VCPU': {'total': 4}, **({'IPV4_ADDRESS': {'total': 1}} if name == 'cn1' else {})},
            aggregates=[AGG_A] + ([AGG_B] if name == 'cn2' else []))
    add_provider('cn3', inventories={'VCPU': {'total': 4}, 'DISK_GB': {'total': 100}},
                 aggregates=[AGG_B])
    add_provider('nfs', inventories={'DISK_GB': {'total': 100}}, traits=[SHARES],
                 aggregates=[AGG_A])
    add_provider('ips', inventories={'IPV4_ADDRESS': {'total': 3}}, traits=[SHARES],
                 aggregates=[AGG_B])
    pod_services.pod_create(name='pa', aggregate_uuid=AGG_A, availability_zone='az1')
    pod_services.pod_create(name='pb', aggregate_uuid=AGG_B, availability_zone='az1')
    shape = 'VCPU:1,DISK_GB:50,IPV4_ADDRESS:1'
    assert assert_fits_as_claimed(api, shape, aggregates=[AGG_A, AGG_B],
                                  zones=[('az1', [AGG_A, AGG_B])]) == 4
    assert fits_of(api, shape, 'aggregate') == {AGG_A: (1, True), AGG_B: (2, True)}


# ---- the slot rule, in the database -------------------------------------------------------

@pytest.mark.parametrize('total, reserved, ratio, used, amount, slots', [
    (10, 0, 1.0, 0, 3, 3),
    (10, 1, 1.0, 0, 3, 3),
    (10, 1, 1.0, 1, 3, 2),
    (3, 0, 0.1, 0, 1, 0),           # 0.30000000000000004: no whole unit
    (100, 0, 1.1, 0, 10, 11),       # 110.00000000000001
    (7, 0, 0.3, 0, 1, 2),           # 2.1
    (10, 0, 1.0, 12, 1, 0),         # over capacity
    (100, 0, 0.7, 0, 7, 10),        # 70.0 (0.7 * 100 = 70.00000000000001)
    (2 ** 31 - 1, 0, 3.0e7, 0, 1, int((2 ** 31 - 1) * 3.0e7)),   # past EXACT_SLOTS
])
def test_slots_are_what_successive_capacity_checks_allow(db, total, reserved, ratio, used,
                                                         amount, slots):
    rp = add_provider('rp', inventories={'VCPU': {'total': max(total, used)}})
    if used:
        add_allocation(rp, VCPU=used)
        rp.refresh_from_db()
    services.inventories_replace(provider=rp, inventories={'VCPU': {
        'total': total, 'reserved': reserved, 'allocation_ratio': ratio}})
    found = Inventory.objects.annotate(slots=slots_sql(amount)).get().slots
    assert found == slots
    capacity_ = (total - reserved) * ratio
    if slots < EXACT_SLOTS:
        assert used + slots * amount <= capacity_ or slots == 0
        assert used + (slots + 1) * amount > capacity_


@pytest.mark.parametrize('fields, amount', [
    ({'min_unit': 4}, 3), ({'max_unit': 2}, 3), ({'step_size': 2}, 3)])
def test_no_slots_outside_min_max_and_step(db, fields, amount):
    add_provider('rp', inventories={'VCPU': {'total': 64, **fields}})
    assert Inventory.objects.annotate(slots=slots_sql(amount)).get().slots == 0
