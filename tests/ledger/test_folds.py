"""The ledger's folds (providers.ledger) against a full recount from the
database (providers.books, providers.capacity) on random sequences of
committed writes: claims and deletes, inventories resized and retuned,
traits and pools changed, providers moved, created and deleted, consumers
given to other owners, on nested trees with sharing providers of one and of
two classes, in pools and zones. The folds must follow every write by the
trees it touched alone, and answer what recounting answers."""
import collections
import gc
import gzip as gzip_module
import math
import random
import time
import uuid

import pytest
from django.db import connection
from django.db import transaction

from allocations import metrics as allocation_metrics
from allocations import services as allocation_services
from allocations.models import Consumer
from allocations.models import Project
from allocations.ui import reports
from allocations.ui.filters import ProviderPages
from placement_site.exceptions import PlacementDomainError
from providers import books
from providers import capacity
from providers import ledger
from providers import metrics as provider_metrics
from providers import scopes
from providers import services
from providers.ledger import live
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceProvider
from providers.models import Trait
from providers.pods import services as pod_services
from tests.support.factories import add_provider

COMMITTED = pytest.mark.django_db(transaction=True, serialized_rollback=True)
pytestmark = [COMMITTED, pytest.mark.slow]

POOLS = [str(uuid.UUID(int=index)) for index in range(1, 5)]
TRAITS = ['HW_CPU_X86_AVX2', 'CUSTOM_FAST', 'MISC_SHARES_VIA_AGGREGATE', 'COMPUTE_STATUS_DISABLED']
SHAPES = [{'VCPU': 2, 'MEMORY_MB': 512}, {'DISK_GB': 50}, {'DISK_GB': 10, 'IPV4_ADDRESS': 1},
          {'VCPU': 3, 'MEMORY_MB': 100, 'DISK_GB': 30}]


@pytest.fixture(autouse=True)
def _custom_trait(db):
    Trait.objects.get_or_create(name='CUSTOM_FAST')


def inventory(total, **more):
    return {'total': total, **more}


def build_cloud(rng):
    """Flat and nested compute nodes, a shared filesystem (DISK_GB) and a
    routed network's pool (DISK_GB and IPV4_ADDRESS: two shared classes) in
    pools, a few traits."""
    providers = []
    for index in range(8):
        nested = index % 2
        root = add_provider(
            f'cn{index}', inventories={} if nested else {
                'VCPU': inventory(16, allocation_ratio=4.0), 'MEMORY_MB': inventory(4096),
                **({} if index % 4 == 2 else {'DISK_GB': inventory(200, reserved=10)})},
            traits=rng.sample(TRAITS[:2], rng.randint(0, 2)), aggregates=[POOLS[index % 3]])
        providers.append(root)
        if nested:
            for node in range(2):
                providers.append(add_provider(
                    f'cn{index}-numa{node}', parent=root,
                    inventories={'VCPU': inventory(8, max_unit=4, step_size=1),
                                 'MEMORY_MB': inventory(2048, allocation_ratio=1.5)},
                    traits=['CUSTOM_FAST'] if node else []))
    providers.append(add_provider(
        'nfs', inventories={'DISK_GB': inventory(1000, reserved=100)},
        traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOLS[0], POOLS[1]]))
    providers.append(add_provider(
        'net', inventories={'DISK_GB': inventory(300), 'IPV4_ADDRESS': inventory(20)},
        traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOLS[2]]))
    for project in ('p1', 'p2', 'p3', 'p4'):   # their pages read from the start
        Project.objects.get_or_create(external_id=project)
    pod_services.pod_create(name='pod-a', aggregate_uuid=POOLS[0], availability_zone='az1')
    pod_services.pod_create(name='pod-b', aggregate_uuid=POOLS[1], availability_zone='az1')
    pod_services.pod_create(name='pod-c', aggregate_uuid=POOLS[2], availability_zone='az2')
    return providers


def fresh(provider):
    return ResourceProvider.objects.filter(pk=provider.pk).first()


