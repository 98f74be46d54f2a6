"""`python manage.py load_demo`: a realistic demo cloud, written through the
services like any other client's data.

The topology depends only on --size; --seed drives the workload. Every uuid
is derived from a name (uuid5), so a provider is part of the demo exactly
when its uuid is the one derived from its name: that is how a second run
sees the demo is loaded and how --reset finds what to delete.

What it builds (rows x racks x nodes: small 3x10x2, medium 10x10x4):
- compute nodes r{row}-rack{rack:02d}-cn{n:02d} in a host aggregate per row
  ("row1", ...), each with two NUMA children (-numa0, -numa1: VCPU and
  MEMORY_MB, HW_NUMA_ROOT) and local DISK_GB on the root; hardware and traits
  by row (three generations); one node is disabled for maintenance;
- SR-IOV NICs under the NUMA nodes on the rows that have them
  (-numa0-nic0 on CUSTOM_PHYSNET_PUBLIC, -numa1-nic1 on CUSTOM_PHYSNET_INTRANET);
- nfs-share-1, a 100 TB NFS share (DISK_GB) in aggregate row1-racks6-10-nfs
  with the diskless compute nodes of row 1, racks 6-10;
- r3-rack01-ipv4-pool, a routed-network segment's IPv4 pool, in aggregate
  r3-rack01-segment with the compute nodes of row 3, rack 1;
- instances of several projects filling most nodes to 30-75%, a few NUMA
  nodes nearly full, some with a VF or an IPv4 address, and a few MIGRATION
  consumers holding the source side of a move;
- pods over the row aggregates (thresholds VCPU 80%, MEMORY_MB 85%):
  pod-row1 and pod-row2 general purpose in az1, pod-row3-cad (resource=CAD,
  workload=CAD Modeling) in az2, and the projects bound through binding
  requests: three to pod-row1, which then goes into maintenance, so that
  demo-ci's next request moves it to pod-row2 (its first binding ends,
  reason maintenance) where the next tenants go; two projects' CAD work on
  pod-row3-cad (one of them also its CAD Modeling work: two bindings, one
  tenant), and a third's CAD binding ended by an admin;
- usage-trend snapshots for the charts: one of the cloud as loaded and, in
  a database without snapshots yet, four weeks of synthetic history before
  it (every six hours, VCPU, MEMORY_MB and DISK_GB growing towards today's
  use, the other classes flat).
"""
import math
import random
import re
import time
import uuid as uuid_lib
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.core.management.base import CommandError
from django.db import connection
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ProjectUsageSnapshot
from allocations.services import ConsumerAllocations
from allocations.services import allocations_delete
from allocations.services import allocations_replace
from placement_site.exceptions import PlacementDomainError
from providers import rules
from providers import services
from providers import trends
from providers.models import Inventory
from providers.models import ResourceProvider
from providers.models import Trait
from providers.models import UsageSnapshot
from providers.pods import selection
from providers.pods import services as pod_services
from providers.pods.models import GENERAL_PURPOSE
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from providers.pods.selection import BindingRequest

NAMESPACE = uuid_lib.uuid5(uuid_lib.NAMESPACE_URL, 'https://placement.invalid/load_demo')

SIZES = {'small': (3, 10, 2), 'medium': (10, 10, 4)}  # rows, racks per row, nodes per rack

NFS_NAME = 'nfs-share-1'
NFS_AGGREGATE = 'row1-racks6-10-nfs'
NFS_INVENTORY = {'total': 102400, 'reserved': 1024, 'min_unit': 50, 'max_unit': 10000,
                 'step_size': 10, 'allocation_ratio': 1.0}
NFS_ROW, NFS_RACKS = 1, range(6, 11)
POOL_NAME = 'r3-rack01-ipv4-pool'
POOL_AGGREGATE = 'r3-rack01-segment'
POOL_INVENTORY = {'total': 254, 'reserved': 5, 'min_unit': 1, 'max_unit': 1,
                  'step_size': 1, 'allocation_ratio': 1.0}
