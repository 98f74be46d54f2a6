"""`python manage.py load_scale --compute-nodes N [--seed 42] [--force]`: a
large, deterministic cloud written straight into the schema, for measuring
the service at scale (docs/performance.md, scripts/bench/scale.py).

The shapes are those of the shared side-by-side benchmark's dataset:
- N compute nodes cnNNNNN with 27-30 traits, each in 1 or 2 of 8 host
  aggregates;
- about half flat (the root holds VCPU 32 at ratio 16 with max_unit 32,
  MEMORY_MB 131072 at ratio 1.5 with 512 reserved, DISK_GB 2000), the other
  half nested (the root holds DISK_GB; two NUMA children, HW_NUMA_ROOT, hold
  VCPU 16 and MEMORY_MB 65536 with 256 reserved; one of them has an SR-IOV
  PF child with SRIOV_NET_VF 6, HW_NIC_SRIOV and a CUSTOM_PHYSNET_* trait);
- about 15% diskless: no local DISK_GB, in one of 2 storage aggregates, each
  served by 2 shared-storage providers (DISK_GB, MISC_SHARES_VIA_AGGREGATE)
  sized to end up about half full;
- 3 to 6 consumers per tree (50 projects, project 0 holding about a fifth;
  INSTANCE 95%, MIGRATION 5%) filling MEMORY_MB and DISK_GB to 40-60% and
  the VFs to about 40% (VCPU to about 25%: max_unit bounds each consumer).

Everything is a function of (seed, node index): two loads with the same
arguments write the same rows (apart from ids and timestamps). The plan is
built in memory first (`plan_dataset`), then written in one transaction:
with PostgreSQL's COPY when the database is PostgreSQL, with bulk_create in
large batches otherwise.

It writes the rows the services would have written (providers with their
root and parent, generations, inventories, traits, aggregates, projects,
users, consumer types, consumers at generation 1, allocations within
capacity, min_unit, max_unit and step_size) but no events: a bulk import is
not a change anyone is notified of, as restoring a database backup is not.
"""
import io
import random
import time
import uuid as uuid_lib
from dataclasses import dataclass
from dataclasses import field

from django.core.management.base import BaseCommand
from django.core.management.base import CommandError
from django.db import IntegrityError
from django.db import connection
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from providers import rules
from providers import services
from providers.models import Aggregate
from providers.models import Inventory
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait

DEFAULT_SEED = 42

N_HOST_AGGREGATES = 8
N_STORAGE_AGGREGATES = 2
SHARING_PER_STORAGE_AGGREGATE = 2
N_PROJECTS = 50
USERS_PER_PROJECT = 3
BIG_PROJECT_SHARE = 0.2

# (total, reserved, max_unit, allocation_ratio); min_unit and step_size are 1.
FLAT = {'VCPU': (32, 0, 32, 16.0), 'MEMORY_MB': (131072, 512, 131072, 1.5),
        'DISK_GB': (2000, 0, 2000, 1.0)}
NUMA = {'VCPU': (16, 0, 16, 16.0), 'MEMORY_MB': (65536, 256, 65536, 1.5)}
PF = {'SRIOV_NET_VF': (6, 0, 6, 1.0)}
MEMORY_QUANTUM = 512  # consumers' MEMORY_MB is a multiple of this
VF_BUDGET = 3  # VFs a tree's consumers may take (of 6): they end up holding ~40%

PHYSNETS = ('CUSTOM_PHYSNET_PUBLIC', 'CUSTOM_PHYSNET_TENANT', 'CUSTOM_PHYSNET_STORAGE',
            'CUSTOM_PHYSNET_MGMT')