class Writer:
    """Random committed writes, each one a way the cloud changes."""

    def __init__(self, rng):
        self.rng = rng
        self.consumers = []

    def providers(self):
        return list(ResourceProvider.objects.all())

    def any_provider(self):
        """A provider, the sharing ones (whom they serve moves every other
        tree's count) a third of the time."""
        sharing = list(ResourceProvider.objects.filter(name__in=['nfs', 'net']))
        if sharing and self.rng.random() < 0.33:
            return fresh(self.rng.choice(sharing))
        return fresh(self.rng.choice(self.providers()))

    def claim(self):
        rng = self.rng
        inventories = list(Inventory.objects.select_related('resource_provider', 'resource_class'))
        picked = rng.sample(inventories, min(len(inventories), rng.randint(1, 3)))
        wanted = collections.defaultdict(dict)
        for found in picked:
            wanted[found.resource_provider.uuid][found.resource_class.name] = rng.randint(1, 6)
        consumer = str(uuid.uuid4())
        try:
            allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
                consumer, dict(wanted), project_id=rng.choice(['p1', 'p2', 'p3']),
                user_id=rng.choice(['u1', 'u2']), generation=None)])
        except PlacementDomainError:   # over capacity, off a step: refused, nothing written
            return
        self.consumers.append(consumer)

    def release(self):
        if self.consumers:
            allocation_services.allocations_delete(
                consumer_uuid=self.consumers.pop(self.rng.randrange(len(self.consumers))))

    def reown(self):
        if self.consumers:
            project, _ = Project.objects.get_or_create(external_id=self.rng.choice(['p1', 'p4']))
            Consumer.objects.filter(uuid=self.rng.choice(self.consumers)).update(project=project)

    def retune(self):
        found = self.rng.choice(list(Inventory.objects.select_related('resource_provider',
                                                                      'resource_class')))
        rng = self.rng
        total = rng.choice([found.total, found.total * 2, max(1, found.total // 2)])
        services.inventory_update(
            provider=fresh(found.resource_provider), resource_class=found.resource_class.name,
            record={'total': total, 'reserved': rng.choice([0, min(total, 5)]),
                    'allocation_ratio': rng.choice([1.0, 1.5, 2.0, 0.7]),
                    'min_unit': rng.choice([1, 2]), 'max_unit': rng.choice([total, 4, 3]),
                    'step_size': rng.choice([1, 1, 2])})

    def add_or_drop_inventory(self):
        provider = fresh(self.rng.choice(self.providers()))
        held = set(Inventory.objects.filter(resource_provider=provider).values_list(
            'resource_class__name', flat=True))
        name = self.rng.choice(['VCPU', 'MEMORY_MB', 'DISK_GB', 'IPV4_ADDRESS'])
        if name in held:
            if not provider.allocations.filter(resource_class__name=name).exists():
                services.inventory_delete(provider=provider, resource_class=name)
        else:
            services.inventory_add(provider=provider, resource_class=name,
                                   record={'total': self.rng.randint(4, 400)})

    def retrait(self):
        provider = self.any_provider()
        services.traits_replace(provider=provider, trait_names=self.rng.sample(
            TRAITS, self.rng.randint(0, 2)))

    def repool(self):
        provider = self.any_provider()
        services.aggregates_replace(provider=provider, aggregate_uuids=self.rng.sample(
            POOLS, self.rng.randint(0, 2)))

    def move(self):
        children = list(ResourceProvider.objects.filter(parent_provider__isnull=False))
        if not children:
            return
        child = fresh(self.rng.choice(children))
        roots = [p for p in ResourceProvider.objects.filter(parent_provider__isnull=True)
                 if p.pk != child.root_provider_id]
        parent = self.rng.choice(roots + [None])
        services.provider_update(provider=child, allow_reparenting=True,
                                 parent_provider_uuid=parent.uuid if parent else None)

    def create_or_delete(self):
        if self.rng.random() < 0.5:
            parent = self.rng.choice([None, *ResourceProvider.objects.filter(
                parent_provider__isnull=True)])
            add_provider(f'new-{uuid.uuid4().hex[:8]}', parent=parent,
                         inventories={'VCPU': inventory(8), 'DISK_GB': inventory(100)},
                         aggregates=self.rng.sample(POOLS, 1))
            return
        for provider in self.rng.sample(self.providers(), len(self.providers())):
            if not provider.allocations.exists() and not ResourceProvider.objects.filter(
                    parent_provider=provider).exists():
                services.provider_delete(provider=fresh(provider))
                return

    def raw(self):
        """Rows written around the services: the triggers see them too."""
        choice = self.rng.randrange(3)
        if choice == 0:
            Inventory.objects.filter(pk=self.rng.choice(list(
                Inventory.objects.values_list('pk', flat=True)))).update(reserved=1)
        elif choice == 1:
            provider = self.rng.choice(self.providers())
            ProviderAggregate.objects.filter(resource_provider=provider).delete()
        else:
            provider = self.rng.choice(self.providers())
            ProviderTrait.objects.filter(resource_provider=provider).delete()


CLAIMS = ['claim', 'claim', 'claim', 'release', 'release']
EVERYTHING = CLAIMS + ['reown', 'retune', 'add_or_drop_inventory', 'retrait', 'repool', 'move',
                       'create_or_delete', 'raw']


def groupings_now():
    """(name, scope) of every grouping the ledger folds, as built now."""
    zones = collections.defaultdict(set)
    for pod in pod_services.Pod.objects.all():
        zones[pod.availability_zone].add(pod.aggregate_id)
    some = list(ProviderAggregate.objects.values_list('aggregate_id', flat=True).distinct())[:2]
    return [('cloud', scopes.cloud()), ('pools', scopes.pools()), ('two pools', scopes.pools(some)),
            ('traits', scopes.traits()), ('zones', scopes.unions_of_pools(zones)),
            ('trees', scopes.trees()),
            ('cloud, VCPU only', scopes.cloud().narrowed(resource_class_id__in=[0]))]


def shape_ids():
    _, shapes = capacity.flavor_shapes([capacity_flavor(shape) for shape in SHAPES])
    return shapes


def capacity_flavor(shape):
    from providers.flavors import Flavor
    return Flavor('-'.join(shape), shape)


def same_books(ours, theirs):
    """Equal but for the float rounding of capacity sums."""
    assert set(ours) == set(theirs)
    for group, classes in theirs.items():
        assert list(ours[group]) == list(classes), group
        for name, usage in classes.items():
            mine = ours[group][name]
            assert (mine.total, mine.reserved, mine.used, mine.providers, mine.class_id) == (
                usage.total, usage.reserved, usage.used, usage.providers, usage.class_id)
            assert math.isclose(mine.capacity, usage.capacity, rel_tol=1e-9, abs_tol=1e-9)


def read_every_fold():
    """Every fold read, so each write moves them (checked or not)."""
    owners_read()
    fullest_read()
    provider_metrics.read_catalogue()
    shapes = shape_ids()
    for _, scope in groupings_now():
        books.scope_books(scope)
        capacity.fit_counts(scope, shapes)


OWNER_FILTERS = [{}, {'project': 'p1'}, {'user': 'u2', 'consumer_type': 'unknown'},
                 {'project': 'p4', 'user': 'u1'}, {'project': 'nobody'}]


def owners_read():
    """What the dashboards read of the owners' usage: the usage tables, the
    largest holders, each project's usage, hosts and pools, /metrics'
    project series."""
    found = []
    for filters in OWNER_FILTERS:
        filters = {key: filters.get(key) for key in reports.OWNERS}
        usage = reports.Usage.read(filters)
        found += [usage.sums, usage.consumers, [
            (consumer.uuid, amount, holding) for consumer, amount, holding in
            reports.top_consumers(filters, 'VCPU', 4)]]
    for project in Project.objects.order_by('external_id'):
        found += [reports.project_usage(project), reports.project_hosts(project, 3),
                  [pool.uuid for pool in reports.project_pools(project)],
                  reports.project_consumers(project).count()]
    found.append(''.join(allocation_metrics.project_usage()))
    found.append(reports.cloud_counts())
    return found


def fullest_read():
    """The overview's fullest hosts, the providers' list fullest first and
    the hosts' list both ways, a few and more than there are."""
    every, roots = ResourceProvider.objects.all(), ResourceProvider.objects.roots()
    return [[(host.root.name, host.fullest) for host in reports.fullest_hosts(limit)]
            for limit in (3, 100)] + [
        [p.name for p in ProviderPages(every, '-utilization')[low:high]]
        for low, high in ((0, 1), (0, 5), (3, 9), (0, 100))] + [
        [p.name for p in ProviderPages(roots, sort, trees=True, every_tree=True)[low:high]]
        for sort in ('-utilization', 'utilization') for low, high in ((2, 6), (0, 100))]


def scraped():
    """GET /metrics' catalogue lines (the request series aside), sorted:
    the per-tree ones from the ledger's kept buckets, or rendered anew."""
    for gzip in (True, False):   # the kept members, and them unpacked
        chunks = provider_metrics.answer('', provider_metrics.read_catalogue(gzip), gzip)
        text = gzip_module.decompress(b''.join(chunks)).decode() if gzip else ''.join(chunks)
        if gzip:
            zipped = text
    assert text == zipped
    return sorted(text.splitlines())


def check_every_fold():
    """What the dashboards read (from the ledger: no writing transaction is
    open) is what the database's rows recounted say."""
    assert ledger.serves(connection.alias)
    owners, fullest, metrics = owners_read(), fullest_read(), scraped()
    with transaction.atomic():   # a transaction that may write: the rows summed
        assert not ledger.serves(connection.alias)
        assert owners == owners_read()
        assert fullest == fullest_read()
        assert metrics == scraped()
    shapes = shape_ids()
    for name, scope in groupings_now():
        same_books(books.scope_books(scope), books._summed_books(scope))
        if scope.classes is None:
            assert dict(capacity.fit_counts(scope, shapes)) == \
                capacity._counted_fits(scope, shapes), name
    trees = scopes.trees().without_trees_whose_root_has('COMPUTE_STATUS_DISABLED')
    assert capacity.tree_fit_counts(trees, shapes) == capacity._counted_tree_fits(trees, shapes)


# Every write is followed by a read of every fold; the recount (slow: the
# fits' SQL is built anew each time) after every few.
RECOUNT_EVERY = 3


def test_the_folds_follow_claims_without_being_built_again():
    rng = random.Random('claims')
    build_cloud(rng)
    writer = Writer(rng)
    check_every_fold()
    kept = live.ledger('default')
    built, refreshed = kept.builds, kept.refreshes
    for step in range(1, 19):
        getattr(writer, rng.choice(CLAIMS))()
        read_every_fold()
        if not step % RECOUNT_EVERY:
            check_every_fold()
    assert kept.builds == built   # moved tree by tree, never recounted
    assert kept.refreshes > refreshed + 10


# Three sequences on SQLite, one on PostgreSQL and MariaDB: what differs
# between the databases is their triggers, which every sequence exercises
# (and CI's time is a budget).
@pytest.mark.parametrize('seed', range(3 if connection.vendor == 'sqlite' else 1))
def test_the_folds_follow_every_kind_of_write(seed):
    rng = random.Random(f'everything-{seed}')
    build_cloud(rng)
    writer = Writer(rng)
    check_every_fold()
    for step in range(1, 19):
        for _ in range(rng.randint(1, 3)):
            getattr(writer, rng.choice(EVERYTHING))()
        read_every_fold()
        if not step % RECOUNT_EVERY:
            check_every_fold()


def test_a_share_joining_a_pool_serves_its_trees_at_once():
    """Whom a sharing provider serves changes with the trees of its new
    pool, whose own rows did not change: they move all the same."""
    node = add_provider('diskless', inventories={'VCPU': inventory(8),
                                                 'MEMORY_MB': inventory(1024)},
                        aggregates=[POOLS[3]])
    nfs = add_provider('nfs', inventories={'DISK_GB': inventory(500)},
                       traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOLS[0]])
    shapes = shape_ids()
    before = capacity.fit_counts(scopes.cloud(), shapes)['cloud']
    assert before[3].count == 0   # VCPU, MEMORY_MB and DISK_GB: no disk for the node
    services.aggregates_replace(provider=fresh(nfs), aggregate_uuids=[POOLS[0], POOLS[3]])
    after = capacity.fit_counts(scopes.cloud(), shapes)['cloud']
    assert after == capacity._counted_fits(scopes.cloud(), shapes)['cloud']
    assert after[3].count == 2   # 8 VCPU / 3 (MEMORY_MB and DISK_GB have room)
    assert node.pk in live.ledger('default').current().reach


def test_a_write_inside_a_transaction_reads_the_live_rows():
    rng = random.Random('live')
    build_cloud(rng)
    check_every_fold()
    with transaction.atomic():
        node = ResourceProvider.objects.get(name='cn0')
        services.inventory_update(provider=node, resource_class='VCPU',
                                  record={'total': 1000})
        assert not ledger.serves(connection.alias)
        assert books.scope_books(scopes.cloud())['cloud']['VCPU'].total == (
            books._summed_books(scopes.cloud())['cloud']['VCPU'].total)
        transaction.set_rollback(True)


def test_the_api_pool_sums_the_rows(settings):
    """The image is the operator pool's: an API worker (GET /pods reads
    pools' books) never reads a cloud into its memory."""
    build_cloud(random.Random('api'))
    assert ledger.serves(connection.alias)
    settings.PLACEMENT_SERVING_POOL = 'api'
    assert not ledger.serves(connection.alias)
    books.scope_books(scopes.cloud())
    assert live.ledger('default').image is None


def test_the_image_and_large_folds_are_kept_out_of_full_collections(monkeypatch):
    """What the ledger builds lives long: a full collection pass would walk
    every tree of it (0.3-0.6 s at 100,000 providers), so it is frozen;
    trees read again after a write are ordinary objects, freed as usual."""
    build_cloud(random.Random('frozen'))
    live.forget()
    monkeypatch.setattr(live, 'SETTLED_BYTES', 0)   # this small cloud's folds count too
    image = live.ledger('default').current()
    reports.fullest_hosts(3)
    fold = live.ledger('default').held(('fullest trees',))
    tracked = {id(o) for o in gc.get_objects()}
    for kept in (next(iter(image.trees.values())), image.trees, fold.at):
        assert gc.is_tracked(kept) and id(kept) not in tracked
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        str(uuid.uuid4()), {ResourceProvider.objects.get(name='cn0').uuid: {'VCPU': 1}},
        project_id='p1', user_id='u1', generation=None)])
    moved = [tree for root, tree in live.ledger('default').current().trees.items()
             if tree is not image.trees.get(root)]
    assert moved and all(gc.is_tracked(tree) for tree in moved)