POOL_ROW, POOL_RACK = 3, 1
DISABLED_NODE = 'r2-rack03-cn02'
PHYSNETS = ('CUSTOM_PHYSNET_PUBLIC', 'CUSTOM_PHYSNET_INTRANET')  # NIC under numa0, numa1
VFS_PER_NIC = 16
SHARED_LIMIT = 0.8  # fill the NFS share and the IPv4 pool to at most this
NODE_NAME = re.compile(r'^r\d+-rack\d\d-cn\d\d$')
CAD = 'resource=CAD'
CAD_MODELING = 'workload=CAD Modeling'
# Pods, created in this order (the default weighers bind to the oldest
# pod that passes): name, row aggregate, availability zone, affinity tags.
PODS = (('pod-row1', 'row1', 'az1', {}),
        ('pod-row2', 'row2', 'az1', {}),
        ('pod-row3-cad', 'row3', 'az2', {'resource': 'CAD', 'workload': 'CAD Modeling'}))
POD_THRESHOLDS = {'VCPU': 80, 'MEMORY_MB': 85}
MAINTENANCE_POD = 'pod-row1'

SHARED = 'MISC_SHARES_VIA_AGGREGATE'
COMMON_TRAITS = ('COMPUTE_NODE', 'HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_AESNI',
                 'HW_CPU_HYPERTHREADING', 'COMPUTE_VOLUME_MULTI_ATTACH', 'COMPUTE_VOLUME_EXTEND',
                 'COMPUTE_NET_ATTACH_INTERFACE', 'COMPUTE_IMAGE_TYPE_QCOW2',
                 'COMPUTE_IMAGE_TYPE_RAW', 'COMPUTE_TRUSTED_CERTS')


@dataclass(frozen=True)
class Hardware:
    """One server generation: per NUMA node threads and memory, local disk."""
    name: str
    threads_per_numa: int
    memory_mb_per_numa: int
    disk_gb: int
    disk_trait: str
    cpu_traits: tuple
    sriov: bool


# Row r gets GENERATIONS[r % 3]: row 1 gen2, row 2 gen1, row 3 gen3, ...
GENERATIONS = {
    1: Hardware('gen2', 40, 98304, 1788, 'STORAGE_DISK_SSD', ('HW_CPU_X86_AVX512F',), False),
    2: Hardware('gen1', 28, 65536, 3576, 'STORAGE_DISK_HDD', (), True),
    0: Hardware('gen3', 64, 131072, 3576, 'STORAGE_DISK_SSD',
                ('HW_CPU_X86_AVX512F', 'HW_CPU_X86_AVX512BW'), True),
}

FLAVORS = {  # vcpus, memory MB, disk GB
    'm1.small': (1, 2048, 20), 'm1.medium': (2, 4096, 40), 'm1.large': (4, 8192, 80),
    'm1.xlarge': (8, 16384, 160), 'c1.xlarge': (8, 8192, 80), 'c1.2xlarge': (16, 16384, 160),
    'r1.large': (2, 16384, 80), 'r1.xlarge': (4, 32768, 160), 'r1.2xlarge': (8, 65536, 320),
    'd1.xlarge': (4, 16384, 2000), 'd1.2xlarge': (8, 32768, 4000),  # fit on the NFS share
}


@dataclass(frozen=True)
class Project:
    """A tenant: its users, the flavors it boots, how often it wants a VF."""
    id: str
    users: tuple
    flavors: tuple
    weight: int
    vf_share: float = 0.0
    physnet: str = None