# Every compute node reports these (nova/libvirt-like).
COMMON_TRAITS = (
    'COMPUTE_NODE', 'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW',
    'COMPUTE_IMAGE_TYPE_ISO', 'COMPUTE_NET_ATTACH_INTERFACE',
    'COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG', 'COMPUTE_VOLUME_EXTEND',
    'COMPUTE_VOLUME_ATTACH_WITH_TAG', 'COMPUTE_DEVICE_TAGGING', 'COMPUTE_TRUSTED_CERTS',
    'COMPUTE_NET_VIF_MODEL_VIRTIO', 'COMPUTE_NET_VIF_MODEL_E1000',
    'COMPUTE_GRAPHICS_MODEL_VGA', 'COMPUTE_GRAPHICS_MODEL_VIRTIO',
    'COMPUTE_STORAGE_BUS_VIRTIO', 'COMPUTE_STORAGE_BUS_SCSI', 'HW_CPU_X86_SSE41',
    'HW_CPU_X86_SSSE3', 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2',
)
# Drawn independently, with these probabilities: the ones queries filter on.
SELECTIVE_TRAITS = (('HW_CPU_X86_AVX2', 1 / 3), ('HW_CPU_X86_AVX512F', 0.1),
                    ('COMPUTE_STATUS_DISABLED', 0.02))
# Enough of these, picked at random, to bring a node to its 27-30 traits.
FILLER_TRAITS = ('HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX', 'HW_CPU_X86_AESNI',
                 'HW_CPU_HYPERTHREADING', 'COMPUTE_VOLUME_MULTI_ATTACH',
                 'COMPUTE_SECURITY_UEFI_SECURE_BOOT', 'COMPUTE_ACCELERATORS',
                 'HW_CPU_X86_F16C', 'HW_CPU_X86_FMA3', 'HW_CPU_X86_BMI', 'HW_CPU_X86_BMI2')
TRAITS_PER_NODE = (27, 30)
SHARING_TRAITS = ('MISC_SHARES_VIA_AGGREGATE', 'STORAGE_DISK_SSD')


def capacity_of(record):
    total, reserved, _max_unit, ratio = record
    return rules.whole_capacity(total, reserved, ratio)


class Names:
    """The dataset's uuids, derived from the seed and a name, so a benchmark
    can build its queries from the seed alone."""

    def __init__(self, seed=DEFAULT_SEED):
        self.seed = seed
        self.namespace = uuid_lib.uuid5(uuid_lib.NAMESPACE_URL,
                                        f'https://placement.invalid/load_scale/{seed}')
        self.host_aggregates = [self.uuid(f'host-aggregate-{i}') for i in range(N_HOST_AGGREGATES)]
        self.storage_aggregates = [self.uuid(f'storage-aggregate-{i}')
                                   for i in range(N_STORAGE_AGGREGATES)]
        self.projects = [self.uuid(f'project-{i}') for i in range(N_PROJECTS)]
        self.users = [[self.uuid(f'user-{i}-{j}') for j in range(USERS_PER_PROJECT)]
                      for i in range(N_PROJECTS)]
        self.sharing = [(self.uuid(f'shared-storage-{a}-{s}'), f'shared-storage-{a}-{s}', a)
                        for a in range(N_STORAGE_AGGREGATES)
                        for s in range(SHARING_PER_STORAGE_AGGREGATE)]

    def uuid(self, name):
        return str(uuid_lib.uuid5(self.namespace, name))

    @property
    def big_project(self):
        return self.projects[0]

    @staticmethod
    def node_name(i):
        return f'cn{i:05d}'