def test_the_operator_pool_follows_the_writes_while_pages_read(settings, monkeypatch):
    """A page read starts a follower that reads the changed trees every
    PLACEMENT_LEDGER_FOLLOW_SECONDS without waiting for the next page; it
    stops once no page has read for FOLLOWED_SECONDS."""
    build_cloud(random.Random('follow'))
    settings.PLACEMENT_SERVING_POOL = 'operator'
    settings.PLACEMENT_LEDGER_FOLLOW_SECONDS = 0.05
    monkeypatch.setattr(live, 'FOLLOWED_SECONDS', 1.5)
    live.forget()
    kept = live.ledger('default')
    before = kept.current()
    assert kept.follower is not None and kept.follower.is_alive()
    node = ResourceProvider.objects.get(name='cn0')
    services.inventory_update(provider=fresh(node), resource_class='VCPU',
                              record={'total': 1000})
    deadline = time.monotonic() + 10
    while kept.image is before and time.monotonic() < deadline:
        time.sleep(0.05)
    # Read again by the follower, no page asking.
    assert kept.image is not before
    assert next(i.total for i in kept.image.trees[node.pk].inventories) == 1000
    kept.follower.join(timeout=10)
    assert not kept.follower.is_alive()   # no page read for FOLLOWED_SECONDS


def test_the_api_pool_and_tests_do_not_follow(settings):
    build_cloud(random.Random('still'))
    live.forget()
    kept = live.ledger('default')
    kept.current()   # PLACEMENT_SERVING_POOL is not 'operator' here
    assert kept.follower is None


def test_the_operator_pools_start_up_reads_do_not_follow(settings):
    """The image read as the operator pool starts (no page asked) leaves no
    follower holding a connection."""
    build_cloud(random.Random('start'))
    settings.PLACEMENT_SERVING_POOL = 'operator'
    settings.PLACEMENT_LEDGER_FOLLOW_SECONDS = 0.05
    live.forget()
    kept = live.ledger('default')
    with live.unobserved():
        kept.current()
    assert kept.follower is None
    kept.current()   # a page's read
    assert kept.follower is not None
    live.forget()    # the follower ends with its ledger
    kept.follower.join(timeout=10)
    assert not kept.follower.is_alive()