PROJECTS = (
    Project('demo-web', ('alice', 'bob'), ('m1.small', 'm1.medium', 'm1.large'), 30,
            0.15, 'CUSTOM_PHYSNET_PUBLIC'),
    Project('demo-db', ('carol', 'dave'), ('r1.large', 'r1.xlarge', 'r1.2xlarge'), 15,
            0.5, 'CUSTOM_PHYSNET_INTRANET'),
    Project('demo-ci', ('ci-bot', 'erin'), ('m1.medium', 'm1.large', 'c1.xlarge'), 25),
    Project('demo-analytics', ('frank', 'grace'),
            ('c1.2xlarge', 'r1.xlarge', 'd1.xlarge', 'd1.2xlarge'), 10),
    Project('demo-nfv', ('heidi', 'nfv-orchestrator'), ('c1.xlarge', 'c1.2xlarge'), 10, 1.0),
)
DEMO_PROJECT_IDS = frozenset(p.id for p in PROJECTS)


def demo_uuid(kind, name):
    """The demo's uuid for a named thing ('provider', 'aggregate', 'consumer')."""
    return str(uuid_lib.uuid5(NAMESPACE, f'{kind}:{name}'))


def provider_uuid(name):
    return demo_uuid('provider', name)


def aggregate_uuid(name):
    return demo_uuid('aggregate', name)


def pod_uuid(name):
    return demo_uuid('pod', name)


def node_name(row, rack, n):
    return f'r{row}-rack{rack:02d}-cn{n:02d}'


def demo_providers():
    """The demo's providers in the database (uuid derived from the name)."""
    return [p for p in ResourceProvider.objects.only('id', 'uuid', 'name', 'parent_provider_id')
            if p.uuid == provider_uuid(p.name)]


def demo_pods():
    """The demo's pods in the database (uuid derived from the name), in line."""
    return [p for p in Pod.objects.in_line() if p.uuid == pod_uuid(p.name)]


@dataclass
class Node:
    """A compute node as planned: its providers' uuids and where disk comes from."""
    name: str
    row: int
    rack: int
    hardware: Hardware
    uuid: str = None
    numa: list = field(default_factory=list)
    nics: dict = field(default_factory=dict)  # NUMA index -> (uuid, physnet)
    disk: str = None                          # provider of DISK_GB: the root or the share
    pool: str = None                          # IPv4 pool of the node's segment
    disabled: bool = False