@dataclass
class Plan:
    """The rows to write, with providers and consumers referred to by their
    position in `providers` and `consumers`."""
    providers: list = field(default_factory=list)    # (uuid, name, parent index, root index)
    generations: list = field(default_factory=list)  # per provider
    inventories: list = field(default_factory=list)  # (provider, class, total, reserved,
    #                                                   max_unit, ratio)
    traits: list = field(default_factory=list)       # (provider, trait name)
    aggregates: list = field(default_factory=list)   # (provider, aggregate uuid)
    consumers: list = field(default_factory=list)    # (uuid, project, user, type name)
    allocations: list = field(default_factory=list)  # (consumer, provider, class, used)
    compute_nodes: int = 0
    nested: int = 0
    diskless: int = 0

    def add_provider(self, uuid, name, parent=None, root=None, inventories=None, traits=(),
                     aggregates=()):
        index = len(self.providers)
        self.providers.append((uuid, name, parent, index if root is None else root))
        # As if written through the API: one bump per inventory, traits and
        # aggregates write (allocation writes add theirs later).
        self.generations.append(bool(inventories) + bool(traits) + bool(aggregates))
        for class_name, record in (inventories or {}).items():
            self.inventories.append((index, class_name, *record))
        self.traits.extend((index, t) for t in traits)
        self.aggregates.extend((index, a) for a in aggregates)
        return index

    def counts(self):
        return {'compute_nodes': self.compute_nodes, 'providers': len(self.providers),
                'nested_trees': self.nested, 'diskless_nodes': self.diskless,
                'inventories': len(self.inventories), 'provider_traits': len(self.traits),
                'provider_aggregates': len(self.aggregates), 'consumers': len(self.consumers),
                'allocations': len(self.allocations)}


