"""Stranded capacity (providers.stranded) against a plain recount: on
random small clouds (flat and nested NUMA trees, a sharing DISK_GB
provider, pools and a zone, ratios, step sizes, max units, existing
allocations) every group's free and stranded per class must equal what
successive claims of each flavor, counted with the capacity formula
written out here, leave; from the database and from the ledger's image,
for the cloud, each aggregate, the zone and each trait. Then GET /capacity?view=stranded's
JSON, CSV and 400s."""
import contextlib
import csv
import io
import math
import random

import pytest

from placement_site.exceptions import PlacementDomainError
from providers import capacity
from providers import ledger
from providers import stranded
from providers.flavors import Flavor
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.pods import services as pod_services
from tests.support.factories import add_allocation
from tests.support.factories import add_provider

AGG_A = 'a0000000-0000-4000-8000-00000000000a'
AGG_B = 'b0000000-0000-4000-8000-00000000000b'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
FLAVORS = [Flavor('small', {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}),
           Flavor('big', {'VCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 40}),
           Flavor('ram', {'MEMORY_MB': 1024})]
FLAVORS_SETTING = 'small=VCPU:1,MEMORY_MB:512,DISK_GB:10;big=VCPU:4,MEMORY_MB:2048,DISK_GB:40;' \
                  'ram=MEMORY_MB:1024'


# ---- a random cloud ------------------------------------------------------------------------

def _inventory(rng, total):
    found = {'total': total, 'reserved': rng.choice([0, 0, 1]),
             'allocation_ratio': rng.choice([1.0, 1.0, 1.5, 2.0])}
    if rng.random() < 0.2:
        found['step_size'] = 2
    if rng.random() < 0.2:
        found['max_unit'] = max(1, total // 4)
    return found


def _traits(rng):
    return [trait for trait in ('COMPUTE_NODE', 'HW_CPU_X86_AVX2') if rng.random() < 0.5]


def build_cloud(rng):
    """Hosts, flat or with two NUMA children, some diskless, in pool A or
    B (through the root or a child); a sharing DISK_GB provider in A; the
    pools' pods one zone; random claims. Returns the providers."""
    providers = []
    for index in range(rng.randint(3, 6)):
        aggregate = [rng.choice([AGG_A, AGG_B])] if rng.random() < 0.8 else []
        disk = {'DISK_GB': _inventory(rng, rng.choice([50, 100, 200]))} \
            if rng.random() < 0.6 else {}
        if rng.random() < 0.5:
            root = add_provider(f'cn{index}', inventories={
                'VCPU': _inventory(rng, rng.choice([4, 8, 16])),
                'MEMORY_MB': _inventory(rng, rng.choice([2048, 4096, 8192])), **disk},
                aggregates=aggregate, traits=_traits(rng))
            providers.append(root)
        else:
            child_aggregate = aggregate if rng.random() < 0.5 else []
            root = add_provider(f'cn{index}', inventories=disk,
                                aggregates=[] if child_aggregate else aggregate,
                                traits=_traits(rng))
            providers.append(root)
            for numa in range(2):
                providers.append(add_provider(f'cn{index}-numa{numa}', parent=root, inventories={
                    'VCPU': _inventory(rng, rng.choice([2, 4, 8])),
                    'MEMORY_MB': _inventory(rng, rng.choice([1024, 2048, 4096]))},
                    aggregates=child_aggregate, traits=['HW_NUMA_ROOT', *_traits(rng)]))
    providers.append(add_provider('nfs', inventories={'DISK_GB': _inventory(rng, 500)},
                                  traits=[SHARES, *_traits(rng)], aggregates=[AGG_A]))
    pod_services.pod_create(name='pa', aggregate_uuid=AGG_A, availability_zone='az1')
    pod_services.pod_create(name='pb', aggregate_uuid=AGG_B, availability_zone='az1')
    for _ in range(rng.randint(0, 12)):
        provider = rng.choice(providers)
        held = dict(Inventory.objects.filter(resource_provider=provider).values_list(
            'resource_class__name', 'step_size'))
        if held:
            name = rng.choice(sorted(held))
            amount = held[name] * rng.choice([1, 2, 3, 50, 300])
            with contextlib.suppress(PlacementDomainError):   # over capacity: not claimed
                add_allocation(provider, **{name: amount})
    return providers


# ---- the recount -----------------------------------------------------------------------------

class Inv:
    def __init__(self, row):
        (self.provider, self.cls, self.total, self.reserved, self.ratio, self.min_unit,
         self.max_unit, self.step, self.used) = row

    def capacity(self):
        return (self.total - self.reserved) * self.ratio

    def takes_one_more(self, amount):
        return (self.min_unit <= amount <= self.max_unit and amount % self.step == 0
                and self.used + amount <= self.capacity())


def claims(inventories, classes, limit=math.inf):
    """How many claims of `classes` ({class: amount}) fit one after
    another, each class taken from the first inventory that takes it;
    on copies of the inventories."""
    held = [Inv((i.provider, i.cls, i.total, i.reserved, i.ratio, i.min_unit, i.max_unit,
                 i.step, i.used)) for i in inventories]
    count = 0
    while count < limit:
        picked = []
        for cls, amount in classes.items():
            found = next((i for i in held if i.cls == cls and i.takes_one_more(amount)), None)
            if found is None:
                return count
            picked.append((found, amount))
        for inventory, amount in picked:
            inventory.used += amount
        count += 1
    return count


def recount(members_of_group, sharing_in_group):
    """{class: (free, stranded)} of a group: its providers (ids) and the
    sharing providers sharing within it."""
    inventories = [Inv(row) for row in Inventory.objects.filter(
        resource_provider_id__in=members_of_group).values_list(
        'resource_provider_id', 'resource_class__name', 'total', 'reserved',
        'allocation_ratio', 'min_unit', 'max_unit', 'step_size', 'used')]
    root_of = dict(ResourceProvider.objects.values_list('id', 'root_provider_id'))
    aggregates = {}
    for provider, aggregate in ProviderAggregate.objects.values_list(
            'resource_provider_id', 'aggregate_id'):
        aggregates.setdefault(provider, set()).add(aggregate)

    def serves(share, root):
        own = aggregates.get(share, set())
        return root == root_of[share] or any(
            aggregates.get(p, set()) & own for p, r in root_of.items() if r == root)
    asked = {cls for f in FLAVORS for cls in f.resources}
    trees = {}
    for inventory in inventories:
        if inventory.provider not in sharing_in_group and inventory.cls in asked:
            trees.setdefault(root_of[inventory.provider], []).append(inventory)
    sums = {}

    def add(cls, free, lost):
        held = sums.setdefault(cls, [0, 0])
        held[0] += free
        held[1] += lost

    def free_of(held, cls):
        return max(sum(i.capacity() for i in held if i.cls == cls)
                   - sum(i.used for i in held if i.cls == cls), 0)
    pooled_of = {root: [i for i in inventories if i.provider in sharing_in_group
                        and serves(i.provider, root)] for root in trees}
    for root, own in trees.items():
        counts = {f.name: claims(own + pooled_of[root], f.resources) for f in FLAVORS}
        for cls in {i.cls for i in own}:
            most = max(counts[f.name] * f.resources[cls] for f in FLAVORS if cls in f.resources)
            add(cls, free_of(own, cls), max(free_of(own, cls) - most, 0))
    for share in sharing_in_group:
        mine = [i for i in inventories if i.provider == share and i.cls in asked]
        for cls in {i.cls for i in mine}:
            most = 0
            for f in FLAVORS:
                if cls not in f.resources:
                    continue
                others = {c: a for c, a in f.resources.items() if c != cls}
                without = math.inf if not others else sum(
                    claims(own + pooled_of[root], others)
                    for root, own in trees.items() if serves(share, root))
                most = max(most, claims(mine, {cls: f.resources[cls]}, without) * f.resources[cls])
            add(cls, free_of(mine, cls), max(free_of(mine, cls) - most, 0))
    return {cls: tuple(held) for cls, held in sums.items()}


def groups_expected():
    """{(group_by, group key): recount} for the cloud, each pool and the zone."""
    sharing = set(ProviderTrait.objects.filter(trait__name=SHARES).values_list(
        'resource_provider_id', flat=True))
    providers = dict(ResourceProvider.objects.values_list('id', 'root_provider_id'))
    expected = {('cloud', 'cloud'): recount(set(providers), sharing)}
    members = {}
    for aggregate in (AGG_A, AGG_B):
        own = set(ProviderAggregate.objects.filter(aggregate__uuid=aggregate).values_list(
            'resource_provider_id', flat=True))
        members[aggregate] = {p for p, root in providers.items() if p in own or root in own}
        expected['aggregate', aggregate] = recount(members[aggregate], sharing & own)
    zone = members[AGG_A] | members[AGG_B]
    own = set(ProviderAggregate.objects.filter(aggregate__uuid__in=[AGG_A, AGG_B]).values_list(
        'resource_provider_id', flat=True))
    expected['availability_zone', 'az1'] = recount(zone, sharing & own)
    for trait in ('COMPUTE_NODE', 'HW_CPU_X86_AVX2', 'HW_NUMA_ROOT', SHARES):
        having = set(ProviderTrait.objects.filter(trait__name=trait).values_list(
            'resource_provider_id', flat=True))
        expected['trait', trait] = recount(having, sharing & having)
    return {key: found for key, found in expected.items() if found}


def answered(group_by):
    return {(group_by, found.group.key): {name: (c.free, c.stranded)
                                          for name, c in found.classes.items()}
            for found in stranded.stranded(group_by, flavors=FLAVORS) if found.classes}


def approx(found):
    return {key: {cls: pytest.approx(values) for cls, values in classes.items()}
            for key, classes in found.items()}


def everything():
    found = {}
    for group_by in ('cloud', 'aggregate', 'availability_zone', 'trait'):
        found.update(answered(group_by))
    return found


@contextlib.contextmanager
def from_the_ledger(monkeypatch):
    """Reads from the ledger's image inside the test's transaction (where
    the pages would sum the rows), as outside one."""
    with monkeypatch.context() as patched:
        patched.setattr(ledger, 'serves', lambda using: True)
        yield


@pytest.mark.parametrize('seed', range(12))
def test_stranded_equals_a_recount(db, monkeypatch, seed):
    build_cloud(random.Random(seed))
    expected = groups_expected()
    assert not ledger.serves('default')
    assert everything() == approx(expected)          # summed from the database
    with from_the_ledger(monkeypatch):
        assert everything() == approx(expected)      # folded over the ledger's image
        assert ledger.ledger('default').builds == 4  # the cloud's, pools', zones', traits'


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_fold_follows_claims(monkeypatch):
    """The ledger's fold moved along by committed claims (every host's,
    then the share's, which changes what the trees it serves are counted
    with: kept where no count moves, counted again otherwise) answers what
    the recount does."""
    kept = []
    still_counts = stranded.Served.still_counts
    monkeypatch.setattr(stranded.Served, 'still_counts', lambda served, pooled, shapes: (
        kept.append(still_counts(served, pooled, shapes)) or kept[-1]))
    providers = build_cloud(random.Random(99))
    assert ledger.serves('default')   # outside a transaction, as the pages read
    everything()
    claims_made = 0
    for provider in providers:
        name = 'DISK_GB' if provider.name == 'nfs' else 'MEMORY_MB'
        if not Inventory.objects.filter(resource_provider=provider,
                                        resource_class__name=name).exists():
            continue
        with contextlib.suppress(PlacementDomainError):
            add_allocation(provider, **{name: 100 if name == 'DISK_GB' else 512})
            claims_made += 1
        assert everything() == approx(groups_expected()), provider.name
    assert claims_made >= 3
    nfs = next(p for p in providers if p.name == 'nfs')
    for _ in range(20):   # the share filled: its slots fall below the trees' own
        try:
            add_allocation(nfs, DISK_GB=50)
        except PlacementDomainError:
            break
        assert everything() == approx(groups_expected())
    assert set(kept) == {True, False}
    assert ledger.ledger('default').builds == 4   # moved along, not built again


def test_a_stranded_example(db):
    """A host whose memory is full strands its VCPU; a diskless host reached
    by the share is not stranded by disk; the share is stranded beyond what
    the trees it serves could still take."""
    full = add_provider('full', inventories={'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                                             'DISK_GB': {'total': 100}})
    add_allocation(full, MEMORY_MB=4096 - 256)
    add_provider('diskless', inventories={'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 1024}},
                 aggregates=[AGG_A])
    add_provider('nfs', inventories={'DISK_GB': {'total': 1000}}, traits=[SHARES],
                 aggregates=[AGG_A])
    found = {name: (c.free, c.stranded, c.usable) for name, c in
             stranded.stranded('cloud', flavors=FLAVORS)[0].classes.items()}
    # full: no flavor fits (256 MB left): 8 VCPU, 256 MB, 100 GB stranded.
    # diskless: 2 small, no big (2048 MB), 1 ram: 2 VCPU of 4, 0 MB of 1024 stranded.
    # nfs: at most 2 small (20 GB) from the diskless host: 980 GB stranded.
    assert found == {'DISK_GB': (1100, 1080, 20), 'MEMORY_MB': (1280, 256, 1024),
                     'VCPU': (12, 10, 2)}
    assert stranded.stranded('cloud', flavors=FLAVORS, class_ids=set())[0].classes == {}


# ---- GET /capacity?view=stranded ----------------------------------------------------------

@pytest.fixture
def flavors(settings):
    settings.PLACEMENT_CAPACITY_FLAVORS = FLAVORS_SETTING


def test_the_api_answers_stranded(api, flavors):
    build_cloud(random.Random(3))
    expected = groups_expected()
    for group_by in ('cloud', 'aggregate', 'availability_zone'):
        answer = api.get(f'/capacity?view=stranded&group_by={group_by}')
        assert answer.status_code == 200, answer.content
        body = answer.body
        assert body['group_by'] == group_by and body['view'] == 'stranded'
        assert body['flavors'] == {f.name: f.resources for f in FLAVORS}
        for group in body['groups']:
            for numbers in group['resources'].values():
                assert set(numbers) == {'free', 'stranded', 'usable'}
                assert numbers['usable'] == pytest.approx(numbers['free'] - numbers['stranded'])
            found = {name: (n['free'], n['stranded']) for name, n in group['resources'].items()}
            assert found == approx(expected).get((group_by, group['group']), {})
    answer = api.get('/capacity?view=stranded&resource_class=VCPU&format=csv')
    assert answer.status_code == 200
    rows = list(csv.reader(io.StringIO(answer.bytes.decode())))
    assert rows[0] == ['group_by', 'group', 'name', 'resource_class', 'free', 'stranded',
                       'usable']
    free, lost = expected['cloud', 'cloud']['VCPU']
    assert [row[:4] for row in rows[1:]] == [['cloud', 'cloud', '', 'VCPU']]
    assert [float(v) for v in rows[1][4:]] == pytest.approx([free, lost, free - lost])


@pytest.mark.parametrize('query, message', [
    ('view=nope', "'nope' is not one of"),
    ('view=stranded&resources=VCPU:1', 'resources'),
    ('view=stranded&resource_class=CUSTOM_NOPE', 'CUSTOM_NOPE'),
])
def test_bad_views_are_400s(api, flavors, query, message):
    answer = api.get(f'/capacity?{query}')
    assert answer.status_code == 400, answer.content
    assert message in answer.body['errors'][0]['detail']


def test_the_books_view_is_unchanged(api, flavors):
    build_cloud(random.Random(5))
    assert api.get('/capacity?view=books').body == api.get('/capacity').body
    assert capacity.GROUPINGS   # the groupings view=stranded answers