class Command(BaseCommand):
    help = ('Load a demo cloud (compute nodes with NUMA nodes and SR-IOV NICs, an NFS '
            'share, an IPv4 pool, instances of several projects) through the services.')

    def add_arguments(self, parser):
        parser.add_argument('--seed', type=int, default=1, help='workload seed (default 1)')
        parser.add_argument('--size', choices=sorted(SIZES), default='small')
        parser.add_argument('--reset', action='store_true',
                            help="delete the demo's consumers and providers first")
        parser.add_argument('--staff-user', metavar='NAME',
                            help='create or update a staff superuser NAME (needs --password)')
        parser.add_argument('--password', metavar='PW')

    def handle(self, *args, seed, size, reset, staff_user, password, **options):
        if staff_user and not password:
            raise CommandError('--staff-user needs --password.')
        try:
            if reset:
                self.reset()
            started = time.monotonic()
            existing = demo_providers()
            if existing:
                consumers = Consumer.objects.filter(
                    allocations__resource_provider_id__in=[p.pk for p in existing]).distinct()
                self.stdout.write(
                    f'The demo cloud is already loaded ({len(existing)} providers, '
                    f'{consumers.count()} consumers); nothing to do. Use --reset to reload it.')
            else:
                with transaction.atomic():
                    Loader(seed, size).load()
                refresh_statistics()
                self.summary(size, seed, time.monotonic() - started)
        except PlacementDomainError as error:
            raise CommandError(f'Could not load the demo: {error}')
        if staff_user:
            self.ensure_staff(staff_user, password)

    def reset(self):
        """Delete the demo's pods with their bindings, then its consumers,
        then its providers (leaves first)."""
        providers = demo_providers()
        pods = demo_pods()
        if not providers and not pods:
            self.stdout.write('No demo cloud to reset.')
            return
        ids = [p.pk for p in providers]
        held = list(Consumer.objects.filter(allocations__resource_provider_id__in=ids)
                    .distinct().values_list('uuid', 'project__external_id'))
        foreign = [u for u, project in held if project not in DEMO_PROJECT_IDS]
        if foreign:
            raise CommandError(
                f'{len(foreign)} consumers outside the demo projects hold allocations on demo '
                f'providers (e.g. {foreign[0]}); delete them first.')
        bindings = PodBinding.objects.filter(pod__in=[p.pk for p in pods])
        bound = list(bindings.open().exclude(project_id__in=DEMO_PROJECT_IDS)
                     .values_list('uuid', 'project_id'))
        if bound:
            raise CommandError(
                f'{len(bound)} projects outside the demo are bound to demo pods (e.g. binding '
                f'{bound[0][0]} of {bound[0][1]}); end those bindings first.')
        parents = {p.pk: p.parent_provider_id for p in providers}

        def depth(pk):
            return 0 if parents.get(pk) is None else 1 + depth(parents[pk])

        with transaction.atomic():
            # Bindings are history, which no service deletes: the demo's
            # own pods take theirs with them.
            ended_and_open, _ = bindings.delete()
            for pod in pods:
                pod_services.pod_delete(pod=pod)
            for consumer_uuid, _project in held:
                allocations_delete(consumer_uuid=consumer_uuid)
            for provider in sorted(providers, key=lambda p: -depth(p.pk)):
                services.provider_delete(provider=provider)
        self.stdout.write(f'Deleted {len(pods)} demo pods with {ended_and_open} bindings, '
                          f'{len(held)} demo consumers and {len(providers)} demo providers.')

    def summary(self, size, seed, seconds):
        providers = demo_providers()
        names = [p.name for p in providers]
        ids = [p.pk for p in providers]
        kinds = {
            'compute nodes': sum(1 for n in names if NODE_NAME.match(n)),
            'NUMA nodes': sum(1 for n in names if n.endswith(('-numa0', '-numa1'))),
            'SR-IOV NICs': sum(1 for n in names if '-nic' in n),
            'shared (NFS, IPv4 pool)': sum(1 for n in names if n in (NFS_NAME, POOL_NAME)),
        }
        consumers = Consumer.objects.filter(
            allocations__resource_provider_id__in=ids).distinct()
        by_type = {}
        for name in consumers.values_list('consumer_type__name', flat=True):
            by_type[name] = by_type.get(name, 0) + 1
        projects = sorted(set(consumers.values_list('project__external_id', flat=True)))
        users = consumers.values('user_id').distinct().count()
        used = dict(Allocation.objects.filter(resource_provider_id__in=ids)
                    .values('resource_class__name').annotate(used=Sum('used'))
                    .values_list('resource_class__name', 'used'))
        limits = {}
        for inv in Inventory.objects.filter(resource_provider_id__in=ids) \
                .select_related('resource_class'):
            name = inv.resource_class.name
            limits[name] = limits.get(name, 0) + inv.capacity
        self.stdout.write(f'Loaded the demo cloud (size {size}, seed {seed}) in {seconds:.1f} s.')
        self.stdout.write(f'  providers: {len(providers)} ('
                          + ', '.join(f'{count} {kind}' for kind, count in kinds.items()) + ')')
        self.stdout.write(f'  consumers: {sum(by_type.values())} ('
                          + ', '.join(f'{n} {t}' for t, n in sorted(by_type.items())) + ')')
        self.stdout.write(f'  projects: {len(projects)} ({", ".join(projects)}), users: {users}')
        self.stdout.write('  usage: ' + ', '.join(
            f'{name} {rules.percent(used.get(name, 0), limit):.0f}%'
            for name, limit in sorted(limits.items()) if limit))
        pods = demo_pods()
        bindings = PodBinding.objects.filter(pod__in=[p.pk for p in pods])
        self.stdout.write(f'  pods: {len(pods)} (' + ', '.join(
            ' '.join([p.name, *p.tags] + ([p.state] if p.state != Pod.ENABLED else []))
            for p in pods) + f'), bindings: {bindings.open().count()} open, '
            f'{bindings.filter(ended_at__isnull=False).count()} ended')

    def ensure_staff(self, username, password):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(password)
        user.save()
        self.stdout.write(f'{"Created" if created else "Updated"} staff superuser {username!r}.')