def split(rng, amount, parts, max_unit, quantum=1):
    """`amount` in `parts` uneven pieces, each a multiple of `quantum` in
    [quantum, max_unit]; the pieces never add up to more than `amount`
    (unless `amount` < parts * quantum)."""
    weights = [rng.uniform(0.5, 1.5) for _ in range(parts)]
    scale = amount / sum(weights)
    return [max(quantum, min(max_unit, int(w * scale) // quantum * quantum)) for w in weights]


def node_traits(rng, diskless):
    traits = list(COMMON_TRAITS)
    traits.append('HW_CPU_X86_VMX' if rng.random() < 0.7 else 'HW_CPU_X86_SVM')
    if not diskless:
        traits.append('STORAGE_DISK_SSD' if rng.random() < 0.5 else 'STORAGE_DISK_HDD')
    traits.extend(name for name, p in SELECTIVE_TRAITS if rng.random() < p)
    wanted = rng.randint(*TRAITS_PER_NODE)
    traits.extend(rng.sample(FILLER_TRAITS, max(0, wanted - len(traits))))
    return sorted(traits)


def plan_dataset(compute_nodes, seed=DEFAULT_SEED):
    """The whole dataset as rows, a pure function of its arguments."""
    names = Names(seed)
    plan = Plan(compute_nodes=compute_nodes)
    sharing = [plan.add_provider(uuid, name, traits=SHARING_TRAITS,
                                 aggregates=[names.storage_aggregates[agg]])
               for uuid, name, agg in names.sharing]
    sharing_by_aggregate = [[sharing[k] for k, (_u, _n, a) in enumerate(names.sharing) if a == agg]
                            for agg in range(N_STORAGE_AGGREGATES)]
    for i in range(compute_nodes):
        _plan_node(plan, names, i, random.Random(f'load_scale:{seed}:{i}'), sharing_by_aggregate)
    # Shared storage sized so that what the consumers hold is about half.
    used = {s: 0 for s in sharing}
    for _c, provider, _class_name, amount in plan.allocations:
        if provider in used:
            used[provider] += amount
    for s in sharing:
        total = max(20000, -(-used[s] * 2 // 1000) * 1000)
        plan.inventories.append((s, 'DISK_GB', total, 0, total, 1.0))
        plan.generations[s] += 1
    return plan


def _plan_node(plan, names, i, rng, sharing_by_aggregate):
    name = names.node_name(i)
    nested = rng.random() < 0.5
    diskless = rng.random() < 0.15
    primary = rng.randrange(N_HOST_AGGREGATES)
    aggregates = [names.host_aggregates[primary]]
    storage = None
    if diskless:
        storage = rng.randrange(N_STORAGE_AGGREGATES)
        aggregates.append(names.storage_aggregates[storage])
    elif rng.random() < 0.3:
        aggregates.append(names.host_aggregates[
            (primary + 1 + rng.randrange(N_HOST_AGGREGATES - 1)) % N_HOST_AGGREGATES])
    plan.nested += nested
    plan.diskless += diskless

    root_inventory = {} if nested else {c: FLAT[c] for c in ('VCPU', 'MEMORY_MB')}
    if not diskless:
        root_inventory['DISK_GB'] = FLAT['DISK_GB']
    root = plan.add_provider(names.uuid(name), name, inventories=root_inventory,
                             traits=node_traits(rng, diskless), aggregates=aggregates)
    numa, pf, pf_numa = [], None, None
    if nested:
        for j in range(2):
            numa.append(plan.add_provider(names.uuid(f'{name}-numa{j}'), f'{name}-numa{j}',
                                          parent=root, root=root, inventories=NUMA,
                                          traits=['HW_NUMA_ROOT']))
        pf_numa = rng.randrange(2)
        pf_name = f'{name}-numa{pf_numa}-pf0'
        pf = plan.add_provider(names.uuid(pf_name), pf_name, parent=numa[pf_numa], root=root,
                               inventories=PF,
                               traits=sorted(['HW_NIC_SRIOV', rng.choice(PHYSNETS)]))

    # The consumers: 3 to 6, filling the tree to `fill`.
    count = rng.randint(3, 6)
    fill = rng.uniform(0.4, 0.6)
    disk = split(rng, fill * capacity_of(FLAT['DISK_GB']), count, FLAT['DISK_GB'][2])
    if diskless:
        disk_providers = [rng.choice(sharing_by_aggregate[storage]) for _ in range(count)]
    else:
        disk_providers = [root] * count
    if nested:
        on_numa = [c % 2 for c in range(count)]
        compute = {}
        for j in range(2):
            parts = on_numa.count(j)
            compute[j] = list(zip(
                split(rng, fill * capacity_of(NUMA['VCPU']), parts, NUMA['VCPU'][2]),
                split(rng, fill * capacity_of(NUMA['MEMORY_MB']), parts, NUMA['MEMORY_MB'][2],
                      MEMORY_QUANTUM)))
        vfs_left = VF_BUDGET
    else:
        compute = list(zip(
            split(rng, fill * capacity_of(FLAT['VCPU']), count, FLAT['VCPU'][2]),
            split(rng, fill * capacity_of(FLAT['MEMORY_MB']), count, FLAT['MEMORY_MB'][2],
                  MEMORY_QUANTUM)))
    touched = set()
    for c in range(count):
        consumer = len(plan.consumers)
        project = 0 if rng.random() < BIG_PROJECT_SHARE else 1 + rng.randrange(N_PROJECTS - 1)
        plan.consumers.append((names.uuid(f'{name}-consumer{c}'), names.projects[project],
                               rng.choice(names.users[project]),
                               'MIGRATION' if rng.random() < 0.05 else 'INSTANCE'))
        if nested:
            j = on_numa[c]
            vcpu, memory = compute[j].pop(0)
            held = [(numa[j], 'VCPU', vcpu), (numa[j], 'MEMORY_MB', memory)]
            if j == pf_numa and vfs_left and rng.random() < 0.9:
                vfs = min(vfs_left, 1 + (rng.random() < 0.4))
                vfs_left -= vfs
                held.append((pf, 'SRIOV_NET_VF', vfs))
        else:
            vcpu, memory = compute[c]
            held = [(root, 'VCPU', vcpu), (root, 'MEMORY_MB', memory)]
        held.append((disk_providers[c], 'DISK_GB', disk[c]))
        for provider, class_name, amount in held:
            plan.allocations.append((consumer, provider, class_name, amount))
            touched.add(provider)
    # One allocation write per tree (as one POST /allocations would be).
    for provider in touched:
        plan.generations[provider] += 1


class Command(BaseCommand):
    help = ('Load a large deterministic cloud (N compute-node trees, about 2.5 providers '
            'and 4.5 consumers each) straight into the database, for benchmarks.')

    def add_arguments(self, parser):
        parser.add_argument('--compute-nodes', '-n', type=int, required=True,
                            help='how many compute-node trees')
        parser.add_argument('--seed', type=int, default=DEFAULT_SEED)
        parser.add_argument('--force', action='store_true',
                            help='load even if the database already has providers')
        parser.add_argument('--batch-size', type=int, default=5000,
                            help='rows per bulk_create batch (not PostgreSQL)')

    def handle(self, *args, compute_nodes, seed, force, batch_size, **options):
        if compute_nodes < 1:
            raise CommandError('--compute-nodes must be at least 1')
        started = time.monotonic()
        plan = plan_dataset(compute_nodes, seed)
        planned = time.monotonic()
        try:
            with transaction.atomic():
                if not force and ResourceProvider.objects.exists():
                    raise CommandError('the database already has resource providers: load '
                                       'into an empty database (or use --force)')
                write_plan(plan, batch_size=batch_size)
        except IntegrityError as e:
            raise CommandError(f'some of the dataset is there already (nothing was written): '
                               f'{e}') from e
        written = time.monotonic()
        refresh_statistics()
        done = time.monotonic()
        counts = plan.counts()
        self.stdout.write(' '.join(f'{k}={v}' for k, v in counts.items()))
        self.stdout.write(
            f'loaded {compute_nodes} compute nodes ({counts["providers"]} providers, '
            f'{counts["consumers"]} consumers, {counts["allocations"]} allocations) with seed '
            f'{seed} into {connection.vendor} in {done - started:.1f}s (plan '
            f'{planned - started:.1f}s, write {written - planned:.1f}s, analyze '
            f'{done - written:.1f}s)')


def refresh_statistics():
    """Fresh statistics for the planner after the bulk load. InnoDB
    recalculates a table's statistics itself once a tenth of it changed (and
    MySQL's ANALYZE TABLE would commit the caller's transaction)."""
    if connection.vendor == 'mysql':
        return
    with connection.cursor() as cursor:
        cursor.execute('ANALYZE')


# ---- writing ----

def write_plan(plan, *, batch_size=5000):
    """Write the plan's rows; the caller holds the transaction."""
    now = timezone.now()
    class_ids = _resource_class_ids({c for _p, c, *_rest in plan.inventories})
    trait_ids = _trait_ids({t for _p, t in plan.traits})
    aggregate_ids = _get_or_create_ids(Aggregate, 'uuid', {a for _p, a in plan.aggregates})
    project_ids = _get_or_create_ids(Project, 'external_id', {c[1] for c in plan.consumers})
    user_ids = _get_or_create_ids(User, 'external_id', {c[2] for c in plan.consumers})
    type_ids = _get_or_create_ids(ConsumerType, 'name', {c[3] for c in plan.consumers})

    writer = _CopyWriter() if connection.vendor == 'postgresql' else _BulkWriter(batch_size)
    provider_ids = writer.reserve_ids(ResourceProvider, len(plan.providers))
    consumer_ids = writer.reserve_ids(Consumer, len(plan.consumers))

    writer.write(ResourceProvider, (
        'id', 'uuid', 'name', 'generation', 'root_provider_id', 'parent_provider_id',
        'created_at', 'updated_at'),
        ((provider_ids[k], uuid, name, plan.generations[k], provider_ids[root],
          None if parent is None else provider_ids[parent], now, now)
         for k, (uuid, name, parent, root) in enumerate(plan.providers)))
    writer.write(ProviderTrait, ('resource_provider_id', 'trait_id'),
                 ((provider_ids[p], trait_ids[t]) for p, t in plan.traits))
    writer.write(ProviderAggregate, ('resource_provider_id', 'aggregate_id'),
                 ((provider_ids[p], aggregate_ids[a]) for p, a in plan.aggregates))
    writer.write(Consumer, (
        'id', 'uuid', 'project_id', 'user_id', 'generation', 'consumer_type_id', 'created_at',
        'updated_at'),
        ((consumer_ids[k], uuid, project_ids[project], user_ids[user], 1, type_ids[type_name],
          now, now)
         for k, (uuid, project, user, type_name) in enumerate(plan.consumers)))
    writer.write(Allocation, (
        'resource_provider_id', 'consumer_id', 'resource_class_id', 'used', 'created_at',
        'updated_at'),
        ((provider_ids[p], consumer_ids[c], class_ids[rc], used, now, None)
         for c, p, rc, used in plan.allocations))
    # Inventories last: each counts its allocations once as it is written,
    # instead of every allocation recounting its inventory (usage_totals).
    writer.write(Inventory, (
        'resource_provider_id', 'resource_class_id', 'total', 'reserved', 'min_unit',
        'max_unit', 'step_size', 'allocation_ratio', 'created_at', 'updated_at'),
        ((provider_ids[p], class_ids[c], total, reserved, 1, max_unit, 1, ratio, now, None)
         for p, c, total, reserved, max_unit, ratio in plan.inventories))


def _resource_class_ids(names):
    ids = dict(ResourceClass.objects.filter(name__in=names).values_list('name', 'id'))
    missing = sorted(set(names) - set(ids))
    if missing:
        raise CommandError(f'unknown resource classes {", ".join(missing)}: run migrate')
    return ids


def _trait_ids(names):
    ids = dict(Trait.objects.filter(name__in=names).values_list('name', 'id'))
    for name in sorted(set(names) - set(ids)):
        if not name.startswith(Trait.CUSTOM_PREFIX):
            raise CommandError(f'unknown standard trait {name}: run migrate (or sync_standards)')
        ids[name] = services.trait_ensure(name=name)[0].pk
    return ids


def _get_or_create_ids(model, key, values):
    """{value: id} for rows of `model` keyed by `key`, creating the missing."""
    ids = dict(model.objects.filter(**{f'{key}__in': values}).values_list(key, 'id'))
    missing = sorted(set(values) - set(ids))
    if missing:
        model.objects.bulk_create([model(**{key: v}) for v in missing])
        ids.update(model.objects.filter(**{f'{key}__in': missing}).values_list(key, 'id'))
    return ids


class _CopyWriter:
    """PostgreSQL: ids from the tables' own sequences, rows by COPY."""
    CHUNK = 200_000

    def reserve_ids(self, model, count):
        with connection.cursor() as cursor:
            cursor.execute(
                'SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)',
                [model._meta.db_table, 'id', count])
            return sorted(row[0] for row in cursor.fetchall())

    def write(self, model, columns, rows):
        sql = f'COPY {model._meta.db_table} ({", ".join(columns)}) FROM STDIN'
        with connection.cursor() as cursor:
            buffer, n = io.StringIO(), 0
            for row in rows:
                buffer.write('\t'.join(_copy_text(v) for v in row))
                buffer.write('\n')
                n += 1
                if n == self.CHUNK:
                    self._send(cursor, sql, buffer)
                    buffer, n = io.StringIO(), 0
            if n:
                self._send(cursor, sql, buffer)

    @staticmethod
    def _send(cursor, sql, buffer):
        buffer.seek(0)
        with connection.wrap_database_errors:  # psycopg2's errors as Django's
            cursor.cursor.copy_expert(sql, buffer)


def _copy_text(value):
    # Only numbers, uuids, plain names and timestamps here: nothing to escape.
    if value is None:
        return r'\N'
    if hasattr(value, 'isoformat'):
        return value.isoformat()
    return str(value)


class _BulkWriter:
    """Other databases: explicit ids after the largest one, bulk_create."""

    def __init__(self, batch_size):
        self.batch_size = batch_size

    def reserve_ids(self, model, count):
        start = (model.objects.aggregate(top=Max('id'))['top'] or 0) + 1
        return list(range(start, start + count))

    def write(self, model, columns, rows):
        batch = []
        for row in rows:
            batch.append(model(**dict(zip(columns, row))))
            if len(batch) == self.batch_size:
                model.objects.bulk_create(batch)
                batch = []
        if batch:
            model.objects.bulk_create(batch)