class Loader:
    """Builds the providers, then plans the workload in memory (tracking
    usage against capacity) and writes it in batches."""
    BATCH = 250

    def __init__(self, seed, size):
        self.seed = seed
        self.rows, self.racks, self.per_rack = SIZES[size]
        self.rng = random.Random(seed)
        self.capacity = {}  # (provider uuid, class) -> capacity
        self.used = {}      # (provider uuid, class) -> used
        self.nodes = []
        self.consumers = []  # ConsumerAllocations to write
        self.instances = []  # (node, flavor, project, user, allocations)

    def load(self):
        self.check_traits()
        self.build_providers()
        self.plan_instances()
        self.plan_migrations()
        for start in range(0, len(self.consumers), self.BATCH):
            allocations_replace(self.consumers[start:start + self.BATCH])
        self.build_pods()
        self.trend_history()

    # ---- providers -------------------------------------------------------

    def check_traits(self):
        for name in PHYSNETS:
            services.trait_ensure(name=name)
        wanted = set(COMMON_TRAITS) | {SHARED, 'HW_NUMA_ROOT', 'HW_NIC_SRIOV',
                                       'COMPUTE_STATUS_DISABLED'}
        for hardware in GENERATIONS.values():
            wanted |= {hardware.disk_trait, *hardware.cpu_traits}
        missing = wanted - set(Trait.objects.filter(name__in=wanted).values_list('name', flat=True))
        if missing:
            raise CommandError(f'Standard traits missing ({", ".join(sorted(missing))}); '
                               'run `python manage.py sync_standards` first.')

    def provider(self, name, parent=None, inventories=None, traits=(), aggregates=()):
        provider = services.provider_create(name=name, uuid=provider_uuid(name),
                                            parent_provider_uuid=parent)
        if inventories:
            services.inventories_replace(provider=provider, inventories=inventories)
            for rc, record in inventories.items():
                self.capacity[provider.uuid, rc] = rules.capacity(
                    record['total'], record.get('reserved', 0),
                    record.get('allocation_ratio', 1.0))
                self.used[provider.uuid, rc] = 0
        if traits:
            services.traits_replace(provider=provider, trait_names=sorted(set(traits)))
        if aggregates:
            services.aggregates_replace(provider=provider,
                                        aggregate_uuids=[aggregate_uuid(a) for a in aggregates])
        return provider.uuid

    def build_providers(self):
        nfs = self.provider(NFS_NAME, inventories={'DISK_GB': NFS_INVENTORY},
                            traits=(SHARED, 'STORAGE_DISK_HDD'), aggregates=(NFS_AGGREGATE,))
        pool = self.provider(POOL_NAME, inventories={'IPV4_ADDRESS': POOL_INVENTORY},
                             traits=(SHARED,), aggregates=(POOL_AGGREGATE,))
        for row in range(1, self.rows + 1):
            hardware = GENERATIONS[row % 3]
            for rack in range(1, self.racks + 1):
                for n in range(1, self.per_rack + 1):
                    node = Node(node_name(row, rack, n), row, rack, hardware)
                    diskless = row == NFS_ROW and rack in NFS_RACKS
                    in_segment = (row, rack) == (POOL_ROW, POOL_RACK)
                    node.disabled = node.name == DISABLED_NODE
                    traits = COMMON_TRAITS + hardware.cpu_traits
                    inventories = {}
                    aggregates = [f'row{row}']
                    if diskless:
                        aggregates.append(NFS_AGGREGATE)
                    else:
                        traits += (hardware.disk_trait,)
                        inventories['DISK_GB'] = {
                            'total': hardware.disk_gb, 'reserved': 100, 'min_unit': 1,
                            'max_unit': hardware.disk_gb, 'step_size': 1, 'allocation_ratio': 1.0}
                    if in_segment:
                        aggregates.append(POOL_AGGREGATE)
                        node.pool = pool
                    if node.disabled:
                        traits += ('COMPUTE_STATUS_DISABLED',)
                    node.uuid = self.provider(node.name, inventories=inventories, traits=traits,
                                              aggregates=aggregates)
                    node.disk = nfs if diskless else node.uuid
                    self.build_numa(node)
                    self.nodes.append(node)

    def build_numa(self, node):
        hw = node.hardware
        for index in range(2):
            name = f'{node.name}-numa{index}'
            numa = self.provider(name, parent=node.uuid, traits=('HW_NUMA_ROOT',), inventories={
                'VCPU': {'total': hw.threads_per_numa, 'reserved': 2, 'min_unit': 1,
                         'max_unit': hw.threads_per_numa, 'step_size': 1,
                         'allocation_ratio': 2.0},
                'MEMORY_MB': {'total': hw.memory_mb_per_numa, 'reserved': 4096, 'min_unit': 1,
                              'max_unit': hw.memory_mb_per_numa, 'step_size': 1,
                              'allocation_ratio': 1.0},
            })
            node.numa.append(numa)
            if hw.sriov:
                physnet = PHYSNETS[index]
                nic = self.provider(
                    f'{name}-nic{index}', parent=numa, traits=('HW_NIC_SRIOV', physnet),
                    inventories={'SRIOV_NET_VF': {
                        'total': VFS_PER_NIC, 'reserved': 0, 'min_unit': 1,
                        'max_unit': VFS_PER_NIC, 'step_size': 1, 'allocation_ratio': 1.0}})
                node.nics[index] = (nic, physnet)

    # ---- workload --------------------------------------------------------

    def fits(self, allocations, limit, own):
        """Does it fit, own providers filled to at most `limit` of capacity?"""
        for provider, resources in allocations.items():
            share = limit if provider in own else SHARED_LIMIT
            for rc, amount in resources.items():
                key = (provider, rc)
                if self.used[key] + amount > self.capacity[key] * share:
                    return False
        return True

    def take(self, allocations):
        for provider, resources in allocations.items():
            for rc, amount in resources.items():
                self.used[provider, rc] += amount

    def place(self, node, flavor, project=None, limit=1.0):
        """Allocations for the flavor on the node within `limit`, or None.
        With a project: maybe a VF on the NUMA node's NIC and an IPv4 address."""
        vcpus, memory_mb, disk_gb = FLAVORS[flavor]
        if node.disk != node.uuid:  # shared storage: its min_unit and step_size
            disk_gb = max(NFS_INVENTORY['min_unit'], math.ceil(disk_gb / 10) * 10)
        rng = self.rng
        want_vf = project is not None and bool(node.nics) and rng.random() < project.vf_share
        want_ip = project is not None and node.pool is not None and rng.random() < 0.7
        numas = list(range(len(node.numa)))
        if want_vf and project.physnet:
            numas = [i for i in numas if node.nics[i][1] == project.physnet]
        numas.sort(key=lambda i: self.used[node.numa[i], 'MEMORY_MB'])  # least loaded first
        own = {node.uuid, *node.numa, *(nic for nic, _ in node.nics.values())}
        for i in numas:
            allocations = {node.numa[i]: {'VCPU': vcpus, 'MEMORY_MB': memory_mb},
                           node.disk: {'DISK_GB': disk_gb}}
            if want_vf:
                allocations[node.nics[i][0]] = {'SRIOV_NET_VF': 1}
            if want_ip:
                allocations[node.pool] = {'IPV4_ADDRESS': 1}
            if self.fits(allocations, limit, own):
                self.take(allocations)
                return allocations
        return None

    def consumer(self, kind, project, user, allocations):
        self.consumers.append(ConsumerAllocations(
            consumer_uuid=demo_uuid('consumer', f'{self.seed}:{kind}:{len(self.consumers)}'),
            allocations=allocations, project_id=project.id, user_id=user,
            generation=None, consumer_type=kind))

    def plan_instances(self):
        """Fill each node to a target share; a few NUMA nodes nearly full."""
        rng = self.rng
        enabled = [n for n in self.nodes if not n.disabled]
        nearly_full = set(rng.sample([n.name for n in enabled], max(3, len(enabled) // 30)))
        for node in enabled:
            weights = [p.weight for p in PROJECTS]
            for i, project in enumerate(PROJECTS):
                if project.vf_share == 1.0 and not node.nics:
                    weights[i] = 0  # NFV needs SR-IOV
                if project.id == 'demo-analytics' and node.disk != node.uuid:
                    weights[i] *= 8  # data-heavy work next to the big share
            full = node.name in nearly_full
            target = rng.uniform(0.95, 0.99) if full else rng.uniform(0.3, 0.75)
            misses = 0
            while misses < 8:
                project = rng.choices(PROJECTS, weights)[0]
                flavor = rng.choice(project.flavors)
                allocations = self.place(node, flavor, project, target)
                if allocations is None:
                    misses += 1
                    continue
                user = rng.choice(project.users)
                self.consumer('INSTANCE', project, user, allocations)
                self.instances.append((node, flavor, project, user, allocations))
            while full and self.place_small(node, target):
                pass

    def place_small(self, node, target):
        project = PROJECTS[0]
        allocations = self.place(node, 'm1.small', None, target)
        if allocations is not None:
            self.consumer('INSTANCE', project, project.users[0], allocations)
        return allocations is not None

    def plan_migrations(self):
        """A few instances being moved: the MIGRATION consumer holds the
        source node's resources while the instance holds the destination's."""
        rng = self.rng
        plain = [i for i in self.instances  # no VF or address to move along
                 if not any('SRIOV_NET_VF' in r or 'IPV4_ADDRESS' in r for r in i[4].values())]
        wanted = max(4, len(self.nodes) // 25)
        enabled = [n for n in self.nodes if not n.disabled]
        for node, flavor, project, user, _ in rng.sample(plain, min(wanted, len(plain))):
            for source in rng.sample(enabled, len(enabled)):
                if source is node:
                    continue
                allocations = self.place(source, flavor, limit=0.9)
                if allocations is not None:
                    self.consumer('MIGRATION', project, user, allocations)
                    break

    # ---- pods --------------------------------------------------------------

    def build_pods(self):
        """The pods over the row aggregates, then the projects bound to them
        as a scheduler would ask (see the module docstring); the pods'
        books are the workload's, so this comes after it."""
        pods = {}
        for name, row, zone, tags in PODS:
            pods[name] = pod_services.pod_create(
                name=name, uuid=pod_uuid(name), aggregate_uuid=aggregate_uuid(row),
                availability_zone=zone, affinity_tags=tags, thresholds=POD_THRESHOLDS)
        for project in ('demo-web', 'demo-db', 'demo-ci'):
            self.bind(project, GENERAL_PURPOSE, 'pod-row1')
        pod_services.pod_update(pod=pods[MAINTENANCE_POD], state=Pod.MAINTENANCE)
        self.bind('demo-ci', GENERAL_PURPOSE, 'pod-row2', replaced=PodBinding.MAINTENANCE)
        for project in ('demo-analytics', 'demo-nfv'):
            self.bind(project, GENERAL_PURPOSE, 'pod-row2')
        for project in ('demo-analytics', 'demo-db', 'demo-nfv'):
            self.bind(project, CAD, 'pod-row3-cad')
        # Bound to the pod for its second tag too: still one tenant there.
        self.bind('demo-analytics', CAD_MODELING, 'pod-row3-cad')
        nfv_cad = PodBinding.objects.open().of('demo-nfv', CAD).get()
        pod_services.binding_end(binding=nfv_cad)

    def bind(self, project_id, affinity, expected, replaced=None):
        """A binding request, which must bind as the story says (the pod,
        and why the binding it replaced ended): other pods that take the
        demo's requests would change the story."""
        answer = pod_services.binding_request(BindingRequest(project_id, affinity))
        got = (answer.binding.pod.name, answer.replaced.end_reason if answer.replaced else None)
        if got != (expected, replaced):
            raise CommandError(
                f'The demo binds {project_id} ({selection.describe_affinity(affinity)}) to '
                f'{expected}, but its binding request went to {got[0]}: pods outside the '
                'demo take its requests. Load it into a database without them.')
        return answer.binding

    # ---- usage trends ----------------------------------------------------

    # Of today's use, the share each class grew by over the history (others flat).
    TREND_GROWTH = {'VCPU': 0.45, 'MEMORY_MB': 0.35, 'DISK_GB': 0.3}
    TREND_STEP = timedelta(hours=6)
    TREND_STEPS = 4 * 7 * 4

    def trend_history(self):
        """A snapshot of the cloud as loaded and, when it is the first, four
        weeks of made-up history before it, so the charts have lines: each
        pool's use grows steadily (with a daily rhythm) to today's."""
        first = not UsageSnapshot.objects.exists()
        now = timezone.now()
        trends.snapshot_take(at=now)
        if not first:
            return
        rng = random.Random(self.seed)
        history, projects = [], []
        for latest in UsageSnapshot.objects.filter(taken_at=now).select_related(
                'resource_class').order_by('aggregate_id', 'resource_class_id'):
            for at, used in self.grown_to(latest.resource_class.name, latest.used,
                                          latest.capacity, now, rng):
                history.append(UsageSnapshot(
                    taken_at=at, aggregate_id=latest.aggregate_id,
                    resource_class_id=latest.resource_class_id, total=latest.total,
                    reserved=latest.reserved, capacity=latest.capacity, used=used,
                    providers=latest.providers))
        for latest in ProjectUsageSnapshot.objects.filter(taken_at=now).select_related(
                'resource_class').order_by('project_id', 'resource_class_id'):
            for at, used in self.grown_to(latest.resource_class.name, latest.used, latest.used,
                                          now, rng):
                projects.append(ProjectUsageSnapshot(
                    taken_at=at, project_id=latest.project_id,
                    resource_class_id=latest.resource_class_id, used=used,
                    consumers=latest.consumers))
        UsageSnapshot.objects.bulk_create(history, batch_size=1000)
        ProjectUsageSnapshot.objects.bulk_create(projects, batch_size=1000)

    def grown_to(self, class_name, used, most, now, rng):
        """(at, used) of the made-up history of a series that grew to `used`
        (at most `most`) now, oldest last."""
        growth = self.TREND_GROWTH.get(class_name, 0.0)
        growth *= rng.uniform(0.7, 1.3)
        for step in range(1, self.TREND_STEPS + 1):
            at = now - step * self.TREND_STEP
            share = 1 - growth * step / self.TREND_STEPS
            if growth:
                share *= 1 + 0.02 * math.sin(2 * math.pi * at.hour / 24) + rng.uniform(-0.01, 0.01)
            yield at, min(max(round(used * share), 0), int(most))


def refresh_statistics():
    """Give PostgreSQL's planner the new row counts at once (autovacuum would
    get there later): a bulk load makes its statistics stale."""
    if connection.vendor == 'postgresql':
        with connection.cursor() as cursor:
            cursor.execute('ANALYZE')
